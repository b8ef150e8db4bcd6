#!/usr/bin/env bash
# CTest wheel_broken_install: in a venv of its own with the wheel installed, broken twice:
# the package records another torch than the installed one (mixccl/_build_info.py), then the
# extension mixccl/_torch_backend*.so is removed. Each time `import torch` must still work and
# print exactly one warning, the autoload hook's, naming the problem; with
# TORCH_DEVICE_BACKEND_AUTOLOAD=0 it prints none (the hook is not run).
# usage: broken_install_test.sh PYTHON WORK_DIR (build_and_install.sh's: its dist/*.whl)
set -euo pipefail
PY=$1
WORK=$(cd "$2" && pwd -P)
VENV=$(mktemp -d)
trap 'rm -rf "$VENV"' EXIT
"$PY" -m venv --system-site-packages --without-pip "$VENV"
"$VENV/bin/python" -m pip install --no-deps --no-index --disable-pip-version-check \
  --root-user-action=ignore -q "$WORK"/dist/mixccl-*.whl
PACKAGE=$("$VENV/bin/python" -c "import sysconfig; print(sysconfig.get_path('platlib'))")/mixccl
TORCH=$("$PY" -c "import torch; print(torch.__version__)")

probe="import torch, torch.distributed as d; print('torch works:', torch.ones(2).sum().item()); print('mixccl registered:', 'mixccl' in d.Backend.backend_list)"
run() { env -i PATH=/usr/bin:/bin HOME="$HOME" "$@" "$VENV/bin/python" -c "$probe" 2>"$VENV/err"; }
# import torch works, prints that mixccl is not registered, and exactly one warning: $1.
expect_one_warning() {
  local out warnings
  out=$(run) || { cat "$VENV/err"; echo "FAIL: import torch failed ($2)"; exit 1; }
  echo "$2:"; echo "$out"; cat "$VENV/err"
  [ "$out" = $'torch works: 2.0\nmixccl registered: False' ] || { echo "FAIL: unexpected output"; exit 1; }
  warnings=$(grep -c 'Warning' "$VENV/err" || true)
  if [ "$warnings" -ne 1 ] || ! grep -qF "$1" "$VENV/err"; then
    echo "FAIL: expected exactly one warning containing: $1"
    exit 1
  fi
}
prefix='RuntimeWarning: mixccl: the torch.distributed backend "mixccl" is not available: '
sed -i 's/^TORCH_VERSION = .*/TORCH_VERSION = "1.0.0"/' "$PACKAGE/_build_info.py"
expect_one_warning "${prefix}mixccl's torch backend was built for torch 1.0.0, and this is torch $TORCH: reinstall mixccl built against this torch (docs/install.md)" \
  "built for torch 1.0.0"
sed -i "s/^TORCH_VERSION = .*/TORCH_VERSION = \"$TORCH\"/" "$PACKAGE/_build_info.py"
rm -v "$PACKAGE"/_torch_backend*.so
expect_one_warning "${prefix}No module named 'mixccl._torch_backend'" "extension removed"
out=$(run TORCH_DEVICE_BACKEND_AUTOLOAD=0) || { cat "$VENV/err"; exit 1; }
if [ -s "$VENV/err" ]; then
  cat "$VENV/err"; echo "FAIL: TORCH_DEVICE_BACKEND_AUTOLOAD=0 still ran the hook"; exit 1
fi
echo "wheel_broken_install: OK (import torch works, one warning; none with autoload off)"
