# The device steps of scripts/gpu-check.sh (docs/gpu.md, "What it runs"): one function per step,
# step_<name>, each run by gpu-check.sh's run_step under `timeout` in its own shell, with the
# variables gpu-check.sh sets (ROOT, CARRY, BUILD, BUILD_TORCH, GPU_CMAKE_FLAGS, GPU_OUTPUTS, ...).
# Sourced by gpu-check.sh; not a program of its own.

nccl_wheel_dir() {
  python3 -c 'import nvidia.nccl, os; print(list(nvidia.nccl.__path__)[0])' 2>/dev/null
}

step_info() {
  local gpu driver cuda nccl
  gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
  driver=$(nvidia-smi --query-gpu=driver_version --format=csv,noheader | head -1)
  cuda=$(nvcc --version 2>/dev/null | sed -n 's/.*release \([0-9.]*\).*/\1/p')
  nccl=$(python3 -c 'import torch; print(".".join(map(str, torch.cuda.nccl.version())))' 2>/dev/null)
  # What the later steps rely on, for the log when one of them fails.
  echo "tools: $(for t in nvcc python3 cmake ninja gcc g++; do printf '%s=%s ' "$t" "$(command -v $t)"; done)"
  echo "cuda: $(ls -d /usr/local/cuda* 2>&1 | tr '\n' ' ') libcudart: $(ls /usr/local/cuda/lib64/libcudart.so* 2>&1 | tr '\n' ' ')"
  echo "python: $(python3 -c 'import sys, torch; print(sys.version.split()[0], "torch", torch.__version__, "cuda", torch.version.cuda)' 2>&1)"
  echo "nccl wheel: $(nccl_wheel_dir)"; echo "glibc: $(ldd --version | head -1)"; nvidia-smi || true
  [ -n "$gpu" ] || { echo "FAIL: nvidia-smi shows no GPU"; exit 1; }
  echo "VERSIONS: gpu=$gpu; driver=$driver; cuda=${cuda:-unknown}; nccl=${nccl:-unknown}"
  echo "KEY: $gpu, driver $driver, CUDA ${cuda:-?}, NCCL ${nccl:-?}"
}

# The Debian libraries and headers of .gpu-carry, and the NCCL wheel's headers beside CUDA's.
carry_env() {
  local lib=$CARRY/usr/lib/x86_64-linux-gnu
  # Some packages (libnl) install into /lib rather than /usr/lib.
  export LD_LIBRARY_PATH=$lib:$CARRY/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
  export PKG_CONFIG_LIBDIR=$lib/pkgconfig:$CARRY/usr/share/pkgconfig PKG_CONFIG_SYSROOT_DIR=$CARRY
}

