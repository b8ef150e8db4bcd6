#!/usr/bin/env bash
# Sets up, builds, and runs the main job: 4 ranks on this host AllReduce 1 Mi floats.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
./build/examples/allreduce_demo "${1:-4}" "${2:-1048576}"
