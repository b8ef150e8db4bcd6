#!/usr/bin/env python3
"""What the torch backend's point-to-point holds: descriptors, threads and communicators per rank.

    PYTHONPATH=build/python python3 perf/torch_p2p_cost.py --ranks 8 --tags 1 8 --net socket

Every rank of a --ranks job sends one small tensor to every other rank on each of --tags tags
and receives theirs (the receives in the reverse order of the tags), then reports how many
file descriptors (/proc/self/fd) and threads (/proc/self/task) it holds beyond what it held after
init_process_group and its point-to-point communicators' background init (and beyond what it
held before it: the group's whole cost), and the backend's p2p_comm_count() (p2p_lane_count() on builds that had
lanes only, to compare). It prints the median over the ranks and fails when a received value
is wrong. MIXCCL_NET comes from --net (socket or auto).
"""

import argparse
import os
import statistics
import sys
import tempfile

import torch
import torch.distributed as dist
import torch.multiprocessing as mp


def counts():
    return len(os.listdir("/proc/self/fd")), len(os.listdir("/proc/self/task"))


def settled(backend):
    """Waits for the group's point-to-point communicators, made in the background when the group
    formed, to finish their init (p2p_inspect waits for it), so that the counts do not catch an
    init halfway; nothing to wait for on the lanes."""
    try:
        for direction in (0, 1):
            backend.p2p_inspect("connect", direction)
    except (AttributeError, RuntimeError):  # builds before them; MIXCCL_TORCH_P2P=lanes
        pass


def rank_main(rank, n, tags, net, store_file, queue):
    os.environ["MIXCCL_NET"] = net
    import mixccl.torch  # noqa: F401
    fdsStart, threadsStart = counts()
    dist.init_process_group("mixccl", init_method=f"file://{store_file}", rank=rank, world_size=n)
    backend = dist.distributed_c10d._get_default_group()._get_backend(torch.device("cpu"))
    settled(backend)
    dist.barrier()
    fds0, threads0 = counts()
    peers = [p for p in range(n) if p != rank]
    sends = [dist.isend(torch.full((4,), float(1000 * rank + 10 * p + t)), p, tag=t)
             for p in peers for t in range(tags)]
    bad = 0
    for p in peers:
        for t in reversed(range(tags)):
            got = torch.empty(4)
            dist.recv(got, p, tag=t)
            bad += got.tolist() != [float(1000 * p + 10 * rank + t)] * 4
    for w in sends:
        w.wait()
    dist.barrier()
    fds1, threads1 = counts()
    # Builds before the communicators per group counted lanes (p2p_lane_count).
    count = getattr(backend, "p2p_comm_count", None) or backend.p2p_lane_count
    queue.put((rank, fds1 - fds0, threads1 - threads0, count(), bad, fds1 - fdsStart,
               threads1 - threadsStart))
    dist.barrier()
    dist.destroy_process_group()


def run(n, tags, net):
    ctx = mp.get_context("spawn")
    queue = ctx.Queue()
    with tempfile.TemporaryDirectory() as tmp:
        procs = [ctx.Process(target=rank_main,
                             args=(r, n, tags, net, os.path.join(tmp, "store"), queue))
                 for r in range(n)]
        for p in procs:
            p.start()
        rows = [queue.get(timeout=300) for _ in procs]
        for p in procs:
            p.join()
        if any(p.exitcode != 0 for p in procs):
            sys.exit("torch_p2p_cost: a rank failed")
    if any(r[4] for r in rows):
        sys.exit("torch_p2p_cost: a received value was wrong")
    return [statistics.median(r[k] for r in rows) for k in (1, 2, 3, 5, 6)]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ranks", type=int, nargs="+", default=[4, 8])
    ap.add_argument("--tags", type=int, nargs="+", default=[1, 8],
                    help="tags per peer; 0: no point-to-point at all (what a group costs idle)")
    ap.add_argument("--net", default="socket", choices=["socket", "auto"])
    args = ap.parse_args()
    print(f"{'ranks':>5} {'tags':>4} {'fds':>6} {'threads':>7} {'comms':>5} {'group fds':>9} "
          f"{'group threads':>13}  (per rank, median; MIXCCL_NET={args.net})")
    for n in args.ranks:
        for tags in args.tags:
            fds, threads, comms, groupFds, groupThreads = run(n, tags, args.net)
            print(f"{n:>5} {tags:>4} {fds:>6g} {threads:>7g} {comms:>5g} {groupFds:>9g} "
                  f"{groupThreads:>13g}", flush=True)


if __name__ == "__main__":
    main()
