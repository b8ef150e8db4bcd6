#!/usr/bin/env bash
# The charts of docs/training.md, "Measurements" (f), as SVG (train/bench/plots.py draws them):
#   OUT/train_loss_single_vs_hetero.svg  the loss over STEPS steps of one process against the
#       plan train/examples/plans/hetero_3ranks.json on two adaptors (host:1, gloo:2), same
#       model, data, seed, global batch and micro-batch count, and their relative difference
#   OUT/train_stage_times.svg  compute / communication / idle per rank and step of the same
#       plan with emulated fast and slow devices (train/examples/emulated/cpu-fast-slow.json),
#       and of a 3-stage pipeline (1 + 1 + 1 layers, 4 micro-batches, one device type)
# A few seconds on two cores.
#
#   train/bench/plots.sh [BUILD_DIR] [OUT_DIR]   (defaults: build docs/img; env STEPS=50)
set -euo pipefail
BUILD=${1:-build}
OUTDIR=${2:-docs/img}
STEPS=${STEPS:-50}
HERE=$(cd "$(dirname "$0")" && pwd)
EXAMPLES="$HERE/../examples"
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
export OPENBLAS_NUM_THREADS=1
TRAIN="$BUILD/train/mixccl-train"
RUN="$BUILD/tools/mixcclrun"
MODEL="--layers 3 --channels 32 --heads 4 --seq-len 32 --quiet"
HETERO="$EXAMPLES/plans/hetero_3ranks.json"
mkdir -p "$OUTDIR"

# (a) the loss curves
"$TRAIN" $MODEL --steps "$STEPS" --global-batch 16 --micro-batches 2 --report "$TMP/single.json"
"$RUN" --adaptors host:1,gloo:2 --timeout 300 "$TRAIN" $MODEL --steps "$STEPS" --plan "$HETERO" \
  --report "$TMP/hetero.json"
python3 "$HERE/plots.py" loss "$OUTDIR/train_loss_single_vs_hetero.svg" \
  "$TMP/single.json=single process (G 16, 2 micro-batches)" \
  "$TMP/hetero.json=hetero_3ranks.json, 3 ranks (host + gloo)"

# (b) the time per stage
cat > "$TMP/pipeline.json" <<'EOF'
{"global_batch_size": 16, "seq_length": 32, "micro_batches": 4, "stages": [
  {"group": 0, "stage": 0, "device_type": "fast", "layers": [0, 1], "tp": 1, "dp": 1, "micro_batch": 4},
  {"group": 0, "stage": 1, "device_type": "fast", "layers": [1, 2], "tp": 1, "dp": 1, "micro_batch": 4},
  {"group": 0, "stage": 2, "device_type": "fast", "layers": [2, 3], "tp": 1, "dp": 1, "micro_batch": 4}]}
EOF
"$RUN" -np 3 --timeout 300 "$TRAIN" $MODEL --steps 30 --plan "$HETERO" \
  --cluster "$EXAMPLES/emulated/cpu-fast-slow.json" --report "$TMP/hetero-emulated.json"
"$RUN" -np 3 --timeout 300 "$TRAIN" $MODEL --steps 30 --plan "$TMP/pipeline.json" \
  --report "$TMP/pipeline.json.report"
python3 "$HERE/plots.py" stages "$OUTDIR/train_stage_times.svg" \
  "$TMP/hetero-emulated.json=hetero_3ranks.json, emulated speeds fast 1 : slow 1/2" \
  "$TMP/pipeline.json.report=3-stage pipeline (1 + 1 + 1 layers), 4 micro-batches of 4"
echo "wrote $OUTDIR/train_loss_single_vs_hetero.svg $OUTDIR/train_stage_times.svg"
