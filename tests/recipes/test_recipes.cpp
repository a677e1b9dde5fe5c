// The speech recipes' library (examples/babel, fw_recipe): the PER aligner and phone-loop Viterbi
// against brute force, context windows against fw::models::extract_windows, feature caching, and
// on a tiny synthesised one-language corpus (fw-synth-corpus, FW_SYNTH_TOOL): an end-to-end run
// that must reach a stated frame accuracy, exact checkpoint resume, Adam then SGD (the switch epoch,
// resume across it, option and checkpoint checks), loglikes archives, the table.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <random>
#include <set>
#include <string>
#include <vector>

#include <fw/audio/kaldi_io.h>
#include <fw/serialize.h>

#include "examples/babel/recipe.h"

namespace fs = std::filesystem;
namespace fr = fw::recipe;
namespace fm = fw::models;
namespace kio = fw::audio::kaldi_io;

namespace {

// ---------------------------------------------------------------------------------------------
// Aligner
// ---------------------------------------------------------------------------------------------

// Independent edit distance (memoised recursion over suffixes).
int64_t edit_distance(const std::vector<int32_t>& a, const std::vector<int32_t>& b) {
  std::vector<std::vector<int64_t>> memo(a.size() + 1, std::vector<int64_t>(b.size() + 1, -1));
  std::function<int64_t(size_t, size_t)> go = [&](size_t i, size_t j) -> int64_t {
    if (i == a.size()) return int64_t(b.size() - j);
    if (j == b.size()) return int64_t(a.size() - i);
    int64_t& m = memo[i][j];
    if (m >= 0) return m;
    m = std::min({go(i + 1, j + 1) + (a[i] != b[j]), go(i + 1, j) + 1, go(i, j + 1) + 1});
    return m;
  };
  return go(0, 0);
}

TEST(RecipeAlign, KnownCases) {
  auto e = fr::align({1, 2, 3}, {1, 2, 3});
  EXPECT_EQ(e.errors(), 0);
  EXPECT_EQ(e.cor, 3);
  e = fr::align({}, {4, 5});
  EXPECT_EQ(e.ins, 2);
  EXPECT_EQ(e.ref, 0);
  EXPECT_EQ(e.rate(), 0.0);
  e = fr::align({4, 5, 6}, {});
  EXPECT_EQ(e.del, 3);
  EXPECT_DOUBLE_EQ(e.rate(), 100.0);
  // kitten -> sitting: k->s, e->i, +g.
  std::vector<int32_t> kitten = {'k', 'i', 't', 't', 'e', 'n'}, sitting = {'s', 'i', 't', 't', 'i', 'n', 'g'};
  e = fr::align(kitten, sitting);
  EXPECT_EQ(e.sub, 2);
  EXPECT_EQ(e.ins, 1);
  EXPECT_EQ(e.del, 0);
  EXPECT_EQ(e.cor, 4);
  // Ties: two substitutions rather than a deletion plus an insertion.
  e = fr::align({1, 2}, {2, 1});
  EXPECT_EQ(e.sub + e.del + e.ins, 2);
  e = fr::align({1, 2, 3, 4}, {1, 3, 4, 5});
  EXPECT_EQ(e.del, 1);
  EXPECT_EQ(e.ins, 1);
  EXPECT_EQ(e.sub, 0);
  EXPECT_DOUBLE_EQ(e.rate(), 50.0);
}

TEST(RecipeAlign, RandomAgainstBruteForce) {
  std::mt19937 gen(7);
  for (int trial = 0; trial < 300; trial++) {
    std::vector<int32_t> a(gen() % 9), b(gen() % 9);
    for (auto& x : a) x = int32_t(gen() % 4);
    for (auto& x : b) x = int32_t(gen() % 4);
    auto e = fr::align(a, b);
    EXPECT_EQ(e.errors(), edit_distance(a, b));
    EXPECT_EQ(e.cor + e.sub + e.del, int64_t(a.size()));
    EXPECT_EQ(e.cor + e.sub + e.ins, int64_t(b.size()));
  }
}

TEST(RecipeAlign, Collapse) {
  EXPECT_EQ(fr::collapse({0, 0, 3, 3, 3, 0, 5, 5, 3, 0}, 0), (std::vector<int32_t>{3, 5, 3}));
  EXPECT_EQ(fr::collapse({0, 0, 3, 3, 3, 0, 5, 5, 3, 0}, -1), (std::vector<int32_t>{0, 3, 0, 5, 3, 0}));
  // Silence between two instances of a phone keeps them apart.
  EXPECT_EQ(fr::collapse({2, 2, 0, 2}, 0), (std::vector<int32_t>{2, 2}));
  EXPECT_TRUE(fr::collapse({}, 0).empty());
}

// ---------------------------------------------------------------------------------------------
// Phone-loop Viterbi
// ---------------------------------------------------------------------------------------------

double path_score(const std::vector<float>& ll, int64_t K, const std::vector<int32_t>& path, double pen, double scale) {
  double s = 0;
  for (size_t t = 0; t < path.size(); t++) {
    s += scale * ll[t * size_t(K) + size_t(path[t])];
    if (t > 0 && path[t] != path[t - 1]) s -= pen;
  }
  return s;
}

TEST(RecipeViterbi, BestPathAgainstBruteForce) {
  std::mt19937 gen(3);
  std::normal_distribution<float> nd;
  for (int trial = 0; trial < 40; trial++) {
    const int64_t T = 1 + trial % 6, K = 1 + trial % 4;
    std::vector<float> ll(size_t(T * K));
    for (auto& x : ll) x = nd(gen);
    const double pen = (trial % 5) * 0.7, scale = trial % 2 ? 1.0 : 0.5;
    auto path = fr::viterbi_phone_loop(ll.data(), T, K, pen, scale);
    ASSERT_EQ(int64_t(path.size()), T);
    double best = -1e300;
    std::vector<int32_t> p(size_t(T), 0);
    for (int64_t code = 0; code < int64_t(std::pow(K, T)); code++) {
      int64_t c = code;
      for (int64_t t = 0; t < T; t++) p[size_t(t)] = int32_t(c % K), c /= K;
      best = std::max(best, path_score(ll, K, p, pen, scale));
    }
    EXPECT_NEAR(path_score(ll, K, path, pen, scale), best, 1e-9) << "trial " << trial;
  }
}

TEST(RecipeViterbi, PenaltyLimits) {
  std::mt19937 gen(5);
  std::normal_distribution<float> nd;
  const int64_t T = 50, K = 6;
  std::vector<float> ll(size_t(T * K));
  for (auto& x : ll) x = nd(gen);
  // No penalty: the frame-wise argmax.
  auto path = fr::viterbi_phone_loop(ll.data(), T, K, 0.0);
  for (int64_t t = 0; t < T; t++) {
    auto row = ll.begin() + t * K;
    EXPECT_EQ(path[size_t(t)], int32_t(std::max_element(row, row + K) - row));
  }
  // A huge penalty: one class for the whole utterance, the one with the best total.
  path = fr::viterbi_phone_loop(ll.data(), T, K, 1e9);
  std::vector<double> total(size_t(K), 0);
  for (int64_t t = 0; t < T; t++)
    for (int64_t k = 0; k < K; k++) total[size_t(k)] += ll[size_t(t * K + k)];
  int32_t best = int32_t(std::max_element(total.begin(), total.end()) - total.begin());
  for (auto c : path) EXPECT_EQ(c, best);
  EXPECT_TRUE(fr::viterbi_phone_loop(ll.data(), 0, K, 1.0).empty());
}

TEST(RecipeViterbi, Priors) {
  auto lp = fr::log_priors_from_counts({10, 0, 30});
  double s = 0;
  for (double x : lp) s += std::exp(x);
  EXPECT_NEAR(s, 1.0, 1e-12);
  EXPECT_NEAR(lp[1], std::log(1.0 / 43.0), 1e-12);
}

// ---------------------------------------------------------------------------------------------
// Context windows
// ---------------------------------------------------------------------------------------------

TEST(RecipeData, GatherWindowsMatchesExtractWindows) {
  fw::manual_seed(11);
  fr::FrameData d;
  const std::vector<int64_t> lens = {3, 30, 1, 17};
  int64_t total = 0;
  std::vector<fw::Tensor> parts;
  for (size_t u = 0; u < lens.size(); u++) {
    d.utts.push_back("u" + std::to_string(u));
    d.start.push_back(total);
    d.length.push_back(lens[u]);
    for (int64_t t = 0; t < lens[u]; t++) d.frame_utt.push_back(int32_t(u));
    parts.push_back(fw::randn({lens[u], 3, 5}));
    total += lens[u];
  }
  d.feats = fw::cat(parts, 0);
  for (const auto& spec : {fm::ContextSpec::centered(16), fm::ContextSpec::centered(11), fm::ContextSpec::multiscale()}) {
    std::vector<int64_t> frames;
    for (int64_t g = 0; g < total; g++) frames.push_back((g * 7) % total);
    fw::Tensor got = fr::gather_windows(d, frames, spec);
    for (size_t b = 0; b < frames.size(); b++) {
      const int64_t g = frames[b];
      const size_t u = size_t(d.frame_utt[size_t(g)]);
      fw::Tensor ref = fm::extract_windows(parts[u], std::vector<int64_t>{g - d.start[u]}, spec);
      ASSERT_TRUE(fw::equal(got.narrow(0, int64_t(b), 1), ref)) << "frame " << g << " windows " << spec.num_windows();
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Recipe runs on a tiny synthesised corpus
// ---------------------------------------------------------------------------------------------

int run(const std::string& cmd) { return std::system(cmd.c_str()); }

// The first n comma-separated columns of every line of a CSV file.
std::vector<std::string> csv_columns(const std::string& path, size_t n) {
  std::vector<std::string> out;
  for (const auto& line : fr::split(fr::read_text(path), '\n')) {
    auto f = fr::split(line, ',');
    if (f.size() > n) f.resize(n);
    out.push_back(fr::join(f, ","));
  }
  return out;
}

class RecipeCorpus : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    char tmpl[] = "/tmp/fw_recipe_test_XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    root_ = tmpl;
    // One language, 4 speakers (2 train, 1 dev, 1 test) x 8 utterances.
    std::string cmd = std::string(FW_SYNTH_TOOL) + " --out " + root_ + "/corpus --langs " + kLang +
                      " --speakers-per-lang 4 --utts-per-speaker 8 --seed 3 --quiet";
    ASSERT_EQ(run(cmd), 0) << cmd;
    for (const char* s : {"train", "dev", "test"}) {
      auto r = fr::compute_features(root_ + "/corpus/data/" + kLang + "/" + s, root_ + "/feats/" + kLang + "/" + s, {});
      ASSERT_FALSE(r.cached);
      ASSERT_GT(r.frames, 1000);
    }
  }
  static void TearDownTestSuite() {
    if (!root_.empty() && !std::getenv("FW_RECIPE_TEST_KEEP")) fs::remove_all(root_);
  }

  static fr::LangSpec lang() {
    fr::LangSpec L;
    L.name = kLang;
    L.phones = root_ + "/corpus/data/" + kLang + "/phones.txt";
    L.num_classes = int64_t(fr::read_phones(L.phones).size());
    L.lexicon = root_ + "/corpus/data/" + kLang + "/lexicon.txt";
    for (const char* s : {"train", "dev", "test"})
      L.splits[s] = {"scp:" + root_ + "/feats/" + kLang + "/" + s + "/feats.scp",
                     root_ + "/corpus/data/" + kLang + "/" + s + "/ali.txt",
                     root_ + "/corpus/data/" + kLang + "/" + s + "/text"};
    return L;
  }
  // The CI configuration: a narrow vgg6 (16-frame windows), 2 x 128 FC, batch norm.
  static fr::TrainOptions tiny(const std::string& exp, uint64_t seed) {
    fr::TrainOptions o;
    o.exp = root_ + "/" + exp;
    o.langs = {lang()};
    o.model.kind = "vgg6";
    o.model.width = 0.125;
    o.model.fc_dim = 128;
    o.model.num_fc = 2;
    o.model.batch_norm = true;
    o.epochs = 3;
    o.batch_size = 128;
    o.lr = 0.05;
    o.lr_decay = 0.8;
    o.seed = seed;
    o.threads = 1;
    o.compile = false;
    o.progress = false;
    o.valid_frames = 500;
    return o;
  }

  static constexpr const char* kLang = "tpi";
  static std::string root_;
};
std::string RecipeCorpus::root_;

TEST_F(RecipeCorpus, FeaturesAreCachedAndMatchTheAlignments) {
  const std::string data = root_ + "/corpus/data/" + kLang + "/dev", out = root_ + "/feats/" + kLang + "/dev";
  auto r = fr::compute_features(data, out, {});
  EXPECT_TRUE(r.cached);
  auto feats = kio::read_matrices("scp:" + out + "/feats.scp");
  auto ali = kio::read_alignments(data + "/ali.txt");
  ASSERT_EQ(feats.size(), ali.size());
  for (const auto& [utt, f] : feats) {
    EXPECT_EQ(f.size(1), 120);
    EXPECT_EQ(f.size(0), int64_t(ali.at(utt).size())) << utt;
  }
  // Other options invalidate the cache.
  fr::FeatureOptions o;
  o.norm_vars = true;
  fs::path other = fs::path(root_) / "feats_norm";
  fs::copy(out, other);
  EXPECT_FALSE(fr::compute_features(data, other.string(), o).cached);
  EXPECT_TRUE(fr::compute_features(data, other.string(), o).cached);
}

// The stated accuracy: frame accuracy over the held-out frames (dev and test speakers pooled) of
// this configuration. Measured over training seeds 1-8 (FW_RECIPE_SEED): 51.6-65.3%, mean 58.6%
// (test speaker alone 43.1-62.1%, dev speaker 60.0-68.4%); always predicting silence, the most
// frequent class, gives 22.7%. The threshold leaves 6 points below the worst seed.
constexpr double kMinHeldOutFrameAccuracy = 45.0;

TEST_F(RecipeCorpus, EndToEndReachesFrameAccuracy) {
  const uint64_t seed = std::getenv("FW_RECIPE_SEED") ? std::strtoull(std::getenv("FW_RECIPE_SEED"), nullptr, 10) : 1;
  auto o = tiny("e2e", seed);
  auto t = fr::train(o);
  ASSERT_EQ(t.epochs.size(), 3u);
  EXPECT_LT(t.epochs.back().loss, t.epochs.front().loss);
  fr::EvalOptions eo;
  eo.penalties = {0, 2, 4, 8};
  eo.wer_scales = {0.1, 0.3};
  auto rows = fr::evaluate(o.exp, eo);
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0].split, "dev");
  EXPECT_EQ(rows[1].split, "test");
  std::printf("[recipe e2e] seed %llu: dev frame acc %.2f%% PER %.2f%% WER %.2f%%, test frame acc %.2f%% PER %.2f%% "
              "WER %.2f%% (penalty %.1f, acoustic scale %.2f)\n",
              (unsigned long long)seed, rows[0].frame_accuracy, rows[0].per, rows[0].wer, rows[1].frame_accuracy,
              rows[1].per, rows[1].wer, rows[1].penalty, rows[1].wer_scale);
  const double held_out = (rows[0].frame_accuracy * double(rows[0].frames) + rows[1].frame_accuracy * double(rows[1].frames)) /
                          double(rows[0].frames + rows[1].frames);
  std::printf("[recipe e2e] held-out frame accuracy %.2f%% (threshold %.1f%%)\n", held_out, kMinHeldOutFrameAccuracy);
  EXPECT_GE(held_out, kMinHeldOutFrameAccuracy);
  EXPECT_GT(rows[1].per, 0.0);
  EXPECT_LT(rows[1].per, 100.0);
  EXPECT_EQ(rows[1].penalty, rows[0].penalty);  // tuned on dev, applied to test
  if (fr::wer_available()) {                    // fw_asr built (OpenFst): words decoded and scored
    EXPECT_GE(rows[1].wer, 0.0);
    EXPECT_LT(rows[1].wer, 150.0);
    EXPECT_EQ(rows[1].wer_scale, rows[0].wer_scale);
  } else {
    EXPECT_EQ(rows[1].wer, -1);
  }
  // results.tsv round trip and the table.
  auto back = fr::read_results(o.exp + "/results.tsv");
  ASSERT_EQ(back.size(), 2u);
  EXPECT_NEAR(back[1].frame_accuracy, rows[1].frame_accuracy, 0.006);
  EXPECT_NEAR(back[1].wer, rows[1].wer, 0.006);
  std::string table = fr::comparison_table({{"tiny-vgg6", {o.exp}}, {"missing", {root_ + "/nothing"}}}, "test");
  EXPECT_NE(table.find("tiny-vgg6"), std::string::npos);
  EXPECT_NE(table.find(kLang), std::string::npos);
  EXPECT_NE(table.find("Word error rate"), std::string::npos);

