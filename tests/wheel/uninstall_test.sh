#!/usr/bin/env bash
# CTest wheel_uninstall: `pip uninstall mixccl` leaves the venv exactly as it was before the
# wheel was installed: no file, folder or console command of mixccl left behind. The commands
# are run once before, so that caches they might write (__pycache__) would be caught too.
# usage: uninstall_test.sh PYTHON WORK_DIR (build_and_install.sh's: its dist/*.whl)
set -euo pipefail
PY=$1
WORK=$(cd "$2" && pwd -P)
VENV=$(mktemp -d)
trap 'rm -rf "$VENV"' EXIT
"$PY" -m venv --system-site-packages --without-pip "$VENV"
snapshot() { (cd "$VENV" && find . -mindepth 1 | LC_ALL=C sort); }
snapshot >"$VENV.before"
trap 'rm -rf "$VENV" "$VENV.before"' EXIT
pip=("$VENV/bin/python" -m pip --disable-pip-version-check)
"${pip[@]}" install --no-deps --no-index --root-user-action=ignore -q "$WORK"/dist/mixccl-*.whl
echo "installed: $(snapshot | comm -13 "$VENV.before" - | grep -c .) new files and folders"
# Use it, as a user would, before removing it.
env -i PATH=/usr/bin:/bin HOME="$HOME" "$VENV/bin/mixccl-info" >/dev/null
env -i PATH=/usr/bin:/bin HOME="$HOME" "$VENV/bin/python" -c "import torch, mixccl.torch" 2>/dev/null
"${pip[@]}" uninstall -y -q --root-user-action=ignore mixccl
left=$(snapshot | comm -13 "$VENV.before" -)
if [ -n "$left" ]; then
  echo "FAIL: pip uninstall left behind:"; echo "$left"
  exit 1
fi
echo "wheel_uninstall: OK (nothing left behind)"
