#!/usr/bin/env bash
# Self-test of scripts/ctest-rerun-flaky.sh on a hand-written CTest tree: a test that fails once
# then passes is rerun, named as flaky and the run passes; a test that always fails fails the
# run after its rerun; a failure whose output shows a sanitizer finding fails at once, without
# a rerun; MIXCCL_CTEST_RERUN=0 turns the rerun off.
#   ctest_rerun_selftest.sh PATH/TO/ctest-rerun-flaky.sh
set -u
script=$1
work=$(mktemp -d) || exit 1
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

# Writes a CTest tree in $work/tree whose tests are the given "name;shell command" pairs.
tree() {
  rm -rf "$work/tree" && mkdir -p "$work/tree" || exit 1
  for t in "$@"; do
    echo "add_test(${t%%;*} sh -c \"${t#*;}\")" >>"$work/tree/CTestTestfile.cmake"
  done
}
run() { (cd "$work/tree" && "$script" -j2 --output-on-failure) >"$work/out" 2>&1; echo $?; }

once="test -e $work/seen || { touch $work/seen; exit 1; }"
tree "steady;true" "flaky;$once"
[ "$(run)" = 0 ] || fail "a test that passes on its rerun failed the run: $(cat "$work/out")"
grep -q "^ctest: flaky: flaky (failed in the full run, passed alone)$" "$work/out" ||
  fail "the flaky test was not named: $(cat "$work/out")"
[ "$(tail -1 "$work/out")" = "100% tests passed after the rerun of 1 flaky test(s)" ] ||
  fail "last line: $(tail -1 "$work/out")"

rm -f "$work/seen"
tree "steady;true" "broken;exit 3"
[ "$(run)" = 8 ] || fail "a test that fails twice did not fail the run (ctest's 8): $(cat "$work/out")"
[ "$(grep -c 'Test #2: broken \.*\*\*\*Failed' "$work/out")" = 2 ] ||
  fail "broken did not run twice: $(cat "$work/out")"

tree "finding;echo 'ERROR: AddressSanitizer: heap-use-after-free'; $once"
[ "$(run)" = 8 ] || fail "a sanitizer finding did not fail the run: $(cat "$work/out")"
grep -q "^ctest: a sanitizer finding among the failures: no rerun$" "$work/out" ||
  fail "the finding was rerun: $(cat "$work/out")"

rm -f "$work/seen"
tree "flaky;$once"
[ "$(MIXCCL_CTEST_RERUN=0 run)" = 8 ] || fail "MIXCCL_CTEST_RERUN=0 still reran: $(cat "$work/out")"
grep -q "rerunning" "$work/out" && fail "MIXCCL_CTEST_RERUN=0 printed a rerun: $(cat "$work/out")"
echo "ok: flaky named and passed, twice-failing failed, sanitizer finding not rerun, rerun off"