  // Log-likelihoods for Kaldi: log posterior - log prior, one matrix per utterance.
  const std::string ark = root_ + "/loglikes.ark";
  auto n = fr::write_loglikes(o.exp, "", "scp:" + root_ + "/feats/" + kLang + "/test/feats.scp", "ark:" + ark, 1.0, 0);
  auto ll = kio::read_matrices("ark:" + ark);
  EXPECT_EQ(int64_t(ll.size()), n);
  auto feats = kio::read_matrices("scp:" + root_ + "/feats/" + kLang + "/test/feats.scp");
  fr::LoadedModel m = fr::load_model(o.exp);
  const auto& [utt, f] = *feats.begin();
  fw::Tensor lp = fr::log_posteriors(m, 0, f);
  fw::Tensor prior = fw::tensor(std::vector<float>(m.log_priors[0].begin(), m.log_priors[0].end()));
  EXPECT_EQ(ll.at(utt).sizes(), lp.sizes());
  EXPECT_TRUE(fw::allclose(ll.at(utt), lp - prior, 1e-5, 1e-5));
  EXPECT_NEAR(lp.exp().sum(1).mean().item<double>(), 1.0, 1e-4);
}

TEST_F(RecipeCorpus, ResumeReproducesTheLosses) {
  for (bool compile : {false, true}) {
    SCOPED_TRACE(compile ? "compiled" : "eager");
    auto a = tiny(compile ? "straight_c" : "straight", 5);
    a.epochs = 3;
    a.frames_per_epoch = 1280;  // 10 steps per epoch
    a.valid_frames = 0;
    a.compile = compile;
    auto full = fr::train(a);
    ASSERT_EQ(full.step_losses.size(), 30u);

    auto b = a;
    b.exp = root_ + (compile ? "/resumed_c" : "/resumed");
    b.stop_after_epochs = 1;
    auto first = fr::train(b);
    EXPECT_EQ(first.step_losses.size(), 10u);
    b.stop_after_epochs = 0;
    auto rest = fr::train(b);  // a new call: model, optimizer and sampler state come from the checkpoint
    EXPECT_EQ(rest.first_epoch, 1);
    ASSERT_EQ(rest.step_losses.size(), 20u);
    for (size_t i = 0; i < 10; i++) EXPECT_EQ(first.step_losses[i], full.step_losses[i]) << "step " << i;
    for (size_t i = 0; i < 20; i++) EXPECT_EQ(rest.step_losses[i], full.step_losses[10 + i]) << "step " << 10 + i;
    auto ta = fw::load(a.exp + "/checkpoint.safetensors"), tb = fw::load(b.exp + "/checkpoint.safetensors");
    ASSERT_EQ(ta.size(), tb.size());
    for (const auto& [k, v] : ta) EXPECT_TRUE(fw::equal(v, tb.at(k))) << k;
    // The epoch log has each epoch once, with the same losses and accuracies (timings differ).
    EXPECT_EQ(csv_columns(a.exp + "/epochs.csv", 3), csv_columns(b.exp + "/epochs.csv", 3));
    // Nothing left to do.
    EXPECT_TRUE(fr::train(b).already_done);
  }
}

