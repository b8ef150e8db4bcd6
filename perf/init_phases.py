#!/usr/bin/env python3
"""Where mixcclCommInitRank's time goes at n ranks on this host (docs/scale.md).

Runs BUILD/perf/scale_bench N with INFO logging of the bootstrap and init and stamps each log
line as it arrives (the library's lines carry no time), then prints, for each phase end, the
median and the last rank's time in seconds from the start of the run:
  perf/init_phases.py BUILD N [N...]
Phases: the root answered (the rendezvous), the peer info of all ranks exchanged (the tree
exchange, when the build has it), the local topology probed and the connection mode chosen,
the rank ready (the collectives of init: topology exchange, tuning agreement). The root line is
the rendezvous root's last message. Lines arrive through one pipe, so with many ranks on few
cores the stamps are late by the time a rank waits to be scheduled."""
import os
import re
import statistics
import subprocess
import sys
import time

PHASES = [
    ("root done", r"rendezvous root .*: all .*connected"),
    ("rendezvous", r"rendezvous with \d+ ranks done"),
    ("exchange", r"peer info of \d+ ranks exchanged"),
    ("probed", r"rank \d+: connections "),
    ("ready", r"rank \d+ of \d+ ready \("),
]


def run(build, n):
    env = {"MIXCCL_DEBUG": "INFO", "MIXCCL_DEBUG_SUBSYS": "BOOTSTRAP,INIT"}
    env = dict(os.environ, **env)
    t0 = time.monotonic()
    p = subprocess.Popen([build + "/perf/scale_bench", str(n), "5"], env=env,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    stamps = {name: [] for name, _ in PHASES}
    for line in p.stderr:
        t = time.monotonic() - t0
        for name, pattern in PHASES:
            if re.search(pattern, line):
                stamps[name].append(t)
    summary = p.stdout.read().strip()
    p.wait()
    cells = []
    for name, _ in PHASES:
        v = stamps[name]
        if v:
            cells.append("%s %.2f/%.2f" % (name, statistics.median(v), max(v)))
    print("ranks %d: %s (median/last s)" % (n, ", ".join(cells)))
    print("  " + summary)


def main():
    if len(sys.argv) < 3:
        sys.exit("usage: init_phases.py BUILD N [N...]")
    for n in sys.argv[2:]:
        run(sys.argv[1], int(n))


if __name__ == "__main__":
    main()
