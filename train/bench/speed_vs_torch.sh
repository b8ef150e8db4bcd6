#!/usr/bin/env bash
# Trainer speed against PyTorch (docs/training.md, "Measurements" (d)): single-process tokens/s
# of mixccl-train and of the same model in PyTorch (torch_gpt_speed.py), both on THREADS
# threads, alternating, REPS times each; medians of per-run medians (timings on a shared
# machine are noisy).
#
#   train/bench/speed_vs_torch.sh [BUILD_DIR]   (env: THREADS=1 REPS=5 STEPS=20)
set -euo pipefail
BUILD=${1:-build}
THREADS=${THREADS:-1}
REPS=${REPS:-5}
STEPS=${STEPS:-20}
HERE=$(cd "$(dirname "$0")" && pwd)
OUT=$(mktemp -d)
for shape in "4 64 4 64 8" "4 128 4 128 8"; do
  set -- $shape
  L=$1 C=$2 H=$3 T=$4 B=$5
  for rep in $(seq "$REPS"); do
    OPENBLAS_NUM_THREADS=$THREADS "$BUILD/train/mixccl-train" --layers "$L" --channels "$C" \
        --heads "$H" --seq-len "$T" --global-batch "$B" --steps "$STEPS" --quiet \
        --report "$OUT/ours-$C-$rep.json"
    OMP_NUM_THREADS=$THREADS python3 "$HERE/torch_gpt_speed.py" --layers "$L" --channels "$C" \
        --heads "$H" --seq-len "$T" --batch "$B" --steps "$STEPS" --threads "$THREADS" \
        > "$OUT/torch-$C-$rep.json"
  done
  python3 - "$OUT" "$C" "$REPS" "$L" "$H" "$T" "$B" "$THREADS" <<'PY'
import json, statistics, sys
out, C, reps, L, H, T, B, threads = sys.argv[1:]
reps = int(reps)
ours = [json.load(open(f"{out}/ours-{C}-{r}.json")) for r in range(1, reps + 1)]
# The report's steps: median step time over steps 2.. of each run, then the median of runs.
ours_tps = statistics.median(
    int(B) * int(T) / statistics.median(s["step_time_s"] for s in j["steps"][1:]) for j in ours)
theirs = [json.load(open(f"{out}/torch-{C}-{r}.json")) for r in range(1, reps + 1)]
torch_tps = statistics.median(j["tokens_per_s"] for j in theirs)
print(f"| L{L} C{C} H{H} T{T}, batch {B} | {threads} | {ours[0]['model']['parameters']} | "
      f"{ours_tps:.0f} | {torch_tps:.0f} (torch {theirs[0]['torch']}) | {ours_tps / torch_tps:.2f} |")
PY
done
rm -rf "$OUT"
