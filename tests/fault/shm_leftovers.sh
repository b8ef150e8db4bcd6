#!/usr/bin/env bash
# After the fault tests (ranks killed with SIGKILL, aborted, timed out): no mixccl shared-memory
# segment may stay in /dev/shm. A segment exists only while a communicator initialises, so a
# name is a leak only if it is still there after a few seconds (tests of other jobs may be
# initialising right now). --selftest: plants a leak and expects this check to catch it.
set -u
dir=${MIXCCL_SHM_DIR:-/dev/shm}
if [ "${1:-}" = "--selftest" ]; then
  planted="$dir/mixccl-selftest-$$-0-1"
  : >"$planted"
  "$0" >/dev/null; rc=$?
  rm -f "$planted"
  if [ $rc = 0 ]; then echo "FAIL: the check missed a planted segment"; exit 1; fi
  echo "ok: the check catches a leftover segment"; exit 0
fi
list() { (cd "$dir" && ls -1 2>/dev/null | grep '^mixccl-' | sort); }
seen=$(list)
for _ in 1 2 3; do
  [ -z "$seen" ] && { echo "ok: no mixccl-* segments in $dir"; exit 0; }
  sleep 1
  seen=$(comm -12 <(echo "$seen") <(list))
done
if [ -n "$seen" ]; then echo "FAIL: segments left in $dir:"; echo "$seen"; exit 1; fi
echo "ok: no mixccl-* segments in $dir"
