#!/usr/bin/env python3
"""Two builds of mixccl's torch backend compared by perf/torch_bench.py, alternately.

    python3 perf/torch_bench_ab.py --a ../base/build --b build --rounds 5 -- \\
        --ranks 2 --ops sendrecv --backends mixccl-shm mixccl-socket --iters 100

Each round runs torch_bench.py once with build A's Python package (PYTHONPATH=A/python), then
once with build B's, so that drifts of the machine fall on both; the arguments after -- go to
torch_bench.py. It prints, per backend and size, the median busbw of the rounds for A and B
and their ratio B/A, and each round's ratio (a size that misses is repeated before concluding).
"""

import argparse
import os
import re
import statistics
import subprocess
import sys
from collections import defaultdict

ROW = re.compile(r"^(\S+)\s+(\d+)((?:\s+[\d.]+)+)")


def run(build, bench_args, here):
    env = dict(os.environ, PYTHONPATH=os.path.join(os.path.abspath(build), "python"))
    out = subprocess.run([sys.executable, os.path.join(here, "torch_bench.py")] + bench_args,
                         env=env, check=True, capture_output=True, text=True).stdout
    backends, rows = [], {}
    for line in out.splitlines():
        if line.startswith("op ") or line.startswith("op\t") or line.split()[:1] == ["op"]:
            backends = [w for w in line.split()[2:] if w not in ("busbw", "ratio")]
            continue
        m = ROW.match(line)
        if m and backends:
            values = [float(v) for v in m.group(3).split()][:len(backends)]
            for b, v in zip(backends, values):
                rows[(b, m.group(1), int(m.group(2)))] = v
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--a", required=True, help="build folder A (the reference)")
    ap.add_argument("--b", required=True, help="build folder B")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("bench", nargs=argparse.REMAINDER, help="-- then torch_bench.py's arguments")
    args = ap.parse_args()
    bench = args.bench[1:] if args.bench[:1] == ["--"] else args.bench
    here = os.path.dirname(os.path.abspath(__file__))
    seen = {"A": defaultdict(list), "B": defaultdict(list)}
    for k in range(args.rounds):
        for name, build in (("A", args.a), ("B", args.b)):
            for key, v in run(build, bench, here).items():
                seen[name][key].append(v)
        print(f"# round {k + 1} of {args.rounds} done", file=sys.stderr, flush=True)
    print(f"# A = {args.a}, B = {args.b}; median busbw (GB/s) of {args.rounds} rounds")
    print(f"{'backend':<16}{'op':<10}{'bytes':>10}{'A':>10}{'B':>10}{'B/A':>7}  per round")
    for key in sorted(seen["A"], key=lambda k: (k[0], k[1], k[2])):
        a, b = seen["A"][key], seen["B"].get(key, [])
        if not b:
            continue
        ma, mb = statistics.median(a), statistics.median(b)
        rounds = " ".join(f"{y / x:.2f}" for x, y in zip(a, b))
        print(f"{key[0]:<16}{key[1]:<10}{key[2]:>10}{ma:>10.3f}{mb:>10.3f}{mb / ma:>7.2f}  {rounds}")


if __name__ == "__main__":
    main()
