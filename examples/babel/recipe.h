// fw_recipe: the pieces of the speech recipes (examples/babel, examples/swbd; DESIGN.md §9):
// feature extraction into Kaldi tables, frame data sets, training of fw::models::AcousticCnn with
// exact resume, phone-loop Viterbi decoding, phone error rates and the comparison table.
// The command line (fw-babel / fw-swbd) is in cli.cpp; examples/babel/README.md documents it.
#pragma once
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include <fw/fw.h>
#include <fw/models.h>

namespace fw::recipe {

// ---------------------------------------------------------------------------------------------
// Small utilities (util.cpp)
// ---------------------------------------------------------------------------------------------

std::vector<std::string> split(const std::string& s, char sep);
std::string join(const std::vector<std::string>& v, const std::string& sep);
bool file_exists(const std::string& path);
void make_dirs(const std::string& path);
// Whole file as a string; throws fw::Error when it cannot be read.
std::string read_text(const std::string& path);
// Writes a file atomically (temporary file next to it, fsync, rename).
void write_text_atomic(const std::string& path, const std::string& text);
// A 64-bit seed derived from a base seed and up to three indices (splitmix64 chain).
uint64_t mix_seed(uint64_t seed, uint64_t a, uint64_t b = 0, uint64_t c = 0);
double now_seconds();

// "key=value" lines (the recipe's config and stamp files); '#' starts a comment line.
using KeyValues = std::map<std::string, std::string>;
KeyValues parse_key_values(const std::string& text);
std::string format_key_values(const KeyValues& kv);

// --name value / --name=value command-line options; every option must be consumed.
class Args {
 public:
  Args(int argc, char** argv, int first);
  bool has(const std::string& name) const;
  std::string str(const std::string& name, const std::string& def);
  std::string required(const std::string& name);
  int64_t integer(const std::string& name, int64_t def);
  double real(const std::string& name, double def);
  // A flag given as "--name" (true), "--name=0/1/true/false".
  bool flag(const std::string& name);
  // Throws fw::Error naming every option that no getter asked for.
  void check_all_used() const;

