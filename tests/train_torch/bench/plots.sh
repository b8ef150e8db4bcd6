#!/usr/bin/env bash
# The charts of docs/training-results.md "mixccl.train (PyTorch)": the loss curves of the
# single process and of hetero_3ranks.json on the PyTorch model over 50 steps, and the time per
# step and rank of that plan, drawn by train/bench/plots.py (the reports share its fields).
#   tests/train_torch/bench/plots.sh BUILD_DIR OUT_DIR
set -euo pipefail
build=$(realpath "${1:?usage: plots.sh BUILD_DIR OUT_DIR}")
out=$(realpath "${2:?usage: plots.sh BUILD_DIR OUT_DIR}")
root=$(cd "$(dirname "$0")/../../.." && pwd)
export PYTHONPATH="$build/python" OMP_NUM_THREADS=1 TORCH_CPP_LOG_LEVEL=ERROR
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
spec="$root/plugins/torch/python/mixccl/train/examples/tiny-llama-3.json"
plan="$root/train/examples/plans/hetero_3ranks.json"
python3 -m mixccl.train --model-spec "$spec" --steps 50 --micro-batches 2 --threads 1 --quiet \
  --report "$tmp/single.json"
"$build/tools/mixcclrun" --adaptors host:1,gloo:2 python3 -m mixccl.train --model-spec "$spec" \
  --plan "$plan" --steps 50 --threads 1 --quiet --report "$tmp/plan.json"
python3 "$root/train/bench/plots.py" loss "$out/torch_train_loss_single_vs_hetero.svg" \
  "$tmp/single.json=single process" "$tmp/plan.json=hetero_3ranks.json (host + gloo)"
python3 "$root/train/bench/plots.py" stages "$out/torch_train_stage_times.svg" \
  "$tmp/plan.json=hetero_3ranks.json on tiny-llama-3 (PyTorch, host + gloo)"
python3 - "$tmp/single.json" "$tmp/plan.json" <<'PY'
import json, sys
a, b = ([s["loss"] for s in json.load(open(p))["steps"]] for p in sys.argv[1:3])
print(f"loss {a[0]:.4f} -> {a[-1]:.4f}; largest relative difference over {len(a)} steps: "
      f"{max(abs(x - y) / abs(x) for x, y in zip(a, b)):.2e}")
PY
