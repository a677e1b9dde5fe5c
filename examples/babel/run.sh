#!/usr/bin/env bash
# The Babel-style multilingual recipe (examples/babel/README.md): data prep -> features -> training
# -> evaluation -> comparison table, each stage skipping work that is already done.
#
#   examples/babel/run.sh                      # demo size (the scripts/demo.sh configuration)
#   examples/babel/run.sh --size full          # paper-size models on a larger synthesised corpus
#   examples/babel/run.sh --data-root /path/to/data --langs a,b,c   # existing Kaldi data dirs
#   examples/babel/run.sh --stage 2 --stop-stage 2 --systems vgg-multi   # one stage, one system
#
# Options (defaults in brackets; --size picks the model/training presets, later options win):
#   --stage N, --stop-stage N  stages to run [0, 4]: 0 corpus, 1 features, 2 train, 3 eval, 4 table
#   --work DIR        where corpus, features and experiments go [build/recipes/babel]
#   --bin DIR         build dir holding examples/babel/fw-babel and tools/fw-synth-corpus [build]
#   --data-root DIR   existing data: DIR/<lang>/{phones.txt,train,dev,test} Kaldi data dirs with
#                     ali.txt (or ali.ark); skips synthesis
#   --langs LIST      [ku,kk,te,lt,tpi,ceb]
#   --speakers N --utts N --dev-speakers N --test-speakers N --corpus-seed N   synthesised corpus
#                     (speakers per language, utterances per speaker, held-out speakers)
#                     [demo 7 x 4 with 1 dev and 2 test speakers; full 12 x 50 with 1 and 2]
#   --systems LIST    comma-separated <kind>-<mono|multi>[-3scale], kind classic|vgg6|vgg8|vgg10|vgg
#                     (vgg = vgg10) [classic-mono,vgg-mono,vgg-multi,vgg-multi-3scale]
#   --width W --classic-width W --fc-dim N --num-fc N   model size [demo: 0.125, 0.25, 256, 3;
#                     full: 1, 1, 2048, 3]
#   --batch-norm 0|1  batch norm after each conv [1; the paper had none: --batch-norm 0]
#   --epochs N --batch-size N --lr X --lr-decay X --gamma X --optimizer sgd|adam|adam-sgd --seed N
#   --switch-epoch K --sgd-lr X   with --optimizer adam-sgd (both required there, unset otherwise):
#                     Adam (--lr) for epochs 1..K, then SGD with Nesterov momentum from --sgd-lr
#   --valid-frames N  dev frames per language scored after each epoch [demo 1000, full 4000]
#   --threads N|auto  fw threads; auto: 2 (at most nproc) unless other processes keep the CPUs
#                     busy, then 1 (sampled before each stage; README "Threads") [auto]
#   --compile 0|1     fw::compile the trunk and heads (1) or train eagerly (0) [0; README "fw::compile"]
#   --train-opts "..." extra fw-babel train options
set -euo pipefail

stage=0
stop_stage=4
work=build/recipes/babel
bin=build
data_root=
langs=ku,kk,te,lt,tpi,ceb
size=demo
speakers=
utts=
dev_speakers=
test_speakers=
corpus_seed=1
systems=classic-mono,vgg-mono,vgg-multi,vgg-multi-3scale
width=
classic_width=
fc_dim=
num_fc=
epochs=
batch_size=
lr=
lr_decay=
gamma=
optimizer=
switch_epoch=
sgd_lr=
seed=1
threads=auto
compile=
valid_frames=
batch_norm=
train_opts=

