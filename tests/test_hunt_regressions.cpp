// Regressions found by bug hunts against PyTorch 1.13 (2026-12-06, third session): eager core ops
// and eager autograd. Expected values are PyTorch 1.13's for the same inputs (small enough to
// state inline; each comment gives the Python expression).
#include <gtest/gtest.h>

#include <cmath>
#include <complex>
#include <cstdint>
#include <limits>
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

// ---- 2026-12-06, fourth session: findings left from the hunts, against PyTorch 1.13 / libtorch.

TEST(HuntOps, ClampKeepsInt64BoundsExact) {
  // torch.tensor([2**60+1, 5]).clamp(min=2**60+3) -> [1152921504606846979] * 2 (exact past 2^53)
  const int64_t big = (int64_t(1) << 60) + 3;
  Tensor x = fw::tensor({(int64_t(1) << 60) + 1, int64_t(5), big + 2});
  Tensor y = x.clamp(big, std::nullopt);
  Tensor z = x.clamp(std::nullopt, big);
  const int64_t* py = y.data_ptr<int64_t>();
  const int64_t* pz = z.data_ptr<int64_t>();
  EXPECT_EQ(py[0], big);
  EXPECT_EQ(py[1], big);
  EXPECT_EQ(py[2], big + 2);
  EXPECT_EQ(pz[0], (int64_t(1) << 60) + 1);
  EXPECT_EQ(pz[2], big);
  Tensor m = fw::tensor({std::numeric_limits<int64_t>::min() + 1, int64_t(0)})
                 .clamp(std::numeric_limits<int64_t>::min(), std::numeric_limits<int64_t>::max() - 1);
  EXPECT_EQ(m.data_ptr<int64_t>()[0], std::numeric_limits<int64_t>::min() + 1);
}

TEST(HuntOps, HalfOperandsRoundToTheCommonDtypeFirst) {
  Tensor x = fw::tensor({1.0, 3.0, 7.0, 1000.0, 0.3}).to(fw::kHalf);
  // (x * 0.1).tolist() -> [0.0999755859375, 0.2998046875, 0.69970703125, 100.0, 0.029998779296875]
  EXPECT_EQ(values(x * 0.1), (std::vector<double>{0.0999755859375, 0.2998046875, 0.69970703125, 100.0,
                                                  0.029998779296875}));
  EXPECT_EQ(values(x * fw::scalar_tensor(0.1)), values(x * 0.1));  // a float32 0-dim operand too
  // x + torch.tensor([1, 2049, 3, 4097, 5], dtype=torch.int32) -> [2, 2052, 10, 5096, 5.30078125]
  Tensor i = fw::tensor({1, 2049, 3, 4097, 5}).to(fw::kInt);
  EXPECT_EQ(values(x + i), (std::vector<double>{2, 2052, 10, 5096, 5.30078125}));
  // x == 0.3 -> [F, F, F, F, T]; x / 3 -> [0.333251953125, 1, 2.333984375, 333.25, 0.10003662109375]
  EXPECT_EQ(values(x == 0.3), (std::vector<double>{0, 0, 0, 0, 1}));
  EXPECT_EQ(values(x / 3), (std::vector<double>{0.333251953125, 1, 2.333984375, 333.25, 0.10003662109375}));
  // b = x.bfloat16(); b * 0.1 -> [0.10009765625, 0.30078125, 0.69921875, 100.0, 0.0301513671875]
  Tensor b = x.to(fw::kBFloat16);
  EXPECT_EQ(values(b * 0.1), (std::vector<double>{0.10009765625, 0.30078125, 0.69921875, 100.0, 0.0301513671875}));
}