TEST_F(RecipeCorpus, ResumeRefusesAnotherConfiguration) {
  auto a = tiny("mismatch", 1);
  a.epochs = 1;
  a.frames_per_epoch = 256;
  a.valid_frames = 0;
  fr::train(a);
  a.lr = 0.5;
  a.epochs = 2;
  try {
    fr::train(a);
    FAIL() << "expected an error";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find("train.lr"), std::string::npos) << e.what();
  }
  a.resume = false;  // starts over
  EXPECT_EQ(fr::train(a).first_epoch, 0);
}

// --autocast: the tiny model trains with bfloat16 products and convolutions (batch norm, the heads
// and the loss as libtorch's autocast runs them), its losses fall, and the setting is part of the
// checkpoint's configuration (a float32 resume of a bfloat16 run is refused).
TEST_F(RecipeCorpus, AutocastTrainsAndIsPartOfTheConfiguration) {
  auto a = tiny("autocast", 1);
  a.autocast = true;
  a.epochs = 2;
  a.frames_per_epoch = 128 * 12;
  auto t = fr::train(a);
  ASSERT_EQ(t.epochs.size(), 2u);
  for (double l : t.step_losses) ASSERT_TRUE(std::isfinite(l));
  EXPECT_LT(t.epochs.back().loss, t.epochs.front().loss);
  EXPECT_GT(t.epochs.back().valid_accuracy, 0.0);
  a.autocast = false;
  a.epochs = 3;
  try {
    fr::train(a);
    FAIL() << "expected an error";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find("train.autocast"), std::string::npos) << e.what();
  }
}

