#!/usr/bin/env bash
# Installs the build tree into a scratch prefix, then builds a consumer against it twice:
# with find_package(mixccl) and with pkg-config. usage: test_install.sh BUILD_DIR SOURCE_DIR
set -euo pipefail
build="$1"; src="$2"
work="$(mktemp -d)"; trap 'rm -rf "$work"' EXIT
cmake --install "$build" --prefix "$work/prefix" >/dev/null
libdir="$(dirname "$(find "$work/prefix" -name 'libmixccl.so' | head -1)")"

mkdir -p "$work/cmake-consumer"
cp "$src/tests/install/consumer.c" "$work/cmake-consumer/"
cp "$src/tests/install/CMakeLists.txt.in" "$work/cmake-consumer/CMakeLists.txt"
cmake -S "$work/cmake-consumer" -B "$work/cmake-build" -DCMAKE_PREFIX_PATH="$work/prefix" >/dev/null
cmake --build "$work/cmake-build" >/dev/null
LD_LIBRARY_PATH="$libdir" "$work/cmake-build/consumer"

export PKG_CONFIG_PATH="$libdir/pkgconfig"
cc "$src/tests/install/consumer.c" $(pkg-config --cflags --libs mixccl) -o "$work/pc-consumer"
LD_LIBRARY_PATH="$libdir" "$work/pc-consumer"
echo "install test passed"
