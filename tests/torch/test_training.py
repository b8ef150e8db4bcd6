"""Training through backend "mixccl": DDP against gloo from the same seed, and one process group
whose ranks use different mixccl adaptors (domains)."""

import os
import unittest

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

from mixccl_test_case import MixcclTestCase


def train_ddp(steps=12):
    """A small MLP under DDP, SGD with momentum; every rank its own data. Returns the final
    parameters."""
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 4))
    ddp = DDP(model, bucket_cap_mb=0.001)  # several buckets, several allreduces per step
    opt = torch.optim.SGD(ddp.parameters(), lr=0.05, momentum=0.9)
    g = torch.Generator().manual_seed(100 + dist.get_rank())
    for _ in range(steps):
        x = torch.randn(8, 16, generator=g)
        y = torch.randn(8, 4, generator=g)
        opt.zero_grad()
        nn.functional.mse_loss(ddp(x), y).backward()
        opt.step()
    return [p.detach().clone() for p in model.parameters()]


class TestMixcclTraining(MixcclTestCase):
    WORLD_SIZE = 2

    def test_ddp_matches_gloo(self):
        finals = {}
        for backend in ("mixccl", "gloo"):
            dist.init_process_group(backend, init_method=f"file://{self.file_name}.{backend}",
                                    rank=self.rank, world_size=self.world_size)
            finals[backend] = train_ddp()
            dist.destroy_process_group()
        # Two ranks: a + b is the same float in any order, and both average by the same
        # division, so the parameters agree bit for bit (more ranks: within fp32 rounding).
        for a, b in zip(finals["mixccl"], finals["gloo"]):
            self.assertTrue(torch.equal(a, b), f"max difference {(a - b).abs().max().item()}")


class TestMixcclMixedAdaptors(MixcclTestCase):
    WORLD_SIZE = 3
    ADAPTORS = ["host", "gloo", "gloo"]

    def test_mixed_adaptors_in_one_group(self):
        os.environ["MIXCCL_ADAPTOR"] = self.ADAPTORS[self.rank]
        self.init_pg()
        self.assertEqual(self.mixccl_backend().adaptor, self.ADAPTORS[self.rank])
        t = torch.full((1000,), float(self.rank + 1))
        dist.all_reduce(t)
        self.assertEqual(t[0].item(), 6.0)
        outs = [torch.empty(3, dtype=torch.int64) for _ in range(3)]
        dist.all_gather(outs, torch.full((3,), self.rank, dtype=torch.int64))
        self.assertEqual([o[0].item() for o in outs], [0, 1, 2])
        b = torch.arange(5.0) if self.rank == 1 else torch.zeros(5)
        dist.broadcast(b, src=1)
        self.assertEqual(b.tolist(), [0.0, 1.0, 2.0, 3.0, 4.0])
        finals = train_ddp(steps=3)
        gathered = [torch.empty_like(finals[0]) for _ in range(3)]
        dist.all_gather(gathered, finals[0])
        self.assertTrue(all(torch.equal(gathered[0], x) for x in gathered))
        dist.destroy_process_group()


if __name__ == "__main__":
    # unittest itself, not torch's run_tests: under CI=true that one writes XML reports
    # through xmlrunner, which torch does not install.
    unittest.main()
