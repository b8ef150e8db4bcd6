"""One rank of a test_shrink.py job under `mixcclrun --keep-going` (so that a rank can die and
the others go on): torch.distributed.shrink_group on the mixccl backend.

    mixcclrun --keep-going -np 4 python3 shrink_worker.py MODE STORE_FILE

Prints RESULT and CHECK lines; exit status 0 when the rank saw what the mode expects."""

import os
import signal
import sys
import time
from datetime import timedelta

import torch
import torch.distributed as dist
from torch.distributed.distributed_c10d import SHRINK_ABORT

import mixccl.torch  # noqa: F401  (registers the backend)


def backend_of(group=None):
    return (group or dist.group.WORLD)._get_backend(torch.device("cpu"))


def check(name, ok, detail=""):
    print(f"CHECK {name} {'ok' if ok else 'FAILED ' + detail}", flush=True)
    return ok


def exact_collectives(group, old_ranks):
    """every collective kind on the new group, each result compared bit for bit. old_ranks: the
    parent ranks of the new group's members, in their new order."""
    rank, size = group.rank(), group.size()
    me = old_ranks[rank]
    ok = check("size", size == len(old_ranks), f"{size}")
    ok &= check("formed_by", backend_of(group).formed_by == "shrink", backend_of(group).formed_by)
    # Values that sum exactly in float32, distinct per rank and element.
    n = 1 << 16
    base = torch.arange(n, dtype=torch.float32)
    t = base * (me + 1)
    dist.all_reduce(t, group=group)
    ok &= check("all_reduce", torch.equal(t, base * sum(r + 1 for r in old_ranks)))
    b = base + me if rank == size - 1 else torch.zeros(n)
    dist.broadcast(b, group_src=size - 1, group=group)
    ok &= check("broadcast", torch.equal(b, base + old_ranks[-1]))
    out = [torch.empty(n) for _ in range(size)]
    dist.all_gather(out, base + me, group=group)
    ok &= check("all_gather", all(torch.equal(o, base + r) for o, r in zip(out, old_ranks)))
    rs = torch.empty(n)
    dist.reduce_scatter(rs, [base + me * 1000 + k for k in range(size)], group=group)
    ok &= check("reduce_scatter", torch.equal(rs, sum(base + r * 1000 + rank for r in old_ranks)))
    # Point-to-point: a ring on the new ranks (its lanes meet in the store under a new prefix).
    got = torch.empty(n)
    works = [dist.isend(base + me, group_dst=(rank + 1) % size, group=group),
             dist.irecv(got, group_src=(rank - 1) % size, group=group)]
    for w in works:
        w.wait()
    ok &= check("send_recv", torch.equal(got, base + old_ranks[(rank - 1) % size]))
    dist.barrier(group=group)
    return ok


