// fw::compile: capture, replay, guards, recompiles, dynamic shapes, graph breaks, in-place
// functionalisation, modules and autograd through compiled functions. Every compiled result is
// compared with eager.
#include <gtest/gtest.h>

#include <fw/fw.h>
#include <fw/jit.h>

#include "jit/ir.h"
#include "jit/program.h"
#include "jit/tracer.h"

namespace {

void expect_close(const fw::Tensor& a, const fw::Tensor& b, double rtol = 1e-5, double atol = 1e-6) {
  ASSERT_TRUE(a.sizes().equals(b.sizes())) << a.sizes() << " vs " << b.sizes();
  ASSERT_EQ(a.dtype(), b.dtype());
  EXPECT_TRUE(fw::allclose(a, b, rtol, atol)) << "max abs diff " << (a - b).abs().max().item<double>();
}

const char* kBackends[] = {"eager", "aot_eager", "inductor"};

class Backends : public ::testing::TestWithParam<const char*> {
 protected:
  fw::CompileOptions opts() const { return fw::CompileOptions().backend(GetParam()); }
};

TEST_P(Backends, PointwiseChainMatchesEagerAndReplays) {
  int calls = 0;
  auto fn = [&](const fw::Tensor& x, const fw::Tensor& y) {
    calls++;
    return fw::gelu(x * y + 1.5).sigmoid() - x.exp() / (y.abs() + 1);
  };
  auto f = fw::compile(fn, opts());
  fw::manual_seed(1);
  fw::Tensor x = fw::randn({7, 33}), y = fw::randn({7, 33});
  expect_close(f(x, y), fn(x, y));
  int after_first = calls;
  fw::Tensor x2 = fw::randn({7, 33}), y2 = fw::randn({7, 33});
  expect_close(f(x2, y2), fn(x2, y2));
  EXPECT_EQ(calls, after_first + 1);  // the compiled call did not run fn (only the eager reference did)
  EXPECT_EQ(f.explain().graph_count, 1);
  EXPECT_EQ(f.explain().recompiles, 0);
}

// Note [Unused gradients]: an argument that reaches only outputs the loss does not use gets no
// gradient, as in eager (grad() with allow_unused gives an undefined tensor, without it raises);
// one whose path carries zeros (floor) gets zeros.
TEST_P(Backends, UnusedOutputsLeaveGradientsUndefinedAsInEager) {
  auto fn = [](const fw::Tensor& x, const fw::Tensor& y) { return std::make_tuple(x.sin() * 2, y.cos() + 1); };
  auto f = fw::compile(fn, opts());
  fw::Tensor x = fw::randn({5}, fw::requires_grad()), y = fw::randn({5}, fw::requires_grad());
  for (int call = 0; call < 2; call++) {
    auto [a, b] = f(x, y);
    std::vector<fw::Tensor> g = fw::autograd::grad({a.sum()}, {x, y}, {}, std::nullopt, false, true);
    ASSERT_EQ(g.size(), 2u);
    expect_close(g[0], x.cos() * 2);
    EXPECT_FALSE(g[1].defined()) << GetParam();
    auto [a2, b2] = f(x, y);
    EXPECT_THROW(fw::autograd::grad({a2.sum()}, {x, y}), fw::Error) << GetParam();
  }
  auto h = fw::compile([](const fw::Tensor& x) { return x.floor() * 3 + x; }, opts());
  fw::Tensor gx = fw::autograd::grad({h(x).sum()}, {x})[0];
  ASSERT_TRUE(gx.defined());
  expect_close(gx, fw::ones({5}));
}

// Note [Unused gradients]: after a graph break every live value is an output of the first graph;
// one the loss does not use must not send zeros through its backward, where 0 * inf (log's
// derivative at 0) would make the argument's gradient NaN.
TEST_P(Backends, UnusedSideValuesAcrossABreakKeepGradientsFinite) {
  auto fn = [](const fw::Tensor& x) {
    fw::Tensor side = x.log();  // -inf at 0, unused by the result
    fw::Tensor b = x * 2;
    double s = b.sum().item<double>();  // graph break: side and b are live here
    return b * s + side.detach().sum();
  };
  auto f = fw::compile(fn, opts());
  for (int call = 0; call < 2; call++) {
    fw::Tensor x = fw::tensor({0.0f, 1.0f, 2.0f}).requires_grad_(true);
    fw::Tensor xe = x.detach().clone().requires_grad_(true);
    fw::Tensor g = fw::autograd::grad({f(x).sum()}, {x})[0];
    fw::Tensor ge = fw::autograd::grad({fn(xe).sum()}, {xe})[0];
    EXPECT_TRUE(g.isfinite().all().item<bool>()) << GetParam() << " " << g;
    expect_close(g, ge);
  }
}

// Views of an argument or of a captured parameter made before a graph break and used after it
// keep their autograd history: gradients through them reach the argument and the parameter.
TEST_P(Backends, ViewsOfArgumentsAndParametersKeepGradientsAcrossABreak) {
  fw::manual_seed(12);
  fw::Tensor w = fw::randn({3, 4}, fw::requires_grad());
  auto fn = [&](const fw::Tensor& x) {
    fw::Tensor xe = x.unsqueeze(0).expand({2, 4});  // view of the argument
    fw::Tensor wt = w.t();                          // view of the parameter
    fw::Tensor y = fw::mm(xe, wt);
    double s = y.abs().sum().item<double>();  // graph break
    return (y * s).sum() + xe.sum() * 3 + (wt * wt).sum();
  };
  auto f = fw::compile(fn, opts());
  for (int call = 0; call < 2; call++) {
    fw::Tensor x = fw::randn({4}, fw::requires_grad());
    std::vector<fw::Tensor> g = fw::autograd::grad({f(x)}, {x, w});
    std::vector<fw::Tensor> ge = fw::autograd::grad({fn(x)}, {x, w});
    expect_close(g[0], ge[0], 1e-4, 1e-4);
    expect_close(g[1], ge[1], 1e-4, 1e-4);
  }
  EXPECT_GE(f.explain().breaks.size(), 1u);
}

// A function that breaks (an in-place write through a slice) and returns its own argument next
// to a view of it: the caller's tensor stays a leaf with its own history (fuzz seed 2000718).
TEST_P(Backends, ReturningTheArgumentAcrossBreaksKeepsItALeaf) {
  auto fn = [](const fw::Tensor& x) {
    fw::Tensor v = x.reshape({-1});
    fw::Tensor h = v * 1.0;
    h.slice(0, 0, 1).mul_(-1.125).add_(0.5);
    return std::make_tuple(h + v.sum(), x);
  };
  auto f = fw::compile(fn, opts());
  fw::Tensor x = fw::tensor({0.7f, -0.2f}).requires_grad_(true);
  for (int call = 0; call < 2; call++) {
    auto [a, b] = f(x);
    EXPECT_TRUE(x.is_leaf()) << GetParam();
    fw::Tensor g = fw::autograd::grad({a.sum() + b.sum() * 2}, {x})[0];
    auto [ea, eb] = fn(x);
    fw::Tensor ge = fw::autograd::grad({ea.sum() + eb.sum() * 2}, {x})[0];
    expect_close(g, ge);
  }
}

// A segment value returned by the function and a view of it used after a break (an in-place
// write through a slice): both the view's and the value's own output gradients reach the
// arguments (fuzz seed 3001131).
TEST_P(Backends, AReturnedValueAndItsViewAcrossABreakBothCarryGradients) {
  auto fn = [](const fw::Tensor& x0, const fw::Tensor& x1) {
    fw::Tensor t3 = fw::minimum(x1.softmax(2), x0);
    fw::Tensor t4 = t3.slice(1, 0, 2, 2);
    fw::Tensor h = x1 * 1.0;
    h.slice(2, 2, 3).mul_(-1.5).add_(0.5);
    return std::make_tuple(h + t4.sum(), t3);
  };
  auto f = fw::compile(fn, opts());
  fw::manual_seed(5);
  for (int call = 0; call < 2; call++) {
    fw::Tensor x0 = fw::rand({4, 3, 3}).requires_grad_(true), x1 = fw::rand({4, 3, 3}).requires_grad_(true);
    fw::Tensor w = fw::linspace(-1, 1, 36).reshape({4, 3, 3});
    auto [a, b] = f(x0, x1);
    std::vector<fw::Tensor> g = fw::autograd::grad({(a * w).sum() + (b * w).sum()}, {x0, x1});
    auto [ea, eb] = fn(x0, x1);
    std::vector<fw::Tensor> ge = fw::autograd::grad({(ea * w).sum() + (eb * w).sum()}, {x0, x1});
    expect_close(g[0], ge[0], 1e-4, 1e-5);
    expect_close(g[1], ge[1], 1e-4, 1e-5);
  }
}

// Autograd may hand a compiled backward a non-contiguous output gradient (sum's is an expanded
// scalar, stride 0): the backward, traced for contiguous gradients with its view chains folded
// into as_strided, must still read it correctly (fuzz seed 2000331).
TEST_P(Backends, ExpandedOutputGradientsReachTheBackward) {
  auto fn = [](const fw::Tensor& x) { return (x * 3).t().reshape({-1}); };
  auto f = fw::compile(fn, opts());
  fw::Tensor x = fw::randn({4, 5}, fw::requires_grad());
  for (int call = 0; call < 2; call++) {
    fw::Tensor g = fw::autograd::grad({f(x).sum()}, {x})[0];
    expect_close(g, fw::full({4, 5}, 3.0));
  }
}

TEST_P(Backends, BroadcastsReductionsViewsAndMatmul) {
  auto fn = [](const fw::Tensor& x, const fw::Tensor& w, const fw::Tensor& b) {
    fw::Tensor h = fw::matmul(x, w.t()) + b;           // view (t), extern (mm), broadcast add
    fw::Tensor s = fw::softmax(h, -1);
    fw::Tensor m = h.mean({0}, true);
    return std::make_tuple(s, (h - m).pow(2).sum({1}), h.slice(1, 1, 5).relu());
  };
  auto f = fw::compile(fn, opts());
  fw::manual_seed(2);
  fw::Tensor x = fw::randn({16, 12}), w = fw::randn({9, 12}), b = fw::randn({9});
  auto [s1, v1, r1] = f(x, w, b);
  auto [s2, v2, r2] = fn(x, w, b);
  expect_close(s1, s2);
  expect_close(v1, v2, 1e-5, 1e-4);
  expect_close(r1, r2);
}

TEST_P(Backends, GuardsRecompileOnDtypeAndScalarArguments) {
  auto fn = [](const fw::Tensor& x, double a, bool flag) { return flag ? x * a : x + a; };
  auto f = fw::compile(fn, opts());
  fw::Tensor x = fw::arange(6, fw::kFloat).reshape({2, 3});
  expect_close(f(x, 2.0, true), x * 2.0);
  expect_close(f(x, 3.0, true), x * 3.0);   // scalar guarded by value: recompiles
  expect_close(f(x, 3.0, false), x + 3.0);
  fw::Tensor xd = x.to(fw::kDouble);
  expect_close(f(xd, 3.0, false), xd + 3.0);  // dtype guard
  EXPECT_EQ(f.explain().graph_count, 4);
  expect_close(f(x, 2.0, true), x * 2.0);   // first capture still cached
  EXPECT_EQ(f.explain().graph_count, 4);
}

TEST_P(Backends, AutomaticDynamicShapes) {
  auto fn = [](const fw::Tensor& x) { return (x * 2).tanh().sum({1}); };
  auto f = fw::compile(fn, opts());
  for (int64_t n : {4, 8, 5, 9, 5, 8}) {
    fw::Tensor x = fw::randn({n, 6});
    expect_close(f(x), fn(x));
  }
  auto e = f.explain();
  EXPECT_EQ(e.recompiles, 1);  // only the first size change; later sizes reuse the dynamic family
  bool symbolic = false;
  for (auto& g : e.guards) symbolic = symbolic || g.find("[s0,6]") != std::string::npos;
  EXPECT_TRUE(symbolic) << e.str();
}

TEST_P(Backends, DynamicFalseSpecialisesAndCacheLimitFallsBack) {
  auto fn = [](const fw::Tensor& x) { return x.cos() + 1; };
  auto f = fw::compile(fn, opts().dynamic(false).cache_limit(2));
  testing::internal::CaptureStderr();
  for (int64_t n : {2, 3, 4, 5}) {
    fw::Tensor x = fw::randn({n});
    expect_close(f(x), fn(x));
  }
  std::string err = testing::internal::GetCapturedStderr();
  EXPECT_EQ(f.explain().graph_count, 2);
  EXPECT_NE(err.find("cache_limit"), std::string::npos) << err;
  EXPECT_NE(err.find("size of dim 0"), std::string::npos) << err;  // names the failing guard
}

TEST_P(Backends, GraphBreakOnItemStaysCorrectUnderDataDependentControlFlow) {
  auto fn = [](const fw::Tensor& x) {
    fw::Tensor s = x.sum();
    if (s.item<float>() > 0) return x * 2;  // data-dependent branch
    return x - 100;
  };
  auto f = fw::compile(fn, opts());
  fw::Tensor pos = fw::ones({5}), neg = -fw::ones({5});
  expect_close(f(pos), fn(pos));
  expect_close(f(neg), fn(neg));
  expect_close(f(pos), fn(pos));
  auto e = f.explain();
  ASSERT_GE(e.breaks.size(), 1u);
  EXPECT_EQ(e.breaks[0].op, "item()");
}

TEST_P(Backends, GraphBreakOnNonzeroNamesTheOp) {
  auto fn = [](const fw::Tensor& x) {
    fw::Tensor idx = fw::nonzero(x > 0);          // data-dependent shape
    return x.index_select(0, idx.select(1, 0)) * 3 + 1;
  };
  auto f = fw::compile(fn, opts());
  fw::Tensor x = fw::tensor({1.f, -2.f, 3.f, 0.f, 5.f});
  expect_close(f(x), fn(x));
  fw::Tensor x2 = fw::tensor({-1.f, 2.f, -3.f, 4.f, 5.f});
  expect_close(f(x2), fn(x2));
  auto e = f.explain();
  ASSERT_GE(e.breaks.size(), 1u);
  EXPECT_EQ(e.breaks[0].op, "nonzero");
}

TEST_P(Backends, FullgraphTurnsABreakIntoAnError) {
  auto f = fw::compile([](const fw::Tensor& x) { return x * x.sum().item<float>(); }, opts().fullgraph(true));
  try {
    f(fw::ones({3}));
    FAIL() << "expected an error";
  } catch (const fw::Error& e) {
    EXPECT_NE(std::string(e.what()).find("fullgraph"), std::string::npos) << e.what();
  }
}

TEST_P(Backends, InPlaceOpsAreFunctionalisedAndWritesReachInputsAndCapturedTensors) {
  fw::Tensor counter = fw::zeros({3});
  auto fn = [&](fw::Tensor x) {
    fw::Tensor h = x * 2;
    h.add_(1).mul_(3);            // in-place on a temporary
    x.sub_(0.5);                   // in-place on an argument: written back
    counter.add_(h.sum({0}));     // in-place on a captured tensor
    return h + x;
  };
  auto f = fw::compile(fn, opts());
  fw::Tensor a = fw::randn({4, 3}), b = a.clone();
  fw::Tensor c0 = counter.clone();
  fw::Tensor r1 = f(a);
  fw::Tensor counter_after_compiled = counter.clone();
  counter.copy_(c0);
  fw::Tensor r2 = fn(b);
  expect_close(r1, r2);
  expect_close(a, b);
  expect_close(counter_after_compiled, counter);
  // Replay applies the writes again.
  fw::Tensor a2 = fw::randn({4, 3}), b2 = a2.clone();
  fw::Tensor c1 = counter.clone();
  fw::Tensor r3 = f(a2);
  fw::Tensor counter_c = counter.clone();
  counter.copy_(c1);
  expect_close(r3, fn(b2));
  expect_close(a2, b2);
  expect_close(counter_c, counter);
}

TEST_P(Backends, WriteThroughAViewBreaksAndMatchesEager) {
  auto fn = [](const fw::Tensor& x) {
    fw::Tensor h = x.exp();
    h.select(0, 1).fill_(7);      // a write through a view of a traced value
    return h * 2;
  };
  auto f = fw::compile(fn, opts());
  fw::Tensor x = fw::randn({3, 4});
  expect_close(f(x), fn(x));
  expect_close(f(x), fn(x));
}

TEST_P(Backends, GradientsMatchEager) {
  auto fn = [](const fw::Tensor& x, const fw::Tensor& w) {
    return (fw::tanh(fw::matmul(x, w)) * x.sum({1}, true)).pow(2).mean();
  };
  auto f = fw::compile(fn, opts());
  fw::manual_seed(3);
  fw::Tensor x = fw::randn({5, 4}, fw::requires_grad()), w = fw::randn({4, 3}, fw::requires_grad());
  for (int it = 0; it < 2; it++) {
    fw::Tensor l1 = f(x, w);
    auto g1 = fw::autograd::grad({l1}, {x, w});
    fw::Tensor l2 = fn(x, w);
    auto g2 = fw::autograd::grad({l2}, {x, w});
    expect_close(l1, l2);
    expect_close(g1[0], g2[0]);
    expect_close(g1[1], g2[1]);
  }
}

TEST_P(Backends, GradientsFlowThroughGraphBreaksAndRepeatedArguments) {
  auto fn = [](const fw::Tensor& x, const fw::Tensor& w, const fw::Tensor& w2) {
    fw::Tensor h = (x * w).tanh();
    fw::Tensor sel = h.index({h > 0});           // boolean mask: a data-dependent break
    float scale = h.abs().max().item<float>();   // item(): another break
    return (sel.sum() + (h * w2).sum()) / scale;
  };
  auto f = fw::compile(fn, opts());
  fw::manual_seed(6);
  fw::Tensor x = fw::randn({6, 5}, fw::requires_grad()), w = fw::randn({5}, fw::requires_grad());
  for (int it = 0; it < 2; it++) {
    auto g1 = fw::autograd::grad({f(x, w, w)}, {x, w});  // w passed twice: one value
    auto g2 = fw::autograd::grad({fn(x, w, w)}, {x, w});
    expect_close(g1[0], g2[0]);
    expect_close(g1[1], g2[1]);
    fw::Tensor w2 = fw::randn({5});
    auto g3 = fw::autograd::grad({f(x, w, w2)}, {x, w});  // aliasing changed: recompiles
    auto g4 = fw::autograd::grad({fn(x, w, w2)}, {x, w});
    expect_close(g3[1], g4[1]);
  }
  EXPECT_GE(f.explain().breaks.size(), 2u);
}

TEST_P(Backends, CompiledModuleTrainingStepMatchesEager) {
  fw::manual_seed(4);
  auto make = [] {
    fw::manual_seed(5);
    return fw::nn::Sequential(fw::nn::Linear(6, 16), fw::nn::ReLU(), fw::nn::Linear(16, 3));
  };
  auto m1 = make(), m2 = make();
  auto cm = fw::compile(m1, opts());
  fw::optim::SGD o1(m1->parameters(), fw::optim::SGDOptions(0.1).momentum(0.9));
  fw::optim::SGD o2(m2->parameters(), fw::optim::SGDOptions(0.1).momentum(0.9));
  for (int step = 0; step < 3; step++) {
    fw::Tensor x = fw::randn({8, 6}), y = fw::randint(0, 3, {8});
    fw::Tensor l1 = fw::nn::functional::cross_entropy(cm(x), y);
    fw::Tensor l2 = fw::nn::functional::cross_entropy(m2->forward(x), y);
    expect_close(l1, l2);
    o1.zero_grad();
    o2.zero_grad();
    l1.backward();
    l2.backward();
    o1.step();
    o2.step();
  }
  auto p1 = m1->parameters(), p2 = m2->parameters();
  for (size_t i = 0; i < p1.size(); i++) expect_close(p1[i], p2[i]);
  EXPECT_EQ(cm.explain().graph_count, 1);
}

TEST_P(Backends, ConvNetWithBatchNormAndDropoutTrainsLikeEager) {
  auto make = [] {
    fw::manual_seed(7);
    return fw::nn::Sequential(fw::nn::Conv2d(fw::nn::Conv2dOptions(3, 4, 3).padding(1)), fw::nn::BatchNorm2d(4),
                              fw::nn::ReLU(), fw::nn::MaxPool2d(fw::nn::MaxPool2dOptions(2)), fw::nn::Flatten(),
                              fw::nn::Dropout(0.25), fw::nn::Linear(4 * 4 * 4, 5));
  };
  auto m1 = make(), m2 = make();
  auto cm = fw::compile(m1, opts());
  fw::optim::SGD o1(m1->parameters(), fw::optim::SGDOptions(0.05).momentum(0.9).nesterov(true));
  fw::optim::SGD o2(m2->parameters(), fw::optim::SGDOptions(0.05).momentum(0.9).nesterov(true));
  for (int step = 0; step < 3; step++) {
    fw::Tensor x = fw::randn({6, 3, 8, 8}), y = fw::randint(0, 5, {6});
    fw::manual_seed(100 + step);  // same dropout masks in both
    fw::Tensor l1 = fw::nn::functional::cross_entropy(cm(x), y);
    fw::manual_seed(100 + step);
    fw::Tensor l2 = fw::nn::functional::cross_entropy(m2->forward(x), y);
    expect_close(l1, l2, 1e-4, 1e-5);
    o1.zero_grad();
    o2.zero_grad();
    l1.backward();
    l2.backward();
    o1.step();
    o2.step();
  }
  auto p1 = m1->parameters(), p2 = m2->parameters();
  for (size_t i = 0; i < p1.size(); i++) expect_close(p1[i], p2[i], 1e-4, 1e-5);
  auto b1 = m1->buffers(), b2 = m2->buffers();  // running statistics updated in place
  for (size_t i = 0; i < b1.size(); i++)
    if (b1[i].is_floating_point()) expect_close(b1[i], b2[i], 1e-4, 1e-5);
  m1->eval();
  m2->eval();
  fw::Tensor xe = fw::randn({6, 3, 8, 8});  // the training shape: only the module state differs
  expect_close(cm(xe), m2->forward(xe), 1e-4, 1e-5);  // eval mode is guarded: another capture
  EXPECT_EQ(cm.explain().graph_count, 2);
}

// Note [Traced layouts] (jit/tracer.cpp): compiled results have eager's strides. The expected
// strides written out are PyTorch 1.13's for the same programs.
TEST_P(Backends, ResultsKeepEagerLayouts) {
  auto check = [](const fw::Tensor& got, const fw::Tensor& want, std::vector<int64_t> torch_strides) {
    expect_close(got, want);
    EXPECT_EQ(std::vector<int64_t>(got.strides().begin(), got.strides().end()), torch_strides);
    EXPECT_EQ(std::vector<int64_t>(want.strides().begin(), want.strides().end()), torch_strides);
  };
  fw::manual_seed(11);
  fw::Tensor xt = fw::randn({48, 64}).t();  // (64, 48), strides (1, 64)
  fw::Tensor cl = fw::randn({4, 8, 6, 5}).contiguous(fw::MemoryFormat::ChannelsLast);

  // A fused chain over a transposed input, and a view of its result (view folding).
  auto chain = [](const fw::Tensor& x) { return fw::relu(x * 2 + 1).sigmoid(); };
  auto fc = fw::compile(chain, opts());
  check(fc(xt), chain(xt), {1, 64});
  check(fc(xt), chain(xt), {1, 64});  // replay
  auto viewed = [](const fw::Tensor& x) { return (x.exp() * 3).t().narrow(0, 2, 40) + 0.5; };
  auto fv = fw::compile(viewed, opts());
  check(fv(xt), viewed(xt), {64, 1});

  // Channels-last through a fused chain, a reduction and a broadcast back.
  auto norm = [](const fw::Tensor& x) { return (x - x.mean({2, 3}, true)) * x.sigmoid(); };
  auto fn = fw::compile(norm, opts());
  check(fn(cl), norm(cl), {240, 1, 40, 8});

  // softmax/log_softmax/layer_norm return row-major results for a permuted input (decomposed
  // under inductor: the decomposition reads a row-major copy).
  auto rows = [](const fw::Tensor& x) {
    return fw::softmax(x, -1) + fw::log_softmax(x, 0) + fw::layer_norm(x, {48}) * 0.5;
  };
  auto fr = fw::compile(rows, opts());
  check(fr(xt), rows(xt), {48, 1});

  // Across a graph break the adopted result keeps its layout.
  auto broken = [](const fw::Tensor& x) {
    fw::Tensor y = x.tanh() * 3;
    if (y.sum().item<float>() > 1e9) return y;
    return y - 1;
  };
  auto fb = fw::compile(broken, opts());
  check(fb(xt), broken(xt), {1, 64});

  // A channels-last convolution block: convolution, batch norm and pooling return channels-last
  // results, as in libtorch (Note [Channels-last results] in core/layout.h), compiled too.
  namespace F = fw::nn::functional;
  auto conv = fw::nn::Conv2d(fw::nn::Conv2dOptions(8, 6, 3).padding(1));
  auto bn = fw::nn::BatchNorm2d(6);
  bn->eval();
  auto block = [&](const fw::Tensor& x) {
    return F::max_pool2d(fw::relu(bn->forward(conv->forward(x))), F::MaxPool2dFuncOptions(2));
  };
  auto fcb = fw::compile(block, opts());
  check(fcb(cl), block(cl), {36, 1, 12, 6});
  fw::Tensor xg = cl.detach().clone().requires_grad_(true);
  fcb(xg).sum().backward();
  fw::Tensor g_compiled = xg.grad().clone();
  xg.grad().zero_();
  block(xg).sum().backward();
  expect_close(g_compiled, xg.grad());

  // *_like results of a permuted tensor: eager's layout and, for the random ones, eager's values
  // (the same stream in the same memory order); in-place writes keep their target's layout.
  auto likes = [](const fw::Tensor& x) {
    fw::Tensor a = fw::empty_like(x);
    a.fill_(2);
    fw::Tensor b = fw::zeros_like(x);
    b.add_(x);
    return fw::rand_like(x) + fw::randn_like(x) * a + b;
  };
  auto fl = fw::compile(likes, opts());
  for (const fw::Tensor& in : {xt, cl}) {
    fw::manual_seed(3);
    fw::Tensor want = likes(in);
    fw::manual_seed(3);
    fw::Tensor got = fl(in);
    EXPECT_TRUE(fw::equal(got, want));
    EXPECT_TRUE(got.strides().equals(want.strides())) << got.strides() << " vs " << want.strides();
    EXPECT_TRUE(want.strides().equals(in.strides()));
  }
  EXPECT_EQ(fl.explain().breaks.size(), 0u);
  auto cl_ones = [](const fw::Tensor& x) {
    return fw::ones_like(x, fw::TensorOptions().memory_format(fw::MemoryFormat::ChannelsLast)) * x.contiguous();
  };
  auto fo = fw::compile(cl_ones, opts());
  fw::Tensor x4 = cl.contiguous();
  check(fo(x4), cl_ones(x4), {240, 1, 40, 8});

  // A captured tensor whose layout changes (same sizes) is a guard miss, not a stale replay.
  fw::Tensor w = fw::randn({64, 48});
  auto scaled = [&w](const fw::Tensor& x) { return (x * w).exp() + w; };
  auto fs = fw::compile(scaled, opts());
  fw::Tensor x = fw::randn({64, 48});
  check(fs(x), scaled(x), {48, 1});
  w.set_data(fw::randn({48, 64}).t());
  check(fs(xt), scaled(xt), {1, 64});
  check(fs(x), scaled(x), {48, 1});
}

// Corner cases of Note [Traced layouts]: values that views are later folded from (as_strided of
// the traced strides) must have exactly those strides in every replay.
TEST_P(Backends, LayoutsSurviveInPlaceWritesDecompositionsAndSize1Dims) {
  namespace F = fw::nn::functional;
  auto same = [](const fw::Tensor& got, const fw::Tensor& want) {
    expect_close(got, want);
    for (int64_t d = 0; d < want.dim(); d++)
      if (want.size(d) != 1) EXPECT_EQ(got.stride(d), want.stride(d)) << "dim " << d;
  };
  fw::manual_seed(21);
  // An in-place op whose result type differs from its permuted target, then a chain of views.
  fw::Tensor x = fw::randn({3, 4}), yd = fw::randn({4, 3}, fw::kDouble);
  auto promote = [&yd](const fw::Tensor& a) {
    fw::Tensor t = a.t().relu();
    t.add_(yd);
    return t.t().unsqueeze(0) * 2;
  };
  auto fp = fw::compile(promote, opts());
  same(fp(x), promote(x));
  same(fp(x), promote(x));
  // A channels-last (N, C, 1, 1) value written in place, then pooled and viewed: the strides of
  // its size-1 dims decide whether the next pool is channels-last.
  fw::Tensor xcl = fw::randn({2, 4, 3, 3}).contiguous(fw::MemoryFormat::ChannelsLast);
  auto pools = [](const fw::Tensor& a) {
    fw::Tensor t = F::max_pool2d(a, F::MaxPool2dFuncOptions(3));
    t.add_(1);
    fw::Tensor u = F::max_pool2d(t, F::MaxPool2dFuncOptions(2).stride(1).padding(1));
    return u.permute({0, 2, 3, 1}).reshape({2, 16});
  };
  auto fpo = fw::compile(pools, opts());
  same(fpo(xcl), pools(xcl));
  // Evaluation batch norm (decomposed under inductor) over a transposed (N, C, L) input and over
  // a channels-last input: eager's layouts, row-major and channels-last.
  auto bn = fw::nn::BatchNorm1d(5);
  bn->eval();
  fw::Tensor z = fw::randn({3, 7, 5}).transpose(1, 2);
  auto bn1 = [&](const fw::Tensor& a) { return bn->forward(a) + 1; };
  auto fbn = fw::compile(bn1, opts());
  same(fbn(z), bn1(z));
  auto bn2 = fw::nn::BatchNorm2d(4);
  bn2->eval();
  auto bnc = [&](const fw::Tensor& a) { return bn2->forward(a).relu(); };
  auto fbnc = fw::compile(bnc, opts());
  same(fbnc(xcl), bnc(xcl));
  // An empty transposed input.
  fw::Tensor e = fw::randn({3, 0}).t();
  auto ch = [](const fw::Tensor& a) { return (a * 2).relu() + 1; };
  auto fe = fw::compile(ch, opts());
  fw::Tensor got = fe(e);
  EXPECT_TRUE(got.sizes().equals(e.sizes()));
}

// A dynamic family's programs are guarded on their captured tensors too: a parameter whose
// layout changes (same sizes) is a miss, not a replay with stale strides.
TEST(Compile, DynamicFamiliesGuardCapturedTensors) {
  fw::manual_seed(22);
  fw::Tensor w = fw::randn({5, 6});
  auto fn = [&w](const fw::Tensor& x) { return (x * w.transpose(0, 1).transpose(0, 1).unsqueeze(0)).sum({2}); };
  auto f = fw::compile(fn);
  for (int64_t n : {2, 3, 4}) {  // the second size makes dim 0 dynamic
    fw::Tensor x = fw::randn({n, 5, 6});
    expect_close(f(x), fn(x));
  }
  w.set_data(fw::randn({6, 5}).t());
  for (int64_t n : {3, 4}) {  // sizes the family has built before
    fw::Tensor x = fw::randn({n, 5, 6});
    expect_close(f(x), fn(x));
  }
}

INSTANTIATE_TEST_SUITE_P(Compile, Backends, ::testing::ValuesIn(kBackends));

// Note [Recompute partition]: h = x * w + b, read by gelu's vjp, is recomputed in backward from x,
// w and b (saved anyway for mul's vjp or free as captured tensors) instead of being saved.
TEST(Compile, TrainingGraphRecomputesPointwiseValuesInBackward) {
  fw::manual_seed(3);
  fw::Tensor w = fw::randn({64}, fw::requires_grad()), b = fw::randn({64}, fw::requires_grad());
  auto fn = [&](const fw::Tensor& x) { return fw::gelu(x * w + b).sum(); };
  auto f = fw::compile(fn);
  for (int step = 0; step < 2; step++) {
    fw::Tensor x1 = fw::randn({32, 64}, fw::requires_grad());
    fw::Tensor x2 = x1.detach().clone().requires_grad_(true);
    fw::Tensor l1 = f(x1);
    std::vector<fw::Tensor> g1 = fw::autograd::grad({l1}, {x1, w, b});
    fw::Tensor l2 = fn(x2);
    std::vector<fw::Tensor> g2 = fw::autograd::grad({l2}, {x2, w, b});
    expect_close(l1, l2, 1e-5, 1e-4);
    for (size_t i = 0; i < 3; i++) expect_close(g1[i], g2[i], 1e-4, 1e-5);
  }
  fw::jit::Explanation e = f.explain();
  ASSERT_EQ(e.programs.size(), 1u);
  EXPECT_NE(e.programs[0].find("saves 3 value(s) for backward (2 recomputed there instead)"), std::string::npos)
      << e.programs[0];
  EXPECT_NE(e.str().find("recomputed there instead"), std::string::npos);
}

// Note [Recompute partition] is a minimum cut: three pointwise values of the same two GEMM results,
// each read by sin's vjp, cost three tensors to save but only two (the GEMM results) to recompute
// from. A greedy rule deciding one value at a time saves the three; the cut saves u1 and u2.
TEST(Compile, TrainingGraphPartitionIsAMinimumCut) {
  fw::manual_seed(4);
  fw::Tensor w1 = fw::randn({48, 40}, fw::requires_grad()), w2 = fw::randn({48, 40}, fw::requires_grad());
  auto fn = [&](const fw::Tensor& x) {
    fw::Tensor u1 = fw::mm(x, w1), u2 = fw::mm(x, w2);
    return ((u1 + u2).sin() + (u1 - u2).sin() + (u1 + u2 * 2).sin()).sum();
  };
  auto f = fw::compile(fn);
  for (int step = 0; step < 2; step++) {
    fw::Tensor x1 = fw::randn({24, 48}, fw::requires_grad());
    fw::Tensor x2 = x1.detach().clone().requires_grad_(true);
    fw::Tensor l1 = f(x1);
    std::vector<fw::Tensor> g1 = fw::autograd::grad({l1}, {x1, w1, w2});
    fw::Tensor l2 = fn(x2);
    std::vector<fw::Tensor> g2 = fw::autograd::grad({l2}, {x2, w1, w2});
    expect_close(l1, l2, 1e-4, 1e-4);
    for (size_t i = 0; i < 3; i++) expect_close(g1[i], g2[i], 1e-4, 1e-4);
  }
  fw::jit::Explanation e = f.explain();
  ASSERT_EQ(e.programs.size(), 1u);
  // x, w1, w2 (for mm's vjps) and u1, u2; the three sums and u2 * 2 are recomputed.
  EXPECT_NE(e.programs[0].find("saves 5 value(s) for backward (4 recomputed there instead)"), std::string::npos)
      << e.programs[0];
}

// amax's vjp compares its input with the saved result, so its input is saved as the forward
// computed it, never recomputed by another kernel (a last-bit difference matched nothing and gave
// NaN gradients: fuzz seed 2000891). sin's input x * 1.7 is still recomputed.
TEST(Compile, AmaxInputsAreSavedNotRecomputed) {
  auto fn = [](const fw::Tensor& x) { return (x * 1.7).sin().amax({1}).sum(); };
  auto f = fw::compile(fn);
  fw::Tensor x = fw::randn({6, 9}, fw::requires_grad());
  fw::Tensor g = fw::autograd::grad({f(x)}, {x})[0];
  fw::Tensor ge = fw::autograd::grad({fn(x)}, {x})[0];
  expect_close(g, ge);
  fw::jit::Explanation e = f.explain();
  ASSERT_EQ(e.programs.size(), 1u);
  EXPECT_NE(e.programs[0].find("(1 recomputed there instead)"), std::string::npos) << e.programs[0];
}

// Note [Autotuning]: max-autotune times fused kernels against eager ops on the first run and
// keeps one form per kernel; results must not depend on the choice, on that run or later ones,
// for inference and for a training graph (forward and backward programs).
TEST(Compile, MaxAutotuneMatchesEagerOnEveryRun) {
  fw::manual_seed(9);
  fw::Tensor w = fw::randn({40}, fw::requires_grad());
  auto fn = [&](const fw::Tensor& x, const fw::Tensor& y) {
    fw::Tensor h = (x * w + 1).tanh();
    return std::make_tuple(fw::nn::functional::cross_entropy(h, y), fw::softmax(h * 2, -1).sum({0}));
  };
  auto f = fw::compile(fn, fw::CompileOptions().mode("max-autotune"));
  for (int call = 0; call < 3; call++) {
    fw::Tensor x = fw::randn({16, 40}), y = fw::randint(0, 40, {16});
    auto [l1, s1] = f(x, y);
    std::vector<fw::Tensor> g1 = fw::autograd::grad({l1}, {w});
    auto [l2, s2] = fn(x, y);
    std::vector<fw::Tensor> g2 = fw::autograd::grad({l2}, {w});
    expect_close(l1, l2, 1e-5, 1e-5);
    expect_close(s1, s2, 1e-5, 1e-5);
    expect_close(g1[0], g2[0], 1e-4, 1e-5);
  }
  ASSERT_EQ(f.explain().programs.size(), 1u);
  EXPECT_NE(f.explain().programs[0].find("max-autotune"), std::string::npos) << f.explain().programs[0];
}

// cross_entropy validates its targets inside the check_targets op: no graph break, and a bad
// target raises on replay with eager's message.
TEST(Compile, CrossEntropyCapturesWholeAndChecksTargetsOnReplay) {
  auto fn = [](const fw::Tensor& x, const fw::Tensor& y) { return fw::nn::functional::cross_entropy(x * 2, y); };
  auto f = fw::compile(fn, fw::CompileOptions().fullgraph(true));
  fw::Tensor x = fw::randn({6, 5});
  expect_close(f(x, fw::tensor({0L, 4L, 1L, 2L, 3L, 4L})), fn(x, fw::tensor({0L, 4L, 1L, 2L, 3L, 4L})));
  try {
    f(x, fw::tensor({0L, 4L, 1L, 7L, 3L, 4L}));
    ADD_FAILURE() << "an out-of-range target did not raise";
  } catch (const fw::Error& e) {
    EXPECT_NE(std::string(e.what()).find("[nll_loss] Target 7 is out of bounds."), std::string::npos) << e.what();
  }
  EXPECT_EQ(f.explain().graph_count, 1);
  EXPECT_TRUE(f.explain().breaks.empty());
}

// istft checks its window envelope (NOLA) inside the check_nola op: a stft/istft round trip
// compiles into one graph, gradients match eager, and a window that fails NOLA raises on replay.
TEST(Compile, IstftCapturesWholeAndChecksTheWindowOnReplay) {
  auto fn = [](const fw::Tensor& x, const fw::Tensor& w) {
    fw::Tensor s = fw::stft(x, 16, 4, 16, w, true, "reflect", false, std::nullopt, true);
    return fw::istft(s * 0.5, 16, 4, 16, w, true, false, std::nullopt, x.size(-1));
  };
  fw::manual_seed(5);
  fw::Tensor x = fw::randn({2, 50}, fw::requires_grad());
  fw::Tensor w = fw::hann_window(16);
  for (const char* backend : {"aot_eager", "inductor"}) {
    auto f = fw::compile(fn, fw::CompileOptions().backend(backend).fullgraph(true));
    fw::Tensor y = f(x, w);
    fw::Tensor e = fn(x, w);
    expect_close(y, e, 1e-5, 1e-6);
    expect_close(y, x * 0.5, 1e-5, 1e-6);
    fw::Tensor gx = fw::autograd::grad({y.square().sum()}, {x})[0];
    fw::Tensor ge = fw::autograd::grad({e.square().sum()}, {x})[0];
    expect_close(gx, ge, 1e-5, 1e-6);
    // A rectangular window of 4 nonzero samples in 16 leaves gaps between hops of 8.
    fw::Tensor gap = fw::zeros({16});
    gap.narrow(0, 0, 4).fill_(1);
    try {
      fw::Tensor s = fw::stft(x.detach(), 16, 4, 16, w, true, "reflect", false, std::nullopt, true);
      auto g = fw::compile([](const fw::Tensor& s, const fw::Tensor& w) { return fw::istft(s, 16, 8, 16, w); },
                           fw::CompileOptions().backend(backend).fullgraph(true));
      g(s, w);
      g(s, gap);
      ADD_FAILURE() << backend << ": a window that fails NOLA did not raise";
    } catch (const fw::Error& err) {
      EXPECT_NE(std::string(err.what()).find("[istft] window overlap add min: 0"), std::string::npos) << err.what();
    }
    EXPECT_EQ(f.explain().graph_count, 1);
    EXPECT_TRUE(f.explain().breaks.empty());
  }
}

TEST(Compile, BackwardInsideTheCompiledFunctionIsRejectedWithAClearMessage) {
  fw::Tensor w = fw::randn({3}, fw::requires_grad());
  auto step = fw::compile([&] {
    fw::Tensor l = (w * w).sum();
    l.backward();
    return l;
  });
  try {
    step();
    FAIL() << "expected an error";
  } catch (const fw::Error& e) {
    EXPECT_NE(std::string(e.what()).find("compile the forward"), std::string::npos) << e.what();
  }
}

TEST(Compile, ExplainReportsGraphsBreaksAndGuards) {
  auto e = fw::jit::explain([](const fw::Tensor& x) {
    fw::Tensor y = x.relu() + 1;
    float m = y.max().item<float>();
    return y / m;
  }, fw::randn({4, 4}));
  EXPECT_EQ(e.breaks.size(), 1u);
  EXPECT_EQ(e.graph_count, 2);  // the prefix and the rest
  std::string s = e.str();
  EXPECT_NE(s.find("relu"), std::string::npos) << s;
  EXPECT_NE(s.find("input 0: dtype f32, sizes [4,4]"), std::string::npos) << s;
}

TEST(Compile, ErrorsInsideTheTraceReadLikeEager) {
  auto f = fw::compile([](const fw::Tensor& a, const fw::Tensor& b) { return a + b; });
  try {
    f(fw::ones({2, 3}), fw::ones({4}));
    FAIL();
  } catch (const fw::Error& e) {
    EXPECT_NE(std::string(e.what()).find("[add] The size of tensor a (3) must match the size of tensor b (4)"),
              std::string::npos) << e.what();
  }
}

TEST(Compile, RandomOpsFollowTheEagerGeneratorStream) {
  auto fn = [](const fw::Tensor& x) { return fw::nn::functional::dropout(x, fw::nn::functional::DropoutFuncOptions().p(0.5).training(true)) + fw::rand_like(x); };
  auto f = fw::compile(fn);
  fw::Tensor x = fw::ones({64});
  fw::manual_seed(9);
  fw::Tensor a = f(x);
  fw::Tensor a2 = f(x);
  fw::manual_seed(9);
  fw::Tensor b = fn(x);
  fw::Tensor b2 = fn(x);
  expect_close(a, b);
  expect_close(a2, b2);
}

TEST(Compile, NestedCompiledFunctionsInlineIntoTheOuterCapture) {
  auto inner = fw::compile([](const fw::Tensor& x) { return x.sin() * 2; });
  auto outer = fw::compile([&](const fw::Tensor& x) { return inner(x) + inner(x * 3); });
  fw::Tensor x = fw::randn({10});
  expect_close(outer(x), x.sin() * 2 + (x * 3).sin() * 2);
  EXPECT_EQ(outer.explain().graph_count, 1);
}

TEST(Compile, PlaceholdersDoNotLeakOutOfTheTrace) {
  fw::Tensor kept;
  auto f = fw::compile([&](const fw::Tensor& x) {
    fw::Tensor h = x * 2;
    kept = h;  // stored outside: the function is re-traced per call and `kept` is real
    return h + 1;
  });
  fw::Tensor x = fw::ones({3});
  expect_close(f(x), x * 2 + 1);
  expect_close(kept, x * 2);
  fw::Tensor x2 = fw::full({3}, 4.f);
  expect_close(f(x2), x2 * 2 + 1);
  expect_close(kept, x2 * 2);
}

TEST(GraphIR, DumpVerifyInterpretAndPasses) {
  fw::jit::Graph g;
  auto f = fw::compile([](const fw::Tensor& x) {
    fw::Tensor a = x.exp(), b = x.exp();  // CSE merges these
    fw::Tensor unused = x.cos();          // DCE drops this
    (void)unused;
    return a + b;
  }, fw::CompileOptions().backend("eager"));
  fw::Tensor x = fw::randn({3});
  expect_close(f(x), x.exp() * 2);
  std::string text = f.explain().graphs.at(0);
  EXPECT_NE(text.find("%0 = input(0) : f32[3]"), std::string::npos) << text;
  EXPECT_NE(text.find("= exp(%0) : f32[3]"), std::string::npos) << text;
}

// Traces fn on args with the tracer directly (the graph fw::compile would build).
fw::jit::Graph trace(const std::function<std::vector<fw::Tensor>(const std::vector<fw::Tensor>&)>& fn,
                     const std::vector<fw::Tensor>& args) {
  fw::jit::Tracer T(args, true, [](fw::jit::Graph&, fw::ArrayRef<fw::Tensor>) { return std::vector<fw::Tensor>{}; });
  std::vector<fw::Tensor> outs;
  {
    fw::jit::Tracer::Scope s(T);
    outs = fn(T.inputs());
  }
  EXPECT_TRUE(T.finish(outs));
  return std::move(T.graph());
}

TEST(GraphIR, PassesFoldViewsAndConstantsAndKeepResults) {
  auto fn = [](const std::vector<fw::Tensor>& in) {
    fw::Tensor x = in[0];
    fw::Tensor c = fw::arange(12, fw::kFloat).reshape({3, 4}).t() * 0.5;  // constant subgraph
    fw::Tensor v = x.t().unsqueeze(0).squeeze(0).t();                       // a view chain
    return std::vector<fw::Tensor>{v * 2 + c.t(), x.exp() + x.exp()};
  };
  fw::Tensor x = fw::randn({3, 4});
  fw::jit::Graph g = trace(fn, {x});
  g.verify();
  auto want = fw::jit::interpret(g, {x}, g.external_tensors);
  size_t before = g.nodes.size();
  EXPECT_GE(fw::jit::fold_views(g), 1);
  EXPECT_GE(fw::jit::fold_constants(g), 3);
  EXPECT_EQ(fw::jit::eliminate_common_subexpressions(g), 1);
  fw::jit::eliminate_dead_code(g);
  g.verify();
  EXPECT_LT(g.nodes.size(), before - 4) << g.dump();
  EXPECT_NE(g.dump().find("as_strided"), std::string::npos) << g.dump();
  auto got = fw::jit::interpret(g, {x}, {});  // folded constants come from the graph
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); i++) expect_close(got[i], want[i]);
  // The folded view chain keeps the argument's own storage offset at run time.
  fw::Tensor big = fw::randn({5, 4});
  fw::Tensor y = big.slice(0, 2, 5);  // same sizes and strides as x, offset 8
  auto r = fw::jit::interpret(g, {y}, {});
  expect_close(r[0], fn({y})[0]);
}

}  // namespace

