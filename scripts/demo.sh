#!/usr/bin/env bash
# The main job: builds fw and trains an MLP classifier (fw::nn + optim + DataLoader) on generated data.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
cmake --build build -j"$(nproc)" --target mlp_classifier
./build/examples/mlp_classifier "$@"
