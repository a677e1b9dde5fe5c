// Training stage: mixed-language minibatches of context windows, frames drawn with p ∝ f^γ, SGD
// with Nesterov momentum (or Adam, or Adam then SGD), the trunk and heads through fw::compile (or
// eagerly), a checkpoint after every epoch from which training resumes exactly, progress lines and
// CSV logs.
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <random>
#include <sstream>

#include <fw/jit.h>
#include <fw/serialize.h>

#include "examples/babel/recipe.h"

namespace fw::recipe {

namespace fm = fw::models;

fm::ModelConfig model_config(const ModelSpec& s, const std::vector<int64_t>& classes, int64_t channels, int64_t bins) {
  fm::ModelKind kind;
  if (s.kind == "classic") kind = fm::ModelKind::kClassic;
  else if (s.kind == "vgg6") kind = fm::ModelKind::kVgg6;
  else if (s.kind == "vgg8") kind = fm::ModelKind::kVgg8;
  else if (s.kind == "vgg10") kind = fm::ModelKind::kVgg10;
  else FW_CHECK(false, "unknown model kind '", s.kind, "' (classic, vgg6, vgg8, vgg10)");
  FW_CHECK(s.scales == 1 || s.scales == 3, "scales must be 1 or 3, got ", s.scales);
  FW_CHECK(s.init == "kaiming" || s.init == "torch7", "unknown init '", s.init, "' (kaiming, torch7)");
  auto cfg = fm::ModelConfig()
                 .kind(kind)
                 .languages(classes)
                 .width(s.width)
                 .fc_dim(s.fc_dim)
                 .num_fc(s.num_fc)
                 .in_channels(channels * s.scales)
                 .num_freq(bins)
                 .batch_norm(s.batch_norm)
                 .init(s.init == "torch7" ? fm::InitScheme::kTorch7 : fm::InitScheme::kKaiming);
  if (s.scales == 3) cfg.context(fm::ContextSpec::multiscale().num_frames());
  fm::validate(cfg);
  return cfg;
}

fm::ContextSpec context_spec(const ModelSpec& s) {
  if (s.scales == 3) return fm::ContextSpec::multiscale();
  return fm::ContextSpec::centered(s.kind == "classic" ? 11 : 16);
}

// ---------------------------------------------------------------------------------------------
// Configuration files
// ---------------------------------------------------------------------------------------------

namespace {

std::string fmt(double x) {
  std::ostringstream o;
  o.precision(17);
  o << x;
  return o.str();
}

// Keys that may change between a checkpoint and a resumed run without changing what is computed.
const char* const kRunOnlyKeys[] = {"train.epochs", "train.threads", "train.compile", "train.log_every",
                                    "train.progress", "train.valid_frames", "train.stop_after_epochs"};

KeyValues training_relevant(KeyValues kv) {
  for (const char* k : kRunOnlyKeys) kv.erase(k);
  return kv;
}

}  // namespace

KeyValues train_config(const TrainOptions& o) {
  KeyValues kv;
  kv["langs"] = std::to_string(o.langs.size());
  for (size_t l = 0; l < o.langs.size(); l++) {
    const auto& L = o.langs[l];
    std::string p = "lang." + std::to_string(l) + ".";
    kv[p + "name"] = L.name;
    kv[p + "classes"] = std::to_string(L.num_classes);
    kv[p + "phones"] = L.phones;
    kv[p + "lexicon"] = L.lexicon;
    for (const auto& [split, s] : L.splits) {
      kv[p + split + ".feats"] = s.feats;
      kv[p + split + ".ali"] = s.ali;
      kv[p + split + ".text"] = s.text;
    }
  }
  kv["model.kind"] = o.model.kind;
  kv["model.width"] = fmt(o.model.width);
  kv["model.fc_dim"] = std::to_string(o.model.fc_dim);
  kv["model.num_fc"] = std::to_string(o.model.num_fc);
  kv["model.scales"] = std::to_string(o.model.scales);
  kv["model.batch_norm"] = o.model.batch_norm ? "1" : "0";
  kv["model.init"] = o.model.init;
  kv["load.channels"] = std::to_string(o.load.channels);
  kv["load.ali_tolerance"] = std::to_string(o.load.ali_tolerance);
  kv["load.skip_unaligned"] = o.load.skip_unaligned ? "1" : "0";
  kv["load.max_utts"] = std::to_string(o.load.max_utts);
  kv["train.epochs"] = std::to_string(o.epochs);
  kv["train.frames_per_epoch"] = std::to_string(o.frames_per_epoch);
  kv["train.batch_size"] = std::to_string(o.batch_size);
  kv["train.optimizer"] = o.optimizer;
  kv["train.lr"] = fmt(o.lr);
  kv["train.momentum"] = fmt(o.momentum);
  kv["train.weight_decay"] = fmt(o.weight_decay);
  kv["train.lr_decay"] = fmt(o.lr_decay);
  if (o.optimizer == "adam-sgd") {  // only here, so that sgd/adam checkpoints of older runs still match
    kv["train.switch_epoch"] = std::to_string(o.switch_epoch);
    kv["train.sgd_lr"] = fmt(o.sgd_lr);
  }
  kv["train.gamma"] = fmt(o.gamma);
  kv["train.lang_weighting"] = o.lang_weighting;
  kv["train.seed"] = std::to_string(o.seed);
  kv["train.threads"] = std::to_string(o.threads);
  kv["train.compile"] = o.compile ? "1" : "0";
  if (o.autocast) kv["train.autocast"] = "1";  // only when set: float32 checkpoints of older runs still match
  kv["train.log_every"] = std::to_string(o.log_every);
  kv["train.valid_frames"] = std::to_string(o.valid_frames);
  kv["train.progress"] = o.progress ? "1" : "0";
  kv["train.stop_after_epochs"] = std::to_string(o.stop_after_epochs);
  return kv;
}

namespace {

TrainOptions options_from_config(const KeyValues& kv, const std::string& exp, const std::string& where) {
  auto get = [&](const std::string& k) -> std::string {
    auto it = kv.find(k);
    FW_CHECK(it != kv.end(), where, ": missing key ", k);
    return it->second;
  };
  auto opt = [&](const std::string& k) -> std::string {
    auto it = kv.find(k);
    return it == kv.end() ? std::string() : it->second;
  };
  TrainOptions o;
  o.exp = exp;
  const int64_t n = std::atoll(get("langs").c_str());
  for (int64_t l = 0; l < n; l++) {
    std::string p = "lang." + std::to_string(l) + ".";
    LangSpec L;
    L.name = get(p + "name");
    L.num_classes = std::atoll(get(p + "classes").c_str());
    L.phones = get(p + "phones");
    L.lexicon = opt(p + "lexicon");
    for (const char* split : {"train", "dev", "test"})
      if (kv.count(p + split + ".feats"))
        L.splits[split] = {get(p + split + ".feats"), get(p + split + ".ali"), opt(p + split + ".text")};
    o.langs.push_back(L);
  }
  o.model.kind = get("model.kind");
  o.model.width = std::atof(get("model.width").c_str());
  o.model.fc_dim = std::atoll(get("model.fc_dim").c_str());
  o.model.num_fc = std::atoll(get("model.num_fc").c_str());
  o.model.scales = std::atoll(get("model.scales").c_str());
  o.model.batch_norm = get("model.batch_norm") == "1";
  o.model.init = get("model.init");
  o.load.channels = std::atoll(get("load.channels").c_str());
  o.load.ali_tolerance = std::atoll(get("load.ali_tolerance").c_str());
  o.load.skip_unaligned = get("load.skip_unaligned") == "1";
  o.load.max_utts = std::atoll(get("load.max_utts").c_str());
  o.epochs = std::atoll(get("train.epochs").c_str());
  o.batch_size = std::atoll(get("train.batch_size").c_str());
  o.seed = std::strtoull(get("train.seed").c_str(), nullptr, 10);
  return o;
}

}  // namespace

TrainOptions read_train_config(const std::string& exp) {
  return options_from_config(parse_key_values(read_text(exp + "/config.txt")), exp, exp + "/config.txt");
}

// ---------------------------------------------------------------------------------------------
// Checkpoints
// ---------------------------------------------------------------------------------------------

// Note [Checkpoints and exact resume]
// exp/checkpoint.safetensors is one file written atomically by fw::save (temporary file, fsync,
// rename) after every epoch: the model's parameters and buffers ("model.*"), the optimizer's
// state_dict ("optim.*": momentum buffers / Adam moments and step counts, learning rates), the
// input normalisation ("norm.*") and class counts ("counts.<l>"), with the epoch count and the
// training configuration as metadata. Everything random during training is a function of
// (seed, epoch): the frame samplers are reseeded with mix_seed(seed, 1, epoch, lang) and the
// language draws use mix_seed(seed, 2, epoch) at the start of every epoch, and nothing uses
// fw's global generator after the model is initialised. So the state at an epoch boundary is
// (model, optimizer, epoch), and a run resumed from epoch e computes the same losses, bit for
// bit, as an uninterrupted run (same thread count and compile mode; tests/recipes checks it).
// A crash mid-epoch loses that epoch only; the CSV logs are cut back to the checkpoint's epoch.

// Note [Adam then SGD]
// --optimizer adam-sgd --switch-epoch K --sgd-lr X runs Adam (lr · lr_decay^e) for the 0-based
// epochs e < K, then SGD with Nesterov momentum (--momentum, --weight-decay; lr X · lr_decay^(e-K))
// for e >= K: the paper's fast regime, Adam followed by SGD fine-tuning. The switch happens at the
// start of epoch K: a fresh SGD (no momentum yet) takes over the parameters, Adam's moments are
// dropped. So the checkpoint after epoch n holds the state of the optimizer that ran epoch n - 1:
// Adam's for n <= K (the one written at n = K too, just before the switch), SGD's for n > K. Its
// metadata "optimizer" names that phase (sgd | adam; every checkpoint has it), and a resumed run
// checks it and the optim.* entries against the phase its own configuration expects at epoch n
// before loading them. A run resumed from n <= K continues with Adam and switches at K exactly as
// an uninterrupted run does (the fresh SGD has no state to restore); one resumed from n > K
// restores SGD's momentum buffers. K and the SGD lr are part of the configuration, so a checkpoint
// of another K or lr is refused like any other configuration change.

namespace {

const char* const kCheckpoint = "checkpoint.safetensors";

void save_checkpoint(const std::string& exp, fm::AcousticCnn& net, const fw::optim::Optimizer& opt,
                     const std::string& phase, const Tensor& mean, const Tensor& stdv,
                     const std::vector<Tensor>& counts, int64_t epoch, const KeyValues& config) {
  TensorMap t;
  for (const auto& item : net->named_parameters()) t["model." + item.key()] = item.value().detach();
  for (const auto& item : net->named_buffers()) t["model." + item.key()] = item.value().detach();
  for (const auto& [k, v] : opt.state_dict()) t["optim." + k] = v;
  t["norm.mean"] = mean;
  t["norm.std"] = stdv;
  for (size_t l = 0; l < counts.size(); l++) t["counts." + std::to_string(l)] = counts[l];
  MetadataMap meta;
  meta["format"] = "fw-recipe-checkpoint-1";
  meta["epoch"] = std::to_string(epoch);
  meta["optimizer"] = phase;  // whose state the optim.* entries are: sgd | adam (Note [Adam then SGD])
  meta["config"] = format_key_values(config);
  fw::save(t, exp + "/" + kCheckpoint, meta);
}

struct Checkpoint {
  TensorMap tensors;
  int64_t epoch = 0;
  KeyValues config;
  std::string optimizer;  // "" in checkpoints written before the field existed
};

Checkpoint read_checkpoint(const std::string& path) {
  SafetensorsContents c = fw::load_with_metadata(path);
  FW_CHECK(c.metadata["format"] == "fw-recipe-checkpoint-1", path, " is not a recipe checkpoint");
  Checkpoint ck;
  ck.tensors = std::move(c.tensors);
  ck.epoch = std::atoll(c.metadata["epoch"].c_str());
  ck.config = parse_key_values(c.metadata["config"]);
  ck.optimizer = c.metadata["optimizer"];
  return ck;
}

// The optimizer (sgd | adam) that runs 0-based epoch e.
std::string phase_of(const TrainOptions& o, int64_t e) {
  if (o.optimizer == "adam-sgd") return e < o.switch_epoch ? "adam" : "sgd";
  return o.optimizer;
}

// The learning rate of 0-based epoch e.
double lr_of(const TrainOptions& o, int64_t e) {
  if (o.optimizer == "adam-sgd" && e >= o.switch_epoch)
    return o.sgd_lr * std::pow(o.lr_decay, double(e - o.switch_epoch));
  return o.lr * std::pow(o.lr_decay, double(e));
}

// The optimizer options, checked before any data is read.
void check_optimizer_options(const TrainOptions& o) {
  FW_CHECK(o.optimizer == "sgd" || o.optimizer == "adam" || o.optimizer == "adam-sgd", "unknown optimizer '",
           o.optimizer, "' (sgd, adam, adam-sgd)");
  if (o.optimizer != "adam-sgd") {
    FW_CHECK(o.switch_epoch == 0, "--switch-epoch ", o.switch_epoch, " is for --optimizer adam-sgd only (now '",
             o.optimizer, "')");
    FW_CHECK(o.sgd_lr == 0, "--sgd-lr ", o.sgd_lr, " is for --optimizer adam-sgd only (now '", o.optimizer,
             "'; --lr is the learning rate)");
    return;
  }
  FW_CHECK(o.switch_epoch >= 1 && o.switch_epoch < o.epochs,
           "--optimizer adam-sgd needs --switch-epoch K with 1 <= K < --epochs (", o.epochs,
           "): K epochs of Adam, then SGD; got ", o.switch_epoch,
           o.switch_epoch >= o.epochs ? " (SGD would never run: use --optimizer adam)" : "");
  FW_CHECK(o.sgd_lr > 0 && std::isfinite(o.sgd_lr),
           "--optimizer adam-sgd needs --sgd-lr X > 0 (the SGD phase's learning rate; --lr is Adam's), got ",
           o.sgd_lr);
}

// The checkpoint's optimizer state must be the one `o` runs in its last epoch: the metadata field
// (required for adam-sgd) and the names of the optim.state.* entries.
void check_checkpoint_optimizer(const Checkpoint& ck, const TrainOptions& o, const std::string& path) {
  const std::string want = phase_of(o, ck.epoch - 1);
  auto describe = [&]() {
    std::string d = "--optimizer " + o.optimizer;
    if (o.optimizer == "adam-sgd") d += " --switch-epoch " + std::to_string(o.switch_epoch);
    return d + " has " + (want == "adam" ? "Adam" : "SGD") + " state after epoch " + std::to_string(ck.epoch);
  };
  if (ck.optimizer.empty())
    FW_CHECK(o.optimizer != "adam-sgd", path,
             ": the checkpoint does not record its optimizer (metadata 'optimizer'); ", describe());
  else
    FW_CHECK(ck.optimizer == want, path, ": the checkpoint holds ", ck.optimizer, " optimizer state, but ", describe());
  const std::vector<std::string> names = want == "adam"
                                             ? std::vector<std::string>{"step", "exp_avg", "exp_avg_sq", "max_exp_avg_sq"}
                                             : std::vector<std::string>{"momentum_buffer"};
  for (const auto& [k, v] : ck.tensors) {
    if (k.rfind("optim.", 0) != 0) continue;
    if (k.rfind("optim.param_groups.", 0) == 0) continue;
    FW_CHECK(k.rfind("optim.state.", 0) == 0, path, ": unexpected optimizer entry ", k);
    const std::string field = k.substr(k.rfind('.') + 1);
    FW_CHECK(std::find(names.begin(), names.end(), field) != names.end(), path, ": optimizer entry ", k,
             " is not ", want, " state (", describe(), ")");
  }
}

std::unique_ptr<fw::optim::Optimizer> make_optimizer(const std::string& kind, fm::AcousticCnn& net,
                                                     const TrainOptions& o, double lr) {
  if (kind == "sgd")
    return std::make_unique<fw::optim::SGD>(
        net->parameters(),
        fw::optim::SGDOptions(lr).momentum(o.momentum).nesterov(o.momentum > 0).weight_decay(o.weight_decay));
  return std::make_unique<fw::optim::Adam>(net->parameters(), fw::optim::AdamOptions(lr).weight_decay(o.weight_decay));
}

void load_model_tensors(fm::AcousticCnn& net, const TensorMap& t, const std::string& path) {
  NoGradGuard ng;
  auto copy = [&](const std::string& name, Tensor dst) {
    auto it = t.find("model." + name);
    FW_CHECK(it != t.end(), path, ": no tensor model.", name);
    FW_CHECK(it->second.sizes() == dst.sizes(), path, ": model.", name, " has the wrong shape");
    dst.copy_(it->second);
  };
  for (const auto& item : net->named_parameters()) copy(item.key(), item.value());
  for (const auto& item : net->named_buffers()) copy(item.key(), item.value());
}

// Keeps the header and the rows whose first column (epoch) is <= max_epoch.
void truncate_csv(const std::string& path, int64_t max_epoch) {
  if (!file_exists(path)) return;
  std::istringstream in(read_text(path));
  std::string line, out;
  bool header = true;
  while (std::getline(in, line)) {
    if (header || std::atoll(line.c_str()) <= max_epoch) out += line + "\n";
    header = false;
  }
  write_text_atomic(path, out);
}

void append_line(const std::string& path, const std::string& line) {
  std::ofstream f(path, std::ios::app);
  f << line << "\n";
}

// Compiled pieces: the trunk (one fixed batch shape) and each head (its share of the batch varies,
// so fw::compile makes that dimension symbolic after the first change).
struct TrunkFn {
  std::shared_ptr<nn::SequentialImpl> trunk;
  Tensor operator()(const Tensor& x) const { return trunk->forward(x); }
};
struct HeadFn {
  std::shared_ptr<nn::SequentialImpl> head;
  Tensor operator()(const Tensor& x) const { return head->forward(x); }
};

std::vector<int64_t> to_vec(const Tensor& t) {
  Tensor c = t.to(kLong).contiguous();
  const int64_t* p = c.data_ptr<int64_t>();
  return std::vector<int64_t>(p, p + c.numel());
}

// Frame accuracy of `net` on up to n frames of each language's dev data (evenly spaced frames).
double valid_accuracy(fm::AcousticCnn& net, const std::vector<FrameData>& dev, const fm::ContextSpec& spec,
                      int64_t n) {
  InferenceMode im;
  net->eval();
  int64_t correct = 0, total = 0;
  for (size_t l = 0; l < dev.size(); l++) {
    const FrameData& d = dev[l];
    if (d.num_frames() == 0 || d.labels.empty()) continue;
    const int64_t m = std::min(n, d.num_frames());
    std::vector<int64_t> frames(static_cast<size_t>(m));
    for (int64_t i = 0; i < m; i++) frames[size_t(i)] = i * d.num_frames() / m;
    for (int64_t b = 0; b < m; b += 1024) {
      std::vector<int64_t> part(frames.begin() + b, frames.begin() + std::min(m, b + 1024));
      Tensor logits = net->forward(gather_windows(d, part, spec), int64_t(l));
      auto pred = to_vec(logits.argmax(1));
      for (size_t i = 0; i < part.size(); i++) correct += pred[i] == d.labels[size_t(part[i])];
      total += int64_t(part.size());
    }
  }
  net->train();
  return total ? double(correct) / double(total) : -1;
}

}  // namespace

TrainResult train(const TrainOptions& o) {
  FW_CHECK(!o.exp.empty(), "train: no experiment directory");
  FW_CHECK(!o.langs.empty(), "train: no languages");
  FW_CHECK(o.batch_size > 0 && o.epochs > 0, "train: batch size and epochs must be positive");
  check_optimizer_options(o);
  FW_CHECK(o.lang_weighting == "frames" || o.lang_weighting == "uniform", "unknown language weighting '",
           o.lang_weighting, "' (frames, uniform)");
  if (o.threads > 0) fw::set_num_threads(int(o.threads));
  make_dirs(o.exp);
  TrainResult result;
  const size_t L = o.langs.size();

  // Data.
  std::vector<FrameData> train_data(L), dev_data(L);
  std::vector<LangSpec> langs = o.langs;
  for (size_t l = 0; l < L; l++) {
    FW_CHECK(langs[l].splits.count("train"), "language ", langs[l].name, " has no training data");
    const SplitSpec& tr = langs[l].splits.at("train");
    FW_CHECK(!tr.ali.empty(), "language ", langs[l].name, " has no training alignments");
    train_data[l] = load_frames(tr, o.load);
    int64_t max_id = *std::max_element(train_data[l].labels.begin(), train_data[l].labels.end());
    if (langs[l].num_classes <= 0) langs[l].num_classes = max_id + 1;
    FW_CHECK(max_id < langs[l].num_classes, "language ", langs[l].name, ": class id ", max_id,
             " in the training alignments, but ", langs[l].num_classes, " classes");
    if (o.valid_frames > 0 && langs[l].splits.count("dev") && !langs[l].splits.at("dev").ali.empty())
      dev_data[l] = load_frames(langs[l].splits.at("dev"), o.load);
  }
  TrainOptions resolved = o;
  resolved.langs = langs;
  const KeyValues config = train_config(resolved);

  // Resume or start.
  const std::string ck_path = o.exp + "/" + kCheckpoint;
  Checkpoint ck;
  bool resuming = false;
  if (o.resume && file_exists(ck_path)) {
    ck = read_checkpoint(ck_path);
    if (training_relevant(ck.config) != training_relevant(config)) {
      std::string diff;
      KeyValues a = training_relevant(ck.config), b = training_relevant(config);
      for (const auto& [k, v] : b)
        if (!a.count(k) || a[k] != v) diff += " " + k + " (checkpoint '" + (a.count(k) ? a[k] : "") + "', now '" + v + "')";
      for (const auto& [k, v] : a)  // keys only the checkpoint has (train.autocast, adam-sgd's)
        if (!b.count(k)) diff += " " + k + " (checkpoint '" + v + "', now unset)";
      FW_CHECK(false, o.exp, " holds a checkpoint of another configuration:", diff,
               "; use another --exp or --no-resume");
    }
    if (ck.epoch < o.epochs) check_checkpoint_optimizer(ck, o, ck_path);
    resuming = true;
  }
  write_text_atomic(o.exp + "/config.txt", format_key_values(config));
  const std::string step_csv = o.exp + "/train_log.csv", epoch_csv = o.exp + "/epochs.csv";
  if (resuming) {
    truncate_csv(step_csv, ck.epoch);
    truncate_csv(epoch_csv, ck.epoch);
    if (ck.epoch >= o.epochs) {
      result.already_done = true;
      result.first_epoch = ck.epoch;
      return result;
    }
  } else {
    write_text_atomic(step_csv, "epoch,step,global_step,loss,frame_acc,frames_per_s,lr,elapsed_s\n");
    write_text_atomic(epoch_csv, "epoch,loss,frame_acc,valid_frame_acc,lr,frames_per_s,seconds\n");
  }

  // Input normalisation (global mean / std per channel and bin over the training frames).
  Tensor mean, stdv;
  {
    std::vector<const FrameData*> ptrs;
    for (auto& d : train_data) ptrs.push_back(&d);
    std::tie(mean, stdv) = feature_moments(ptrs);
    for (auto& d : train_data) d.feats = ((d.feats - mean) / stdv).contiguous();
    for (auto& d : dev_data)
      if (d.feats.defined()) d.feats = ((d.feats - mean) / stdv).contiguous();
  }
  std::vector<Tensor> counts(L);
  std::vector<int64_t> classes(L);
  for (size_t l = 0; l < L; l++) {
    classes[l] = langs[l].num_classes;
    std::vector<int64_t> c(size_t(classes[l]), 0);
    for (int64_t y : train_data[l].labels) c[size_t(y)]++;
    counts[l] = fw::tensor(c);
  }

  // Model and optimizer.
  const int64_t channels = train_data[0].feats.size(1), bins = train_data[0].feats.size(2);
  fw::manual_seed(mix_seed(o.seed, 0xA11CE));
  fm::AcousticCnn net(model_config(o.model, classes, channels, bins));
  const fm::ContextSpec spec = context_spec(o.model);
  // The optimizer of the phase the run is in: of epoch 0, or of the checkpoint's last epoch.
  std::string phase = phase_of(o, resuming ? ck.epoch - 1 : 0);
  std::unique_ptr<fw::optim::Optimizer> opt = make_optimizer(phase, net, o, o.lr);
  int64_t start_epoch = 0;
  if (resuming) {
    load_model_tensors(net, ck.tensors, ck_path);
    std::vector<std::pair<std::string, Tensor>> sd;
    for (const auto& [k, v] : ck.tensors)
      if (k.rfind("optim.", 0) == 0) sd.emplace_back(k.substr(6), v);
    opt->load_state_dict(sd);
    start_epoch = ck.epoch;
    ck.tensors.clear();
  }
  result.first_epoch = start_epoch;
  net->train();

  std::optional<fw::Compiled<TrunkFn>> ctrunk;
  std::vector<fw::Compiled<HeadFn>> cheads;
  if (o.compile) {
    ctrunk.emplace(fw::compile(TrunkFn{net->trunk.ptr()}));
    for (size_t l = 0; l < L; l++) cheads.push_back(fw::compile(HeadFn{net->heads->ptr<nn::SequentialImpl>(l)}));
  }

  // Samplers and language proportions.
  std::vector<fm::FrameSampler> samplers;
  int64_t total_frames = 0;
  std::vector<double> lang_cdf(L);
  for (size_t l = 0; l < L; l++) {
    samplers.emplace_back(train_data[l].labels, classes[l], o.gamma, 0);
    total_frames += train_data[l].num_frames();
  }
  {
    double acc = 0, sum = 0;
    for (size_t l = 0; l < L; l++) sum += o.lang_weighting == "uniform" ? 1.0 : double(train_data[l].num_frames());
    for (size_t l = 0; l < L; l++) {
      acc += (o.lang_weighting == "uniform" ? 1.0 : double(train_data[l].num_frames())) / sum;
      lang_cdf[l] = acc;
    }
    lang_cdf[L - 1] = 1.0;
  }
  const int64_t epoch_frames = o.frames_per_epoch > 0 ? o.frames_per_epoch : total_frames;
  const int64_t steps = std::max<int64_t>(1, (epoch_frames + o.batch_size - 1) / o.batch_size);
  const bool tty = ::isatty(2);
  std::string name = o.exp;
  while (name.size() > 1 && name.back() == '/') name.pop_back();
  if (name.find('/') != std::string::npos) {
    auto parts = split(name, '/');
    name = parts.size() >= 2 ? parts[parts.size() - 2] + "/" + parts.back() : parts.back();
  }

  const auto sum_opts = nn::functional::CrossEntropyFuncOptions().reduction(fw::kSum);
  int64_t epochs_run = 0;
  for (int64_t epoch = start_epoch; epoch < o.epochs; epoch++) {
    const double lr = lr_of(o, epoch);
    if (phase_of(o, epoch) != phase) {  // adam-sgd reaches --switch-epoch (Note [Adam then SGD])
      phase = phase_of(o, epoch);
      opt = make_optimizer(phase, net, o, lr);
      result.switched_at_epoch = epoch + 1;
      if (o.progress) {
        char mom[64] = "no momentum";
        if (o.momentum > 0) std::snprintf(mom, sizeof mom, "Nesterov momentum %g", o.momentum);
        std::fprintf(stderr, "%s[%s] epoch %lld: switching from Adam to SGD (%s), lr %g\n", tty ? "\r" : "",
                     name.c_str(), (long long)(epoch + 1), mom, lr);
        std::fflush(stderr);
      }
    }
    for (auto& g : opt->param_groups()) g.options().set_lr(lr);
    for (size_t l = 0; l < L; l++) samplers[l].reseed(mix_seed(o.seed, 1, uint64_t(epoch), l));
    std::mt19937_64 lang_rng(mix_seed(o.seed, 2, uint64_t(epoch)));
    const double t_epoch = now_seconds();
    double t_win = t_epoch, loss_win = 0, loss_epoch = 0;
    int64_t correct_win = 0, frames_win = 0, correct_epoch = 0, frames_epoch = 0;
    for (int64_t step = 0; step < steps; step++) {
      // Batch: languages drawn per frame, then frames of each language from its sampler.
      std::vector<int64_t> n_l(L, 0);
      for (int64_t i = 0; i < o.batch_size; i++) {
        double u = double(lang_rng() >> 11) * (1.0 / 9007199254740992.0);
        size_t l = 0;
        while (l + 1 < L && u >= lang_cdf[l]) l++;
        n_l[l]++;
      }
      std::vector<Tensor> xs, ys;
      for (size_t l = 0; l < L; l++) {
        if (n_l[l] == 0) continue;
        auto frames = to_vec(samplers[l].sample(n_l[l]));
        xs.push_back(gather_windows(train_data[l], frames, spec));
        std::vector<int64_t> y(frames.size());
        for (size_t i = 0; i < frames.size(); i++) y[i] = train_data[l].labels[size_t(frames[i])];
        ys.push_back(fw::tensor(y));
      }
      Tensor x = xs.size() == 1 ? xs[0] : fw::cat(xs, 0);
      Tensor total;
      int64_t correct = 0, off = 0;
      {
        // Products and convolutions in bfloat16 with --autocast; the loss is float32 either way, and
        // backward and the optimizer step run outside the region (on float32 parameters).
        fw::AutocastGuard amp(o.autocast);
        Tensor f = o.compile ? (*ctrunk)(x) : net->trunk->forward(x);
        size_t yi = 0;
        for (size_t l = 0; l < L; l++) {
          if (n_l[l] == 0) continue;
          Tensor fl = n_l[l] == o.batch_size ? f : f.narrow(0, off, n_l[l]);
          Tensor logits = o.compile ? cheads[l](fl) : net->heads->ptr<nn::SequentialImpl>(l)->forward(fl);
          const Tensor& y = ys[yi++];
          Tensor ce = nn::functional::cross_entropy(logits, y, sum_opts);
          total = total.defined() ? total + ce : ce;
          correct += logits.detach().argmax(1).eq(y).sum().item<int64_t>();
          off += n_l[l];
        }
      }
      Tensor loss = total / double(o.batch_size);
      opt->zero_grad(/*set_to_none=*/true);
      loss.backward();
      opt->step();
      const double lv = loss.item<double>();
      FW_CHECK(std::isfinite(lv), "training diverged (loss ", lv, ") at epoch ", epoch + 1, " step ", step + 1,
               "; lower --lr");
      result.step_losses.push_back(lv);
      loss_win += lv * double(o.batch_size);
      loss_epoch += lv * double(o.batch_size);
      correct_win += correct;
      correct_epoch += correct;
      frames_win += o.batch_size;
      frames_epoch += o.batch_size;
      if ((step + 1) % o.log_every == 0 || step + 1 == steps) {
        const double t = now_seconds();
        const double fps = double(frames_win) / std::max(1e-9, t - t_win);
        char line[512];
        std::snprintf(line, sizeof line, "%lld,%lld,%lld,%.6f,%.5f,%.1f,%.6g,%.2f", (long long)(epoch + 1),
                      (long long)(step + 1), (long long)(epoch * steps + step + 1), loss_win / double(frames_win),
                      double(correct_win) / double(frames_win), fps, lr, t - t_epoch);
        append_line(step_csv, line);
        if (o.progress) {
          std::fprintf(stderr, "%s[%s] epoch %lld/%lld step %lld/%lld loss %.4f frame acc %5.1f%% %6.0f frames/s%s",
                       tty ? "\r" : "", name.c_str(), (long long)(epoch + 1), (long long)o.epochs,
                       (long long)(step + 1), (long long)steps, loss_win / double(frames_win),
                       100.0 * double(correct_win) / double(frames_win), fps, tty ? "   " : "\n");
          std::fflush(stderr);
        }
        t_win = t;
        loss_win = 0;
        correct_win = frames_win = 0;
      }
    }
    EpochLog log;
    log.epoch = epoch + 1;
    log.loss = loss_epoch / double(frames_epoch);
    log.accuracy = double(correct_epoch) / double(frames_epoch);
    log.lr = lr;
    log.optimizer = phase;
    const double t_train = now_seconds() - t_epoch;
    log.frames_per_second = double(frames_epoch) / std::max(1e-9, t_train);
    if (o.valid_frames > 0) log.valid_accuracy = valid_accuracy(net, dev_data, spec, o.valid_frames);
    log.seconds = now_seconds() - t_epoch;
    save_checkpoint(o.exp, net, *opt, phase, mean, stdv, counts, epoch + 1, config);
    char line[512];
    std::snprintf(line, sizeof line, "%lld,%.6f,%.5f,%.5f,%.6g,%.1f,%.2f", (long long)log.epoch, log.loss,
                  log.accuracy, log.valid_accuracy, lr, log.frames_per_second, log.seconds);
    append_line(epoch_csv, line);
    if (o.progress) {
      char valid[32] = "-";
      if (log.valid_accuracy >= 0) std::snprintf(valid, sizeof valid, "%.1f%%", 100.0 * log.valid_accuracy);
      std::fprintf(stderr, "%s[%s] epoch %lld/%lld done: loss %.4f frame acc %.1f%% dev frame acc %s %.0f frames/s %.1f s\n",
                   tty ? "\r" : "", name.c_str(), (long long)log.epoch, (long long)o.epochs, log.loss,
                   100.0 * log.accuracy, valid, log.frames_per_second, log.seconds);
      std::fflush(stderr);
    }
    result.epochs.push_back(log);
    if (o.stop_after_epochs > 0 && ++epochs_run >= o.stop_after_epochs) break;
  }
  if (!result.epochs.empty() && result.epochs.back().epoch == o.epochs) fw::save(net, o.exp + "/model.safetensors");
  return result;
}

LoadedModel load_model(const std::string& exp) {
  LoadedModel m;
  const std::string path = exp + "/" + kCheckpoint;
  FW_CHECK(file_exists(path), exp, " has no checkpoint (train first)");
  Checkpoint ck = read_checkpoint(path);
  // The configuration the checkpoint was trained with (config.txt may already describe a new run).
  m.config = options_from_config(ck.config, exp, path);
  m.epochs_done = ck.epoch;
  m.mean = ck.tensors.at("norm.mean");
  m.std = ck.tensors.at("norm.std");
  std::vector<int64_t> classes;
  for (size_t l = 0; l < m.config.langs.size(); l++) {
    classes.push_back(m.config.langs[l].num_classes);
    auto it = ck.tensors.find("counts." + std::to_string(l));
    FW_CHECK(it != ck.tensors.end(), path, ": no class counts of language ", l);
    m.log_priors.push_back(log_priors_from_counts(to_vec(it->second)));
  }
  m.net = fm::AcousticCnn(model_config(m.config.model, classes, m.mean.size(0), m.mean.size(1)));
  load_model_tensors(m.net, ck.tensors, path);
  m.net->eval();
  return m;
}

}  // namespace fw::recipe