// ---------------------------------------------------------------------------------------------
// Adam then SGD (--optimizer adam-sgd; Note [Adam then SGD] in examples/babel/train.cpp)
// ---------------------------------------------------------------------------------------------

// The tiny configuration with Adam for `switch_epoch` epochs, then SGD; 5 steps per epoch.
fr::TrainOptions adam_sgd(fr::TrainOptions o, int64_t epochs, int64_t switch_epoch) {
  o.optimizer = "adam-sgd";
  o.lr = 0.002;
  o.sgd_lr = 0.01;
  o.epochs = epochs;
  o.switch_epoch = switch_epoch;
  o.frames_per_epoch = 640;
  o.valid_frames = 0;
  return o;
}

// What a checkpoint says about its optimizer state.
struct CheckpointOptim {
  std::string meta;                 // metadata "optimizer"
  std::set<std::string> fields;     // names of the optim.state.<i>.<field> entries
  std::set<int64_t> adam_steps;     // values of the Adam step counts
  int64_t states = 0;               // parameters with state
  double lr = -1;                   // optim.param_groups.0.lr
};
CheckpointOptim checkpoint_optim(const std::string& exp) {
  auto c = fw::load_with_metadata(exp + "/checkpoint.safetensors");
  CheckpointOptim r;
  r.meta = c.metadata["optimizer"];
  std::set<std::string> params;
  for (const auto& [k, v] : c.tensors) {
    if (k == "optim.param_groups.0.lr") r.lr = v.item<double>();
    if (k.rfind("optim.state.", 0) != 0) continue;
    const std::string field = k.substr(k.rfind('.') + 1);
    r.fields.insert(field);
    params.insert(k.substr(0, k.rfind('.')));
    if (field == "step") r.adam_steps.insert(v.item<int64_t>());
  }
  r.states = int64_t(params.size());
  return r;
}

