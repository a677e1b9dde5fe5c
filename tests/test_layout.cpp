// Memory layouts of new tensors (Notes [Preserved layouts] and [Pointwise result layouts] in
// core/ops/creation.cpp): the *_like factories and clone lay their result out like the input, as
// libtorch's MemoryFormat::Preserve does, and element-wise ops like their inputs, as libtorch's
// TensorIterator does. Strides are checked against PyTorch 1.13 (tests/fixtures/gen_layout.py ->
// layout.txt).
#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <fw/fw.h>

#include "tests/expect_error.h"
#include "tests/fixture.h"

using fw::Tensor;

namespace {

std::vector<int64_t> numbers(const std::string& s) {
  std::vector<int64_t> v;
  std::stringstream ss(s);
  std::string item;
  while (std::getline(ss, item, ','))
    if (!item.empty()) v.push_back(std::stoll(item));
  return v;
}

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> v;
  std::stringstream ss(s);
  std::string item;
  while (std::getline(ss, item, sep)) v.push_back(item);
  return v;
}

// The input gen_layout.py describes with `recipe` (same steps, same meaning).
Tensor build(const std::string& recipe) {
  Tensor x;
  for (const std::string& step : split(recipe, ';')) {
    size_t sp = step.find(' ');
    std::string kind = step.substr(0, sp);
    std::vector<int64_t> n = sp == std::string::npos ? std::vector<int64_t>{} : numbers(step.substr(sp + 1));
    if (kind == "new") x = fw::randn(n);
    else if (kind == "perm") x = x.permute(n);
    else if (kind == "slice") x = x.slice(n[0], n[1], n[2], n[3]);
    else if (kind == "expand") x = x.expand(n);
    else if (kind == "cl") x = x.contiguous(fw::MemoryFormat::ChannelsLast);
    else if (kind == "cl3d") x = x.contiguous(fw::MemoryFormat::ChannelsLast3d);
    else ADD_FAILURE() << "unknown recipe step " << step;
  }
  return x;
}

