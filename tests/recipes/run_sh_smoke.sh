#!/usr/bin/env bash
# Smoke test of examples/babel/run.sh (all stages, two systems, one tiny language; --optimizer
# adam-sgd passed through) and of examples/swbd/run.sh (its default English corpus, binary
# alignments, loglikes archive, Adam then SGD).
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
# Adam then SGD through run.sh (features and training only, the same corpus): Adam for epoch 1,
# SGD from epoch 2, announced in the training log.
"$src/examples/babel/run.sh" --bin "$build" --work "$work/babel-adam" --data-root "$work/babel/corpus/data" --langs tpi \
  --stage 1 --stop-stage 2 --systems classic-mono --epochs 2 --optimizer adam-sgd --lr 0.002 --switch-epoch 1 \
  --sgd-lr 0.01 --width 0.125 --classic-width 0.125 --fc-dim 64 --num-fc 1 --valid-frames 200 --threads 1 \
  >"$work/babel-adam.log" 2>&1 || { cat "$work/babel-adam.log"; exit 1; }
cfg=$work/babel-adam/exp/classic-mono/tpi/config.txt
grep -q 'epoch 2: switching from Adam to SGD (Nesterov momentum 0.9), lr 0.01$' "$work/babel-adam.log" &&
  grep -qx 'train.optimizer=adam-sgd' "$cfg" && grep -qx 'train.switch_epoch=1' "$cfg" && grep -qx 'train.sgd_lr=0.01' "$cfg" ||
  { cat "$work/babel-adam.log" "$cfg"; exit 1; }

"$src/examples/swbd/run.sh" --bin "$build" --work "$work/swbd" --speakers 3 --utts 3 --model classic \
  --width 0.125 --fc-dim 64 --num-fc 1 --epochs 2 --optimizer adam-sgd --lr 0.002 --switch-epoch 1 --sgd-lr 0.01 \
  --threads 1 --train-opts --quiet >"$work/swbd.log" 2>&1 || { cat "$work/swbd.log"; exit 1; }
ark=$(ls "$work"/swbd/exp/*/loglikes_test.ark)
cfg=$(dirname "$ark")/config.txt
grep -qx 'train.optimizer=adam-sgd' "$cfg" && grep -qx 'train.switch_epoch=1' "$cfg" && grep -qx 'train.sgd_lr=0.01' "$cfg" ||
  { cat "$work/swbd.log" "$cfg"; exit 1; }
scp=${ark%.ark}.scp
[ -s "$ark" ] && [ "$(wc -l <"$scp")" = 3 ] || { cat "$work/swbd.log"; exit 1; }
# Without --lang the bundled corpus is English, and the results are reported for it.
[ -s "$work/swbd/corpus/data/en/lexicon.txt" ] && grep -qE '^en[[:space:]]+test[[:space:]]' "$(dirname "$ark")/results.tsv" ||
  { cat "$work/swbd.log" "$(dirname "$ark")/results.tsv"; exit 1; }
echo "run.sh smoke test passed"