# The folder of headers compat/nccl and the adaptor compile against: nccl.h beside CUDA's
# headers. The NCCL header is the one --prepare carried in build-gpu/nccl-header (the version the
# shim and the adaptor are typed against), else the wheel's.
nccl_include_dir() {
  local inc=$1 header=$BUILD/nccl-header/nccl.h wheel
  if [ ! -f "$header" ]; then
    wheel=$(nccl_wheel_dir) || { echo "FAIL: no carried nccl.h and python3 has no nvidia.nccl" >&2; return 1; }
    header=$wheel/include/nccl.h
  fi
  mkdir -p "$inc" && ln -sf /usr/local/cuda/include/* "$inc"/ && ln -sf "$header" "$inc/nccl.h"
}

# Configures and builds DIR against the carried libraries; the rest of the arguments are targets.
build_here() {
  local dir=$1 inc=$1/nccl-include
  shift
  nccl_include_dir "$inc" || exit 1
  cmake -S "$ROOT" -B "$dir" "${GPU_CMAKE_FLAGS[@]}" -DMIXCCL_CUDA_INCLUDE_DIR=/usr/local/cuda/include \
    -DMIXCCL_NCCL_INCLUDE_DIR="$inc" -DOPENSSL_ROOT_DIR="$CARRY/usr" \
    -DCMAKE_PREFIX_PATH="$CARRY/usr" -DGTest_DIR="$CARRY/usr/lib/x86_64-linux-gnu/cmake/GTest" \
    "${CMAKE_EXTRA[@]}" || { echo "FAIL: configure $dir"; exit 1; }
  ninja -C "$dir" -j16 "$@" || { echo "FAIL: build in $dir"; exit 1; }
}

# build-gpu/ normally comes prebuilt from --prepare, its run paths naming the folder it was built
# in: that path is made to lead here. Without it, the step builds it (minutes of device time).
step_build() {
  carry_env
  local mark=$BUILD/$PREBUILT_MARK root commit f missing=
  if [ -f "$mark" ]; then
    root=$(sed -n 's/^root=\([^ ]*\).*/\1/p' "$mark")
    commit=$(sed -n 's/.* commit=\(.*\)/\1/p' "$mark")
    if [ "$root" != "$ROOT" ]; then
      if [ -e "$root" ]; then
        [ "$(cd "$root" && pwd -P)" = "$(cd "$ROOT" && pwd -P)" ] ||
          { echo "FAIL: build-gpu was built in $root, which exists here and is another folder"; exit 1; }
      else
        mkdir -p "$(dirname "$root")" && ln -s "$ROOT" "$root" || { echo "FAIL: cannot link $root"; exit 1; }
      fi
    fi
    for f in "${GPU_OUTPUTS[@]}"; do [ -f "$BUILD/$f" ] || missing="$missing $f"; done
    [ -z "$missing" ] || { echo "FAIL: the prebuilt build-gpu lacks$missing"; exit 1; }
    # Every library the prebuilt programs need is found (carried or the image's own).
    missing=$(ldd "$BUILD/src/libmixccl.so" "$BUILD/tests/standin/nccl_ranks_test" \
      "$BUILD/tools/mixcclrun" | grep 'not found' | sort -u | tr -s ' \t\n' ' ')
    [ -z "$missing" ] || { echo "FAIL: libraries not found:$missing"; exit 1; }
    echo "KEY: prebuilt on the CPU machine at $commit (${#GPU_OUTPUTS[@]} programs and libraries, libraries resolve)"
    return 0
  fi
  CMAKE_EXTRA=(-DMIXCCL_WITH_TORCH=OFF)
  build_here "$BUILD" "${GPU_TARGETS[@]}"
  echo "KEY: built in $BUILD"
}

step_adaptor() {
  carry_env
  export MIXCCL_PLUGIN_PATH=$BUILD/src MIXCCL_NCCL_LIBRARY
  MIXCCL_NCCL_LIBRARY=$(nccl_wheel_dir)/lib/libnccl.so.2
  local t=$BUILD/tests/adaptors ranks=$BUILD/tests/standin/nccl_ranks_test job out n checks=
  # One rank: NCCL refuses two ranks on one GPU.
  "$t/adaptor_nccl_tests" --gtest_filter='-*WithoutGpu*' || { echo "FAIL: adaptor_nccl_tests"; exit 1; }
  LD_LIBRARY_PATH=$t/fake_vendor:$LD_LIBRARY_PATH "$t/adaptor_nccl_library_tests" ||
    { echo "FAIL: adaptor_nccl_library_tests"; exit 1; }
  # The stand-in's multi-rank program on NVIDIA's libraries (docs/gpu.md): every collective,
  # datatype and op on device memory, bit-exact, through NCCL itself (one rank) and staged
  # across domains (one GPU rank beside CPU ranks; gloo is not built here), then stream order,
  # then a host rank killed mid-AllReduce and the survivors shrunk (NCCL's communicator of the
  # GPU rank aborted and formed again: tests/standin/ranks_shrink.h).
  for job in "1 nccl matrix" "4 nccl,host,host,host matrix" "8 nccl,host,host,host,host,host,host,host matrix --quick" \
             "4 nccl,host,host,host order" "4 nccl,host,host,host shrink"; do
    # shellcheck disable=SC2086
    # Each job bounded on its own (the order job once stalled and took the whole step).
    out=$(timeout -k 2 12 "$ranks" $job 2>&1); rc=$?
    echo "$out"
    [ "$rc" != 124 ] && [ "$rc" != 137 ] || { echo "FAIL: nccl_ranks_test $job stalled (12 s)"; exit 1; }
    [ "$rc" = 0 ] || { echo "FAIL: nccl_ranks_test $job"; exit 1; }
    n=$(echo "$out" | sed -n 's/^rank 0 (nccl): \([0-9]*\) checks.*/\1/p')
    [ -z "$n" ] || checks="$checks $n"
  done
  echo "KEY: NcclAdaptor.* on the GPU, NcclAdaptorLibraries.*, nccl_ranks_test (GPU rank checks:$checks; stream order; shrink) passed"
}