Tensor call_op(const std::string& op, const Tensor& x) {
  if (op == "empty_like") return fw::empty_like(x);
  if (op == "zeros_like") return fw::zeros_like(x);
  if (op == "ones_like") return fw::ones_like(x);
  if (op == "full_like") return fw::full_like(x, 2.5);
  if (op == "rand_like") return fw::rand_like(x);
  if (op == "randn_like") return fw::randn_like(x);
  if (op == "randint_like") return fw::randint_like(x, 0, 5);
  if (op == "zeros_like_double") return fw::zeros_like(x, fw::kDouble);
  if (op == "clone") return x.clone();
  if (op == "clone_contiguous") return x.clone(fw::MemoryFormat::Contiguous);
  if (op == "contiguous") return x.contiguous();
  if (op == "empty_like_contiguous") return fw::empty_like(x, fw::MemoryFormat::Contiguous);
  if (op == "empty_like_channels_last") return fw::empty_like(x, fw::MemoryFormat::ChannelsLast);
  if (op == "clone_channels_last") return x.clone(fw::MemoryFormat::ChannelsLast);
  if (op == "pw_relu") return fw::relu(x);
  if (op == "pw_exp") return fw::exp(x);
  if (op == "pw_mul_scalar") return x * 2;
  if (op == "pw_add_self") return x + x;
  if (op == "pw_add_contiguous_first") return fw::ones(x.sizes()) + x;
  if (op == "pw_add_contiguous_second") return x + fw::ones(x.sizes());
  if (op == "pw_add_row") return x + fw::ones({x.size(-1)});
  if (op == "pw_gt") return x > 0;
  if (op == "pw_where") return fw::where(x > 0, x, fw::zeros({}));
  // The NCHW section (Note [Channels-last results] in core/layout.h).
  namespace F = fw::nn::functional;
  Tensor w = fw::linspace(-1, 1, 4 * 3 * 9).reshape({4, 3, 3, 3});
  if (op == "conv") return F::conv2d(x, w, F::Conv2dFuncOptions().padding(1));
  if (op == "conv_weight_cl")
    return F::conv2d(x, w.contiguous(fw::MemoryFormat::ChannelsLast), F::Conv2dFuncOptions().padding(1));
  if (op == "conv_groups_stride")
    return F::conv2d(x, w.slice(0, 0, 3).slice(1, 0, 1), F::Conv2dFuncOptions().stride(2).padding(1).groups(3));
  if (op == "conv_transpose") return F::conv_transpose2d(x, w.transpose(0, 1).slice(1, 0, 2).contiguous());
  if (op == "batch_norm_train") return F::batch_norm(x, Tensor(), Tensor(), F::BatchNormFuncOptions().training(true));
  if (op == "batch_norm_eval") return F::batch_norm(x, fw::zeros({3}), fw::ones({3}));
  if (op == "group_norm") return F::group_norm(x, F::GroupNormFuncOptions(3));
  if (op == "instance_norm") return F::instance_norm(x);
  if (op == "max_pool") return F::max_pool2d(x, F::MaxPool2dFuncOptions(2));
  if (op == "max_pool_indices") return std::get<1>(F::max_pool2d_with_indices(x, F::MaxPool2dFuncOptions(2)));
  if (op == "avg_pool") return F::avg_pool2d(x, F::AvgPool2dFuncOptions(3).stride(1).padding(1));
  if (op == "adaptive_avg_pool") return F::adaptive_avg_pool2d(x, F::AdaptiveAvgPool2dFuncOptions({2, 3}));
  if (op == "adaptive_max_pool") return F::adaptive_max_pool2d(x, F::AdaptiveMaxPool2dFuncOptions({2, 3}));
  if (op == "nearest") return F::interpolate(x, F::InterpolateFuncOptions().scale_factor(std::vector<double>{2, 2}));
  if (op == "bilinear")
    return F::interpolate(x, F::InterpolateFuncOptions()
                                 .scale_factor(std::vector<double>{2, 2})
                                 .mode(fw::kBilinear)
                                 .align_corners(false));
  if (op == "cat_self") return fw::cat({x, x}, 1);
  if (op == "cat_contiguous") return fw::cat({x, x.contiguous()}, 0);
  if (op == "pad_constant") return F::pad(x, F::PadFuncOptions({1, 1, 2, 0}));
  if (op == "pad_reflect") return F::pad(x, F::PadFuncOptions({1, 1, 1, 1}).mode(fw::kReflect));
  if (op == "softmax_channels") return fw::softmax(x, 1);
  if (op == "layer_norm") return F::layer_norm(x, F::LayerNormFuncOptions({x.size(-1)}));
  if (op == "sum_channels") return x.sum({1}, true);
  if (op == "conv1d") return F::conv1d(x, w.select(2, 0), F::Conv1dFuncOptions().padding(1));
  if (op == "max_pool1d") return F::max_pool1d(x, F::MaxPool1dFuncOptions(2));
  if (op == "max_pool1d_indices") return std::get<1>(F::max_pool1d_with_indices(x, F::MaxPool1dFuncOptions(2)));
  if (op == "pad_constant1d") return F::pad(x, F::PadFuncOptions({1, 2}));
  if (op == "avg_pool1d") return F::avg_pool1d(x, F::AvgPool1dFuncOptions(2));
  if (op == "adaptive_avg_pool1d") return F::adaptive_avg_pool1d(x, F::AdaptiveAvgPool1dFuncOptions(3));
  if (op == "adaptive_max_pool1d") return F::adaptive_max_pool1d(x, F::AdaptiveMaxPool1dFuncOptions(3));
  if (op == "nearest1d") return F::interpolate(x, F::InterpolateFuncOptions().scale_factor(std::vector<double>{2}));
  if (op == "linear1d")
    return F::interpolate(
        x, F::InterpolateFuncOptions().scale_factor(std::vector<double>{2}).mode(fw::kLinear).align_corners(false));
  ADD_FAILURE() << "unknown op " << op;
  return x;
}

}  // namespace

