#!/usr/bin/env bash
# CTest torch_pip_isolated_build_names_the_flag (docs/pytorch.md "Install"): a pip build that
# forgot --no-build-isolation runs CMake under a python that cannot import torch, with SKBUILD
# set (scikit-build-core sets it). The configure must stop and name the flag. Here that python is
# a venv without the system's site-packages, and CMake is run as scikit-build-core would run it.
#
# usage: pip_isolation_hint_test.sh PYTHON SOURCE_DIR WORK_DIR
set -euo pipefail
PY=$1 SRC=$2 WORK=$3

rm -rf "$WORK"
mkdir -p "$WORK"
"$PY" -m venv --without-pip "$WORK/venv"
if "$WORK/venv/bin/python" -c "import torch" >/dev/null 2>&1; then
  echo "SKIP: a venv without site-packages still imports torch"
  exit 77
fi
set +e
cmake -S "$SRC" -B "$WORK/build" -DSKBUILD=2 -DPython3_EXECUTABLE="$WORK/venv/bin/python" \
  -DMIXCCL_BUILD_TESTS=OFF -DMIXCCL_BUILD_TOOLS=OFF -DMIXCCL_BUILD_PERF=OFF \
  -DMIXCCL_BUILD_TRAIN=OFF -DMIXCCL_BUILD_NCCL_SHIM=OFF >"$WORK/configure.log" 2>&1
rc=$?
set -e
cat "$WORK/configure.log"
if [ "$rc" -eq 0 ]; then
  echo "FAIL: the configure succeeded under a python without torch"
  exit 1
fi
# CMake wraps the message; join its lines before matching.
joined=$(tr -s ' \n' ' ' <"$WORK/configure.log")
expected="cannot import torch (scripts/setup.sh installs it; -DMIXCCL_WITH_TORCH=OFF builds without the backend; under pip, build with \`pip install --no-build-isolation\` so that the build sees the installed torch)"
if [[ "$joined" != *"$expected"* ]]; then
  echo "FAIL: the configure did not say: $expected"
  exit 1
fi
echo "OK: the configure stopped and named --no-build-isolation"
