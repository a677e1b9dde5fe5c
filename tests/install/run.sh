#!/usr/bin/env bash
# Installs the build tree into a temporary prefix, then builds and runs the consumer against it.
set -euo pipefail
build_dir="$1"; src_dir="$(cd "$(dirname "$0")" && pwd)"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
cmake --install "$build_dir" --prefix "$tmp/prefix" >/dev/null
cmake -S "$src_dir" -B "$tmp/build" -G Ninja -DCMAKE_PREFIX_PATH="$tmp/prefix" >/dev/null
cmake --build "$tmp/build" >/dev/null
LD_LIBRARY_PATH="$tmp/prefix/lib:${LD_LIBRARY_PATH:-}" "$tmp/build/consumer"