TEST(HuntOps, IntegerScalarsThatDoNotFit) {
  // torch.zeros(2, dtype=torch.int32).fill_(2**40) raises; + 2**40 wraps (the wrapped number is cast)
  Tensor z = fw::zeros({2}, fw::kInt);
  EXPECT_ERROR(z.fill_(int64_t(1) << 40), "value cannot be converted to type int without overflow");
  EXPECT_ERROR(fw::full({2}, 300, fw::kByte), "value cannot be converted to type uint8_t without overflow");
  EXPECT_ERROR(z.fill_(1e10), "without overflow");
  EXPECT_EQ(values(z + (int64_t(1) << 40)), (std::vector<double>{0, 0}));
  EXPECT_EQ(values(z + ((int64_t(1) << 40) + 7)), (std::vector<double>{7, 7}));
  // torch.where(cond, int32 tensor, 2**40) raises
  EXPECT_ERROR(fw::where(fw::tensor({true, false}), z, fw::Scalar(int64_t(1) << 40)), "without overflow");
  // libtorch's item<int>() and Scalar::toLong() check the range.
  EXPECT_ERROR(fw::tensor({int64_t(1) << 40}).item<int32_t>(), "value cannot be converted to type int without overflow");
  EXPECT_EQ(fw::tensor({int64_t(1) << 40}).item<int64_t>(), int64_t(1) << 40);
  EXPECT_ERROR(fw::Scalar(1e300).toLong(), "value cannot be converted to type int64_t without overflow");
  EXPECT_ERROR(fw::Scalar(std::nan("")).toLong(), "without overflow");
  EXPECT_EQ(fw::Scalar(-9223372036854775808.0).toLong(), std::numeric_limits<int64_t>::min());
  EXPECT_EQ(fw::tensor({2.75}).item<int>(), 2);
  EXPECT_ERROR(fw::tensor({3e9}).item<int>(), "without overflow");
}

TEST(HuntCompat, TensorFromValuesFollowsLibtorchDtypes) {
  // torch::tensor(std::vector<double>) and torch::tensor({1.5, 2.5}) take the default dtype;
  // int vectors give Long; uint8_t/int16_t/bool keep theirs.
  EXPECT_EQ(fw::tensor(std::vector<double>{1.5, 2.5}).dtype(), fw::kFloat);
  EXPECT_EQ(fw::tensor(std::vector<float>{1.5f}).dtype(), fw::kFloat);
  EXPECT_EQ(fw::tensor(std::vector<int>{1, 2}).dtype(), fw::kLong);
  EXPECT_EQ(fw::tensor(std::vector<uint8_t>{1, 2}).dtype(), fw::kByte);
  EXPECT_EQ(fw::tensor(std::vector<double>{1.5}, fw::kDouble).dtype(), fw::kDouble);
  EXPECT_EQ(fw::tensor({uint8_t(1), uint8_t(200)}).dtype(), fw::kByte);
  EXPECT_EQ(fw::tensor({int16_t(-3), int16_t(4)}).dtype(), fw::kShort);
  EXPECT_EQ(fw::tensor({{int8_t(-3)}, {int8_t(4)}}).dtype(), fw::kChar);
  EXPECT_EQ(fw::tensor({fw::Half(1.5f)}).dtype(), fw::kHalf);
  EXPECT_EQ(fw::tensor({1, 2}).dtype(), fw::kLong);
  EXPECT_EQ(fw::tensor({1.0f, 2.0f}).dtype(), fw::kFloat);
  EXPECT_EQ(fw::tensor({1, 2}, fw::kDouble).dtype(), fw::kDouble);
  fw::set_default_dtype(fw::kDouble);
  EXPECT_EQ(fw::tensor(std::vector<double>{0.1}).dtype(), fw::kDouble);
  EXPECT_EQ(fw::tensor(std::vector<double>{0.1}).item<double>(), 0.1);
  fw::set_default_dtype(fw::kFloat);
  EXPECT_EQ(values(fw::tensor({uint8_t(1), uint8_t(200)})), (std::vector<double>{1, 200}));
  // Large int64 values survive the braced form exactly.
  const int64_t big = (int64_t(1) << 60) + 1;
  Tensor t = fw::tensor({{big, int64_t(2)}, {-big, int64_t(3)}});
  EXPECT_EQ(t.data_ptr<int64_t>()[0], big);
  EXPECT_EQ(t.data_ptr<int64_t>()[2], -big);
}

