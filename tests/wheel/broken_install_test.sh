#!/usr/bin/env bash
# CTest wheel_broken_install: in a venv of its own with the wheel installed, the extension
# mixccl/_torch_backend*.so is removed; `import torch` must still work and print exactly one
# warning, the autoload hook's, naming the problem; with TORCH_DEVICE_BACKEND_AUTOLOAD=0 it
# prints none (the hook is not run).
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
rm -v "$PACKAGE"/_torch_backend*.so

probe="import torch, torch.distributed as d; print('torch works:', torch.ones(2).sum().item()); print('mixccl registered:', 'mixccl' in d.Backend.backend_list)"
run() { env -i PATH=/usr/bin:/bin HOME="$HOME" "$@" "$VENV/bin/python" -c "$probe" 2>"$VENV/err"; }
out=$(run) || { cat "$VENV/err"; echo "FAIL: import torch failed with the extension removed"; exit 1; }
echo "$out"
echo "stderr:"; cat "$VENV/err"
[ "$out" = $'torch works: 2.0\nmixccl registered: False' ] || { echo "FAIL: unexpected output"; exit 1; }
warnings=$(grep -c 'Warning' "$VENV/err" || true)
expected='RuntimeWarning: mixccl: the torch.distributed backend "mixccl" is not available: No module named '"'"'mixccl._torch_backend'"'"
if [ "$warnings" -ne 1 ] || ! grep -qF "$expected" "$VENV/err"; then
  echo "FAIL: expected exactly one warning containing: $expected"
  exit 1
fi
out=$(run TORCH_DEVICE_BACKEND_AUTOLOAD=0) || { cat "$VENV/err"; exit 1; }
if [ -s "$VENV/err" ]; then
  cat "$VENV/err"; echo "FAIL: TORCH_DEVICE_BACKEND_AUTOLOAD=0 still ran the hook"; exit 1
fi
echo "wheel_broken_install: OK (import torch works, one warning; none with autoload off)"