std::string train_error(const fr::TrainOptions& o) {
  try {
    fr::train(o);
  } catch (const std::exception& e) {
    return e.what();
  }
  return "(no error)";
}

TEST_F(RecipeCorpus, AdamThenSgdSwitchesAtTheSwitchEpoch) {
  auto o = adam_sgd(tiny("adam_sgd_switch", 2), 3, 2);
  o.stop_after_epochs = 1;  // one call per epoch, so that every epoch's checkpoint can be inspected
  // Every parameter gets a gradient at every step (one language), so every one has state.
  const int64_t num_params =
      int64_t(fm::AcousticCnn(fr::model_config(o.model, {lang().num_classes}, 3, 40))->parameters().size());
  // Epochs 1 and 2: Adam, its step counts grow by 5 per epoch; the lr is lr * lr_decay^e.
  for (int64_t e = 1; e <= 2; e++) {
    SCOPED_TRACE("epoch " + std::to_string(e));
    auto r = fr::train(o);
    ASSERT_EQ(r.epochs.size(), 1u);
    EXPECT_EQ(r.epochs[0].epoch, e);
    EXPECT_EQ(r.epochs[0].optimizer, "adam");
    EXPECT_EQ(r.switched_at_epoch, 0);
    auto c = checkpoint_optim(o.exp);
    EXPECT_EQ(c.meta, "adam");
    EXPECT_EQ(c.fields, (std::set<std::string>{"step", "exp_avg", "exp_avg_sq"}));
    EXPECT_EQ(c.adam_steps, (std::set<int64_t>{5 * e}));
    EXPECT_EQ(c.states, num_params);
    EXPECT_DOUBLE_EQ(c.lr, 0.002 * std::pow(0.8, double(e - 1)));
  }
  // Epoch 3 (from the checkpoint written just before the switch): SGD with Nesterov momentum at
  // --sgd-lr, announced on stderr; the checkpoint then holds momentum buffers and nothing of Adam.
  o.progress = true;
  testing::internal::CaptureStderr();
  auto r = fr::train(o);
  const std::string err = testing::internal::GetCapturedStderr();
  ASSERT_EQ(r.epochs.size(), 1u);
  EXPECT_EQ(r.epochs[0].epoch, 3);
  EXPECT_EQ(r.epochs[0].optimizer, "sgd");
  EXPECT_EQ(r.epochs[0].lr, 0.01);
  EXPECT_EQ(r.switched_at_epoch, 3);
  EXPECT_NE(err.find("epoch 3: switching from Adam to SGD (Nesterov momentum 0.9), lr 0.01\n"), std::string::npos) << err;
  auto c = checkpoint_optim(o.exp);
  EXPECT_EQ(c.meta, "sgd");
  EXPECT_EQ(c.fields, (std::set<std::string>{"momentum_buffer"}));
  EXPECT_EQ(c.states, num_params);
  EXPECT_DOUBLE_EQ(c.lr, 0.01);
  // The epoch log's lr column: Adam's decayed lr, then the SGD lr.
  auto rows = csv_columns(o.exp + "/epochs.csv", 5);
  rows.erase(std::remove(rows.begin(), rows.end(), std::string()), rows.end());
  ASSERT_EQ(rows.size(), 4u);  // header + 3 epochs
  std::vector<double> lrs;
  for (size_t i = 1; i < rows.size(); i++) lrs.push_back(std::atof(fr::split(rows[i], ',')[4].c_str()));
  EXPECT_EQ(lrs, (std::vector<double>{0.002, 0.0016, 0.01}));
  EXPECT_NE(fr::read_text(o.exp + "/config.txt").find("train.switch_epoch=2\n"), std::string::npos);
  EXPECT_TRUE(fr::train(o).already_done);
}

