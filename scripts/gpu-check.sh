#!/usr/bin/env bash
# The prepared GPU check (docs/gpu.md). Three modes:
#   scripts/gpu-check.sh --prepare [--build DIR] [--no-prebuild]  here (CPU machine, CI): gathers
#       into .gpu-carry/ the Debian libraries and headers the device machine lacks, checks them
#       against what the build links, builds build-gpu/ (everything the checks run except the
#       torch extension, which must match the device's torch and Python), and prints the exact
#       `run` call; exits non-zero if anything is missing.
#   scripts/gpu-check.sh [--no-gpu]               on the device machine: uses the carried
#       build-gpu/ (or builds it when none came), builds the torch extension, runs the checks,
#       each step bounded by `timeout`, all within 8 minutes; writes $OUT/summary.txt and one
#       log per step. --no-gpu makes every step report SKIP("no GPU").
#   scripts/gpu-check.sh --selftest               here (CI): runs the device mode with --no-gpu
#       and checks its summary, the summary checker against broken summaries, and the budget.
set -uo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
CARRY=${GPU_CHECK_CARRY:-$ROOT/.gpu-carry}
BUILD=$ROOT/build-gpu
BUILD_TORCH=$ROOT/build-gpu-torch  # made on the device: the extension needs its torch and Python
PREBUILT_MARK=prebuilt.txt        # in build-gpu/: "root=<source dir it was built in> commit=<rev>"
# How every build of the check is configured, here (--prepare) and on the device alike.
GPU_CMAKE_FLAGS=(-G Ninja -DCMAKE_BUILD_TYPE=Release -DMIXCCL_BUILD_TRAIN=OFF -DMIXCCL_WITH_OFI=OFF)
# What the steps run from build-gpu/; --prepare builds them here so no device time goes on it.
GPU_TARGETS=(mixccl mixccl-adaptor-nccl adaptor_nccl_tests adaptor_nccl_library_tests nccl_ranks_test all_gather_perf reduce_scatter_perf
             mixccl_nccl nccl_all_reduce_perf all_reduce_perf sendrecv_perf ucx_roof_perf mixcclrun)
GPU_OUTPUTS=(src/libmixccl.so tests/adaptors/adaptor_nccl_tests tests/adaptors/adaptor_nccl_library_tests
             tests/standin/nccl_ranks_test compat/nccl/lib/libnccl.so.2 compat/nccl/nccl_all_reduce_perf
             perf/all_reduce_perf perf/sendrecv_perf tools/mixcclrun)
BUDGET_S=480  # 8 minutes for everything, machine start not included

# Steps in order, with their time bounds in seconds (they must add up to under BUDGET_S).
STEPS=(info:30 build:90 adaptor:40 passthrough:60 copyroof:30 torch:150 ucx:60)

# What the device machine lacks (docs/gpu.md, "The device machine"): the runtime libraries
# libmixccl links beyond the base system (checked against `ldd` by --prepare), and the headers
# and CMake files its build needs. Base libraries are not carried (libc, libstdc++, libgcc,
# libssl3, libudev1): a second copy of those would replace the image's own for torch too.
CARRY_PACKAGES=(libhwloc15 libhwloc-dev libibverbs1 libibverbs-dev libnl-3-200 libnl-route-3-200
                libnl-3-dev libnl-route-3-dev libnuma1 libucx0 libucx-dev libssl-dev libgtest-dev nlohmann-json3-dev)
BASE_PACKAGES=(libc6 libgcc-s1 libstdc++6 libssl3 libudev1)
CARRY_HEADERS=(hwloc.h infiniband/verbs.h ucp/api/ucp.h openssl/ssl.h gtest/gtest.h)
CARRY_LIMIT_MB=40  # of the 64 MiB that travel; the working tree takes the rest

die() { echo "gpu-check: $*" >&2; exit 1; }

