"""A few DDP steps on backend "mixccl", launched by torchrun (docs/pytorch.md):

    PYTHONPATH=build/python torchrun --nproc-per-node 2 examples/torch/ddp_train.py

Each rank may use another mixccl adaptor (MIXCCL_ADAPTOR=host|gloo|mpi per rank)."""

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

import mixccl.torch  # noqa: F401  (registers the backend "mixccl")


def main():
    dist.init_process_group("mixccl")  # rank, size and rendezvous from torchrun's environment
    rank, size = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(0)
    model = DDP(nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 1)))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    data = torch.Generator().manual_seed(rank)
    for step in range(5):
        x = torch.randn(16, 32, generator=data)
        loss = model(x).pow(2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        total = loss.detach().clone()
        dist.all_reduce(total, op=dist.ReduceOp.AVG)
        if rank == 0:
            print(f"step {step} mean loss over {size} ranks {total.item():.4f}", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