TEST_F(RecipeCorpus, AdamThenSgdResumesExactlyAcrossTheSwitch) {
  // Uninterrupted: 2 epochs of Adam, then 2 of SGD, 10 steps each.
  auto a = adam_sgd(tiny("adam_sgd_straight", 4), 4, 2);
  a.frames_per_epoch = 1280;
  auto full = fr::train(a);
  ASSERT_EQ(full.step_losses.size(), 40u);
  EXPECT_EQ(full.switched_at_epoch, 3);

  // Interrupted twice: after epoch 2 (Adam state, just before the switch), after epoch 3 (SGD state).
  auto b = a;
  b.exp = root_ + "/adam_sgd_resumed";
  b.stop_after_epochs = 2;
  auto first = fr::train(b);
  EXPECT_EQ(first.switched_at_epoch, 0);
  EXPECT_EQ(checkpoint_optim(b.exp).meta, "adam");
  b.stop_after_epochs = 1;
  auto second = fr::train(b);  // resumes Adam's state, switches at once
  EXPECT_EQ(second.first_epoch, 2);
  EXPECT_EQ(second.switched_at_epoch, 3);
  EXPECT_EQ(checkpoint_optim(b.exp).meta, "sgd");
  b.stop_after_epochs = 0;
  auto third = fr::train(b);  // resumes SGD's momentum buffers
  EXPECT_EQ(third.first_epoch, 3);
  EXPECT_EQ(third.switched_at_epoch, 0);
  std::vector<double> losses = first.step_losses;
  losses.insert(losses.end(), second.step_losses.begin(), second.step_losses.end());
  losses.insert(losses.end(), third.step_losses.begin(), third.step_losses.end());
  ASSERT_EQ(losses.size(), 40u);
  for (size_t i = 0; i < 40; i++) EXPECT_EQ(losses[i], full.step_losses[i]) << "step " << i;
  auto ta = fw::load(a.exp + "/checkpoint.safetensors");
  auto same_as_straight = [&](const std::string& exp) {
    auto tb = fw::load(exp + "/checkpoint.safetensors");
    ASSERT_EQ(ta.size(), tb.size());
    for (const auto& [k, v] : ta) {
      ASSERT_TRUE(tb.count(k)) << k;
      EXPECT_TRUE(fw::equal(v, tb.at(k))) << exp << ": " << k;
    }
  };
  same_as_straight(b.exp);
  EXPECT_EQ(csv_columns(a.exp + "/epochs.csv", 5), csv_columns(b.exp + "/epochs.csv", 5));

  // A fresh process: one epoch here, the rest (across the switch) by fw-babel train.
  auto c = a;
  c.exp = root_ + "/adam_sgd_cli";
  c.stop_after_epochs = 1;
  fr::train(c);
  const std::string data = root_ + "/corpus/data", feats = root_ + "/feats";
  const std::string cmd = std::string(FW_BABEL_TOOL) + " train --exp " + c.exp + " --langs " + kLang + " --data-root " +
                          data + " --feat-root " + feats +
                          " --model vgg6 --width 0.125 --fc-dim 128 --num-fc 2 --batch-norm --epochs 4 --batch-size 128"
                          " --frames-per-epoch 1280 --optimizer adam-sgd --lr 0.002 --switch-epoch 2 --sgd-lr 0.01"
                          " --lr-decay 0.8 --seed 4 --threads 1 --no-compile --valid-frames 0 2>" +
                          c.exp + "/stderr.txt";
  ASSERT_EQ(run(cmd), 0) << cmd << "\n" << fr::read_text(c.exp + "/stderr.txt");
  const std::string log = fr::read_text(c.exp + "/stderr.txt");
  EXPECT_NE(log.find("epoch 3: switching from Adam to SGD (Nesterov momentum 0.9), lr 0.01"), std::string::npos) << log;
  same_as_straight(c.exp);
}

