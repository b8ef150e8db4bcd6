#!/usr/bin/env bash
# Acceleration ratio R, search accuracy E and planner accuracy (docs/training.md,
# "Measurements" (b) and (c)), for one emulated cluster with one device per type.
#
# The trainer profiles the model (--profile-out); the planner plans from that profile for each
# device type alone and for the whole cluster, keeping its TOP best candidates (--top). A
# uniform plan (each micro-batch slot split evenly over the types, every device holding the
# whole model) is the contrast. Every distinct plan runs REPS times for STEPS steps, the plans
# interleaved round by round; each round profiles again first and prices every plan with that
# profile (mixccl-plan-predict). A run's step time is its report's mean_step_time_s (step 1 left
# out); the tables give the median over the rounds and the range.
#   R = tokens/s of the planner's first choice / sum over the types of tokens/s alone
#   E = 1 - |T_auto - T_best| / T_best over the TOP candidates, all measured
#       (T_auto: the measured step time of the planner's first choice, T_best: the best one);
#   E_mb the same over the first choice and its layout with MBV other micro-batch counts
#   error = (predicted - measured) / measured of every plan
#
# Each rank's time is predicted as busy (compute and sends) + wait + AllReduce + update; the
# last table sets every rank's measured compute / comm / other against those.
#
# Run it at the default nice level, under flock /tmp/mixccl-measure.lock: the emulated
# devices stand for dedicated ones, and under nice -n 19 every other process of the shared
# machine (tests at nice 5, say) delays the ranks' wake-ups and operations in bursts (see
# docs/training.md (b)).
#
#   train/bench/accel_ratio.sh [BUILD_DIR]
#   env: CLUSTER=train/examples/emulated/cpu-fast-slow.json (or cpu-three-speeds.json)
#        STEPS=30 REPS=5 BASE=3 G=24 TOP=5 MBV=3 OUT=/tmp/mixccl-accel-<cluster name>
set -euo pipefail
BUILD=${1:-build}
HERE=$(cd "$(dirname "$0")" && pwd)
CLUSTER=${CLUSTER:-$HERE/../examples/emulated/cpu-fast-slow.json}
NAME=$(python3 -c "import json,sys;print(json.load(open(sys.argv[1]))['name'])" "$CLUSTER")
STEPS=${STEPS:-30}
REPS=${REPS:-5}
TOP=${TOP:-5}
MBV=${MBV:-3}
OUT=${OUT:-/tmp/mixccl-accel-$NAME}
MODEL="--layers 4 --channels 64 --heads 4 --seq-len 64"
G=${G:-24}
MBS=${MBS:-1,2,3,4,6,8,12,24}
# Every type runs at 1/BASE of its emulated speed (--slowdown-base). With BASE 3 the fastest
# type computes a third of the time and a type k times slower 1/(3k): two types 2:1 need
# 1/3 + 1/6 = 0.5 of a core together, three types 3:2:1 need 1/3 + 2/9 + 1/9 = 0.67, so the
# ranks of a run never ask for more than the 2 cores (shared with others) can give.
BASE=${BASE:-3}
export OPENBLAS_NUM_THREADS=1
mkdir -p "$OUT"
rm -f "$OUT"/report-*.json "$OUT"/predict-*.json "$OUT"/load.txt
TRAIN="$BUILD/train/mixccl-train"
RUN="$BUILD/tools/mixcclrun"
load() { echo "$1 $(cut -d' ' -f1-3 /proc/loadavg)" >> "$OUT/load.txt"; }

# 1. Profile, and the planner's model spec of this GPT.
load start
"$TRAIN" $MODEL --global-batch "$G" --cluster "$CLUSTER" --slowdown-base "$BASE" --profile-out "$OUT/profile.json" \
    --model-spec-out "$OUT/model.json" --profile-micro-batches "$MBS" --quiet

# 2. One-type clusters and their profiles; the plans.
python3 - "$CLUSTER" "$OUT" <<'PY'
import json, sys
c = json.load(open(sys.argv[1]))
prof = json.load(open(f"{sys.argv[2]}/profile.json"))
with open(f"{sys.argv[2]}/types.txt", "w") as f:
    f.write(" ".join(t["name"] for t in c["device_types"]) + "\n")
for t in c["device_types"]:
    one = dict(c, name=t["name"] + "-only", device_types=[t])
    json.dump(one, open(f"{sys.argv[2]}/cluster-{t['name']}.json", "w"))
    # The planner refuses a profile naming types its cluster lacks.
    mine = dict(prof, entries=[e for e in prof["entries"] if e["device_type"] == t["name"]])
    json.dump(mine, open(f"{sys.argv[2]}/profile-{t['name']}.json", "w"))
PY
read -r -a TYPES < "$OUT/types.txt"
for t in "${TYPES[@]}"; do
  "$BUILD/train/mixccl-plan" --model "$OUT/model.json" --cluster "$OUT/cluster-$t.json" \
      --profile "$OUT/profile-$t.json" --json --top 1 > "$OUT/plan-alone-$t.json"
