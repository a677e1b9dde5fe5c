// Regressions found by bug hunts against PyTorch 1.13 (2026-12-06, third session): eager core ops
// and eager autograd. Expected values are PyTorch 1.13's for the same inputs (small enough to
// state inline; each comment gives the Python expression).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <vector>

#include <fw/fw.h>

#include "tests/expect_error.h"

using fw::Tensor;

namespace {

std::vector<double> values(const Tensor& t) {
  Tensor c = t.to(fw::kDouble).contiguous().reshape({-1});
  const double* p = c.data_ptr<double>();
  return std::vector<double>(p, p + c.numel());
}

}  // namespace

// GCC 12 with AVX-512 miscompiled the widening lane loop (Note [GCC 12 widening sums]): from
// 32768 contiguous elements on, integer sums lost half/a quarter/an eighth of their lanes, and
// integer products went wrong too.
TEST(ReduceInt, WideningSumsAndProducts) {
  for (int64_t n : {32767, 32768, 40001, 100000}) {
    for (auto dt : {fw::kChar, fw::kShort, fw::kInt, fw::kByte, fw::kLong, fw::kBool}) {
      Tensor t = fw::ones({n}, dt);
      EXPECT_EQ(t.sum().item<int64_t>(), n) << n << " " << dt;
      EXPECT_EQ(t.view({1, n}).sum({1}).item<int64_t>(), n) << n << " " << dt;
    }
  }
  // torch.arange(200000, dtype=torch.int32).sum() == 19999900000
  EXPECT_EQ(fw::arange(200000, fw::kInt).sum().item<int64_t>(), 19999900000LL);
  EXPECT_EQ(fw::arange(200000, fw::kInt).to(fw::kShort).sum().item<int64_t>(),
            fw::arange(200000, fw::kInt).to(fw::kShort).to(fw::kLong).sum().item<int64_t>());
  // Products of +-1 of every integer width: the sign is the parity of the -1s.
  for (auto dt : {fw::kChar, fw::kShort, fw::kInt, fw::kLong}) {
    std::vector<int64_t> v(50001, 1);
    int64_t negs = 0;
    for (size_t i = 0; i < v.size(); i += 7) v[i] = -1, negs++;
    Tensor t = fw::tensor(v).to(dt);
    EXPECT_EQ(t.prod().item<int64_t>(), negs % 2 ? -1 : 1) << dt;
  }
  std::vector<int64_t> w(40000, 1);
  w[100] = 3, w[30000] = 5, w[39999] = -7;
  EXPECT_EQ(fw::tensor(w).to(fw::kInt).prod().item<int64_t>(), -105);
}

TEST(HuntCore, InPlaceWritesIntoExpandedTensorsAreErrors) {
  // torch.zeros(1).expand(3).add_(1): "unsupported operation: more than one element of the
  // written-to tensor refers to a single memory location"
  Tensor x = fw::zeros({1}).expand({3});
  EXPECT_ERROR(x.add_(1), "more than one element of the written-to tensor");
  EXPECT_ERROR(x.mul_(fw::ones({3})), "[mul]");
  EXPECT_ERROR(x.copy_(fw::ones({3})), "[copy_]");
  EXPECT_ERROR(x.clamp_(0, 1), "refers to a single memory location");
  EXPECT_ERROR(x.masked_fill_(fw::tensor({false, true, false}), 5.0), "single memory location");
  EXPECT_EQ(values(x), (std::vector<double>{0, 0, 0}));  // nothing was written
  // fill_ and zero_ write the same value to every alias: allowed, as in PyTorch.
  x.fill_(2);
  EXPECT_EQ(values(x), (std::vector<double>{2, 2, 2}));
  // A size-1 dim with stride 0, and partial overlaps, are not internal overlap.
  Tensor y = fw::zeros({3, 1}).expand({3, 1});
  y.add_(1);
  EXPECT_EQ(values(y), (std::vector<double>{1, 1, 1}));
}

TEST(HuntCore, ClampBoundsOutsideAnIntegerDtypeAreErrors) {
  Tensor x = fw::tensor({250, 1, 0}, fw::kByte);
  EXPECT_ERROR(fw::clamp(x, -5, 300), "[clamp] bound -5 cannot be converted to type Byte");
  EXPECT_ERROR(fw::clamp(x, 0, 300), "bound 300");
  EXPECT_ERROR(fw::clamp(fw::tensor({-100, 5}, fw::kChar), 200, std::nullopt), "bound 200");
  EXPECT_ERROR(x.clamp_(std::nullopt, 256), "bound 256");
  EXPECT_EQ(values(fw::clamp(x, 1, 255)), (std::vector<double>{250, 1, 1}));
  // Float bounds promote instead: torch.clamp(x, 0.5, 300.5) -> float [250, 1, 0.5]
  Tensor f = fw::clamp(x, 0.5, 300.5);
  EXPECT_EQ(f.dtype(), fw::kFloat);
  EXPECT_EQ(values(f), (std::vector<double>{250, 1, 0.5}));
}

