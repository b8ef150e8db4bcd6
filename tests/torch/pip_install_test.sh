#!/usr/bin/env bash
# CTest torch_pip_install (docs/pytorch.md "Install"): `pip install --no-build-isolation` of the
# source tree into a fresh venv that sees the installed torch (--system-site-packages), then,
# from another folder and with a clean environment (no PYTHONPATH, LD_LIBRARY_PATH or
# MIXCCL_PLUGIN_PATH), `import mixccl.torch` and a 2-rank all_reduce that must be right and must
# load everything of mixccl from the venv (pip_allreduce.py). Exit 77 (skipped) without torch.
#
# usage: pip_install_test.sh PYTHON SOURCE_DIR WORK_DIR
# WORK_DIR keeps the CMake build folder (WORK_DIR/pip-build) between runs, so a second run
# rebuilds only what changed; the venv and the run folder are made anew each time.
set -euo pipefail
PY=$1 SRC=$2 WORK=$3

if ! "$PY" -c "import torch" >/dev/null 2>&1; then
  echo "SKIP: $PY cannot import torch (scripts/install-torch.sh installs it)"
  exit 77
fi
if ! "$PY" -c "import scikit_build_core" >/dev/null 2>&1; then
  echo "FAIL: $PY lacks scikit-build-core, the build backend of pyproject.toml" \
       "(scripts/install-torch.sh installs it)"
  exit 1
fi

mkdir -p "$WORK"
WORK=$(cd "$WORK" && pwd -P)
VENV=$WORK/venv
RUN=$WORK/run
rm -rf "$VENV" "$RUN"
# The venv's python sees the system's site-packages (torch, pip, scikit-build-core) after its own.
"$PY" -m venv --system-site-packages --without-pip "$VENV"

start=$(date +%s)
# The build runs at the lowest priority, so the tests CTest runs beside this one keep the CPU.
env -u PYTHONPATH -u LD_LIBRARY_PATH -u MIXCCL_PLUGIN_PATH \
  CMAKE_BUILD_PARALLEL_LEVEL="$(nproc)" \
  nice -n 19 "$VENV/bin/python" -m pip install --no-build-isolation --no-deps \
    --no-cache-dir --disable-pip-version-check --root-user-action=ignore \
    --config-settings=build-dir="$WORK/pip-build" "$SRC"
echo "pip install: $(( $(date +%s) - start )) s"

PACKAGE=$("$VENV/bin/python" -c "import sysconfig; print(sysconfig.get_path('platlib'))")/mixccl
echo "installed package: $PACKAGE"
ls -l "$PACKAGE" "$PACKAGE/lib"

mkdir -p "$RUN"
cp "$SRC/tests/torch/pip_allreduce.py" "$RUN/"
cd "$RUN"
# A clean environment: the command search path and HOME only.
env -i PATH=/usr/bin:/bin HOME="$HOME" TORCH_CPP_LOG_LEVEL=ERROR \
  "$VENV/bin/python" -c "import mixccl.torch, sys; print('import mixccl.torch:', mixccl.torch.__file__)"
env -i PATH=/usr/bin:/bin HOME="$HOME" TORCH_CPP_LOG_LEVEL=ERROR \
  "$VENV/bin/python" pip_allreduce.py "$PACKAGE"
