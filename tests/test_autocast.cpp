// CPU autocast (fw/autocast.h, Note [Autocast] in core/autocast.cpp) against torch.autocast("cpu",
// dtype=torch.bfloat16) of PyTorch 1.13: the dtype each op returns, a Linear-ReLU-Linear step
// (values, loss and float32 gradients), conv2d, the cast cache, the API's state handling and
// fw::compile's guard on the autocast state. Fixtures: tests/fixtures/gen_autocast.py.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <map>

#include <fw/fw.h>
#include <fw/jit.h>

#include "tests/expect_error.h"
#include "tests/records.h"

using fw::Tensor;
namespace F = fw::nn::functional;

namespace {

std::string dtype_of(const Tensor& t) {
  switch (t.dtype()) {
    case fw::kFloat: return "float32";
    case fw::kBFloat16: return "bfloat16";
    case fw::kDouble: return "float64";
    default: return "other";
  }
}

// |got - want| within `ulps` bfloat16 units in the last place of want (2^-7 relative per ulp).
void expect_bf16_close(const Tensor& got, const Tensor& want, double ulps, const std::string& what) {
  ASSERT_EQ(got.sizes(), want.sizes()) << what;
  Tensor g = got.to(fw::kDouble).contiguous(), w = want.to(fw::kDouble).contiguous();
  const double* pg = g.data_ptr<double>();
  const double* pw = w.data_ptr<double>();
  int bad = 0;
  for (int64_t i = 0; i < g.numel(); i++) {
    const double tol = ulps * std::ldexp(std::max(std::abs(pw[i]), 1e-30), -7);
    if (!(std::abs(pg[i] - pw[i]) <= tol) && bad++ < 5)
      ADD_FAILURE() << what << "[" << i << "] = " << pg[i] << ", torch " << pw[i];
  }
}

}  // namespace

TEST(Autocast, DtypePolicyMatchesTorch) {
  auto cases = fwtest::load_records("autocast.txt", "autocast_policy");
  ASSERT_EQ(cases.size(), 1u);
  fw::manual_seed(3);
  Tensor x = fw::randn({4, 6}), v = fw::randn({6}), m3 = fw::randn({2, 4, 6});
  Tensor xb = x.to(fw::kBFloat16);
  fw::nn::LSTM lstm(6, 3);
  fw::nn::GRUCell gru_cell(6, 3);
  fw::nn::RNNCell rnn_cell(6, 3);
  auto r = [](std::vector<int64_t> s) { return fw::randn(s); };
  std::map<std::string, std::function<Tensor()>> ops = {
      {"mm", [&] { return fw::mm(x, x.t()); }},
      {"addmm", [&] { return fw::addmm(r({4}), x, x.t()); }},
      {"bmm", [&] { return fw::bmm(m3, m3.transpose(1, 2)); }},
      {"baddbmm", [&] { return fw::baddbmm(r({2, 4, 4}), m3, m3.transpose(1, 2)); }},
      {"matmul_2d", [&] { return fw::matmul(x, x.t()); }},
      {"matmul_mv", [&] { return fw::matmul(x, v); }},
      {"matmul_dot", [&] { return fw::matmul(v, v); }},
      {"matmul_batched", [&] { return fw::matmul(m3, x.t()); }},
      {"linear", [&] { return F::linear(x, r({3, 6}), r({3})); }},
      {"linear_1d", [&] { return F::linear(v, r({3, 6}), r({3})); }},
      {"einsum", [&] { return fw::einsum("bij,kj->bik", {m3, x}); }},
      {"tensordot", [&] { return fw::tensordot(x, x, {1}, {1}); }},
      {"conv1d", [&] { return fw::conv1d(m3, r({3, 4, 3})); }},
      {"conv2d", [&] { return fw::conv2d(r({1, 2, 5, 5}), r({3, 2, 3, 3}), r({3})); }},
      {"conv3d", [&] { return fw::conv3d(r({1, 2, 4, 4, 4}), r({3, 2, 2, 2, 2})); }},
      {"conv_transpose2d", [&] { return fw::conv_transpose2d(r({1, 2, 5, 5}), r({2, 3, 3, 3})); }},
      {"mv", [&] { return fw::mv(x, v); }},
      {"addmv", [&] { return fw::addmv(r({4}), x, v); }},
      {"outer", [&] { return fw::outer(v, v); }},
      {"bilinear", [&] { return fw::bilinear(x, x, r({3, 6, 6})); }},
      {"lstm", [&] { return std::get<0>(lstm->forward(x.unsqueeze(0))); }},
      {"gru_cell", [&] { return gru_cell->forward(x); }},
      {"rnn_cell", [&] { return rnn_cell->forward(x); }},
      {"mm_float64", [&] { return fw::mm(x.to(fw::kDouble), x.to(fw::kDouble).t()); }},
      {"relu", [&] { return fw::relu(x); }},
      {"add_mixed", [&] { return xb + x; }},
      {"softmax_bf16", [&] { return fw::softmax(xb, 1); }},
      {"sum_bf16", [&] { return xb.sum(); }},
      {"mse_loss_bf16", [&] { return F::mse_loss(xb, xb * 2); }},
      {"l1_loss_bf16", [&] { return F::l1_loss(xb, xb * 2); }},
      {"cross_entropy_bf16", [&] { return F::cross_entropy(xb, fw::tensor({0, 1, 2, 3})); }},
      {"nll_loss_bf16", [&] { return F::nll_loss(xb, fw::tensor({0, 1, 2, 3})); }},
      {"kl_div_bf16", [&] { return F::kl_div(xb, xb.abs(), F::KLDivFuncOptions().reduction(fw::kBatchMean)); }},
      {"bce_with_logits_bf16", [&] { return F::binary_cross_entropy_with_logits(xb, xb.sigmoid()); }},
      {"smooth_l1_loss_bf16", [&] { return F::smooth_l1_loss(xb, xb * 2); }},
      {"cdist_bf16", [&] { return fw::cdist(xb, xb); }},
      {"prod_bf16", [&] { return xb.prod(); }},
  };
  fw::AutocastGuard autocast;
  size_t checked = 0;
  for (const auto& [name, want] : cases[0].opts) {
    ASSERT_TRUE(ops.count(name)) << "no fw call for " << name;
    EXPECT_EQ(dtype_of(ops.at(name)()), want) << name;
    checked++;
  }
  EXPECT_EQ(checked, ops.size());
}

