#!/bin/sh
# The shim's cost per call, in instructions (callgrind: deterministic, whatever the machine's
# load): ncclAllReduce's inclusive count minus mixcclAllReduce's, over 1000 calls of 8 B and of
# 1 MiB. Fails when the shim adds more than 100 instructions per call, or when its cost grows
# with the message (it must touch no data). Exit 77 (skipped) without valgrind.
# usage: check_call_cost.sh NCCL_CALL_COST_BINARY
bin=$1
command -v valgrind >/dev/null 2>&1 || { echo "SKIP: no valgrind"; exit 77; }
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
calls=1000
for count in 2 262144; do
  valgrind --tool=callgrind --callgrind-out-file="$out/cg.$count" "$bin" $calls $count >/dev/null 2>&1 ||
    { echo "FAILED: $bin under callgrind"; exit 1; }
  ann=$(callgrind_annotate --inclusive=yes "$out/cg.$count")
  shim=$(printf '%s\n' "$ann" | grep 'collectives.cc:ncclAllReduce ' | head -1 | awk '{gsub(",","",$1); print $1}')
  lib=$(printf '%s\n' "$ann" | grep 'api_collectives.cc:mixcclAllReduce ' | head -1 | awk '{gsub(",","",$1); print $1}')
  [ -n "$shim" ] && [ -n "$lib" ] || { echo "FAILED: no counts for ncclAllReduce/mixcclAllReduce"; exit 1; }
  per=$(( (shim - lib) / calls ))
  echo "$count floats: ncclAllReduce $shim, mixcclAllReduce $lib instructions: the shim adds $per per call"
  eval "per_$count=$per"
done
if [ "$per_2" -gt 100 ] || [ "$per_262144" -gt 100 ]; then echo "FAILED: more than 100 per call"; exit 1; fi
grow=$(( per_262144 - per_2 )); [ $grow -lt 0 ] && grow=$(( -grow ))
if [ "$grow" -gt 10 ]; then echo "FAILED: the shim's cost changes with the message size"; exit 1; fi
echo "shim call cost: passed"
