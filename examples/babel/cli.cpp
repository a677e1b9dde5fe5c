// The fw-babel / fw-swbd command line: one subcommand per recipe stage.
#include <dirent.h>

#include <climits>
#include <cstdlib>

#include <algorithm>
#include <cstdio>
#include <iostream>

#include <fw/audio/kaldi_io.h>

#include "examples/babel/recipe.h"

namespace fw::recipe {

namespace {

const char* const kUsage = R"(usage: %1$s <command> [--option value ...]

commands (examples/babel/README.md has the details):
  features  --data DIR --out DIR [--num-mel-bins 40] [--no-cmvn] [--norm-vars] [--force]
            Kaldi data dir -> fbank + deltas + delta-deltas with per-speaker CMVN, as
            DIR/feats.ark + feats.scp (skipped when DIR/stamp matches: --force recomputes)
  train     --exp DIR  languages, either
              --langs ku,kk,... --data-root CORPUS/data --feat-root FEATS
                (CORPUS/data/<lang>/{phones.txt,<split>/ali.txt}, FEATS/<lang>/<split>/feats.scp)
            or one language given explicitly
              [--lang-name NAME] --train-feats RSPEC --train-ali RSPEC [--dev-feats R --dev-ali R]
              [--test-feats R --test-ali R] [--num-classes N] [--phones phones.txt]
              [--lexicon lexicon.txt --train-text T --dev-text T --test-text T] (for WER)
            model:    --model classic|vgg6|vgg8|vgg10 (vgg10) --width 1.0 --fc-dim 2048 --num-fc 3
                      --scales 1|3 (1) [--batch-norm] --init kaiming|torch7
            training: --epochs 4 --frames-per-epoch N (all training frames) --batch-size 256
                      --optimizer sgd|adam|adam-sgd --lr 0.02 --lr-decay 0.7 --momentum 0.9 --weight-decay 0
                      --gamma 0.8 --lang-weighting frames|uniform --seed 1 --threads N
                      --compile (fw::compile; default eager = --no-compile) --autocast (bfloat16 products and
                      convolutions, fw::AutocastGuard) --no-resume --log-every 50 --valid-frames 4000 --quiet
                      --ali-tolerance 0 --skip-unaligned --max-utts N --stop-after-epochs N
                      adam-sgd (Adam, then SGD fine-tuning) also needs --switch-epoch K (1 <= K < epochs:
                      Adam for epochs 1..K) and --sgd-lr X (lr of epoch K+1, then x lr-decay per epoch)
  eval      --exp DIR [--splits dev,test] [--tune-split dev] [--penalties 0,1,2,...]
            [--acoustic-scale 1] [--no-per] [--no-wer] [--wer-scales 0.1,0.2,0.4] [--wer-beam 12]
            [--threads N]   -> DIR/results.tsv (WER needs fw_asr, a lexicon and transcripts)
  loglikes  --exp DIR --feats RSPEC --out WSPEC [--lang NAME] [--acoustic-scale 1] [--threads N]
            log posterior - log prior per frame, a Kaldi float matrix archive for Kaldi decoders
  table     --exp-root DIR --systems a,b,... [--labels A,B,...] [--split test] [--langs ku,kk,...]
            DIR/<system>/results.tsv or DIR/<system>/*/results.tsv (one model per language)
  copy-ali  --in SPEC --out WSPEC
            alignments (text "utt id id ..." or binary ark) -> a Kaldi int32-vector archive
  model     --model ... --width ... --fc-dim ... --num-fc ... --scales ... --classes 40[,38,...]
            print the layer table and parameter counts
)";

std::string absolute_path(const std::string& p) {
  char buf[PATH_MAX];
  FW_CHECK(::realpath(p.c_str(), buf) != nullptr, "cannot find ", p);
  return buf;
}

ModelSpec model_spec(Args& a) {
  ModelSpec m;
  m.kind = a.str("model", m.kind);
  m.width = a.real("width", m.width);
  m.fc_dim = a.integer("fc-dim", m.fc_dim);
  m.num_fc = a.integer("num-fc", m.num_fc);
  m.scales = a.integer("scales", m.scales);
  m.batch_norm = a.flag("batch-norm");
  m.init = a.str("init", m.init);
  return m;
}

std::vector<LangSpec> lang_specs(Args& a) {
  std::vector<LangSpec> langs;
  if (a.has("langs")) {
    // Absolute paths: the experiment's config (and so evaluation) must not depend on the cwd.
    const std::string data = absolute_path(a.required("data-root")), feats = absolute_path(a.required("feat-root"));
    for (const auto& name : split(a.str("langs", ""), ',')) {
      LangSpec L;
      L.name = name;
      L.phones = data + "/" + name + "/phones.txt";
      L.lexicon = data + "/" + name + "/lexicon.txt";
      if (!file_exists(L.lexicon)) L.lexicon.clear();
      if (file_exists(L.phones)) {
        L.num_classes = int64_t(read_phones(L.phones).size());
      } else {
        L.phones.clear();
      }
      for (const char* s : {"train", "dev", "test"}) {
        std::string scp = feats + "/" + name + "/" + s + "/feats.scp";
        std::string ali = data + "/" + name + "/" + s + "/ali.txt";
        if (!file_exists(ali)) ali = data + "/" + name + "/" + s + "/ali.ark";
        std::string text = data + "/" + name + "/" + s + "/text";
        if (!file_exists(scp)) continue;
        L.splits[s] = {"scp:" + scp, file_exists(ali) ? (ali.back() == 'k' ? "ark:" + ali : ali) : "",
                       file_exists(text) ? text : ""};
      }
      FW_CHECK(L.splits.count("train"), "language ", name, ": no features ", feats, "/", name,
               "/train/feats.scp (run the features stage)");
      langs.push_back(L);
    }
    return langs;
  }
  LangSpec L;
  L.name = a.str("lang-name", "lang");
  L.num_classes = a.integer("num-classes", 0);
  L.phones = a.str("phones", "");
  L.lexicon = a.str("lexicon", "");
  if (!L.phones.empty() && L.num_classes == 0) L.num_classes = int64_t(read_phones(L.phones).size());
  for (const char* s : {"train", "dev", "test"}) {
    std::string f = a.str(std::string(s) + "-feats", ""), al = a.str(std::string(s) + "-ali", "");
    std::string tx = a.str(std::string(s) + "-text", "");
    if (!f.empty()) L.splits[s] = {f, al, tx};
  }
  FW_CHECK(L.splits.count("train"), "give --langs (with --data-root, --feat-root) or --train-feats and --train-ali");
  langs.push_back(L);
  return langs;
}

std::vector<double> parse_reals(const std::string& s) {
  std::vector<double> v;
  for (const auto& x : split(s, ',')) v.push_back(std::atof(x.c_str()));
  return v;
}

int cmd_features(Args& a) {
  FeatureOptions o;
  const std::string data = a.required("data"), out = a.required("out");
  o.num_mel_bins = a.integer("num-mel-bins", o.num_mel_bins);
  o.cmvn = !a.flag("no-cmvn");
  o.norm_vars = a.flag("norm-vars");
  o.force = a.flag("force");
  int64_t threads = a.integer("threads", 0);
  a.check_all_used();
  if (threads > 0) fw::set_num_threads(int(threads));
  FeatureResult r = compute_features(data, out, o);
  std::printf("features %s -> %s: %lld utterances, %lld frames%s (%.1f s)\n", data.c_str(), out.c_str(),
              (long long)r.utterances, (long long)r.frames, r.cached ? ", cached" : "", r.seconds);
  return 0;
}

int cmd_train(Args& a) {
  TrainOptions o;
  o.exp = a.required("exp");
  o.langs = lang_specs(a);
  o.model = model_spec(a);
  o.epochs = a.integer("epochs", o.epochs);
  o.frames_per_epoch = a.integer("frames-per-epoch", o.frames_per_epoch);
  o.batch_size = a.integer("batch-size", o.batch_size);
  o.optimizer = a.str("optimizer", o.optimizer);
  o.lr = a.real("lr", o.lr);
  o.switch_epoch = a.integer("switch-epoch", o.switch_epoch);
  o.sgd_lr = a.real("sgd-lr", o.sgd_lr);
  o.lr_decay = a.real("lr-decay", o.lr_decay);
  o.momentum = a.real("momentum", o.momentum);
  o.weight_decay = a.real("weight-decay", o.weight_decay);
  o.gamma = a.real("gamma", o.gamma);
  o.lang_weighting = a.str("lang-weighting", o.lang_weighting);
  o.seed = uint64_t(a.integer("seed", int64_t(o.seed)));
  o.threads = a.integer("threads", o.threads);
  if (a.has("compile")) o.compile = a.flag("compile");
  if (a.has("no-compile")) o.compile = !a.flag("no-compile");
  o.autocast = a.flag("autocast");
  o.resume = !a.flag("no-resume");
  o.log_every = a.integer("log-every", o.log_every);
  o.valid_frames = a.integer("valid-frames", o.valid_frames);
  o.progress = !a.flag("quiet");
  o.load.ali_tolerance = a.integer("ali-tolerance", o.load.ali_tolerance);
  o.load.skip_unaligned = a.flag("skip-unaligned");
  o.load.max_utts = a.integer("max-utts", o.load.max_utts);
  o.stop_after_epochs = a.integer("stop-after-epochs", 0);
  a.check_all_used();
  TrainResult r = train(o);
  if (r.already_done) {
    std::printf("train %s: already trained (%lld epochs in the checkpoint)\n", o.exp.c_str(), (long long)r.first_epoch);
  } else if (!r.epochs.empty()) {
    const EpochLog& e = r.epochs.back();
    std::printf("train %s: epoch %lld, loss %.4f, frame acc %.1f%%, dev frame acc %.1f%%, %.0f frames/s\n",
                o.exp.c_str(), (long long)e.epoch, e.loss, 100 * e.accuracy, 100 * e.valid_accuracy, e.frames_per_second);
  }
  return 0;
}

int cmd_eval(Args& a) {
  EvalOptions o;
  const std::string exp = a.required("exp");
  if (a.has("splits")) o.splits = split(a.str("splits", ""), ',');
  o.tune_split = a.str("tune-split", o.tune_split);
  if (a.has("penalties")) o.penalties = parse_reals(a.str("penalties", ""));
  o.acoustic_scale = a.real("acoustic-scale", o.acoustic_scale);
  o.per = !a.flag("no-per");
  o.wer = !a.flag("no-wer");
  if (a.has("wer-scales")) o.wer_scales = parse_reals(a.str("wer-scales", ""));
  o.wer_beam = a.real("wer-beam", o.wer_beam);
  o.threads = a.integer("threads", 0);
  a.check_all_used();
  for (const auto& r : evaluate(exp, o)) {
    char per[32] = "-", wer[48] = "-";
    if (r.per >= 0) std::snprintf(per, sizeof per, "%.2f%% (penalty %g)", r.per, r.penalty);
    if (r.wer >= 0) std::snprintf(wer, sizeof wer, "%.2f%% (acoustic scale %g)", r.wer, r.wer_scale);
    std::printf("eval %s %s %s: %lld frames, frame acc %.2f%%, PER %s, WER %s\n", exp.c_str(), r.lang.c_str(),
                r.split.c_str(), (long long)r.frames, r.frame_accuracy, per, wer);
  }
  return 0;
}

int cmd_loglikes(Args& a) {
  const std::string exp = a.required("exp"), feats = a.required("feats"), out = a.required("out");
  const std::string lang = a.str("lang", "");
  const double scale = a.real("acoustic-scale", 1.0);
  const int64_t threads = a.integer("threads", 0);
  a.check_all_used();
  int64_t n = write_loglikes(exp, lang, feats, out, scale, threads);
  std::printf("loglikes %s -> %s: %lld utterances\n", feats.c_str(), out.c_str(), (long long)n);
  return 0;
}

int cmd_table(Args& a) {
  const std::string root = a.required("exp-root");
  auto names = split(a.required("systems"), ',');
  auto labels = a.has("labels") ? split(a.str("labels", ""), ',') : names;
  const std::string split_name = a.str("split", "test");
  const auto order = split(a.str("langs", ""), ',');
  a.check_all_used();
  FW_CHECK(labels.size() == names.size(), "--labels needs one label per system");
  std::vector<TableSystem> systems;
  for (size_t i = 0; i < names.size(); i++) {
    TableSystem s;
    s.label = labels[i];
    const std::string dir = root + "/" + names[i];
    if (file_exists(dir + "/results.tsv")) s.exps.push_back(dir);
    if (DIR* d = ::opendir(dir.c_str())) {
      std::vector<std::string> subs;
      while (dirent* e = ::readdir(d)) {
        std::string n = e->d_name;
        if (n != "." && n != ".." && file_exists(dir + "/" + n + "/results.tsv")) subs.push_back(dir + "/" + n);
      }
      ::closedir(d);
      std::sort(subs.begin(), subs.end());
      s.exps.insert(s.exps.end(), subs.begin(), subs.end());
    }
    systems.push_back(s);
  }
  std::fputs(comparison_table(systems, split_name, order).c_str(), stdout);
  return 0;
}

int cmd_copy_ali(Args& a) {
  const std::string in = a.required("in"), out = a.required("out");
  a.check_all_used();
  auto ali = fw::audio::kaldi_io::read_alignments(in);
  fw::audio::kaldi_io::Int32VectorWriter w(out);
  for (const auto& [utt, ids] : ali) w.write(utt, ids);
  w.close();
  std::printf("copy-ali %s -> %s: %zu utterances\n", in.c_str(), out.c_str(), ali.size());
  return 0;
}

int cmd_model(Args& a) {
  ModelSpec m = model_spec(a);
  std::vector<int64_t> classes;
  for (const auto& c : split(a.str("classes", "40"), ',')) classes.push_back(std::atoll(c.c_str()));
  const int64_t bins = a.integer("num-mel-bins", 40);
  a.check_all_used();
  fw::models::AcousticCnn net(model_config(m, classes, 3, bins));
  net->print_summary(std::cout);
  return 0;
}

}  // namespace

int recipe_main(int argc, char** argv, const std::string& program) {
  if (argc < 2 || std::string(argv[1]) == "--help" || std::string(argv[1]) == "-h" ||
      std::string(argv[1]) == "help") {
    std::printf(kUsage, program.c_str());
    return argc < 2 ? 2 : 0;
  }
  const std::string cmd = argv[1];
  try {
    Args a(argc, argv, 2);
    if (cmd == "features") return cmd_features(a);
    if (cmd == "train") return cmd_train(a);
    if (cmd == "eval") return cmd_eval(a);
    if (cmd == "loglikes") return cmd_loglikes(a);
    if (cmd == "table") return cmd_table(a);
    if (cmd == "model") return cmd_model(a);
    if (cmd == "copy-ali") return cmd_copy_ali(a);
    std::fprintf(stderr, "%s: unknown command '%s' (features, train, eval, loglikes, table, copy-ali, model; --help)\n",
                 program.c_str(), cmd.c_str());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "\n%s %s: error: %s\n", program.c_str(), cmd.c_str(), e.what());
    return 1;
  }
}

}  // namespace fw::recipe