TEST(HuntCore, IntegerPowWithATensorOfNegativeExponents) {
  // torch.pow(torch.tensor([2, -2, 1, -1]), torch.tensor([-1, -1, -2, -3])) -> [0, 0, 1, -1]
  EXPECT_EQ(values(fw::pow(fw::tensor({2, -2, 1, -1}), fw::tensor({-1, -1, -2, -3}))),
            (std::vector<double>{0, 0, 1, -1}));
  // torch.pow(2, torch.tensor([-1, 0, 3])) -> [0, 1, 8]
  EXPECT_EQ(values(fw::pow(2, fw::tensor({-1, 0, 3}))), (std::vector<double>{0, 1, 8}));
  // A negative Scalar exponent stays an error.
  EXPECT_ERROR(fw::pow(fw::tensor({2}), -1), "Integers to negative integer powers are not allowed");
}

TEST(HuntCore, IsinIgnoresNaNInTheTestSet) {
  // torch.isin(torch.tensor([1., 5.]), torch.tensor([5., nan, 1., nan])) -> [True, True]
  EXPECT_EQ(values(fw::isin(fw::tensor({1.0, 5.0}), fw::tensor({5.0, NAN, 1.0, NAN}))),
            (std::vector<double>{1, 1}));
  EXPECT_EQ(values(fw::isin(fw::tensor({1.0, 2.0}), fw::tensor({NAN, 1.0}))), (std::vector<double>{1, 0}));
  EXPECT_EQ(values(fw::isin(fw::tensor({NAN}), fw::tensor({NAN}))), (std::vector<double>{0}));
  EXPECT_EQ(values(fw::isin(fw::tensor({NAN, 2.0}), fw::tensor({NAN}), false, true)), (std::vector<double>{1, 1}));
}

TEST(HuntCore, RemainderWithAScalarDividend) {
  // torch.remainder(5, torch.tensor([3, -3])) -> [2, -1]; torch.remainder(5.5, torch.tensor([2.])) -> [1.5]
  Tensor r = fw::remainder(5, fw::tensor({3, -3}));
  EXPECT_EQ(r.dtype(), fw::kLong);
  EXPECT_EQ(values(r), (std::vector<double>{2, -1}));
  EXPECT_EQ(values(fw::remainder(5.5, fw::tensor({2.0}))), (std::vector<double>{1.5}));
}

// ---- autograd

TEST(HuntAutograd, InPlaceOnABaseRederivesItsEarlierViews) {
  Tensor x = fw::tensor({1.0, 2.0, 3.0}).requires_grad_();
  Tensor a = x * 1;
  Tensor v = a.narrow(0, 0, 2);
  a.mul_(2);
  (v * v).sum().backward();  // d/dx (2x)^2 = 8x on the first two
  EXPECT_EQ(values(x.grad()), (std::vector<double>{8, 16, 0}));
}

TEST(HuntAutograd, LeafMadeFromAViewRejectsInPlaceOps) {
  Tensor x = fw::arange(6.0).view({2, 3}).requires_grad_();
  EXPECT_TRUE(x.is_leaf());
  EXPECT_ERROR(x.mul_(2), "a leaf Variable that requires grad is being used in an in-place operation");
  EXPECT_ERROR(x.zero_(), "leaf Variable");
  EXPECT_ERROR(x.copy_(fw::ones({2, 3})), "leaf Variable");
  EXPECT_TRUE(x.is_leaf());
  EXPECT_EQ(values(x), (std::vector<double>{0, 1, 2, 3, 4, 5}));
}

