#!/usr/bin/env bash
# Builds the canonical workloads against fw and libtorch (Debian libtorch-dev) from one source,
# runs them alternately on 2 threads, and prints one table of ratios (peer time / fw time;
# > 1 means fw is faster). Usage: benchmarks/compare.sh [rounds]
# Uses ../shared/bench/bench_api.cpp when it compiles against fw, else the tensor-only
# benchmarks/bench_core_api.cpp (same code, W1/W2/W3/W8).
set -euo pipefail
cd "$(dirname "$0")/.."
rounds="${1:-3}"
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT
# The peer: libtorch plus OpenBLAS (with Debian's default reference BLAS, libtorch's sgemm runs
# at a few GFLOP/s, which would make any comparison meaningless).
for pkg in libtorch-dev libopenblas0-openmp; do
  if ! dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed"; then
    echo "compare: installing $pkg for the peer"
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$pkg" >/dev/null
  fi
done
scripts/setup.sh >/dev/null
cmake --build build --target fw >/dev/null
src=../shared/bench/bench_api.cpp
flags=(-O2 -std=c++20 -march=native -w)
if ! g++ "${flags[@]}" "$src" -Iinclude -Lbuild/core -lfw -fopenmp -o "$out/bench_fw" 2>/dev/null; then
  src=benchmarks/bench_core_api.cpp
  g++ "${flags[@]}" "$src" -Iinclude -Lbuild/core -lfw -fopenmp -o "$out/bench_fw"
fi
g++ -O2 -std=c++17 -w -DPEER_TORCH "$src" -I/usr/include/torch/csrc/api/include -ltorch -ltorch_cpu -lc10 \
  -o "$out/bench_torch"
echo "source: $src  rounds: $rounds  threads: 2  $(date -u +%F)"
for r in $(seq "$rounds"); do
  OMP_NUM_THREADS=2 "$out/bench_torch" | sed "s/^/torch $r /" >> "$out/all.txt"
  OMP_NUM_THREADS=2 LD_LIBRARY_PATH=build/core "$out/bench_fw" | sed "s/^/fw $r /" >> "$out/all.txt"
done
python3 - "$out/all.txt" <<'PY'
import sys, statistics, collections
vals = collections.defaultdict(lambda: collections.defaultdict(list))
units = {}
for line in open(sys.argv[1]):
    who, _, name, v, unit = line.split()[:5]
    vals[name][who].append(float(v)); units[name] = unit
print(f"{'workload':28s} {'libtorch':>12s} {'fw':>12s} {'unit':>8s} {'fw speedup':>11s}")
for name in vals:
    t, f = statistics.median(vals[name]["torch"]), statistics.median(vals[name]["fw"])
    higher_better = units[name].endswith("/s")
    ratio = f / t if higher_better else t / f
    print(f"{name:28s} {t:12.3f} {f:12.3f} {units[name]:>8s} {ratio:10.2f}x")
PY