// Linear-ReLU-Linear-cross_entropy under autocast, backward outside it: the activations are
// bfloat16 and agree with torch's (the first layer's exactly: its products and sums are exact, so
// both round the same float32 value once), the loss is float32, and the parameters' gradients are
// float32 and agree within what bfloat16 products allow.
TEST(Autocast, MlpStepMatchesTorch) {
  auto cases = fwtest::load_records("autocast.txt", "autocast_mlp");
  ASSERT_EQ(cases.size(), 2u);
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    Tensor w1 = c.get("w1").clone().requires_grad_(), b1 = c.get("b1").clone().requires_grad_();
    Tensor w2 = c.get("w2").clone().requires_grad_(), b2 = c.get("b2").clone().requires_grad_();
    Tensor hid, logits, loss;
    {
      fw::AutocastGuard autocast;
      hid = fw::relu(F::linear(c.get("x"), w1, b1));
      logits = F::linear(hid, w2, b2);
      loss = F::cross_entropy(logits, c.get("target"));
    }
    EXPECT_EQ(dtype_of(hid), c.opt("hid_dtype"));
    EXPECT_EQ(dtype_of(logits), c.opt("logits_dtype"));
    EXPECT_EQ(dtype_of(loss), c.opt("loss_dtype"));
    EXPECT_TRUE(fw::equal(hid.to(fw::kFloat), c.get("hid"))) << "first layer: one rounding of an exact sum";
    expect_bf16_close(logits, c.get("logits"), 1, "logits");
    EXPECT_NEAR(loss.item<double>(), c.get("loss").item<double>(), 1e-5 * std::abs(c.get("loss").item<double>()));
    loss.backward();
    for (auto [name, p] : {std::pair{"w1", w1}, std::pair{"b1", b1}, std::pair{"w2", w2}, std::pair{"b2", b2}}) {
      ASSERT_TRUE(p.grad().defined()) << name;
      EXPECT_EQ(p.grad().dtype(), fw::kFloat) << name;
      // Gradients are bfloat16 products summed in float32 and rounded: a differently ordered sum
      // can round one ulp apart, and that ulp spreads through the backward's later products.
      Tensor want = c.get(std::string("grad.") + name);
      double scale = want.abs().max().item<double>();
      EXPECT_LE((p.grad() - want).abs().max().item<double>(), 0.02 * scale) << name;
    }
  }
}

