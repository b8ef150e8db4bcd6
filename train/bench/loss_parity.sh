#!/usr/bin/env bash
# Loss parity (docs/training.md, "Measurements" (a)): every plan shape of the trainer for STEPS
# steps against the single-process run with the same global batch and micro-batch count, from
# the same seed and data. Prints the relative loss difference at step 1 and the largest over
# the run. Not timed; about a minute on two cores.
#
#   train/bench/loss_parity.sh [BUILD_DIR]   (env: STEPS=50)
set -euo pipefail
BUILD=${1:-build}
STEPS=${STEPS:-50}
OUT=$(mktemp -d)
export OPENBLAS_NUM_THREADS=1
TRAIN="$BUILD/train/mixccl-train"
RUN="$BUILD/tools/mixcclrun"
MODEL="--layers 3 --channels 32 --heads 4 --seq-len 32 --lr 3e-3 --steps $STEPS --quiet"

single() {  # single G M
  [ -f "$OUT/single-$1-$2.json" ] ||
    "$TRAIN" $MODEL --global-batch "$1" --micro-batches "$2" --report "$OUT/single-$1-$2.json"
}

# name | ranks | launcher arguments | trainer arguments | plan (G=16)
shape() {
  local name=$1 ranks=$2 launcher=$3 extra=$4 plan=$5
  echo "$plan" > "$OUT/$name.plan.json"
  local m
  m=$(python3 -c "import json;print(json.load(open('$OUT/$name.plan.json'))['micro_batches'])")
  single 16 "$m"
  if ! "$RUN" -np "$ranks" --timeout 300 $launcher "$TRAIN" $MODEL --plan "$OUT/$name.plan.json" \
      $extra --report "$OUT/$name.json" > "$OUT/$name.log" 2>&1; then
    echo "| $name | $ranks | failed: $(tail -1 "$OUT/$name.log") | | | |"
    return
  fi
  python3 - "$OUT/single-16-$m.json" "$OUT/$name.json" "$name" "$ranks" <<'PY'
import json, sys
a = [s["loss"] for s in json.load(open(sys.argv[1]))["steps"]]
b = [s["loss"] for s in json.load(open(sys.argv[2]))["steps"]]
assert len(a) == len(b)
rel = [abs(x - y) / x for x, y in zip(a, b)]
print(f"| {sys.argv[3]} | {sys.argv[4]} | {rel[0]:.1e} | {max(rel):.1e} | {a[-1]:.6f} | {b[-1]:.6f} |")
PY
}

S() {  # S group stage type first last tp dp mb [recompute]
  echo "{\"group\": $1, \"stage\": $2, \"device_type\": \"$3\", \"layers\": [$4, $5], \"tp\": $6, \"dp\": $7, \"micro_batch\": $8, \"recompute\": ${9:-0}}"
}
P() {  # P micro_batches stage...
  local m=$1; shift
  local IFS=,
  echo "{\"global_batch_size\": 16, \"seq_length\": 32, \"micro_batches\": $m, \"stages\": [$*]}"
}

echo "| plan shape | ranks | step 1 | largest over $STEPS steps | final loss, single | final loss, plan |"
echo "|---|---|---|---|---|---|"
shape "uneven data parallel (5 + 3)" 2 "" "" \
  "$(P 2 "$(S 0 0 a 0 3 1 1 5)" "$(S 0 0 a 0 3 1 1 3)")"
shape "uneven pipeline (1 + 2 layers), recompute 1" 2 "" "" \
  "$(P 4 "$(S 0 0 a 0 1 1 1 4)" "$(S 0 1 a 1 3 1 1 4 1)")"
TWO="$(P 2 "$(S 0 0 fast 0 3 1 1 5)" "$(S 1 0 slow 0 2 1 1 3)" "$(S 1 1 slow 2 3 1 1 3)")"
shape "groups with different splits (3 layers beside 2 + 1)" 3 "" "" "$TWO"
shape "the same on two adaptors (host:1, gloo:2)" 3 "--adaptors host:1,gloo:2" "" "$TWO"
shape "two replicas of a 2-stage pipeline" 4 "" "" \
  "$(P 4 "$(S 0 0 a 0 2 1 2 2)" "$(S 0 1 a 2 3 1 2 2)")"
shape "tp 2" 2 "" "" "$(P 2 "$(S 0 0 a 0 3 2 1 8)")"
shape "tp 2 x uneven data parallel (5 + 3)" 4 "" "" \
  "$(P 2 "$(S 0 0 a 0 3 2 1 5)" "$(S 0 0 a 0 3 2 1 3)")"
shape "tp 2 x pipeline (1 + 2), recompute 1" 4 "" "" \
  "$(P 4 "$(S 0 0 a 0 1 2 1 4)" "$(S 0 1 a 1 3 2 1 4 1)")"
shape "ZeRO-1, uneven data parallel (5 + 3)" 2 "" "--zero1" \
  "$(P 2 "$(S 0 0 a 0 3 1 1 5)" "$(S 0 0 a 0 3 1 1 3)")"
shape "ZeRO-1, groups with different splits, two adaptors" 3 "--adaptors host:1,gloo:2" "--zero1" "$TWO"
rm -rf "$OUT"
