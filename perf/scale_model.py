#!/usr/bin/env python3
"""A first-order model of what a mixccl communicator costs at 1k-100k ranks (docs/scale.md).

    perf/scale_model.py [--ranks-per-host 8] [--alpha-us 25] [--bw-gbs 12.5] [--root-us-per-rank R]
                        [--connect-ms 1.0] [--check MEASURED.txt]

Two designs: "full mesh" (MIXCCL_CONNECT=eager: every pair connected at init) and "lazy"
(pairs on first use; ring, recursive doubling and binomial tree neighbours). Per rank and per
job: connections, descriptors, shared memory per host, init time, and the time of an 8-byte and
of a 1 GiB AllReduce. The inputs are parameters. The peer and descriptor counts are checked
against perf/scale_bench runs (--check prints model against measurement); the times rest on
assumptions about a cluster, not measured here: alpha (one message between hosts), bw (a
link's bandwidth), the rendezvous root's time per rank and one pair's connection time (on the
2-core machine of docs/scale.md every rank is oversubscribed, so its init times cannot give
them).
"""
import argparse
import math

# A rank's descriptors without peers (std streams, epolls, eventfds, listener, the report pipe):
# fitted to scale_bench (fds = 9 + 2 x peers over sockets on one host, 8 to 256 ranks).
BASE_FDS = 9
PEER_INFO_BYTES = 128


def peers_lazy(n, rooted=False):
    """Distinct peers of a rank that runs ring and recursive-doubling AllReduces: the log2 n
    partners and the ring neighbour that is not one of them. Binomial trees rooted at rank 0
    reuse the recursive-doubling partners; rooted=True adds log2 n more for trees rooted
    elsewhere (an upper bound)."""
    lg = math.ceil(math.log2(n)) if n > 1 else 0
    return min(n - 1, lg + 1 + (lg if rooted else 0))


def model(n, args, lazy):
    r = args.ranks_per_host
    peers = peers_lazy(n, args.rooted) if lazy else n - 1
    local = min(peers, r - 1)               # peers on this host (shared memory: no data socket)
    remote = peers - local
    fds = BASE_FDS + peers + 2 * remote      # one control each, two data sockets across hosts
    job_conns = n * (peers + 2 * remote) / 2
    shm_host = r * local * args.ring_mib     # each rank creates one ring per local peer
    # Init: the root receives n peer infos and sends the n-entry table to each rank: n^2 bytes.
    root_s = n * args.root_us_per_rank * 1e-6 + n * n * PEER_INFO_BYTES / (args.bw_gbs * 1e9)
    connect_s = 0.0 if lazy else peers * args.connect_ms * 1e-3
    init_s = root_s + connect_s
    alpha = args.alpha_us * 1e-6
    small_s = math.ceil(math.log2(n)) * alpha + (peers_lazy(n) * args.connect_ms * 1e-3 if lazy else 0)
    size = 1 << 30
    large_s = 2 * (n - 1) / n * size / (args.bw_gbs * 1e9) + 2 * (n - 1) * alpha
    return dict(peers=peers, fds=fds, job_conns=job_conns, shm_host_mib=shm_host, init_s=init_s,
                root_s=root_s, small_first_us=small_s * 1e6,
                small_us=math.ceil(math.log2(n)) * alpha * 1e6, large_s=large_s)


def check(path, args):
    """Model against a perf/scale_bench.sh output: fds and peers of the lazy socket runs."""
    print("| ranks | measured peers | model peers | measured fds | model fds (one host, sockets) |")
    print("|---|---|---|---|---|")
    for line in open(path):
        if not line.startswith("mixccl net=socket connect=auto") and \
           not line.startswith("mixccl net=socket connect=lazy"):
            continue
        f = line.split()
        kv = dict(zip(f[3::2], f[4::2]))
        n = int(kv["ranks"])
        peers = peers_lazy(n)
        # One host, MIXCCL_NET=socket: a control and one data socket per peer.
        print("| %d | %s | %d | %s | %d |" % (n, kv["peers"], peers, kv["fds"],
                                                 BASE_FDS + 2 * peers))


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--ranks-per-host", type=int, default=8)
    p.add_argument("--alpha-us", type=float, default=25.0, help="one message between hosts (assumed)")
    p.add_argument("--bw-gbs", type=float, default=12.5, help="link bandwidth, GB/s (assumed)")
    p.add_argument("--root-us-per-rank", type=float, default=40.0,
                   help="the rendezvous root's time per rank (assumed)")
    p.add_argument("--connect-ms", type=float, default=1.0,
                   help="one authenticated pair connection (assumed)")
    p.add_argument("--ring-mib", type=float, default=1.0, help="shared-memory ring per direction")
    p.add_argument("--check", help="a perf/scale_bench.sh output to compare with")
    p.add_argument("--rooted", action="store_true",
                   help="lazy peers include Broadcast/Reduce trees at other roots (upper bound)")
    args = p.parse_args()
    if args.check:
        check(args.check, args)
        print()
    print("| ranks | design | peers/rank | fds/rank | connections in the job | shm/host MiB | "
          "init s (root part) | 8 B AllReduce us (first call) | 1 GiB AllReduce s |")
    print("|---|---|---|---|---|---|---|---|---|")
    for n in (1024, 4096, 16384, 100000):
        for lazy in (False, True):
            m = model(n, args, lazy)
            print("| %d | %s | %d | %d | %.3g | %.0f | %.2f (%.2f) | %.0f (%.0f) | %.3f |" % (
                n, "lazy" if lazy else "full mesh", m["peers"], m["fds"], m["job_conns"],
                m["shm_host_mib"], m["init_s"], m["root_s"], m["small_us"], m["small_first_us"],
                m["large_s"]))


if __name__ == "__main__":
    main()