TEST(Layout, LikeFactoriesCloneAndPointwiseOpsMatchPyTorchStrides) {
  std::ifstream f(std::string(FW_FIXTURE_DIR) + "/layout.txt");
  ASSERT_TRUE(f.good());
  std::string line;
  int cases = 0;
  while (std::getline(f, line)) {
    if (line.empty() || line[0] == '#') continue;
    auto parts = split(line, '|');
    ASSERT_EQ(parts.size(), 4u) << line;
    SCOPED_TRACE(line);
    Tensor x = build(parts[0]);
    Tensor y = call_op(parts[1], x);
    std::vector<int64_t> sizes = numbers(parts[2]), strides = numbers(parts[3]);
    ASSERT_EQ(std::vector<int64_t>(y.sizes().begin(), y.sizes().end()), sizes);
    // A size-1 dim's stride addresses nothing; libtorch copies it from a dense input, fw derives
    // it from the dim order. Every other stride must agree.
    for (size_t d = 0; d < sizes.size(); d++)
      if (sizes[d] > 1) EXPECT_EQ(y.stride(int64_t(d)), strides[d]) << "dim " << d;
    EXPECT_TRUE(y.is_non_overlapping_and_dense());
    if (parts[1] == "clone" || parts[1] == "clone_contiguous" || parts[1] == "contiguous" ||
        parts[1] == "clone_channels_last")
      EXPECT_TRUE(fw::equal(y, x));
    if (parts[1] == "full_like") EXPECT_TRUE(fw::equal(y, fw::full(x.sizes(), 2.5)));
    if (parts[1] == "pw_add_contiguous_first" || parts[1] == "pw_add_contiguous_second")
      EXPECT_TRUE(fw::equal(y, x + 1));
    if (parts[1] == "pw_exp") EXPECT_TRUE(fw::allclose(y, x.contiguous().exp()));
    if (parts[1] == "zeros_like_double") EXPECT_EQ(y.dtype(), fw::kDouble);
    cases++;
  }
  EXPECT_GE(cases, 573);
}

TEST(Layout, PreservedResultFillsMemoryInTheInputsOrder) {
  // The reason Preserve exists: a result filled through data_ptr in the input's memory order
  // holds each value at the input's position.
  Tensor x = fw::arange(12, fw::kFloat).reshape({3, 4}).t();  // strides [1, 4]
  Tensor y = fw::empty_like(x);
  ASSERT_EQ(y.strides(), x.strides());
  std::memcpy(y.data_ptr<float>(), x.data_ptr<float>(), sizeof(float) * 12);
  EXPECT_TRUE(fw::equal(y, x));
  Tensor c = fw::randn({2, 3, 4, 5}).contiguous(fw::MemoryFormat::ChannelsLast);
  Tensor k = c.clone();
  EXPECT_TRUE(k.is_contiguous(fw::MemoryFormat::ChannelsLast));
  EXPECT_EQ(std::memcmp(k.data_ptr<float>(), c.data_ptr<float>(), sizeof(float) * 120), 0);
  // A clone is a tensor of its own: no other tensor shares its memory.
  EXPECT_FALSE(k.is_alias_of(c));
  k.fill_(1);
  EXPECT_FALSE(fw::equal(k, c));
  // rand_like on a transposed input: the values are a plain random tensor's, laid out transposed.
  Tensor r = fw::rand_like(x);
  EXPECT_EQ(r.strides(), x.strides());
  EXPECT_TRUE(((r >= 0) & (r < 1)).all().item<bool>());
}

TEST(Layout, RequiresGradResultsAreLeaves) {
  Tensor xt = fw::randn({3, 4}).t();
  Tensor z = fw::zeros_like(xt, fw::TensorOptions().requires_grad(true));
  EXPECT_TRUE(z.requires_grad());
  EXPECT_TRUE(z.is_leaf());
  EXPECT_EQ(z.strides(), xt.strides());
  Tensor e = fw::empty({2, 3, 4, 5}, fw::TensorOptions(fw::MemoryFormat::ChannelsLast).requires_grad(true));
  EXPECT_TRUE(e.is_leaf());
  EXPECT_TRUE(e.is_contiguous(fw::MemoryFormat::ChannelsLast));
  (e * 2).sum().backward();
  ASSERT_TRUE(e.grad().defined());
  EXPECT_TRUE(fw::equal(e.grad(), fw::full({2, 3, 4, 5}, 2.0)));
  // The gradient of a channels-last leaf is laid out like it (libtorch's layout contract); a
  // row-major leaf's gradient is row-major even when the incoming one is transposed.
  EXPECT_TRUE(e.grad().is_contiguous(fw::MemoryFormat::ChannelsLast));
  Tensor w = fw::randn({4, 3}, fw::TensorOptions().requires_grad(true));
  Tensor g = fw::randn({3, 4});
  w.backward(g.t());
  EXPECT_TRUE(w.grad().is_contiguous());
  EXPECT_TRUE(fw::equal(w.grad(), g.t()));
}