// conv2d with bias under autocast (oneDNN's bfloat16 kernels where the build targets AVX512-BF16,
// Note [bfloat16 convolutions]): the bfloat16 output and the float32 leaves' gradients, both
// through oneDNN's fused backward and through the composite one that create_graph takes.
TEST(Autocast, Conv2dMatchesTorch) {
  auto cases = fwtest::load_records("autocast.txt", "autocast_conv");
  ASSERT_EQ(cases.size(), 1u);
  const auto& c = cases[0];
  for (bool create_graph : {false, true}) {
    SCOPED_TRACE(create_graph ? "composite backward" : "fused backward");
    Tensor x = c.get("x").clone().requires_grad_(), w = c.get("w").clone().requires_grad_();
    Tensor b = c.get("b").clone().requires_grad_();
    Tensor y;
    {
      fw::AutocastGuard autocast;
      y = fw::conv2d(x, w, b, 1, 1);
    }
    EXPECT_EQ(dtype_of(y), c.opt("y_dtype"));
    expect_bf16_close(y, c.get("y"), 1, "conv2d");
    auto grads = fw::autograd::grad({(y.to(fw::kFloat) * c.get("g")).sum()}, {x, w, b}, {}, std::nullopt, create_graph);
    const char* names[] = {"x", "w", "b"};
    for (size_t i = 0; i < 3; i++) {
      EXPECT_EQ(grads[i].dtype(), fw::kFloat) << names[i];
      Tensor want = c.get(std::string("grad.") + names[i]);
      EXPECT_LE((grads[i] - want).abs().max().item<double>(), 0.01 * want.abs().max().item<double>()) << names[i];
    }
  }
}

// What autocast casts is a differentiable op: a float32 leaf used twice in a region gets one
// gradient per use, and float64 or integer arguments are left alone.
TEST(Autocast, GradientsReachFloat32Leaves) {
  Tensor w = fw::full({3, 3}, 0.5).requires_grad_();
  Tensor x = fw::eye(3);
  {
    fw::AutocastGuard autocast;
    Tensor y = fw::mm(x, w) + fw::mm(w, x);
    EXPECT_EQ(y.dtype(), fw::kBFloat16);
    y.to(fw::kFloat).sum().backward();
  }
  EXPECT_EQ(w.grad().dtype(), fw::kFloat);
  EXPECT_TRUE(fw::equal(w.grad(), fw::full({3, 3}, 2.0)));
}

// The cache hands a parameter's bfloat16 copy to each use in a region, but never a stale one: an
// in-place update (an optimizer step) inside the region is seen by the next product, and a copy
// made without grad is not reused by a product that needs one.
TEST(Autocast, CacheNeverReturnsStaleOrHistorylessCopies) {
  Tensor w = fw::full({2, 2}, 1.0).requires_grad_();
  Tensor x = fw::eye(2);
  fw::AutocastGuard autocast;
  EXPECT_TRUE(fw::equal(fw::mm(x, w).to(fw::kFloat), fw::full({2, 2}, 1.0)));
  {
    fw::NoGradGuard no_grad;
    w.mul_(3);
  }
  EXPECT_TRUE(fw::equal(fw::mm(x, w).to(fw::kFloat), fw::full({2, 2}, 3.0)));
  Tensor y;
  {
    fw::NoGradGuard no_grad;
    y = fw::mm(x, w);
    EXPECT_FALSE(y.requires_grad());
  }
  Tensor z = fw::mm(x, w);
  ASSERT_TRUE(z.requires_grad());
  z.to(fw::kFloat).sum().backward();
  EXPECT_TRUE(fw::equal(w.grad(), fw::ones({2, 2})));
}