TEST(HuntCompat, CompoundAssignmentOnTemporaries) {
  // x[0] += 1; x.narrow(0, 1, 2) *= 10 (libtorch's members work on temporaries)
  Tensor x = fw::zeros({3});
  x[0] += 1;
  x.narrow(0, 1, 2) *= 10;
  x.narrow(0, 1, 2) -= fw::tensor({1.0f, 2.0f});
  x[2] /= 2;
  EXPECT_EQ(values(x), (std::vector<double>{1, -1, -1}));
  Tensor b = fw::tensor({uint8_t(12), uint8_t(10)});
  b[1] ^= 3;
  b[0] &= 4;
  b[0] |= 1;
  EXPECT_EQ(values(b), (std::vector<double>{5, 9}));
}

TEST(HuntCompat, HalfAndBFloat16Limits) {
  EXPECT_EQ(float(std::numeric_limits<fw::Half>::max()), 65504.0f);
  EXPECT_EQ(float(std::numeric_limits<fw::Half>::lowest()), -65504.0f);
  EXPECT_EQ(float(std::numeric_limits<fw::Half>::epsilon()), 0.0009765625f);
  EXPECT_EQ(float(std::numeric_limits<fw::Half>::min()), 6.103515625e-05f);
  EXPECT_TRUE(std::isinf(float(std::numeric_limits<fw::Half>::infinity())));
  EXPECT_TRUE(std::isnan(float(std::numeric_limits<fw::Half>::quiet_NaN())));
  EXPECT_EQ(float(std::numeric_limits<fw::BFloat16>::max()), 3.3895313892515355e38f);
  EXPECT_EQ(float(std::numeric_limits<fw::BFloat16>::epsilon()), 0.0078125f);
  EXPECT_EQ(float(std::numeric_limits<fw::BFloat16>::min()), std::numeric_limits<float>::min());
  EXPECT_EQ(std::numeric_limits<fw::Half>::digits, 11);
  EXPECT_EQ(std::numeric_limits<fw::BFloat16>::digits, 8);
}

namespace {
struct Twice : fw::autograd::Function<Twice> {  // saves nothing
  static Tensor forward(fw::autograd::AutogradContext*, Tensor x) { return x * 2; }
  static fw::autograd::variable_list backward(fw::autograd::AutogradContext*, fw::autograd::variable_list g) {
    return {g[0] * 2};
  }
};
}  // namespace

TEST(HuntAutograd, SecondBackwardThroughAFunctionThatSavedNothing) {
  // libtorch's CppNode runs again; only reading freed saved tensors raises.
  Tensor x = fw::tensor({1.0, 2.0}).requires_grad_();
  Tensor y = Twice::apply(x).sum();
  y.backward();
  y.backward();
  EXPECT_EQ(values(x.grad()), (std::vector<double>{4, 4}));
}

TEST(HuntCompat, ModuleZeroGradZeroesByDefault) {
  // libtorch 1.13: Module::zero_grad(bool set_to_none = false)
  fw::nn::Linear lin(2, 1);
  lin(fw::ones({1, 2})).sum().backward();
  lin->zero_grad();
  ASSERT_TRUE(lin->weight.grad().defined());
  EXPECT_EQ(values(lin->weight.grad()), (std::vector<double>{0, 0}));
  lin->zero_grad(true);
  EXPECT_FALSE(lin->weight.grad().defined());
}

namespace {
std::vector<std::complex<double>> cvalues(const Tensor& t) {
  Tensor c = t.to(fw::kComplexDouble).contiguous().reshape({-1});
  const auto* p = c.data_ptr<std::complex<double>>();
  return std::vector<std::complex<double>>(p, p + c.numel());
}
void expect_complex(const Tensor& t, const std::vector<std::complex<double>>& want, double tol = 1e-12) {
  auto got = cvalues(t);
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); i++) EXPECT_LT(std::abs(got[i] - want[i]), tol) << i << ": " << got[i] << " vs " << want[i];
}
}  // namespace