# ---------------------------------------------------------------- summary format and checker
# summary.txt:
#   mixccl gpu-check <commit>
#   versions: gpu=<name>; driver=<v>; cuda=<v>; nccl=<v>
#   step <name> <PASS|FAIL|SKIP> <seconds>s <key numbers, or the reason of a SKIP/FAIL>
#   ... one line per step of STEPS, in that order
#   result <PASS|FAIL> pass=<n> fail=<n> skip=<n>
# result is FAIL when any step failed.
check_summary() {
  local file=$1 names=() n s
  for s in "${STEPS[@]}"; do names+=("${s%%:*}"); done
  [ -f "$file" ] || { echo "summary: $file missing"; return 1; }
  mapfile -t lines <"$file"
  local want=$((${#names[@]} + 3))
  [ "${#lines[@]}" -eq "$want" ] || { echo "summary: ${#lines[@]} lines, expected $want"; return 1; }
  [[ ${lines[0]} =~ ^mixccl\ gpu-check\ [0-9a-f]{7,40}(-dirty)?$ ]] ||
    { echo "summary: bad header: ${lines[0]}"; return 1; }
  [[ ${lines[1]} =~ ^versions:\ gpu=[^\;]+\;\ driver=[^\;]+\;\ cuda=[^\;]+\;\ nccl=[^\;]+$ ]] ||
    { echo "summary: bad versions line: ${lines[1]}"; return 1; }
  local pass=0 fail=0 skip=0 i=2
  for n in "${names[@]}"; do
    if [[ ${lines[$i]} =~ ^step\ ([a-z]+)\ (PASS|FAIL|SKIP)\ ([0-9]+)s\ (.+)$ ]]; then
      [ "${BASH_REMATCH[1]}" = "$n" ] ||
        { echo "summary: line $((i + 1)) is step ${BASH_REMATCH[1]}, expected $n"; return 1; }
      case ${BASH_REMATCH[2]} in PASS) ((pass++)) ;; FAIL) ((fail++)) ;; SKIP) ((skip++)) ;; esac
    else
      echo "summary: bad step line $((i + 1)): ${lines[$i]}"
      return 1
    fi
    ((i++))
  done
  local verdict=PASS
  [ "$fail" -eq 0 ] || verdict=FAIL
  [ "${lines[$i]}" = "result $verdict pass=$pass fail=$fail skip=$skip" ] ||
    { echo "summary: bad result line: ${lines[$i]} (expected result $verdict pass=$pass fail=$fail skip=$skip)"; return 1; }
  return 0
}

budget_total() {
  local t=0 s
  for s in "${STEPS[@]}"; do t=$((t + ${s##*:})); done
  echo "$t"
}

# ---------------------------------------------------------------- device mode
NO_GPU=0
RESULTS=()   # "name STATUS seconds text"
VERSIONS="gpu=unknown; driver=unknown; cuda=unknown; nccl=unknown"

# Runs step_<name> under `timeout`, its output in $OUT/<name>.log; the step prints its key
# numbers as its last line "KEY: ..." (PASS) or "SKIP: reason" (exit 77).
run_step() {
  local name=$1 limit=$2 log=$OUT/$name.log start rc text status
  start=$(date +%s)
  if [ "$NO_GPU" = 1 ]; then
    echo "SKIP: no GPU" >"$log"
    RESULTS+=("$name SKIP 0 no GPU")
    return
  fi
  timeout --kill-after=5 "$limit" bash -c "source '$ROOT/scripts/gpu-check.sh' --library; step_$name" \
    >"$log" 2>&1
  rc=$?
  text=$(grep -E '^(KEY|SKIP|FAIL): ' "$log" | tail -1 | sed -E 's/^(KEY|SKIP|FAIL): //')
  case $rc in
    0) status=PASS ;;
    77) status=SKIP ;;
    124|137) status=FAIL; text="timed out after ${limit}s" ;;
    *) status=FAIL; [ -n "$text" ] || text="exit $rc (see $name.log)" ;;
  esac
  [ -n "$text" ] || text="-"
  RESULTS+=("$name $status $(($(date +%s) - start)) $text")
}

# The steps themselves (step_<name> and their helpers).
source "$ROOT/scripts/gpu/steps.sh"

