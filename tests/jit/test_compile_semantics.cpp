// fw::compile keeps eager's semantics where a replay could silently differ: values read from
// arguments and captured tensors, data-dependent sizes of arguments, breaks under NoGradGuard,
// in-place writes into tensors that take part in autograd, aliasing between arguments, module
// modes read through a lambda, calls that throw while they are traced, vector results whose length
// follows a dynamic size, tensors the function makes for itself, the default dtype, and the
// messages that name what changed.
#include <gtest/gtest.h>

#include <fw/fw.h>
#include <fw/jit.h>

#include <atomic>
#include <thread>
#include <limits>
#include <stdexcept>

#include "../expect_error.h"

namespace {

using fw::Tensor;

void expect_close(const Tensor& a, const Tensor& b, double rtol = 1e-5, double atol = 1e-6) {
  ASSERT_TRUE(a.defined() && b.defined());
  ASSERT_TRUE(a.sizes().equals(b.sizes())) << a.sizes() << " vs " << b.sizes();
  ASSERT_EQ(a.dtype(), b.dtype());
  EXPECT_TRUE(fw::allclose(a, b, rtol, atol)) << a << " vs " << b;
}

const char* kBackends[] = {"eager", "aot_eager", "inductor"};

class Semantics : public ::testing::TestWithParam<const char*> {
 protected:
  fw::CompileOptions opts() const { return fw::CompileOptions().backend(GetParam()); }
};

TEST_P(Semantics, ValuesReadFromArgumentsAndCapturedTensorsAreNotBakedIn) {
  Tensor temp = fw::full({}, 2.0);
  auto by_item = [](const Tensor& x, const Tensor& k) { return x * double(k.item<int64_t>()); };
  auto by_ptr = [](const Tensor& x, const Tensor& k) { return (x + 1) * double(k.data_ptr<int64_t>()[0]); };
  auto by_view = [](const Tensor& x, const Tensor& k) { return x.exp() * double(k[1].item<int64_t>()); };
  auto by_capture = [&](const Tensor& x) { return x.sin() * temp.item<double>(); };
  auto f1 = fw::compile(by_item, opts());
  auto f2 = fw::compile(by_ptr, opts());
  auto f3 = fw::compile(by_view, opts());
  auto f4 = fw::compile(by_capture, opts());
  Tensor x = fw::randn({4});
  for (int64_t v : {2, 3, 5, 3}) {
    Tensor k = fw::full({2}, v, fw::kLong);
    temp.fill_(double(v));
    expect_close(f1(x, k.narrow(0, 0, 1)), by_item(x, k.narrow(0, 0, 1)));
    expect_close(f2(x, k), by_ptr(x, k));
    expect_close(f3(x, k), by_view(x, k));
    expect_close(f4(x), by_capture(x));
  }
  auto e = f1.explain();
  ASSERT_FALSE(e.breaks.empty());
  EXPECT_EQ(e.breaks[0].op, "item()");
  EXPECT_NE(e.breaks[0].reason.find("argument or captured tensor"), std::string::npos) << e.breaks[0].reason;
  // fullgraph names the API that read the values.
  auto strict = fw::compile(by_item, opts().fullgraph(true));
  EXPECT_ERROR(strict(x, fw::full({1}, 2, fw::kLong)), "graph break in fullgraph mode at item()");
}

TEST_P(Semantics, DataDependentOpsOnArgumentsBreakTheGraph) {
  // The nonzero result feeds fused ops: a size baked into the capture would read past it.
  auto rows = [](const Tensor& m) { return (m.nonzero().to(fw::kFloat) * 2).exp().sum({0}); };
  auto pick = [](const Tensor& m, const Tensor& x) {
    return x.index_select(0, m.nonzero().view({-1})).sin() * 2 + 1;
  };
  auto sel = [](const Tensor& x, const Tensor& m) { return x.masked_select(m) * 3; };
  auto f1 = fw::compile(rows, opts());
  auto f2 = fw::compile(pick, opts());
  auto f3 = fw::compile(sel, opts());
  Tensor x = fw::randn({6});
  for (auto vals : {std::vector<int64_t>{1, 0, 1, 0, 0, 0}, std::vector<int64_t>{0, 0, 0, 1, 1, 1},
                    std::vector<int64_t>{0, 1, 0, 0, 0, 0}, std::vector<int64_t>{0, 0, 0, 0, 0, 0}}) {
    Tensor m = fw::tensor(vals);
    expect_close(f1(m), rows(m));
    expect_close(f2(m, x), pick(m, x));
    Tensor mb = m.to(fw::kBool);
    expect_close(f3(x, mb), sel(x, mb));
  }
  auto e = f1.explain();
  ASSERT_FALSE(e.breaks.empty());
  EXPECT_EQ(e.breaks[0].op, "nonzero");
  auto strict = fw::compile(sel, opts().fullgraph(true));
  EXPECT_ERROR(strict(x, x > 0), "graph break in fullgraph mode at masked_select");
}

TEST_P(Semantics, ABreakUnderNoGradKeepsTheHistoryTracedBeforeIt) {
  // What BatchNorm with momentum(nullopt) does in training: count batches under no_grad, read it.
  fw::manual_seed(0);
  Tensor counter = fw::zeros({}, fw::kLong);
  Tensor w1 = fw::randn({3}).requires_grad_(), w2 = w1.detach().clone().requires_grad_();
  auto make = [&counter](Tensor& w) {
    return [&counter, &w](const Tensor& x) {
      Tensor h = (x * w).tanh();
      double c;
      {
        fw::NoGradGuard ng;
        counter.add_(1);
        c = 1.0 / counter.item<double>();
      }
      return h * c;
    };
  };
  auto fn1 = make(w1), fn2 = make(w2);
  auto f = fw::compile(fn1, opts());
  Tensor x = fw::randn({3});
  for (int call = 0; call < 2; call++) {
    counter.zero_();
    Tensor r1 = f(x);
    counter.zero_();
    Tensor r2 = fn2(x);
    expect_close(r1, r2);
    ASSERT_TRUE(r1.requires_grad());
    r1.sum().backward();
    r2.sum().backward();
    expect_close(w1.grad(), w2.grad());
  }
}

TEST_P(Semantics, InPlaceWritesIntoTensorsInAutogradMatchEager) {
  // (a) A parameter updated under no_grad inside the function keeps its identity and gradient
  // (nn::Embedding with max_norm renormalises its weight this way).
  {
    fw::manual_seed(1);
    Tensor w1 = fw::randn({4}).requires_grad_(), w2 = w1.detach().clone().requires_grad_();
    auto make = [](Tensor& w) {
      return [&w](const Tensor& x) {
        {
          fw::NoGradGuard ng;
          w.mul_(0.5);
        }
        return (x * w).sum();
      };
    };
    auto fn1 = make(w1), fn2 = make(w2);
    auto f = fw::compile(fn1, opts());
    Tensor x = fw::randn({4});
    for (int call = 0; call < 2; call++) {
      Tensor r1 = f(x), r2 = fn2(x);
      expect_close(r1, r2);
      expect_close(w1.detach(), w2.detach());
      ASSERT_TRUE(r1.requires_grad());
      r1.backward();
      r2.backward();
      expect_close(w1.grad(), w2.grad());
    }
    auto e1 = fw::nn::Embedding(fw::nn::EmbeddingOptions(10, 3).max_norm(1.0));
    fw::manual_seed(2);
    auto e2 = fw::nn::Embedding(fw::nn::EmbeddingOptions(10, 3).max_norm(1.0));
    {
      fw::NoGradGuard ng;
      e2->weight.copy_(e1->weight);
    }
    auto ce = fw::compile(e1, opts());
    Tensor idx = fw::tensor({int64_t(1), 2, 2, 7});
    Tensor o1 = ce(idx), o2 = e2(idx);
    expect_close(o1, o2);
    o1.sum().backward();
    o2.sum().backward();
    ASSERT_TRUE(e1->weight.grad().defined());
    expect_close(e1->weight.grad(), e2->weight.grad());
  }
  // (b) An in-place op on an activation argument: the argument gets the new history, backward
  // works, and the function returns the argument itself.
  {
    fw::manual_seed(3);
    Tensor l1 = fw::randn({5}).requires_grad_(), l2 = l1.detach().clone().requires_grad_();
    auto fn = [](Tensor y) {
      y.mul_(2).relu_();
      return y;
    };
    auto f = fw::compile(fn, opts());
    Tensor y1 = l1 * 3, y2 = l2 * 3;
    Tensor r1 = f(y1), r2 = fn(y2);
    EXPECT_TRUE(r1.is_same(y1));
    expect_close(y1, y2);
    (y1 * y1).sum().backward();
    (y2 * y2).sum().backward();
    expect_close(l1.grad(), l2.grad());
  }
  // (c) A compiled block that starts with an in-place ReLU, fed an activation.
  {
    auto make = [] {
      fw::manual_seed(4);
      return fw::nn::Sequential(fw::nn::ReLU(fw::nn::ReLUOptions().inplace(true)), fw::nn::Linear(4, 3));
    };
    auto b1 = make(), b2 = make();
    auto cb = fw::compile(b1, opts());
    fw::manual_seed(5);
    fw::nn::Linear stem(5, 4);
    Tensor in = fw::randn({2, 5});
    Tensor o1 = cb(stem(in));
    o1.sum().backward();
    fw::Tensor g1 = stem->weight.grad().clone();
    stem->weight.grad().zero_();
    Tensor o2 = b2->forward(stem(in));
    o2.sum().backward();
    expect_close(o1, o2);
    expect_close(g1, stem->weight.grad());
  }
  // (d) In-place on a leaf that requires grad: eager's error, naming the op.
  {
    auto f = fw::compile([](Tensor x) { return x.mul_(2); }, opts());
    Tensor leaf = fw::randn({3}).requires_grad_();
    EXPECT_ERROR(f(leaf), "[mul_] a leaf Variable that requires grad");
  }
}

TEST_P(Semantics, AWrittenArgumentOrCaptureReturnedIsTheTensorItself) {
  Tensor buf = fw::zeros({3});
  auto fn = [&](Tensor x) {
    x.mul_(2);
    buf.add_(x);
    return std::make_tuple(x, buf, x + 1);
  };
  auto f = fw::compile(fn, opts());
  for (int call = 0; call < 2; call++) {
    Tensor x = fw::randn({3});
    Tensor want = x * 2;
    auto [a, b, c] = f(x);
    EXPECT_TRUE(a.is_same(x));
    EXPECT_TRUE(b.is_same(buf));
    expect_close(x, want);
    expect_close(c, want + 1);
  }
}

TEST_P(Semantics, ArgumentsSharingMemorySeeEachOthersWrites) {
  auto fn = [](Tensor a, const Tensor& b) {
    a.add_(1);
    return b * 2;
  };
  auto f = fw::compile(fn, opts());
  Tensor p = fw::zeros({4}), q = fw::zeros({4});
  expect_close(f(p, q), fn(p.clone(), q.clone()));  // first capture: distinct tensors
  for (int call = 0; call < 2; call++) {
    // Two handles on one buffer that are not views (no view_base): only the sharing tells.
    Tensor y1 = fw::zeros({4}), y2 = fw::zeros({4});
    Tensor r1 = f(y1, y1.detach());
    Tensor r2 = fn(y2, y2.detach());
    expect_close(r1, r2);
    expect_close(y1, y2);
  }
  // One tensor passed twice is one value; two handles on one buffer are two: different keys.
  auto h = [](const Tensor& base, Tensor b, const Tensor& c) {
    b.add_(1);
    return c * 2 + base;
  };
  auto fh = fw::compile(h, opts());
  Tensor base1 = fw::zeros({4}), base2 = fw::zeros({4});
  Tensor r = base1.detach();
  expect_close(fh(base1, r, r), h(base2, base2.detach(), base2.detach()));
  expect_close(base1, base2);
  expect_close(fh(base1, base1.detach(), base1.detach()), h(base2, base2.detach(), base2.detach()));
  expect_close(base1, base2);
  // An argument that is a view of a captured tensor the function writes.
  Tensor acc = fw::zeros({4});
  auto g = [&](const Tensor& a) {
    acc.add_(1);
    return a * 3;
  };
  auto cg = fw::compile(g, opts());
  Tensor other = fw::ones({4});
  expect_close(cg(other), other * 3);
  Tensor ra = cg(acc.detach());  // same sizes as the capture: only the sharing differs
  expect_close(ra, acc * 3);
  expect_close(ra, fw::full({4}, 6.0f));
}

TEST_P(Semantics, ModuleModesReadThroughALambdaAreGuarded) {
  fw::manual_seed(6);
  fw::nn::BatchNorm1d bn(3);
  auto fn = [&](const Tensor& x) { return bn(x) * 2; };
  auto f = fw::compile(fn, opts());
  Tensor x = fw::randn({8, 3}) * 3 + 1;
  Tensor train_out = f(x);
  EXPECT_LT(train_out.mean({0}).abs().max().item<double>(), 1e-4);  // batch statistics
  bn->eval();
  Tensor eval_out = f(x);
  expect_close(eval_out, bn(x) * 2);  // running statistics, not the training-mode capture
  bn->train();
  fw::Tensor rm = bn->running_mean.clone();
  f(x);
  EXPECT_FALSE(fw::allclose(bn->running_mean, rm));  // training mode again: statistics move
  bool named = false;  // the guards of the latest capture (made in eval mode)
  for (auto& g : f.explain().guards) named = named || g.find("BatchNorm1dImpl in eval mode") != std::string::npos;
  EXPECT_TRUE(named);
}

// Tensors the function makes for itself (zeros() then add_(), a returned constant, a folded
// constant) are new on every call, as in eager: a later call does not change what an earlier one
// returned, and a caller's write into a result does not reach later calls (Note [Tensors the
// function made] in jit/ir.cpp).
TEST_P(Semantics, TensorsMadeInsideAreNewOnEveryCall) {
  auto accumulate = [](const Tensor& x) {
    Tensor acc = fw::zeros({2});
    acc.add_(x);
    acc.mul_(2);
    return acc;
  };
  auto like = [](const Tensor& x) {
    Tensor acc = fw::zeros_like(x);
    acc.add_(x * x);
    return std::make_tuple(acc, fw::ones({2}).mul_(3));
  };
  auto constant = [](const Tensor& x) {
    Tensor c = fw::arange(3).to(fw::kFloat) * 2;
    return std::make_tuple(x * c, c, fw::zeros({3}));
  };
  auto f1 = fw::compile(accumulate, opts());
  auto f2 = fw::compile(like, opts());
  auto f3 = fw::compile(constant, opts());
  std::vector<Tensor> acc_results;
  for (int i = 1; i <= 3; i++) acc_results.push_back(f1(fw::full({2}, double(i))));
  for (int i = 0; i < 3; i++) expect_close(acc_results[size_t(i)], fw::full({2}, 2.0 * (i + 1)));
  EXPECT_FALSE(acc_results[0].is_same(acc_results[2]));
  auto [a1, o1] = f2(fw::full({2}, 2.0));
  auto [a2, o2] = f2(fw::full({2}, 3.0));
  expect_close(a1, fw::full({2}, 4.0));
  expect_close(a2, fw::full({2}, 9.0));
  expect_close(o1, fw::full({2}, 3.0));
  EXPECT_FALSE(o1.is_same(o2));
  Tensor x = fw::ones({3});
  for (int call = 0; call < 3; call++) {
    auto [xc, c, z] = f3(x);
    expect_close(xc, fw::tensor({0.0f, 2.0f, 4.0f}));
    expect_close(c, fw::tensor({0.0f, 2.0f, 4.0f}));
    expect_close(z, fw::zeros({3}));
    c.mul_(0);  // the caller's write stays in the caller's tensor
    z.add_(1);
  }
}

// The default dtype is part of every capture's guards (factories such as ones() read it).
TEST_P(Semantics, DefaultDtypeIsGuarded) {
  struct Restore {
    ~Restore() { fw::set_default_dtype(fw::kFloat); }
  } restore;
  auto fn = [](const Tensor& x) { return x + fw::ones({3}); };
  auto f = fw::compile(fn, opts());
  Tensor x = fw::arange(3);
  EXPECT_EQ(f(x).dtype(), fw::kFloat);
  fw::set_default_dtype(fw::kDouble);
  EXPECT_EQ(f(x).dtype(), fw::kDouble);
  EXPECT_EQ(f(x).dtype(), fn(x).dtype());
  auto e = f.explain();
  EXPECT_EQ(e.recompiles, 1);
  bool listed = false;
  for (auto& g : e.guards) listed = listed || g == "default dtype float64";
  EXPECT_TRUE(listed) << e.str();
}

// An undefined Tensor argument (libtorch code passes Tensor() for "none") is part of the key.
TEST_P(Semantics, UndefinedTensorArguments) {
  auto fn = [](const Tensor& x, const Tensor& y) { return y.defined() ? x + y : x * 2; };
  auto vfn = [](const std::vector<Tensor>& v) {
    Tensor r = v[0];
    for (size_t i = 1; i < v.size(); i++)
      if (v[i].defined()) r = r + v[i];
    return r;
  };
  auto f = fw::compile(fn, opts());
  auto g = fw::compile(vfn, opts());
  Tensor x = fw::ones({3});
  for (int i = 0; i < 2; i++) {
    expect_close(f(x, Tensor()), fn(x, Tensor()));
    expect_close(f(x, x), fn(x, x));
    const std::vector<Tensor> v1{x, Tensor(), x}, v2{x, x, Tensor()};
    expect_close(g(v1), vfn(v1));
    expect_close(g(v2), vfn(v2));
  }
  EXPECT_EQ(f.explain().recompiles, 1);
}

// Cases where fused code used to round or compare differently from eager's kernels.
TEST_P(Semantics, FusedScalarsAndRowOpsRoundAsEager) {
  const double inf = std::numeric_limits<double>::infinity();
  // Integer and bool tensors against scalars their dtype cannot hold compare in eager's type.
  auto cmp = [](const Tensor& x, const Tensor& b) {
    return std::make_tuple((x * 1 == 2.5).logical_not(), (x * 1 > 2.5).logical_not(), (b.logical_not() == 2).logical_not());
  };
  auto f1 = fw::compile(cmp, opts());
  Tensor xi = fw::arange(5), b = fw::tensor({true, false});
  auto [c1, c2, c3] = f1(xi, b);
  auto [e1, e2, e3] = cmp(xi, b);
  EXPECT_TRUE(fw::equal(c1, e1)) << c1;
  EXPECT_TRUE(fw::equal(c2, e2)) << c2;
  EXPECT_TRUE(fw::equal(c3, e3)) << c3;
  // pow(x, 0.5) is pow, not sqrt: pow(-inf, 0.5) = +inf and pow(-0, 0.5) = +0, at every position.
  auto half = [](const Tensor& x) { return fw::pow(x * 2, 0.5) * 1; };
  auto f2 = fw::compile(half, opts());
  for (auto dt : {fw::kFloat, fw::kDouble}) {
    Tensor x = fw::tensor({-inf, -0.0, 4.0, -inf, -0.0, 4.0, -inf, -0.0, 4.0, -inf, 2.0, -0.0, 9.0, 1.0, -inf, 0.5,
                           -0.0, -inf}).to(dt);
    Tensor got = f2(x), want = half(x);
    EXPECT_TRUE(fw::equal(got.isnan(), want.isnan())) << got;
    EXPECT_TRUE(fw::equal(got.signbit(), want.signbit())) << got;
    EXPECT_TRUE(fw::allclose(got, want, 1e-6, 0)) << got << want;
  }
  // log_softmax fused with a consumer rounds as eager's kernel on rows of large values.
  auto lsm = [](const Tensor& x) { return fw::log_softmax(x, -1) * 1; };
  auto f3 = fw::compile(lsm, opts());
  Tensor rows = fw::tensor({1e4f, 1e4f, 0.f, 1e30f, 1e30f, 0.f}).view({2, 3});
  Tensor got = f3(rows), want = lsm(rows);
  EXPECT_TRUE(fw::allclose(got, want, 1e-6, 1e-7)) << got << want;
}

// Found by a bug hunt: a function that breaks ran a segment program cached under a graph text
// that printed its scalars to 6 digits (x * 1.0000001 reused the program of x * 1); an in-place
// write into an argument was lost when the function threw after it; every call of a function that
// breaks appended its break to explain() again.
TEST_P(Semantics, BreaksAndThrowsKeepEagerEffects) {
  auto scaled = [](const Tensor& x, double s) {
    const double v = x.sum().item<double>();
    return x * s + v;
  };
  auto f = fw::compile(scaled, opts());
  Tensor x = fw::ones({2}, fw::kDouble);
  for (double s : {1.0, 1.0000001, 2.0, 2.000000001}) {
    Tensor got = f(x, s), want = scaled(x, s);
    EXPECT_TRUE(fw::equal(got, want)) << "s = " << s << ": " << got << " vs " << want;
  }
  for (int i = 0; i < 20; i++) f(x, 3.0);
  EXPECT_EQ(f.explain().breaks.size(), 1u);
  auto throws = [](Tensor x, const Tensor& y) {
    x.add_(1);
    return fw::matmul(x, y);
  };
  auto g = fw::compile(throws, opts());
  Tensor a = fw::zeros({2, 3}), b = fw::zeros({2, 3});
  EXPECT_ERROR(g(a, b), "[mm] mat1 and mat2 shapes cannot be multiplied (2x3 and 2x3)");
  EXPECT_EQ(a.sum().item<double>(), 6.0);  // eager made the write before the error
  Tensor c = fw::zeros({3, 2});
  expect_close(g(a, c), fw::zeros({2, 2}));
  EXPECT_EQ(a.sum().item<double>(), 12.0);
}

// Threads calling a compiled function while another drops every capture (fw::jit::reset()):
// the runs keep what they need (found by a bug hunt: a run read its entry's captured tensors after
// the entry was destroyed).
TEST_P(Semantics, ResetWhileOtherThreadsRun) {
  Tensor w = fw::randn({8});
  auto fn = [&w](const Tensor& x) { return (x * w).relu() + 1; };
  auto f = fw::compile(fn, opts().dynamic(true));
  std::atomic<int> bad{0}, done{0};
  std::atomic<bool> go{false};
  auto worker = [&](int seed) {
    while (!go.load()) std::this_thread::yield();
    for (int i = 0; i < 300; i++) {
      Tensor x = fw::full({1 + (i * 7 + seed) % 70, 8}, 0.5);
      if (!fw::allclose(f(x), fn(x))) bad++;
    }
    done++;
  };
  std::thread t1(worker, 1), t2(worker, 2);
  int resets = 0;
  go = true;  // (the workers wait for this: on a loaded machine they once finished before a reset)
  do {
    fw::jit::reset();
    resets++;
  } while (done.load() < 2);
  t1.join();
  t2.join();
  EXPECT_EQ(bad.load(), 0);
  EXPECT_GT(resets, 0);
}

TEST_P(Semantics, FillOfAnExpandedTensor) {
  // fill_ and zero_ may write a tensor whose elements share memory (PyTorch's fill skips the
  // overlap check); copy_ and other writes may not.
  auto made = [](const Tensor& x) {
    Tensor b = fw::zeros({1, 3});
    b.expand({4, 3}).fill_(2.0);
    return b * x;
  };
  auto arg = [](const Tensor& x, const Tensor& y) {
    y.expand({2, 3}).zero_();
    x.expand({5, 3}).fill_(1.5);
    return x * 2 + y;
  };
  auto f1 = fw::compile(made, opts());
  auto f2 = fw::compile(arg, opts());
  for (int i = 0; i < 2; i++) {
    Tensor x = fw::randn({1, 3});
    expect_close(f1(x), made(x));
    Tensor a = fw::randn({1, 3}), b = fw::randn({1, 3}), a2 = a.clone(), b2 = b.clone();
    expect_close(f2(a, b), arg(a2, b2));
    expect_close(a, a2);
    expect_close(b, b2);
  }
  auto bad = fw::compile([](const Tensor& x) { return x.expand({2, 3}).add_(1); }, opts());
  EXPECT_ERROR(bad(fw::zeros({1, 3})), "refers to a single memory location");
}

TEST_P(Semantics, SecondBackwardThroughAGraphThatSavedNothing) {
  // Eager runs a node that saved nothing again without retain_graph; one that saved raises.
  auto f = fw::compile([](const Tensor& x) { return x * 3 + 1; }, opts());
  Tensor x = fw::ones({3}).requires_grad_();
  Tensor y = f(x).sum();
  y.backward();
  y.backward();
  expect_close(x.grad(), fw::full({3}, 6.0));
  auto g = fw::compile([](const Tensor& x) { return x * x; }, opts());
  Tensor z = g(x).sum();
  z.backward();
  EXPECT_ERROR(z.backward(), "backward through the graph a second time");
}

TEST_P(Semantics, RequiresGradOfAnIntermediateCannotBeCleared) {
  auto fn = [](const Tensor& x) {
    Tensor h = x * 2;
    h.requires_grad_(false);
    return h + 1;
  };
  auto f = fw::compile(fn, opts());
  Tensor x = fw::ones({2}).requires_grad_();
  EXPECT_ERROR(fn(x), "you can only change requires_grad flags of leaf variables");
  EXPECT_ERROR(f(x), "you can only change requires_grad flags of leaf variables");
  Tensor x0 = fw::ones({2});  // without grad the intermediate is a leaf: allowed
  expect_close(f(x0), fn(x0));
  expect_close(f(x0), fn(x0));
}

TEST_P(Semantics, HooksAndRetainGradOnIntermediatesSeeTheirGradients) {
  // A hook or retain_grad() on a traced op result needs its node: the graph breaks there and the
  // gradients are eager's (a hook that scales the gradient changes the inputs' gradients).
  int calls = 0;
  Tensor kept;
  auto fn = [&](const Tensor& x) {
    Tensor h = x * 2;
    EXPECT_FALSE(h.is_leaf());
    h.retain_grad();
    h.register_hook([&](const Tensor& g) {
      calls++;
      return g * 10;
    });
    EXPECT_TRUE(h.grad_fn() != nullptr);
    kept = h;
    return (h * h).sum();
  };
  Tensor x = fw::tensor({1.0f, 2.0f}).requires_grad_();
  fn(x).backward();
  Tensor want_x = x.grad().clone(), want_h = kept.grad().clone();  // x: 8x * 10 = [80, 160]; h: 2h = [4, 8]
  expect_close(want_x, fw::tensor({80.0f, 160.0f}));
  auto f = fw::compile(fn, opts());
  for (int i = 0; i < 2; i++) {
    x.mutable_grad() = Tensor();
    calls = 0;
    f(x).backward();
    expect_close(x.grad(), want_x);
    expect_close(kept.grad(), want_h);
    EXPECT_EQ(calls, 1);
  }
}

INSTANTIATE_TEST_SUITE_P(Compile, Semantics, ::testing::ValuesIn(kBackends));

TEST(CompileSemantics, ACallThatThrowsWhileTracedLeavesNothingBehind) {
  auto f = fw::compile([](const Tensor& a, const Tensor& b) { return (a.mm(b) + 1).relu(); });
  Tensor a = fw::randn({3, 4}), b = fw::randn({5, 5});
  for (int i = 0; i < 2; i++) EXPECT_ERROR(f(a, b), "mat1 and mat2 shapes cannot be multiplied (3x4 and 5x5)");
  Tensor good = fw::randn({4, 5});
  expect_close(f(a, good), (a.mm(good) + 1).relu());
  int calls = 0;
  auto g = fw::compile([&](const Tensor& x) {
    if (calls++ == 0) throw std::runtime_error("first call fails");
    return x * 2 + 1;
  });
  Tensor x = fw::randn({4});
  EXPECT_THROW(g(x), std::runtime_error);
  expect_close(g(x), x * 2 + 1);
  expect_close(g(x), x * 2 + 1);
}

TEST(CompileSemantics, VectorResultLengthsFollowDynamicSizes) {
  auto fn = [](const Tensor& x) { return fw::split(x * 2, 2, 0); };
  for (std::optional<bool> dyn : {std::optional<bool>(), std::optional<bool>(true)}) {
    auto f = fw::compile(fn, fw::CompileOptions().dynamic(dyn));
    for (int64_t n : {4, 6, 8, 6, 4, 3}) {
      Tensor x = fw::randn({n, 2});
      auto got = f(x);
      auto want = fn(x);
      ASSERT_EQ(got.size(), want.size()) << "n = " << n;
      for (size_t i = 0; i < got.size(); i++) expect_close(got[i], want[i]);
    }
  }
}

TEST(CompileSemantics, AnOptionalHoldingAnUndefinedTensorIsNotNullopt) {
  auto fn = [](const Tensor& x, const std::optional<Tensor>& b) { return b.has_value() ? x + 100 : x * 2; };
  auto f = fw::compile(fn);
  Tensor x = fw::ones({2});
  expect_close(f(x, std::nullopt), fn(x, std::nullopt));
  expect_close(f(x, std::optional<Tensor>(Tensor())), fn(x, std::optional<Tensor>(Tensor())));
  expect_close(f(x, std::nullopt), fn(x, std::nullopt));
}

TEST(CompileSemantics, CacheLimitWarningNamesTheChangedArgument) {
  auto f = fw::compile([](const Tensor& x, double s, int64_t k) { return x * s + double(k); },
                       fw::CompileOptions().cache_limit(1));
  Tensor x = fw::randn({3});
  f(x, 2.0, 1);
  testing::internal::CaptureStderr();
  expect_close(f(x, 2.5, 1), x * 2.5 + 1.0);
  std::string err = testing::internal::GetCapturedStderr();
  EXPECT_NE(err.find("argument #1 was 2, now 2.5"), std::string::npos) << err;
  auto g = fw::compile([](const Tensor& x, int64_t k) { return x + double(k); }, fw::CompileOptions().cache_limit(1));
  g(x, -3);
  testing::internal::CaptureStderr();
  g(x, 7);
  err = testing::internal::GetCapturedStderr();
  EXPECT_NE(err.find("argument #1 was -3, now 7"), std::string::npos) << err;
}

}  // namespace
