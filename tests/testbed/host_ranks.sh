#!/usr/bin/env bash
# Starts R ranks of PROGRAM on the testbed host this runs on, as separate processes:
#   host_ranks.sh R PROGRAM [ARGS...]
# Host h of H (MIXCCL_TESTBED_HOST / MIXCCL_TESTBED_NHOSTS, set by testbed.sh) runs global ranks
# h*R .. h*R+R-1 of H*R, each with MIXCCL_RANK, MIXCCL_NRANKS, MIXCCL_LOCAL_RANK and
# MIXCCL_LOCAL_SIZE set (what mixcclrun sets). Waits for all of them; exits non-zero if any failed.
set -u
R=${1:?usage: host_ranks.sh R PROGRAM [ARGS...]}
shift
[ $# -gt 0 ] || { echo "usage: host_ranks.sh R PROGRAM [ARGS...]" >&2; exit 2; }
H=${MIXCCL_TESTBED_HOST:?not inside a testbed host (MIXCCL_TESTBED_HOST unset)}
N=${MIXCCL_TESTBED_NHOSTS:?MIXCCL_TESTBED_NHOSTS unset}

pids=()
for ((l = 0; l < R; l++)); do
  rank=$((H * R + l))
  (
    MIXCCL_RANK=$rank MIXCCL_NRANKS=$((N * R)) MIXCCL_LOCAL_RANK=$l MIXCCL_LOCAL_SIZE=$R \
      "$@" 2>&1 | sed -u "s/^/[rank $rank] /"
    exit "${PIPESTATUS[0]}"
  ) &
  pids+=($!)
done
trap 'kill -TERM "${pids[@]}" 2>/dev/null' TERM INT
failed=0
for ((l = 0; l < R; l++)); do
  wait "${pids[$l]}"
  rc=$?
  if [ $rc != 0 ]; then
    echo "host_ranks: rank $((H * R + l)) exited with $rc" >&2
    failed=1
  fi
done
exit $failed
