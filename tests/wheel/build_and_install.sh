#!/usr/bin/env bash
# CTest wheel_build (the fixture of every wheel_* test, docs/install.md): builds the wheel once
# with `pip wheel --no-build-isolation` against the installed torch, then installs it into a
# fresh venv that sees the installed torch (--system-site-packages: nothing is downloaded).
# The other wheel tests use WORK/dist/*.whl and WORK/venv. Exit 77 (skipped) without torch.
#
# usage: build_and_install.sh PYTHON SOURCE_DIR WORK_DIR BUILD_DIR [GENERATOR LAUNCHER CC CXX]
# The CMake build folder BUILD_DIR is kept, so a later run rebuilds only what changed. Given the
# main build's CMake generator, compiler launcher (ccache, as scripts/setup.sh configures it)
# and compilers (else scikit-build-core takes python's, which may be named differently),
# a fresh one compiles almost nothing: the compile commands are the main build's, so the cache
# has them, when BUILD_DIR is as deep as the main build folder (ccache's CCACHE_BASEDIR makes
# the paths relative to each object's folder): CMake passes BUILD-wheel beside BUILD.
set -euo pipefail
PY=$1 SRC=$2 WORK=$3 BUILD=$4 GENERATOR=${5:-} LAUNCHER=${6:-} MAIN_CC=${7:-} MAIN_CXX=${8:-}

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
rm -rf "$WORK/dist" "$WORK/venv"
launcher=()
if [ -n "$LAUNCHER" ]; then
  launcher=(--config-settings=cmake.define.CMAKE_C_COMPILER_LAUNCHER="$LAUNCHER"
            --config-settings=cmake.define.CMAKE_CXX_COMPILER_LAUNCHER="$LAUNCHER")
fi
# scikit-build-core takes the generator from the environment (default: Ninja where it is).
[ -n "$GENERATOR" ] && export CMAKE_GENERATOR="$GENERATOR"
[ -n "$MAIN_CC" ] && export CC="$MAIN_CC"
[ -n "$MAIN_CXX" ] && export CXX="$MAIN_CXX"

start=$(date +%s)
# The lowest priority, so the tests CTest runs beside this one keep the CPU.
env -u PYTHONPATH -u LD_LIBRARY_PATH -u MIXCCL_PLUGIN_PATH \
  CMAKE_BUILD_PARALLEL_LEVEL="$(nproc)" \
  nice -n 19 "$PY" -m pip wheel --no-build-isolation --no-deps --no-cache-dir \
    --disable-pip-version-check -w "$WORK/dist" \
    --config-settings=build-dir="$BUILD" "${launcher[@]}" "$SRC" >"$WORK/pip-wheel.log" 2>&1 \
  || { tail -40 "$WORK/pip-wheel.log"; echo "FAIL: pip wheel (log: $WORK/pip-wheel.log)"; exit 1; }
built=$(date +%s)
wheels=("$WORK"/dist/mixccl-*.whl)
[ -f "${wheels[0]}" ] || { echo "FAIL: pip wheel made no mixccl-*.whl in $WORK/dist"; exit 1; }
echo "wheel: $(basename "${wheels[0]}") $(( $(stat -c %s "${wheels[0]}") / 1048576 )) MiB," \
     "built in $(( built - start )) s"

# pip comes from the system site-packages, as torch does.
"$PY" -m venv --system-site-packages --without-pip "$WORK/venv"
"$WORK/venv/bin/python" -m pip install --no-deps --no-index --disable-pip-version-check \
  --root-user-action=ignore -q "${wheels[0]}"
echo "installed into $WORK/venv in $(( $(date +%s) - built )) s"
echo "wheel_build: OK"