TEST(HuntComplex, InverseTrigLogsSigmoidRsqrt) {
  using C = std::complex<double>;
  Tensor w = fw::view_as_complex(fw::tensor({0.5, 0.25, -1.0, 2.0, 3.0, -0.5}, fw::kDouble).view({3, 2}));
  // torch.asin(w) etc. for w = [0.5+0.25j, -1+2j, 3-0.5j] (complex128)
  expect_complex(fw::asin(w), {C(0.501608853275501, 0.281396056245293), C(-0.427078586392476, 1.528570919480998),
                               C(1.396149861709447, -1.778990493826769)});
  expect_complex(fw::acos(w), {C(1.069187473519396, -0.281396056245293), C(1.997874913187373, -1.528570919480998),
                               C(0.174646465085449, 1.778990493826769)});
  expect_complex(fw::atan(w), {C(0.484254490329966, 0.200586618131234), C(-1.338972522294493, 0.402359478108525),
                               C(1.25639818358718, -0.048936144281524)});
  expect_complex(fw::asinh(w), {C(0.492675683420771, 0.224328452634667), C(-1.469351744368185, 1.063440023577752),
                                C(1.830194762337509, -0.157004594788942)});
  expect_complex(fw::acosh(w), {C(0.281396056245293, 1.069187473519396), C(1.528570919480998, 1.997874913187373),
                                C(1.778990493826769, -0.174646465085449)});
  expect_complex(fw::atanh(w), {C(0.500370000052531, 0.314398143207716), C(-0.173286795139986, 1.178097245096172),
                                C(0.335293481459855, -1.510484492504845)});
  expect_complex(fw::log2(w), {C(-0.839035952556319, 0.668902106225488), C(1.160964047443681, 2.935082177139085),
                               C(1.604726682814475, -0.238259177915453)});
  expect_complex(fw::log10(w), {C(-0.252574989159953, 0.201359598136687), C(0.349485002168009, 0.883547775057607),
                                C(0.483070866369516, -0.071723159294793)});
  expect_complex(fw::sigmoid(w), {C(0.624275164419961, 0.059002964314508), C(-0.021415364172181, 0.403438706081543),
                                  C(0.957635956630657, -0.021901088462584)});
  expect_complex(fw::rsqrt(w), {C(1.301701652069289, -0.307290076312132), C(0.351577584254143, -0.568864481005783),
                                C(0.571455290873678, 0.047295085825011)});
  // (asin(x).abs().sum() + sigmoid(x).abs().sum() + log2(x).abs().sum() + rsqrt(x).abs().sum()
  //  + atanh(x).abs().sum()).backward()
  Tensor x = w.clone().requires_grad_();
  (fw::asin(x).abs().sum() + fw::sigmoid(x).abs().sum() + fw::log2(x).abs().sum() + fw::rsqrt(x).abs().sum() +
   fw::atanh(x).abs().sum())
      .backward();
  expect_complex(x.grad(), {C(-1.2084252344964876, 0.7278201964791488), C(-0.5645713190322257, 0.409490045788128),
                            C(0.7246282123741145, 0.128039469536384)},
                 1e-10);
}

