// In-place writes through views under autograd (Note [In-place writes through views]): the base's
// history gains the write, the view differentiates through it, leaves are protected.
#include <gtest/gtest.h>

#include <fw/fw.h>

using fw::Tensor;
using fw::autograd::variable_list;

namespace {
Tensor vec(std::vector<double> v) { return fw::tensor(v, fw::kDouble); }
bool same(const Tensor& a, const Tensor& b) { return fw::allclose(a, b, 1e-12, 1e-12); }
}  // namespace

TEST(AutogradViews, WriteIntoAViewOfATensorWithoutGrad) {
  Tensor w = vec({1, 2}).requires_grad_(true);
  Tensor x = fw::zeros({4}, fw::kDouble);
  x.narrow(0, 1, 2).copy_(w * 3);
  EXPECT_TRUE(x.requires_grad());
  (x * fw::arange(4, fw::kDouble)).sum().backward();
  EXPECT_TRUE(same(w.grad(), vec({3, 6})));
}

TEST(AutogradViews, BuildAnOutputRowByRow) {
  // The RNN-style pattern: out.select(0, t).copy_(h_t).
  Tensor w = vec({1, -1}).requires_grad_(true);
  Tensor out = fw::zeros({3, 2}, fw::kDouble);
  for (int64_t t = 0; t < 3; t++) out.select(0, t).copy_(w * double(t + 1));
  (out * out).sum().backward();
  // d/dw sum_t (t+1)^2 w^2 = 2 w (1 + 4 + 9)
  EXPECT_TRUE(same(w.grad(), vec({28, -28})));
}

TEST(AutogradViews, InPlaceOpOnAViewOfANonLeaf) {
  Tensor a = vec({1, 2, 3, 4}).requires_grad_(true);
  Tensor c = vec({5, 7}).requires_grad_(true);
  Tensor b = a * 2;
  b.narrow(0, 0, 2).mul_(c);  // b = [2 a0 c0, 2 a1 c1, 2 a2, 2 a3]
  Tensor v = b.select(0, 3);
  v.add_(1);                  // b3 = 2 a3 + 1
  Tensor loss = b.sum() + v * 10;
  loss.backward();
  EXPECT_TRUE(same(a.grad(), vec({10, 14, 2, 22})));
  EXPECT_TRUE(same(c.grad(), vec({2, 4})));
  EXPECT_TRUE(same(b.detach(), vec({10, 28, 6, 9})));
}

TEST(AutogradViews, ViewOfAViewAndTransposedViews) {
  Tensor a = fw::arange(6, fw::kDouble).reshape({2, 3}).requires_grad_(true);
  Tensor s = fw::ones({1}, fw::kDouble).requires_grad_(true);
  Tensor b = a + 0;
  b.t().select(0, 1).narrow(0, 1, 1).mul_(s * 4);  // b[1][1] *= 4 s
  b.sum().backward();
  Tensor expect = fw::ones({2, 3}, fw::kDouble);
  expect.index_put_({1, 1}, 4.0);
  EXPECT_TRUE(same(a.grad(), expect));
  EXPECT_TRUE(same(s.grad(), vec({16})));  // a[1][1] = 4, times 4
}

TEST(AutogradViews, Gradcheck) {
  fw::manual_seed(3);
  Tensor a = fw::randn({3, 4}, fw::kDouble).requires_grad_(true);
  Tensor c = fw::randn({4}, fw::kDouble).requires_grad_(true);
  auto fn = [](const variable_list& v) {
    Tensor b = v[0] * 1.5;
    b.select(0, 1).mul_(v[1]);
    b.narrow(1, 2, 2).add_(v[0].narrow(1, 0, 2).sin());
    return variable_list{b.exp()};
  };
  EXPECT_TRUE(fw::autograd::gradcheck(fn, {a, c}));
  EXPECT_TRUE(fw::autograd::gradgradcheck(fn, {a, c}));
}

TEST(AutogradViews, LeavesAndTheirViewsAreProtected) {
  Tensor a = vec({1, 2, 3}).requires_grad_(true);
  try {
    a.narrow(0, 0, 2).add_(1);
    FAIL() << "expected an error";
  } catch (const fw::Error& e) {
    EXPECT_NE(std::string(e.what()).find("a view of a leaf Variable that requires grad is being used in an in-place "
                                         "operation"), std::string::npos) << e.what();
  }
  EXPECT_THROW(a.add_(1), fw::Error);
  {
    fw::NoGradGuard ng;  // allowed without grad mode, as in PyTorch
    a.narrow(0, 0, 1).add_(1);
  }
  EXPECT_EQ(a[0].item<double>(), 2.0);
}

TEST(AutogradViews, OtherViewsOfTheBaseSeeTheWrite) {
  Tensor a = vec({1, 2, 3}).requires_grad_(true);
  Tensor c = vec({5, 7}).requires_grad_(true);
  Tensor b = a * 1;
  Tensor v1 = b.narrow(0, 0, 2);  // taken before the write, overlapping it at b[1]
  b.narrow(0, 1, 2).mul_(c);      // b = [a0, a1 c0, a2 c1]
  Tensor y = (v1 * vec({1, 10})).sum();  // a0 + 10 a1 c0
  y.backward();
  EXPECT_TRUE(same(a.grad(), vec({1, 50, 0})));
  EXPECT_TRUE(same(c.grad(), vec({20, 0})));
}
