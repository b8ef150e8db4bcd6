#!/usr/bin/env bash
# Cross-domain AllReduce over a shaped link (docs/performance.md, "Across domains over a shaped
# link"). Two testbed hosts (tests/testbed/testbed.sh) whose links are limited to B per direction
# with tc tbf, R ranks per host, all_reduce_perf from MIN to MAX (doubling), in these cases:
#   split  host adaptor, MIXCCL_DOMAIN_SPLIT one color per host: two domains, one per host
#   gloo   host adaptor on host 0, gloo on host 1: two domains, one per host
#   one    host adaptor, no split: the same ranks as one domain
# Every (rate, case) runs --reps times, interleaved; the table shows the median out-of-place
# algbw (size / time) and its ratio to B, and each case against "one" at the same rate.
#
#   perf/testbed_domains_bench.sh [--build DIR] [--bw 200mbit,1gbit] [--burst SIZE] [--reps 3]
#     [--cases split,gloo,one] [--min 16M] [--max 256M] [--iters 1] [--warmup 0]
#     [--ranks-per-host 2] [--piece BYTES] [--out DIR] [--timeout S]
#
# Needs root (network namespaces); exits 77 with the reason otherwise. Prints the table; keeps
# every run's log in --out (default: a new folder under /tmp).
set -u
here=$(cd "$(dirname "$0")/.." && pwd)
BUILD=$here/build BWS=200mbit,1gbit BURST="" REPS=3 CASES=split,gloo,one MIN=16M MAX=256M
ITERS=1 WARMUP=0 RPH=2 PIECE="" OUT="" TIMEOUT=""
while [ $# -gt 0 ]; do
  case "$1" in
    --build) BUILD=$2; shift 2 ;;
    --bw) BWS=$2; shift 2 ;;
    --burst) BURST=$2; shift 2 ;;
    --reps) REPS=$2; shift 2 ;;
    --cases) CASES=$2; shift 2 ;;
    --min) MIN=$2; shift 2 ;;
    --max) MAX=$2; shift 2 ;;
    --iters) ITERS=$2; shift 2 ;;
    --warmup) WARMUP=$2; shift 2 ;;
    --ranks-per-host) RPH=$2; shift 2 ;;
    --piece) PIECE=$2; shift 2 ;;
    --out) OUT=$2; shift 2 ;;
    --timeout) TIMEOUT=$2; shift 2 ;;
    -h | --help) sed -n '2,17p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "testbed_domains_bench: unknown argument '$1' (--help)" >&2; exit 2 ;;
  esac
done
TESTBED=$here/tests/testbed/testbed.sh
HOST_RANKS=$here/tests/testbed/host_ranks.sh
RANK_ADAPTOR=$here/tests/testbed/rank_adaptor.sh
PERF=$BUILD/perf/all_reduce_perf
[ -x "$PERF" ] || { echo "testbed_domains_bench: $PERF not built" >&2; exit 2; }
"$TESTBED" check --bw 10mbit || exit $?
[ -n "$OUT" ] || OUT=$(mktemp -d /tmp/testbed_domains_bench.XXXXXX)
mkdir -p "$OUT"

# tc rate -> bytes per second (tc: kbit/mbit/gbit are 10^3/10^6/10^9 bits, bps is bytes).
rate_bytes() {
  local r=${1,,} n u
  n=${r%%[a-z]*}
  u=${r#"$n"}
  case "$u" in
    bit | "") echo "$n / 8" ;; kbit) echo "$n * 1000 / 8" ;; mbit) echo "$n * 1000000 / 8" ;;
    gbit) echo "$n * 1000000000 / 8" ;; bps) echo "$n" ;; kbps) echo "$n * 1000" ;;
    mbps) echo "$n * 1000000" ;; gbps) echo "$n * 1000000000" ;;
    *) echo "testbed_domains_bench: unknown rate unit in '$1'" >&2; return 1 ;;
  esac | bc
}

# adaptors and split for a case, 2 hosts x RPH ranks
case_env() {  # case -> "ADAPTORS SPLIT"
  local c=$1 a=() s=() i
  for ((i = 0; i < 2 * RPH; i++)); do
    local h=$((i / RPH))
    case "$c" in
      split) a+=(host); s+=("$h") ;;
      gloo) if [ $h = 0 ]; then a+=(host); else a+=(gloo); fi ;;
      one) a+=(host) ;;
      *) echo "testbed_domains_bench: unknown case '$c'" >&2; return 1 ;;
    esac
  done
  local IFS=,
  echo "${a[*]} ${s[*]:--}"
}

# The timeout of one run: every size moved 2 + 2*iters + warmup times at a third of B.
sizes_total() {  # bytes of MIN..MAX doubling
  local s t=0 m M
  m=$(numfmt --from=iec "$MIN") M=$(numfmt --from=iec "$MAX")
  for ((s = m; s <= M; s *= 2)); do t=$((t + s)); done
  echo $t
}

