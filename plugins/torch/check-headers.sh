#!/usr/bin/env bash
# Compiles the backend's sources (syntax only) against another torch's headers, to keep the
# backend building on every torch it supports (2.11: C++17, 2.15: C++20; docs/pytorch.md):
#   pip download --no-deps torch==2.11.0 -d /tmp/t && unzip -q /tmp/t/torch-*.whl 'torch/include/*' -d /tmp/t
#   plugins/torch/check-headers.sh /tmp/t/torch/include c++17
set -euo pipefail
include="${1:?torch include dir}"
std="${2:-c++17}"
here="$(cd "$(dirname "$0")" && pwd)"
pyinc="$(python3 -c 'import sysconfig; print(sysconfig.get_paths()["include"])')"
# cuda_fence.cc includes torch's c10/cuda headers, which include cuda_runtime_api.h.
cudainc="${CUDA_HOME:-/usr/local/cuda}/include"
for src in "$here"/csrc/*.cc; do
  g++ -std="$std" -fsyntax-only -w -I"$include" -I"$include/torch/csrc/api/include" -I"$pyinc" -I"$cudainc" \
      -I"$here/../../include" -D_GLIBCXX_USE_CXX11_ABI=1 -DTORCH_EXTENSION_NAME=_torch_backend \
      -DTORCH_API_INCLUDE_EXTENSION_H "$src"
  echo "check-headers: $(basename "$src") compiles against $include ($std)"
done
