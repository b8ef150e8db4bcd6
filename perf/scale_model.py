#!/usr/bin/env python3
"""A first-order model of what a mixccl communicator costs at 1k-100k ranks (docs/scale.md).

    perf/scale_model.py [--ranks-per-host 8] [--alpha-us 25] [--bw-gbs 12.5] [--root-us-per-rank R]
                        [--connect-ms 1.0] [--check MEASURED.txt]

Two designs: "full mesh" (MIXCCL_CONNECT=eager: every pair connected at init) and "lazy"
(pairs on first use; ring, recursive doubling and binomial tree neighbours). Per rank and per
job: connections, descriptors, shared memory per host, init time, and the time of an 8-byte and
of a 1 GiB AllReduce. The inputs are parameters. The peer and descriptor counts are checked
against perf/scale_bench runs (--check prints model against measurement), the shared memory per
host against the measured points of docs/scale.md (--check-shm); the times rest on
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
PEER_INFO_BYTES = 160
# Shared memory (src/transport/shm_sizing.h, shm_ring.h, shm_slots.h): every segment starts with
# a 4 KiB header page; a ring to a peer that is not a ring neighbour is at least 64 KiB.
SHM_HEADER_KIB = 4
SHM_FAR_MIN_KIB = 64
# Shared memory per host measured with perf/scale_bench, 1 MiB rings, lazy, one host, each
# /dev/shm file counted once (docs/scale.md "Shared memory per host"): ranks -> MiB.
SHM_MEASURED_MIB = {16: 60.9, 32: 125.5, 64: 254.8, 128: 518.0, 256: 1053.0}


def floor_pow2(x):
    return 1 << (max(int(x), 1).bit_length() - 1)


def far_ring_kib(ring_kib, n, distance):
    """The ring to a same-host peer that is not a ring neighbour, `distance` apart in rank
    order: ring x d / (n/2), d and n rounded down to powers of two, at least 64 KiB."""
    half = max(floor_pow2(max(n, 2)) // 2, 1)
    d = min(floor_pow2(distance), half)
    return max(ring_kib * d / half, min(SHM_FAR_MIN_KIB, ring_kib))


def shm_rank_kib(n, r, ring_kib, lazy, slot_kib):
    """Shared memory one rank creates (one segment per same-host peer it receives from), ranks
    of a host consecutive (r per host, r dividing n or r >= n). Lazy: its two ring neighbours
    (full rings) and its recursive-doubling partners at 2, 4, ... < r (far rings). Eager: every
    other rank of its host, the two neighbours full and the rest far rings by distance. A
    one-host communicator adds its slots segment (a header and two slots)."""
    local = min(r, n)
    if local < 2:
        return 0.0
    neighbours = 1 if local == 2 else 2
    kib = neighbours * (ring_kib + SHM_HEADER_KIB)
    if lazy:
        d = 2
        while d < local and d <= n // 2:
            kib += far_ring_kib(ring_kib, n, d) + SHM_HEADER_KIB
            d *= 2
    else:
        for d in range(2, local - 1):   # distances 2 .. local-2 from one rank, the short way
            kib += far_ring_kib(ring_kib, n, min(d, local - d)) + SHM_HEADER_KIB
    if n <= r:
        kib += SHM_HEADER_KIB + 2 * slot_kib
    return kib


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
    shm_host = r * shm_rank_kib(n, r, args.ring_mib * 1024, lazy, args.slot_kib) / 1024
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


def check_shm(args):
    """Model against the measured shared memory per host (one host, lazy, 1 MiB rings)."""
    print("| ranks | measured MiB | model MiB | error |")
    print("|---|---|---|---|")
    for n, measured in sorted(SHM_MEASURED_MIB.items()):
        m = n * shm_rank_kib(n, n, 1024, True, args.slot_kib) / 1024
        print("| %d | %.1f | %.1f | %+.1f%% |" % (n, measured, m, 100 * (m - measured) / measured))


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
    p.add_argument("--slot-kib", type=float, default=16.0,
                   help="a shared-memory slot of a one-host communicator (16 KiB: the size when "
                        "the L2 cache is not known, as on the measured VM)")
    p.add_argument("--check", help="a perf/scale_bench.sh output to compare with")
    p.add_argument("--check-shm", action="store_true",
                   help="compare the shared memory per host with the measured points")
    p.add_argument("--rooted", action="store_true",
                   help="lazy peers include Broadcast/Reduce trees at other roots (upper bound)")
    args = p.parse_args()
    if args.check:
        check(args.check, args)
        print()
    if args.check_shm:
        check_shm(args)
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
