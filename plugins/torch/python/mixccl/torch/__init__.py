"""Registers mixccl as the torch.distributed backend "mixccl" (for "cpu" and "cuda" tensors).

    import mixccl.torch
    torch.distributed.init_process_group("mixccl")

See docs/pytorch.md.
"""

import os as _os

import torch as _torch
import torch.distributed as _dist

from mixccl._build_info import TORCH_VERSION as _BUILT_FOR


def _major_minor(version):
    return ".".join(version.split("+")[0].split(".")[:2])


# The extension is compiled against one torch X.Y (torch's C++ ABI changes between versions):
# another one would fail to load with an undefined symbol, or worse, load. Say it plainly.
if _BUILT_FOR is None:
    raise ImportError("mixccl was built without its torch backend (MIXCCL_WITH_TORCH=OFF)")
if _major_minor(_BUILT_FOR) != _major_minor(_torch.__version__):
    raise ImportError(f"mixccl's torch backend was built for torch {_BUILT_FOR}, and this is "
                      f"torch {_torch.__version__}: reinstall mixccl built against this torch "
                      "(docs/install.md)")

# The backend passes each communicator's unique id through the torch store. MIXCCL_COMM_ID (set
# by mixcclrun for its own rendezvous) would make every id that one address, and communicators
# formed at once (a point-to-point lane per peer) would all try to listen there: dropped before
# mixccl reads its environment.
_os.environ.pop("MIXCCL_COMM_ID", None)

from mixccl._torch_backend import MixcclBackend, create_backend  # noqa: E402

__all__ = ["MixcclBackend", "create_backend", "BACKEND_NAME"]

BACKEND_NAME = "mixccl"


def _create(dist_opts, backend_options):
    """torch's creator (extended API): a split of the parent group when torch offers one of
    ours (init_process_group(device_id=...) then new_group), else a new communicator."""
    # split_from is newer than torch 2.11, whose options object has no such attribute.
    parent = getattr(dist_opts, "split_from", None)
    if isinstance(parent, MixcclBackend):
        return parent.split_group(dist_opts.store, dist_opts.group_rank, dist_opts.timeout)
    return create_backend(dist_opts.store, dist_opts.group_rank, dist_opts.group_size,
                          dist_opts.timeout)


if BACKEND_NAME.upper() not in _dist.Backend._plugins:
    _dist.Backend.register_backend(BACKEND_NAME, _create, extended_api=True,
                                   devices=["cpu", "cuda"])
