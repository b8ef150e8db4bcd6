#!/usr/bin/env bash
# After the fault tests (ranks killed with SIGKILL, aborted, timed out): no mixccl shared-memory
# segment may stay in /dev/shm. A name is a leak only if no live process maps it or holds it
# open, and it is still there after a few seconds: other tests run beside this check, and their
# communicators hold segments while they initialise (mixccl's own, unlinked once mapped) or for
# their whole life (libfabric's shm provider names its endpoint mixccl-ofi-*).
# --selftest: plants a leak and expects this check to catch it, then plants a name a live
# process holds open and expects this check to pass over it.
set -u
dir=${MIXCCL_SHM_DIR:-/dev/shm}
if [ "${1:-}" = "--selftest" ]; then
  # The plants go into a directory of their own: planted in /dev/shm, the real check, which
  # CTest may run at the same moment, would take them for leaks.
  own=$(mktemp -d) || exit 1
  trap 'rm -rf "$own"' EXIT
  planted="$own/mixccl-selftest-$$-0-1"
  : >"$planted"
  out=$(MIXCCL_SHM_DIR="$own" "$0"); rc=$?
  case "$out" in *"mixccl-selftest-$$-0-1"*) ;; *) rc=0 ;; esac
  if [ $rc = 0 ]; then echo "FAIL: the check missed a planted segment: $out"; exit 1; fi
  sleep 30 3<"$planted" & holder=$!
  out=$(MIXCCL_SHM_DIR="$own" "$0"); rc=$?
  kill "$holder"
  if [ $rc != 0 ]; then echo "FAIL: the check called a segment a live process holds a leak: $out"; exit 1; fi
  echo "ok: the check catches a leftover segment and passes over one in use"; exit 0
fi
list() { (cd "$dir" && ls -1 2>/dev/null | grep '^mixccl-' | sort); }
# Names some live process maps (/proc/PID/maps) or holds open (/proc/PID/fd).
in_use() {
  { cat /proc/[0-9]*/maps 2>/dev/null | grep -o "$dir/mixccl-[^ ]*"
    for f in /proc/[0-9]*/fd/*; do readlink "$f" 2>/dev/null; done | grep "^$dir/mixccl-"
  } | sed -e "s|^$dir/||" -e 's/ (deleted)$//' | sort -u
}
unused() { comm -23 <(list) <(in_use); }
seen=$(unused)
for _ in 1 2 3; do
  [ -z "$seen" ] && { echo "ok: no leftover mixccl-* segments in $dir"; exit 0; }
  sleep 1
  seen=$(comm -12 <(echo "$seen") <(unused))
done
if [ -n "$seen" ]; then
  echo "FAIL: segments left in $dir (no live process uses them; size, last change):"
  for n in $seen; do stat -c '  %n %s bytes %y' "$dir/$n" 2>/dev/null || echo "  $n (gone meanwhile)"; done
  exit 1
fi
echo "ok: no leftover mixccl-* segments in $dir"
