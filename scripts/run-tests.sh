#!/usr/bin/env bash
# Sets up, builds, and runs the whole test suite with CTest (its summary is the last output).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
cd build
exec ctest -j"$(nproc)" --output-on-failure --no-label-summary --timeout 600
