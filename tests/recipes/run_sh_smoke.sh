#!/usr/bin/env bash
# Smoke test of examples/babel/run.sh (all stages, two systems, one tiny language) and of
# examples/swbd/run.sh (its default English corpus, binary alignments, loglikes archive).
# Usage: run_sh_smoke.sh BUILD_DIR
set -euo pipefail
build=$1
src=$(cd "$(dirname "$0")/../.." && pwd)
work=$(mktemp -d /tmp/fw_recipe_run_sh_XXXXXX)
trap 'rm -rf "$work"' EXIT
export FW_CACHE_DIR=${FW_CACHE_DIR:-$work/fw-cache}

"$src/examples/babel/run.sh" --bin "$build" --work "$work/babel" --langs tpi,kk --speakers 3 --utts 3 --dev-speakers 1 --test-speakers 1 \
  --systems classic-mono,vgg6-multi --epochs 1 --width 0.125 --classic-width 0.125 --fc-dim 64 --num-fc 1 \
  --valid-frames 200 --threads 1 --train-opts --quiet >"$work/babel.log" 2>&1 || { cat "$work/babel.log"; exit 1; }
table=$work/babel/table.txt
grep -q '^classic-mono ' "$table" && grep -q '^vgg6-multi ' "$table" || { cat "$work/babel.log"; exit 1; }
# Both systems have a frame accuracy for both languages and an average.
[ "$(grep -A3 '^Frame accuracy' "$table" | grep -cE '^(classic-mono|vgg6-multi) +[0-9.]+ +[0-9.]+ +[0-9.]+$')" = 2 ] ||
  { cat "$table"; exit 1; }
# Re-running skips every stage's work.
"$src/examples/babel/run.sh" --bin "$build" --work "$work/babel" --langs tpi,kk --speakers 3 --utts 3 --dev-speakers 1 --test-speakers 1 \
  --systems classic-mono,vgg6-multi --epochs 1 --width 0.125 --classic-width 0.125 --fc-dim 64 --num-fc 1 \
  --valid-frames 200 --threads 1 --train-opts --quiet >"$work/babel2.log" 2>&1
grep -q 'corpus .* exists' "$work/babel2.log" && grep -q 'cached' "$work/babel2.log" &&
  grep -q 'already trained' "$work/babel2.log" && grep -q 'up to date' "$work/babel2.log" ||
  { cat "$work/babel2.log"; exit 1; }

"$src/examples/swbd/run.sh" --bin "$build" --work "$work/swbd" --speakers 3 --utts 3 --model classic \
  --width 0.125 --fc-dim 64 --num-fc 1 --epochs 1 --threads 1 --train-opts --quiet >"$work/swbd.log" 2>&1 ||
  { cat "$work/swbd.log"; exit 1; }
ark=$(ls "$work"/swbd/exp/*/loglikes_test.ark)
scp=${ark%.ark}.scp
[ -s "$ark" ] && [ "$(wc -l <"$scp")" = 3 ] || { cat "$work/swbd.log"; exit 1; }
# Without --lang the bundled corpus is English, and the results are reported for it.
[ -s "$work/swbd/corpus/data/en/lexicon.txt" ] && grep -qE '^en[[:space:]]+test[[:space:]]' "$(dirname "$ark")/results.tsv" ||
  { cat "$work/swbd.log" "$(dirname "$ark")/results.tsv"; exit 1; }
echo "run.sh smoke test passed"
