#!/usr/bin/env bash
# Measurement 1 of docs/training.md (mixccl.train): every plan shape of the tests for STEPS
# steps (default 50) against the single-process run, fp32 on CPU: the largest relative loss
# difference per shape. Run it under the measurement lock:
#   flock /tmp/mixccl-measure.lock tests/train_torch/bench/parity.sh build [STEPS]
set -euo pipefail
build=$(realpath "${1:?usage: parity.sh BUILD_DIR [STEPS]}")
steps=${2:-50}
here=$(cd "$(dirname "$0")/.." && pwd)
export PYTHONPATH="$build/python:$here" OMP_NUM_THREADS=1 TORCH_CPP_LOG_LEVEL=ERROR
run="$build/tools/mixcclrun"
line() { grep -E "^parity:" | sed "s/^/$1: /"; }
python3 "$here/parity.py" "$here/tiny3.json" "$here/plans/pipeline_2.json" 2 "$steps" torchrun | line "pipeline_2 (torchrun)"
python3 "$here/parity.py" "$here/tiny3.json" "$here/plans/hetero_3.json" 3 "$steps" mixcclrun "$run" host:1,gloo:2 | line "hetero_3 (host:1,gloo:2)"
python3 "$here/parity.py" "$here/tiny3.json" "$here/plans/classes_4.json" 4 "$steps" mixcclrun "$run" host:4 | line "classes_4 (host:4)"
python3 "$here/parity.py" "$here/tiny4-tied.json" "$here/plans/depths_6_tied.json" 6 "$steps" mixcclrun "$run" host:6 | line "depths_6_tied (host:6)"
