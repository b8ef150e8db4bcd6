#!/usr/bin/env python3
"""Packed against unpacked coalesced calls of the mixccl torch backend, interleaved.

    PYTHONPATH=build/python python3 perf/torch_pack_ab.py --reps 3 --out DIR -- \\
        --ranks 2 4 --backends mixccl-socket mixccl-shm mixccl-shm-noslots \\
        --ops all_reduce_coalesced all_gather_into_tensor_coalesced \\
              reduce_scatter_tensor_coalesced --tensors 64 --min-bytes 64K --max-bytes 4M
    python3 perf/torch_pack_ab.py --summarize DIR

Each round runs perf/torch_bench.py with the arguments after "--" twice: packed
(MIXCCL_TORCH_PACK_BYTES=1024M: every tensor of these sizes packs, whatever the default would
choose) and unpacked (MIXCCL_TORCH_PACK_BYTES=0: one mixccl call per tensor), and keeps both
outputs in DIR (round-K-packed.txt, round-K-unpacked.txt; rounds already there are kept, so
rounds may be taken in several sittings). --summarize prints, per rank count, operation, size
and variant, the median busbw packed / median busbw unpacked over the rounds.
"""

import argparse
import glob
import os
import re
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
SIDES = {"packed": "1024M", "unpacked": "0"}


def run_round(out, bench_args):
    done = glob.glob(os.path.join(out, "round-*-packed.txt"))
    k = 1 + max([int(re.search(r"round-(\d+)-", p).group(1)) for p in done], default=0)
    for side, value in SIDES.items():
        env = dict(os.environ, MIXCCL_TORCH_PACK_BYTES=value)
        res = subprocess.run([sys.executable, os.path.join(HERE, "torch_bench.py")] + bench_args,
                             env=env, capture_output=True, text=True)
        if res.returncode != 0:
            sys.exit(f"torch_pack_ab: torch_bench.py ({side}) exited with {res.returncode}:\n"
                     f"{res.stdout}{res.stderr}")
        with open(os.path.join(out, f"round-{k}-{side}.txt"), "w") as f:
            f.write(res.stdout)
    print(f"round {k} kept in {out}")


def parse(text):
    """{(ranks, op, bytes, variant): busbw} of one torch_bench.py output."""
    cells, ranks, variants = {}, None, []
    for line in text.splitlines():
        m = re.match(r"# (\d+) ranks$", line)
        if m:
            ranks = int(m.group(1))
            continue
        if line.startswith("op "):
            variants = re.findall(r"(\S+) busbw", line.replace("bytes", "bytes "))
            continue
        fields = line.split()
        if line.startswith("#"):
            continue
        if ranks and variants and len(fields) >= 2 + len(variants) and fields[1].isdigit():
            for v, bw in zip(variants, fields[2:2 + len(variants)]):
                cells[(ranks, fields[0], int(fields[1]), v)] = float(bw)
    return cells


def summarize(out):
    sides = {}
    header = ""
    for side in SIDES:
        paths = sorted(glob.glob(os.path.join(out, f"round-*-{side}.txt")))
        if not paths:
            sys.exit(f"torch_pack_ab: no {side} rounds in {out}")
        runs = []
        for p in paths:
            text = open(p).read()
            header = header or text.splitlines()[0]
            runs.append(parse(text))
        sides[side] = runs
    keys = sorted(set().union(*sides["packed"]) & set().union(*sides["unpacked"]))
    if not keys:
        sys.exit(f"torch_pack_ab: the rounds in {out} share no cell")
    print(header)
    print(f"# packed / unpacked: median busbw over {len(sides['packed'])} packed and "
          f"{len(sides['unpacked'])} unpacked rounds")
    variants = list(dict.fromkeys(k[3] for k in keys))  # keys are sorted: by name
    print(f"{'ranks':>5} {'op':<34}{'bytes':>9}" + "".join(f"{v:>20}" for v in variants))
    for cell in sorted({k[:3] for k in keys}):
        line = f"{cell[0]:>5} {cell[1]:<34}{cell[2]:>9}"
        for v in variants:
            medians = [statistics.median([r[cell + (v,)] for r in sides[s] if cell + (v,) in r]
                                         or [float("nan")]) for s in SIDES]
            ratio = medians[0] / medians[1] if medians[1] > 0 else float("nan")
            line += f"{ratio:>20.2f}"
        print(line)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--out", help="folder of the rounds' outputs")
    ap.add_argument("--summarize", metavar="DIR", help="print the ratios of DIR's rounds")
    ap.add_argument("bench_args", nargs=argparse.REMAINDER)
    args = ap.parse_args()
    if args.summarize:
        summarize(args.summarize)
        return
    if not args.out:
        ap.error("--out DIR is needed to run rounds")
    os.makedirs(args.out, exist_ok=True)
    bench_args = args.bench_args[1:] if args.bench_args[:1] == ["--"] else args.bench_args
    for _ in range(args.reps):
        run_round(args.out, bench_args)
    summarize(args.out)


if __name__ == "__main__":
    main()
