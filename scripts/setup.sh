#!/usr/bin/env bash
# Installs the Debian packages mixccl builds and tests with (only the missing ones), then
# configures and builds into build/. Safe to run again.
set -euo pipefail
cd "$(dirname "$0")/.."

packages=(build-essential cmake pkg-config libssl-dev libgtest-dev nlohmann-json3-dev libhwloc-dev libopenblas-dev
          libgloo-dev libopenmpi-dev openmpi-bin python3 python3-matplotlib iproute2
          libucx-dev ucx-utils libfabric-dev libfabric-bin libibverbs-dev librdmacm-dev ccache
          slurmctld slurmd slurm-client)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}"
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# torch for the PyTorch backend (plugins/torch): the smallest recipe, see the script.
scripts/install-torch.sh
# transformers for mixccl.train's adapter example and its test (a model from a config, nothing
# downloaded); torch is not among its dependencies, so it leaves the torch above alone.
if ! python3 -c "import transformers" >/dev/null 2>&1; then
  echo "setup: transformers (mixccl.train's Hugging Face adapter)"
  python3 -m pip install --quiet --disable-pip-version-check --root-user-action=ignore "transformers==5.24.0"
fi

# Through ccache: the wheel test (tests/wheel) compiles what this build compiles, and takes it
# from the cache. Paths relative to the repository, and the folder left out of the hash, so
# that a build folder as deep as build/ hits too.
launcher="env;CCACHE_BASEDIR=$PWD;CCACHE_NOHASHDIR=true;ccache"
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_C_COMPILER_LAUNCHER="$launcher" \
  -DCMAKE_CXX_COMPILER_LAUNCHER="$launcher" >/dev/null
cmake --build build -j"$(nproc)"
