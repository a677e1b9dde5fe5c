#!/usr/bin/env bash
# The main job: builds fw and runs the example that trains a model on generated data.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
cmake --build build -j"$(nproc)" --target logistic_regression
./build/examples/logistic_regression "$@"
