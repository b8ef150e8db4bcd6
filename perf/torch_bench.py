#!/usr/bin/env python3
"""torch.distributed benchmark: mixccl and gloo over the same transport, in the same run.

    PYTHONPATH=build/python python3 perf/torch_bench.py [--ranks 2 4] [--max-bytes 64M]

Variants (--backends, default the first three): mixccl-socket is mixccl over TCP sockets
(MIXCCL_NET=socket), the transport gloo uses on one host; gloo is torch's gloo backend (TCP);
mixccl-shm is mixccl with its defaults, i.e. shared memory between ranks of one host, which gloo
has no counterpart of; mixccl-shm-noslots is mixccl-shm with MIXCCL_SHM_SLOT_BYTES=0 (every call
through the shared-memory rings, none through the slots). The ratio column compares like with like: mixccl-socket / gloo. Every
mixccl variant checks, from mixccl's INFO log of rank 0, that its pairs used the transport it
names, and fails otherwise.

For each rank count, variant, operation (all_reduce, all_gather_into_tensor,
reduce_scatter_tensor, sendrecv, and the coalesced ones) and size (1 KiB to 64 MiB by x4) it times
--iters calls after --warmup, takes the slowest rank's time, and prints nccl-tests' bus
bandwidth: all_reduce 2(n-1)/n, all_gather/reduce_scatter (n-1)/n of the whole buffer, sendrecv
1 (ranks pair up, 2k <-> 2k+1). The coalesced operations (not in the default --ops:
all_reduce_coalesced, all_gather_into_tensor_coalesced, reduce_scatter_tensor_coalesced) split
the same buffers into --tensors tensors and run one call per tensor inside torch's
_coalescing_manager; MIXCCL_TORCH_PACK_BYTES=0 in the environment runs mixccl's coalesced calls
unpacked, one mixccl call per tensor (docs/pytorch.md, "Coalesced calls").
"""

import argparse
import os
import queue as queue_module
import re
import statistics
import sys
import tempfile
import time

import torch
import torch.distributed as dist
import torch.multiprocessing as mp

OPS = ["all_reduce", "all_gather_into_tensor", "reduce_scatter_tensor", "sendrecv"]
COALESCED_OPS = ["all_reduce_coalesced", "all_gather_into_tensor_coalesced",
                 "reduce_scatter_tensor_coalesced"]
EXTRA_OPS = COALESCED_OPS

# name -> (torch backend, environment, the transport mixccl must report; None: not mixccl)
VARIANTS = {
    "mixccl-socket": ("mixccl", {"MIXCCL_NET": "socket"}, "socket"),
    "gloo": ("gloo", {}, None),
    "mixccl-shm": ("mixccl", {"MIXCCL_NET": "auto"}, "shm"),
    # Shared memory without the slots that carry small collectives (docs/environment.md,
    # MIXCCL_SHM_SLOT_BYTES): every call through the rings, as in a lazily connected job.
    "mixccl-shm-noslots": ("mixccl", {"MIXCCL_NET": "auto", "MIXCCL_SHM_SLOT_BYTES": "0"}, "shm"),
}
LIKE_WITH_LIKE = ("mixccl-socket", "gloo")


def parse_bytes(text):
    units = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    return int(text[:-1]) * units[text[-1].upper()] if text[-1].upper() in units else int(text)


def bus_factor(op, n):
    return {"all_reduce": 2 * (n - 1) / n, "all_gather_into_tensor": (n - 1) / n,
            "reduce_scatter_tensor": (n - 1) / n, "sendrecv": 1.0,
            "all_reduce_coalesced": 2 * (n - 1) / n,
            "all_gather_into_tensor_coalesced": (n - 1) / n,
            "reduce_scatter_tensor_coalesced": (n - 1) / n}[op]


def coalesced_pieces(op, small, big, n, tensors):
    """The tensors of a coalesced call: views of big (all_reduce), or pairs of a view of small
    and the view of big that holds all ranks' shares of it (n times its size)."""
    if op == "all_reduce_coalesced":
        return big.chunk(min(tensors, big.numel()))
    if op not in COALESCED_OPS:
        return []
    shares = [p.numel() for p in small.chunk(min(tensors, small.numel()))]
    return list(zip(small.split(shares), big.split([s * n for s in shares])))


def one_call(op, rank, n, small, big, pieces):
    """Runs op once on a buffer of big.numel() floats in all (small: one rank's share; pieces:
    the tensors of a coalesced call, coalesced_pieces)."""
    if op == "all_reduce":
        dist.all_reduce(big)
    elif op == "all_reduce_coalesced":
        with dist._coalescing_manager():
            for t in pieces:
                dist.all_reduce(t)
    elif op == "all_gather_into_tensor_coalesced":
        with dist._coalescing_manager():
            for share, whole in pieces:
                dist.all_gather_into_tensor(whole, share)
    elif op == "reduce_scatter_tensor_coalesced":
        with dist._coalescing_manager():
            for share, whole in pieces:
                dist.reduce_scatter_tensor(share, whole)
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


def transports_in(log_text):
    """The transport names of mixccl's INFO lines "rank R: transports: rank P (HOST pid N): NAME
    (...) [why]; ..." (docs/environment.md, MIXCCL_NET)."""
    names = set()
    for line in log_text.splitlines():
        if "transports: " in line:
            names.update(re.findall(r"rank \d+ \([^)]*\): (\S+) ", line.split("transports: ", 1)[1]))
    return sorted(names)


def stderr_to(log):
    """Points fd 2 (where mixccl logs) at log; returns the old fd 2 for restore_stderr."""
    saved = os.dup(2)
    os.dup2(log.fileno(), 2)
    return saved


def restore_stderr(saved):
    os.dup2(saved, 2)
    os.close(saved)


