// Relu folded into a matrix product's epilogue under the inductor backend (Note [Epilogues in
// extern products] in codegen/cpp_backend.cpp): which graphs fold, that the results are eager's
// bits (eager addmm adds its bias in the same epilogue, and relu is exact), that products with
// another user stay as they are, and that a compiled training step still gets eager's gradients.
#include <gtest/gtest.h>

#include <fw/fw.h>
#include <fw/jit.h>
#include <fw/nn.h>

#include <cmath>
#include <limits>
#include <string>

namespace {

using fw::Tensor;

void expect_same_bits(const Tensor& got, const Tensor& want) {
  ASSERT_TRUE(got.defined() && want.defined());
  ASSERT_TRUE(got.sizes().equals(want.sizes())) << got.sizes() << " vs " << want.sizes();
  ASSERT_EQ(got.dtype(), want.dtype());
  EXPECT_TRUE(fw::equal(got, want)) << "max abs diff "
                                    << (got.to(fw::kDouble) - want.to(fw::kDouble)).abs().max().item<double>();
}

int epilogues(const fw::jit::Explanation& e) {
  int n = 0;
  for (const std::string& p : e.programs) {
    auto at = p.find(" product(s) with a relu epilogue");
    if (at == std::string::npos) continue;
    auto start = p.rfind(", ", at);
    n += std::stoi(p.substr(start + 2, at - start - 2));
  }
  return n;
}

std::string programs(const fw::jit::Explanation& e) {
  std::string s;
  for (const std::string& p : e.programs) s += p + "\n";
  return s;
}

TEST(ProductEpilogue, ReluAfterEachProductFoldsAndKeepsEagerBits) {
  fw::manual_seed(3);
  const int64_t m = 37, k = 50, n = 45;  // edge tiles on every side
  Tensor x = fw::randn({m, k}), w = fw::randn({n, k}), xb = fw::randn({3, m, k}), wb = fw::randn({3, k, n});
  // Every broadcast of addmm's bias, beta and alpha other than 1.
  for (Tensor bias : {fw::randn({n}), fw::randn({m, 1}), fw::randn({m, n}), fw::randn({})}) {
    for (double beta : {1.0, 0.5}) {
      auto fn = [&](const Tensor& a, const Tensor& b) { return fw::addmm(b, a, w.t(), beta, beta * 2).relu(); };
      auto f = fw::compile(fn);
      expect_same_bits(f(x, bias), fn(x, bias));
      EXPECT_EQ(epilogues(f.explain()), 1) << programs(f.explain());
    }
  }
  auto mm_relu = [&](const Tensor& a) { return fw::relu(fw::mm(a, w.t())); };
  auto bmm_relu = [&](const Tensor& a) { return fw::bmm(a, wb).relu(); };
  Tensor bb = fw::randn({1, n});
  auto baddbmm_relu = [&](const Tensor& a) { return fw::baddbmm(bb.expand({3, m, n}), a, wb, 0.5).relu(); };
  auto f1 = fw::compile(mm_relu);
  auto f2 = fw::compile(bmm_relu);
  auto f3 = fw::compile(baddbmm_relu);
  expect_same_bits(f1(x), mm_relu(x));
  expect_same_bits(f2(xb), bmm_relu(xb));
  expect_same_bits(f3(xb), baddbmm_relu(xb));
  EXPECT_EQ(epilogues(f1.explain()), 1) << programs(f1.explain());
  EXPECT_EQ(epilogues(f2.explain()), 1) << programs(f2.explain());
  EXPECT_EQ(epilogues(f3.explain()), 1) << programs(f3.explain());
}

TEST(ProductEpilogue, DoubleHalfAndBFloat16) {
  fw::manual_seed(4);
  for (auto dt : {fw::kDouble, fw::kHalf, fw::kBFloat16}) {
    Tensor x = fw::randn({20, 33}).to(dt), w = fw::randn({40, 33}).to(dt), b = fw::randn({40}).to(dt);
    auto fn = [](const Tensor& x, const Tensor& w, const Tensor& b) {
      return fw::nn::functional::linear(x, w, b).relu();
    };
    auto f = fw::compile(fn);
    expect_same_bits(f(x, w, b), fn(x, w, b));
    EXPECT_EQ(epilogues(f.explain()), 1) << fw::dtype_name(dt) << "\n" << programs(f.explain());
  }
}

TEST(ProductEpilogue, NaNAndNegativesAsEagerRelu) {
  Tensor x = fw::ones({16, 8}), w = fw::full({40, 8}, -1.0), b = fw::zeros({40});
  x.index_put_({3, 2}, std::numeric_limits<double>::quiet_NaN());
  auto fn = [](const Tensor& x, const Tensor& w, const Tensor& b) { return fw::addmm(b, x, w.t()).relu(); };
  auto f = fw::compile(fn);
  Tensor got = f(x, w, b);
  expect_same_bits(got.isnan(), fn(x, w, b).isnan());
  EXPECT_TRUE(got[3].isnan().all().item<bool>());
  EXPECT_EQ(got[0].abs().sum().item<double>(), 0.0);
  EXPECT_FALSE(got[0].signbit().any().item<bool>());  // relu writes +0
}

TEST(ProductEpilogue, ProductsWithOtherUsersAreLeftAlone) {
  fw::manual_seed(5);
  Tensor x = fw::randn({30, 20}), w = fw::randn({25, 20}), b = fw::randn({25});
  // The product also feeds an add; the product is also returned; relu of a product view.
  auto shared = [](const Tensor& x, const Tensor& w, const Tensor& b) {
    Tensor y = fw::addmm(b, x, w.t());
    return y.relu() + y;
  };
  auto both = [](const Tensor& x, const Tensor& w, const Tensor& b) {
    Tensor y = fw::addmm(b, x, w.t());
    return std::make_tuple(y.relu(), y);
  };
  auto viewed = [](const Tensor& x, const Tensor& w, const Tensor&) { return fw::mm(x, w.t()).t().relu(); };
  auto f1 = fw::compile(shared);
  auto f2 = fw::compile(both);
  auto f3 = fw::compile(viewed);
  expect_same_bits(f1(x, w, b), shared(x, w, b));
  auto [r, y] = f2(x, w, b);
  auto [r0, y0] = both(x, w, b);
  expect_same_bits(r, r0);
  expect_same_bits(y, y0);
  expect_same_bits(f3(x, w, b), viewed(x, w, b));
  EXPECT_EQ(epilogues(f1.explain()), 0) << programs(f1.explain());
  EXPECT_EQ(epilogues(f2.explain()), 0) << programs(f2.explain());
  EXPECT_EQ(epilogues(f3.explain()), 0) << programs(f3.explain());
  // The other backends run the graph as traced.
  auto f4 = fw::compile([](const Tensor& x, const Tensor& w) { return fw::mm(x, w.t()).relu(); },
                        fw::CompileOptions().backend("aot_eager"));
  expect_same_bits(f4(x, w), fw::mm(x, w.t()).relu());
  EXPECT_EQ(epilogues(f4.explain()), 0) << programs(f4.explain());
}

// A compiled Linear-ReLU stack trains as eager does: the forward folds both relus (what backward
// reads is the relu output, which the product now stores), the gradients are eager's.
TEST(ProductEpilogue, TrainingStepMatchesEager) {
  fw::manual_seed(6);
  fw::nn::Sequential net(fw::nn::Linear(30, 64), fw::nn::ReLU(), fw::nn::Linear(64, 48), fw::nn::ReLU(),
                         fw::nn::Linear(48, 5));
  auto compiled = fw::compile(net);
  Tensor x = fw::randn({33, 30});
  Tensor y = fw::randint(0, 5, {33});
  std::vector<Tensor> eager_grads;
  for (int pass = 0; pass < 2; pass++) {
    for (auto& p : net->parameters()) p.mutable_grad() = Tensor();
    Tensor out = pass == 0 ? net->forward(x) : compiled(x);
    fw::nn::functional::cross_entropy(out, y).backward();
    auto params = net->parameters();
    for (size_t i = 0; i < params.size(); i++) {
      if (pass == 0) eager_grads.push_back(params[i].grad().clone());
      else EXPECT_TRUE(fw::allclose(params[i].grad(), eager_grads[i], 1e-5, 1e-6)) << "parameter " << i;
    }
  }
  const auto e = compiled.explain();
  EXPECT_EQ(epilogues(e), 2) << programs(e);
}

}  // namespace
