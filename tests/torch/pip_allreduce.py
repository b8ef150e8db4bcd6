"""Run by tests/wheel/allreduce_from_package_test.sh with the python of the venv the wheel was
installed into, from a folder of its own and with a clean environment: imports mixccl.torch,
runs a 2-rank all_reduce with backend "mixccl" (rank 1 on the gloo adaptor plugin when the package carries it) and
asserts the result and that mixccl's Python files, its extension, libmixccl and the plugin were
all loaded from PACKAGE_DIR, the installed package folder; then that an adaptor the package
lacks is looked for in the package's lib folder alone.

usage: pip_allreduce.py PACKAGE_DIR
"""

import os
import sys
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.multiprocessing as mp

WORLD_SIZE = 2
COUNT = 1000


def mixccl_objects():
    """The shared objects of mixccl this process has mapped: libmixccl, its plugins
    (libmixccl-adaptor-*) and the extension (_torch_backend*.so)."""
    with open("/proc/self/maps") as maps:
        paths = {line.split()[-1] for line in maps if "/" in line}
    return sorted(p for p in paths
                  if os.path.basename(p).startswith(("libmixccl", "_torch_backend")))


def assert_inside(path, package_dir, what):
    real = os.path.realpath(path)
    if not real.startswith(package_dir + os.sep):
        raise AssertionError(f"{what} was loaded from {real}, not from the installed package "
                             f"{package_dir}")


def rank_main(rank, package_dir, store_file, adaptors):
    os.environ["MIXCCL_ADAPTOR"] = adaptors[rank]
    import mixccl
    import mixccl.torch  # registers "mixccl"
    dist.init_process_group("mixccl", init_method=f"file://{store_file}", rank=rank,
                            world_size=WORLD_SIZE, timeout=timedelta(seconds=60))
    # rank r contributes (r + 1) * i at element i: the sum is 3 * i.
    t = torch.arange(COUNT, dtype=torch.float32) * (rank + 1)
    dist.all_reduce(t)
    expected = torch.arange(COUNT, dtype=torch.float32) * 3
    if not torch.equal(t, expected):
        raise AssertionError(f"rank {rank}: all_reduce gave {t[:8].tolist()}..., "
                             f"expected {expected[:8].tolist()}...")
    backend = dist.group.WORLD._get_backend(torch.device("cpu"))
    if backend.adaptor != adaptors[rank]:
        raise AssertionError(f"rank {rank}: adaptor {backend.adaptor}, asked for {adaptors[rank]}")

    assert_inside(mixccl.__file__, package_dir, "mixccl/__init__.py")
    assert_inside(mixccl.torch.__file__, package_dir, "mixccl/torch/__init__.py")
    assert_inside(sys.modules["mixccl._torch_backend"].__file__, package_dir,
                  "the extension mixccl._torch_backend")
    objects = mixccl_objects()
    for path in objects:
        assert_inside(path, package_dir, os.path.basename(path))
    names = [os.path.basename(p) for p in objects]
    if not any(n.startswith("libmixccl.so") for n in names):
        raise AssertionError(f"rank {rank}: no libmixccl mapped: {objects}")
    if adaptors[rank] != "host" and f"libmixccl-adaptor-{adaptors[rank]}.so" not in names:
        raise AssertionError(f"rank {rank}: the {adaptors[rank]} plugin is not mapped: {objects}")
    dist.destroy_process_group()
    print(f"rank {rank}: all_reduce of {COUNT} floats correct on adaptor {adaptors[rank]}; "
          f"loaded {' '.join(objects)}", flush=True)


def unknown_adaptor_main(rank, package_dir, store_file):
    """An adaptor the package lacks is looked for in the package's lib folder alone: no
    MIXCCL_PLUGIN_PATH is set, and the library has no build-time install folder to search."""
    os.environ["MIXCCL_ADAPTOR"] = "nosuch"
    import mixccl.torch  # noqa: F401
    try:
        dist.init_process_group("mixccl", init_method=f"file://{store_file}", rank=0,
                                world_size=1, timeout=timedelta(seconds=60))
    except dist.DistBackendError as e:
        tried = f"not found (tried {package_dir}/lib/libmixccl-adaptor-nosuch.so; set"
        if tried not in str(e):
            raise AssertionError(f"expected '{tried}' in the error, got: {e}") from None
        print(f"unknown adaptor: {str(e).splitlines()[0]}", flush=True)
        return
    raise AssertionError("a group on adaptor 'nosuch' was created")


def main():
    package_dir = os.path.realpath(sys.argv[1])
    plugins = os.listdir(os.path.join(package_dir, "lib"))
    print("installed plugins:", " ".join(sorted(plugins)), flush=True)
    # Mixed adaptors where the gloo plugin was built: the plugin is found beside libmixccl.
    adaptors = ["host", "gloo" if "libmixccl-adaptor-gloo.so" in plugins else "host"]
    store_file = os.path.join(os.getcwd(), "store")
    for f in (store_file, store_file + ".1"):
        if os.path.exists(f):
            os.remove(f)
    mp.spawn(rank_main, args=(package_dir, store_file, adaptors), nprocs=WORLD_SIZE)
    mp.spawn(unknown_adaptor_main, args=(package_dir, store_file + ".1"), nprocs=1)
    print("pip_allreduce: OK", flush=True)


if __name__ == "__main__":
    main()
