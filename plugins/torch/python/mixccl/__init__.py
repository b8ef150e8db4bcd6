"""mixccl: Python side of the mixccl collective communication library.

With torch >= 2.5 the torch.distributed backend "mixccl" is registered when torch is imported
(the ``torch.backends`` entry point, mixccl/_autoload.py); ``import mixccl.torch`` registers it
explicitly. The programs (mixcclrun, mixccl-info, ...) are console commands (docs/install.md).

This module imports nothing but the standard library: torch's autoload imports it while
``import torch`` is still running.
"""

import os as _os

__all__ = ["package_dir", "lib_dir", "bin_dir", "nccl_library"]


def package_dir():
    """The folder of the installed package."""
    return _os.path.dirname(_os.path.abspath(__file__))


def lib_dir():
    """The folder of libmixccl.so.0 and the adaptor plugins."""
    return _os.path.join(package_dir(), "lib")


def bin_dir():
    """The folder of the programs the console commands run."""
    return _os.path.join(package_dir(), "bin")


def nccl_library():
    """The drop-in libnccl.so.2 (for LD_PRELOAD), or None when the package has none."""
    path = _os.path.join(lib_dir(), "nccl", "libnccl.so.2")
    return path if _os.path.exists(path) else None
