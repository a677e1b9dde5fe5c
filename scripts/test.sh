#!/usr/bin/env bash
# The test command: setup + build + the whole test suite.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
cmake --build build -j"$(nproc)"
cd build && ctest --output-on-failure -j"$(nproc)"
