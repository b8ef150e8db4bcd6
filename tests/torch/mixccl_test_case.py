"""Shared base of the mixccl torch tests: torch's MultiProcessTestCase (one process per rank,
spawned for every test) with a process group of backend "mixccl" over a FileStore."""

import os
from datetime import timedelta

import torch.distributed as dist
from torch.testing._internal.common_distributed import MultiProcessTestCase

import mixccl.torch  # noqa: F401  (registers the backend)


class MixcclTestCase(MultiProcessTestCase):
    WORLD_SIZE = 2

    @property
    def world_size(self):
        return self.WORLD_SIZE

    def setUp(self):
        super().setUp()
        self._spawn_processes()

    def init_pg(self, backend="mixccl", timeout_s=60, **kwargs):
        # A fresh store file per group, so one test may create several in turn.
        self._groups = getattr(self, "_groups", 0) + 1
        dist.init_process_group(backend, init_method=f"file://{self.file_name}.{self._groups}",
                                rank=self.rank, world_size=self.world_size,
                                timeout=timedelta(seconds=timeout_s), **kwargs)

    def mixccl_backend(self, group=None):
        """The MixcclBackend object behind a group (its adaptor, lanes, timeout)."""
        import torch
        pg = group or dist.group.WORLD
        return pg._get_backend(torch.device("cpu"))

    def tearDown(self):
        super().tearDown()
        try:
            os.remove(self.file_name)
        except OSError:
            pass
