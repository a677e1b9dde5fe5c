// Convolution modules: Conv1d/2d/3d, ConvTranspose1d/2d/3d with libtorch's options
// and initialisation (kaiming_uniform_(a = sqrt(5)) weights, U(-1/sqrt(fan_in), 1/sqrt(fan_in)) bias).
#pragma once
#include <optional>
#include <variant>
#include <vector>

#include "fw/nn/module.h"
#include "fw/nn/options.h"

namespace fw::nn {

namespace detail {
// Everything a convolution layer needs, transposed or not (libtorch's detail::ConvNdOptions).
template <size_t D>
struct ConvNdOptions {
  using padding_t = std::variant<ExpandingArray<D>, enumtype::kValid, enumtype::kSame>;
  using padding_mode_t = std::variant<enumtype::kZeros, enumtype::kReflect, enumtype::kReplicate, enumtype::kCircular>;
  ConvNdOptions(int64_t in_channels, int64_t out_channels, ExpandingArray<D> kernel_size)
      : in_channels_(in_channels), out_channels_(out_channels), kernel_size_(kernel_size) {}
  FW_ARG(int64_t, in_channels);
  FW_ARG(int64_t, out_channels);
  FW_ARG(ExpandingArray<D>, kernel_size);
  FW_ARG(ExpandingArray<D>, stride) = 1;
  FW_ARG(padding_t, padding) = ExpandingArray<D>(0);
  FW_ARG(ExpandingArray<D>, dilation) = 1;
  FW_ARG(bool, transposed) = false;
  FW_ARG(ExpandingArray<D>, output_padding) = 0;
  FW_ARG(int64_t, groups) = 1;
  FW_ARG(bool, bias) = true;
  FW_ARG(padding_mode_t, padding_mode) = enumtype::kZeros();

 public:
  auto padding(int64_t p) -> decltype(*this) { return padding(padding_t(ExpandingArray<D>(p))); }
  auto padding(std::initializer_list<int64_t> p) -> decltype(*this) { return padding(padding_t(ExpandingArray<D>(p))); }
};
}  // namespace detail

// Options of Conv1d/Conv2d: in_channels, out_channels, kernel_size, then stride, padding (ints,
// fw::kValid or fw::kSame), dilation, groups, bias, padding_mode (kZeros, kReflect, kReplicate, kCircular).
template <size_t D>
struct ConvOptions {
  using padding_t = typename detail::ConvNdOptions<D>::padding_t;
  using padding_mode_t = typename detail::ConvNdOptions<D>::padding_mode_t;
  ConvOptions(int64_t in_channels, int64_t out_channels, ExpandingArray<D> kernel_size)
      : in_channels_(in_channels), out_channels_(out_channels), kernel_size_(kernel_size) {}
  FW_ARG(int64_t, in_channels);
  FW_ARG(int64_t, out_channels);
  FW_ARG(ExpandingArray<D>, kernel_size);
  FW_ARG(ExpandingArray<D>, stride) = 1;
  FW_ARG(padding_t, padding) = ExpandingArray<D>(0);
  FW_ARG(ExpandingArray<D>, dilation) = 1;
  FW_ARG(int64_t, groups) = 1;
  FW_ARG(bool, bias) = true;
  FW_ARG(padding_mode_t, padding_mode) = enumtype::kZeros();

 public:
  auto padding(int64_t p) -> decltype(*this) { return padding(padding_t(ExpandingArray<D>(p))); }
  auto padding(std::initializer_list<int64_t> p) -> decltype(*this) { return padding(padding_t(ExpandingArray<D>(p))); }
};
using Conv1dOptions = ConvOptions<1>;
using Conv2dOptions = ConvOptions<2>;
using Conv3dOptions = ConvOptions<3>;

// Options of ConvTranspose1d/2d: in_channels, out_channels, kernel_size, then stride, padding,
// output_padding, groups, bias, dilation, padding_mode (zeros only).
template <size_t D>
struct ConvTransposeOptions {
  using padding_mode_t = typename detail::ConvNdOptions<D>::padding_mode_t;
  ConvTransposeOptions(int64_t in_channels, int64_t out_channels, ExpandingArray<D> kernel_size)
      : in_channels_(in_channels), out_channels_(out_channels), kernel_size_(kernel_size) {}
  FW_ARG(int64_t, in_channels);
  FW_ARG(int64_t, out_channels);
  FW_ARG(ExpandingArray<D>, kernel_size);
  FW_ARG(ExpandingArray<D>, stride) = 1;
  FW_ARG(ExpandingArray<D>, padding) = 0;
  FW_ARG(ExpandingArray<D>, output_padding) = 0;
  FW_ARG(int64_t, groups) = 1;
  FW_ARG(bool, bias) = true;
  FW_ARG(ExpandingArray<D>, dilation) = 1;
  FW_ARG(padding_mode_t, padding_mode) = enumtype::kZeros();
};
using ConvTranspose1dOptions = ConvTransposeOptions<1>;
using ConvTranspose2dOptions = ConvTransposeOptions<2>;
using ConvTranspose3dOptions = ConvTransposeOptions<3>;

// Shared state of the convolution layers: options, weight ((out, in / groups, *k), transposed:
// (in, out / groups, *k)) and bias.
template <size_t D, class Derived>
class ConvNdImpl : public Cloneable<Derived> {
 public:
  explicit ConvNdImpl(detail::ConvNdOptions<D> options_) : options(std::move(options_)) {}
  void reset() override;
  // Re-samples weight and bias.
  void reset_parameters();
  void pretty_print(std::ostream& stream) const override;

