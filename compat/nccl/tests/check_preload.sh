#!/bin/sh
# Runs the probe (linked to NVIDIA's libnccl.so.2) with the shim preloaded, and checks with
# LD_DEBUG=bindings that its NCCL calls bound to the shim's file.
# usage: check_preload.sh SHIM PROBE
set -u
shim=$1
probe=$2
log=$(mktemp)
trap 'rm -f "$log"' EXIT
LD_PRELOAD=$shim LD_DEBUG=bindings LD_DEBUG_OUTPUT=$log "$probe" shim || exit 1
real_shim=$(readlink -f "$shim")
fail=0
for sym in ncclGetVersion ncclCommInitAll ncclAllReduce ncclGroupEnd; do
  # ld.so: "binding file <probe> [0] to <library> [0]: normal symbol `<sym>'"
  line=$(cat "$log".* | grep "binding file $probe \[0\] to .*: normal symbol \`$sym'" | head -1)
  case "$line" in
    *"to $shim "*|*"to $real_shim "*) echo "ok: $sym -> shim" ;;
    *) echo "FAIL: $sym: ${line:-no binding seen}"; fail=1 ;;
  esac
done
rm -f "$log".*
[ $fail = 0 ] && echo "preload: passed"
exit $fail
