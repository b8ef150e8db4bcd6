#!/usr/bin/env bash
# The sanitizer and fuzzing stage of CI (docs/reliability.md):
#   1. AddressSanitizer + UndefinedBehaviorSanitizer build (build-asan/, clang when available):
#      the multi-rank suite (collective matrix --quick for several rank counts, API behaviour, Iprobe,
#      fault injection, strangers, mismatch, non-blocking), the proxy/transport tests, the unit
#      tests and the fuzz regression corpus.
#   2. Each libFuzzer target for FUZZ_SECONDS (default 25) from its corpus, in a scratch copy;
#      a crash is copied into tests/fuzz/corpus/<target>/ as a regression input and fails.
#   3. ThreadSanitizer build (build-tsan/): the proxy/transport tests (threads only, including
#      several communicators of one process) and the transport fuzz corpus.
# The libfabric transport (MIXCCL_NET=ofi, where the build has it) runs in stages 1 and 3
# through the proxy/transport tests (kTransports: ofi_tcp, ofi_shm; OfiStranger) and in stage 1
# through CTest's ofi quick matrices; its forked fault tests do not (docs/reliability.md). TSan does not
#      support fork after threads, so the forked multi-rank tests run in stage 1 only.
# Options: --fuzz-seconds N (0 skips fuzzing), --no-tsan, --no-asan. Exits non-zero on any
# finding. Takes about 6-8 minutes on 2 cores, most of it compiling.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD

FUZZ_SECONDS=${FUZZ_SECONDS:-25}
RUN_ASAN=1
RUN_TSAN=1
while (($#)); do
  case "$1" in
    --fuzz-seconds) FUZZ_SECONDS=$2; shift 2 ;;
    --no-tsan) RUN_TSAN=0; shift ;;
    --no-asan) RUN_ASAN=0; FUZZ_SECONDS=0; shift ;;
    *) echo "usage: $0 [--fuzz-seconds N] [--no-tsan] [--no-asan]" >&2; exit 2 ;;
  esac
done

JOBS=$(nproc)
# The UCX transport stays out of both sanitizer builds (-DMIXCCL_WITH_UCX=OFF, which also keeps
# the build without UCX compiling; docs/reliability.md): libucp is not instrumented, the request
# pools it keeps until its worker is destroyed read as leaks to LeakSanitizer, and its own
# threads are invisible to ThreadSanitizer. The normal build runs every ucx test. The torch
# backend stays out too (-DMIXCCL_WITH_TORCH=OFF): torch is not instrumented either.
COMMON=(-DCMAKE_BUILD_TYPE=RelWithDebInfo -DMIXCCL_BUILD_PERF=OFF -DMIXCCL_BUILD_TRAIN=OFF
        -DMIXCCL_BUILD_TOOLS=OFF -DMIXCCL_WITH_UCX=OFF -DMIXCCL_WITH_TORCH=OFF)
if command -v clang++-14 >/dev/null; then
  COMPILER=(-DCMAKE_C_COMPILER=clang-14 -DCMAKE_CXX_COMPILER=clang++-14)
  HAVE_CLANG=1
elif command -v clang++ >/dev/null; then
  COMPILER=(-DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++)
  HAVE_CLANG=1
else
  COMPILER=()
  HAVE_CLANG=0
  echo "sanitizers: no clang found; building with the default compiler and without fuzzers"
fi

# Findings stop the run and print a stack; leaks are findings too (forked ranks end with
# _exit, which skips the leak check, so it covers the test processes themselves).
export ASAN_OPTIONS=abort_on_error=1:detect_leaks=1:strict_string_checks=1:detect_stack_use_after_return=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
export TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1
export MIXCCL_DEBUG=${MIXCCL_DEBUG:-NONE}  # the fault tests provoke many expected warnings
# hwloc's PCI component (libpciaccess) leaks a little at exit from a module it has already
# unloaded; LeakSanitizer cannot name it, so it is left out here (every init discovers the
# topology). The normal build keeps it.
export HWLOC_COMPONENTS=-pci

# Everything built below except the full-size matrices (their --quick runs follow) and the
# install/demo tests (not built here).
# The topology tests run in the normal build only: hwloc's dlopen'ed plugins leave allocations
# at exit that LeakSanitizer reports from an unloaded (unsymbolizable) module, not our code.
# The testbed tests need binaries this build does not make; they too run in the normal build.
# The NCCL drop-in's tests (nccl_*) need the launcher and the shim, which this build does not
# make (it is a client of the public API, which the tests below cover); the forked OfiFault
# tests repeat paths the proxy tests run here (docs/reliability.md).
# The adaptor and heterogeneous tests need plugins and MPI programs this build does not make;
# the cross-domain path runs below as quick matrices instead of the full-size ones.
# The forked StallBlame tests (fault_stall_tests) are not built here either: they time 4 ranks
# against a 1 s timeout on every transport, and their proxy paths run here in ProxyStall.*.
# Nor the teardown tests (teardown_tests: dozens of 8-rank jobs, whose goodbye paths the proxy
# and fault tests here take too). The mismatch tests on the wire run over socket and shm here
# (their stamp checks and notices); the ucx and ofi variants, like the UCX and libfabric fault
# tests, run in the normal build. The GPU check's tests check a packaging script (the ldd of
# an ASan build names the sanitizer's runtime), so they too run in the normal build only.
# The stand-in GPU tests (standin_*) need the stand-in libraries and the nccl adaptor, and the
# first-job example installs the whole tree: neither is built here, both run in the normal build.
# The shrink soak (fault_shrink_soak_20s) repeats the shrink and grow paths that
# fault_shrink_tests take here; it runs in the normal build.
ASAN_EXCLUDE='^fault_shrink_soak|^standin_|^docs_first_job_example$|^matrix_[0-9]ranks_[a-z]+$|^matrix_1rank$|^matrix_domains_|install_consumer|main_job|^Topology|^testbed_|mixccl_topo|^adaptor_|^hetero_|^Inspect.AdaptorsFormDomains$|^ofi_fault_tests|^OfiFault\.|^fault_stall_tests|^StallBlame\.|^nccl_|^teardown_tests|^Teardown/|^WireMismatch\..*\.(ucx|ofi)$|^gpu_check_'