# The NCCL-API benchmark (compat/nccl/perf/nccl_all_reduce_perf.c, -M device: cudaMalloc'd
# buffers, a non-blocking stream) linked once to NVIDIA's libnccl.so.2 (the wheel's) and once to
# mixccl's, one rank, 8 B - 1 GiB; then mixccl's own all_reduce_perf -M device (with its device
# copy roof); the two NCCL-API tables joined by size (time and algbw side by side, and their
# ratio). Both programs open the same CUDA runtime by name (MIXCCL_CUDA_RUNTIME_LIBRARY).
step_passthrough() {
  carry_env
  local src=$ROOT/compat/nccl/perf/nccl_all_reduce_perf.c wheel real=$BUILD/nccl_all_reduce_perf_real
  wheel=$(nccl_wheel_dir) || { echo "FAIL: python3 has no nvidia.nccl (nvidia-nccl-cu13 wheel)"; exit 1; }
  nccl_include_dir "$BUILD/nccl-include" || exit 1
  gcc -O2 -o "$real" "$src" -I"$BUILD/nccl-include" -I"$ROOT/compat/nccl/perf" -L"$wheel/lib" \
    -l:libnccl.so.2 -lm -ldl -Wl,-rpath,"$wheel/lib" || { echo "FAIL: link to real NCCL"; exit 1; }
  export MIXCCL_CUDA_RUNTIME_LIBRARY=/usr/local/cuda/lib64/libcudart.so.13
  [ -f "$MIXCCL_CUDA_RUNTIME_LIBRARY" ] || { echo "FAIL: no $MIXCCL_CUDA_RUNTIME_LIBRARY"; exit 1; }
  export MIXCCL_NCCL_LIBRARY=$wheel/lib/libnccl.so.2 MIXCCL_ADAPTOR=nccl MIXCCL_PLUGIN_PATH=$BUILD/src
  local args=(-b 8 -e 1G -f 2 -n 5 -w 1 -M device)
  echo "== NVIDIA's libnccl.so.2 ($wheel/lib)"
  MIXCCL_RANK=0 MIXCCL_NRANKS=1 MIXCCL_COMM_ID=127.0.0.1:0 "$real" "${args[@]}" |
    tee "$BUILD/pt_real.txt" || { echo "FAIL: nccl_all_reduce_perf on NVIDIA's NCCL"; exit 1; }
  echo "== mixccl's libnccl.so.2"
  "$BUILD/tools/mixcclrun" -np 1 "$BUILD/compat/nccl/nccl_all_reduce_perf" "${args[@]}" |
    tee "$BUILD/pt_mixccl.txt" || { echo "FAIL: nccl_all_reduce_perf on mixccl's libnccl.so.2"; exit 1; }
  # Unchecked (-c 0): with its checker the 1 GiB size alone took 44 s (12.6 s of CPU) on the
  # 2-core CPU machine, too close to the step's bound; the stand-in GPU tests check this path.
  echo "== mixccl's all_reduce_perf -M device"
  "$BUILD/tools/mixcclrun" -np 1 "$BUILD/perf/all_reduce_perf" "${args[@]}" -c 0 |
    tee "$BUILD/pt_perf.txt" || { echo "FAIL: all_reduce_perf -M device"; exit 1; }
  for f in pt_real pt_mixccl pt_perf; do
    grep -q "Out of bounds values : 0 OK" "$BUILD/$f.txt" || { echo "FAIL: $f: results wrong"; exit 1; }
  done
  python3 - "$BUILD/pt_real.txt" "$BUILD/pt_mixccl.txt" "$BUILD/pt_perf.txt" <<'PY'
import re, sys
def rows(path):  # size -> (out-of-place time us, algbw GB/s: busbw is 0 on one rank)
    out = {}
    for line in open(path):
        f = re.sub(r"^\[\d+\] ", "", line).split()
        if len(f) >= 9 and f[0].isdigit():
            out[int(f[0])] = (float(f[5]), float(f[6]))
    return out
real, mix, perf = (rows(p) for p in sys.argv[1:4])
print("side by side (out of place; time us, algbw GB/s; ratio = mixccl's libnccl / NVIDIA's time)")
print("%12s %12s %12s %7s %9s %9s %12s" % ("size", "nvidia us", "mixccl us", "ratio",
      "nvidia bw", "mixccl bw", "perf -M dev"))
for size in sorted(real):
    if size in mix:
        r, m = real[size], mix[size]
        p = perf.get(size, (0, 0))
        print("%12d %12.2f %12.2f %7.2f %9.2f %9.2f %12.2f" % (size, r[0], m[0],
              m[0] / r[0] if r[0] else 0, r[1], m[1], p[1]))
small, big = min(real), max(real)
roof = re.search(r"H2D ([0-9.]+) GB/s, D2H ([0-9.]+) GB/s, D2D ([0-9.]+) GB/s", open(sys.argv[3]).read())
print("KEY: 1 rank, %d B: %.1f/%.1f us (NVIDIA/mixccl libnccl); %d B: algbw %.1f/%.1f GB/s, "
      "all_reduce_perf -M device %.1f GB/s; copy roof H2D/D2H/D2D %s GB/s" % (
      small, real[small][0], mix.get(small, (0, 0))[0], big, real[big][1], mix.get(big, (0, 0))[1],
      perf.get(big, (0, 0))[1], "/".join(roof.groups()) if roof else "?"))
PY
}

