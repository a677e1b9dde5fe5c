// Op-table entries for the nn primitives, and tests of the composites and of fw::nn::functional.
// Fixture cases whose name starts with a composite's name (layer_norm_, conv1d_, max_pool1d_,
// interpolate_, ...) run that composite; their op is the primitive it lowers to
// (tests/fixtures/gen_nn.py documents each op's argument list).
#include <gtest/gtest.h>

#include "tests/op_table.h"

using fw::Tensor;
using fwtest::FixArg;
using fwtest::FixCase;
using V = std::vector<Tensor>;
namespace F = fw::nn::functional;

namespace {

bool starts(const FixCase& c, const char* prefix) { return c.name.rfind(prefix, 0) == 0; }
std::optional<double> opt_f(const FixArg& a) { return a.is_none() ? std::nullopt : std::optional<double>(a.f); }
std::optional<fw::ScalarType> opt_dtype(const FixArg& a) {
  return a.is_none() ? std::nullopt : std::optional<fw::ScalarType>(a.dtype);
}
Tensor f32(std::vector<int64_t> s) { return fw::randn(s); }

// Inputs after x, in order, for the flags that say they are present.
struct Rest {
  const FixCase& c;
  size_t k = 1;
  Tensor next(bool present) { return present ? c.in[k++] : Tensor(); }
};

F::InterpolateFuncOptions::mode_t interp_mode(const std::string& m) {
  if (m == "nearest") return fw::kNearest;
  if (m == "linear") return fw::kLinear;
  if (m == "bilinear") return fw::kBilinear;
  return fw::kArea;
}

// interpolate_* cases: args [size | None, scale0 | None, scale1 | None, mode, align | None, recompute | None].
Tensor run_interpolate(const FixCase& c) {
  const auto& a = c.args;
  F::InterpolateFuncOptions o;
  if (!a[0].is_none()) o.size(a[0].ints);
  if (!a[1].is_none()) o.scale_factor(a[2].is_none() ? std::vector<double>{a[1].f} : std::vector<double>{a[1].f, a[2].f});
  o.mode(interp_mode(a[3].s));
  if (!a[4].is_none()) o.align_corners(a[4].b);
  if (!a[5].is_none()) o.recompute_scale_factor(a[5].b);
  return F::interpolate(c.in[0], o);
}

}  // namespace