def main(mode, store_file):
    rank, size = int(os.environ["MIXCCL_RANK"]), int(os.environ["MIXCCL_NRANKS"])
    timeout = timedelta(seconds=float(os.environ.get("SHRINK_PG_TIMEOUT_S", "20")))
    dist.init_process_group("mixccl", init_method="file://" + store_file, rank=rank,
                            world_size=size, timeout=timeout)
    victim = size - 1
    if mode == "kill":
        # The victim dies with a 16 MiB all_reduce in flight; the survivors are inside it.
        t = torch.ones(1 << 22)
        start = None
        try:
            for i in range(1000):
                work = dist.all_reduce(t, async_op=True)
                if i == 2:
                    start = time.monotonic()
                    if rank == victim:
                        time.sleep(0.005)
                        os.kill(os.getpid(), signal.SIGKILL)
                work.wait()
        except Exception as e:  # noqa: BLE001  (the test checks type and message)
            caught = time.monotonic()
            print(f"RESULT raised {type(e).__name__} after {caught - start:.3f} s: {e}", flush=True)
        else:
            print("RESULT no error", flush=True)
            return 1
        new = dist.shrink_group([victim], shrink_flags=SHRINK_ABORT)
        shrunk = time.monotonic()
        ok = check("default_group", dist.get_world_size() == size - 1 and dist.group.WORLD == new,
                   f"world size {dist.get_world_size()}")
        ok &= exact_collectives(new, [r for r in range(size) if r != victim])
        print(f"RESULT shrink {shrunk - caught:.3f} s, kill to working group "
              f"{time.monotonic() - start:.3f} s", flush=True)
        dist.destroy_process_group()
        return 0 if ok else 1
    if mode == "healthy":
        # A healthy shrink of a subgroup (ranks 0-2 of the world) by ranks 0 and 2: rank 1
        # leaves it (it does not call), rank 3 is not a member; the world is untouched.
        sub = dist.new_group([0, 1, 2])
        dist.all_reduce(torch.ones(4), group=sub)
        ok = True
        if rank in (0, 2):
            new = dist.shrink_group([1], group=sub)
            ok &= exact_collectives(new, [0, 2])
        dist.barrier()  # the world is untouched
        x = torch.full((8,), float(rank))
        dist.all_reduce(x)
        ok &= check("world_after", torch.equal(x, torch.full((8,), float(sum(range(size))))))
        dist.destroy_process_group()
        print("RESULT done", flush=True)
        return 0 if ok else 1
    if mode == "mismatch":
        # Rank 1 excludes {2}, ranks 0 and 2 exclude {3}: every caller raises the same error,
        # and the group stays usable by all four.
        if rank != victim:
            try:
                dist.shrink_group([2] if rank == 1 else [3])
            except Exception as e:  # noqa: BLE001
                print(f"RESULT raised {type(e).__name__}: {e}", flush=True)
            else:
                print("RESULT no error", flush=True)
        x = torch.full((8,), float(rank))
        dist.all_reduce(x)
        ok = check("parent_after", torch.equal(x, torch.full((8,), float(sum(range(size))))))
        dist.destroy_process_group()
        return 0 if ok else 1
    if mode == "revoke":
        # Rank 1 revokes the world while rank 0 waits on it in an irecv (a point-to-point lane,
        # a communicator of its own) and rank 2 in an all_reduce that ranks 1 and 3 never join:
        # both return at once, not at the 60 s timeout. Then ranks 0-2 shrink rank 3 (alive,
        # left out) away, and the new group works.
        store = dist.distributed_c10d._get_default_store()
        one = torch.zeros(1)
        if rank in (0, 1):  # the lane forms first, so that rank 0 waits on a live connection
            (dist.isend if rank == 1 else dist.irecv)(one, 1 - rank).wait()
        dist.barrier()
        start = time.monotonic()
        try:
            if rank == 0:
                dist.irecv(one, 1).wait()
            elif rank == 2:
                dist.all_reduce(torch.ones(4))
            elif rank == 1:
                time.sleep(0.5)  # the others are waiting by then
                start = time.monotonic()
                backend_of().revoke()
            else:
                store.wait(["revoke/shrunk"], timedelta(seconds=60))
                dist.destroy_process_group()
                print("RESULT left", flush=True)
                return 0
        except Exception as e:  # noqa: BLE001  (the test checks type and message)
            print(f"RESULT raised {type(e).__name__} after {time.monotonic() - start:.3f} s: {e}",
                  flush=True)
        else:
            if rank != 1:
                print("RESULT no error", flush=True)
                return 1
            print(f"RESULT revoked after {time.monotonic() - start:.3f} s", flush=True)
        new = dist.shrink_group([victim], shrink_flags=SHRINK_ABORT)
        ok = exact_collectives(new, [0, 1, 2])
        if rank == 0:
            store.set("revoke/shrunk", "1")
        dist.destroy_process_group()
        return 0 if ok else 1
    if mode == "destroy_dead":
        # The victim dies while the others have queued all_reduces: destroy_process_group
        # returns at once and every queued Work reports the failure.
        dist.all_reduce(torch.ones(16))
        if rank == victim:
            os.kill(os.getpid(), signal.SIGKILL)
        works = [dist.all_reduce(torch.ones(1 << 20), async_op=True) for _ in range(5)]
        time.sleep(0.2)
        start = time.monotonic()
        dist.destroy_process_group()
        took = time.monotonic() - start
        failed = 0
        for w in works:
            try:
                w.wait()
            except Exception:  # noqa: BLE001
                failed += 1
        print(f"RESULT destroy took {took:.3f} s, {failed} of {len(works)} works failed",
              flush=True)
        return 0
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2]))