TEST(Autocast, StateAndGuards) {
  EXPECT_FALSE(fw::autocast::is_cpu_enabled());
  EXPECT_EQ(fw::autocast::get_autocast_cpu_dtype(), fw::kBFloat16);
  {
    fw::AutocastGuard outer;
    EXPECT_TRUE(fw::autocast::is_cpu_enabled());
    {
      fw::AutocastGuard inner(false);
      EXPECT_FALSE(fw::autocast::is_cpu_enabled());
      EXPECT_EQ(fw::mm(fw::eye(2), fw::eye(2)).dtype(), fw::kFloat);
    }
    EXPECT_TRUE(fw::autocast::is_cpu_enabled());
    EXPECT_EQ(fw::mm(fw::eye(2), fw::eye(2)).dtype(), fw::kBFloat16);
  }
  EXPECT_FALSE(fw::autocast::is_cpu_enabled());
  // libtorch's spelling (at::autocast) drives the same state.
  at::autocast::set_cpu_enabled(true);
  EXPECT_EQ(fw::mm(fw::eye(2), fw::eye(2)).dtype(), fw::kBFloat16);
  at::autocast::set_cpu_enabled(false);
  at::autocast::clear_cache();
  EXPECT_EQ(fw::mm(fw::eye(2), fw::eye(2)).dtype(), fw::kFloat);
  EXPECT_ERROR(fw::autocast::set_autocast_cpu_dtype(fw::kHalf), "[autocast] set_autocast_cpu_dtype: CPU autocast "
               "supports only BFloat16 (as libtorch 1.13), got Half");
  EXPECT_ERROR(fw::AutocastGuard(true, fw::kFloat), "supports only BFloat16 (as libtorch 1.13), got Float");
  // The CUDA switches: off, and no way on without CUDA tensors.
  EXPECT_FALSE(at::autocast::is_enabled());
  at::autocast::set_enabled(false);
  EXPECT_ERROR(at::autocast::set_enabled(true), "[autocast] set_enabled(true) turns on CUDA autocast");
  EXPECT_FALSE(at::autocast::is_enabled());
  EXPECT_EQ(at::autocast::get_autocast_gpu_dtype(), fw::kHalf);
  at::autocast::set_autocast_gpu_dtype(fw::kBFloat16);
  EXPECT_EQ(at::autocast::get_autocast_gpu_dtype(), fw::kBFloat16);
  at::autocast::set_autocast_gpu_dtype(fw::kHalf);
  EXPECT_ERROR(at::autocast::set_autocast_gpu_dtype(fw::kInt), "expected Half or BFloat16, got Int");
  EXPECT_FALSE(fw::autocast::is_cpu_enabled());
}

// A compiled function traced with autocast on records its casts, gives eager autocast's values
// and is not replayed once autocast is off (the capture guards the state).
TEST(Autocast, CompiledFunctionsGuardTheAutocastState) {
  fw::manual_seed(5);
  Tensor w = fw::randn({16, 8}).requires_grad_(), b = fw::randn({16});
  auto f = fw::compile([&](const Tensor& x) { return fw::relu(F::linear(x, w, b)).sum(1); });
  Tensor x = fw::randn({4, 8});
  Tensor eager_on, eager_off;
  {
    fw::AutocastGuard autocast;
    eager_on = fw::relu(F::linear(x, w, b)).sum(1);
  }
  eager_off = fw::relu(F::linear(x, w, b)).sum(1);
  for (int rep = 0; rep < 2; rep++) {
    Tensor on;
    {
      fw::AutocastGuard autocast;
      on = f(x);
    }
    Tensor off = f(x);
    EXPECT_EQ(on.dtype(), fw::kBFloat16);
    EXPECT_EQ(off.dtype(), fw::kFloat);
    EXPECT_TRUE(fw::equal(on, eager_on));
    EXPECT_TRUE(fw::allclose(off, eager_off, 1e-5, 1e-5));
  }
}

// A compiled model trained under autocast: its forward's casts and bfloat16 products are in the
// captured graph and its backward reaches the float32 parameters with eager autocast's gradients.
TEST(Autocast, CompiledTrainingStepMatchesEagerAutocast) {
  fw::manual_seed(6);
  fw::nn::Sequential net(fw::nn::Linear(12, 32), fw::nn::ReLU(), fw::nn::Linear(32, 5));
  auto compiled = fw::compile(net);
  Tensor x = fw::randn({16, 12}), y = fw::randint(0, 5, {16});
  std::vector<Tensor> eager_grads;
  Tensor eager_loss;
  for (bool use_compiled : {false, true}) {
    net->zero_grad();
    Tensor loss;
    {
      fw::AutocastGuard autocast;
      loss = F::cross_entropy(use_compiled ? compiled(x) : net->forward(x), y);
    }
    EXPECT_EQ(loss.dtype(), fw::kFloat);
    loss.backward();
    if (!use_compiled) {
      eager_loss = loss.detach();
      for (auto& p : net->parameters()) eager_grads.push_back(p.grad().clone());
      continue;
    }
    EXPECT_TRUE(fw::allclose(loss, eager_loss, 1e-6, 1e-6));
    auto params = net->parameters();
    for (size_t i = 0; i < params.size(); i++) {
      EXPECT_EQ(params[i].grad().dtype(), fw::kFloat);
      EXPECT_TRUE(fw::allclose(params[i].grad(), eager_grads[i], 1e-6, 1e-6)) << "parameter " << i;
    }
  }
}

