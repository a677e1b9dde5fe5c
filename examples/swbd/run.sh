#!/usr/bin/env bash
# The single-language (Switchboard-style) hybrid recipe (examples/swbd/README.md): features ->
# training on frame alignments -> frame accuracy (and PER) -> log-likelihoods as a Kaldi archive.
#
#   examples/swbd/run.sh                                   # bundled synthesised corpus (English)
#   examples/swbd/run.sh --train-data K/data/train_nodup --train-ali "ark:ali-to-pdf ... |" \
#       --dev-data K/data/train_dev --dev-ali "ark:..." --decode-data K/data/eval2000 --num-classes 8000
#
# Options (defaults in brackets):
#   --stage N --stop-stage N   0 corpus, 1 features, 2 train, 3 eval, 4 loglikes [0, 4]
#   --work DIR         [build/recipes/swbd]
#   --bin DIR          build dir holding examples/swbd/fw-swbd and tools/fw-synth-corpus [build]
#   --lang L           bundled corpus language: en, or one of ku,kk,te,lt,tpi,ceb [en]
#   --speakers N --utts N      bundled corpus size [8 x 15]
#   --train-data DIR --train-ali SPEC   a Kaldi data dir and its frame alignments: a path or
#                      rspecifier of text ("utt id id ...", ali-to-pdf ark,t) or binary int32 ark
#   --dev-data DIR --dev-ali SPEC       held-out data with alignments (frame accuracy)
#   --test-data DIR --test-ali SPEC     optional: another scored set
#   --decode-data DIR  data dir whose log-likelihoods are written for Kaldi decoding [test data]
#   --num-classes N    output classes (pdfs: `tree-info tree | grep num-pdfs`); 0 = max id + 1 [0]
#   --phones FILE      phones.txt when the classes are phones (enables PER)
#   --lexicon FILE     lexicon.txt over those phones (enables WER with examples/asr's decoder)
#   --ali-tolerance N  frames by which alignments may differ from the features [0]
#   --model K --width W --fc-dim N --num-fc N --scales 1|3 --epochs N --batch-size N --lr X
#                      [vgg10 0.25 512 3 1, 4 epochs, 128, 0.03]
#   --optimizer sgd|adam|adam-sgd [sgd: Nesterov momentum]  --switch-epoch K --sgd-lr X (adam-sgd only,
#                      required there: Adam at --lr for epochs 1..K, then SGD from --sgd-lr; see
#                      examples/babel/README.md "Training")
#   --threads N|auto [auto: 2, or 1 while other processes keep a CPU busy]  --compile 0|1 [0]  --train-opts "..." (extra fw-swbd train options)
set -euo pipefail

stage=0
stop_stage=4
work=build/recipes/swbd
bin=build
lang=en
speakers=8
utts=15
train_data=
train_ali=
dev_data=
dev_ali=
test_data=
test_ali=
decode_data=
num_classes=0
phones=
lexicon=
ali_tolerance=0
model=vgg10
width=0.25
fc_dim=512
num_fc=3
scales=1
epochs=4
batch_size=128
lr=0.03
optimizer=
switch_epoch=
sgd_lr=
threads=auto
compile=0
train_opts=

