// fw::nn::init: in-place parameter initialisers (libtorch's torch::nn::init). Each one runs
// under NoGradGuard and returns its argument.
#pragma once
#include <tuple>
#include <variant>

#include "fw/nn/options.h"
#include "fw/ops.h"
#include "fw/tensor.h"

namespace fw {

// Nonlinearity and fan-mode tags (fw::kReLU, fw::kFanIn, ...); kLinear comes from options.h.
namespace enumtype {
#define FW_INIT_TAG(Name, str)                          \
  struct Name {                                         \
    static constexpr const char* name() { return str; } \
    bool operator==(const Name&) const { return true; } \
    bool operator!=(const Name&) const { return false; } \
  };
FW_INIT_TAG(kConv1D, "conv1d")
FW_INIT_TAG(kConv2D, "conv2d")
FW_INIT_TAG(kConv3D, "conv3d")
FW_INIT_TAG(kConvTranspose1D, "conv_transpose1d")
FW_INIT_TAG(kConvTranspose2D, "conv_transpose2d")
FW_INIT_TAG(kConvTranspose3D, "conv_transpose3d")
FW_INIT_TAG(kSigmoid, "sigmoid")
FW_INIT_TAG(kTanh, "tanh")
FW_INIT_TAG(kReLU, "relu")
FW_INIT_TAG(kLeakyReLU, "leaky_relu")
FW_INIT_TAG(kFanIn, "fan_in")
FW_INIT_TAG(kFanOut, "fan_out")
#undef FW_INIT_TAG
}  // namespace enumtype

inline constexpr enumtype::kConv1D kConv1D{};
inline constexpr enumtype::kConv2D kConv2D{};
inline constexpr enumtype::kConv3D kConv3D{};
inline constexpr enumtype::kConvTranspose1D kConvTranspose1D{};
inline constexpr enumtype::kConvTranspose2D kConvTranspose2D{};
inline constexpr enumtype::kConvTranspose3D kConvTranspose3D{};
inline constexpr enumtype::kSigmoid kSigmoid{};
inline constexpr enumtype::kTanh kTanh{};
inline constexpr enumtype::kReLU kReLU{};
inline constexpr enumtype::kLeakyReLU kLeakyReLU{};
inline constexpr enumtype::kFanIn kFanIn{};
inline constexpr enumtype::kFanOut kFanOut{};

namespace nn::init {

using NonlinearityType =
    std::variant<enumtype::kLinear, enumtype::kConv1D, enumtype::kConv2D, enumtype::kConv3D,
                 enumtype::kConvTranspose1D, enumtype::kConvTranspose2D, enumtype::kConvTranspose3D,
                 enumtype::kSigmoid, enumtype::kTanh, enumtype::kReLU, enumtype::kLeakyReLU>;
using FanModeType = std::variant<enumtype::kFanIn, enumtype::kFanOut>;

// The recommended gain for a nonlinearity (torch.nn.init.calculate_gain): 1 for linear/conv/
// sigmoid, 5/3 for tanh, sqrt(2) for relu, sqrt(2 / (1 + param^2)) for leaky_relu.
double calculate_gain(NonlinearityType nonlinearity, double param = 0.01);
// (fan_in, fan_out): size(1) and size(0) times the receptive field (dims 2...); needs >= 2 dims.
std::tuple<int64_t, int64_t> _calculate_fan_in_and_fan_out(const Tensor& tensor);

// Fills with `value`.
Tensor constant_(Tensor tensor, Scalar value);
// Fills with zeros / ones.
Tensor zeros_(Tensor tensor);
Tensor ones_(Tensor tensor);
// The identity matrix (2-D tensors only).
Tensor eye_(Tensor matrix);
// Samples U(low, high).
Tensor uniform_(Tensor tensor, double low = 0, double high = 1);
// Samples N(mean, std^2).
Tensor normal_(Tensor tensor, double mean = 0, double std = 1);
// U(-a, a) with a = gain * sqrt(6 / (fan_in + fan_out)).
Tensor xavier_uniform_(Tensor tensor, double gain = 1.0);
// N(0, std^2) with std = gain * sqrt(2 / (fan_in + fan_out)).
Tensor xavier_normal_(Tensor tensor, double gain = 1.0);
// U(-b, b) with b = gain * sqrt(3 / fan), gain = calculate_gain(nonlinearity, a).
Tensor kaiming_uniform_(Tensor tensor, double a = 0, FanModeType mode = fw::kFanIn,
                        NonlinearityType nonlinearity = fw::kLeakyReLU);
// N(0, std^2) with std = gain / sqrt(fan).
Tensor kaiming_normal_(Tensor tensor, double a = 0, FanModeType mode = fw::kFanIn,
                       NonlinearityType nonlinearity = fw::kLeakyReLU);
// A (semi-)orthogonal matrix scaled by gain: the Q of a Gaussian matrix's QR decomposition with
// R's diagonal made positive; dims after the first are flattened.
Tensor orthogonal_(Tensor tensor, double gain = 1.0);
// The Dirac delta for 3-, 4- and 5-D convolution weights: each output channel (of each of
// `groups` groups) passes its input channel through unchanged.
Tensor dirac_(Tensor tensor, int64_t groups = 1);
// A 2-D matrix with N(0, std^2) entries and ceil(sparsity * rows) zeros in each column.
Tensor sparse_(Tensor tensor, double sparsity, double std = 0.01);
// N(mean, std^2) truncated to [a, b] (inverse-CDF sampling).
Tensor trunc_normal_(Tensor tensor, double mean = 0, double std = 1, double a = -2, double b = 2);

}  // namespace nn::init
}  // namespace fw
