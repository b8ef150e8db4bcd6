#!/usr/bin/env bash
# CTest wheel_allreduce_from_package: tests/torch/pip_allreduce.py in the wheel's venv, from a
# folder of its own and a clean environment (no PYTHONPATH, LD_LIBRARY_PATH, MIXCCL_PLUGIN_PATH).
# usage: allreduce_from_package_test.sh WORK_DIR PIP_ALLREDUCE_PY
set -euo pipefail
PY=$(cd "$1" && pwd -P)/venv/bin/python
SCRIPT=$(realpath "$2")
PACKAGE=$("$PY" -c "import sysconfig; print(sysconfig.get_path('platlib'))")/mixccl
RUN=$(mktemp -d)
trap 'rm -rf "$RUN"' EXIT
cd "$RUN"
env -i PATH=/usr/bin:/bin HOME="$HOME" TORCH_CPP_LOG_LEVEL=ERROR timeout 120 \
  "$PY" "$SCRIPT" "$PACKAGE"
echo "wheel_allreduce_from_package: OK"
