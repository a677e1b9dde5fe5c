// fw::models::ModelConfig: which acoustic CNN to build (Sercu et al., ICASSP 2016, Table 1) and
// the layer table it resolves to. See models/README.md for the paddings and pools chosen.
#pragma once
#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "fw/nn/options.h"

namespace fw::models {

// The paper's configurations: the classic 2-conv CNN baseline and the 6-, 8- and 10-conv VGG stacks.
enum class ModelKind { kClassic, kVgg6, kVgg8, kVgg10 };
// Parameter initialisation; see Note [Initialisation schemes] in models/acoustic_cnn.cpp.
enum class InitScheme {
  kKaiming,  // He et al. 2015: U(±sqrt(6 / fan_in)) before a ReLU, U(±sqrt(3 / fan_in)) for the output; biases 0
  kTorch7,   // Torch7's nn default: weights and biases U(±1 / sqrt(fan_in))
};

// "classic", "vgg6", "vgg8", "vgg10".
std::string kind_name(ModelKind kind);
// "kaiming", "torch7".
std::string init_name(InitScheme scheme);

// One convolution: out_channels filters of kernel (freq, time) with zero padding (freq, time), stride 1.
struct ConvSpec {
  int64_t out_channels = 0;
  std::array<int64_t, 2> kernel = {3, 3};
  std::array<int64_t, 2> padding = {1, 1};
};
// A max-pool of kernel (freq, time) and stride (freq, time).
struct PoolSpec {
  std::array<int64_t, 2> kernel = {2, 2};
  std::array<int64_t, 2> stride = {2, 2};
};
// Convolutions (each followed by ReLU, or batch norm and ReLU), then an optional max-pool.
struct StageSpec {
  std::vector<ConvSpec> convs;
  std::optional<PoolSpec> pool;
};

// A 3x3 convolution padded (1, 1) (the VGG default) or with the given padding.
inline ConvSpec conv3x3(int64_t out_channels, std::array<int64_t, 2> padding = {1, 1}) {
  return ConvSpec{out_channels, {3, 3}, padding};
}

// Everything that defines an acoustic CNN. Input is (N, in_channels, num_freq, context); each
// language l gets num_fc hidden layers of fc_dim units (ReLU) and an output layer of languages[l]
// classes (logits; losses apply log_softmax).
struct ModelConfig {
  FW_ARG(ModelKind, kind) = ModelKind::kVgg10;
  // Output classes (HMM states) of each language; one entry per language, at least one.
  FW_ARG(std::vector<int64_t>, languages) = {};
  // Hidden fully connected layers per language (the paper's best model: 3).
  FW_ARG(int64_t, num_fc) = 3;
  FW_ARG(int64_t, fc_dim) = 2048;
  // Input feature maps: 3 for log-mel + delta + delta-delta, 9 for three context scales.
  FW_ARG(int64_t, in_channels) = 3;
  FW_ARG(int64_t, num_freq) = 40;
  // Frames in the input window; nullopt: 16 for the VGG kinds, 11 for classic.
  FW_ARG(std::optional<int64_t>, context) = std::nullopt;
  // Multiplies the channel counts of the kind's table (rounded, at least 1); ignored with `stages`.
  FW_ARG(double, width) = 1.0;
  // Explicit conv stages replacing the kind's table (channel lists, kernels, paddings, pools).
  FW_ARG(std::vector<StageSpec>, stages) = {};
  // Batch norm between each convolution and its ReLU (the convolution then has no bias).
  FW_ARG(bool, batch_norm) = false;
  FW_ARG(InitScheme, init) = InitScheme::kKaiming;
};

// The configured context (or the kind's default: 16 frames VGG, 11 classic).
int64_t context_frames(const ModelConfig& config);
// The paper's conv stages of `kind` at full width (Table 1; paddings as in models/README.md).
std::vector<StageSpec> default_stages(ModelKind kind);
// The conv stages the model builds: config.stages() if given, else default_stages scaled by width.
std::vector<StageSpec> resolved_stages(const ModelConfig& config);
// Checks the config (languages, sizes, kernels) and that every feature map stays non-empty;
// throws fw::Error naming the offending field or layer.
void validate(const ModelConfig& config);

// One row of a model's layer table.
struct LayerInfo {
  std::string name;                  // "conv3_1", "pool2", "lang0.fc1"
  std::string type;                  // "Conv2d 128->256 k3x3 p0x1"
  std::vector<int64_t> output_shape;  // for the batch size the table was made for
  int64_t num_parameters = 0;
};

}  // namespace fw::models