while [ $# -gt 0 ]; do
  opt=${1#--}
  [ "$opt" != "$1" ] && [ $# -ge 2 ] || { sed -n '2,32p' "$0" >&2; echo "run.sh: bad arguments at '$1'" >&2; exit 2; }
  var=${opt//-/_}
  case $var in
    stage|stop_stage|work|bin|data_root|langs|size|speakers|utts|dev_speakers|test_speakers|corpus_seed|systems|width|classic_width|fc_dim|\
    num_fc|epochs|batch_size|lr|lr_decay|gamma|optimizer|switch_epoch|sgd_lr|seed|threads|compile|valid_frames|batch_norm|train_opts)
      printf -v "$var" '%s' "$2" ;;
    *) echo "run.sh: unknown option --$opt" >&2; exit 2 ;;
  esac
  shift 2
done

# Presets. demo: reduced models and corpus for a 2-core CPU in minutes (scripts/demo.sh);
# full: the paper's layer sizes (vgg10 64..512 channels, 3 x 2048 FC) on a larger corpus.
case $size in
  demo)
    : "${speakers:=7}" "${utts:=4}" "${dev_speakers:=1}" "${test_speakers:=2}" "${width:=0.125}" "${classic_width:=$width}" "${fc_dim:=256}" "${num_fc:=3}"
    : "${epochs:=3}" "${batch_size:=64}" "${lr:=0.03}" "${lr_decay:=0.8}" "${gamma:=0.8}" "${optimizer:=sgd}"
    : "${valid_frames:=500}" "${batch_norm:=1}"
    ;;
  full)
    : "${speakers:=12}" "${utts:=50}" "${dev_speakers:=1}" "${test_speakers:=2}" "${width:=1}" "${classic_width:=$width}" "${fc_dim:=2048}" "${num_fc:=3}"
    : "${epochs:=10}" "${batch_size:=256}" "${lr:=0.01}" "${lr_decay:=0.85}" "${gamma:=0.8}" "${optimizer:=sgd}"
    : "${valid_frames:=4000}" "${batch_norm:=1}"
    ;;
  *) echo "run.sh: --size is demo or full" >&2; exit 2 ;;
esac
: "${compile:=0}"
export OMP_WAIT_POLICY=${OMP_WAIT_POLICY:-passive}  # see README "Threads"

FWB=$bin/examples/babel/fw-babel
SYNTH=$bin/tools/fw-synth-corpus
[ -x "$FWB" ] || { echo "run.sh: $FWB not found (build it: cmake --build $bin --target fw-babel)" >&2; exit 1; }
export FW_CACHE_DIR=${FW_CACHE_DIR:-$work/fw-cache}   # fw::compile's kernel cache
mkdir -p "$work"
t_start=$SECONDS
log() { printf '[run.sh %4ds] %s\n' $((SECONDS - t_start)) "$*"; }
IFS=, read -r -a LANGS <<<"$langs"

