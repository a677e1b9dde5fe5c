#!/usr/bin/env bash
# Builds the canonical workloads against fw and libtorch (Debian libtorch-dev) from one source,
# runs them alternately on 2 threads, and prints one table of ratios (peer time / fw time;
# > 1 means fw is faster). Usage: benchmarks/compare.sh [rounds]
# Uses ../shared/bench/bench_api.cpp when it compiles against fw, else the tensor-only
# benchmarks/bench_core_api.cpp (same code, W1/W2/W3/W8).
# Environment: COMPARE_SRC=file benchmarks another one-source program instead (e.g.
# benchmarks/bench_3d_api.cpp; with COMPARE_EAGER_ONLY=1); FW_BUILD_DIR=dir uses an already configured build directory instead of ./build
# (scripts/setup.sh is then not run); COMPARE_EAGER_ONLY=1 skips the fw::compile figures;
# COMPARE_FIFO=1 runs both sides under SCHED_FIFO (chrt -f 10, needs root or CAP_SYS_NICE), so
# that other processes on a shared machine wait while they run (fw and libtorch alike; the
# kernel still keeps 5% of each second for others, which shows up as occasional 50 ms stalls).
# COMPARE_TORCH2=1 also runs benchmarks/bench_torch_compile.py (PyTorch 2 eager and torch.compile
# on W2/W3/W4, and W7) each round, from a venv at $COMPARE_TORCH2_VENV (default
# ~/.cache/fw/torch2-venv) made with PyPI's torch==$COMPARE_TORCH2_VERSION (default 2.5.1) when
# missing, and adds a column of ratios against it (fw's "[compiled]" rows against torch.compile).
set -euo pipefail
cd "$(dirname "$0")/.."
rounds="${1:-3}"
bdir="${FW_BUILD_DIR:-build}"
eager_only="${COMPARE_EAGER_ONLY:-0}"
rt=()
[ "${COMPARE_FIFO:-0}" = 1 ] && rt=(chrt -f 10)
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
torch2=()
if [ "${COMPARE_TORCH2:-0}" = 1 ]; then
  venv="${COMPARE_TORCH2_VENV:-$HOME/.cache/fw/torch2-venv}"
  if ! "$venv/bin/python" -c "import torch" 2>/dev/null; then
    echo "compare: installing torch==${COMPARE_TORCH2_VERSION:-2.5.1} into $venv for the torch.compile peer"
    python3 -c "import ensurepip" 2>/dev/null || DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3-venv >/dev/null
    python3 -m venv "$venv"
    "$venv/bin/pip" install -q "torch==${COMPARE_TORCH2_VERSION:-2.5.1}" numpy
  fi
  torch2=("$venv/bin/python" benchmarks/bench_torch_compile.py 2)
fi
targets=(fw)
[ "$eager_only" = 1 ] || targets+=(fw_bench_compile)
[ "$bdir" != build ] || scripts/setup.sh >/dev/null
cmake --build "$bdir" --target "${targets[@]}" >/dev/null
src="${COMPARE_SRC:-../shared/bench/bench_api.cpp}"
flags=(-O2 -std=c++20 -march=native -w)
if [ -n "${COMPARE_SRC:-}" ]; then
  g++ "${flags[@]}" "$src" -Iinclude -L"$bdir/core" -lfw -fopenmp -o "$out/bench_fw"
elif ! g++ "${flags[@]}" "$src" -Iinclude -L"$bdir/core" -lfw -fopenmp -o "$out/bench_fw" 2>/dev/null; then
  src=benchmarks/bench_core_api.cpp
  g++ "${flags[@]}" "$src" -Iinclude -L"$bdir/core" -lfw -fopenmp -o "$out/bench_fw"
fi
g++ -O2 -std=c++17 -w -DPEER_TORCH "$src" -I/usr/include/torch/csrc/api/include -ltorch -ltorch_cpu -lc10 \
  -o "$out/bench_torch"