TEST(HuntAutograd, InputsReadOnlyForAnotherGradientAreNotVersionChecked) {
  // y is read by y * w only for w's gradient, which is not needed: PyTorch does not save it.
  Tensor x = fw::tensor({1.0, 2.0, 3.0}).requires_grad_();
  Tensor w = fw::tensor({4.0, 5.0, 6.0});
  Tensor y = x * 2;
  Tensor z = y * w, z3 = y * 3, zd = y / w;
  y.mul_(10);
  z.sum().backward();
  EXPECT_EQ(values(x.grad()), (std::vector<double>{8, 10, 12}));
  x.mutable_grad() = Tensor();
  z3.sum().backward();
  EXPECT_EQ(values(x.grad()), (std::vector<double>{6, 6, 6}));
  x.mutable_grad() = Tensor();
  zd.sum().backward();
  EXPECT_NEAR(values(x.grad())[0], 2.0 / 4, 1e-12);
  // When w requires grad, y is needed and its change is an error.
  Tensor w2 = fw::tensor({4.0, 5.0, 6.0}).requires_grad_();
  Tensor y2 = x * 2;
  Tensor z2 = y2 * w2;
  y2.mul_(10);
  EXPECT_ERROR(z2.sum().backward(), "modified by an in-place operation");
  // Matrix products: bb is read only for a's gradient, which is not needed (torch: b.grad = 2s).
  Tensor a = fw::ones({2, 2}, fw::kDouble), b = fw::ones({2, 2}, fw::kDouble).requires_grad_();
  Tensor bb = b * 1;
  Tensor m = fw::mm(bb, a);
  bb.add_(1);
  m.sum().backward();
  EXPECT_EQ(values(b.grad()), (std::vector<double>{2, 2, 2, 2}));
  // ... but a is read for b's gradient: changing it is an error, as in PyTorch.
  Tensor a2 = fw::ones({2, 2}, fw::kDouble) * 1;
  Tensor m2 = fw::mm(b, a2);
  a2.add_(1);
  EXPECT_ERROR(m2.sum().backward(), "modified by an in-place operation");
}

TEST(HuntAutograd, MaskedFillWithATensorValueGivesItAGradient) {
  Tensor x = fw::tensor({1.0, 2.0, 3.0}).requires_grad_();
  Tensor v = fw::tensor(5.0).requires_grad_();
  Tensor m = fw::tensor({true, false, true});
  Tensor y = x.masked_fill(m, v);
  EXPECT_EQ(values(y), (std::vector<double>{5, 2, 5}));
  y.sum().backward();
  EXPECT_EQ(values(v.grad()), (std::vector<double>{2}));
  EXPECT_EQ(values(x.grad()), (std::vector<double>{0, 1, 0}));
  // An integer tensor keeps its dtype.
  EXPECT_EQ(fw::tensor({1, 2}).masked_fill(fw::tensor({true, false}), fw::tensor(2.5)).dtype(), fw::kLong);
}

TEST(HuntAutograd, StdOfAConstantHasAZeroGradient) {
  Tensor x = fw::tensor({2.0, 2.0, 2.0}).requires_grad_();
  x.std().backward();
  EXPECT_EQ(values(x.grad()), (std::vector<double>{0, 0, 0}));
  Tensor y = fw::tensor({{1.0, 1.0}, {1.0, 3.0}}).requires_grad_();
  fw::std(y, {1}, true, false).sum().backward();
  // torch: row 0 constant -> 0; row 1: (x - mean) / (std * (n - 1)) = [-1, 1] / sqrt(2)
  std::vector<double> g = values(y.grad());
  EXPECT_EQ(g[0], 0);
  EXPECT_EQ(g[1], 0);
  EXPECT_NEAR(g[2], -1 / std::sqrt(2.0), 1e-6);  // float32
  EXPECT_NEAR(g[3], 1 / std::sqrt(2.0), 1e-6);
}

TEST(HuntAutograd, FmaxFminGradientsFollowPyTorch) {
  Tensor a = fw::tensor({1.0, 2.0, 3.0}).requires_grad_();
  Tensor b = fw::tensor({NAN, 1.0, 3.0}).requires_grad_();
  fw::fmax(a, b).sum().backward();
  // self where self >= other or other is NaN (ties included); other elsewhere
  EXPECT_EQ(values(a.grad()), (std::vector<double>{1, 1, 1}));
  EXPECT_EQ(values(b.grad()), (std::vector<double>{0, 0, 0}));
  Tensor c = fw::tensor({1.0, 2.0, NAN}).requires_grad_();
  Tensor d = fw::tensor({NAN, 1.0, 0.0}).requires_grad_();
  fw::fmin(c, d).sum().backward();
  EXPECT_EQ(values(c.grad()), (std::vector<double>{1, 0, 0}));
  EXPECT_EQ(values(d.grad()), (std::vector<double>{0, 1, 1}));
}