step_copyroof() {
  local exe=$BUILD/copy_roof
  g++ -O2 -std=c++17 -o "$exe" "$ROOT/scripts/gpu/copy_roof.cc" -I/usr/local/cuda/include \
    -L/usr/local/cuda/lib64 -lcudart -Wl,-rpath,/usr/local/cuda/lib64 || { echo "FAIL: build copy_roof"; exit 1; }
  "$exe" 1073741824 || exit 1
}

# torch's own ProcessGroupNCCL on mixccl's libnccl.so.2 (LD_PRELOAD), world size 1, one
# all_reduce of a 4 MiB float32 CUDA tensor that must be exact; twice at once: on the nccl
# adaptor (NVIDIA's NCCL under the shim) and on the host adaptor (the tensor staged through host
# memory), so a failure says which path it is on. Each bounded (45 s: Python's stacks, then
# exit) and logged (MIXCCL_DEBUG=INFO); if the nccl one still runs at 35 s, its threads' native
# stacks (cuda-gdb, the image's only debugger) go to the log. Started in the background by
# start_pg_jobs, collected by finish_pg_jobs (prints the logs and the failures).
start_pg_jobs() {
  local shim=$BUILD/compat/nccl/lib/libnccl.so.2 wheel
  wheel=$(nccl_wheel_dir)
  cat >"$BUILD/pg_allreduce.py" <<'EOF2'
import faulthandler, torch, torch.distributed as dist
faulthandler.dump_traceback_later(45, exit=True)
print("torch", torch.__version__, "sees NCCL", torch.cuda.nccl.version(), flush=True)
store = dist.HashStore()
dist.init_process_group("nccl", store=store, rank=0, world_size=1)
x = torch.arange(1 << 20, dtype=torch.float32, device="cuda")
dist.all_reduce(x)
torch.cuda.synchronize()
ok = torch.equal(x, torch.arange(1 << 20, dtype=torch.float32, device="cuda"))
dist.destroy_process_group()
print("torch", torch.__version__, "all_reduce on cuda:", "exact" if ok else "WRONG")
assert ok
EOF2
  LD_PRELOAD=$shim MIXCCL_DEBUG=INFO MIXCCL_ADAPTOR=host \
    python3 "$BUILD/pg_allreduce.py" >"$BUILD/torch_pg_host.log" 2>&1 &
  PG_HOST=$!
  LD_PRELOAD=$shim MIXCCL_DEBUG=INFO NCCL_DEBUG=WARN MIXCCL_ADAPTOR=nccl \
    MIXCCL_NCCL_LIBRARY=$wheel/lib/libnccl.so.2 python3 "$BUILD/pg_allreduce.py" >"$BUILD/torch_pg_nccl.log" 2>&1 &
  PG_NCCL=$!
  (sleep 35; kill -0 $PG_NCCL 2>/dev/null && command -v cuda-gdb >/dev/null &&
    timeout 25 cuda-gdb -p $PG_NCCL -batch -ex "thread apply all bt" >"$BUILD/torch_pg_stack.log" 2>&1) &
  PG_STACK=$!
}

