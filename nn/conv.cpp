// Conv1d/2d/3d, ConvTranspose1d/2d/3d.
#include "fw/nn/modules/conv.h"

#include <cctype>
#include <cmath>

#include "fw/nn/functional.h"
#include "fw/nn/init.h"
#include "nn/print_util.h"

namespace fw::nn {

namespace {

template <size_t D>
detail::ConvNdOptions<D> nd_options(const ConvOptions<D>& o) {
  return detail::ConvNdOptions<D>(o.in_channels(), o.out_channels(), o.kernel_size())
      .stride(o.stride())
      .padding(o.padding())
      .dilation(o.dilation())
      .groups(o.groups())
      .bias(o.bias())
      .padding_mode(o.padding_mode());
}

template <size_t D>
detail::ConvNdOptions<D> nd_options(const ConvTransposeOptions<D>& o) {
  return detail::ConvNdOptions<D>(o.in_channels(), o.out_channels(), o.kernel_size())
      .stride(o.stride())
      .padding(o.padding())
      .dilation(o.dilation())
      .transposed(true)
      .output_padding(o.output_padding())
      .groups(o.groups())
      .bias(o.bias())
      .padding_mode(o.padding_mode());
}

template <size_t D>
bool all_equal(const ExpandingArray<D>& a, int64_t v) {
  for (int64_t x : *a)
    if (x != v) return false;
  return true;
}

// Explicit pads (last spatial dim first, before/after pairs) for padding_mode != zeros.
template <size_t D>
std::vector<int64_t> reversed_padding(const detail::ConvNdOptions<D>& o) {
  std::vector<int64_t> pad;
  for (size_t i = D; i-- > 0;) {
    int64_t before = 0, after = 0;
    if (auto* p = std::get_if<ExpandingArray<D>>(&o.padding())) {
      before = after = (**p)[i];
    } else if (std::holds_alternative<enumtype::kSame>(o.padding())) {
      int64_t total = (*o.dilation())[i] * ((*o.kernel_size())[i] - 1);
      before = total / 2;
      after = total - before;
    }
    pad.push_back(before);
    pad.push_back(after);
  }
  return pad;
}

template <size_t D>
Tensor conv_forward(const detail::ConvNdOptions<D>& o, const Tensor& input, const Tensor& weight, const Tensor& bias) {
  namespace F = functional;
  Tensor x = input;
  auto fo = F::ConvFuncOptions<D>().bias(bias).stride(o.stride()).dilation(o.dilation()).groups(o.groups());
  if (std::holds_alternative<enumtype::kZeros>(o.padding_mode())) {
    fo.padding(o.padding());
  } else {
    x = F::pad(x, F::PadFuncOptions(reversed_padding(o)).mode(std::visit(
                      [](const auto& m) -> F::PadFuncOptions::mode_t {
                        if constexpr (std::is_same_v<std::decay_t<decltype(m)>, enumtype::kZeros>)
                          return enumtype::kConstant();
                        else
                          return m;
                      },
                      o.padding_mode())));
    fo.padding(0);
  }
  if constexpr (D == 1) return F::conv1d(x, weight, fo);
  else if constexpr (D == 2) return F::conv2d(x, weight, fo);
  else return F::conv3d(x, weight, fo);
}

// output_padding giving `output_size` (its last D entries), as torch's _output_padding.
template <size_t D>
std::vector<int64_t> output_padding_for(const detail::ConvNdOptions<D>& o, const Tensor& input,
                                        const std::optional<std::vector<int64_t>>& output_size) {
  std::vector<int64_t> r(o.output_padding()->begin(), o.output_padding()->end());
  if (!output_size) return r;
  const auto& os = *output_size;
  const auto& pad = std::get<ExpandingArray<D>>(o.padding());
  FW_CHECK(os.size() == D || os.size() == D + 2 || (os.size() == D + 1 && input.dim() == int64_t(D) + 1),
           "[ConvTranspose", D, "d] output_size must have ", D, " or ", D + 2, " elements (got ", os.size(), ")");
  for (size_t i = 0; i < D; i++) {
    int64_t in = input.size(input.dim() - int64_t(D) + int64_t(i));
    int64_t min_size = (in - 1) * (*o.stride())[i] - 2 * (*pad)[i] +
                       (*o.dilation())[i] * ((*o.kernel_size())[i] - 1) + 1;
    int64_t max_size = min_size + (*o.stride())[i] - 1;
    int64_t want = os[os.size() - D + i];
    FW_CHECK(want >= min_size && want <= max_size, "[ConvTranspose", D, "d] requested an output size of ", want,
             " in spatial dim ", i, ", but valid sizes range from ", min_size, " to ", max_size,
             " (for an input of size ", in, ")");
    r[i] = want - min_size;
  }
  return r;
}

}  // namespace

template <size_t D, class Derived>
void ConvNdImpl<D, Derived>::reset() {
  const auto& o = options;
  const char* kind = o.transposed() ? "ConvTranspose" : "Conv";
  FW_CHECK(o.in_channels() > 0 && o.out_channels() > 0 && o.groups() > 0, "[", kind, D,
           "d] in_channels, out_channels and groups must be positive, got ", o.in_channels(), ", ", o.out_channels(),
           " and ", o.groups());
  FW_CHECK(o.in_channels() % o.groups() == 0, "[", kind, D, "d] in_channels must be divisible by groups (got ",
           o.in_channels(), " and ", o.groups(), ")");
  FW_CHECK(o.out_channels() % o.groups() == 0, "[", kind, D, "d] out_channels must be divisible by groups (got ",
           o.out_channels(), " and ", o.groups(), ")");
  if (std::holds_alternative<enumtype::kSame>(o.padding()))
    FW_CHECK(all_equal<D>(o.stride(), 1), "[", kind, D, "d] padding='same' is not supported for strided convolutions");
  if (o.transposed())
    FW_CHECK(std::holds_alternative<enumtype::kZeros>(o.padding_mode()), "[ConvTranspose", D,
             "d] Only `zeros` padding mode is supported");
  std::vector<int64_t> shape = o.transposed()
                                   ? std::vector<int64_t>{o.in_channels(), o.out_channels() / o.groups()}
                                   : std::vector<int64_t>{o.out_channels(), o.in_channels() / o.groups()};
  for (int64_t k : *o.kernel_size()) shape.push_back(k);
  weight = this->register_parameter("weight", fw::empty(shape));
  bias = this->register_parameter("bias", o.bias() ? fw::empty({o.out_channels()}) : Tensor(), o.bias());
  reset_parameters();
}

template <size_t D, class Derived>
void ConvNdImpl<D, Derived>::reset_parameters() {
  init::kaiming_uniform_(weight, std::sqrt(5.0));
  if (bias.defined()) {
    auto [fan_in, fan_out] = init::_calculate_fan_in_and_fan_out(weight);
    double bound = fan_in > 0 ? 1.0 / std::sqrt(double(fan_in)) : 0.0;
    init::uniform_(bias, -bound, bound);
  }
}

template <size_t D, class Derived>
void ConvNdImpl<D, Derived>::pretty_print(std::ostream& stream) const {
  const auto& o = options;
  stream << "fw::nn::" << (o.transposed() ? "ConvTranspose" : "Conv") << D << "d(" << o.in_channels() << ", "
         << o.out_channels() << ", kernel_size=" << detail::list(o.kernel_size())
         << ", stride=" << detail::list(o.stride());
  if (std::holds_alternative<enumtype::kValid>(o.padding())) {
    stream << ", padding='valid'";
  } else if (std::holds_alternative<enumtype::kSame>(o.padding())) {
    stream << ", padding='same'";
  } else {
    const auto& p = std::get<ExpandingArray<D>>(o.padding());
    if (!all_equal<D>(p, 0)) stream << ", padding=" << detail::list(p);
  }
  if (!all_equal<D>(o.dilation(), 1)) stream << ", dilation=" << detail::list(o.dilation());
  if (!all_equal<D>(o.output_padding(), 0)) stream << ", output_padding=" << detail::list(o.output_padding());
  if (o.groups() != 1) stream << ", groups=" << o.groups();
  if (!o.bias()) stream << ", bias=false";
  if (!std::holds_alternative<enumtype::kZeros>(o.padding_mode()))
    stream << ", padding_mode=" << std::visit([](const auto& m) {  // libtorch's enum name: kReflect
      std::string n = m.name();
      n[0] = char(std::toupper(static_cast<unsigned char>(n[0])));
      return "k" + n;
    }, o.padding_mode());
  stream << ")";
}

template class ConvNdImpl<1, Conv1dImpl>;
template class ConvNdImpl<2, Conv2dImpl>;
template class ConvNdImpl<1, ConvTranspose1dImpl>;
template class ConvNdImpl<2, ConvTranspose2dImpl>;
template class ConvNdImpl<3, Conv3dImpl>;
template class ConvNdImpl<3, ConvTranspose3dImpl>;

Conv1dImpl::Conv1dImpl(Conv1dOptions options_) : ConvNdImpl(nd_options(options_)) { reset(); }
Tensor Conv1dImpl::forward(const Tensor& input) { return conv_forward(options, input, weight, bias); }

Conv2dImpl::Conv2dImpl(Conv2dOptions options_) : ConvNdImpl(nd_options(options_)) { reset(); }
Tensor Conv2dImpl::forward(const Tensor& input) { return conv_forward(options, input, weight, bias); }

Conv3dImpl::Conv3dImpl(Conv3dOptions options_) : ConvNdImpl(nd_options(options_)) { reset(); }
Tensor Conv3dImpl::forward(const Tensor& input) { return conv_forward(options, input, weight, bias); }

ConvTranspose1dImpl::ConvTranspose1dImpl(ConvTranspose1dOptions options_) : ConvNdImpl(nd_options(options_)) {
  reset();
}
Tensor ConvTranspose1dImpl::forward(const Tensor& input, const std::optional<std::vector<int64_t>>& output_size) {
  const auto& o = options;
  return fw::conv_transpose1d(input, weight, bias, o.stride(), std::get<ExpandingArray<1>>(o.padding()),
                              output_padding_for(o, input, output_size), o.groups(), o.dilation());
}

ConvTranspose2dImpl::ConvTranspose2dImpl(ConvTranspose2dOptions options_) : ConvNdImpl(nd_options(options_)) {
  reset();
}
Tensor ConvTranspose2dImpl::forward(const Tensor& input, const std::optional<std::vector<int64_t>>& output_size) {
  const auto& o = options;
  return fw::conv_transpose2d(input, weight, bias, o.stride(), std::get<ExpandingArray<2>>(o.padding()),
                              output_padding_for(o, input, output_size), o.groups(), o.dilation());
}

ConvTranspose3dImpl::ConvTranspose3dImpl(ConvTranspose3dOptions options_) : ConvNdImpl(nd_options(options_)) {
  reset();
}
Tensor ConvTranspose3dImpl::forward(const Tensor& input, const std::optional<std::vector<int64_t>>& output_size) {
  const auto& o = options;
  return fw::conv_transpose3d(input, weight, bias, o.stride(), std::get<ExpandingArray<3>>(o.padding()),
                              output_padding_for(o, input, output_size), o.groups(), o.dilation());
}

}  // namespace fw::nn
