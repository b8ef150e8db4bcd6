#!/usr/bin/env bash
# Acceleration ratio and planner accuracy (docs/training.md, "Measurements" (b) and (c)).
#
# Two emulated device types with speeds 2:1 (train/examples/emulated/cpu-fast-slow.json, one
# device each). The trainer profiles the model (--profile-out), the planner plans from that
# profile for the fast type alone, the slow type alone and the mixed cluster; a uniform plan
# (equal micro-batches) is the contrast. Each plan runs REPS times for STEPS steps; the median
# of the runs' mean step times (first step left out) is the measurement, and the median of the
# rounds' predictions (each round profiles again) the prediction.
#   R = tokens/s of the mixed cluster / (tokens/s of fast alone + tokens/s of slow alone)
# and each plan's predicted step time (mixccl-plan's, or mixccl-plan-predict's for the uniform
# plan) against the measured one.
#
#   train/bench/accel_ratio.sh [BUILD_DIR]  (env: STEPS=30 REPS=5 BASE=3 G=24 OUT=/tmp/mixccl-accel)
set -euo pipefail
BUILD=${1:-build}
STEPS=${STEPS:-30}
REPS=${REPS:-5}
OUT=${OUT:-/tmp/mixccl-accel}
HERE=$(cd "$(dirname "$0")" && pwd)
CLUSTER="$HERE/../examples/emulated/cpu-fast-slow.json"
MODEL="--layers 4 --channels 64 --heads 4 --seq-len 64"
G=${G:-24}
# Every type runs at 1/BASE of its emulated speed (--slowdown-base): the fast type at a third of
# the CPU, the slow one at a sixth, so the ranks of a run need less than one core together and
# leave room for whatever else shares the machine (2 cores here, shared).
BASE=${BASE:-3}
export OPENBLAS_NUM_THREADS=1
mkdir -p "$OUT"
TRAIN="$BUILD/train/mixccl-train"
RUN="$BUILD/tools/mixcclrun"

# 1. Profile, and the planner's model spec of this GPT.
"$TRAIN" $MODEL --global-batch "$G" --cluster "$CLUSTER" --slowdown-base "$BASE" --profile-out "$OUT/profile.json" \
    --model-spec-out "$OUT/model.json" --profile-micro-batches 1,2,3,4,6,8,12,24 --quiet

# 2. One-type clusters, and the plans.
python3 - "$CLUSTER" "$OUT" <<'PY'
import json, sys
c = json.load(open(sys.argv[1]))
prof = json.load(open(f"{sys.argv[2]}/profile.json"))
for t in c["device_types"]:
    one = dict(c, name=t["name"] + "-only", device_types=[t])
    json.dump(one, open(f"{sys.argv[2]}/cluster-{t['name']}.json", "w"))
    # The planner refuses a profile naming types its cluster lacks.
    mine = dict(prof, entries=[e for e in prof["entries"] if e["device_type"] == t["name"]])
    json.dump(mine, open(f"{sys.argv[2]}/profile-{t['name']}.json", "w"))
PY
plan() {  # plan NAME CLUSTER PROFILE
  "$BUILD/train/mixccl-plan" --model "$OUT/model.json" --cluster "$2" \
      --profile "$3" --json --top 1 > "$OUT/plan-$1.json"
}
plan fast "$OUT/cluster-fast.json" "$OUT/profile-fast.json"
plan slow "$OUT/cluster-slow.json" "$OUT/profile-slow.json"
plan mixed "$CLUSTER" "$OUT/profile.json"
# The uniform contrast: about the planned plan's micro-batch count (with an even slot), the
# slot split evenly over the two devices, each holding the whole model.
python3 - "$OUT" "$G" <<'PY'
import json, sys
out, G = sys.argv[1], int(sys.argv[2])
p = json.load(open(f"{out}/plan-mixed.json"))
m = p["micro_batches"]
L = max(s["layers"][1] for s in p["stages"])
slot = G // m
# An even slot nearest above the planned one (the planned 2:1 split may leave an odd slot).
if slot % 2:
    slot += 1
while G % slot:
    slot += 2