device_main() {
  [ -n "${OUT:-}" ] || die "OUT is not set (the device machine's result folder)"
  mkdir -p "$OUT"
  local commit s name limit r
  # The commit build-gpu was built from (the device's copy of .git may be older than the tree).
  commit=$(sed -n 's/.* commit=\([0-9a-f]*\(-dirty\)\{0,1\}\)$/\1/p' "$BUILD/$PREBUILT_MARK" 2>/dev/null)
  if [ -z "$commit" ]; then
    commit=$(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo 0000000)
    [ -z "$(git -C "$ROOT" status --porcelain --untracked-files=no 2>/dev/null)" ] || commit="$commit-dirty"
  fi
  for s in "${STEPS[@]}"; do
    name=${s%%:*} limit=${s##*:}
    run_step "$name" "$limit"
    if [ "$name" = info ] && [ "$NO_GPU" = 0 ]; then
      VERSIONS=$(sed -n 's/^VERSIONS: //p' "$OUT/info.log" | tail -1)
      [ -n "$VERSIONS" ] || VERSIONS="gpu=unknown; driver=unknown; cuda=unknown; nccl=unknown"
    fi
  done
  local pass=0 fail=0 skip=0
  {
    echo "mixccl gpu-check $commit"
    echo "versions: $VERSIONS"
    for r in "${RESULTS[@]}"; do
      read -r name s secs text <<<"$r"
      echo "step $name $s ${secs}s $text"
      case $s in PASS) ((pass++)) ;; FAIL) ((fail++)) ;; SKIP) ((skip++)) ;; esac
    done
    [ "$fail" -eq 0 ] && echo "result PASS pass=$pass fail=$fail skip=$skip" ||
      echo "result FAIL pass=$pass fail=$fail skip=$skip"
  } >"$OUT/summary.txt"
  cat "$OUT/summary.txt"
  check_summary "$OUT/summary.txt" || return 1
  [ "$fail" -eq 0 ]
}

# ---------------------------------------------------------------- --prepare (CPU machine)
# build-gpu/ built here, as the device would build it (Release, no training core, no libfabric,
# no torch), against this machine's libraries (carried to the device) and the NCCL header of the
# normal build DIR, which is copied into build-gpu/nccl-header for the device's own builds.
prebuild_main() {
  local build=$1 header_dir f
  header_dir=$(sed -n 's/^MIXCCL_NCCL_INCLUDE_DIR:[A-Z]*=//p' "$build/CMakeCache.txt" 2>/dev/null)
  [ -f "$header_dir/nccl.h" ] || { echo "prebuild: no nccl.h in the build's MIXCCL_NCCL_INCLUDE_DIR '$header_dir'"; return 1; }
  cmake -S "$ROOT" -B "$BUILD" "${GPU_CMAKE_FLAGS[@]}" -DMIXCCL_WITH_TORCH=OFF \
    -DMIXCCL_NCCL_INCLUDE_DIR="$header_dir" \
    >"$BUILD.configure.log" 2>&1 || { cat "$BUILD.configure.log"; echo "prebuild: configure failed"; return 1; }
  ninja -C "$BUILD" "${GPU_TARGETS[@]}" >"$BUILD.build.log" 2>&1 ||
    { tail -40 "$BUILD.build.log"; echo "prebuild: build failed"; return 1; }
  rm -f "$BUILD.configure.log" "$BUILD.build.log"
  for f in "${GPU_OUTPUTS[@]}"; do [ -f "$BUILD/$f" ] || { echo "prebuild: $BUILD/$f was not built"; return 1; }; done
  mkdir -p "$BUILD/nccl-header" && cp "$header_dir/nccl.h" "$BUILD/nccl-header/nccl.h" || return 1
  echo "root=$ROOT commit=$(git -C "$ROOT" rev-parse --short HEAD)$([ -z "$(git -C "$ROOT" status --porcelain --untracked-files=no)" ] || echo -dirty)" \
    >"$BUILD/$PREBUILT_MARK"
  echo "gpu-check prepare: built $BUILD ($(du -sm "$BUILD" | cut -f1) MiB)"
}