if ((RUN_ASAN)); then
  echo "== sanitizers: AddressSanitizer + UndefinedBehaviorSanitizer build"
  fuzz=OFF
  ((HAVE_CLANG)) && ((FUZZ_SECONDS > 0)) && fuzz=ON
  cmake -S . -B build-asan "${COMMON[@]}" "${COMPILER[@]}" -DMIXCCL_SANITIZE=address,undefined \
        -DMIXCCL_BUILD_FUZZERS=$fuzz >/dev/null
  targets=(mixccl collective_matrix api_behaviour_tests inspect_tests mixccl_unit_tests fault_tests
           fault_mismatch_tests fault_wire_mismatch_tests fault_stranger_tests fault_flood_tests
           fault_rendezvous_tests fault_root_exit_while_waiting fault_shrink_tests
           proxy_transport_tests premulsum_tests probe_tests fuzz_replay_bootstrap
           fuzz_replay_transport)
  [ "$fuzz" = ON ] && targets+=(fuzz_bootstrap fuzz_transport)
  cmake --build build-asan -j"$JOBS" --target "${targets[@]}"
  echo "== sanitizers: ASan+UBSan tests"
  # A failure with no sanitizer finding in its output is run once more alone (flaky or not:
  # scripts/ctest-rerun-flaky.sh); a finding fails at once.
  (cd build-asan && ../scripts/ctest-rerun-flaky.sh -j"$JOBS" --output-on-failure --no-label-summary \
     --timeout 300 -E "$ASAN_EXCLUDE")
  for n in 2 4 7; do
    echo "== sanitizers: ASan+UBSan collective_matrix $n --quick"
    timeout 300 build-asan/tests/multirank/collective_matrix "$n" --quick --timeout 280 >/dev/null
  done
  echo "== sanitizers: ASan+UBSan collective_matrix across domains (2+3+1, small pieces) --quick"
  MIXCCL_DOMAIN_SPLIT=0,0,1,1,1,2 MIXCCL_HIER_PIECE_BYTES=65536 \
    timeout 300 build-asan/tests/multirank/collective_matrix 6 --quick --timeout 280 >/dev/null

  if [ "$fuzz" = ON ]; then
    for target in bootstrap transport; do
      echo "== fuzzing: fuzz_$target for $FUZZ_SECONDS s"
      work=$(mktemp -d)
      cp -r "tests/fuzz/corpus/$target" "$work/corpus"
      mkdir "$work/artifacts"
      status=0
      (cd "$work" && timeout $((FUZZ_SECONDS + 120)) "$ROOT/build-asan/tests/fuzz/fuzz_$target" \
          -max_total_time="$FUZZ_SECONDS" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
          -artifact_prefix="$work/artifacts/" corpus >"$work/log" 2>&1) || status=$?
      grep -E "^stat::(number_of_executed_units|new_units_added)|cov:" "$work/log" | tail -3 || true
      found=$(ls "$work/artifacts" 2>/dev/null | wc -l)
      if ((status != 0 || found > 0)); then
        tail -60 "$work/log"
        for f in "$work/artifacts"/*; do
          [ -e "$f" ] || continue
          dest="tests/fuzz/corpus/$target/$(basename "$f")"
          cp "$f" "$dest"
          echo "fuzzing: fuzz_$target found $(basename "$f"); kept as regression input $dest"
        done
        rm -rf "$work"
        exit 1
      fi
      rm -rf "$work"
    done
  fi
fi

if ((RUN_TSAN)); then
  echo "== sanitizers: ThreadSanitizer build"
  cmake -S . -B build-tsan "${COMMON[@]}" "${COMPILER[@]}" -DMIXCCL_SANITIZE=thread \
        -DMIXCCL_BUILD_FUZZERS=OFF >/dev/null
  # Only targets on the static library (see cmake/Sanitizers.cmake).
  cmake --build build-tsan -j"$JOBS" --target proxy_transport_tests fuzz_replay_transport
  echo "== sanitizers: TSan tests"
  build-tsan/tests/fault/proxy_transport_tests --gtest_brief=1
  build-tsan/tests/fuzz/fuzz_replay_transport tests/fuzz/corpus/transport
fi
echo "== sanitizers: clean"
