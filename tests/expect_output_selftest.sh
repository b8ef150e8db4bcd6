#!/usr/bin/env bash
# tests/expect_output.py must fail when either half fails (the pattern printed but the wrong
# exit status; the right status without the pattern), say which, and pass only when both hold.
# Each case asserts the wrapper's exit status and its message.
#   expect_output_selftest.sh PATH/TO/expect_output.py
set -u
wrap=$1
bad=0
# case NAME WANT_RC WANT_LINE WRAPPER_ARGS...: the wrapper exits WANT_RC and prints WANT_LINE
# as one whole line (WANT_LINE "" : no check of the message).
case_() {
  local name=$1 want_rc=$2 want_line=$3
  shift 3
  local out rc
  out=$("$wrap" "$@" 2>&1)
  rc=$?
  if [ "$rc" != "$want_rc" ]; then
    echo "$name: FAILED: the wrapper exited $rc, expected $want_rc; its output:"; echo "$out"; bad=1
  elif [ -n "$want_line" ] && ! grep -qxF -- "$want_line" <<<"$out"; then
    echo "$name: FAILED: no line '$want_line' in the wrapper's output:"; echo "$out"; bad=1
  else
    echo "$name: ok"
  fi
}
case_ pattern_but_exit_1 1 "expect_output: FAILED: exit status 1, expected 0" \
  "all checks passed" -- sh -c 'echo "all checks passed"; exit 1'
case_ exit_0_but_no_pattern 1 "expect_output: FAILED: output does not match /all checks passed/" \
  "all checks passed" -- sh -c 'echo "2 checks failed"'
case_ both_wrong 1 "expect_output: FAILED: exit status 3, expected 0" \
  "all checks passed" -- sh -c 'echo nothing; exit 3'
case_ killed_by_signal 1 "expect_output: FAILED: killed by SIGKILL, expected 0" \
  "x" -- sh -c 'echo x; kill -9 $$'
case_ negative_wrong_status 1 "expect_output: FAILED: exit status 0, expected 4" \
  --exit 4 "init failed" -- sh -c 'echo "init failed"'
case_ both_right 0 "expect_output: passed (exit status 0 and output matching /all checks passed/)" \
  "all checks passed" -- sh -c 'echo "all checks passed"'
case_ negative_both_right 0 "" --exit 4 "init failed" -- sh -c 'echo "init failed" >&2; exit 4'
# CTest's pattern meanings are kept: "." matches a newline, "^" the start, "\n" a newline.
case_ dot_matches_newline 0 "" "first.*second" -- sh -c 'echo first; echo second'
case_ multiline_exact 0 "" $'^ok\n$' -- sh -c 'echo ok'
case_ multiline_exact_extra 1 "" $'^ok\n$' -- sh -c 'echo ok; echo more'
case_ skip_passes_through 77 "expect_output: skipped (exit status 77)" --skip 77 "x" -- sh -c 'exit 77'
case_ no_skip_is_failure 1 "expect_output: FAILED: exit status 77, expected 0" "x" -- sh -c 'echo x; exit 77'
case_ usage_error 2 "" "x" sh -c true
if [ $bad = 0 ]; then echo "expect_output selftest: passed"; exit 0; fi
echo "expect_output selftest: FAILED"; exit 1
