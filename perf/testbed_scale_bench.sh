#!/usr/bin/env bash
# Many "hosts" in the namespace testbed (tests/testbed/testbed.sh, docs/testbed.md), R ranks on
# each, started by host_ranks.sh; every rank runs perf/testbed_scale_rank (init time, descriptors,
# 8-byte AllReduce latency, 1 MiB AllReduce) in two cases, alternating, --reps times each:
#   hier  the default (auto): AllReduce runs hierarchical-host (inside hosts, among one leader
#         per host, inside hosts: algo/host_hierarchical.h) where its rule says so
#   forced  MIXCCL_ALGO=hierarchical-host: every size hierarchical-host
#   flat  MIXCCL_HIER_HOSTS with one label for every rank: the same job with the flat algorithm
#         auto picks (recursive doubling at 8 bytes, ring or recursive halving at 1 MiB)
# Prints one line per run of medians over the ranks (and the slowest init, the largest fd count).
#
#   perf/testbed_scale_bench.sh [--build DIR] [--hosts 16] [--ranks-per-host 4] [--reps 1]
#     [--iters 20] [--cases hier,forced,flat] [--timeout 300] [--bw RATE [--burst SIZE]]
# --bw limits each host's link per direction (tc tbf, testbed.sh --bw; --burst default 64kb).
#
# Needs root (network namespaces); exits 77 with the reason otherwise.
set -u
here=$(cd "$(dirname "$0")/.." && pwd)
BUILD=$here/build HOSTS=16 RPH=4 REPS=1 ITERS=20 CASES=hier,flat TIMEOUT=300 SHAPE=()
while [ $# -gt 0 ]; do
  case "$1" in
    --build) BUILD=$2; shift 2 ;;
    --hosts) HOSTS=$2; shift 2 ;;
    --ranks-per-host) RPH=$2; shift 2 ;;
    --reps) REPS=$2; shift 2 ;;
    --iters) ITERS=$2; shift 2 ;;
    --cases) CASES=$2; shift 2 ;;
    --timeout) TIMEOUT=$2; shift 2 ;;
    --bw) SHAPE+=(--bw "$2"); shift 2 ;;
    --burst) SHAPE+=(--burst "$2"); shift 2 ;;
    *) echo "testbed_scale_bench: unknown option $1" >&2; exit 2 ;;
  esac
done
TESTBED=$here/tests/testbed/testbed.sh
"$TESTBED" check "${SHAPE[@]:0:2}" || exit $?
N=$((HOSTS * RPH))
oneHost=$(python3 -c "print(','.join(['0'] * $N))")
summarize() {  # case, log
  python3 - "$1" "$2" "$HOSTS" "$RPH" <<'PY'
import re, statistics, sys
case, log, hosts, rph = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
rows = [dict(zip(m[0::2], m[1::2])) for m in
        (l.split("testbed_scale_rank: ", 1)[1].split()[4:] for l in open(log) if "testbed_scale_rank: rank" in l)]
n = hosts * rph
if len(rows) != n:
    print(f"{case}: {len(rows)} of {n} ranks reported (see {log})"); sys.exit(1)
med = lambda k: statistics.median(float(r[k]) for r in rows)
algos = sorted({(r["algo8"], r["algo1m"]) for r in rows})
print(f"| {hosts} x {rph} | {case} | {med('init_s'):.2f} / {max(float(r['init_s']) for r in rows):.2f} "
      f"| {med('fds_init'):.0f} / {med('fds'):.0f} (max {max(int(r['fds']) for r in rows)}) "
      f"| {med('sockets'):.0f} | {med('peers'):.0f} | {med('lat8_us'):.0f} | {med('allreduce1m_ms'):.1f} "
      f"| {med('busbw_gbs'):.4f} | {' '.join(a for a, _ in algos)} / {' '.join(b for _, b in algos)} |")
PY
}
OUT=$(mktemp -d /tmp/testbed_scale.XXXXXX)
echo "testbed_scale_bench: $HOSTS hosts x $RPH ranks, $ITERS 8-byte AllReduces${SHAPE[*]:+, ${SHAPE[*]}}, logs in $OUT"
echo "| hosts x ranks | case | init s (median / slowest) | fds per rank after init / after collectives | sockets | peers | 8 B AllReduce us | 1 MiB AllReduce ms | 1 MiB busbw GB/s | algorithm 8 B / 1 MiB |"
echo "|---|---|---|---|---|---|---|---|---|---|"
rc=0
for ((rep = 1; rep <= REPS; rep++)); do
  for c in ${CASES//,/ }; do
    log=$OUT/$c.$rep.log
    case $c in
      hier) extra=() ;;
      forced) extra=(MIXCCL_ALGO=hierarchical-host) ;;
      flat) extra=(MIXCCL_HIER_HOSTS=$oneHost) ;;
      *) echo "testbed_scale_bench: unknown case $c" >&2; exit 2 ;;
    esac
    env "${extra[@]}" MIXCCL_TIMEOUT_S=$((TIMEOUT - 30)) "$TESTBED" exec "$HOSTS" "${SHAPE[@]}" --timeout "$TIMEOUT" -- \
      "$here/tests/testbed/host_ranks.sh" "$RPH" "$BUILD/perf/testbed_scale_rank" "$ITERS" >"$log" 2>&1 \
      || { echo "testbed_scale_bench: case $c run $rep failed (see $log)" >&2; rc=1; continue; }
    summarize "$c" "$log" || rc=1
  done
done
exit $rc
