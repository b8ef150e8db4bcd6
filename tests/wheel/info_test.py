"""CTest wheel_info_json: the installed console command `mixccl-info --json` exits 0 with JSON
of schema mixccl-info/1 that names the adaptors host, gloo, mpi and nccl (host usable, every
unusable one with its reason, the plugin files inside the venv), reports the installed torch and
the torch the extension was built for, and lists the MIXCCL_* settings with their source: one
set for the test (environment), one unset (default), one misspelt (not a library setting). The
text form has the same sections.

usage: info_test.py VENV_DIR
"""

import json
import os
import subprocess
import sys


def fail(msg):
    print(f"FAIL: {msg}")
    sys.exit(1)


def main():
    venv = os.path.realpath(sys.argv[1])
    command = os.path.join(venv, "bin", "mixccl-info")
    env = {"PATH": f"{venv}/bin:/usr/bin:/bin", "HOME": os.environ.get("HOME", "/"),
           "MIXCCL_TIMEOUT_S": "30", "MIXCCL_ALGOO": "ring"}
    r = subprocess.run([command, "--json"], capture_output=True, text=True, env=env, timeout=120)
    if r.returncode != 0:
        fail(f"mixccl-info --json exited {r.returncode}:\n{r.stdout}\n{r.stderr}")
    info = json.loads(r.stdout)
    if info.get("schema") != "mixccl-info/1":
        fail(f"schema {info.get('schema')!r}")
    adaptors = {a["name"]: a for a in info["adaptors"]}
    for name in ("host", "gloo", "mpi", "nccl"):
        if name not in adaptors:
            fail(f"adaptor {name} not listed: {sorted(adaptors)}")
    if not adaptors["host"]["usable"]:
        fail(f"the host adaptor is not usable: {adaptors['host']['why']}")
    for a in adaptors.values():
        if not a["usable"] and not a["why"]:
            fail(f"adaptor {a['name']} is not usable and says no reason")
        if a["file"] not in ("built-in", "") and not a["file"].startswith(venv + "/"):
            fail(f"adaptor {a['name']}'s plugin {a['file']} is not the venv's")
    mixccl = info["versions"]["mixccl"]
    if not mixccl["path"].startswith(venv + "/"):
        fail(f"libmixccl {mixccl['path']} is not the venv's")
    from importlib import metadata
    import torch
    if info["versions"]["torch"]["version"] != metadata.version("torch"):
        fail(f"torch {info['versions']['torch']} but {metadata.version('torch')} is installed")
    if f"built for torch {torch.__version__}" not in info["versions"]["torch"]["note"]:
        fail(f"torch note {info['versions']['torch']['note']!r} lacks the extension's torch")
    settings = {s["name"]: s for s in info["settings"]}
    checks = [("MIXCCL_TIMEOUT_S", "30", "environment"), ("MIXCCL_ALGO", "auto", "default")]
    for name, value, source in checks:
        s = settings.get(name)
        if s is None or s["value"] != value or s["source"] != source:
            fail(f"setting {name}: {s}, expected value {value} from {source}")
    if not settings.get("MIXCCL_ALGOO", {}).get("source", "").startswith(
            "environment, not a library setting"):
        fail(f"the misspelt MIXCCL_ALGOO is not flagged: {settings.get('MIXCCL_ALGOO')}")
    for a in info["adaptors"]:
        print(f"adaptor {a['name']}: {'usable' if a['usable'] else 'not usable: ' + a['why']}")
    print("transports:", ", ".join(f"{t['name']}={'yes' if t['available'] else 'no'}"
                                   for t in info["transports"]))

    text = subprocess.run([command], capture_output=True, text=True, env=env, timeout=120)
    sections = ["versions", "adaptors (each tried", "transports", "RDMA ports",
                "GPUs and accelerators (PCI)", "settings (docs/environment.md)"]
    missing = [s for s in sections if f"\n{s}" not in "\n" + text.stdout]
    if text.returncode != 0 or missing:
        fail(f"mixccl-info (text) exited {text.returncode}, lacks {missing}:\n{text.stdout}")
    print("wheel_info_json: OK")


if __name__ == "__main__":
    main()
