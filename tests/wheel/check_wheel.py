"""CTest wheel_contents (docs/install.md "What the wheel holds"): the wheel holds the library,
the adaptor plugins, the NCCL drop-in, the torch extension, every Python file of the source
package (subpackages found without a list) and every program; its metadata names the console
commands and the torch.backends entry point; and no ELF file of it has a run path outside the
package (the build tree, or any absolute folder but torch's lib where the build found torch).

usage: check_wheel.py WHEEL SOURCE_PACKAGE_DIR
"""

import os
import subprocess
import sys
import tempfile
import zipfile

PROGRAMS = ["mixcclrun", "mixccl-topo", "mixccl-info", "mixccl-plan", "mixccl-train",
            "all_reduce_perf", "sendrecv_perf"]
COMMANDS = ["mixcclrun", "mixccl-topo", "mixccl-plan", "mixccl-train", "mixccl-perf",
            "mixccl-info"]


def fail(msg):
    print(f"FAIL: {msg}")
    sys.exit(1)


def runpath(path):
    out = subprocess.run(["readelf", "-d", path], capture_output=True, text=True,
                         check=True).stdout
    for line in out.splitlines():
        if "(RUNPATH)" in line or "(RPATH)" in line:
            return line.split("[", 1)[1].rstrip("]").split(":")
    return []


def main():
    wheel, source_package = sys.argv[1], sys.argv[2]
    with zipfile.ZipFile(wheel) as z:
        names = set(z.namelist())
        dist_info = next(n.split("/")[0] for n in names if ".dist-info/" in n)
        entry_points = z.read(f"{dist_info}/entry_points.txt").decode()
        with tempfile.TemporaryDirectory() as tmp:
            z.extractall(tmp)
            elves = []
            for n in sorted(names):
                p = os.path.join(tmp, n)
                with open(p, "rb") as f:
                    if f.read(4) == b"\x7fELF":
                        elves.append((n, runpath(p)))

    expected = ["mixccl/lib/libmixccl.so.0", "mixccl/lib/libmixccl_launch.so.0",
                "mixccl/lib/libmixccl-adaptor-gloo.so", "mixccl/lib/nccl/libnccl.so.2",
                "mixccl/_build_info.py"] + [f"mixccl/bin/{p}" for p in PROGRAMS]
    for root, _, files in os.walk(source_package):
        for f in files:
            if f.endswith(".py"):
                rel = os.path.relpath(os.path.join(root, f), os.path.dirname(source_package))
                expected.append(rel.replace(os.sep, "/"))
    missing = [e for e in expected if e not in names]
    if missing:
        fail(f"the wheel lacks {missing}")
    if not any(n.startswith("mixccl/_torch_backend") and n.endswith(".so") for n in names):
        fail("the wheel lacks the extension mixccl/_torch_backend*.so")
    extra = [n for n in names if n.startswith("mixccl/lib/") and n.count(".so.") and
             n.rsplit(".so.", 1)[1].count(".")]
    if extra:
        fail(f"fully versioned copies of libraries the wheel already holds: {extra}")

    for c in COMMANDS:
        if f"\n{c} = mixccl._commands:" not in "\n" + entry_points:
            fail(f"entry_points.txt has no console command {c}:\n{entry_points}")
    if "[torch.backends]\nmixccl = mixccl._autoload:register_backend" not in entry_points:
        fail(f"entry_points.txt has no torch.backends entry point:\n{entry_points}")

    import torch  # the one the build found: its lib folder is the only absolute run path allowed
    torch_lib = os.path.join(os.path.dirname(torch.__file__), "lib")
    for n, rp in elves:
        bad = [d for d in rp if not d.startswith("$ORIGIN") and d != torch_lib]
        if bad:
            fail(f"{n} has run path {':'.join(rp)}: {bad} is outside the package")
    print(f"{len(names)} files, {len(elves)} ELF files, every run path relative "
          f"($ORIGIN) or torch's lib folder {torch_lib}")
    print("wheel_contents: OK")


if __name__ == "__main__":
    main()