m = G // slot
u = {"global_batch_size": G, "seq_length": p.get("seq_length"), "micro_batches": m, "stages": [
    {"group": 0, "stage": 0, "device_type": "fast", "layers": [0, L], "tp": 1, "dp": 1,
     "micro_batch": slot // 2},
    {"group": 1, "stage": 0, "device_type": "slow", "layers": [0, L], "tp": 1, "dp": 1,
     "micro_batch": slot // 2}]}
json.dump(u, open(f"{out}/plan-uniform.json", "w"))
PY

# 3. Runs, the plans interleaved so that a busier moment of the machine hits them all alike,
# each round after a fresh profile that prices the plans (the machine's speed drifts with what
# else runs on it; a round's prediction and its measurements see the same machine).
for rep in $(seq "$REPS"); do
  "$TRAIN" $MODEL --global-batch "$G" --cluster "$CLUSTER" --slowdown-base "$BASE" \
      --profile-out "$OUT/profile-$rep.json" --profile-micro-batches 1,2,3,4,6,8,12,24 --quiet
  for name in fast slow mixed uniform; do
    "$BUILD/train/mixccl-plan-predict" --model "$OUT/model.json" --cluster "$CLUSTER" \
        --profile "$OUT/profile-$rep.json" --plan "$OUT/plan-$name.json" \
        > "$OUT/predict-$name-$rep.json"
    ranks=$(python3 -c "import json;print(sum(s['tp']*s['dp'] for s in json.load(open('$OUT/plan-$name.json'))['stages']))")
    "$RUN" -np "$ranks" --timeout 300 "$TRAIN" $MODEL --plan "$OUT/plan-$name.json" \
        --cluster "$CLUSTER" --slowdown-base "$BASE" --steps "$STEPS" --quiet \
        --report "$OUT/report-$name-$rep.json"
  done
done

# 4. The tables.
python3 - "$OUT" "$REPS" <<'PY'
import json, statistics, sys
out, reps = sys.argv[1], int(sys.argv[2])
rows = {}
for name in ["fast", "slow", "mixed", "uniform"]:
    plan = json.load(open(f"{out}/plan-{name}.json"))
    times = [json.load(open(f"{out}/report-{name}-{r}.json"))["summary"]["mean_step_time_s"]
             for r in range(1, reps + 1)]
    tokens = plan["global_batch_size"] * plan["seq_length"]
    measured = statistics.median(times)
    predicted = statistics.median(
        json.load(open(f"{out}/predict-{name}-{r}.json"))["step_time_s"] for r in range(1, reps + 1))
    shape = "; ".join(f"g{s['group']}s{s['stage']} {s.get('device_type','')} L{s['layers']} mb{s['micro_batch']}"
                      + (f" rc{s['recompute']}" if s.get("recompute") else "") for s in plan["stages"])
    round_err = statistics.median(
        json.load(open(f"{out}/predict-{name}-{r}.json"))["step_time_s"] / times[r - 1] - 1
        for r in range(1, reps + 1))
    rows[name] = dict(measured=measured, predicted=predicted, tps=tokens / measured, round_err=round_err,
                      m=plan["micro_batches"], shape=shape, spread=(min(times), max(times)))
print("| plan | micro-batches | stages | predicted step ms | measured step ms (median; min-max) | error | error per round (median) | tokens/s |")
print("|---|---|---|---|---|---|---|---|")
for name, r in rows.items():
    err = (r["predicted"] - r["measured"]) / r["measured"]
    print(f"| {name} | {r['m']} | {r['shape']} | {r['predicted']*1e3:.1f} | "
          f"{r['measured']*1e3:.1f} ({r['spread'][0]*1e3:.1f}-{r['spread'][1]*1e3:.1f}) | "
          f"{err*100:+.1f}% | {r['round_err']*100:+.1f}% | {r['tps']:.0f} |")
total = rows["fast"]["tps"] + rows["slow"]["tps"]
print()
print(f"R (planned) = {rows['mixed']['tps']:.0f} / ({rows['fast']['tps']:.0f} + {rows['slow']['tps']:.0f}) = {rows['mixed']['tps']/total:.3f}")
print(f"R (uniform) = {rows['uniform']['tps']:.0f} / {total:.0f} = {rows['uniform']['tps']/total:.3f}")
PY
