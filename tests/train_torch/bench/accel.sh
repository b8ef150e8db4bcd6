#!/usr/bin/env bash
# mixccl.train's acceleration ratio R, search accuracy E and planner accuracy
# (docs/training-results.md, "mixccl.train (PyTorch)"), with the method of
# train/bench/accel_ratio.sh, for one emulated cluster with one device per type.
#
# mixccl.train profiles the model at each type's emulated speed (--profile-out); mixccl-plan
# plans from that profile for each type alone and for the whole cluster (--top TOP); the
# uniform plan (every micro-batch slot split evenly over the types, each device the whole
# model) is the contrast. Every distinct plan runs REPS times for STEPS steps under mixcclrun,
# the plans interleaved round by round; each round profiles again and prices every plan with
# that profile (mixccl-plan-predict). The profile is the fastest of its repeats, and a plan's
# measured step the 10th percentile of its steps of all rounds (step 1 left out): both the
# machine's quiet speed, which this machine's slow spells (seconds long, one core at a time) do
# not move (docs/training-results.md, "Why the same plan's runs differ"); STEP=mean or
# STEP=median: each run's mean or median step, median over the rounds
# (train/bench/accel_tables.py prints the tables).
#   R = tokens/s of the planner's first choice / sum over the types of tokens/s alone
#   E = 1 - |T_auto - T_best| / T_best over the candidates, all measured
#   error = (predicted - measured) / measured of every plan
# ALL=1: the candidates are every structure the planner lists at every micro-batch count
# (accel_plans.py), not the TOP structures and MBV micro-batch counts of the first choice.
#
# Every rank runs one torch thread; BASE (--slowdown-base) slows every type down so that the
# ranks of a job ask for less CPU than the machine has: with 2:1 types and BASE 3 the fast
# rank computes a third of the time, the slow one a sixth. Run it on a quiet machine:
#   /work/bin/measure tests/train_torch/bench/accel.sh build     (or flock the measure lock)
#   env: CLUSTER=train/examples/emulated/cpu-fast-slow.json MODEL=tests/train_torch/bench/accel-model.json
#        STEPS=20 REPS=5 BASE=3 TOP=5 MBV=3 ALL=0 STEP=low OUT=/tmp/mixccl-torch-accel-<cluster>[-all]
set -euo pipefail
BUILD=$(realpath "${1:-build}")
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../../.." && pwd)
CLUSTER=$(realpath "${CLUSTER:-$ROOT/train/examples/emulated/cpu-fast-slow.json}")
MODEL=$(realpath "${MODEL:-$HERE/accel-model.json}")
NAME=$(python3 -c "import json,sys;print(json.load(open(sys.argv[1]))['name'])" "$CLUSTER")
STEPS=${STEPS:-20}
REPS=${REPS:-5}
BASE=${BASE:-3}
TOP=${TOP:-5}
MBV=${MBV:-3}
ALL=${ALL:-0}
OUT=${OUT:-/tmp/mixccl-torch-accel-$NAME$([ "$ALL" = 1 ] && echo -all)}
MBS=${MBS:-1,2,3,4,6,8,12,24}
export PYTHONPATH="$BUILD/python" OMP_NUM_THREADS=1 TORCH_CPP_LOG_LEVEL=ERROR
mkdir -p "$OUT"
rm -f "$OUT"/report-*.json "$OUT"/predict-*.json "$OUT"/plan-*.json "$OUT"/load.txt
load() { echo "$1 $(cut -d' ' -f1-3 /proc/loadavg)" >> "$OUT/load.txt"; }
profile() {
  python3 -m mixccl.train --model-spec "$MODEL" --cluster "$CLUSTER" --slowdown-base "$BASE" \
      --threads 1 --profile-out "$1" --profile-micro-batches "$MBS" >/dev/null
}

# 1. Profile; one-type clusters and profiles; the plans.
load start
profile "$OUT/profile.json"
python3 - "$CLUSTER" "$OUT" <<'PY'
import json, sys
c, out = json.load(open(sys.argv[1])), sys.argv[2]
prof = json.load(open(f"{out}/profile.json"))
open(f"{out}/types.txt", "w").write(" ".join(t["name"] for t in c["device_types"]) + "\n")
for t in c["device_types"]:
    json.dump(dict(c, name=t["name"] + "-only", device_types=[t]),
              open(f"{out}/cluster-{t['name']}.json", "w"))
    # The planner refuses a profile naming types its cluster lacks.
    json.dump(dict(prof, entries=[e for e in prof["entries"] if e["device_type"] == t["name"]]),
              open(f"{out}/profile-{t['name']}.json", "w"))
PY
read -r -a TYPES < "$OUT/types.txt"
for t in "${TYPES[@]}"; do
  "$BUILD/train/mixccl-plan" --model "$MODEL" --cluster "$OUT/cluster-$t.json" \
      --profile "$OUT/profile-$t.json" --json --top 1 > "$OUT/plan-alone-$t.json"
done
"$BUILD/train/mixccl-plan" --model "$MODEL" --cluster "$CLUSTER" --profile "$OUT/profile.json" \
    --json --top "$([ "$ALL" = 1 ] && echo 1000 || echo "$TOP")" > "$OUT/plans-top.json"
python3 "$HERE/accel_plans.py" "$OUT" "$CLUSTER" "$([ "$ALL" = 1 ] && echo all || echo "$MBV")"
read -r -a RUNS < "$OUT/runs.txt"

# 2. Rounds: a fresh profile prices every plan (a round's predictions and measurements see the
# same machine), then each distinct plan runs once, interleaved so that a busier moment of
# the machine hits them all alike.
for rep in $(seq "$REPS"); do
  load "round $rep"
  profile "$OUT/profile-$rep.json"
  for name in "${RUNS[@]}"; do
    "$BUILD/train/mixccl-plan-predict" --model "$MODEL" --cluster "$CLUSTER" \
        --profile "$OUT/profile-$rep.json" --plan "$OUT/plan-$name.json" \
        > "$OUT/predict-$name-$rep.json"
    ranks=$(python3 -c "import json,sys;print(sum(s['tp']*s['dp'] for s in json.load(open(sys.argv[1]))['stages']))" "$OUT/plan-$name.json")
    "$BUILD/tools/mixcclrun" -np "$ranks" --timeout 300 python3 -m mixccl.train \
        --model-spec "$MODEL" --plan "$OUT/plan-$name.json" --cluster "$CLUSTER" \
        --slowdown-base "$BASE" --threads 1 --steps "$STEPS" --quiet \
        --report "$OUT/report-$name-$rep.json"
  done
done
load end

# 3. The tables.
STEP=${STEP:-low} python3 "$ROOT/train/bench/accel_tables.py" "$OUT" "$REPS"
