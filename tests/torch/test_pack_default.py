"""The coalesced calls' packing bound a group chooses when MIXCCL_TORCH_PACK_BYTES is unset,
where its small collectives have no shared-memory slots: over sockets (MIXCCL_NET=socket) and
over shared memory without slots (MIXCCL_SHM_SLOT_BYTES=0). CTest sets the variable of each
case; the test checks from the communicator that it took effect (pack_plan.h, packBoundFor)."""

import os
import unittest

import torch
import torch.distributed as dist

from mixccl_test_case import MixcclTestCase


class TestPackDefault(MixcclTestCase):
    WORLD_SIZE = 2

    def packs_small_tensors(self):
        be = self.mixccl_backend()
        self.assertEqual(be.inspect("shm_slot_bytes"), "0")
        self.assertEqual(be.pack_below_bytes, 64 << 10)
        self.assertEqual(be.pack_why, "default: no shared-memory slots, pack below 65536 bytes")
        # Three small float tensors in one call; one of 64 KiB (at the bound) alone.
        ts = [torch.full((k + 2,), float(self.rank + k)) for k in range(3)]
        ts.append(torch.full((16 << 10,), float(self.rank)))
        before = be.mixccl_calls()
        dist.all_reduce_coalesced(ts)
        self.assertEqual(be.mixccl_calls() - before, 2)
        for k, t in enumerate(ts[:3]):
            self.assertEqual(t.tolist(), [float(1 + 2 * k)] * (k + 2))
        self.assertTrue(torch.equal(ts[3], torch.ones(16 << 10)))

    def test_pack_default_sockets(self):
        self.assertEqual(os.environ.get("MIXCCL_NET"), "socket")
        self.init_pg()
        self.assertEqual(self.mixccl_backend().inspect("transport.%d" % (1 - self.rank)), "socket")
        self.packs_small_tensors()
        dist.destroy_process_group()

    def test_pack_default_shm_without_slots(self):
        self.assertEqual(os.environ.get("MIXCCL_SHM_SLOT_BYTES"), "0")
        self.init_pg()
        self.assertEqual(self.mixccl_backend().inspect("transport.%d" % (1 - self.rank)), "shm")
        self.packs_small_tensors()
        dist.destroy_process_group()


if __name__ == "__main__":
    unittest.main()
