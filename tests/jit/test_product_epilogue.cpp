// Relu, and relu's backward mask, folded into a matrix product's epilogue under the inductor
// backend (Note [Epilogues in extern products] in codegen/cpp_backend.cpp): which graphs fold, that
// the results are eager's bits (eager addmm adds its bias in the same epilogue; relu and the mask
// are exact), that products with another user stay as they are, and that a compiled training step
// still gets eager's gradients.
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

// Products with a relu epilogue (kind "relu") or a relu-mask epilogue ("relu-mask") over all the
// programs explain() lists (a training capture's forward and backward included).
int epilogues(const fw::jit::Explanation& e, const std::string& kind = "relu") {
  int n = 0;
  const std::string tag = " product(s) with a " + kind + " epilogue";
  for (const std::string& p : e.programs)
    for (auto at = p.find(tag); at != std::string::npos; at = p.find(tag, at + 1)) {
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
  // Backward: the gradients reaching each relu come from a product (g @ W) masked by relu's output.
  EXPECT_EQ(epilogues(e, "relu-mask"), 2) << programs(e);
}

TEST(ProductEpilogue, MaskedProductFoldsAndKeepsEagerBits) {
  fw::manual_seed(7);
  Tensor g = fw::randn({40, 9}), w = fw::randn({9, 70}), h = fw::randn({40, 70}).relu();
  Tensor hb = fw::randn({2, 40, 70}), gb = fw::randn({2, 40, 9}), wb = fw::randn({2, 9, 70});
  h.index_put_({0, 0}, std::numeric_limits<double>::quiet_NaN());  // NaN > 0 is false: masked
  auto masked = [](const Tensor& g, const Tensor& w, const Tensor& h) { return fw::mm(g, w) * (h > 0); };
  auto masked_left = [](const Tensor& g, const Tensor& w, const Tensor& h) { return (h > 0) * fw::mm(g, w); };
  auto masked_t = [](const Tensor& g, const Tensor& w, const Tensor& h) { return fw::mm(g, w) * (h.t().t() > 0); };
  auto batched = [](const Tensor& g, const Tensor& w, const Tensor& h) { return fw::bmm(g, w) * (h > 0); };
  auto summed = [](const Tensor& g, const Tensor& w, const Tensor& h) {
    Tensor m = fw::mm(g, w) * (h > 0);
    return std::make_tuple(m.sum({0}), m * 2);
  };
  auto f1 = fw::compile(masked);
  auto f2 = fw::compile(masked_left);
  auto f3 = fw::compile(masked_t);
  auto f4 = fw::compile(batched);
  auto f5 = fw::compile(summed);
  expect_same_bits(f1(g, w, h), masked(g, w, h));
  expect_same_bits(f2(g, w, h), masked_left(g, w, h));
  expect_same_bits(f3(g, w, h.t().contiguous().t()), masked_t(g, w, h.t().contiguous().t()));
  expect_same_bits(f4(gb, wb, hb), batched(gb, wb, hb));
  auto [s, m2] = f5(g, w, h);
  auto [s0, m20] = summed(g, w, h);
  EXPECT_TRUE(fw::allclose(s, s0, 1e-5, 1e-6));
  expect_same_bits(m2, m20);
  for (const auto& e : {f1.explain(), f2.explain(), f3.explain(), f4.explain(), f5.explain()})
    EXPECT_EQ(epilogues(e, "relu-mask"), 1) << programs(e);
  // A gate computed after the product, a gate of another shape (broadcast), a non-zero threshold:
  // left alone.
  auto late = [](const Tensor& g, const Tensor& w, const Tensor& h) {
    Tensor p = fw::mm(g, w);
    return p * (h.exp() - 1 > 0);
  };
  auto broadcast = [](const Tensor& g, const Tensor& w, const Tensor& h) { return fw::mm(g, w) * (h[0] > 0); };
  auto threshold = [](const Tensor& g, const Tensor& w, const Tensor& h) { return fw::mm(g, w) * (h > 0.5); };
  auto f6 = fw::compile(late);
  auto f7 = fw::compile(broadcast);
  auto f8 = fw::compile(threshold);
  expect_same_bits(f6(g, w, h), late(g, w, h));
  expect_same_bits(f7(g, w, h), broadcast(g, w, h));
  expect_same_bits(f8(g, w, h), threshold(g, w, h));
  for (const auto& e : {f6.explain(), f7.explain(), f8.explain()}) EXPECT_EQ(epilogues(e, "relu-mask"), 0) << programs(e);
}

// A relu folded into its product makes the product's result the relu's, with the relu's readers:
// a mask on it must not be folded too when something else reads the relu (found by a bug hunt:
// the unmasked result came back masked).
TEST(ProductEpilogue, AMaskOnAFoldedReluWithOtherReadersStaysOut) {
  fw::manual_seed(8);
  Tensor x = fw::randn({12, 20}), w = fw::randn({20, 30}), h = fw::randn({12, 30});
  auto fn = [](const Tensor& x, const Tensor& w, const Tensor& h) {
    Tensor q = fw::relu(fw::mm(x, w));
    return std::make_tuple(q * (h > 0), q);
  };
  auto f = fw::compile(fn);
  auto [g, q] = f(x, w, h);
  auto [g0, q0] = fn(x, w, h);
  expect_same_bits(g, g0);
  expect_same_bits(q, q0);
  EXPECT_EQ(epilogues(f.explain()), 1) << programs(f.explain());
  EXPECT_EQ(epilogues(f.explain(), "relu-mask"), 0) << programs(f.explain());
}

}  // namespace
