#!/usr/bin/env bash
# A /dev/shm too small for the rings must fail init with an error that names MIXCCL_SHM_DISABLE
# (posix_fallocate reports ENOSPC at init, never SIGBUS later), and setting it must make the
# same job work. Runs the job in a private mount namespace with a 256 KiB tmpfs on /dev/shm;
# skips (77) where unshare/mount is not permitted.
#   small_devshm.sh COLLECTIVE_MATRIX
set -u
matrix=${1:?usage: small_devshm.sh COLLECTIVE_MATRIX}
if ! unshare -m sh -c 'mount -t tmpfs -o size=256k tmpfs /dev/shm' 2>/dev/null; then
  echo "SKIP: cannot mount a private tmpfs on /dev/shm (needs root and unshare -m)"
  exit 77
fi
out=$(unshare -m sh -c 'mount -t tmpfs -o size=256k tmpfs /dev/shm && exec "$0" 2 --quick --coll allreduce --timeout 60' "$matrix" 2>&1)
rc=$?
if [ $rc = 0 ]; then echo "FAIL: the job succeeded on a 256 KiB /dev/shm"; echo "$out" | tail -20; exit 1; fi
if ! echo "$out" | grep -q "too small.*MIXCCL_SHM_DISABLE"; then
  echo "FAIL: no error naming MIXCCL_SHM_DISABLE"; echo "$out" | tail -30; exit 1
fi
echo "$out" | grep -m1 "too small"
left=$(unshare -m sh -c 'mount -t tmpfs -o size=256k tmpfs /dev/shm && MIXCCL_SHM_DISABLE=1 "$0" 2 --quick --coll allreduce --timeout 60 >/dev/null 2>&1 && ls /dev/shm | wc -l' "$matrix")
if [ "$left" != "0" ]; then echo "FAIL: MIXCCL_SHM_DISABLE=1 did not make the job pass ($left)"; exit 1; fi
echo "ok: init failed naming MIXCCL_SHM_DISABLE; with it set the job passed"
