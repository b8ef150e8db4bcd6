#!/bin/sh
# The shim's exports against reference lists (ref/*.txt, each says where it came from): every
# listed symbol must be defined by the shim, none of the shim's nccl*/pnccl* symbols may carry a
# symbol version, every nccl* has its pnccl* twin (NCCL's one exception aside), the SONAME is
# libnccl.so.2 and the marker the nccl adaptor refuses is exported.
# usage: check_symbols.sh LIBNCCL_SHIM REFERENCE_LIST...
set -u
lib=$1
shift
fail=0
defined=$(mktemp)
trap 'rm -f "$defined"' EXIT
nm -D --defined-only "$lib" | awk '{print $3}' | sort -u > "$defined"
for ref in "$@"; do
  missing=$(grep -v '^#' "$ref" | sed 's/@.*//' | sort -u | comm -23 - "$defined")
  n=$(grep -vc '^#' "$ref")
  if [ -n "$missing" ]; then
    echo "FAIL: $(basename "$ref"): missing from the shim:" $missing
    fail=1
  else
    echo "ok: all $n symbols of $(basename "$ref") are defined"
  fi
done
versioned=$(grep -E '^p?nccl.*@|^mixcclNcclShimMarker@' "$defined")
if [ -n "$versioned" ] || readelf -V "$lib" | grep -q "Version definition"; then
  echo "FAIL: versioned symbols or version definitions:" $versioned
  fail=1
else
  echo "ok: no symbol versions"
fi
for s in $(grep -E '^nccl' "$defined"); do
  if [ "$s" != ncclResetDebugInitInternal ] && ! grep -qx "p$s" "$defined"; then
    echo "FAIL: $s has no p$s"
    fail=1
  fi
done
other=$(grep -vE '^p?nccl|^mixcclNcclShimMarker$' "$defined")
if [ -n "$other" ]; then
  echo "FAIL: exports beyond NCCL's names:" $other
  fail=1
fi
soname=$(readelf -d "$lib" | sed -n 's/.*Library soname: \[\(.*\)\].*/\1/p')
if [ "$soname" != libnccl.so.2 ]; then
  echo "FAIL: SONAME is '$soname', not libnccl.so.2"
  fail=1
fi
grep -qx mixcclNcclShimMarker "$defined" || { echo "FAIL: mixcclNcclShimMarker not exported"; fail=1; }
[ $fail = 0 ] && echo "symbol coverage: passed"
exit $fail
