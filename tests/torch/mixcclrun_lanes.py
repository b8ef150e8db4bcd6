"""Under mixcclrun, which sets MIXCCL_COMM_ID for its own rendezvous, the backend's
communicators formed at once (rank 0 sends to and receives from every other rank: one lane per
peer and direction, each its own communicator) must not all try to listen at that address.

    mixcclrun -np N python3 mixcclrun_lanes.py"""
import datetime
import os

import torch
import torch.distributed as dist

import mixccl.torch  # noqa: F401  registers "mixccl"

rank, size = int(os.environ["MIXCCL_RANK"]), int(os.environ["MIXCCL_NRANKS"])
dist.init_process_group("mixccl", init_method=f"file:///tmp/mixccl-lanes-{os.getppid()}", rank=rank,
                        world_size=size, timeout=datetime.timedelta(seconds=30))
if rank == 0:
    got = [torch.zeros(2) for _ in range(1, size)]
    works = [dist.isend(torch.full((2,), float(p)), p) for p in range(1, size)]
    works += [dist.irecv(got[p - 1], p) for p in range(1, size)]
else:
    mine = torch.zeros(2)
    works = [dist.irecv(mine, 0), dist.isend(torch.full((2,), 10.0 + rank), 0)]
for w in works:
    w.wait()
if rank == 0:
    assert [t.tolist() for t in got] == [[10.0 + p] * 2 for p in range(1, size)], got
else:
    assert mine.tolist() == [float(rank)] * 2, mine
print(f"rank {rank}: lanes to and from {'every rank' if rank == 0 else 'rank 0'} ok", flush=True)
dist.barrier()
dist.destroy_process_group()
