#!/usr/bin/env python3
"""Each core's speed over time: one process per core (pinned), one torch thread, times the same
small piece of work (20 matmul + SiLU of a 1536 x 64 activation, about 4 ms) over and over for
SECONDS, in the thread's CPU time, both cores at once. Prints per core the median piece, how
often and how much a window of WINDOW seconds ran slower than the median by over 8%, and
whether the two cores' slow windows coincide; and the steal time /proc/stat counted meanwhile.

  core_speed.py [SECONDS=60] [WINDOW=0.25]          (run it on a quiet machine: /work/bin/measure)

A slow window with no steal time is the host taking the core's speed (another guest on the
same physical core, its clock) without telling the guest: the CPU time of the same work grows."""
import json
import os
import statistics as st
import subprocess
import sys
import tempfile

WORKER = r"""
import json, os, sys, time, torch
core, seconds, out = int(sys.argv[1]), float(sys.argv[2]), sys.argv[3]
os.sched_setaffinity(0, {core})
torch.set_num_threads(1)
a, b = torch.randn(64, 64), torch.randn(24 * 64, 64)
def piece():
    x = b
    for _ in range(20):
        x = torch.nn.functional.silu(x @ a)
for _ in range(50):
    piece()
rows, end = [], time.perf_counter() + seconds
while time.perf_counter() < end:
    w, c = time.perf_counter(), time.thread_time()
    piece()
    rows.append((w, time.thread_time() - c))
json.dump(rows, open(out, "w"))
"""


def steal_ticks():
    return int(open("/proc/stat").readline().split()[8])


def main():
    seconds = float(sys.argv[1]) if len(sys.argv) > 1 else 60.0
    window = float(sys.argv[2]) if len(sys.argv) > 2 else 0.25
    cores = sorted(os.sched_getaffinity(0))[:2]
    tmp = tempfile.mkdtemp(prefix="core_speed-")
    steal0 = steal_ticks()
    procs = [subprocess.Popen([sys.executable, "-c", WORKER, str(c), str(seconds),
                               f"{tmp}/{c}.json"]) for c in cores]
    for p in procs:
        if p.wait() != 0:
            sys.exit(f"core_speed: the worker exited with {p.returncode}")
    steal = steal_ticks() - steal0
    traces = {c: json.load(open(f"{tmp}/{c}.json")) for c in cores}
    t0 = min(tr[0][0] for tr in traces.values())
    slow = {}
    for c, tr in traces.items():
        med = st.median(x[1] for x in tr)
        wins = {}
        for w, cpu in tr:
            wins.setdefault(int((w - t0) / window), []).append(cpu)
        ratio = {k: st.median(v) / med for k, v in wins.items() if len(v) >= 3}
        slow[c] = {k for k, r in ratio.items() if r > 1.08}
        worst = max(ratio.values())
        print(f"core {c}: {len(tr)} pieces, median {med*1e3:.3f} ms CPU; {window:g}-s windows over "
              f"1.08 x the median: {len(slow[c])} of {len(ratio)} "
              f"({100*len(slow[c])/len(ratio):.0f}%), the slowest {worst:.2f} x; single pieces "
              f"up to {max(x[1] for x in tr)/med:.2f} x")
    both = set.intersection(*slow.values()) if len(slow) > 1 else set()
    print(f"slow windows on both cores at once: {len(both)}; steal time meanwhile: {steal} ticks")


if __name__ == "__main__":
    main()
