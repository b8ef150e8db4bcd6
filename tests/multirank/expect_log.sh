#!/usr/bin/env bash
# Runs a command with MIXCCL_DEBUG=INFO and checks its log: it must exit 0 (or, with --fail,
# non-zero), and for each "REGEX=COUNT" print exactly COUNT matching lines (COUNT "+": at least
# one). Only for what the log alone reports (socket buffer sizes, congestion control, a
# shared-memory ring's size and cross-memory attach); choices (transport, algorithm, domains)
# are asserted through mixcclCommInspect instead (expect_choice.h).
#   expect_log.sh [--fail] REGEX=COUNT... -- COMMAND [ARGS...]
set -u
want_fail=0
checks=()
while [ $# -gt 0 ] && [ "$1" != "--" ]; do
  if [ "$1" = "--fail" ]; then want_fail=1; else checks+=("$1"); fi
  shift
done
[ "${1:-}" = "--" ] || { echo "usage: expect_log.sh [--fail] REGEX=COUNT... -- COMMAND..." >&2; exit 2; }
shift
log=$(mktemp)
trap 'rm -f "$log"' EXIT
MIXCCL_DEBUG=INFO "$@" >"$log" 2>&1
rc=$?
# A skipped run (e.g. the testbed without root) stays a skip.
if [ $rc = 77 ]; then tail -5 "$log"; exit 77; fi
bad=0
if [ $want_fail = 0 ] && [ $rc != 0 ]; then echo "expect_log: command failed ($rc)"; bad=1; fi
if [ $want_fail = 1 ] && [ $rc = 0 ]; then echo "expect_log: command succeeded, expected a failure"; bad=1; fi
for c in "${checks[@]}"; do
  re=${c%=*}
  want=${c##*=}
  got=$(grep -cE -- "$re" "$log")
  if { [ "$want" = "+" ] && [ "$got" -lt 1 ]; } || { [ "$want" != "+" ] && [ "$got" != "$want" ]; }; then
    echo "expect_log: /$re/ matched $got lines, expected $want"
    bad=1
  else
    echo "expect_log: /$re/ matched $got lines (ok)"
  fi
done
if [ $bad != 0 ]; then echo "---- log (last 60 lines)"; tail -60 "$log"; fi
exit $bad
