#!/usr/bin/env bash
# W6 and the resampling targets: fw (bench_audio.cpp) against torchaudio (bench_torchaudio.py,
# Debian python3-torchaudio) on the same shapes, run alternately on 2 threads; prints one table
# (torchaudio time / fw time; > 1 means fw is faster). kaldi_pitch's peer is Kaldi (vosk's build,
# fetched from PyPI when reachable; the row is skipped otherwise).
# Usage: benchmarks/audio/compare.sh [rounds]
set -euo pipefail
cd "$(dirname "$0")/../.."
rounds="${1:-3}"
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT
# The peer: torchaudio plus OpenBLAS (with Debian's default reference BLAS, torch's GEMMs run at a
# few GFLOP/s and every model row would be 10-50x slower than torch really is).
for pkg in python3-torchaudio libopenblas0-openmp; do
  if ! dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed"; then
    echo "compare: installing $pkg for the peer"
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$pkg" >/dev/null
  fi
done
if [ -z "${VOSK_LIB:-}" ] && pip install -q --no-deps --target "$out/vosk" vosk==0.3.45 >/dev/null 2>&1; then
  export VOSK_LIB="$out/vosk/vosk/libvosk.so"
fi
scripts/setup.sh >/dev/null
cmake --build build --target fw_bench_audio >/dev/null
echo "rounds: $rounds  threads: 2  $(date -u +%F)  torchaudio $(/usr/bin/python3 -c 'import torchaudio; print(torchaudio.__version__)')"
for r in $(seq "$rounds"); do
  /usr/bin/python3 benchmarks/audio/bench_torchaudio.py 10 2 | sed "s/^/torchaudio /" >> "$out/all.txt"
  OMP_NUM_THREADS=2 build/benchmarks/fw_bench_audio 10 | sed "s/^/fw /" >> "$out/all.txt"
done
python3 - "$out/all.txt" <<'PY'
import sys, statistics, collections
vals = collections.defaultdict(lambda: collections.defaultdict(list))
for line in open(sys.argv[1]):
    who, name, v = line.split()[:3]
    vals[name][who].append(float(v))
print(f"{'workload (60 s of audio)':28s} {'torchaudio ms':>14s} {'fw ms':>10s} {'fw speedup':>11s}")
for name in vals:
    if not vals[name]["torchaudio"] or not vals[name]["fw"]:
        print(f"{name:28s} {'-':>14s} {statistics.median(vals[name]['fw'] or [0]):10.2f}   (no peer)")
        continue
    t, f = statistics.median(vals[name]["torchaudio"]), statistics.median(vals[name]["fw"])
    print(f"{name:28s} {t:14.2f} {f:10.2f} {t / f:10.2f}x")
PY
