"""Run by torchrun in the wheel's venv (CTest wheel_torchrun_autoload): a few DDP steps on the
backend named by argv[1], from a script that never imports mixccl: with backend "mixccl" it
exists only through torch's autoload of the installed package. Rank 0 prints each step's loss
(averaged over the ranks) with all its digits, for wheel_ddp_test.sh to compare with gloo's.
With "mixccl", every rank also checks that libmixccl and the extension were loaded from the
venv (VENV_PACKAGE_DIR), not from a build tree.

usage: torchrun --nproc-per-node 2 ddp_no_import.py BACKEND
"""

import os
import sys

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP


def mixccl_objects():
    with open("/proc/self/maps") as maps:
        paths = {line.split()[-1] for line in maps if "/" in line}
    return sorted(p for p in paths
                  if os.path.basename(p).startswith(("libmixccl", "_torch_backend")))


def main():
    backend = sys.argv[1]
    dist.init_process_group(backend)  # rank, size and rendezvous from torchrun's environment
    rank, size = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(0)
    model = DDP(nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 1)))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    data = torch.Generator().manual_seed(rank)
    for step in range(4):
        x = torch.randn(16, 32, generator=data)
        loss = model(x).pow(2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        total = loss.detach().clone()
        dist.all_reduce(total)
        if rank == 0:
            print(f"step {step} loss {(total / size).item()!r}", flush=True)
    if backend == "mixccl":
        package = os.path.realpath(os.environ["VENV_PACKAGE_DIR"])
        objects = mixccl_objects()
        if not any(os.path.basename(p).startswith("libmixccl.so") for p in objects):
            raise AssertionError(f"rank {rank}: no libmixccl mapped: {objects}")
        outside = [p for p in objects if not os.path.realpath(p).startswith(package + os.sep)]
        if outside:
            raise AssertionError(f"rank {rank}: loaded from outside {package}: {outside}")
        if rank == 0:
            print(f"loaded from the venv: {' '.join(os.path.basename(p) for p in objects)}")
    # Both ranks leave together (neither tears its group down while the other still uses it).
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
