#!/usr/bin/env bash
# Installs the build tree into a scratch prefix, then, as a user of the installed tree would:
#  - runs the installed programs (perf tool alone and under the installed mixcclrun, mixccl-topo);
#  - builds C consumers of mixccl and of the mixccl_launch helper with find_package(mixccl) and
#    with pkg-config, and runs them.
# Nothing runs with LD_LIBRARY_PATH: installed binaries must find their libraries by their RPATH.
# usage: test_install.sh BUILD_DIR SOURCE_DIR
set -euo pipefail
build="$1"; src="$2"
work="$(mktemp -d)"; trap 'rm -rf "$work"' EXIT
unset LD_LIBRARY_PATH MIXCCL_RANK MIXCCL_NRANKS MIXCCL_COMM_ID RANK WORLD_SIZE \
  OMPI_COMM_WORLD_RANK SLURM_PROCID || true
prefix="$work/prefix"
cmake --install "$build" --prefix "$prefix" >/dev/null
libdir="$(dirname "$(find "$prefix" -name 'libmixccl.so' | head -1)")"

echo "== installed binaries"
"$prefix/bin/all_reduce_perf" -b 8 -e 1K -f 4 -n 1 -w 0 -c 1 | grep "Out of bounds values : 0 OK" >/dev/null
"$prefix/bin/mixcclrun" -np 2 "$prefix/bin/all_reduce_perf" -b 8 -e 1K -f 4 -n 1 -w 0 -c 1 \
  | grep "Out of bounds values : 0 OK" >/dev/null
"$prefix/bin/mixccl-topo" >/dev/null
echo "installed binaries run"

echo "== find_package(mixccl)"
mkdir -p "$work/cmake-consumer"
cp "$src/tests/install/consumer.c" "$src/tests/install/consumer_launch.c" "$work/cmake-consumer/"
cp "$src/tests/install/CMakeLists.txt.in" "$work/cmake-consumer/CMakeLists.txt"
cmake -S "$work/cmake-consumer" -B "$work/cmake-build" -DCMAKE_PREFIX_PATH="$prefix" >/dev/null
cmake --build "$work/cmake-build" >/dev/null
"$work/cmake-build/consumer"
"$work/cmake-build/consumer_launch"
"$prefix/bin/mixcclrun" -np 3 "$work/cmake-build/consumer_launch" | grep "rank 2 of 3 (mixcclrun), result 6" >/dev/null

echo "== pkg-config"
export PKG_CONFIG_PATH="$libdir/pkgconfig"
cc "$src/tests/install/consumer.c" $(pkg-config --cflags --libs mixccl) -o "$work/pc-consumer"
"$work/pc-consumer"
cc "$src/tests/install/consumer_launch.c" $(pkg-config --cflags --libs mixccl-launch) \
  -o "$work/pc-consumer-launch"
"$work/pc-consumer-launch"
echo "install test passed"
