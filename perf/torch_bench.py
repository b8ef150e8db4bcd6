#!/usr/bin/env python3
"""torch.distributed benchmark: backends mixccl and gloo in the same run (docs/pytorch.md).

    PYTHONPATH=build/python python3 perf/torch_bench.py [--ranks 2 4] [--max-bytes 64M]

For each rank count, backend, operation (all_reduce, all_gather_into_tensor,
reduce_scatter_tensor, sendrecv) and size (1 KiB to 64 MiB by x4) it times --iters calls after
--warmup, takes the slowest rank's time, and prints nccl-tests' bus bandwidth: all_reduce
2(n-1)/n, all_gather/reduce_scatter (n-1)/n of the whole buffer, sendrecv 1 (ranks pair up,
2k <-> 2k+1). The last column is mixccl / gloo. --ops picks operations (default: all).
"""

import argparse
import os
import queue as queue_module
import statistics
import sys
import tempfile
import time

import torch
import torch.distributed as dist
import torch.multiprocessing as mp

OPS = ["all_reduce", "all_gather_into_tensor", "reduce_scatter_tensor", "sendrecv"]


def parse_bytes(text):
    units = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    return int(text[:-1]) * units[text[-1].upper()] if text[-1].upper() in units else int(text)


def bus_factor(op, n):
    return {"all_reduce": 2 * (n - 1) / n, "all_gather_into_tensor": (n - 1) / n,
            "reduce_scatter_tensor": (n - 1) / n, "sendrecv": 1.0}[op]


def one_call(op, rank, n, small, big):
    """Runs op once on a buffer of big.numel() floats in all (small: one rank's share)."""
    if op == "all_reduce":
        dist.all_reduce(big)
    elif op == "all_gather_into_tensor":
        dist.all_gather_into_tensor(big, small)
    elif op == "reduce_scatter_tensor":
        dist.reduce_scatter_tensor(small, big)
    else:
        peer = rank ^ 1
        if peer < n:
            for w in dist.batch_isend_irecv([dist.P2POp(dist.isend, big, peer),
                                             dist.P2POp(dist.irecv, small, peer)]):
                w.wait()


def rank_main(rank, n, backend, store_file, sizes, iters, warmup, ops, queue):
    if backend == "mixccl":
        import mixccl.torch  # noqa: F401
    # A file store: no port to race for with whatever else runs on the machine.
    dist.init_process_group(backend, init_method=f"file://{store_file}", rank=rank, world_size=n)
    rows = []
    for op in ops:
        for nbytes in sizes:
            count = max(nbytes // 4 // n * n, n)  # whole floats, divisible among ranks
            big = torch.ones(count)
            small = torch.ones(count if op == "sendrecv" else count // n)
            for _ in range(warmup):
                one_call(op, rank, n, small, big)
            times = []
            reps = max(3, min(iters, int(5e8 // max(nbytes, 1))))
            for _ in range(reps):
                dist.barrier()
                start = time.perf_counter()
                one_call(op, rank, n, small, big)
                elapsed = torch.tensor([time.perf_counter() - start], dtype=torch.float64)
                dist.all_reduce(elapsed, op=dist.ReduceOp.MAX)  # the slowest rank's time
                times.append(elapsed.item())
            seconds = statistics.median(times)
            rows.append((op, count * 4, seconds, count * 4 / seconds * bus_factor(op, n) / 1e9))
    if rank == 0:
        queue.put(rows)
    dist.destroy_process_group()


def run(n, backend, sizes, iters, warmup, ops):
    ctx = mp.get_context("spawn")
    queue = ctx.Queue()
    with tempfile.TemporaryDirectory() as tmp:
        store_file = os.path.join(tmp, "store")
        procs = [ctx.Process(target=rank_main,
                             args=(r, n, backend, store_file, sizes, iters, warmup, ops, queue))
                 for r in range(n)]
        for p in procs:
            p.start()
        rows = None
        while rows is None:  # a rank that dies ends the run instead of leaving it waiting
            try:
                rows = queue.get(timeout=1)
            except queue_module.Empty:
                dead = [p for p in procs if p.exitcode not in (None, 0)]
                if dead:
                    for p in procs:
                        p.kill()
                    sys.exit(f"torch_bench: a {backend} rank exited with {dead[0].exitcode}")
        for p in procs:
            p.join()
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ranks", type=int, nargs="+", default=[2, 4])
    ap.add_argument("--backends", nargs="+", default=["mixccl", "gloo"])
    ap.add_argument("--min-bytes", default="1K")
    ap.add_argument("--max-bytes", default="64M")
    ap.add_argument("--iters", type=int, default=20)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--ops", nargs="+", default=OPS, choices=OPS)
    args = ap.parse_args()
    sizes, s = [], parse_bytes(args.min_bytes)
    while s <= parse_bytes(args.max_bytes):
        sizes.append(s)
        s *= 4
    cpu = next((ln.split(":", 1)[1].strip() for ln in open("/proc/cpuinfo")
                if ln.startswith("model name")), "unknown CPU")
    print(f"# torch {torch.__version__}, {os.cpu_count()} CPUs ({cpu}); busbw in GB/s, "
          f"median of up to {args.iters} calls, slowest rank")
    for n in args.ranks:
        results = {b: run(n, b, sizes, args.iters, args.warmup, args.ops) for b in args.backends}
        head = "".join(f"{b + ' busbw':>14}" for b in args.backends)
        ratio = "  ratio" if len(args.backends) == 2 else ""
        print(f"\n# {n} ranks\n{'op':<24}{'bytes':>11}{head}{ratio}")
        for i, (op, nbytes, _, _) in enumerate(results[args.backends[0]]):
            bws = [results[b][i][3] for b in args.backends]
            line = f"{op:<24}{nbytes:>11}" + "".join(f"{bw:>14.3f}" for bw in bws)
            if len(bws) == 2:
                line += f"{bws[0] / bws[1]:>7.2f}"
            print(line, flush=True)


if __name__ == "__main__":
    main()