namespace {
TEST(Compile, DetachOfAnArgumentReadsTheNewCallsTensorAndCutsTheGradient) {
  for (const char* backend : {"eager", "aot_eager", "inductor"}) {
    auto fn = [](const fw::Tensor& x) { return (x * x.detach()).sum(); };  // d/dx = x, not 2x
    auto f = fw::compile(fn, fw::CompileOptions().backend(backend));
    for (int it = 0; it < 2; it++) {
      fw::Tensor x = fw::randn({5}, fw::requires_grad());
      fw::Tensor l = f(x);
      expect_close(l, (x * x).sum().detach());
      auto g = fw::autograd::grad({l}, {x});
      SCOPED_TRACE(backend);
      expect_close(g[0], x.detach());
    }
    EXPECT_EQ(f.explain().graph_count, 1) << backend;
  }
}

TEST(Compile, OpsTracedUnderNoGradStayWithoutHistory) {
  auto fn = [](const fw::Tensor& x) {
    fw::Tensor stat;
    {
      fw::NoGradGuard ng;
      stat = x.mean();
    }
    return x * stat;  // stat is a constant for autograd, as in eager
  };
  for (const char* backend : {"eager", "aot_eager", "inductor"}) {
    auto f = fw::compile(fn, fw::CompileOptions().backend(backend));
    fw::Tensor x = fw::randn({4}, fw::requires_grad());
    auto g1 = fw::autograd::grad({f(x).sum()}, {x});
    auto g2 = fw::autograd::grad({fn(x).sum()}, {x});
    expect_close(g1[0], g2[0]);
  }
}
}  // namespace

// Eager MultiheadAttention skips an all-false key_padding_mask after reading it; traced, the mask
// must not be read (a graph break): the fill is recorded and the function stays one graph.
TEST_P(Backends, AttentionWithAPaddingMaskTracesWithoutABreak) {
  fw::manual_seed(3);
  fw::nn::MultiheadAttention mha(8, 2);
  mha->eval();
  auto fn = [&](const fw::Tensor& x, const fw::Tensor& pad) {
    return std::get<0>(mha->forward(x, x, x, pad, /*need_weights=*/false));
  };
  auto f = fw::compile(fn, opts());
  fw::Tensor x = fw::randn({5, 2, 8});
  fw::Tensor none = fw::zeros({2, 5}, fw::TensorOptions(fw::kBool));
  fw::Tensor some = none.clone();
  some.index_put_({1, 3}, true);
  fw::NoGradGuard no_grad;
  expect_close(f(x, none), fn(x, none));
  expect_close(f(x, some), fn(x, some));
  expect_close(fn(x, none), std::get<0>(mha->forward(x, x, x, fw::Tensor(), false)));
  EXPECT_TRUE(f.explain().breaks.empty());
  EXPECT_EQ(f.explain().graph_count, 1);
}