TEST(Layout, CloneOfATransposedTensorCarriesGradients) {
  Tensor x = fw::randn({3, 4}, fw::TensorOptions(fw::kDouble).requires_grad(true));
  Tensor c = x.t().clone();
  EXPECT_EQ(c.strides(), (std::vector<int64_t>{1, 4}));
  EXPECT_FALSE(c.is_leaf());
  Tensor w = fw::linspace(-1, 1, 12, fw::kDouble).reshape({4, 3});
  (c * w).sum().backward();
  EXPECT_TRUE(fw::allclose(x.grad(), w.t()));
  EXPECT_TRUE(fw::autograd::gradcheck([](const fw::autograd::variable_list& v) {
    return fw::autograd::variable_list{v[0].t().clone() * 3};
  }, {fw::randn({3, 4}, fw::TensorOptions(fw::kDouble).requires_grad(true))}));
}

TEST(Layout, InPlaceWritesThroughViewsOfAPermutedBase) {
  // zeros_like of a transposed input is a transposed base; writing a value that requires grad
  // into a slice of it must route gradients as for a row-major base (CopySlices lays the
  // gradient out in the base's memory order).
  Tensor w = fw::randn({2, 3}, fw::TensorOptions(fw::kDouble).requires_grad(true));
  Tensor xt = fw::randn({3, 4}, fw::kDouble).t();  // [4, 3], strides [1, 4]
  Tensor weights = fw::linspace(-2, 2, 12, fw::kDouble).reshape({4, 3});
  auto run = [&](Tensor base) {
    base.narrow(0, 1, 2).copy_(w * w);
    Tensor loss = (base * weights).sum();
    return fw::autograd::grad({loss}, {w})[0];
  };
  Tensor permuted = fw::zeros_like(xt);
  ASSERT_EQ(permuted.strides(), xt.strides());
  Tensor got = run(permuted);
  Tensor want = run(fw::zeros({4, 3}, fw::kDouble));
  EXPECT_TRUE(fw::allclose(got, want));
  EXPECT_TRUE(fw::allclose(want, 2 * w.detach() * weights.narrow(0, 1, 2)));
  // A base with gaps (empty_strided makes a root tensor with them) cannot be laid out that way:
  // a clear error, raised before anything is written.
  Tensor strided = fw::empty_strided({4, 3}, {6, 2}, fw::kDouble).zero_();
  EXPECT_FALSE(strided.is_non_overlapping_and_dense());
  EXPECT_ERROR(strided.narrow(0, 1, 2).copy_(w), "with gaps or overlaps");
  EXPECT_EQ(strided.abs().sum().item<double>(), 0.0);
  {
    fw::NoGradGuard ng;  // without autograd the write is fine
    strided.narrow(0, 1, 2).copy_(w);
  }
  EXPECT_TRUE(fw::equal(strided.narrow(0, 1, 2), w.detach()));
}

TEST(Layout, NonOverlappingAndDense) {
  EXPECT_TRUE(fw::randn({3, 4}).is_non_overlapping_and_dense());
  EXPECT_TRUE(fw::randn({3, 4}).t().is_non_overlapping_and_dense());
  EXPECT_TRUE(fw::randn({2, 3, 4}).permute({2, 0, 1}).is_non_overlapping_and_dense());
  EXPECT_FALSE(fw::randn({3, 4}).slice(1, 0, 4, 2).is_non_overlapping_and_dense());
  EXPECT_FALSE(fw::randn({3, 1}).expand({3, 4}).is_non_overlapping_and_dense());
  EXPECT_TRUE(fw::randn({1, 4}).expand({1, 4}).is_non_overlapping_and_dense());
  EXPECT_TRUE(fw::randn({}).is_non_overlapping_and_dense());
  EXPECT_FALSE(fw::randn({6}).slice(0, 0, 6, 2).is_non_overlapping_and_dense());
}

