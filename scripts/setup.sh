#!/usr/bin/env bash
# Installs the Debian packages fw builds with (idempotent) and configures a Release build
# with ccache in ./build. Usage: scripts/setup.sh [extra cmake args]
set -euo pipefail
cd "$(dirname "$0")/.."

PKGS=(build-essential cmake ninja-build ccache pkg-config libeigen3-dev libsleef-dev libgtest-dev libbenchmark-dev)
PKGS+=(libdnnl-dev)  # optional at configure time: oneDNN float32 convolutions
PKGS+=(libfftw3-dev libsndfile1-dev libpng-dev)  # FFT, audio files, spectrogram pictures
PKGS+=(libespeak-ng-dev hunspell-kmr hunspell-kk hunspell-te hunspell-lt myspell-tl hunspell-en-us)  # fw-synth-corpus: speech synthesis, word lists
PKGS+=(libfst-dev sctk)  # fw_asr: decoding graphs (OpenFst), sclite for the WER cross-check
missing=()
for p in "${PKGS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  echo "setup: installing ${missing[*]}"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}" >/dev/null
fi

cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release "$@" >/dev/null
echo "setup: configured ./build (Release, ccache)"
