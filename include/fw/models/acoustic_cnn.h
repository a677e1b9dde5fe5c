// fw::models::AcousticCnn: the very deep (multilingual) CNN acoustic model of Sercu et al.,
// ICASSP 2016 — a shared conv trunk and one untied stack of fully connected layers plus output
// layer per language (Note [Multilingual routing] in models/acoustic_cnn.cpp).
#pragma once
#include <cstdint>
#include <ostream>
#include <vector>

#include "fw/models/config.h"
#include "fw/nn/module.h"
#include "fw/nn/modules/container.h"

namespace fw::models {

// Logits of a mixed-language batch, split by language.
struct RoutedLogits {
  // logits[l]: (n_l, languages[l]) for the n_l frames of language l; undefined if l is absent.
  std::vector<Tensor> logits;
  // index[l]: (n_l,) Long positions of those frames in the batch, ascending; undefined if absent.
  std::vector<Tensor> index;
};

// Shared conv trunk ("trunk": conv/bn/relu/pool layers and a flatten) and per-language heads
// ("heads.<l>": fc1, relu1, ..., out). Inputs are (N, in_channels, num_freq, context).
class AcousticCnnImpl : public nn::Cloneable<AcousticCnnImpl> {
 public:
  explicit AcousticCnnImpl(ModelConfig config);
  // Builds trunk and heads from `options` and initialises them (options.init()).
  void reset() override;
  // Re-samples every weight and bias with the configured scheme (batch norm: weight 1, bias 0).
  void reset_parameters();
  void pretty_print(std::ostream& stream) const override;

  // The trunk's flattened output (N, trunk_features()).
  Tensor features(const Tensor& x);
  // The trunk's output after each stage (after its pool, or its last conv when it has none).
  std::vector<Tensor> feature_maps(const Tensor& x);
  // Logits of a single-language model (throws if there are several languages).
  Tensor forward(const Tensor& x);
  // Logits of every frame under language `lang`'s head (evaluation).
  Tensor forward(const Tensor& x, int64_t lang);
  // Each frame through its own language's head; lang_ids is (N,) integer.
  RoutedLogits forward(const Tensor& x, const Tensor& lang_ids);
  // Mean over the batch of each frame's cross entropy under its language's head; targets (N,).
  Tensor multilingual_cross_entropy(const Tensor& x, const Tensor& lang_ids, const Tensor& targets);

  // Layer, output shape and parameters of every layer for input (N, C, F, T); default
  // (1, in_channels, num_freq, context). Computed from the config, without running the model.
  std::vector<LayerInfo> layer_table(std::vector<int64_t> input_shape = {}) const;
  // The layer table as text, with the trunk, head and total parameter counts.
  void print_summary(std::ostream& stream, std::vector<int64_t> input_shape = {}) const;
  // Elements of all parameters (trunk and every head).
  int64_t num_parameters() const;
  int64_t num_languages() const { return int64_t(options.languages().size()); }
  // Size of the trunk's flattened output (the first FC layer's input).
  int64_t trunk_features() const;

  ModelConfig options;
  nn::Sequential trunk = nullptr;
  nn::ModuleList heads = nullptr;

 private:
  void check_input(const Tensor& x, const char* fn) const;
  void check_lang(int64_t lang, const char* fn) const;
  std::vector<StageSpec> stages_;
  std::vector<size_t> stage_ends_;  // trunk index one past each stage's last module
};
FW_MODULE(AcousticCnn);

// Re-initialises a weight (and bias, if defined) of a Conv or Linear layer with `scheme`;
// before_relu picks Kaiming's ReLU gain (sqrt 2) over the linear one.
void init_layer_(Tensor weight, Tensor bias, InitScheme scheme, bool before_relu = true);

}  // namespace fw::models