  detail::ConvNdOptions<D> options;
  Tensor weight;
  Tensor bias;  // undefined without bias
};

// Convolution over (N, C, L) or (C, L) inputs.
class Conv1dImpl : public ConvNdImpl<1, Conv1dImpl> {
 public:
  Conv1dImpl(int64_t input_channels, int64_t output_channels, ExpandingArray<1> kernel_size)
      : Conv1dImpl(Conv1dOptions(input_channels, output_channels, kernel_size)) {}
  explicit Conv1dImpl(Conv1dOptions options_);
  Tensor forward(const Tensor& input);
};
FW_MODULE(Conv1d);

// Convolution over (N, C, H, W) or (C, H, W) inputs.
class Conv2dImpl : public ConvNdImpl<2, Conv2dImpl> {
 public:
  Conv2dImpl(int64_t input_channels, int64_t output_channels, ExpandingArray<2> kernel_size)
      : Conv2dImpl(Conv2dOptions(input_channels, output_channels, kernel_size)) {}
  explicit Conv2dImpl(Conv2dOptions options_);
  Tensor forward(const Tensor& input);
};
FW_MODULE(Conv2d);

// Convolution over (N, C, D, H, W) or (C, D, H, W) inputs.
class Conv3dImpl : public ConvNdImpl<3, Conv3dImpl> {
 public:
  Conv3dImpl(int64_t input_channels, int64_t output_channels, ExpandingArray<3> kernel_size)
      : Conv3dImpl(Conv3dOptions(input_channels, output_channels, kernel_size)) {}
  explicit Conv3dImpl(Conv3dOptions options_);
  Tensor forward(const Tensor& input);
};
FW_MODULE(Conv3d);

// Transposed convolution; output_size (the last 1, 2 or 3 entries are used) picks output_padding.
class ConvTranspose1dImpl : public ConvNdImpl<1, ConvTranspose1dImpl> {
 public:
  ConvTranspose1dImpl(int64_t input_channels, int64_t output_channels, ExpandingArray<1> kernel_size)
      : ConvTranspose1dImpl(ConvTranspose1dOptions(input_channels, output_channels, kernel_size)) {}
  explicit ConvTranspose1dImpl(ConvTranspose1dOptions options_);
  Tensor forward(const Tensor& input, const std::optional<std::vector<int64_t>>& output_size = std::nullopt);
};
FW_MODULE(ConvTranspose1d);

class ConvTranspose2dImpl : public ConvNdImpl<2, ConvTranspose2dImpl> {
 public:
  ConvTranspose2dImpl(int64_t input_channels, int64_t output_channels, ExpandingArray<2> kernel_size)
      : ConvTranspose2dImpl(ConvTranspose2dOptions(input_channels, output_channels, kernel_size)) {}
  explicit ConvTranspose2dImpl(ConvTranspose2dOptions options_);
  Tensor forward(const Tensor& input, const std::optional<std::vector<int64_t>>& output_size = std::nullopt);
};
FW_MODULE(ConvTranspose2d);

class ConvTranspose3dImpl : public ConvNdImpl<3, ConvTranspose3dImpl> {
 public:
  ConvTranspose3dImpl(int64_t input_channels, int64_t output_channels, ExpandingArray<3> kernel_size)
      : ConvTranspose3dImpl(ConvTranspose3dOptions(input_channels, output_channels, kernel_size)) {}
  explicit ConvTranspose3dImpl(ConvTranspose3dOptions options_);
  Tensor forward(const Tensor& input, const std::optional<std::vector<int64_t>>& output_size = std::nullopt);
};
FW_MODULE(ConvTranspose3d);

extern template class ConvNdImpl<1, Conv1dImpl>;
extern template class ConvNdImpl<2, Conv2dImpl>;
extern template class ConvNdImpl<1, ConvTranspose1dImpl>;
extern template class ConvNdImpl<2, ConvTranspose2dImpl>;
extern template class ConvNdImpl<3, Conv3dImpl>;
extern template class ConvNdImpl<3, ConvTranspose3dImpl>;

}  // namespace fw::nn