def rank_main(rank, n, variant, store_file, sizes, iters, warmup, ops, tensors, queue):
    backend, env, _ = VARIANTS[variant]
    os.environ.update(env)
    if backend != "mixccl":
        time_ops(rank, n, backend, store_file, sizes, iters, warmup, ops, tensors, queue, None)
        return
    import mixccl.torch  # noqa: F401
    # mixccl's INFO log (read once per process) names every pair's transport; it goes to a file
    # the rank reads at the end, and to stderr only when the rank fails.
    os.environ.update({"MIXCCL_DEBUG": "INFO", "MIXCCL_DEBUG_SUBSYS": "NET"})
    with tempfile.TemporaryFile(mode="w+") as log:
        saved = stderr_to(log)
        try:
            time_ops(rank, n, backend, store_file, sizes, iters, warmup, ops, tensors, queue, log)
        except BaseException:
            restore_stderr(saved)
            log.seek(0)
            sys.stderr.write(log.read())
            raise
        restore_stderr(saved)


def time_ops(rank, n, backend, store_file, sizes, iters, warmup, ops, tensors, queue, log):
    # A file store: no port to race for with whatever else runs on the machine.
    dist.init_process_group(backend, init_method=f"file://{store_file}", rank=rank, world_size=n)
    rows = []
    for op in ops:
        for nbytes in sizes:
            count = max(nbytes // 4 // n * n, n)  # whole floats, divisible among ranks
            big = torch.ones(count)
            small = torch.ones(count if op == "sendrecv" else count // n)
            pieces = coalesced_pieces(op, small, big, n, tensors)
            for _ in range(warmup):
                one_call(op, rank, n, small, big, pieces)
            times = []
            reps = max(3, min(iters, int(5e8 // max(nbytes, 1))))
            for _ in range(reps):
                dist.barrier()
                start = time.perf_counter()
                one_call(op, rank, n, small, big, pieces)
                elapsed = torch.tensor([time.perf_counter() - start], dtype=torch.float64)
                dist.all_reduce(elapsed, op=dist.ReduceOp.MAX)  # the slowest rank's time
                times.append(elapsed.item())
            seconds = statistics.median(times)
            rows.append((op, count * 4, seconds, count * 4 / seconds * bus_factor(op, n) / 1e9))
    transports = []
    if log is not None:
        log.seek(0)
        transports = transports_in(log.read())
    if rank == 0:
        queue.put((rows, transports))
    dist.destroy_process_group()


def run(n, variant, sizes, iters, warmup, ops, tensors):
    ctx = mp.get_context("spawn")
    queue = ctx.Queue()
    with tempfile.TemporaryDirectory() as tmp:
        store_file = os.path.join(tmp, "store")
        procs = [ctx.Process(target=rank_main,
                             args=(r, n, variant, store_file, sizes, iters, warmup, ops,
                                   tensors, queue))
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
                    sys.exit(f"torch_bench: a {variant} rank exited with {dead[0].exitcode}")
        for p in procs:
            p.join()
    rows, transports = rows
    want = VARIANTS[variant][2]
    if want is not None and transports != [want]:
        sys.exit(f"torch_bench: {variant} ran over {', '.join(transports) or 'no transport'} "
                 f"(mixccl's INFO log of rank 0), expected {want}")
    return rows, transports


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ranks", type=int, nargs="+", default=[2, 4])
    ap.add_argument("--backends", nargs="+", default=list(VARIANTS)[:3], choices=list(VARIANTS))
    ap.add_argument("--min-bytes", default="1K")
    ap.add_argument("--max-bytes", default="64M")
    ap.add_argument("--iters", type=int, default=20)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--ops", nargs="+", default=OPS, choices=OPS + EXTRA_OPS)
    ap.add_argument("--tensors", type=int, default=64,
                    help="tensors per coalesced call (default 64)")
    args = ap.parse_args()
    sizes, s = [], parse_bytes(args.min_bytes)
    while s <= parse_bytes(args.max_bytes):
        sizes.append(s)
        s *= 4
    cpu = next((ln.split(":", 1)[1].strip() for ln in open("/proc/cpuinfo")
                if ln.startswith("model name")), "unknown CPU")
    print(f"# torch {torch.__version__}, {os.cpu_count()} CPUs ({cpu}); busbw in GB/s, "
          f"median of up to {args.iters} calls, slowest rank")
    like = all(v in args.backends for v in LIKE_WITH_LIKE)
    if like:
        print("# ratio = mixccl-socket / gloo: both over TCP sockets on this host")
    if "mixccl-shm" in args.backends:
        print("# mixccl-shm: mixccl over shared memory (its default on one host); gloo has no "
              "shared-memory transport, so no ratio compares them")
    for n in args.ranks:
        results = {}
        for v in args.backends:
            results[v], transports = run(n, v, sizes, args.iters, args.warmup, args.ops,
                                         args.tensors)
            if transports:
                print(f"# {n} ranks, {v}: rank 0's pairs over {', '.join(transports)}")
        head = "".join(f"{v + ' busbw':>20}" for v in args.backends)
        ratio = "  ratio" if like else ""
        width = max(24, max(len(op) for op in args.ops) + 1)
        print(f"\n# {n} ranks\n{'op':<{width}}{'bytes':>11}{head}{ratio}")
        for i, (op, nbytes, _, _) in enumerate(results[args.backends[0]]):
            bws = {v: results[v][i][3] for v in args.backends}
            line = f"{op:<{width}}{nbytes:>11}" + "".join(f"{bws[v]:>20.3f}"
                                                          for v in args.backends)
            if like:
                line += f"{bws['mixccl-socket'] / bws['gloo']:>7.2f}"
            print(line, flush=True)


if __name__ == "__main__":
    main()