while [ $# -gt 0 ]; do
  opt=${1#--}
  [ "$opt" != "$1" ] && [ $# -ge 2 ] || { sed -n '2,29p' "$0" >&2; echo "run.sh: bad arguments at '$1'" >&2; exit 2; }
  var=${opt//-/_}
  case $var in
    stage|stop_stage|work|bin|lang|speakers|utts|train_data|train_ali|dev_data|dev_ali|test_data|test_ali|\
    decode_data|num_classes|phones|lexicon|ali_tolerance|model|width|fc_dim|num_fc|scales|epochs|batch_size|lr|threads|\
    compile|optimizer|switch_epoch|sgd_lr|train_opts)
      printf -v "$var" '%s' "$2" ;;
    *) echo "run.sh: unknown option --$opt" >&2; exit 2 ;;
  esac
  shift 2
done

FWS=$bin/examples/swbd/fw-swbd
SYNTH=$bin/tools/fw-synth-corpus
[ -x "$FWS" ] || { echo "run.sh: $FWS not found (cmake --build $bin --target fw-swbd)" >&2; exit 1; }
export FW_CACHE_DIR=${FW_CACHE_DIR:-$work/fw-cache}
export OMP_WAIT_POLICY=${OMP_WAIT_POLICY:-passive}  # examples/babel/README.md, "Threads"
mkdir -p "$work"
t_start=$SECONDS
log() { printf '[swbd %4ds] %s\n' $((SECONDS - t_start)) "$*"; }
if [ "$threads" = auto ]; then  # as examples/babel/run.sh's pick_threads, once
  busy=0
  for i in 1 2 3 4 5 6 7 8 9 10; do r=$(cut -d' ' -f4 /proc/loadavg); busy=$((busy + ${r%/*} - 1)); sleep 0.05; done
  threads=$(( $(nproc) - (busy + 1) / 10 ))
  [ "$threads" -gt 2 ] && threads=2
  [ "$threads" -lt 1 ] && threads=1
  log "using $threads thread(s)"
fi

name=swbd
if [ -z "$train_data" ]; then
  name=$lang
  # The bundled default: one language of the synthesised corpus (English unless --lang), phone
  # alignments, with the training alignments converted to a binary Kaldi int32 archive as
  # ali-to-pdf would write them.
  c=$work/corpus
  train_data=$c/data/$lang/train dev_data=$c/data/$lang/dev test_data=$c/data/$lang/test
  train_ali=ark:$c/data/$lang/train/ali.ark dev_ali=$c/data/$lang/dev/ali.txt test_ali=$c/data/$lang/test/ali.txt
  phones=$c/data/$lang/phones.txt
  lexicon=$c/data/$lang/lexicon.txt
  if [ "$stage" -le 0 ] && [ "$stop_stage" -ge 0 ]; then
    want="lang=$lang speakers=$speakers utts=$utts"
    if [ -f "$c/summary.tsv" ] && [ "$(cat "$c/options" 2>/dev/null)" = "$want" ]; then
      log "stage 0: corpus $c exists ($want)"
    else
      [ -x "$SYNTH" ] || { echo "run.sh: $SYNTH not found (needs libespeak-ng-dev), or pass --train-data" >&2; exit 1; }
      log "stage 0: synthesising a one-language corpus ($want)"
      rm -f "$c/options"
      "$SYNTH" --out "$c" --force --quiet --langs "$lang" --speakers-per-lang "$speakers" --utts-per-speaker "$utts"
      "$FWS" copy-ali --in "$c/data/$lang/train/ali.txt" --out "ark:$c/data/$lang/train/ali.ark"
      echo "$want" >"$c/options"
    fi
  fi
fi
[ -n "$decode_data" ] || decode_data=${test_data:-$dev_data}
[ -n "$phones" ] && [ "$num_classes" = 0 ] && num_classes=$(grep -c . "$phones")

feats_of() { echo "$work/feats/$(basename "$1")"; }
if [ "$stage" -le 1 ] && [ "$stop_stage" -ge 1 ]; then
  log "stage 1: features"
  for d in "$train_data" "$dev_data" "$test_data" "$decode_data"; do
    [ -n "$d" ] || continue
    "$FWS" features --data "$d" --out "$(feats_of "$d")" --threads "$threads"
  done
fi

exp=$work/exp/$model-w$width-s$scales
if [ "$stage" -le 2 ] && [ "$stop_stage" -ge 2 ]; then
  log "stage 2: training $exp"
  args=(--exp "$exp" --lang-name "$name" --num-classes "$num_classes" --ali-tolerance "$ali_tolerance"
        --train-feats "scp:$(feats_of "$train_data")/feats.scp" --train-ali "$train_ali")
  [ -n "$dev_data" ] && [ -n "$dev_ali" ] && args+=(--dev-feats "scp:$(feats_of "$dev_data")/feats.scp" --dev-ali "$dev_ali")
  [ -n "$test_data" ] && [ -n "$test_ali" ] && args+=(--test-feats "scp:$(feats_of "$test_data")/feats.scp" --test-ali "$test_ali")
  [ -n "$phones" ] && args+=(--phones "$phones")
  if [ -n "$lexicon" ]; then  # word error rates with examples/asr's decoder (phone classes only)
    args+=(--lexicon "$lexicon" --train-text "$train_data/text")
    [ -n "$dev_data" ] && args+=(--dev-text "$dev_data/text")
    [ -n "$test_data" ] && args+=(--test-text "$test_data/text")
  fi
  [ "$compile" = 1 ] && args+=(--compile) || args+=(--no-compile)
  [ -n "$optimizer" ] && args+=(--optimizer "$optimizer")  # unset: fw-swbd's default (sgd)
  [ -n "$switch_epoch" ] && args+=(--switch-epoch "$switch_epoch")
  [ -n "$sgd_lr" ] && args+=(--sgd-lr "$sgd_lr")
  # shellcheck disable=SC2086
  "$FWS" train "${args[@]}" --model "$model" --width "$width" --fc-dim "$fc_dim" --num-fc "$num_fc" \
    --scales "$scales" --epochs "$epochs" --batch-size "$batch_size" --lr "$lr" --threads "$threads" $train_opts
fi

if [ "$stage" -le 3 ] && [ "$stop_stage" -ge 3 ]; then
  log "stage 3: evaluation"
  if [ -n "$phones" ]; then "$FWS" eval --exp "$exp" --threads "$threads"
  else "$FWS" eval --exp "$exp" --threads "$threads" --no-per --splits dev,test; fi
  column -t "$exp/results.tsv" 2>/dev/null || cat "$exp/results.tsv"
fi

if [ "$stage" -le 4 ] && [ "$stop_stage" -ge 4 ]; then
  out=$exp/loglikes_$(basename "$decode_data")
  log "stage 4: log-likelihoods of $decode_data -> $out.ark/.scp"
  "$FWS" loglikes --exp "$exp" --feats "scp:$(feats_of "$decode_data")/feats.scp" --out "ark,scp:$out.ark,$out.scp" \
    --threads "$threads"
  cat <<EOF
Kaldi decoding (in a Kaldi egs/swbd/s5c directory, with the tree/model the alignments came from):
  latgen-faster-mapped --max-active=7000 --beam=15 --lattice-beam=8 --acoustic-scale=0.1 \\
    --allow-partial=true --word-symbol-table=exp/tri4/graph_sw1_tg/words.txt \\
    exp/tri4_ali_nodup/final.mdl exp/tri4/graph_sw1_tg/HCLG.fst scp:$out.scp "ark:|gzip -c > lat.1.gz"
EOF
fi
log "done"