IFS=, read -r -a bws <<<"$BWS"
IFS=, read -r -a cases <<<"$CASES"
CSV=$OUT/samples.csv
echo "rep,bw,case,domains,bytes,time_us_out,time_us_in" >"$CSV"
total=$(sizes_total)
echo "# logs and samples in $OUT" >&2
for ((rep = 1; rep <= REPS; rep++)); do
  for bw in "${bws[@]}"; do
    B=$(rate_bytes "$bw") || exit 2
    burst=${BURST:-$(( B / 250 > 65536 ? B / 250 : 65536 ))b}  # B/HZ (250 here), at least 64 KiB
    tmo=${TIMEOUT:-$(( 60 + total * (2 + 2 * ITERS + WARMUP) * 3 / B ))}
    # Reference: raw TCP goodput per direction with both directions busy (4 streams each way).
    tcp=$("$TESTBED" exec 2 --bw "$bw" --burst "$burst" --timeout 120 -- \
      python3 "$here/tests/testbed/tb_duplex.py" 67108864 4 2>&1 |
      sed -n 's/.*duplex h[01]: received \([0-9]*\) bytes in \([0-9.]*\)s.*/\1 \2/p' |
      awk '{ printf "%.0f\n", $2 * 1e6 }' | sort -n | tail -1)
    [ -n "$tcp" ] && echo "$rep,$bw,tcp,-,67108864,$tcp,$tcp" >>"$CSV"
    for c in "${cases[@]}"; do
      read -r adaptors split < <(case_env "$c") || exit 2
      [ "$split" = - ] && split=""
      log=$OUT/run.$bw.$c.$rep.log
      echo "# rep $rep bw $bw (burst $burst) case $c: adaptors $adaptors split '${split}'" >&2
      env MIXCCL_DEBUG=INFO MIXCCL_DEBUG_SUBSYS=INIT MIXCCL_DOMAIN_SPLIT="$split" \
        MIXCCL_PLUGIN_PATH="$BUILD/src" MIXCCL_TIMEOUT_S="$tmo" \
        ${PIECE:+MIXCCL_HIER_PIECE_BYTES=$PIECE} \
        "$TESTBED" exec 2 --bw "$bw" --burst "$burst" --timeout "$tmo" -- \
        "$HOST_RANKS" "$RPH" "$RANK_ADAPTOR" "$adaptors" \
        "$PERF" -b "$MIN" -e "$MAX" -f 2 -n "$ITERS" -w "$WARMUP" -c 0 -J "$log.json" >"$log" 2>&1
      rc=$?
      if [ $rc != 0 ]; then
        echo "testbed_domains_bench: run failed ($rc), see $log" >&2
        tail -5 "$log" >&2
        continue
      fi
      domains=$(grep -m1 -o '\[rank 0\] .*rank 0: [0-9]* domains\{0,1\}:' "$log" |
        grep -o '[0-9]* domains\{0,1\}:' | cut -d' ' -f1)
      # rank 0's JSON (the table prints times of 10 s and more with 2 digits)
      python3 -c 'import json, sys
for x in json.load(open(sys.argv[1]))["results"]:
    print(",".join(sys.argv[2:] + [str(x["size"]), str(x["out_of_place"]["time"]),
                                   str(x["in_place"]["time"])]))' \
        "$log.json" "$rep" "$bw" "$c" "${domains:-?}" >>"$CSV"
    done
  done
done

python3 - "$CSV" "$BWS" "$CASES" <<'EOF'
import csv, statistics, sys
rows = list(csv.DictReader(open(sys.argv[1])))
bws, cases = sys.argv[2].split(","), sys.argv[3].split(",") + ["tcp"]
def rate(r):
    r = r.lower()
    for u, m in (("gbit", 1e9 / 8), ("mbit", 1e6 / 8), ("kbit", 1e3 / 8), ("gbps", 1e9),
                 ("mbps", 1e6), ("kbps", 1e3), ("bit", 1 / 8), ("bps", 1)):
        if r.endswith(u):
            return float(r[: -len(u)]) * m
    return float(r) / 8
print("AllReduce float32 sum, 2 hosts; algbw = size / time (out of place), MB/s = 1e6 B/s;")
print("B = the tbf rate per host and direction; median over repetitions (n = samples);")
print("case tcp: raw TCP, 64 MiB each way at once over 4 streams (the slower direction), the")
print("goodput TCP itself gets from B when both directions are busy")
hdr = f"{'B':>8} {'case':>6} {'domains':>7} {'size':>6} {'algbw MB/s':>10} {'x B':>5} {'in-place x B':>12} {'x one':>6} {'n':>2}"
print(hdr)
for bw in bws:
    B = rate(bw)
    sizes = sorted({int(r["bytes"]) for r in rows if r["bw"] == bw})
    for c in cases:
        for s in sizes:
            sel = [r for r in rows if r["bw"] == bw and r["case"] == c and int(r["bytes"]) == s]
            if not sel:
                continue
            med = statistics.median(s / float(r["time_us_out"]) for r in sel)  # MB/s
            medin = statistics.median(s / float(r["time_us_in"]) for r in sel)
            one = [r for r in rows if r["bw"] == bw and r["case"] == "one" and int(r["bytes"]) == s]
            vs = med / statistics.median(s / float(r["time_us_out"]) for r in one) if one and c != "tcp" else float("nan")
            dom = "/".join(sorted({r["domains"] for r in sel}))
            print(f"{bw:>8} {c:>6} {dom:>7} {s // 2**20:>5}M {med:>10.2f} {med * 1e6 / B:>5.2f} "
                  f"{medin * 1e6 / B:>12.2f} {vs:>6.2f} {len(sel):>2}")
EOF
