#!/bin/sh
# PyTorch with the shim preloaded: `import torch` works, the process has the shim (its marker,
# its ncclGetVersion), and the dynamic linker binds libtorch_cuda.so's nccl*
# imports to the shim, none elsewhere (LD_DEBUG=bindings, every symbol bound at load with
# LD_BIND_NOW). Exit 77 (CTest: skipped) without python3 or torch.
# usage: check_torch.sh SHIM
shim=$1
if ! command -v python3 >/dev/null 2>&1 || ! python3 -c "import torch" >/dev/null 2>&1; then
  echo "SKIP: torch is not installed for python3"
  exit 77
fi
LD_PRELOAD=$shim python3 - <<'PY'
import ctypes, sys
import torch
# The marker is a char array: read the string at its address.
first = ctypes.c_char.in_dll(ctypes.CDLL(None), "mixcclNcclShimMarker")
print("shim marker:", ctypes.string_at(ctypes.addressof(first)).decode())
# The process's ncclGetVersion (the first definition in the global scope) must be the shim's.
got = ctypes.c_int(0)
if ctypes.CDLL(None).ncclGetVersion(ctypes.byref(got)) != 0 or got.value != 23007:
    sys.exit("FAILED: the process's ncclGetVersion gives %d, not the shim's 23007" % got.value)
print("ncclGetVersion: %d" % got.value)
if torch.cuda.is_available() or hasattr(torch.cuda, "nccl"):
    try:
        v = torch.cuda.nccl.version()
        # torch 2.15 asks the library at run time (the shim's 2.30.7); torch 2.11 reports the NCCL
        # it was compiled against (2.28.9) whatever is loaded, so the value proves nothing there:
        # the bindings below do.
        print("torch.cuda.nccl.version():", v)
    except Exception as e:  # a CPU-only torch has no NCCL at all
        print("torch has no NCCL binding:", e)
print("torch on the shim: passed")
PY
[ $? -eq 0 ] || exit 1

log=$(mktemp)
trap 'rm -f "$log"' EXIT
LD_BIND_NOW=1 LD_DEBUG=bindings LD_DEBUG_OUTPUT=$log LD_PRELOAD=$shim python3 -c "import torch" || exit 1
# Lines: "binding file <from> [0] to <to> [0]: normal symbol `ncclX'" (one file per process).
bindings=$(cat "$log".* | grep "libtorch_cuda.so .* to .*: normal symbol \`nccl")
rm -f "$log".*
to_shim=$(printf '%s\n' "$bindings" | grep -c " to $shim \[")
elsewhere=$(printf '%s\n' "$bindings" | grep -v " to $shim \[" | grep -c "symbol")
echo "libtorch_cuda.so nccl* bindings: $to_shim to the shim, $elsewhere elsewhere"
if [ "$to_shim" -eq 0 ] || [ "$elsewhere" -ne 0 ]; then
  printf '%s\n' "$bindings" | grep -v " to $shim \[" | head -5
  echo "FAILED: libtorch_cuda.so's nccl* calls are not all bound to the shim"
  exit 1
fi
