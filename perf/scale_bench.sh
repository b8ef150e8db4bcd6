#!/bin/sh
# Runs perf/scale_bench (mixccl) and perf/scale_bench_mpi (Open MPI) at each rank count, one
# line per configuration, all in one run (docs/scale.md):
#   perf/scale_bench.sh BUILD_DIR [ranks...]        (default ranks: 8 16 64 128 256)
# Configurations: mixccl with the default transport (shared memory on one host) and with
# MIXCCL_NET=socket (what crosses hosts), each connecting lazily (the default above 16 ranks)
# and, up to 64 ranks, eagerly; Open MPI 4 with --mca btl self,tcp and self,vader. Every rank runs on this
# one host: with more ranks than cores the numbers measure overheads, not bandwidth.
# Hold the measuring lock: flock /tmp/mixccl-measure.lock perf/scale_bench.sh build
set -u
build=${1:?usage: scale_bench.sh BUILD_DIR [ranks...]}
shift
ranks=${*:-8 16 64 128 256}
bench=$build/perf/scale_bench
mpibench=$build/perf/scale_bench_mpi
limit=${SCALE_BENCH_TIMEOUT:-900}
iters=${SCALE_BENCH_ITERS:-50}
run() {
  label=$1
  shift
  out=$(timeout "$limit" "$@" 2>/tmp/scale_bench.$$.err | grep '^ranks ')
  if [ -n "$out" ]; then
    echo "$label $out"
  else
    echo "$label failed: $(tail -n 1 /tmp/scale_bench.$$.err)"
  fi
}
lscpu | sed -n 's/^Model name: *//p' | head -n 1
for n in $ranks; do
  for net in auto socket; do
    # auto is lazy above 16 ranks, eager up to 16: there lazy is run explicitly.
    if [ "$n" -le 16 ]; then
      run "mixccl net=$net connect=lazy" env MIXCCL_NET=$net MIXCCL_CONNECT=lazy "$bench" "$n" "$iters"
    else
      run "mixccl net=$net connect=auto" env MIXCCL_NET=$net "$bench" "$n" "$iters"
    fi
    if [ "$n" -le 64 ]; then
      run "mixccl net=$net connect=eager" env MIXCCL_NET=$net MIXCCL_CONNECT=eager "$bench" "$n" "$iters"
    fi
  done
  if [ -x "$mpibench" ]; then
    for btl in self,tcp self,vader; do
      run "openmpi btl=$btl" mpirun --allow-run-as-root --oversubscribe -np "$n" --mca btl "$btl" \
        "$mpibench" "$iters"
    done
  fi
done
rm -f /tmp/scale_bench.$$.err