finish_pg_jobs() {
  local failed=
  wait $PG_NCCL || failed="$failed ProcessGroupNCCL over mixccl's libnccl.so.2 (nccl adaptor);"
  wait $PG_HOST || failed="$failed ProcessGroupNCCL over mixccl's libnccl.so.2 (host adaptor);"
  wait $PG_STACK
  echo "== ProcessGroupNCCL over mixccl's libnccl.so.2, host adaptor (last 30 lines)"
  tail -30 "$BUILD/torch_pg_host.log"
  echo "== ProcessGroupNCCL over mixccl's libnccl.so.2, nccl adaptor (last 60 lines)"
  tail -60 "$BUILD/torch_pg_nccl.log"
  if [ -s "$BUILD/torch_pg_stack.log" ]; then
    echo "== its threads' stacks at 35 s"
    grep -vE '^\[New|^\[Thread|^warning' "$BUILD/torch_pg_stack.log" | cut -c1-220 | head -150
  fi
  PG_FAILED=$failed
}

# The stream-order job of the adaptor step, three times, each bounded (scripts/gpu-check.sh
# --step order): once seen to stall on the GPU, so a rerun says whether it is intermittent.
step_order() {
  carry_env
  export MIXCCL_PLUGIN_PATH=$BUILD/src MIXCCL_NCCL_LIBRARY
  MIXCCL_NCCL_LIBRARY=$(nccl_wheel_dir)/lib/libnccl.so.2
  local i ok=0
  for i in 1 2 3; do
    if timeout -k 2 15 "$BUILD/tests/standin/nccl_ranks_test" 4 nccl,host,host,host order 2>&1 | tail -8; then
      ok=$((ok + 1))
    else
      echo "attempt $i: failed or stalled (15 s)"
    fi
  done
  [ "$ok" = 3 ] || { echo "FAIL: stream order passed $ok of 3 times"; exit 1; }
  echo "KEY: stream order (4 nccl,host,host,host) passed 3 of 3 times"
}

# Only the ProcessGroupNCCL check (scripts/gpu-check.sh --step torchpg): a short device call.
step_torchpg() {
  carry_env
  start_pg_jobs
  finish_pg_jobs
  [ -z "$PG_FAILED" ] || { echo "FAIL:$PG_FAILED"; exit 1; }
  echo "KEY: ProcessGroupNCCL over mixccl's libnccl.so.2 (nccl and host adaptors): 1 rank, 4 MiB float32 exact"
}