prepare_main() {
  local build=$ROOT/build debs=${GPU_CHECK_DEBS:-$ROOT/.gpu-carry.debs} missing=() p f prebuild=1
  while [ $# -gt 0 ]; do
    case $1 in
      --build) build=$2; shift 2 ;;
      --no-prebuild) prebuild=0; shift ;;
      *) die "unknown --prepare argument $1" ;;
    esac
  done
  mkdir -p "$CARRY" "$debs"
  local updated=0
  for p in "${CARRY_PACKAGES[@]}"; do
    if ! compgen -G "$debs/${p}_*.deb" >/dev/null; then
      # A machine whose package lists are missing or old finds nothing: update them once.
      if ! (cd "$debs" && apt-get download -q "$p" >/dev/null 2>&1) && ((!updated)); then
        updated=1
        apt-get update -qq >/dev/null 2>&1 || true
        (cd "$debs" && apt-get download -q "$p" >/dev/null 2>&1)
      fi
      compgen -G "$debs/${p}_*.deb" >/dev/null || { missing+=("package $p (apt-get download failed)"); continue; }
    fi
    for f in "$debs/${p}"_*.deb; do dpkg -x "$f" "$CARRY" || missing+=("package $p (dpkg -x $f failed)"); done
  done
  for f in "${CARRY_HEADERS[@]}"; do
    [ -f "$CARRY/usr/include/$f" ] || [ -f "$CARRY/usr/include/x86_64-linux-gnu/$f" ] ||
      compgen -G "$CARRY/usr/src/googletest/googletest/include/$f" >/dev/null || missing+=("header $f")
  done
  # Every library the built libmixccl.so needs comes with the carry or is a base library.
  local lib so owner
  if [ -f "$build/src/libmixccl.so" ]; then
    while read -r lib; do
      so=$(basename "$lib")
      [ -e "$CARRY/usr/lib/x86_64-linux-gnu/$so" ] || [ -e "$CARRY/lib/x86_64-linux-gnu/$so" ] && continue
      owner=$(dpkg -S "$lib" 2>/dev/null || dpkg -S "/usr$lib" 2>/dev/null || dpkg -S "$(realpath "$lib")" 2>/dev/null)
      owner=${owner%%:*}
      [[ " ${BASE_PACKAGES[*]} " == *" $owner "* ]] || missing+=("library $so (from ${owner:-?}; add it to CARRY_PACKAGES)")
    done < <(ldd "$build/src/libmixccl.so" | awk '$3 ~ /^\// {print $3}')
  else
    missing+=("$build/src/libmixccl.so (build first: its ldd decides what travels)")
  fi
  local mb carry_list="\"$(basename "$CARRY")\""
  mb=$(du -sm "$CARRY" | cut -f1)
  [ "$mb" -le "$CARRY_LIMIT_MB" ] || missing+=("room: $CARRY is $mb MiB, over $CARRY_LIMIT_MB MiB")
  echo "gpu-check prepare: $CARRY holds ${#CARRY_PACKAGES[@]} packages, $mb MiB"
  if [ "$prebuild" = 1 ]; then
    prebuild_main "$build" || missing+=("build-gpu (the prebuild failed)")
    # The working tree, the carry and build-gpu travel together: 64 MiB at most.
    local total tree
    tree=$(git -C "$ROOT" ls-files -z --cached --others --exclude-standard | (cd "$ROOT" && xargs -0 du -cb 2>/dev/null) | tail -1 | cut -f1)
    total=$(( (tree + $(du -sb "$CARRY" | cut -f1) + $(du -sb "$BUILD" | cut -f1)) / 1048576 ))
    echo "gpu-check prepare: $total MiB travel (working tree, carry, build-gpu)"
    [ "$total" -lt 64 ] || missing+=("room: $total MiB would travel, over 64 MiB")
    carry_list="$carry_list, \"build-gpu\""
  fi
  echo "the run call (docs/gpu.md):"
  echo "  run(command=\"scripts/gpu-check.sh\", carry=[$carry_list], timeout_s=480)"
  if [ "${#missing[@]}" -gt 0 ]; then
    printf 'gpu-check prepare: missing: %s\n' "${missing[@]}" >&2
    return 1
  fi
  echo "gpu-check prepare: ready"
}

