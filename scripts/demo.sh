#!/usr/bin/env bash
# The main job: builds fw and runs the Babel-style multilingual speech recipe (examples/babel) at a
# reduced size end to end: synthesises a six-language corpus with fw-synth-corpus, computes fbank +
# deltas with per-speaker CMVN, trains monolingual vs six-language models, classic CNN vs VGG, one vs
# three context scales, evaluates frame accuracy and phone error rate, and prints the comparison table.
# About 20 minutes on 2 busy cores including a cold build, ~10 on 2 idle ones (examples/babel/README.md).
# Arguments go to examples/babel/run.sh (e.g. --threads 1, --compile 0, --size full, --stage 2).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
cmake --build build -j"$(nproc)" --target fw-babel fw-synth-corpus
examples/babel/run.sh --bin build --work build/recipes/babel-demo "$@"