step_torch() {
  carry_env
  local shim=$BUILD/compat/nccl/lib/libnccl.so.2 wheel start=$SECONDS
  [ -f "$shim" ] || { echo "FAIL: no $shim"; exit 1; }
  wheel=$(nccl_wheel_dir) || { echo "FAIL: python3 has no nvidia.nccl (nvidia-nccl-cu13 wheel)"; exit 1; }
  start_pg_jobs
  # The mixccl backend, built here against this machine's torch and Python (with CUDA support).
  CMAKE_EXTRA=(-DMIXCCL_WITH_TORCH=ON -DMIXCCL_TORCH_CUDA=ON -DPython3_EXECUTABLE="$(command -v python3)")
  (build_here "$BUILD_TORCH" mixccl_torch_backend mixccl-adaptor-nccl >"$BUILD/torch_build.log" 2>&1) ||
    { finish_pg_jobs; tail -40 "$BUILD/torch_build.log"
      echo "FAIL: build of the mixccl torch extension ($((SECONDS - start)) s)"; exit 1; }
  echo "== extension built in $((SECONDS - start)) s"
  # tests/torch/gpu_cuda_test.py: 5 ranks on the one GPU (rank 0 on the nccl adaptor with CUDA
  # tensors, rank 1 CUDA tensors on the host adaptor, 3 CPU ranks); every op, a side-stream
  # producer, wait() without a host block, CPU tensors, DDP against gloo.
  local failed=
  PYTHONPATH=$BUILD_TORCH/python MIXCCL_PLUGIN_PATH=$BUILD_TORCH/src \
    MIXCCL_NCCL_LIBRARY=$wheel/lib/libnccl.so.2 MIXCCL_GPU_TEST_LIMIT_S=$((100 - (SECONDS - start))) \
    python3 "$ROOT/tests/torch/gpu_cuda_test.py" -v || failed="$failed gpu_cuda_test.py;"
  # mixccl.train with its fast replica on the GPU (NCCL adaptor) beside a 2-stage CPU pipeline
  # (host adaptor), tests/train_torch/plans/hetero_3.json: the losses of 3 steps against the
  # single CPU process, fp32 (1e-5, as on CPUs) and bf16 autocast on the GPU rank (5e-2).
  local tt=$ROOT/tests/train_torch par out train=
  for par in "tiny3.json cuda:fp32 1e-5" "tiny3-bf16.json cuda:bf16 5e-2"; do
    set -- $par
    out=$(PYTHONPATH=$BUILD_TORCH/python:$tt MIXCCL_PLUGIN_PATH=$BUILD_TORCH/src OMP_NUM_THREADS=1 \
      MIXCCL_NCCL_LIBRARY=$wheel/lib/libnccl.so.2 PARITY_PLAN_ARGS="--device-map fast=cuda" \
      PARITY_EXPECT="$2,cpu:fp32,cpu:fp32" PARITY_BOUND=$3 TORCH_CPP_LOG_LEVEL=ERROR \
      timeout 40 python3 "$tt/parity.py" "$tt/$1" "$tt/plans/hetero_3.json" 3 3 \
      mixcclrun "$BUILD/tools/mixcclrun" nccl:1,host:2 2>&1) || failed="$failed mixccl.train $2;"
    echo "$out" | tail -40
    train="$train $2 $(echo "$out" | sed -n 's/.*largest relative difference \([^ ]*\).*/\1/p')"
  done
  finish_pg_jobs
  failed="$failed$PG_FAILED"
  [ -z "$failed" ] || { echo "FAIL:$failed"; exit 1; }
  echo "KEY: mixccl backend on CUDA tensors: 14 checks x 5 ranks (nccl:cuda, host:cuda, 3x host:cpu) passed; ProcessGroupNCCL over mixccl's libnccl.so.2 (nccl and host adaptors): 1 rank, 4 MiB float32 exact; mixccl.train GPU+2 CPU ranks vs single CPU, largest loss difference:$train"
}

step_ucx() {
  carry_env
  # Host memory on the CPUs: the host adaptor (auto-detection would put all four ranks on the
  # one GPU's nccl adaptor, which NCCL refuses: "Duplicate GPU detected").
  local out
  out=$(MIXCCL_ADAPTOR=host UCX_TLS=tcp,sm timeout 55 "$ROOT/perf/compare" --build "$BUILD" --ranks 4 \
    --colls sendrecv,allreduce --peers mixccl,mixccl-ucx,ucx-roof --min 1M --max 16M --factor 4 \
    --reps 1 --iters 5 --no-latency --out-dir "$BUILD/compare_out" 2>&1) || { echo "$out"; echo "FAIL: perf/compare"; exit 1; }
  echo "$out"
  # A peer that did not run leaves '-' in its column: mixccl and mixccl-ucx must have run.
  if echo "$out" | grep -qE '^ +4 +(sendrecv|allreduce) +[0-9]+M +- '; then
    echo "FAIL: mixccl did not run in perf/compare (a '-' in its column)"; exit 1
  fi
  echo "KEY: 4 ranks, sendrecv and allreduce 1-16 MiB, mixccl/mixccl-ucx/ucx-roof (table in ucx.log)"
}
