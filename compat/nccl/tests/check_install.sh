#!/bin/sh
# The install puts the shim beside the system's NCCL, never over it: lib/mixccl/nccl/libnccl.so.2,
# which finds libmixccl.so by its run path; a program linked to NVIDIA's NCCL then runs on the
# installed shim under LD_PRELOAD.
# usage: check_install.sh BUILD_DIR PRELOAD_PROBE
set -u
build=$1
probe=$2
prefix=$(mktemp -d)
trap 'rm -rf "$prefix"' EXIT
cmake --install "$build" --prefix "$prefix" >/dev/null || { echo "FAIL: cmake --install"; exit 1; }
libdir=$(find "$prefix" -path '*/mixccl/nccl/libnccl.so.2' | head -1)
[ -n "$libdir" ] || { echo "FAIL: no lib/mixccl/nccl/libnccl.so.2 under $prefix"; exit 1; }
echo "installed: ${libdir#$prefix/}"
if find "$prefix" -name 'libnccl.so*' ! -path '*/mixccl/nccl/*' | grep -q .; then
  echo "FAIL: a libnccl.so outside lib/mixccl/nccl"
  exit 1
fi
if ldd "$libdir" | grep -q 'libmixccl.so.0 => not found'; then
  echo "FAIL: the installed shim does not find libmixccl.so.0"
  exit 1
fi
ldd "$libdir" | grep "libmixccl.so.0 => $prefix" >/dev/null || { echo "FAIL: libmixccl.so.0 not from the install"; ldd "$libdir"; exit 1; }
LD_PRELOAD=$libdir "$probe" shim || exit 1
echo "install: passed"