// bfloat16 pointwise ops widen each element inside the loop (binary.cpp, unary.cpp): the result is
// the float32 computation on the bfloat16 operands rounded once, as before (and as PyTorch), for
// broadcast, strided and scalar operands, NaN and infinity included.
TEST(Autocast, Bfloat16PointwiseIsOneRoundingOfTheFloatResult) {
  fw::manual_seed(9);
  Tensor a = (fw::randn({6, 40}) * 3).to(fw::kBFloat16), b = (fw::randn({40}) * 3).to(fw::kBFloat16);
  a.index_put_({1, 2}, std::numeric_limits<float>::quiet_NaN());
  a.index_put_({2, 3}, std::numeric_limits<float>::infinity());
  Tensor at = a.t();  // strided
  auto fa = [](const Tensor& t) { return t.to(fw::kFloat); };
  auto same = [](const Tensor& got, const Tensor& want, const char* what) {
    EXPECT_EQ(got.dtype(), want.dtype()) << what;
    EXPECT_TRUE(fw::equal(fw::isnan(got), fw::isnan(want))) << what;
    EXPECT_TRUE(fw::equal(fw::nan_to_num(got.to(fw::kFloat), 0.0), fw::nan_to_num(want.to(fw::kFloat), 0.0))) << what;
  };
  same(a + b, (fa(a) + fa(b)).to(fw::kBFloat16), "add");
  same(a - 0.1, (fa(a) - float(fw::BFloat16(0.1f))).to(fw::kBFloat16), "sub scalar");
  same(a * b, (fa(a) * fa(b)).to(fw::kBFloat16), "mul");
  same(at / b.narrow(0, 0, 6), (fa(at) / fa(b.narrow(0, 0, 6))).to(fw::kBFloat16), "div strided");
  same(fw::maximum(a, b), fw::maximum(fa(a), fa(b)).to(fw::kBFloat16), "maximum");
  same(fw::atan2(a, b), fw::atan2(fa(a), fa(b)).to(fw::kBFloat16), "atan2");
  same(a.gt(b), fa(a).gt(fa(b)), "gt");
  same(fw::relu(at), fw::relu(fa(at)).to(fw::kBFloat16), "relu");
  same(-a, (-fa(a)).to(fw::kBFloat16), "neg");
  same(fw::abs(at), fw::abs(fa(at)).to(fw::kBFloat16), "abs");
  // relu's backward on bfloat16 (one pass on the bits): gy * (y > 0) with zeros of both signs, NaN
  // and infinities in x and in the incoming gradient.
  const float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
  Tensor x = fw::tensor({1.5f, -2.f, 0.f, -0.f, nan, inf, -inf, 3.f, -1e-30f, 1e-30f, 2.f, -4.f}).to(fw::kBFloat16);
  Tensor g = fw::tensor({-1.f, 2.f, 3.f, -4.f, 5.f, nan, inf, -inf, -7.f, nan, -0.f, inf}).to(fw::kBFloat16);
  Tensor xl = x.clone().requires_grad_();
  fw::relu(xl).backward(g);
  same(xl.grad(), (fa(g) * (fw::relu(fa(x)) > 0)).to(fw::kBFloat16), "relu backward");
  // Signs of zeros: y = 2 > 0 passes gy = -0 as it is; y = 0 gives gy * 0 = -0 for gy = -7.
  EXPECT_TRUE(std::signbit(xl.grad()[10].item<float>()));
  EXPECT_TRUE(std::signbit(xl.grad()[8].item<float>()));
  EXPECT_FALSE(std::signbit(xl.grad()[1].item<float>()));
}