 private:
  std::map<std::string, std::string> values_;
  std::map<std::string, bool> used_;
};

// ---------------------------------------------------------------------------------------------
// Features (features.cpp)
// ---------------------------------------------------------------------------------------------

struct FeatureOptions {
  int64_t num_mel_bins = 40;
  int64_t delta_order = 2;    // 0: static only; 2: + Δ + ΔΔ (3 input channels)
  bool cmvn = true;           // per-speaker mean normalisation of the static features (Kaldi apply-cmvn)
  bool norm_vars = false;     // also variance (apply-cmvn --norm-vars)
  bool force = false;         // recompute even when the cache is valid
};

struct FeatureResult {
  int64_t utterances = 0, frames = 0;
  bool cached = false;        // the stamp matched: nothing was computed
  double seconds = 0;
};

// Kaldi data dir -> out_dir/feats.ark + feats.scp (float32 (T, bins * (order + 1)): static, Δ,
// ΔΔ), out_dir/cmvn.ark (per-speaker stats, Kaldi (2, bins + 1) form) and out_dir/stamp (written
// last; the cache is valid when it names the same data dir, file sizes and options).
FeatureResult compute_features(const std::string& data_dir, const std::string& out_dir, const FeatureOptions& options);

// ---------------------------------------------------------------------------------------------
// Frame data (data.cpp)
// ---------------------------------------------------------------------------------------------

// Where one language's data lives.
struct SplitSpec {
  std::string feats;  // rspecifier of the features ("scp:feats/ku/train/feats.scp")
  std::string ali;    // alignments: rspecifier or path (text ali-to-pdf form or binary int32 ark); "" = none
  std::string text;   // Kaldi `text` (utt word word ...) for WER; "" = none
};
struct LangSpec {
  std::string name;
  int64_t num_classes = 0;      // 0: inferred from the training alignments (max id + 1)
  std::string phones;           // phones.txt ("<phone> <id>"); "" = class ids are not phones
  std::string lexicon;          // lexicon.txt ("<word> <phone> ..."), for WER; "" = none
  std::map<std::string, SplitSpec> splits;  // "train", "dev", "test"
};

// All utterances of one split of one language, concatenated: feats (N, C, F) float32 with
// C = channels (static, Δ, ΔΔ) and F = bins; labels[j] the class of frame j (empty without ali).
struct FrameData {
  std::vector<std::string> utts;
  std::vector<int64_t> start, length;  // per utterance, into the frame axis
  std::vector<int32_t> frame_utt;      // per frame: its utterance
  Tensor feats;
  std::vector<int64_t> labels;
  int64_t num_frames() const { return feats.defined() ? feats.size(0) : 0; }
};

struct LoadOptions {
  int64_t channels = 3;          // feature dim = channels * bins
  int64_t ali_tolerance = 0;     // frames by which alignments may differ (check_alignment_lengths)
  bool skip_unaligned = false;   // drop utterances without an alignment (else an error)
  int64_t max_utts = 0;          // > 0: only the first max_utts utterances (sorted by id)
};
FrameData load_frames(const SplitSpec& spec, const LoadOptions& options);

// Per-(channel, bin) mean and standard deviation over all frames of `data` (each (C, F)).
std::pair<Tensor, Tensor> feature_moments(const std::vector<const FrameData*>& data);

// Context windows of frames `frames` (indices into data), each clamped to its own utterance
// (edge frames repeat), as fw::models::extract_windows lays them out: (B, W * C, F, K).
Tensor gather_windows(const FrameData& data, const std::vector<int64_t>& frames, const fw::models::ContextSpec& spec);

// Phone names of a phones.txt (dense ids from 0); id of "sil" or -1.
std::vector<std::string> read_phones(const std::string& path);

// ---------------------------------------------------------------------------------------------
// Training (train.cpp)
// ---------------------------------------------------------------------------------------------

struct ModelSpec {
  std::string kind = "vgg10";    // classic | vgg6 | vgg8 | vgg10
  double width = 1.0;            // channel multiplier of the conv table
  int64_t fc_dim = 2048, num_fc = 3;
  int64_t scales = 1;            // 1: one window (16 frames VGG, 11 classic); 3: ±5/1, ±10/2, ±20/4
  bool batch_norm = false;
  std::string init = "kaiming";  // kaiming | torch7
};
fw::models::ModelConfig model_config(const ModelSpec& spec, const std::vector<int64_t>& classes, int64_t channels,
                                     int64_t bins);
fw::models::ContextSpec context_spec(const ModelSpec& spec);

struct TrainOptions {
  std::string exp;               // experiment dir: config, checkpoint, logs, final model
  std::vector<LangSpec> langs;   // one: monolingual; several: shared trunk + per-language heads
  ModelSpec model;
  LoadOptions load;
  int64_t epochs = 4;
  int64_t frames_per_epoch = 0;  // 0: the number of training frames (all languages)
  int64_t batch_size = 256;
  // sgd (Nesterov momentum) | adam | adam-sgd: Adam for epochs [0, switch_epoch), then SGD with
  // Nesterov momentum for the rest (the paper's "Adam then SGD fine-tuning"; Note [Adam then SGD]).
  std::string optimizer = "sgd";
  double lr = 0.02, momentum = 0.9, weight_decay = 0, lr_decay = 0.7;  // lr of epoch e: lr * lr_decay^e
  int64_t switch_epoch = 0;      // adam-sgd only (required there): epochs of Adam, 1 <= K < epochs; 0 = unset
  double sgd_lr = 0;             // adam-sgd only (required there): lr of epoch e >= K: sgd_lr * lr_decay^(e-K)
  double gamma = 0.8;            // frame sampling p_s ∝ f_s^γ (per language)
  std::string lang_weighting = "frames";  // frames: languages in proportion to their frames; uniform
  uint64_t seed = 1;
  int64_t threads = 0;           // 0: leave fw's setting
  bool compile = false;          // fw::compile the trunk and heads (README "fw::compile": no faster here)
  bool autocast = false;         // forward and loss under CPU autocast to bfloat16 (README "Mixed precision")
  int64_t log_every = 50;        // steps between CSV log rows / progress lines
  int64_t valid_frames = 4000;   // dev frames scored after each epoch (0: none)
  bool resume = true;            // continue from exp/checkpoint.safetensors when its config matches
  bool progress = true;          // progress lines on stderr
  int64_t stop_after_epochs = 0; // > 0: return after this many epochs of this call (tests, time limits)
};

struct EpochLog {
  int64_t epoch = 0;             // 1-based
  double loss = 0, accuracy = 0; // training batches of the epoch
  double valid_accuracy = -1;    // dev frames (-1: not measured)
  double frames_per_second = 0, seconds = 0, lr = 0;
  std::string optimizer;         // the optimizer that ran this epoch: sgd | adam
};
struct TrainResult {
  std::vector<double> step_losses;  // losses of the steps run by this call, in order
  std::vector<EpochLog> epochs;     // epochs run by this call
  int64_t first_epoch = 0;          // 0-based epoch this call started at (> 0 after a resume)
  bool already_done = false;        // the checkpoint had all epochs: nothing to do
  int64_t switched_at_epoch = 0;    // adam-sgd: the 1-based epoch at which this call switched to SGD (0: none)
};
TrainResult train(const TrainOptions& options);

// The experiment's configuration as written to exp/config.txt (languages, model, training).
KeyValues train_config(const TrainOptions& options);
// Reads exp/config.txt back (languages and model; training options other than seed are not needed
// for evaluation).
TrainOptions read_train_config(const std::string& exp);

// A trained model and what evaluation needs (loaded from exp/checkpoint.safetensors).
struct LoadedModel {
  TrainOptions config;
  fw::models::AcousticCnn net = nullptr;
  Tensor mean, std;                        // input normalisation (C, F)
  std::vector<std::vector<double>> log_priors;  // per language: log class priors (training alignments)
  int64_t epochs_done = 0;
};
LoadedModel load_model(const std::string& exp);

// ---------------------------------------------------------------------------------------------
// Decoding and scoring (decode.cpp)
// ---------------------------------------------------------------------------------------------

// Log class priors from class counts, add-one smoothed.
std::vector<double> log_priors_from_counts(const std::vector<int64_t>& counts);

// Best path through a phone loop: one state per class, staying costs nothing, entering another
// class costs `penalty` (a phone insertion penalty, in log units). Scores: scale * loglik[t][k].
// loglik is (T, K) row-major. Returns the class of every frame.
std::vector<int32_t> viterbi_phone_loop(const float* loglik, int64_t T, int64_t K, double penalty, double scale = 1.0);

// Frame classes -> phone sequence: consecutive repeats merged, then class `drop` (silence) removed
// (drop < 0: nothing removed).
std::vector<int32_t> collapse(const std::vector<int32_t>& frames, int32_t drop);

struct EditCounts {
  int64_t ref = 0, sub = 0, del = 0, ins = 0, cor = 0;
  int64_t errors() const { return sub + del + ins; }
  double rate() const { return ref > 0 ? 100.0 * double(errors()) / double(ref) : 0.0; }
  EditCounts& operator+=(const EditCounts& o);
};
// Levenshtein alignment of hyp against ref with unit costs; among the alignments of minimal cost
// the counts are those of the backtrace that prefers substitutions, then deletions, then insertions.
EditCounts align(const std::vector<int32_t>& ref, const std::vector<int32_t>& hyp);

// ---------------------------------------------------------------------------------------------
// Evaluation and reports (eval.cpp)
// ---------------------------------------------------------------------------------------------

struct EvalOptions {
  std::vector<std::string> splits = {"dev", "test"};
  std::string tune_split = "dev";        // where the insertion penalty is chosen
  std::vector<double> penalties = {0, 1, 2, 3, 4, 6, 8, 10, 12, 16};
  double acoustic_scale = 1.0;
  int64_t threads = 0;
  int64_t batch_size = 1024;
  bool per = true;                       // PER needs phone alignments and phones.txt
  // WER (when fw_asr is built, see wer_available()): words decoded with examples/asr's lexicon +
  // bigram graph built from the training text; the acoustic scale is chosen on tune_split.
  bool wer = true;
  std::vector<double> wer_scales = {0.1, 0.2, 0.4};
  double wer_beam = 12.0;
};
// True when fw_recipe was built with fw_asr (OpenFst found): evaluate() can fill the WER column.
bool wer_available();
// One row of exp/results.tsv.
struct EvalRow {
  std::string lang, split;
  int64_t frames = 0, utts = 0;
  double frame_accuracy = 0;
  double per = -1, penalty = 0;          // -1: not computed
  double wer = -1;                       // -1: not computed (no fw_asr, lexicon or transcripts)
  double wer_scale = 0;                  // acoustic scale of the WER decoding (tuned on dev)
};
// Frame accuracy per language and split; PER on a phone loop with the penalty tuned on tune_split.
// Writes exp/results.tsv and returns its rows.
std::vector<EvalRow> evaluate(const std::string& exp, const EvalOptions& options);
std::vector<EvalRow> read_results(const std::string& path);

// Log posteriors (T, K) of one utterance's features (T, C * F) under language `lang`'s head.
Tensor log_posteriors(LoadedModel& model, int64_t lang, const Tensor& feats, int64_t batch_size = 1024);
// Writes log-likelihoods (log posterior - log prior) of every utterance of `feats_rspec` as a Kaldi
// float matrix archive (wspecifier, e.g. "ark:loglikes.ark" or "ark,scp:a.ark,a.scp").
int64_t write_loglikes(const std::string& exp, const std::string& lang, const std::string& feats_rspec,
                       const std::string& wspecifier, double acoustic_scale, int64_t threads);

// The comparison table: one row per system (label, experiment dirs whose results.tsv are merged),
// one column per language plus the average, for frame accuracy, PER and WER, on `split`.
struct TableSystem {
  std::string label;
  std::vector<std::string> exps;
};
// Languages appear in `lang_order` first, then in the order the results name them.
std::string comparison_table(const std::vector<TableSystem>& systems, const std::string& split,
                             const std::vector<std::string>& lang_order = {});

// ---------------------------------------------------------------------------------------------
// Command line (cli.cpp)
// ---------------------------------------------------------------------------------------------
// `program` is "fw-babel" or "fw-swbd" (usage text only).
int recipe_main(int argc, char** argv, const std::string& program);

}  // namespace fw::recipe
