#!/usr/bin/env bash
# CTest wheel_commands_help: every console command of the wheel answers --help with exit 0 and
# its usage line (and a wrong collective or option is refused with exit 2 and its message), run
# from the venv's bin folder in a clean environment (the programs are found
# inside the package by mixccl/_commands.py, libmixccl by their run path).
# usage: commands_help_test.sh WORK_DIR (build_and_install.sh's)
set -euo pipefail
BIN=$(cd "$1" && pwd -P)/venv/bin
declare -A usage=(
  [mixcclrun]='^usage: mixcclrun '
  [mixccl-topo]='^usage: mixccl-topo '
  [mixccl-plan]='^usage: mixccl-plan '
  [mixccl-train]='^usage: mixccl-train '
  [mixccl-perf]='^usage: mixccl-perf COLLECTIVE '
  [mixccl-info]='^usage: mixccl-info '
)
failed=0
for cmd in mixcclrun mixccl-topo mixccl-plan mixccl-train mixccl-perf mixccl-info; do
  set +e
  out=$(env -i PATH=/usr/bin:/bin HOME="$HOME" timeout 30 "$BIN/$cmd" --help 2>&1)
  rc=$?
  set -e
  if [ "$rc" -eq 0 ] && grep -qE "${usage[$cmd]}" <<<"$out"; then
    echo "$cmd --help: exit 0, $(grep -E "${usage[$cmd]}" <<<"$out" | head -1)"
  else
    echo "FAIL: $cmd --help exited $rc, expected 0 and a line matching '${usage[$cmd]}':"
    echo "$out" | head -5
    failed=1
  fi
done
# A collective of mixccl-perf runs its program: all_reduce_perf's own usage.
set +e
out=$(env -i PATH=/usr/bin:/bin HOME="$HOME" timeout 30 "$BIN/mixccl-perf" all_reduce --help 2>&1)
rc=$?
set -e
if [ "$rc" -eq 0 ] && grep -q 'all_reduce_perf' <<<"$out"; then
  echo "mixccl-perf all_reduce --help: exit 0, all_reduce_perf's usage"
else
  echo "FAIL: mixccl-perf all_reduce --help exited $rc:"; echo "$out" | head -5; failed=1
fi
# Mistakes are refused with exit 2 and a message naming them.
expect_refusal() {  # EXPECTED_FIRST_LINE COMMAND ARGS...
  local expected=$1 out rc
  shift
  set +e
  out=$(env -i PATH=/usr/bin:/bin HOME="$HOME" timeout 30 "$BIN/$1" "${@:2}" 2>&1)
  rc=$?
  set -e
  if [ "$rc" -eq 2 ] && [ "$(head -1 <<<"$out")" = "$expected" ]; then
    echo "$*: exit 2, $expected"
  else
    echo "FAIL: $* exited $rc, expected 2 and first line '$expected':"; echo "$out" | head -3
    failed=1
  fi
}
expect_refusal "mixccl-perf: unknown collective 'nosuch'" mixccl-perf nosuch
expect_refusal "mixccl-info: unknown option '--bogus'" mixccl-info --bogus
[ "$failed" -eq 0 ] && echo "wheel_commands_help: OK"
exit "$failed"
