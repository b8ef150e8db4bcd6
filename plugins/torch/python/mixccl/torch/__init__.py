"""Registers mixccl as the torch.distributed backend "mixccl" (for "cpu" and "cuda" tensors).

    import mixccl.torch
    torch.distributed.init_process_group("mixccl")

See docs/pytorch.md.
"""

import torch.distributed as _dist

from mixccl._torch_backend import MixcclBackend, create_backend

__all__ = ["MixcclBackend", "create_backend", "BACKEND_NAME"]

BACKEND_NAME = "mixccl"


def _create(dist_opts, backend_options):
    """torch's creator (extended API): a split of the parent group when torch offers one of
    ours (init_process_group(device_id=...) then new_group), else a new communicator."""
    parent = dist_opts.split_from
    if isinstance(parent, MixcclBackend):
        return parent.split_group(dist_opts.store, dist_opts.group_rank, dist_opts.timeout)
    return create_backend(dist_opts.store, dist_opts.group_rank, dist_opts.group_size,
                          dist_opts.timeout)


if BACKEND_NAME.upper() not in _dist.Backend._plugins:
    _dist.Backend.register_backend(BACKEND_NAME, _create, extended_api=True,
                                   devices=["cpu", "cuda"])