TEST(Layout, ExplicitFormatsAndReshape) {
  Tensor xt = fw::randn({3, 4}).t();
  EXPECT_TRUE(fw::empty_like(xt, fw::MemoryFormat::Contiguous).is_contiguous());
  EXPECT_TRUE(xt.clone(fw::MemoryFormat::Contiguous).is_contiguous());
  EXPECT_TRUE(fw::clone(xt, fw::MemoryFormat::Contiguous).is_contiguous());
  EXPECT_EQ(fw::clone(xt).strides(), xt.strides());
  EXPECT_EQ(xt.clone(std::nullopt).strides(), xt.strides());
  // reshape and contiguous still make row-major copies where a view is impossible.
  EXPECT_TRUE(xt.contiguous().is_contiguous());
  EXPECT_TRUE(fw::equal(xt.reshape({12}), xt.contiguous().view({12})));
  // As in libtorch, a preserved clone of a transposed tensor cannot be viewed flat.
  EXPECT_ERROR(xt.clone().view({12}), "view size is not compatible");
}

// Transposing copies large enough to take the tiled path (Note [Blocked transposing copy] in
// core/ops/creation.cpp): every element lands where the strides say, for each element size,
// sizes that are not multiples of the tile, extra outer dims, offsets and reversed strides.
TEST(Layout, TransposingCopiesPlaceEveryElement) {
  struct Case {
    std::vector<int64_t> shape, perm;
  };
  const std::vector<Case> cases = {{{300, 257}, {1, 0}},         {{3, 97, 130}, {0, 2, 1}},
                                   {{5, 40, 33, 17}, {0, 2, 3, 1}}, {{70, 3, 180}, {2, 1, 0}},
                                   {{2, 64, 600}, {2, 0, 1}}};
  const std::vector<fw::ScalarType> dtypes = {fw::kFloat, fw::kDouble, fw::kHalf,         fw::kLong,
                                              fw::kInt,   fw::kShort,  fw::kByte,         fw::kBool,
                                              fw::kBFloat16, fw::kComplexFloat};
  for (const auto& cs : cases) {
    int64_t n = 1;
    for (int64_t s : cs.shape) n *= s;
    Tensor base_l = fw::arange(n, fw::kLong).reshape(cs.shape);
    Tensor p_l = base_l.permute(cs.perm);
    // Reference: the logical element idx of the permuted view is sum(idx[k] * base_stride[perm[k]]).
    std::vector<int64_t> want(static_cast<size_t>(n));
    {
      const int64_t nd = p_l.dim();
      std::vector<int64_t> idx(size_t(nd), 0);
      for (int64_t flat = 0; flat < n; flat++) {
        int64_t v = 0;
        for (int64_t k = 0; k < nd; k++) v += idx[size_t(k)] * base_l.stride(cs.perm[size_t(k)]);
        want[size_t(flat)] = v;
        for (int64_t k = nd - 1; k >= 0 && ++idx[size_t(k)] == p_l.size(k); k--) idx[size_t(k)] = 0;
      }
    }
    for (auto dt : dtypes) {
      SCOPED_TRACE(::testing::Message() << "shape " << fw::IntArrayRef(cs.shape) << " perm "
                                        << fw::IntArrayRef(cs.perm) << " dtype " << dt);
      // Values every dtype holds exactly: the flat index modulo 2 (bool), 251 (uint8, bfloat16)
      // or 2039 (half).
      const int64_t mod = dt == fw::kBool ? 2 : (dt == fw::kByte || dt == fw::kBFloat16) ? 251 : 2039;
      Tensor pc = fw::remainder(base_l, mod).to(dt).permute(cs.perm);
      ASSERT_FALSE(pc.is_contiguous());
      Tensor c = pc.contiguous();
      ASSERT_TRUE(c.is_contiguous());
      Tensor back = c.to(fw::kLong);
      const int64_t* got = back.data_ptr<int64_t>();
      int64_t bad = 0;
      for (int64_t i = 0; i < n; i++) bad += got[i] != want[size_t(i)] % mod;
      EXPECT_EQ(bad, 0);
    }
  }
  // A narrowed, reversed source and a copy_ into a strided destination.
  Tensor big = fw::randn({400, 300});
  Tensor src = big.narrow(0, 7, 380).flip({0}).t();  // (300, 380), strides (1, -300)
  Tensor dst = fw::empty({300, 380});
  dst.copy_(src);
  Tensor wide = fw::zeros({300, 400});
  wide.narrow(1, 10, 380).copy_(big.narrow(0, 7, 380).t());
  auto b = big.accessor<float, 2>();
  auto d = dst.accessor<float, 2>();
  auto w = wide.accessor<float, 2>();
  int64_t bad = 0;
  for (int64_t i = 0; i < 300; i++)
    for (int64_t j = 0; j < 380; j++) {
      bad += d[i][j] != b[7 + 379 - j][i];
      bad += w[i][10 + j] != b[7 + j][i];
    }
  EXPECT_EQ(bad, 0);
  EXPECT_EQ(wide.narrow(1, 0, 10).abs().sum().item<double>(), 0.0);
  EXPECT_EQ(wide.narrow(1, 390, 10).abs().sum().item<double>(), 0.0);
}