# --threads auto: 2 threads (at most nproc) unless other processes keep CPUs busy. The 4th field of
# /proc/loadavg counts runnable tasks right now (ourselves included), unlike the load averages,
# which still remember the build that just finished. OpenMP threads that share a core with
# another busy process wait for each other at every barrier, so then one thread is faster.
pick_threads() {
  if [ "$threads" != auto ]; then echo "$threads"; return; fi
  local n busy=0 i r
  n=$(nproc)
  for i in 1 2 3 4 5 6 7 8 9 10; do
    r=$(cut -d' ' -f4 /proc/loadavg)
    busy=$((busy + ${r%/*} - 1))
    sleep 0.05
  done
  # busy: runnable tasks besides cut over 10 samples; an idle machine reads ~5 (the sampling shell).
  local free=$(( n - (busy + 1) / 10 ))
  [ "$free" -gt 2 ] && free=2
  [ "$free" -lt 1 ] && free=1
  echo "$free"
}
IFS=, read -r -a SYSTEMS <<<"$systems"

if [ -z "$data_root" ]; then
  data_root=$work/corpus/data
  if [ "$stage" -le 0 ] && [ "$stop_stage" -ge 0 ]; then
    want="langs=$langs speakers=$speakers utts=$utts dev=$dev_speakers test=$test_speakers seed=$corpus_seed"
    if [ -f "$work/corpus/summary.tsv" ] && [ "$(cat "$work/corpus/options" 2>/dev/null)" = "$want" ]; then
      log "stage 0: corpus $work/corpus exists ($want)"
    else
      [ -x "$SYNTH" ] || { echo "run.sh: $SYNTH not found (needs libespeak-ng-dev; or pass --data-root)" >&2; exit 1; }
      log "stage 0: synthesising the corpus ($want)"
      rm -f "$work/corpus/options"
      "$SYNTH" --out "$work/corpus" --force --quiet --langs "$langs" --speakers-per-lang "$speakers" \
        --utts-per-speaker "$utts" --dev-speakers "$dev_speakers" --test-speakers "$test_speakers" --seed "$corpus_seed"
      echo "$want" >"$work/corpus/options"
      column -t "$work/corpus/summary.tsv" 2>/dev/null || cat "$work/corpus/summary.tsv"
    fi
  fi
fi

if [ "$stage" -le 1 ] && [ "$stop_stage" -ge 1 ]; then
  nt=$(pick_threads)
  log "stage 1: features (40-bin fbank + deltas + delta-deltas, per-speaker CMVN)"
  for l in "${LANGS[@]}"; do
    for s in train dev test; do
      [ -d "$data_root/$l/$s" ] || continue
      "$FWB" features --data "$data_root/$l/$s" --out "$work/feats/$l/$s" --threads "$nt"
    done
  done
fi

# System name -> fw-babel model options and the experiments it consists of.
system_model() {  # <system>
  local kind=${1%%-*} rest=${1#*-} scales=1
  [ "$kind" = vgg ] && kind=vgg10
  case $rest in *-3scale) scales=3 ;; esac
  local w=$width
  [ "$kind" = classic ] && w=$classic_width
  local bn=
  [ "$batch_norm" = 1 ] && bn=" --batch-norm"
  echo "--model $kind --width $w --fc-dim $fc_dim --num-fc $num_fc --scales $scales$bn"
}
system_exps() {  # <system>: "exp_dir lang_list" lines
  case $1 in
    *-mono*) for l in "${LANGS[@]}"; do echo "$work/exp/$1/$l $l"; done ;;
    *-multi*) echo "$work/exp/$1/all $langs" ;;
    *) echo "run.sh: system '$1' is neither -mono nor -multi" >&2; exit 2 ;;
  esac
}
compile_opt=
[ "$compile" = 0 ] && compile_opt=--no-compile
[ "$compile" = 1 ] && compile_opt=--compile
optim_opts=  # adam-sgd's phase options, passed only when given (fw-babel refuses them with sgd/adam)
[ -n "$switch_epoch" ] && optim_opts+=" --switch-epoch $switch_epoch"
[ -n "$sgd_lr" ] && optim_opts+=" --sgd-lr $sgd_lr"

if [ "$stage" -le 2 ] && [ "$stop_stage" -ge 2 ]; then
  for sys in "${SYSTEMS[@]}"; do
    nt=$(pick_threads)
    log "stage 2: training $sys ($(system_model "$sys"), $nt thread(s))"
    while read -r exp ls; do
      # shellcheck disable=SC2046,SC2086
      "$FWB" train --exp "$exp" --langs "$ls" --data-root "$data_root" --feat-root "$work/feats" \
        $(system_model "$sys") --epochs "$epochs" --batch-size "$batch_size" --lr "$lr" --lr-decay "$lr_decay" \
        --gamma "$gamma" --optimizer "$optimizer" $optim_opts --seed "$seed" --threads "$nt" --valid-frames "$valid_frames" \
        $compile_opt $train_opts
    done < <(system_exps "$sys")
  done
fi

if [ "$stage" -le 3 ] && [ "$stop_stage" -ge 3 ]; then
  for sys in "${SYSTEMS[@]}"; do
    nt=$(pick_threads)
    log "stage 3: evaluating $sys ($nt thread(s))"
    while read -r exp ls; do
      if [ -f "$exp/results.tsv" ] && [ "$exp/results.tsv" -nt "$exp/checkpoint.safetensors" ]; then
        echo "eval $exp: results.tsv is up to date"
        continue
      fi
      "$FWB" eval --exp "$exp" --threads "$nt"
    done < <(system_exps "$sys")
  done
fi

if [ "$stage" -le 4 ] && [ "$stop_stage" -ge 4 ]; then
  log "stage 4: comparison table ($work/table.txt)"
  "$FWB" table --exp-root "$work/exp" --systems "$systems" --split test --langs "$langs" | tee "$work/table.txt"
  cat <<EOF | tee -a "$work/table.txt"
Systems: <model>-<mono: one model per language | multi: shared trunk, one head per language>[-3scale:
±5/±10/±20-frame windows]. Models: $(for s in "${SYSTEMS[@]}"; do printf '%s = %s; ' "$s" "$(system_model "$s")"; done)
$epochs epochs of the training frames each. Synthesised corpus (fw-synth-corpus), phone targets:
not comparable to the paper's Babel WERs (examples/babel/README.md).
EOF
fi
log "done"