TEST(HuntComplex, PredicatesAndNorms) {
  const double nan = std::nan(""), inf = INFINITY;
  Tensor z = fw::view_as_complex(fw::tensor({nan, 0.0, 0.0, inf, 1.0, 1.0}, fw::kDouble).view({3, 2}));
  EXPECT_EQ(values(fw::isnan(z)), (std::vector<double>{1, 0, 0}));
  EXPECT_EQ(values(fw::isinf(z)), (std::vector<double>{0, 1, 0}));
  EXPECT_EQ(values(fw::isfinite(z)), (std::vector<double>{0, 0, 1}));
  // torch.linalg.vector_norm(z) for z = [3+4j, 1-2j, 0.5+0j]: 5.5; inf: 5; 1: 7.73606797749979
  Tensor v = fw::view_as_complex(fw::tensor({3.0, 4.0, 1.0, -2.0, 0.5, 0.0}, fw::kDouble).view({3, 2}));
  EXPECT_NEAR(fw::linalg::vector_norm(v).item<double>(), 5.5, 1e-12);
  EXPECT_NEAR(fw::linalg::vector_norm(v, INFINITY).item<double>(), 5.0, 1e-12);
  EXPECT_NEAR(fw::linalg::vector_norm(v, 1).item<double>(), 7.73606797749979, 1e-12);
  EXPECT_EQ(fw::linalg::vector_norm(v).dtype(), fw::kDouble);
  // A = [[1+1j, 2], [3j, -1]]: matrix_norm fro 4, 1 -> 4.414213562373095, inf -> 4
  Tensor A = fw::view_as_complex(fw::tensor({1.0, 1.0, 2.0, 0.0, 0.0, 3.0, -1.0, 0.0}, fw::kDouble).view({2, 2, 2}));
  EXPECT_NEAR(fw::linalg::matrix_norm(A).item<double>(), 4.0, 1e-12);
  EXPECT_NEAR(fw::linalg::matrix_norm(A, 1).item<double>(), 4.414213562373095, 1e-12);
  EXPECT_NEAR(fw::linalg::matrix_norm(A, INFINITY).item<double>(), 4.0, 1e-12);
}

TEST(HuntOps, VectorNormWithoutIdentityOnEmpty) {
  // torch.linalg.vector_norm(torch.zeros(0), inf) raises; ord 0/1/2 give 0.
  Tensor e = fw::zeros({0});
  for (double o : {double(INFINITY), -double(INFINITY), -1.0, -0.5})
    EXPECT_ERROR(fw::linalg::vector_norm(e, o), "norm on an empty tensor because the operation does not have an identity");
  for (double o : {0.0, 1.0, 2.0}) EXPECT_EQ(fw::linalg::vector_norm(e, o).item<double>(), 0.0);
  Tensor m = fw::zeros({2, 0});
  EXPECT_ERROR(fw::linalg::vector_norm(m, INFINITY, std::vector<int64_t>{1}), "on the dimension 1 because this dimension is empty");
  EXPECT_EQ(fw::linalg::vector_norm(m, INFINITY, std::vector<int64_t>{0}).numel(), 0);
  EXPECT_EQ(values(fw::linalg::vector_norm(m, 2, std::vector<int64_t>{1})), (std::vector<double>{0, 0}));
}

namespace {
// A scheduler written against libtorch's LRScheduler: halves the lr on every second step() call.
struct Halving : fw::optim::LRScheduler {
  using LRScheduler::LRScheduler;
  std::vector<double> get_lrs() override {
    auto lrs = get_current_lrs();
    if (step_count_ % 2 == 1)
      for (double& l : lrs) l /= 2;
    return lrs;
  }
};
}  // namespace

TEST(HuntCompat, StepLRStepsAsLibtorch) {
  // libtorch 1.13: StepLR(opt, 2, 0.5) from lr 1 gives 1, 1, 0.5, 0.5, 0.25 after 1..5 step() calls.
  Tensor p = fw::zeros({1}).requires_grad_();
  fw::optim::SGD opt({p}, fw::optim::SGDOptions(1.0));
  fw::optim::StepLR s(opt, 2, 0.5);
  EXPECT_EQ(opt.param_groups()[0].options().get_lr(), 1.0);
  std::vector<double> lrs;
  for (int i = 0; i < 5; i++) {
    s.step();
    lrs.push_back(opt.param_groups()[0].options().get_lr());
  }
  EXPECT_EQ(lrs, (std::vector<double>{1, 1, 0.5, 0.5, 0.25}));
  Halving h(opt);
  for (int i = 0; i < 4; i++) h.step();
  EXPECT_EQ(opt.param_groups()[0].options().get_lr(), 0.0625);
}

