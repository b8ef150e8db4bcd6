#!/usr/bin/env python3
"""Per-call times of the torch backend's point-to-point, as a distribution.

    PYTHONPATH=build/python python3 perf/torch_p2p_latency.py --bytes 1K 64K --net socket

Two ranks exchange a tensor of --bytes each way --iters times, in one of two patterns
(--pattern): "exchange" (both ranks isend and irecv at once, as torch_bench.py's sendrecv and a
1F1B pipeline's batched send/receive) or "pingpong" (rank 0 sends, rank 1 answers). It prints
rank 0's per-call time in microseconds at the 10th, 50th and 90th percentile, so that a run
whose calls fall into two modes shows both instead of a median between them. MIXCCL_NET comes
from --net; anything else of mixccl's from the environment. Unpinned on 2 cores, the placement
of the ranks' threads decides which of two modes a run is in (about 40 us or 200 us for 1 KiB
here); --pin takes that out.
"""

import argparse
import os
import sys
import tempfile
import time

import torch
import torch.distributed as dist
import torch.multiprocessing as mp


def parse_bytes(text):
    units = {"K": 1 << 10, "M": 1 << 20}
    return int(text[:-1]) * units[text[-1].upper()] if text[-1].upper() in units else int(text)


def rank_main(rank, net, store_file, sizes, iters, pattern, pin, queue):
    os.environ["MIXCCL_NET"] = net
    if pin:  # before any thread starts: mixccl's and torch's threads inherit it
        os.sched_setaffinity(0, {rank % os.cpu_count()})
    import mixccl.torch  # noqa: F401
    dist.init_process_group("mixccl", init_method=f"file://{store_file}", rank=rank, world_size=2)
    peer = 1 - rank
    rows = []
    for nbytes in sizes:
        out = torch.ones(nbytes // 4)
        got = torch.empty(nbytes // 4)
        times = []
        for i in range(iters + 20):
            start = time.perf_counter()
            if pattern == "exchange":
                for w in dist.batch_isend_irecv([dist.P2POp(dist.isend, out, peer),
                                                 dist.P2POp(dist.irecv, got, peer)]):
                    w.wait()
            elif rank == 0:
                dist.send(out, peer)
                dist.recv(got, peer)
            else:
                dist.recv(got, peer)
                dist.send(out, peer)
            if i >= 20:  # the first calls connect and warm up
                times.append((time.perf_counter() - start) * 1e6)
        times.sort()
        rows.append((nbytes, [times[len(times) * q // 100] for q in (10, 50, 90)]))
    if rank == 0:
        queue.put(rows)
    dist.barrier()
    dist.destroy_process_group()


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bytes", nargs="+", default=["1K", "64K"])
    ap.add_argument("--iters", type=int, default=500)
    ap.add_argument("--net", default="socket", choices=["socket", "auto"])
    ap.add_argument("--pattern", default="exchange", choices=["exchange", "pingpong"])
    ap.add_argument("--pin", action="store_true",
                    help="each rank on a core of its own (rank r on CPU r mod the CPU count): "
                         "takes the scheduler's placement of the threads out of the figures")
    args = ap.parse_args()
    sizes = [parse_bytes(b) for b in args.bytes]
    ctx = mp.get_context("spawn")
    queue = ctx.Queue()
    with tempfile.TemporaryDirectory() as tmp:
        procs = [ctx.Process(target=rank_main, args=(r, args.net, os.path.join(tmp, "store"),
                                                     sizes, args.iters, args.pattern, args.pin, queue))
                 for r in range(2)]
        for p in procs:
            p.start()
        rows = queue.get(timeout=600)
        for p in procs:
            p.join()
        if any(p.exitcode != 0 for p in procs):
            sys.exit("torch_p2p_latency: a rank failed")
    print(f"{'bytes':>9} {'p10 us':>8} {'p50 us':>8} {'p90 us':>8}  ({args.pattern}, "
          f"MIXCCL_NET={args.net}{', pinned' if args.pin else ''})")
    for nbytes, (p10, p50, p90) in rows:
        print(f"{nbytes:>9} {p10:>8.1f} {p50:>8.1f} {p90:>8.1f}")


if __name__ == "__main__":
    main()