done
"$BUILD/train/mixccl-plan" --model "$OUT/model.json" --cluster "$CLUSTER" \
    --profile "$OUT/profile.json" --json --top "$TOP" > "$OUT/plans-top.json"
# The candidates as plan files (an alternative lacks the batch fields; they are the best's),
# the uniform contrast, and the distinct plans to run (a candidate may be a type alone).
python3 - "$OUT" "$G" "$CLUSTER" "$MBV" <<'PY'
import json, sys
out, G, cluster = sys.argv[1], int(sys.argv[2]), json.load(open(sys.argv[3]))
types = [t["name"] for t in cluster["device_types"]]
top = json.load(open(f"{out}/plans-top.json"))
cands = [top] + top.get("alternatives", [])
names = []
for i, c in enumerate(cands, 1):
    p = {k: v for k, v in c.items() if k != "alternatives"}
    p["global_batch_size"], p["seq_length"] = top["global_batch_size"], top["seq_length"]
    json.dump(p, open(f"{out}/plan-cand{i}.json", "w"), indent=1)
    names.append(f"cand{i}")
# Uniform: every slot split evenly over the types, each device holding the whole model; the
# slot nearest above the first choice's that the type count divides and that divides G.
k = len(types)
m = top["micro_batches"]
L = max(s["layers"][1] for s in top["stages"])
slot = G // m
while slot % k or G % slot:
    slot += 1
u = {"global_batch_size": G, "seq_length": top["seq_length"], "micro_batches": G // slot,
     "stages": [{"group": g, "stage": 0, "device_type": t, "layers": [0, L], "tp": 1, "dp": 1,
                 "micro_batch": slot // k} for g, t in enumerate(types)]}
json.dump(u, open(f"{out}/plan-uniform.json", "w"), indent=1)
# The first choice's layout with other micro-batch counts (E over micro-batch counts): every
# stage's micro-batch divided by f (f times as many micro-batches) or multiplied by f (f times
# fewer), nearest first, up to MBV variants; the planner weighed these and chose cand1's.
MBV = int(sys.argv[4])
first = json.load(open(f"{out}/plan-cand1.json"))
mbs = [s["micro_batch"] for s in first["stages"]]
variants = []
for f in (2, 3, 4, 6, 8):
    if all(b % f == 0 for b in mbs):
        variants.append((first["micro_batches"] * f, [b // f for b in mbs]))
    if first["micro_batches"] % f == 0:
        variants.append((first["micro_batches"] // f, [b * f for b in mbs]))
variant_names = []
for m2, b2 in variants[:MBV]:
    v = dict(first, micro_batches=m2,
             stages=[dict(s, micro_batch=b) for s, b in zip(first["stages"], b2)])
    v.pop("predicted", None)  # the planner's numbers were cand1's
    json.dump(v, open(f"{out}/plan-mb{m2}.json", "w"), indent=1)
    variant_names.append(f"mb{m2}")
names = [f"alone-{t}" for t in types] + names + variant_names + ["uniform"]
def key(name):
    p = json.load(open(f"{out}/plan-{name}.json"))
    return json.dumps([p["global_batch_size"], p["micro_batches"],
                       [[s["group"], s["stage"], s["device_type"], s["layers"], s["tp"], s["dp"],
                         s["micro_batch"], s.get("recompute", 0)] for s in p["stages"]]])
seen, runs, same = {}, [], {}
for n in names:
    kk = key(n)
    if kk not in seen:
        seen[kk] = n
        runs.append(n)
    same[n] = seen[kk]
json.dump({"names": names, "same": same}, open(f"{out}/plans.json", "w"))
open(f"{out}/runs.txt", "w").write(" ".join(runs) + "\n")
PY
read -r -a RUNS < "$OUT/runs.txt"

# 3. Rounds: a fresh profile prices every plan (the machine's speed drifts with what else runs
# on it; a round's predictions and measurements see the same machine), then each distinct
# plan runs once, interleaved so that a busier moment of the machine hits them all alike.
for rep in $(seq "$REPS"); do
  load "round $rep"
  "$TRAIN" $MODEL --global-batch "$G" --cluster "$CLUSTER" --slowdown-base "$BASE" \
      --profile-out "$OUT/profile-$rep.json" --profile-micro-batches "$MBS" --quiet
  for name in "${RUNS[@]}"; do
    "$BUILD/train/mixccl-plan-predict" --model "$OUT/model.json" --cluster "$CLUSTER" \
        --profile "$OUT/profile-$rep.json" --plan "$OUT/plan-$name.json" \
        > "$OUT/predict-$name-$rep.json"
    ranks=$(python3 -c "import json;print(sum(s['tp']*s['dp'] for s in json.load(open('$OUT/plan-$name.json'))['stages']))")
    "$RUN" -np "$ranks" --timeout 300 "$TRAIN" $MODEL --plan "$OUT/plan-$name.json" \
        --cluster "$CLUSTER" --slowdown-base "$BASE" --steps "$STEPS" --quiet \
        --report "$OUT/report-$name-$rep.json"
  done
done
load end

# 4. The tables.
python3 "$HERE/accel_tables.py" "$OUT" "$REPS"
