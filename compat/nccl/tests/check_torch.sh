#!/bin/sh
# PyTorch with the shim preloaded: `import torch` works, the process has the shim (its marker)
# and torch reports the shim's NCCL version. Exit 77 (CTest: skipped) without python3 or torch.
# usage: check_torch.sh SHIM
shim=$1
if ! command -v python3 >/dev/null 2>&1 || ! python3 -c "import torch" >/dev/null 2>&1; then
  echo "SKIP: torch is not installed for python3"
  exit 77
fi
LD_PRELOAD=$shim python3 - <<'PY'
import ctypes, sys
import torch
marker = ctypes.c_char_p.in_dll(ctypes.CDLL(None), "mixcclNcclShimMarker")
print("shim marker:", marker.value.decode() if marker else None)
if torch.cuda.is_available() or hasattr(torch.cuda, "nccl"):
    try:
        v = torch.cuda.nccl.version()
        print("torch.cuda.nccl.version():", v)
        if tuple(v[:2]) != (2, 30):
            sys.exit("FAILED: torch sees NCCL %s, not the shim's 2.30" % (v,))
    except Exception as e:  # a CPU-only torch has no NCCL at all
        print("torch has no NCCL binding:", e)
print("torch on the shim: passed")
PY