TEST_F(RecipeCorpus, AdamThenSgdRejectsBadOptions) {
  auto base = tiny("adam_sgd_bad", 1);
  base.valid_frames = 0;
  auto expect_error = [&](fr::TrainOptions o, const std::vector<std::string>& parts) {
    const std::string e = train_error(o);
    for (const auto& p : parts) EXPECT_NE(e.find(p), std::string::npos) << "want '" << p << "' in: " << e;
  };
  auto o = base;
  o.switch_epoch = 2;  // with sgd
  expect_error(o, {"--switch-epoch 2 is for --optimizer adam-sgd only", "'sgd'"});
  o = base;
  o.optimizer = "adam";
  o.sgd_lr = 0.01;
  expect_error(o, {"--sgd-lr 0.01 is for --optimizer adam-sgd only", "'adam'"});
  o = adam_sgd(base, 3, 3);  // K >= epochs
  expect_error(o, {"1 <= K < --epochs (3)", "got 3", "SGD would never run"});
  o = adam_sgd(base, 3, 0);  // no K
  expect_error(o, {"needs --switch-epoch K", "got 0"});
  o = adam_sgd(base, 3, 1);
  o.sgd_lr = 0;
  expect_error(o, {"needs --sgd-lr X > 0"});
  o.optimizer = "adam-then-sgd";
  expect_error(o, {"unknown optimizer 'adam-then-sgd' (sgd, adam, adam-sgd)"});
  EXPECT_FALSE(fs::exists(base.exp)) << "bad options must be refused before anything is written";

  // The command line: exit status 1 and the message.
  const std::string err = root_ + "/adam_sgd_bad_cli.txt";
  const std::string cmd = std::string(FW_BABEL_TOOL) + " train --exp " + root_ + "/adam_sgd_bad_cli --langs " + kLang +
                          " --data-root " + root_ + "/corpus/data --feat-root " + root_ +
                          "/feats --epochs 3 --optimizer sgd --switch-epoch 2 2>" + err;
  const int status = run(cmd);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 1);
  EXPECT_NE(fr::read_text(err).find("error: --switch-epoch 2 is for --optimizer adam-sgd only"), std::string::npos)
      << fr::read_text(err);
}