// to(dtype) keeps the layout (libtorch's MemoryFormat::Preserve); strides from PyTorch 1.13.
TEST(Layout, DtypeConversionsPreserveTheLayout) {
  using V = std::vector<int64_t>;
  Tensor xt = fw::randn({3, 4}).t();
  EXPECT_EQ(xt.to(fw::kDouble).strides().vec(), (V{1, 4}));
  EXPECT_EQ(xt.to(fw::kFloat, false, /*copy=*/true).strides().vec(), (V{1, 4}));
  Tensor cl = fw::randn({2, 3, 4, 5}).contiguous(fw::MemoryFormat::ChannelsLast);
  EXPECT_EQ(cl.to(fw::kHalf).strides().vec(), (V{60, 1, 15, 3}));
  EXPECT_EQ(fw::randn({4, 6}).slice(1, 0, 6, 2).to(fw::kDouble).strides().vec(), (V{3, 1}));
  EXPECT_EQ(fw::randn({3, 1}).expand({3, 4}).to(fw::kDouble).strides().vec(), (V{4, 1}));
  Tensor p = fw::randn({2, 3, 4}).permute({2, 0, 1});
  Tensor pi = p.to(fw::kInt);
  EXPECT_EQ(pi.strides().vec(), (V{1, 12, 4}));
  EXPECT_TRUE(fw::equal(pi, p.contiguous().to(fw::kInt)));
  EXPECT_TRUE(fw::equal(xt.to(fw::kDouble).to(fw::kFloat), xt));
}