TEST(HuntCompat, Uint8MasksAsInPyTorch113) {
  // x = torch.arange(4.); m = torch.tensor([1, 0, 1, 0], dtype=torch.uint8)
  // x[m] -> [0, 2]; x.masked_fill(m, 5) -> [5, 1, 5, 3]; torch.where(m, x, -x) -> [0, -1, 2, -3]
  Tensor x = fw::arange(4.0);
  Tensor m = fw::tensor({uint8_t(1), uint8_t(0), uint8_t(2), uint8_t(0)});
  EXPECT_EQ(values(x.index({m})), (std::vector<double>{0, 2}));
  EXPECT_EQ(values(x.masked_fill(m, 5)), (std::vector<double>{5, 1, 5, 3}));
  EXPECT_EQ(values(fw::where(m, x, -x)), (std::vector<double>{0, -1, 2, -3}));
  EXPECT_EQ(values(x.masked_select(m)), (std::vector<double>{0, 2}));
  Tensor y = x.clone();
  y.masked_fill_(m, fw::scalar_tensor(7.0));
  EXPECT_EQ(values(y), (std::vector<double>{7, 1, 7, 3}));
  EXPECT_ERROR(fw::where(fw::tensor({1, 0}), x.narrow(0, 0, 2), x.narrow(0, 0, 2)), "expected condition to be a boolean tensor");
}

TEST(HuntCompat, MissingLibtorchSpellings) {
  Tensor x = fw::tensor({-1.5f, 2.0f});
  EXPECT_EQ(values(x.absolute()), (std::vector<double>{1.5, 2}));
  EXPECT_EQ(x.broadcast_to({3, 2}).sizes().vec(), (std::vector<int64_t>{3, 2}));
  EXPECT_EQ(x.data<float>(), x.data_ptr<float>());
  EXPECT_ERROR(x.cuda(), "not available");
  fw::TensorOptions o = fw::TensorOptions().dtype(fw::kDouble);
  ASSERT_TRUE(o.dtype_opt().has_value());
  EXPECT_EQ(fw::ScalarType(*o.dtype_opt()), fw::kDouble);
  EXPECT_FALSE(fw::TensorOptions().dtype_opt().has_value());
  EXPECT_TRUE(o.device_opt()->is_cpu());
  Tensor p = fw::arange(16.0).view({1, 4, 2, 2});
  Tensor s = fw::pixel_shuffle(p, 2);
  EXPECT_EQ(s.sizes().vec(), (std::vector<int64_t>{1, 1, 4, 4}));
  // torch.pixel_shuffle(torch.arange(16.).view(1, 4, 2, 2), 2)[0, 0, 0] -> [0, 4, 1, 5]
  EXPECT_EQ(values(s[0][0][0]), (std::vector<double>{0, 4, 1, 5}));
  EXPECT_TRUE(fw::equal(fw::pixel_unshuffle(s, 2), p));
  x.absolute_();
  EXPECT_EQ(values(x), (std::vector<double>{1.5, 2}));
}