# ---------------------------------------------------------------- --selftest (CPU machine)
selftest_main() {
  local tmp checks=0 total
  tmp=$(mktemp -d) || exit 1
  trap 'rm -rf "$tmp"' RETURN
  total=$(budget_total)
  [ "$total" -lt "$BUDGET_S" ] || { echo "selftest: steps take ${total}s, over ${BUDGET_S}s"; return 1; }
  ((checks++))
  OUT=$tmp/out NO_GPU=1 device_main >"$tmp/device.txt" 2>&1 ||
    { echo "selftest: the --no-gpu run failed:"; cat "$tmp/device.txt"; return 1; }
  check_summary "$tmp/out/summary.txt" || return 1
  ((checks++))
  grep -q "^result PASS pass=0 fail=0 skip=${#STEPS[@]}$" "$tmp/out/summary.txt" ||
    { echo "selftest: not every step says SKIP"; return 1; }
  ((checks++))
  local files
  files=$(find "$tmp/out" -type f | wc -l)
  [ "$files" -le 8 ] || { echo "selftest: $files files in OUT, at most 8 come back"; return 1; }
  ((checks++))
  # The checker must refuse broken summaries.
  local good=$tmp/out/summary.txt bad=$tmp/bad.txt
  local -a breakers=(
    "sed 2d"                                                    # no versions line
    "sed '/^step adaptor/d'"                                    # a step missing
    "sed 's/^step build SKIP/step build MAYBE/'"                # unknown status
    "sed 's/^step torch SKIP 0s/step torch SKIP zeros/'"        # no seconds
    "sed 's/skip=7/skip=6/'"                                    # counts that do not add up
    "sed 's/^result PASS/result FAIL/'"                         # a verdict without a failure
    "sed '1s/.*/mixccl gpu-check/'"                             # no commit
    "awk 'NR==3{l=\$0;next} NR==4{print;print l;next} 1'"      # steps out of order
  )
  local b
  for b in "${breakers[@]}"; do
    eval "$b \"\$good\"" >"$bad"
    if check_summary "$bad" >/dev/null; then
      echo "selftest: the checker accepted a broken summary ($b):"
      cat "$bad"
      return 1
    fi
    ((checks++))
  done
  # A failing step makes the verdict FAIL and the summary still valid.
  sed -e 's/^step ucx SKIP 0s no GPU/step ucx FAIL 3s perf\/compare/' \
      -e 's/^result PASS pass=0 fail=0 skip=7/result FAIL pass=0 fail=1 skip=6/' "$good" >"$bad"
  check_summary "$bad" || { echo "selftest: a valid failing summary was refused"; return 1; }
  ((checks++))
  echo "gpu-check selftest: passed ($checks checks; steps take ${total}s of ${BUDGET_S}s)"
}

case "${1:-}" in
  --library) return 0 2>/dev/null || exit 0 ;;  # sourced by run_step for one step function
  --prepare) shift; prepare_main "$@" ;;
  --selftest) selftest_main ;;
  --check-summary) check_summary "$2" ;;
  --no-gpu) NO_GPU=1 device_main ;;
  --step)  # one step on the device, e.g. a rerun of what failed: its log and result line
    [ -n "${OUT:-}" ] && [ -n "${2:-}" ] || die "usage: scripts/gpu-check.sh --step NAME (OUT set)"
    mkdir -p "$OUT"; name=$2; run_step "$2" "${3:-150}"; cat "$OUT/$2.log"; echo "step ${RESULTS[0]}"
    [[ ${RESULTS[0]} == "$2 PASS "* ]] ;;
  "") device_main ;;
  *) die "usage: scripts/gpu-check.sh [--prepare [--build DIR] [--no-prebuild] | --selftest | --no-gpu | --check-summary FILE]" ;;
esac