// The channels-last results of the NCHW ops hold the values of the row-major computation
// (Note [Channels-last results]); batch norm computes a channels-last input as rows of channels.
TEST(Layout, ChannelsLastResultsHoldTheRowMajorValues) {
  fw::manual_seed(5);
  for (const char* recipe : {"new 2,3,6,5;cl", "new 4,3,7,9;cl", "new 2,3,12,5;cl;slice 2,1,12,2"}) {
    SCOPED_TRACE(recipe);
    Tensor x = build(recipe);
    Tensor xc = x.contiguous();
    for (const char* op : {"conv", "conv_weight_cl", "conv_groups_stride", "batch_norm_train", "batch_norm_eval",
                           "group_norm", "max_pool", "max_pool_indices", "avg_pool", "adaptive_avg_pool",
                           "adaptive_max_pool", "nearest", "bilinear", "cat_self", "cat_contiguous", "pad_constant"}) {
      SCOPED_TRACE(op);
      Tensor a = call_op(op, x), b = call_op(op, xc);
      ASSERT_TRUE(a.sizes().equals(b.sizes()));
      if (a.is_floating_point()) EXPECT_TRUE(fw::allclose(a, b, 1e-5, 1e-6)) << (a - b).abs().max().item<float>();
      else EXPECT_TRUE(fw::equal(a, b));
    }
  }
  namespace F = fw::nn::functional;
  // Max pooling channels-last (Note [Channels-last max pool]): NaN and -inf taps, padding,
  // dilation, ceil mode; values and indices as the row-major planes'.
  {
    Tensor x = fw::randn({3, 5, 9, 8});
    x.index_put_({0, 1, 2, 3}, NAN);
    x.index_put_({1, 2, 4, 4}, NAN);
    x.index_put_({1, 2, 5, 5}, NAN);
    x.narrow(2, 0, 3).narrow(1, 3, 1).fill_(-INFINITY);
    Tensor xcl = x.contiguous(fw::MemoryFormat::ChannelsLast);
    for (auto o : {F::MaxPool2dFuncOptions(2), F::MaxPool2dFuncOptions(3).stride(2).padding(1),
                   F::MaxPool2dFuncOptions({3, 2}).stride({1, 2}).dilation(2).ceil_mode(true)}) {
      auto [y1, i1] = F::max_pool2d_with_indices(xcl, o);
      auto [y2, i2] = F::max_pool2d_with_indices(x, o);
      EXPECT_TRUE(y1.is_contiguous(fw::MemoryFormat::ChannelsLast));
      EXPECT_TRUE(i1.is_contiguous(fw::MemoryFormat::ChannelsLast));
      EXPECT_TRUE(fw::equal(y1.isnan(), y2.isnan()));
      EXPECT_TRUE(fw::equal(y1.nan_to_num(0, 1e30, -1e30), y2.nan_to_num(0, 1e30, -1e30)));
      EXPECT_TRUE(fw::equal(i1, i2));
      EXPECT_TRUE(fw::equal(F::max_pool2d(xcl, o).nan_to_num(0), y2.nan_to_num(0)));  // without indices
    }
  }
  // Training batch norm on a channels-last input: output, running statistics and gradients.
  Tensor x = fw::randn({4, 5, 6, 7}) * 3 + 1;
  Tensor w = fw::rand({5}) + 0.5, b = fw::randn({5});
  Tensor rm1 = fw::randn({5}), rv1 = fw::rand({5}) + 1, rm2 = rm1.clone(), rv2 = rv1.clone();
  Tensor x1 = x.contiguous(fw::MemoryFormat::ChannelsLast).requires_grad_(true), x2 = x.clone().requires_grad_(true);
  Tensor w1 = w.clone().requires_grad_(true), w2 = w.clone().requires_grad_(true);
  auto opts = [&](Tensor& ww) { return F::BatchNormFuncOptions().weight(ww).bias(b).training(true).momentum(0.2); };
  Tensor y1 = F::batch_norm(x1, rm1, rv1, opts(w1)), y2 = F::batch_norm(x2, rm2, rv2, opts(w2));
  EXPECT_TRUE(y1.is_contiguous(fw::MemoryFormat::ChannelsLast));
  EXPECT_TRUE(fw::allclose(y1, y2, 1e-5, 1e-5));
  EXPECT_TRUE(fw::allclose(rm1, rm2, 1e-6, 1e-6));
  EXPECT_TRUE(fw::allclose(rv1, rv2, 1e-6, 1e-6));
  Tensor gy = fw::randn(y1.sizes());
  (y1 * gy).sum().backward();
  (y2 * gy).sum().backward();
  EXPECT_TRUE(fw::allclose(x1.grad(), x2.grad(), 1e-4, 1e-5));
  EXPECT_TRUE(fw::allclose(w1.grad(), w2.grad(), 1e-4, 1e-4));
}

// BatchNorm1d over (N, C) rows, against the formula in double: large N, few channels.
TEST(Layout, BatchNormOverRowsMatchesTheFormula) {
  fw::manual_seed(6);
  namespace F = fw::nn::functional;
  Tensor x = fw::randn({3001, 7}) * 2 + 5;
  Tensor rm = fw::zeros({7}), rv = fw::ones({7});
  Tensor y = F::batch_norm(x, rm, rv, F::BatchNormFuncOptions().training(true).momentum(0.5).eps(1e-3));
  Tensor xd = x.to(fw::kDouble);
  Tensor mean = xd.mean({0}, true), var = (xd - mean).pow(2).mean({0}, true);
  Tensor ref = (xd - mean) / (var + 1e-3).sqrt();
  EXPECT_TRUE(fw::allclose(y.to(fw::kDouble), ref, 1e-5, 1e-5));
  EXPECT_TRUE(fw::allclose(rm.to(fw::kDouble), mean.squeeze(0) * 0.5, 1e-6, 1e-6));
  EXPECT_TRUE(fw::allclose(rv.to(fw::kDouble), 0.5 + 0.5 * var.squeeze(0) * (3001.0 / 3000.0), 1e-5, 1e-6));
  Tensor ye = F::batch_norm(x, rm, rv);  // evaluation: the running statistics
  EXPECT_TRUE(fw::allclose(ye.to(fw::kDouble), (xd - rm.to(fw::kDouble)) / (rv.to(fw::kDouble) + 1e-5).sqrt(), 1e-5, 1e-5));
}