TEST(HuntLinalg, GelsyRankByIncrementalConditionEstimation) {
  // The 8x6 Hilbert-like matrix 1 / (i + j + 1), b = 1..8 (singular values 1.66, 0.268, 0.0206,
  // 9.4e-4, 2.6e-5, 3.7e-7). Expected ranks and solutions: LAPACK dgelsy's algorithm with JPVT
  // zeroed (free pivoting), computed by a NumPy transcription of it. PyTorch 1.13 passes JPVT
  // uninitialised, so its gelsy pins random columns from run to run; its ranks always include
  // these and its solutions include these among others.
  const int64_t m = 8, n = 6;
  Tensor K = fw::zeros({m, n}, fw::kDouble);
  for (int64_t i = 0; i < m; i++)
    for (int64_t j = 0; j < n; j++) K[i][j] = 1.0 / double(i + j + 1);
  Tensor b = fw::arange(1.0, 9.0, fw::kDouble).unsqueeze(1);
  struct Case {
    double rcond;
    int64_t rank;
    std::vector<double> x;
  };
  std::vector<Case> cases = {
      {0.01, 2, {-18.8203903126437, 8.99860536099648, 14.3306044862303, 15.3393363600306, 15.1050479596731, 14.4719493444634}},
      {0.0001, 4, {-121.950630319174, 1124.14287642775, -1406.90703247397, -1082.71404215699, 186.488430668533, 1579.30300495149}},
      {1e-06, 5, {236.100134553524, -4297.54791996462, 15945.4277875437, -12934.5364473888, -12781.1004408905, 14330.3154346922}},
  };
  for (const Case& k : cases) {
    auto [x, res, rank, sv] = fw::linalg::lstsq(K, b, k.rcond, std::string("gelsy"));
    EXPECT_EQ(rank.item<int64_t>(), k.rank) << k.rcond;
    std::vector<double> got = values(x);
    ASSERT_EQ(got.size(), k.x.size());
    for (size_t i = 0; i < got.size(); i++) EXPECT_NEAR(got[i], k.x[i], 1e-8 * std::max(1.0, std::abs(k.x[i]))) << k.rcond << " " << i;
  }
  // Rank 0: an all-zero matrix gives the zero solution.
  auto z = fw::linalg::lstsq(fw::zeros({3, 2}, fw::kDouble), fw::ones({3, 1}, fw::kDouble));
  EXPECT_EQ(std::get<2>(z).item<int64_t>(), 0);
  EXPECT_EQ(values(std::get<0>(z)), (std::vector<double>{0, 0}));
}

TEST(HuntOps, FloatingFillsThatDoNotFit) {
  // torch.zeros(2).fill_(1e300) raises (float, at::Half, at::BFloat16); float64 takes it; inf fills;
  // a complex value with an imaginary part doesn't fill a real tensor.
  EXPECT_ERROR(fw::zeros({2}).fill_(1e300), "value cannot be converted to type float without overflow");
  EXPECT_ERROR(fw::zeros({2}, fw::kHalf).fill_(70000.0), "value cannot be converted to type at::Half without overflow");
  EXPECT_ERROR(fw::full({2}, 1e300, fw::kBFloat16), "value cannot be converted to type at::BFloat16 without overflow");
  EXPECT_ERROR(fw::zeros({2}).fill_(std::complex<double>(1, 2)), "without overflow");
  EXPECT_EQ(values(fw::zeros({2}, fw::kDouble).fill_(1e300)), (std::vector<double>{1e300, 1e300}));
  EXPECT_TRUE(std::isinf(values(fw::zeros({1}).fill_(INFINITY))[0]));
  // Wrapped numbers in arithmetic convert like a cast: torch.zeros(2) + 1e300 -> inf;
  // torch.zeros(2, dtype=torch.half) * 1e10 -> nan (0 * half(1e10) = 0 * inf).
  EXPECT_TRUE(std::isinf(values(fw::zeros({2}) + 1e300)[0]));
  EXPECT_TRUE(std::isnan(values(fw::zeros({2}, fw::kHalf) * 1e10)[0]));
  // masked_fill and where take the value as fill_ does: torch's masked_fill(half, mask, -1e9) raises.
  EXPECT_ERROR(fw::zeros({2}, fw::kHalf).masked_fill(fw::tensor({true, false}), -1e9), "at::Half without overflow");
}

