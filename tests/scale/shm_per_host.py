#!/usr/bin/env python3
"""Shared memory per host grows linearly with the ranks (docs/scale.md, "Shared memory per host").

  shm_per_host.py SCALE_BENCH RANKS...

Runs perf/scale_bench at each rank count, connected on first use, with the rings forced to
1 MiB (MIXCCL_SHM_BYTES, so the bound does not depend on this machine's L2), and reads its
shm_host_mib (every /dev/shm file the ranks map, counted once). Each rank's two ring neighbours
get full rings and its recursive partners rings by their distance, less than 2 more together
(transport/shm_sizing.h), so the host holds at least 2 and at most 4 rings per rank (plus
headers and the slots):
  - at least ranks x 2 MiB: the forced ring size took effect;
  - below ranks x 4.25 MiB: linear, where a full ring per recursive partner held
    ranks x (log2 ranks + 1) MiB (80 MiB at 16 ranks, 192 at 32).
Then once more at the first rank count with MIXCCL_SHM_FAR_BYTES=1048576 (every ring full, as
before the budget): that must exceed the bound, or the bound would not tell the two apart.
Prints one line per run and "shm per host within the linear bound" when all hold; exits 1
naming the failed check otherwise."""
import os
import re
import subprocess
import sys

RING_MIB = 1
LOW_PER_RANK = 2 * RING_MIB
HIGH_PER_RANK = 4.25 * RING_MIB


def shm_host_mib(bench, n, extra_env):
    # The 1 MiB AllReduces take recursive halving (its partners are the far peers) on any
    # machine: the threshold is otherwise a quarter of the L3 per core, at least 1 MiB.
    env = dict(os.environ, MIXCCL_CONNECT="lazy", MIXCCL_SHM_BYTES=str(RING_MIB << 20),
               MIXCCL_RH_THRESHOLD=str(4 << 20), **extra_env)
    env.pop("MIXCCL_NET", None)  # the default: shared memory between the ranks of this host
    out = subprocess.run([bench, str(n), "3"], env=env, stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT, universal_newlines=True, timeout=150)
    m = re.search(r"^ranks %d .* shm_host_mib ([0-9.]+) " % n, out.stdout, re.M)
    if out.returncode != 0 or not m:
        sys.exit("scale_bench %d failed (exit status %d):\n%s" % (n, out.returncode, out.stdout))
    return float(m.group(1))


def main(argv):
    if len(argv) < 3:
        sys.exit(__doc__)
    bench, counts = argv[1], [int(a) for a in argv[2:]]
    failed = []
    for n in counts:
        mib = shm_host_mib(bench, n, {})
        low, high = n * LOW_PER_RANK, n * HIGH_PER_RANK
        print("%d ranks: shm per host %.1f MiB (bound %.0f to %.0f MiB)" % (n, mib, low, high))
        if mib < low:
            failed.append("%d ranks: %.1f MiB < %.0f MiB: the 1 MiB rings (MIXCCL_SHM_BYTES) did "
                          "not take effect" % (n, mib, low))
        if mib >= high:
            failed.append("%d ranks: %.1f MiB >= %.0f MiB: not linear" % (n, mib, high))
    n = counts[0]
    full = shm_host_mib(bench, n, {"MIXCCL_SHM_FAR_BYTES": str(RING_MIB << 20)})
    print("%d ranks, every ring full (MIXCCL_SHM_FAR_BYTES): shm per host %.1f MiB" % (n, full))
    if full < n * HIGH_PER_RANK:
        failed.append("%d ranks with every ring full: %.1f MiB, within the bound: the check "
                      "cannot tell the budget from full rings" % (n, full))
    for f in failed:
        print("FAILED: " + f)
    if failed:
        return 1
    print("shm per host within the linear bound")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
