#!/usr/bin/env bash
# The main training job (scripts/run-main.sh torch-train: mixccl.train on hetero_3ranks.json,
# a replica of one stage beside a two-stage pipeline) with MIXCCL_TORCH_P2P=group and =lanes
# alternately, ROUNDS times (default 3): each run's median step time over steps 6-30 and its
# final loss (docs/scale.md, "PyTorch point-to-point").
#   perf/torch_train_p2p_ab.sh [BUILD]     # BUILD: the build folder, default build
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=$(cd "${1:-build}" && pwd)
ROUNDS=${ROUNDS:-3}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
for round in $(seq "$ROUNDS"); do
  for mode in group lanes; do
    MIXCCL_TORCH_P2P=$mode PYTHONPATH="$BUILD/python" "$BUILD/tools/mixcclrun" \
      --adaptors host:1,gloo:2 python3 -m mixccl.train \
      --model-spec plugins/torch/python/mixccl/train/examples/tiny-llama-3.json \
      --plan train/examples/plans/hetero_3ranks.json --steps 30 --threads 1 --quiet \
      --report "$out/$mode-$round.json" > "$out/$mode-$round.log" 2>&1 ||
      { echo "torch_train_p2p_ab: the $mode run of round $round failed:" >&2
        tail -20 "$out/$mode-$round.log" >&2; exit 1; }
    python3 - "$out/$mode-$round.json" "$mode" "$round" <<'PY'
import json, statistics, sys
report = json.load(open(sys.argv[1]))
steps = [s["step_s"] for s in report["steps"][5:]]
print(f"{sys.argv[2]:<6} round {sys.argv[3]}: median step {statistics.median(steps) * 1e3:.2f} ms, "
      f"final loss {report['steps'][-1]['loss']:.6f}")
PY
  done
done
