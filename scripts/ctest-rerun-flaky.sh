#!/usr/bin/env bash
# Runs ctest with the given arguments in the current build tree; tests that fail are run once
# more, alone (ctest --rerun-failed, -j1), the way PyTorch's CI reruns a failed test before it
# calls it a failure. A test that then passes is flaky, not a pass: the last lines name it
# ("ctest: flaky: ...") so that it is fixed. A test that fails again fails the run, and so does
# any failure whose output shows a sanitizer finding (AddressSanitizer, LeakSanitizer, UBSan's
# "runtime error", ThreadSanitizer): a finding is a bug even if the rerun misses it.
# MIXCCL_CTEST_RERUN=0 turns the rerun off. The whole output goes to ctest-output.log too.
#   scripts/ctest-rerun-flaky.sh CTEST_ARGS...
set -uo pipefail
log=ctest-output.log
failed=Testing/Temporary/LastTestsFailed.log
rm -f "$failed"  # ctest writes it only when a test fails
ctest "$@" 2>&1 | tee "$log"
rc=${PIPESTATUS[0]}
if ((rc == 0)) || [ "${MIXCCL_CTEST_RERUN:-1}" = 0 ] || [ ! -s "$failed" ]; then
  grep -E '^[0-9]+% tests passed' "$log" | tail -1
  exit "$rc"
fi
if grep -qE 'ERROR: (Address|Leak|Thread)Sanitizer|WARNING: ThreadSanitizer|runtime error:' "$log"; then
  echo "ctest: a sanitizer finding among the failures: no rerun"
  grep -E '^[0-9]+% tests passed' "$log" | tail -1
  exit "$rc"
fi
names=$(cut -d: -f2- "$failed" | tr '\n' ' ')
echo "ctest: rerunning alone what failed: $names"
# The rerun keeps every argument but the parallelism: alone, as the suspect flake was not.
args=()
for a in "$@"; do case "$a" in -j*) ;; *) args+=("$a") ;; esac; done
cp "$failed" "$failed.first"
ctest "${args[@]}" --rerun-failed -j1 2>&1 | tee -a "$log"
rerc=${PIPESTATUS[0]}
if ((rerc == 0)); then
  echo "ctest: flaky: $names(failed in the full run, passed alone)"
  echo "100% tests passed after the rerun of $(wc -l <"$failed.first") flaky test(s)"
  exit 0
fi
grep -E '^[0-9]+% tests passed' "$log" | tail -1
exit "$rerc"