TEST_F(RecipeCorpus, AdamThenSgdChecksTheCheckpoint) {
  auto o = adam_sgd(tiny("adam_sgd_ck", 3), 3, 2);
  o.stop_after_epochs = 1;
  fr::train(o);
  const std::string path = o.exp + "/checkpoint.safetensors";
  // Another optimizer configuration is refused by name.
  auto p = o;
  p.switch_epoch = 1;
  EXPECT_NE(train_error(p).find("train.switch_epoch (checkpoint '2', now '1')"), std::string::npos) << train_error(p);
  p = o;
  p.sgd_lr = 0.02;
  EXPECT_NE(train_error(p).find("train.sgd_lr"), std::string::npos) << train_error(p);
  p = o;
  p.optimizer = "adam";
  p.switch_epoch = 0;
  p.sgd_lr = 0;
  EXPECT_NE(train_error(p).find("train.optimizer (checkpoint 'adam-sgd', now 'adam')"), std::string::npos)
      << train_error(p);
  // A checkpoint whose optimizer state is not the phase's: the recorded phase, a missing record,
  // SGD entries under an Adam record.
  auto c = fw::load_with_metadata(path);
  auto meta = c.metadata;
  meta["optimizer"] = "sgd";
  fw::save(c.tensors, path, meta);
  const std::string wrong = train_error(o);
  EXPECT_NE(wrong.find("holds sgd optimizer state, but --optimizer adam-sgd --switch-epoch 2 has Adam state after epoch 1"),
            std::string::npos)
      << wrong;
  meta.erase("optimizer");
  fw::save(c.tensors, path, meta);
  EXPECT_NE(train_error(o).find("does not record its optimizer"), std::string::npos) << train_error(o);
  auto tensors = c.tensors;
  tensors["optim.state.0.momentum_buffer"] = tensors.at("optim.state.0.exp_avg");
  fw::save(tensors, path, c.metadata);
  EXPECT_NE(train_error(o).find("optimizer entry optim.state.0.momentum_buffer is not adam state"), std::string::npos)
      << train_error(o);
  // The untouched checkpoint resumes.
  fw::save(c.tensors, path, c.metadata);
  EXPECT_EQ(fr::train(o).first_epoch, 1);
}

}  // namespace