TEST(HuntOps, IndexErrorsWhereLibtorchRaisesThem) {
  // libtorch 1.13 raises c10::IndexError (Python's IndexError) for a dimension or an index out of
  // range: select, every dim wrap, advanced indexing, index_select/index_add/index_copy/index_fill,
  // take/put, narrow's start, nll_loss targets. gather/scatter (and take_along_dim) raise a plain
  // c10::Error. Each case below was run through PyTorch 1.13 for the exception type.
  auto x = fw::zeros({3, 4});
  auto i5 = fw::tensor({int64_t(5)});
  auto is_index_error = [](auto&& f) {
    try {
      f();
    } catch (const fw::IndexError&) {
      return 1;
    } catch (const fw::Error&) {
      return 0;
    }
    return -1;
  };
  EXPECT_EQ(is_index_error([&] { (void)x.select(0, 5); }), 1);
  EXPECT_EQ(is_index_error([&] { (void)x.select(1, -6); }), 1);
  EXPECT_EQ(is_index_error([&] { (void)x[5]; }), 1);
  EXPECT_EQ(is_index_error([&] { (void)x.sum(5); }), 1);
  EXPECT_EQ(is_index_error([&] { (void)x.size(5); }), 1);
  EXPECT_EQ(is_index_error([&] { (void)x.unsqueeze(5); }), 1);
  EXPECT_EQ(is_index_error([&] { (void)x.transpose(0, 5); }), 1);
  EXPECT_EQ(is_index_error([&] { (void)x.softmax(5); }), 1);
  EXPECT_EQ(is_index_error([&] { (void)fw::cat({x, x}, 5); }), 1);
  EXPECT_EQ(is_index_error([&] { (void)x.flatten(0, 5); }), 1);
  EXPECT_EQ(is_index_error([&] { (void)fw::glu(x, 5); }), 1);
  EXPECT_EQ(is_index_error([&] { (void)fw::gradient(x, fw::IntArrayRef{5}); }), 1);
  EXPECT_EQ(is_index_error([&] { (void)x.index({i5}); }), 1);
  EXPECT_EQ(is_index_error([&] { (void)x.index_select(0, i5); }), 1);
  EXPECT_EQ(is_index_error([&] { (void)x.index_add(0, i5, fw::ones({1, 4})); }), 1);
  EXPECT_EQ(is_index_error([&] { (void)fw::index_copy(x, 0, i5, fw::ones({1, 4})); }), 1);
  EXPECT_EQ(is_index_error([&] { (void)fw::index_fill(x, 0, i5, 1.0); }), 1);
  EXPECT_EQ(is_index_error([&] { (void)x.clone().index_put_({i5}, fw::tensor(1.f)); }), 1);
  EXPECT_EQ(is_index_error([&] { (void)fw::take(x, fw::tensor({int64_t(50)})); }), 1);
  EXPECT_EQ(is_index_error([&] { (void)fw::put(x, fw::tensor({int64_t(50)}), fw::tensor({1.f})); }), 1);
  EXPECT_EQ(is_index_error([&] { (void)fw::embedding(x, i5); }), 1);
  EXPECT_EQ(is_index_error([&] { (void)x.narrow(0, -5, 1); }), 1);
  EXPECT_EQ(is_index_error([&] { (void)fw::nll_loss(x.log_softmax(1), fw::tensor({int64_t(5), 0, 0})); }), 1);
  EXPECT_EQ(is_index_error([&] { (void)fw::cross_entropy_loss(x, fw::tensor({int64_t(5), 0, 0})); }), 1);
  // Plain errors in libtorch: gather/scatter bounds, narrow's length, topk's k.
  auto g5 = fw::tensor({int64_t(5)}).reshape({1, 1});
  EXPECT_EQ(is_index_error([&] { (void)x.gather(0, g5); }), 0);
  EXPECT_EQ(is_index_error([&] { (void)x.scatter(0, g5, 1.0); }), 0);
  EXPECT_EQ(is_index_error([&] { (void)fw::take_along_dim(x, g5, 0); }), 0);
  EXPECT_EQ(is_index_error([&] { (void)x.narrow(0, 1, 5); }), 0);
  EXPECT_EQ(is_index_error([&] { (void)x.topk(7); }), 0);
}