TEST(HuntAutograd, ClampWithOneTensorBoundGivesTiesToTheInput) {
  Tensor x = fw::tensor({1.0, 2.0, 3.0}).requires_grad_();
  Tensor lo = fw::tensor({2.0, 2.0, 2.0}).requires_grad_();
  Tensor y = x.clamp(std::optional<Tensor>(lo), std::nullopt);
  EXPECT_EQ(values(y), (std::vector<double>{2, 2, 3}));
  y.sum().backward();
  EXPECT_EQ(values(x.grad()), (std::vector<double>{0, 1, 1}));
  EXPECT_EQ(values(lo.grad()), (std::vector<double>{1, 0, 0}));
  Tensor x2 = fw::tensor({1.0, 2.0, 3.0}).requires_grad_();
  Tensor hi = fw::tensor({2.0, 2.0, 2.0}).requires_grad_();
  x2.clamp(std::nullopt, std::optional<Tensor>(hi)).sum().backward();
  EXPECT_EQ(values(x2.grad()), (std::vector<double>{1, 1, 0}));
  EXPECT_EQ(values(hi.grad()), (std::vector<double>{0, 0, 1}));
  // NaN propagates; integer tensors keep their dtype.
  EXPECT_TRUE(std::isnan(values(fw::tensor({NAN}).clamp(std::optional<Tensor>(fw::tensor({0.0})), std::nullopt))[0]));
  EXPECT_EQ(fw::tensor({1, 5}).clamp(std::optional<Tensor>(fw::tensor({2, 2})), std::nullopt).dtype(), fw::kLong);
}

TEST(HuntAutograd, SecondBackwardThroughNodesThatSavedNothing) {
  Tensor x = fw::tensor({1.0, 2.0}).requires_grad_();
  Tensor h = x + 1;
  Tensor v = x.view({2, 1}).t().reshape({2});
  h.sum().backward();
  (h * 2).sum().backward();  // torch: x.grad = [3, 3]
  EXPECT_EQ(values(x.grad()), (std::vector<double>{3, 3}));
  v.sum().backward();
  v.sum().backward();  // torch: views save nothing either
  EXPECT_EQ(values(x.grad()), (std::vector<double>{5, 5}));
  // A node that saved values still refuses.
  Tensor e = x.exp().sum();
  e.backward();
  EXPECT_ERROR(e.backward(), "backward through the graph a second time");
}

TEST(HuntAutograd, RetainGradFollowsAnInPlaceWrite) {
  Tensor x = fw::tensor({1.0, 2.0, 3.0}).requires_grad_();
  Tensor h = x * 2;
  h.retain_grad();
  h.mul_(3);
  (h * h).sum().backward();
  EXPECT_EQ(values(h.grad()), (std::vector<double>{12, 24, 36}));  // 2 * h_new
  EXPECT_EQ(values(x.grad()), (std::vector<double>{72, 144, 216}));
}

TEST(HuntAutograd, FlagChangesThatPyTorchRefuses) {
  Tensor y = fw::tensor({1.0, 2.0}).requires_grad_();
  Tensor h = y * 2;
  EXPECT_ERROR(h.requires_grad_(false), "only change requires_grad flags of leaf variables");
  h.requires_grad_(true);  // a no-op, as in PyTorch
  EXPECT_TRUE(h.requires_grad());
  Tensor v = (y * 2).select(0, 1);
  EXPECT_ERROR(v.detach_(), "Can't detach views in-place");
  Tensor d = (y * 2).detach();
  d.detach_();  // not a view
  EXPECT_FALSE(d.requires_grad());
}

TEST(HuntAutograd, ScalarTakesOnlyRealBools) {
  // x.norm("fro") compiled through Scalar(bool) and meant p = 1; a pointer no longer converts.
  static_assert(!std::is_convertible_v<const char*, fw::Scalar>);
  static_assert(std::is_convertible_v<bool, fw::Scalar>);
  EXPECT_TRUE(fw::Scalar(true).isBoolean());
}

TEST(HuntAutograd, FullMedianSharesTheGradientAmongTies) {
  // torch.tensor([1., 2., 2., 2., 3.]).median() backward -> [0, 1/3, 1/3, 1/3, 0]
  Tensor x = fw::tensor({1.0, 2.0, 2.0, 2.0, 3.0}).requires_grad_();
  Tensor m = x.median();
  EXPECT_EQ(m.item<double>(), 2.0);
  m.backward();
  std::vector<double> g = values(x.grad());
  for (int i : {1, 2, 3}) EXPECT_NEAR(g[size_t(i)], 1.0 / 3, 1e-7);
  EXPECT_EQ(g[0], 0);
  EXPECT_EQ(g[4], 0);
  Tensor y = fw::tensor({{NAN, 5.0}, {5.0, 1.0}}).requires_grad_();
  Tensor n = fw::nanmedian(y);
  EXPECT_EQ(n.item<double>(), 5.0);
  n.backward();
  EXPECT_EQ(values(y.grad()), (std::vector<double>{0, 0.5, 0.5, 0}));
  // Without gradients the value is the same tensor as before.
  EXPECT_EQ(fw::tensor({3.0, 1.0, 2.0}).median().item<double>(), 2.0);
}
