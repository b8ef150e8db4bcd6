"""The console commands of the wheel (pyproject.toml [project.scripts]): each replaces itself
(exec) with its program in the package's bin folder, which finds libmixccl by its run path. So
the commands work from any install folder, with no PATH or LD_LIBRARY_PATH.
"""

import os
import sys

from mixccl import bin_dir


def _exec(program, args):
    path = os.path.join(bin_dir(), program)
    if not os.access(path, os.X_OK):
        sys.exit(f"mixccl: {path} is missing from the installed package: reinstall mixccl")
    os.execv(path, [program] + list(args))


def mixcclrun():
    _exec("mixcclrun", sys.argv[1:])


def mixccl_topo():
    _exec("mixccl-topo", sys.argv[1:])


def mixccl_plan():
    _exec("mixccl-plan", sys.argv[1:])


def mixccl_train():
    _exec("mixccl-train", sys.argv[1:])


def _perf_collectives():
    suffix = "_perf"
    try:
        names = os.listdir(bin_dir())
    except OSError:
        return []
    return sorted(n[: -len(suffix)] for n in names if n.endswith(suffix))


def mixccl_perf():
    """mixccl-perf COLLECTIVE [ARGS]: the nccl-tests compatible benchmark COLLECTIVE_perf."""
    collectives = _perf_collectives()
    usage = ("usage: mixccl-perf COLLECTIVE [ARGS...]  (COLLECTIVE_perf of nccl-tests; "
             "mixccl-perf COLLECTIVE --help lists ARGS)\n  COLLECTIVE: " + ", ".join(collectives))
    args = sys.argv[1:]
    if not args or args[0] in ("-h", "--help"):
        print(usage)
        sys.exit(0 if args else 2)
    if args[0] not in collectives:
        print(f"mixccl-perf: unknown collective '{args[0]}'\n{usage}", file=sys.stderr)
        sys.exit(2)
    _exec(args[0] + "_perf", args[1:])


def _torch_versions():
    """(installed torch, torch the extension was built for), "none" where there is none.
    Looked up without importing torch: mixccl-info works where torch is broken or absent."""
    from importlib import metadata
    try:
        installed = metadata.version("torch")
    except metadata.PackageNotFoundError:
        installed = "none"
    try:
        from mixccl._build_info import TORCH_VERSION
    except ImportError:
        TORCH_VERSION = None
    return installed, TORCH_VERSION or "none"


def mixccl_info():
    installed, built_for = _torch_versions()
    _exec("mixccl-info", ["--torch-version", installed, "--torch-built-for", built_for]
          + sys.argv[1:])
