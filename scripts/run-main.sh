#!/usr/bin/env bash
# Sets up, builds, and runs the main job: 4 ranks on this host AllReduce 1 Mi floats.
#   scripts/run-main.sh [NRANKS [COUNT]]
#   scripts/run-main.sh train   # a small heterogeneous training instead: mixccl-train runs a
#                               # non-uniform plan on 3 ranks, one on the host adaptor and two on
#                               # gloo (docs/training.md)
#   scripts/run-main.sh torch-train # the same plan on a PyTorch LLaMA-style model: mixccl.train
#                                   # on the mixccl torch backend (docs/training.md)
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
if [ "${1:-}" = train ]; then
  exec build/tools/mixcclrun --adaptors host:1,gloo:2 build/train/mixccl-train \
    --layers 3 --channels 32 --heads 4 --seq-len 32 --steps 50 \
    --plan train/examples/plans/hetero_3ranks.json
fi
if [ "${1:-}" = torch-train ]; then
  PYTHONPATH="$PWD/build/python${PYTHONPATH:+:$PYTHONPATH}" exec build/tools/mixcclrun \
    --adaptors host:1,gloo:2 python3 -m mixccl.train \
    --model-spec plugins/torch/python/mixccl/train/examples/tiny-llama-3.json \
    --plan train/examples/plans/hetero_3ranks.json --steps 30 --threads 1 \
    --report torch-train-report.json
fi
./build/examples/allreduce_demo "${1:-4}" "${2:-1048576}"