#define SOFTMAX_ENTRY(op)                                                                                \
  FW_OP_TEST(op) {                                                                                       \
    t.run = [](const FixCase& c) { return V{fw::op(c.in[0], c.args[0].i, opt_dtype(c.args[1]))}; };     \
    t.error([] { fw::op(fw::ones({3}, fw::kLong), 0); }, "[" #op "] not implemented for dtype int64");   \
    t.error([] { fw::op(fw::ones({3}), 1); }, "[" #op "] Dimension out of range (expected to be in range of [-1, 0], but got 1)"); \
  }
SOFTMAX_ENTRY(softmax)
SOFTMAX_ENTRY(log_softmax)

FW_OP_TEST(native_layer_norm) {
  t.run = [](const FixCase& c) {
    Rest r{c};
    Tensor w = r.next(c.args[2].b), b = r.next(c.args[3].b);
    if (starts(c, "layer_norm_")) return V{fw::layer_norm(c.in[0], c.args[0].ints, w, b, c.args[1].f)};
    auto [y, m, s] = fw::native_layer_norm(c.in[0], c.args[0].ints, w, b, c.args[1].f);
    return V{y, m, s};
  };
  t.error([] { fw::layer_norm(f32({2, 3, 4}), {5}); },
          "[layer_norm] Given normalized_shape=[5], expected input with shape [*, 5], but got input of size[2, 3, 4]");
  t.error([] { fw::layer_norm(f32({2, 3, 4}), {4}, f32({5})); },
          "[layer_norm] Expected weight to be of same shape as normalized_shape, but got weight of shape [5] and normalized_shape = [4]");
  t.error([] { fw::layer_norm(f32({2, 3, 4}), {}); }, "[layer_norm] Expected normalized_shape to be at least 1-dimensional");
  t.error([] { fw::layer_norm(fw::ones({2, 4}, fw::kLong), {4}); }, "[layer_norm] not implemented for dtype int64");
}

FW_OP_TEST(native_group_norm) {
  t.run = [](const FixCase& c) {
    Rest r{c};
    Tensor w = r.next(c.args[2].b), b = r.next(c.args[3].b);
    const Tensor& x = c.in[0];
    if (starts(c, "group_norm_")) return V{fw::group_norm(x, c.args[0].i, w, b, c.args[1].f)};
    auto [y, m, s] = fw::native_group_norm(x, w, b, x.size(0), x.size(1), x.numel() / (x.size(0) * x.size(1)),
                                           c.args[0].i, c.args[1].f);
    return V{y, m, s};
  };
  t.error([] { fw::group_norm(f32({2, 3, 4}), 2); },
          "[group_norm] Expected number of channels in input to be divisible by num_groups, but got input of shape [2, 3, 4] and num_groups=2");
  t.error([] { fw::group_norm(f32({2, 3, 4}), 3, f32({4})); },
          "[group_norm] Expected weight to be a vector of size equal to the number of channels in input, but got weight of shape [4]");
  t.error([] { fw::group_norm(f32({3}), 1); }, "[group_norm] expected an input with at least 2 dims");
}

FW_OP_TEST(native_batch_norm) {
  t.run = [](const FixCase& c) {
    Rest r{c};
    bool training = c.args[0].b;
    double momentum = c.args[1].f, eps = c.args[2].f;
    Tensor w = r.next(c.args[3].b), b = r.next(c.args[4].b);
    Tensor rm = r.next(c.args[5].b), rv = r.next(c.args[5].b);
    if (rm.defined()) rm = rm.clone(), rv = rv.clone();
    if (starts(c, "batch_norm_"))
      return V{F::batch_norm(c.in[0], rm, rv,
                             F::BatchNormFuncOptions().weight(w).bias(b).training(training).momentum(momentum).eps(eps))};
    if (starts(c, "instance_norm_")) {
      Tensor y = F::instance_norm(c.in[0], F::InstanceNormFuncOptions().weight(w).bias(b).running_mean(rm)
                                               .running_var(rv).momentum(momentum).eps(eps));
      return rm.defined() ? V{y, rm, rv} : V{y};
    }
    auto [y, sm, si] = fw::native_batch_norm(c.in[0], w, b, rm, rv, training, momentum, eps);
    return rm.defined() ? V{y, sm, si, rm, rv} : V{y, sm, si};
  };
  t.error([] { fw::batch_norm(f32({2, 3}), {}, {}, {}, {}, false, 0.1, 1e-5); },
          "[batch_norm] running_mean must be defined in evaluation mode");
  t.error([] { fw::batch_norm(f32({2, 3}), f32({4}), {}, {}, {}, true, 0.1, 1e-5); },
          "[batch_norm] weight should contain 3 elements not 4");
  t.error([] { fw::batch_norm(f32({2, 3}), {}, {}, fw::zeros({4}), fw::ones({3}), true, 0.1, 1e-5); },
          "[batch_norm] running_mean should contain 3 elements not 4");
  t.error([] { F::batch_norm(f32({1, 3}), {}, {}, F::BatchNormFuncOptions().training(true)); },
          "[batch_norm] Expected more than 1 value per channel when training, got input size [1, 3]");
  t.error([] { fw::batch_norm(f32({3}), {}, {}, {}, {}, true, 0.1, 1e-5); }, "[batch_norm] expected an input with at least 2 dims");
  t.error([] { fw::instance_norm(f32({2, 3, 4}), {}, {}, {}, {}, false, 0.1, 1e-5); },
          "[instance_norm] Expected running_mean and running_var to be defined when use_input_stats is false");
}

FW_OP_TEST(conv2d) {
  t.run = [](const FixCase& c) {
    Tensor b = c.in.size() > 2 ? c.in[2] : Tensor();
    const auto& a = c.args;
    bool one = starts(c, "conv1d_");
    if (starts(c, "conv3d_"))
      return V{a[1].kind == FixArg::Kind::Str ? fw::conv3d(c.in[0], c.in[1], b, a[0].ints, a[1].s, a[2].ints, a[3].i)
                                              : fw::conv3d(c.in[0], c.in[1], b, a[0].ints, a[1].ints, a[2].ints, a[3].i)};
    if (a[1].kind == FixArg::Kind::Str)
      return V{one ? fw::conv1d(c.in[0], c.in[1], b, a[0].ints, a[1].s, a[2].ints, a[3].i)
                   : fw::conv2d(c.in[0], c.in[1], b, a[0].ints, a[1].s, a[2].ints, a[3].i)};
    return V{one ? fw::conv1d(c.in[0], c.in[1], b, a[0].ints, a[1].ints, a[2].ints, a[3].i)
                 : fw::conv2d(c.in[0], c.in[1], b, a[0].ints, a[1].ints, a[2].ints, a[3].i)};
  };
  t.error([] { fw::conv2d(f32({2, 3, 5, 5}), f32({4, 5, 3, 3})); },
          "[conv2d] Given groups=1, weight of size [4, 5, 3, 3], expected input[2, 3, 5, 5] to have 5 channels, but got 3 channels instead");
  t.error([] { fw::conv3d(f32({2, 3, 4, 5, 5}), f32({4, 5, 3, 3, 3})); },
          "[conv3d] Given groups=1, weight of size [4, 5, 3, 3, 3], expected input[2, 3, 4, 5, 5] to have 5 channels, but got 3 channels instead");
  t.error([] { fw::conv3d(f32({2, 3, 2, 5, 5}), f32({4, 3, 3, 3, 3})); },
          "[conv3d] Calculated padded input size per channel: (2 x 5 x 5). Kernel size: (3 x 3 x 3). Kernel size can't be greater than actual input size");
  t.error([] { fw::conv3d(f32({2, 3, 5, 5}), f32({4, 3, 3, 3, 3})); },
          "[conv3d] Given groups=1, weight of size [4, 3, 3, 3, 3], expected input[1, 2, 3, 5, 5] to have 3 channels, but got 2 channels instead");
  t.error([] { fw::conv3d(f32({3, 5, 5}), f32({4, 3, 3, 3, 3})); }, "[conv3d] Expected 4D (unbatched) or 5D (batched) input to conv3d");
  t.error([] { fw::conv3d(f32({1, 3, 4, 4, 4}), f32({4, 3, 3, 3, 3}), f32({3})); },
          "[conv3d] Given weight of size [4, 3, 3, 3, 3], expected bias to be 1-dimensional with 4 elements, but got bias of size [3] instead");
  t.error([] { fw::conv3d(f32({1, 3, 4, 4, 4}), f32({4, 3, 3, 3, 3}), {}, {1, 2}); },
          "[conv3d] expected stride to be a single integer value or a list of 3 values");
  t.error([] { fw::conv3d(f32({1, 3, 4, 4, 4}), f32({4, 3, 3, 3, 3}), {}, 2, "same"); },
          "[conv3d] padding='same' is not supported for strided convolutions");
  t.error([] { fw::conv3d(f32({1, 3, 4, 4, 4}), f32({4, 3, 3, 3, 3}), {}, 1, 0, 1, 0); }, "[conv3d] non-positive groups is not supported");
  t.error([] { fw::conv2d(f32({2, 4, 5, 5}), f32({3, 2, 3, 3}), {}, 1, 0, 1, 2); },
          "[conv2d] Given groups=2, expected weight to be divisible by 2 at dimension 0, but got weight of size [3, 2, 3, 3] instead");
  t.error([] { fw::conv2d(f32({2, 3, 5, 5}), f32({4, 3, 7, 7})); },
          "[conv2d] Calculated padded input size per channel: (5 x 5). Kernel size: (7 x 7). Kernel size can't be greater than actual input size");
  t.error([] { fw::conv2d(f32({2, 3, 5, 5}), f32({4, 3, 3, 3}), f32({5})); },
          "[conv2d] Given weight of size [4, 3, 3, 3], expected bias to be 1-dimensional with 4 elements, but got bias of size [5] instead");
  t.error([] { fw::conv2d(f32({2, 3, 5, 5}).to(fw::kDouble), f32({4, 3, 3, 3})); },
          "[conv2d] Input type (Double) and weight type (Float) should be the same");
  t.error([] { fw::conv2d(f32({2, 3, 5, 5}), f32({4, 3, 3, 3}), {}, 0); }, "[conv2d] non-positive stride is not supported");
  t.error([] { fw::conv2d(f32({2, 3, 5, 5}), f32({4, 3, 3, 3}), {}, 1, -1); }, "[conv2d] negative padding is not supported");
  t.error([] { fw::conv2d(f32({2, 3, 5, 5}), f32({4, 3, 3, 3}), {}, 1, 0, 0); }, "[conv2d] non-positive dilation is not supported");
  t.error([] { fw::conv2d(f32({2, 3, 5, 5}), f32({4, 3, 3, 3}), {}, 1, 0, 1, 0); }, "[conv2d] non-positive groups is not supported");
  t.error([] { fw::conv2d(f32({2, 3, 5, 5}), f32({4, 3, 3, 3}), {}, 2, "same"); },
          "[conv2d] padding='same' is not supported for strided convolutions");
  t.error([] { fw::conv2d(f32({2, 3, 5, 5}), f32({4, 3, 3, 3}), {}, 1, "foo"); }, "[conv2d] Invalid padding string: 'foo'");
  t.error([] { fw::conv2d(fw::ones({1, 1, 3, 3}, fw::kLong), fw::ones({1, 1, 2, 2}, fw::kLong)); },
          "[conv2d] not implemented for dtype int64");
  t.error([] { fw::conv2d(f32({2, 3, 5, 5}), f32({4, 3, 3, 3}), {}, {1, 1, 1}); },
          "[conv2d] expected stride to be a single integer value or a list of 2 values to match the convolution dimensions");
  t.error([] { fw::conv2d(f32({5, 5}), f32({4, 3, 3, 3})); }, "[conv2d] Expected 3D (unbatched) or 4D (batched) input to conv2d");
  t.error([] { fw::conv1d(f32({2, 3, 5}), f32({4, 3, 3, 1})); }, "[conv1d] Expected 3-dimensional weight");
}

FW_OP_TEST(conv_transpose2d) {
  t.run = [](const FixCase& c) {
    Tensor b = c.in.size() > 2 ? c.in[2] : Tensor();
    const auto& a = c.args;
    if (starts(c, "conv_transpose3d_"))
      return V{fw::conv_transpose3d(c.in[0], c.in[1], b, a[0].ints, a[1].ints, a[2].ints, a[3].i, a[4].ints)};
    if (starts(c, "conv_transpose1d_"))
      return V{fw::conv_transpose1d(c.in[0], c.in[1], b, a[0].ints, a[1].ints, a[2].ints, a[3].i, a[4].ints)};
    return V{fw::conv_transpose2d(c.in[0], c.in[1], b, a[0].ints, a[1].ints, a[2].ints, a[3].i, a[4].ints)};
  };
  t.error([] { fw::conv_transpose2d(f32({1, 3, 5, 5}), f32({4, 2, 3, 3})); },
          "[conv_transpose2d] Given transposed=1, weight of size [4, 2, 3, 3], expected input[1, 3, 5, 5] to have 4 channels, but got 3 channels instead");
  t.error([] { fw::conv_transpose2d(f32({1, 4, 5, 5}), f32({4, 2, 3, 3}), {}, 1, 0, 1); },
          "[conv_transpose2d] output padding must be smaller than either stride or dilation, but got output_padding_height: 1");
  t.error([] { fw::conv_transpose2d(f32({1, 4, 5, 5}), f32({4, 2, 3, 3}), f32({3})); },
          "[conv_transpose2d] Given transposed=1, weight of size [4, 2, 3, 3], expected bias to be 1-dimensional with 2 elements");
  t.error([] { fw::conv_transpose3d(f32({1, 3, 2, 2, 2}), f32({4, 2, 3, 3, 3})); },
          "[conv_transpose3d] Given transposed=1, weight of size [4, 2, 3, 3, 3], expected input[1, 3, 2, 2, 2] to have 4 channels, but got 3 channels instead");
  t.error([] { fw::conv_transpose3d(f32({1, 4, 2, 2, 2}), f32({4, 2, 3, 3, 3}), {}, 1, 0, {0, 1, 0}); },
          "[conv_transpose3d] output padding must be smaller than either stride or dilation, but got output_padding=[0, 1, 0], stride=[1, 1, 1], dilation=[1, 1, 1]");
  t.error([] { fw::conv_transpose3d(f32({1, 4, 1, 2, 2}), f32({4, 2, 1, 3, 3}), {}, 1, {1, 0, 0}); },
          "[conv_transpose3d] Given input size per channel: (1 x 2 x 2). Calculated output size per channel: (-1 x 4 x 4). Output size is too small");
}

FW_OP_TEST(max_pool2d_with_indices) {
  t.run = [](const FixCase& c) {
    const auto& a = c.args;
    if (starts(c, "max_pool3d_")) {
      auto [y, i] = fw::max_pool3d_with_indices(c.in[0], a[0].ints, a[1].ints, a[2].ints, a[3].ints, a[4].b);
      // Values alone take the index-free path when nothing needs a gradient.
      FW_EXPECT_CLOSE(fw::max_pool3d(c.in[0], a[0].ints, a[1].ints, a[2].ints, a[3].ints, a[4].b), y);
      return V{y, i};
    }
    auto [y, i] = starts(c, "max_pool1d_")
                      ? fw::max_pool1d_with_indices(c.in[0], a[0].ints, a[1].ints, a[2].ints, a[3].ints, a[4].b)
                      : fw::max_pool2d_with_indices(c.in[0], a[0].ints, a[1].ints, a[2].ints, a[3].ints, a[4].b);
    return V{y, i};
  };
  t.error([] { fw::max_pool2d(f32({2, 3, 5, 5}), 3, {}, 2); },
          "[max_pool2d_with_indices] pad should be at most half of kernel size, but got pad=2 and kernel_size=3");
  t.error([] { fw::max_pool2d(f32({3, 1, 1}), 2); },
          "[max_pool2d_with_indices] Given input size: (3x1x1). Calculated output size: (3x0x0). Output size is too small");
  t.error([] { fw::max_pool2d(f32({2, 3, 5, 5}), 0); }, "kernel size should be greater than zero, but got kH: 0 kW: 0");
  t.error([] { fw::max_pool2d(f32({5, 5}), 2); }, "Expected 3D or 4D (batch mode) tensor with optional 0 dim batch size for input");
  t.error([] { fw::max_pool2d(f32({2, 3, 5, 5}), 2, 1, 0, 0); }, "dilation should be greater than zero");
  t.error([] { fw::max_pool1d(f32({3}), 2); }, "[max_pool1d] Expected 2D or 3D (batch mode) tensor with optional 0 dim batch size");
  t.error([] { fw::max_pool2d(f32({2, 3, 5, 5}), {2, 2, 2}); }, "[max_pool2d] kernel_size must be a single int or a tuple of 2 ints");
  t.error([] { fw::max_pool3d(f32({3, 5, 5}), 2); }, "[max_pool3d] Expected 4D or 5D (batch mode) tensor with optional 0 dim batch size for input, but got:[3, 5, 5]");
  t.error([] { fw::max_pool3d(f32({1, 2, 1, 5, 5}), 2); }, "[max_pool3d] Given input size: (2x1x5x5). Calculated output size: (2x0x2x2). Output size is too small");
  t.error([] { fw::max_pool3d(f32({1, 2, 4, 5, 5}), 2, 2, {0, 2, 0}); }, "[max_pool3d] pad should be at most half of kernel size, but got pad=[0, 2, 0] and kernel_size=[2, 2, 2]");
  t.error([] { fw::max_pool3d(f32({1, 2, 4, 5, 5}), {2, 2}); }, "[max_pool3d] kernel_size must be a single int or a tuple of 3 ints");
  t.error([] { fw::max_pool3d(f32({1, 2, 4, 5, 5}), 2, {1, 0, 1}); }, "[max_pool3d] stride should be greater than zero, but got stride=[1, 0, 1]");
  t.error([] { fw::max_pool3d(fw::ones({1, 1, 2, 2, 2}, fw::kBool), 2); }, "[max_pool3d] not implemented for dtype bool");
}

FW_OP_TEST(avg_pool2d) {
  t.run = [](const FixCase& c) {
    const auto& a = c.args;
    if (starts(c, "avg_pool1d_")) return V{fw::avg_pool1d(c.in[0], a[0].ints, a[1].ints, a[2].ints, a[3].b, a[4].b)};
    std::optional<int64_t> div = a[5].is_none() ? std::nullopt : std::optional<int64_t>(a[5].i);
    if (starts(c, "avg_pool3d_")) return V{fw::avg_pool3d(c.in[0], a[0].ints, a[1].ints, a[2].ints, a[3].b, a[4].b, div)};
    return V{fw::avg_pool2d(c.in[0], a[0].ints, a[1].ints, a[2].ints, a[3].b, a[4].b, div)};
  };
  t.error([] { fw::avg_pool2d(f32({1, 1, 4, 4}), 2, {}, 0, false, true, 0); }, "[avg_pool2d] divisor must be not zero");
  t.error([] { fw::avg_pool2d(f32({2, 3, 5, 5}), 3, {}, 2); }, "[avg_pool2d] pad should be at most half of kernel size");
  t.error([] { fw::avg_pool2d(fw::ones({1, 1, 2, 2}, fw::kBool), 2); }, "[avg_pool2d] not implemented for dtype bool");
  t.error([] { fw::avg_pool3d(f32({1, 1, 4, 4, 4}), 2, {}, 0, false, true, 0); }, "[avg_pool3d] divisor must be not zero");
  t.error([] { fw::avg_pool3d(f32({1, 1, 4, 4, 4}), 2, {}, {0, 0, 2}); }, "[avg_pool3d] pad should be at most half of kernel size");
  t.error([] { fw::avg_pool3d(f32({1, 4, 4, 4, 4, 4}), 2); }, "[avg_pool3d] Expected 4D or 5D (batch mode) tensor");
}

FW_OP_TEST(adaptive_avg_pool2d) {
  t.run = [](const FixCase& c) {
    if (starts(c, "interpolate_")) return V{run_interpolate(c)};
    if (starts(c, "adaptive_avg_pool1d_")) return V{fw::adaptive_avg_pool1d(c.in[0], c.args[0].ints)};
    if (starts(c, "adaptive_avg_pool3d_")) return V{fw::adaptive_avg_pool3d(c.in[0], c.args[0].ints)};
    return V{fw::adaptive_avg_pool2d(c.in[0], c.args[0].ints)};
  };
  t.error([] { fw::adaptive_avg_pool2d(f32({1, 0, 4}), 2); },
          "[adaptive_avg_pool2d] Expected input to have non-zero size for non-batch dimensions, but input has sizes [1, 0, 4] with dimension 1 being empty");
  t.error([] { fw::adaptive_avg_pool2d(fw::ones({1, 2, 2}, fw::kLong), 2); }, "[adaptive_avg_pool2d] not implemented for dtype int64");
  t.error([] { fw::adaptive_avg_pool2d(f32({4, 4}), 2); }, "[adaptive_avg_pool2d] Expected 3D or 4D tensor");
  t.error([] { fw::adaptive_avg_pool3d(f32({2, 3, 4, 4}).narrow(1, 0, 0), 2); },
          "[adaptive_avg_pool3d] Expected input to have non-zero size for non-batch dimensions, but input has sizes [2, 0, 4, 4] with dimension 1 being empty");
  t.error([] { fw::adaptive_avg_pool3d(f32({2, 3, 4}), 2); }, "[adaptive_avg_pool3d] Expected 4D or 5D tensor");
  t.error([] { fw::adaptive_avg_pool3d(f32({1, 2, 3, 4}), {2, 2}); }, "[adaptive_avg_pool3d] output_size must be a single int or a tuple of 3 ints");
}

FW_OP_TEST(adaptive_max_pool2d) {
  t.run = [](const FixCase& c) {
    const auto& os = c.args[0].ints;
    auto [y, i] = starts(c, "adaptive_max_pool1d_")   ? fw::adaptive_max_pool1d(c.in[0], os)
                  : starts(c, "adaptive_max_pool3d_") ? fw::adaptive_max_pool3d(c.in[0], os)
                                                      : fw::adaptive_max_pool2d(c.in[0], os);
    return V{y, i};
  };
  t.error([] { fw::adaptive_max_pool2d(f32({1, 0, 4}), 2); },
          "[adaptive_max_pool2d] Expected input to have non-zero size for non-batch dimensions, but input has sizes [1, 0, 4] with dimension 1 being empty");
  t.error([] { fw::adaptive_max_pool2d(fw::ones({1, 2, 2}, fw::kLong), 2); }, "[adaptive_max_pool2d] not implemented for dtype int64");
  t.error([] { fw::adaptive_max_pool2d(f32({4}), 2); }, "[adaptive_max_pool2d] Expected 3D or 4D tensor");
  t.error([] { fw::adaptive_max_pool2d(f32({1, 4, 4}), {2, 2, 2}); }, "[adaptive_max_pool2d] output_size must be a single int or a tuple of 2 ints");
  t.error([] { fw::adaptive_max_pool1d(f32({4}), 2); }, "[adaptive_max_pool1d] Expected 2D or 3D (batch mode) tensor");
  t.error([] { fw::adaptive_max_pool3d(f32({1, 2, 3}), 2); }, "[adaptive_max_pool3d] Expected 4D or 5D tensor");
  t.error([] { fw::adaptive_max_pool3d(fw::ones({1, 2, 2, 2}, fw::kInt), 2); }, "[adaptive_max_pool3d] not implemented for dtype int32");
}

FW_OP_TEST(upsample_nearest2d) {
  t.run = [](const FixCase& c) {
    if (starts(c, "interpolate_")) return V{run_interpolate(c)};
    return V{fw::upsample_nearest2d(c.in[0], c.args[0].ints, opt_f(c.args[1]), opt_f(c.args[2]))};
  };
  t.error([] { fw::upsample_nearest2d(f32({2, 3, 4}), {4, 4}); }, "[upsample_nearest2d] expected a 4-D input (N, C, H, W)");
  t.error([] { fw::upsample_nearest2d(f32({1, 1, 2, 2}), {0, 4}); }, "[upsample_nearest2d] Input and output sizes should be greater than 0");
  t.error([] { F::interpolate(f32({1, 1, 2, 2}), F::InterpolateFuncOptions().size(std::vector<int64_t>{4, 4}).scale_factor(std::vector<double>{2})); },
          "[interpolate] only one of size or scale_factor should be defined");
  t.error([] { F::interpolate(f32({1, 1, 2, 2}), F::InterpolateFuncOptions()); }, "[interpolate] either size or scale_factor should be defined");
  t.error([] { F::interpolate(f32({1, 1, 2, 2}), F::InterpolateFuncOptions().size(std::vector<int64_t>{4, 4}).align_corners(true)); },
          "[interpolate] align_corners option can only be set with the interpolating modes");
  t.error([] { F::interpolate(f32({1, 1, 2, 2}), F::InterpolateFuncOptions().size(std::vector<int64_t>{4, 4, 4})); },
          "[interpolate] size shape must match input shape. Input is 2D, size is 3");
}

FW_OP_TEST(upsample_bilinear2d) {
  t.run = [](const FixCase& c) {
    if (starts(c, "interpolate_")) return V{run_interpolate(c)};
    return V{fw::upsample_bilinear2d(c.in[0], c.args[0].ints, c.args[3].b, opt_f(c.args[1]), opt_f(c.args[2]))};
  };
  t.error([] { fw::upsample_bilinear2d(fw::ones({1, 1, 2, 2}, fw::kLong), {4, 4}, false); },
          "[upsample_bilinear2d] not implemented for dtype int64");
  t.error([] { F::interpolate(f32({1, 2, 4}), F::InterpolateFuncOptions().size(std::vector<int64_t>{8}).mode(fw::kBilinear)); },
          "[interpolate] Got 3D input, but bilinear mode needs 4D input");
  t.error([] { F::interpolate(f32({1, 1, 2, 2}), F::InterpolateFuncOptions().size(std::vector<int64_t>{4}).mode(fw::kLinear)); },
          "[interpolate] Got 4D input, but linear mode needs 3D input");
  t.error([] { F::interpolate(f32({1, 2, 4}), F::InterpolateFuncOptions().size(std::vector<int64_t>{8}).mode(fw::kBicubic)); },
          "[interpolate] Got 3D input, but bicubic mode needs 4D input");
}

// ---- behaviour outside the table

namespace {

// Direct convolution in double: the reference for the GEMM paths.
Tensor naive_conv2d(const Tensor& x, const Tensor& w, int64_t stride, int64_t pad) {
  Tensor xd = x.to(fw::kDouble).contiguous(), wd = w.to(fw::kDouble).contiguous();
  int64_t n = x.size(0), c = x.size(1), h = x.size(2), wi = x.size(3), o = w.size(0), kh = w.size(2), kw = w.size(3);
  int64_t oh = (h + 2 * pad - kh) / stride + 1, ow = (wi + 2 * pad - kw) / stride + 1;
  Tensor y = fw::zeros({n, o, oh, ow}, fw::kDouble);
  auto X = xd.accessor<double, 4>();
  auto W = wd.accessor<double, 4>();
  double* Y = y.data_ptr<double>();
  for (int64_t s = 0; s < n; s++)
    for (int64_t oc = 0; oc < o; oc++)
      for (int64_t i = 0; i < oh; i++)
        for (int64_t j = 0; j < ow; j++) {
          double acc = 0;
          for (int64_t ic = 0; ic < c; ic++)
            for (int64_t a = 0; a < kh; a++)
              for (int64_t b = 0; b < kw; b++) {
                int64_t hh = i * stride - pad + a, ww = j * stride - pad + b;
                if (hh >= 0 && hh < h && ww >= 0 && ww < wi) acc += X[s][ic][hh][ww] * W[oc][ic][a][b];
              }
          Y[((s * o + oc) * oh + i) * ow + j] = acc;
        }
  return y;
}

}  // namespace

TEST(Conv, GemmPathsMatchDirectConvolution) {
  fw::manual_seed(7);
  // Large images: one sample per GEMM; small images: several samples per GEMM.
  for (auto [n, hw] : {std::pair<int64_t, int64_t>{3, 20}, {9, 4}, {1, 17}}) {
    Tensor x = fw::randn({n, 6, hw, hw + 1}), w = fw::randn({10, 6, 3, 3});
    FW_EXPECT_CLOSE(fw::conv2d(x, w, {}, 1, 1).to(fw::kDouble), naive_conv2d(x, w, 1, 1), 1e-5, 1e-4);
    FW_EXPECT_CLOSE(fw::conv2d(x, w, {}, 2, 0).to(fw::kDouble), naive_conv2d(x, w, 2, 0), 1e-5, 1e-4);
  }
}

// Note [Depthwise convolutions]: one channel per group takes a direct kernel (32-output vector
// blocks away from the edges, a pass per tap near them) for conv1d, and for conv2d in double.
// Against the same convolution one channel at a time (groups == 1, the GEMM / oneDNN paths):
// strides, dilations, symmetric and 'same' (asymmetric) padding, rows shorter and longer than a
// block, float and double.
TEST(Conv, DepthwiseMatchesOneChannelAtATime) {
  fw::manual_seed(8);
  struct C1 { int64_t n, c, l, k, stride, pad, dil; };
  for (auto [n, c, l, k, stride, pad, dil] : {C1{4, 5, 400, 31, 1, 15, 1}, C1{2, 3, 70, 3, 1, 1, 1}, C1{1, 4, 100, 5, 2, 2, 1},
                                              C1{3, 2, 90, 3, 1, 0, 4}, C1{2, 3, 7, 9, 1, 6, 1}, C1{1, 2, 200, 4, 1, 0, 3}}) {
    for (auto dt : {fw::kFloat, fw::kDouble}) {
      Tensor x = fw::randn({n, c, l}, dt), w = fw::randn({c, 1, k}, dt), b = fw::randn({c}, dt);
      Tensor y = fw::conv1d(x, w, b, stride, pad, dil, c);
      std::vector<Tensor> parts;
      for (int64_t i = 0; i < c; i++)
        parts.push_back(fw::conv1d(x.slice(1, i, i + 1), w.slice(0, i, i + 1), b.slice(0, i, i + 1), stride, pad, dil));
      FW_EXPECT_CLOSE(y, fw::cat(parts, 1), 1e-5, 1e-5);
    }
  }
  // 'same' padding with an even kernel pads one more at the end.
  Tensor x = fw::randn({2, 3, 64}), w = fw::randn({3, 1, 6});
  Tensor y = F::conv1d(x, w, F::Conv1dFuncOptions().padding(fw::kSame).groups(3));
  std::vector<Tensor> parts;
  for (int64_t i = 0; i < 3; i++)
    parts.push_back(F::conv1d(x.slice(1, i, i + 1), w.slice(0, i, i + 1), F::Conv1dFuncOptions().padding(fw::kSame)));
  FW_EXPECT_CLOSE(y, fw::cat(parts, 1), 1e-5, 1e-5);
  // conv2d (float on oneDNN, double on the direct kernel): a 5x3 kernel, strides, dilations.
  for (auto [stride, pad, dil] : {std::tuple<int64_t, int64_t, int64_t>{1, 1, 1}, {2, 1, 1}, {1, 2, 2}, {1, 0, 1}})
    for (auto dt : {fw::kFloat, fw::kDouble}) {
      Tensor x2 = fw::randn({2, 4, 23, 45}, dt), w2 = fw::randn({4, 1, 5, 3}, dt), b2 = fw::randn({4}, dt);
      Tensor y2 = fw::conv2d(x2, w2, b2, stride, pad, dil, 4);
      std::vector<Tensor> p2;
      for (int64_t i = 0; i < 4; i++)
        p2.push_back(fw::conv2d(x2.slice(1, i, i + 1), w2.slice(0, i, i + 1), b2.slice(0, i, i + 1), stride, pad, dil));
      FW_EXPECT_CLOSE(y2, fw::cat(p2, 1), 1e-5, 1e-5);
    }
}

TEST(Conv, TransposeIsTheAdjoint) {
  // <conv2d(x, w), y> == <x, conv_transpose2d(y, w)> for any stride, padding and dilation.
  Tensor x = fw::randn({2, 4, 9, 8}, fw::kDouble), w = fw::randn({6, 2, 3, 2}, fw::kDouble);
  Tensor cx = fw::conv2d(x, w, {}, {2, 1}, {1, 1}, {1, 2}, 2);
  Tensor y = fw::randn(cx.sizes(), fw::kDouble);
  Tensor ty = fw::conv_transpose2d(y, w, {}, {2, 1}, {1, 1}, {0, 0}, 2, {1, 2});
  ASSERT_EQ(ty.sizes(), x.sizes());
  EXPECT_NEAR((cx * y).sum().item<double>(), (x * ty).sum().item<double>(), 1e-9);
}

TEST(Softmax, LongRowsAndColumnsSumToOne) {
  Tensor x = fw::randn({3, 5000}) * 10;
  FW_EXPECT_CLOSE(fw::softmax(x, 1).sum({1}), fw::ones({3}), 1e-5, 1e-5);
  FW_EXPECT_CLOSE(fw::softmax(x, 0).sum({0}), fw::ones({5000}), 1e-5, 1e-5);
  FW_EXPECT_CLOSE(fw::log_softmax(x, 1).exp().sum({1}), fw::ones({3}), 1e-5, 1e-5);
  FW_EXPECT_CLOSE(x.softmax(1), fw::softmax(x, 1));
}

TEST(Dropout, ScalesKeptValuesAndHonoursTrainingFlag) {
  Tensor x = fw::ones({200, 100});
  EXPECT_TRUE(fw::dropout(x, 0.3, false).is_same(x));
  EXPECT_TRUE(fw::dropout(x, 0.0, true).is_same(x));
  FW_EXPECT_CLOSE(fw::dropout(x, 1.0, true), fw::zeros({200, 100}));
  Tensor y = fw::dropout(x, 0.25, true);
  Tensor kept = y.ne(0);
  FW_EXPECT_CLOSE(fw::where(kept, y, fw::scalar_tensor(1.0 / 0.75)), fw::full({200, 100}, 1.0 / 0.75));
  double frac = kept.to(fw::kDouble).mean().item<double>();
  EXPECT_NEAR(frac, 0.75, 0.02);
  EXPECT_THROW(fw::dropout(x, 1.5, true), fw::Error);
  Tensor z = fw::ones({8, 16, 3, 3});
  Tensor d = F::dropout2d(z, F::Dropout2dFuncOptions().p(0.5));
  Tensor per_channel = d.amax({2, 3}) - d.amin({2, 3});
  FW_EXPECT_CLOSE(per_channel, fw::zeros({8, 16}));
}

TEST(Functional, LibtorchStyleCallsCompile) {
  Tensor x = fw::randn({2, 3, 8, 8}), w = fw::randn({4, 3, 3, 3}), b = fw::randn({4});
  Tensor y = F::conv2d(x, w, F::Conv2dFuncOptions().bias(b).stride(1).padding(1));
  FW_EXPECT_CLOSE(y, fw::conv2d(x, w, b, 1, 1));
  FW_EXPECT_CLOSE(F::conv2d(x, w, F::Conv2dFuncOptions().padding(fw::kSame)), fw::conv2d(x, w, {}, 1, 1));
  FW_EXPECT_CLOSE(F::conv2d(x, w, F::Conv2dFuncOptions().padding({1, 0}).stride({2, 1})),
                  fw::conv2d(x, w, {}, {2, 1}, {1, 0}));
  FW_EXPECT_CLOSE(F::max_pool2d(y, F::MaxPool2dFuncOptions(2).stride(2)), fw::max_pool2d(y, 2, 2));
  FW_EXPECT_CLOSE(F::avg_pool2d(y, F::AvgPool2dFuncOptions({2, 2}).padding(1)), fw::avg_pool2d(y, 2, 2, 1));
  FW_EXPECT_CLOSE(F::adaptive_avg_pool2d(y, F::AdaptiveAvgPool2dFuncOptions(1)), fw::adaptive_avg_pool2d(y, {1, 1}));
  FW_EXPECT_CLOSE(F::softmax(y, 1), fw::softmax(y, 1));
  FW_EXPECT_CLOSE(F::log_softmax(y, F::LogSoftmaxFuncOptions(-1).dtype(fw::kDouble)), fw::log_softmax(y, -1, fw::kDouble));
  FW_EXPECT_CLOSE(F::relu(y), fw::relu(y));
  FW_EXPECT_CLOSE(F::gelu(y, F::GELUFuncOptions().approximate("tanh")), fw::gelu(y, "tanh"));
  FW_EXPECT_CLOSE(F::leaky_relu(y, F::LeakyReLUFuncOptions().negative_slope(0.2)), fw::leaky_relu(y, 0.2));
  FW_EXPECT_CLOSE(F::layer_norm(y, F::LayerNormFuncOptions({8}).eps(1e-6)), fw::layer_norm(y, {8}, {}, {}, 1e-6));
  FW_EXPECT_CLOSE(F::group_norm(y, F::GroupNormFuncOptions(2)), fw::group_norm(y, 2));
  FW_EXPECT_CLOSE(F::pad(x, F::PadFuncOptions({1, 1, 2, 0}).mode(fw::kReflect)), fw::pad(x, {1, 1, 2, 0}, "reflect"));
  FW_EXPECT_CLOSE(F::linear(fw::ones({2, 3}), fw::ones({4, 3})), fw::full({2, 4}, 3.0));
  FW_EXPECT_CLOSE(F::dropout(y, F::DropoutFuncOptions().training(false)), y);
  Tensor n = F::normalize(fw::tensor({{3.0, 4.0}}), F::NormalizeFuncOptions().dim(1));
  FW_EXPECT_CLOSE(n, fw::tensor({{0.6, 0.8}}));
  Tensor up = F::interpolate(x, F::InterpolateFuncOptions().scale_factor(std::vector<double>{2}).mode(fw::kBilinear).align_corners(false));
  ASSERT_EQ(up.sizes(), fw::IntArrayRef({2, 3, 16, 16}));
  Tensor in = fw::randn({2, 3, 5});
  FW_EXPECT_CLOSE(F::instance_norm(in), fw::instance_norm(in, {}, {}, {}, {}, true, 0.1, 1e-5));
  Tensor rm = fw::zeros({3}), rv = fw::ones({3});
  F::batch_norm(in, rm, rv, F::BatchNormFuncOptions().training(true));
  EXPECT_GT(rv.sum().item<double>(), 0.0);
}

TEST(Norm, BatchNormEvalUsesRunningStatistics) {
  Tensor x = fw::randn({4, 3, 2}), rm = fw::randn({3}), rv = fw::rand({3}) + 0.5;
  Tensor y = fw::batch_norm(x, {}, {}, rm, rv, false, 0.1, 1e-5);
  Tensor ref = (x - rm.view({1, 3, 1})) / (rv.view({1, 3, 1}) + 1e-5).sqrt();
  FW_EXPECT_CLOSE(y, ref);
}

TEST(Norm, LowPrecisionComputesInFloat) {
  auto bf = [](const Tensor& t) { return t.to(fw::kBFloat16); };
  auto fl = [](const Tensor& t) { return t.to(fw::kFloat); };
  Tensor x = bf(fw::randn({2, 4, 6})), w = bf(fw::randn({6})), b = bf(fw::randn({6}));
  FW_EXPECT_CLOSE(fw::layer_norm(x, {6}, w, b), bf(fw::layer_norm(fl(x), {6}, fl(w), fl(b))));
  Tensor g = bf(fw::randn({4}));
  FW_EXPECT_CLOSE(fw::group_norm(x, 2, g, g), bf(fw::group_norm(fl(x), 2, fl(g), fl(g))));
  Tensor img = bf(fw::randn({1, 2, 3, 3}));
  FW_EXPECT_CLOSE(fw::upsample_bilinear2d(img, {5, 4}, false), bf(fw::upsample_bilinear2d(fl(img), {5, 4}, false)));
  FW_EXPECT_CLOSE(fw::softmax(x.to(fw::kHalf), 1), fw::softmax(fl(x), 1).to(fw::kHalf));
}