echo "source: $src  rounds: $rounds  threads: 2  build: $bdir  $(date -u +%F)  load: $(cut -d' ' -f1-3 /proc/loadavg)${rt[*]:+  under: ${rt[*]}}"
for r in $(seq "$rounds"); do
  OMP_NUM_THREADS=2 "${rt[@]}" "$out/bench_torch" | sed "s/^/torch $r /" >> "$out/all.txt"
  OMP_NUM_THREADS=2 LD_LIBRARY_PATH="$bdir/core" "${rt[@]}" "$out/bench_fw" | sed "s/^/fw $r /" >> "$out/all.txt"
  if [ "${#torch2[@]}" -gt 0 ]; then
    TORCHINDUCTOR_CACHE_DIR="$out/inductor-$r" OMP_NUM_THREADS=2 "${rt[@]}" "${torch2[@]}" 2>/dev/null |
      sed "s/^W7_first_call/W7_first_call_cold/; s/^/torch2 $r /" >> "$out/all.txt"
  fi
  [ "$eager_only" = 1 ] && continue
  # fw::compile: compiled W2/W3/W4 (ratios against the same libtorch figures), replay overhead,
  # and W7 (first call of the compiled W4 step) cold (empty kernel cache) then warm (a new process
  # finding the disk cache the cold one filled).
  cache="$out/fw-cache-$r"
  FW_CACHE_DIR="$cache" OMP_NUM_THREADS=2 "$bdir"/benchmarks/fw_bench_compile | sed "s/^/fw $r /" >> "$out/all.txt"
  rm -rf "$cache"
  FW_CACHE_DIR="$cache" OMP_NUM_THREADS=2 "$bdir"/benchmarks/fw_bench_compile w7 |
    sed "s/^\(W7[a-z_]*_first_call\)/\1_cold/; s/^/fw $r /" >> "$out/all.txt"
  FW_CACHE_DIR="$cache" OMP_NUM_THREADS=2 "$bdir"/benchmarks/fw_bench_compile w7 |
    sed "s/^\(W7[a-z_]*_first_call\)/\1_warm/; s/^/fw $r /" >> "$out/all.txt"
done
python3 - "$out/all.txt" <<'PY'
import sys, statistics, collections
vals = collections.defaultdict(lambda: collections.defaultdict(list))
units = {}
for line in open(sys.argv[1]):
    who, _, name, v, unit = line.split()[:5]
    vals[name][who].append(float(v)); units[name] = unit
torch2 = any(vals[n]["torch2"] for n in vals)
head = f"{'workload':34s} {'libtorch':>12s} {'fw':>12s} {'unit':>8s} {'fw speedup':>11s}"
if torch2:  # PyTorch 2: eager rows against its eager, "[compiled]" rows against torch.compile
    head += f" {'pytorch 2':>12s} {'vs pytorch 2':>13s}"
print(head)
def ratio(f, t, unit):
    return f / t if unit.endswith("/s") else t / f
for name in list(vals):
    if not vals[name]["fw"]:
        continue
    f = statistics.median(vals[name]["fw"])
    peer = name.split("[")[0]  # "W2_...[compiled]" is measured against libtorch's W2
    if peer not in vals or not vals[peer]["torch"]:
        row = f"{name:34s} {'-':>12s} {f:12.3f} {units[name]:>8s} {'-':>11s}"
    else:
        t = statistics.median(vals[peer]["torch"])
        row = f"{name:34s} {t:12.3f} {f:12.3f} {units[name]:>8s} {ratio(f, t, units[name]):10.2f}x"
    if torch2 and vals[name]["torch2"]:
        p2 = statistics.median(vals[name]["torch2"])
        row += f" {p2:12.3f} {ratio(f, p2, units[name]):12.2f}x"
    print(row)
PY
echo "load at the end: $(cut -d" " -f1-3 /proc/loadavg)"
