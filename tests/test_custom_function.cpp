// Custom autograd functions (fw::autograd::Function<T>, libtorch's API), fw::IValue, hook
// removal and mutable_grad. Expected values are closed forms of the functions written here.
#include <gtest/gtest.h>

#include "fw/jit.h"
#include "tests/fixture.h"

using fw::Tensor;
using fw::autograd::AutogradContext;
using fw::autograd::Function;
using fw::autograd::variable_list;

namespace {

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}

Tensor values(std::vector<double> v) { return fw::tensor(v, fw::kDouble); }

// got equals want within atol + rtol * |want| elementwise (shapes equal).
void expect_close(const Tensor& got, const Tensor& want, double atol, double rtol) {
  ASSERT_TRUE(got.defined());
  ASSERT_EQ(got.sizes().vec(), want.sizes().vec());
  Tensor g = got.detach().to(fw::kDouble).contiguous().reshape({-1});
  Tensor w = want.detach().to(fw::kDouble).contiguous().reshape({-1});
  for (int64_t i = 0; i < g.numel(); i++) {
    double a = g[i].item<double>(), b = w[i].item<double>();
    EXPECT_LE(std::abs(a - b), atol + rtol * std::abs(b)) << "element " << i << ": got " << a << ", want " << b;
  }
}

// y = x * k with k a double argument (saved_data).
struct Scale : Function<Scale> {
  static Tensor forward(AutogradContext* ctx, Tensor x, double k) {
    ctx->saved_data["k"] = k;
    return x * k;
  }
  static variable_list backward(AutogradContext* ctx, variable_list g) {
    return {g[0] * ctx->saved_data["k"].toDouble(), Tensor()};
  }
};

// y = a * b with both saved; records needs_input_grad as seen by forward and backward.
struct Mul : Function<Mul> {
  static inline std::vector<bool> seen;
  static Tensor forward(AutogradContext* ctx, const Tensor& a, const Tensor& b) {
    seen = {ctx->needs_input_grad(0), ctx->needs_input_grad(1)};
    ctx->save_for_backward({a, b});
    return a * b;
  }
  static variable_list backward(AutogradContext* ctx, variable_list g) {
    auto s = ctx->get_saved_variables();
    return {ctx->needs_input_grad(0) ? g[0] * s[1] : Tensor(), ctx->needs_input_grad(1) ? g[0] * s[0] : Tensor()};
  }
};

// y = x^3, backward written with differentiable ops so create_graph gives the second derivative.
struct Cube : Function<Cube> {
  static Tensor forward(AutogradContext* ctx, Tensor x) {
    ctx->save_for_backward({x});
    return x * x * x;
  }
  static variable_list backward(AutogradContext* ctx, variable_list g) {
    Tensor x = ctx->get_saved_variables()[0];
    return {g[0] * 3 * x * x};
  }
};

// y = exp(x), saving its output.
struct Exp : Function<Exp> {
  static Tensor forward(AutogradContext* ctx, Tensor x) {
    Tensor y = x.exp();
    ctx->save_for_backward({y});
    return y;
  }
  static variable_list backward(AutogradContext* ctx, variable_list g) {
    return {g[0] * ctx->get_saved_variables()[0]};
  }
};

// Straight-through rounding: forward rounds, backward passes the gradient unchanged (eager
// autograd of round() would give zero).
struct RoundSTE : Function<RoundSTE> {
  static Tensor forward(AutogradContext*, Tensor x) { return x.round(); }
  static variable_list backward(AutogradContext*, variable_list g) { return {g[0]}; }
};

// Adds one in place to its input and returns it (mark_dirty); the gradient passes through.
struct AddOneInPlace : Function<AddOneInPlace> {
  static Tensor forward(AutogradContext* ctx, Tensor x) {
    x.add_(1);
    ctx->mark_dirty({x});
    return x;
  }
  static variable_list backward(AutogradContext*, variable_list g) { return {g[0]}; }
};

// Sorted values and their indices; the indices are non-differentiable and are saved.
struct SortFn : Function<SortFn> {
  static variable_list forward(AutogradContext* ctx, Tensor x) {
    auto [v, i] = x.sort(0);
    ctx->mark_non_differentiable({i});
    ctx->save_for_backward({i});
    ctx->saved_data["n"] = x.size(0);
    return {v, i};
  }
  static variable_list backward(AutogradContext* ctx, variable_list g) {
    Tensor i = ctx->get_saved_variables()[0];
    Tensor gx = fw::zeros({ctx->saved_data["n"].toInt()}, fw::kDouble);
    return {gx.index_add(0, i, g[0])};
  }
};

// Two outputs (x * 2, x * 3); records whether each gradient arrived defined.
struct Two : Function<Two> {
  static inline std::vector<bool> defined;
  static variable_list forward(AutogradContext* ctx, Tensor x, bool materialize) {
    ctx->set_materialize_grads(materialize);
    return {x * 2, x * 3};
  }
  static variable_list backward(AutogradContext*, variable_list g) {
    defined = {g[0].defined(), g[1].defined()};
    Tensor r = g[0].defined() ? g[0] * 2 : Tensor();
    if (g[1].defined()) r = r.defined() ? r + g[1] * 3 : g[1] * 3;
    return {r, Tensor()};
  }
};

// Returns its input unchanged; backward doubles the gradient.
struct PassDouble : Function<PassDouble> {
  static Tensor forward(AutogradContext*, Tensor x) { return x; }
  static variable_list backward(AutogradContext*, variable_list g) { return {g[0] * 2}; }
};

// Sum of a list of tensors (a std::vector<Tensor> argument counts one per tensor).
struct SumList : Function<SumList> {
  static Tensor forward(AutogradContext* ctx, std::vector<Tensor> xs, double w) {
    ctx->saved_data["w"] = w;
    Tensor s = xs[0].clone();
    for (size_t i = 1; i < xs.size(); i++) s = s + xs[i];
    return s * w;
  }
  static variable_list backward(AutogradContext* ctx, variable_list g) {
    Tensor gw = g[0] * ctx->saved_data["w"].toDouble();
    return {gw, gw * 1, gw * 1, Tensor()};
  }
};

// Backward returns a configurable set of gradients (for the error checks).
struct Bad : Function<Bad> {
  static inline int mode = 0;
  static Tensor forward(AutogradContext*, Tensor x, double) { return x * 1; }
  static variable_list backward(AutogradContext*, variable_list g) {
    switch (mode) {
      case 0: return {g[0]};                                          // too few
      case 1: return {g[0], g[0]};                                    // gradient for a double
      case 2: return {fw::ones({7}, fw::kDouble), Tensor()};          // wrong shape
      case 3: return {g[0].sum(0, true).expand({4, 3}), Tensor()};    // broadcast shape: summed
      default: return {g[0], Tensor(), Tensor()};                     // trailing undefined: fine
    }
  }
};

}  // namespace

TEST(CustomFunction, ForwardBackwardWithNonTensorArgument) {
  Tensor x = values({1, -2, 3}).requires_grad_(true);
  Tensor y = Scale::apply(x, 2.5);
  EXPECT_TRUE(y.requires_grad());
  EXPECT_FALSE(y.is_leaf());
  ASSERT_TRUE(y.grad_fn() != nullptr);
  EXPECT_NE(y.grad_fn()->name().find("Scale"), std::string::npos) << y.grad_fn()->name();
  expect_close(y, values({2.5, -5, 7.5}), 0, 0);
  (y * values({1, 2, 3})).sum().backward();
  expect_close(x.grad(), values({2.5, 5, 7.5}), 0, 0);
  // Without grad mode (or without inputs that need grad) no node is made.
  {
    fw::NoGradGuard ng;
    EXPECT_FALSE(Scale::apply(x, 2.0).requires_grad());
  }
  EXPECT_FALSE(Scale::apply(values({1}), 2.0).requires_grad());
}

TEST(CustomFunction, SavedTensorsAndNeedsInputGrad) {
  Tensor a = values({1, 2, 3}).requires_grad_(true);
  Tensor b = values({4, 5, 6});
  Tensor y = Mul::apply(a, b);
  EXPECT_EQ(Mul::seen, (std::vector<bool>{true, false}));
  y.sum().backward();
  expect_close(a.grad(), b, 0, 0);
  Tensor b2 = values({4, 5, 6}).requires_grad_(true);
  Tensor a2 = values({1, 2, 3}).requires_grad_(true);
  Tensor z = Mul::apply(a2, b2);
  EXPECT_EQ(Mul::seen, (std::vector<bool>{true, true}));
  // Matches the built-in product's gradients through a larger graph.
  ((z * z).sum()).backward();
  expect_close(a2.grad(), 2 * a2.detach() * b2.detach() * b2.detach(), 1e-12, 0);
  expect_close(b2.grad(), 2 * b2.detach() * a2.detach() * a2.detach(), 1e-12, 0);
}

TEST(CustomFunction, SavedOutputAndGradcheck) {
  Tensor x = values({0.5, -1, 2}).requires_grad_(true);
  Tensor y = Exp::apply(x);
  y.sum().backward();
  expect_close(x.grad(), x.detach().exp(), 1e-12, 0);
  EXPECT_TRUE(fw::autograd::gradcheck([](const variable_list& v) { return variable_list{Exp::apply(v[0])}; }, {x}));
  EXPECT_TRUE(fw::autograd::gradcheck([](const variable_list& v) { return variable_list{Mul::apply(v[0], v[1])}; },
                                      {x, values({3, 4, 5}).requires_grad_(true)}));
}

TEST(CustomFunction, HigherOrderThroughDifferentiableBackward) {
  Tensor x = values({1, 2, -3}).requires_grad_(true);
  Tensor y = Cube::apply(x).sum();
  auto g = fw::autograd::grad({y}, {x}, {}, std::nullopt, /*create_graph=*/true);
  expect_close(g[0], 3 * x.detach() * x.detach(), 1e-12, 0);
  auto gg = fw::autograd::grad({g[0].sum()}, {x});
  expect_close(gg[0], 6 * x.detach(), 1e-12, 0);
  EXPECT_TRUE(fw::autograd::gradgradcheck([](const variable_list& v) { return variable_list{Cube::apply(v[0])}; },
                                          {x}));
}

TEST(CustomFunction, InferenceTensorsAreNotSaved) {
  Tensor inf;
  {
    fw::InferenceMode guard;
    inf = values({1, 2});
  }
  Tensor w = values({3, 4}).requires_grad_(true);
  std::string e = error_of([&] { Mul::apply(inf, w); });
  EXPECT_NE(e.find("Inference tensors cannot be saved for backward"), std::string::npos) << e;
  Tensor y = Mul::apply(inf.clone(), w);
  y.sum().backward();
  expect_close(w.grad(), values({1, 2}), 0, 0);
}

TEST(CustomFunction, InPlaceChangeOfSavedTensorIsDetected) {
  Tensor a = values({1, 2}).requires_grad_(true);
  Tensor b = values({3, 4});
  Tensor y = Mul::apply(a, b);
  b.mul_(2);
  std::string e = error_of([&] { y.sum().backward(); });
  EXPECT_NE(e.find("modified by an in-place operation (mul_)"), std::string::npos) << e;
  EXPECT_NE(e.find("Mul"), std::string::npos) << e;
}

TEST(CustomFunction, SecondBackwardNeedsRetainGraph) {
  Tensor a = values({1, 2}).requires_grad_(true);
  Tensor y = Mul::apply(a, values({3, 4})).sum();
  y.backward({}, /*retain_graph=*/true);
  y.backward();
  expect_close(a.grad(), values({6, 8}), 0, 0);
  std::string e = error_of([&] { y.backward(); });
  EXPECT_NE(e.find("backward through the graph a second time"), std::string::npos) << e;
}

TEST(CustomFunction, MarkDirtyRebasesTheInput) {
  Tensor x = values({1, 2, 3}).requires_grad_(true);
  Tensor h = x * 2;
  Tensor out = AddOneInPlace::apply(h);
  EXPECT_TRUE(out.is_same(h));  // the dirty input itself is the output
  expect_close(h, values({3, 5, 7}), 0, 0);
  EXPECT_NE(h.grad_fn()->name().find("AddOneInPlace"), std::string::npos);
  (h * h).sum().backward();
  expect_close(x.grad(), 4 * values({3, 5, 7}), 0, 0);
  // A leaf that requires grad cannot be modified in place.
  Tensor leaf = values({1}).requires_grad_(true);
  std::string e = error_of([&] { AddOneInPlace::apply(leaf); });
  EXPECT_NE(e.find("a leaf Variable that requires grad is being used in an in-place operation"), std::string::npos)
      << e;
}

TEST(CustomFunction, NonDifferentiableOutputs) {
  Tensor x = values({3, 1, 2}).requires_grad_(true);
  auto r = SortFn::apply(x);
  ASSERT_EQ(r.size(), 2u);
  EXPECT_TRUE(r[0].requires_grad());
  EXPECT_FALSE(r[1].requires_grad());
  expect_close(r[0], values({1, 2, 3}), 0, 0);
  (r[0] * values({10, 20, 30})).sum().backward();
  expect_close(x.grad(), values({30, 10, 20}), 0, 0);
}

TEST(CustomFunction, MaterializeGrads) {
  Tensor x = values({1, 2}).requires_grad_(true);
  auto r = Two::apply(x, true);
  r[0].sum().backward();
  EXPECT_EQ(Two::defined, (std::vector<bool>{true, true}));  // zeros for the unused output
  expect_close(x.grad(), values({2, 2}), 0, 0);
  Tensor x2 = values({1, 2}).requires_grad_(true);
  auto r2 = Two::apply(x2, false);
  r2[1].sum().backward();
  EXPECT_EQ(Two::defined, (std::vector<bool>{false, true}));
  expect_close(x2.grad(), values({3, 3}), 0, 0);
}

TEST(CustomFunction, InputReturnedUnchangedIsAnAlias) {
  Tensor x = values({1, 2}).requires_grad_(true);
  Tensor y = PassDouble::apply(x);
  EXPECT_FALSE(y.is_same(x));
  EXPECT_TRUE(x.is_leaf());
  EXPECT_FALSE(y.is_leaf());
  (y * 3).sum().backward();
  expect_close(x.grad(), values({6, 6}), 0, 0);
}

TEST(CustomFunction, TensorListArgument) {
  Tensor a = values({1, 2}).requires_grad_(true), b = values({3, 4}), c = values({5, 6}).requires_grad_(true);
  Tensor y = SumList::apply(std::vector<Tensor>{a, b, c}, 0.5);
  expect_close(y, values({4.5, 6}), 0, 0);
  y.sum().backward();
  expect_close(a.grad(), values({0.5, 0.5}), 0, 0);
  expect_close(c.grad(), values({0.5, 0.5}), 0, 0);
  EXPECT_FALSE(b.grad().defined());
}

TEST(CustomFunction, BadGradientsRaiseNamingTheFunction) {
  auto run = [](int mode) {
    Bad::mode = mode;
    Tensor x = fw::ones({4, 3}, fw::kDouble).requires_grad_(true);
    std::string e = error_of([&] { Bad::apply(x, 1.0).sum().backward(); });
    return std::make_pair(e, x.grad());
  };
  auto [e0, g0] = run(0);
  EXPECT_NE(e0.find("incorrect number of gradients (expected 2, got 1)"), std::string::npos) << e0;
  EXPECT_NE(e0.find("Bad"), std::string::npos) << e0;
  auto [e1, g1] = run(1);
  EXPECT_NE(e1.find("forward input was not a Variable"), std::string::npos) << e1;
  auto [e2, g2] = run(2);
  EXPECT_NE(e2.find("invalid gradient at index 0 - got [7] but expected shape compatible with [4, 3]"),
            std::string::npos)
      << e2;
  auto [e3, g3] = run(3);
  EXPECT_EQ(e3, "");
  expect_close(g3, fw::full({4, 3}, 4.0, fw::kDouble), 0, 0);  // [1, 3] of 4s expanded, summed back
  auto [e4, g4] = run(4);
  EXPECT_EQ(e4, "");
  expect_close(g4, fw::ones({4, 3}, fw::kDouble), 0, 0);
}

TEST(CustomFunction, ExceptionInForwardRestoresGradMode) {
  struct Throws : Function<Throws> {
    static Tensor forward(AutogradContext*, Tensor) { throw std::runtime_error("boom"); }
    static variable_list backward(AutogradContext*, variable_list g) { return g; }
  };
  Tensor x = values({1}).requires_grad_(true);
  EXPECT_EQ(error_of([&] { Throws::apply(x); }), "boom");
  EXPECT_TRUE(fw::is_grad_enabled());
  EXPECT_TRUE((x * 2).requires_grad());
}

TEST(CustomFunction, CompiledFunctionsUseTheCustomBackward) {
  // Straight-through rounding inside a compiled function: the gradient is the custom one (1),
  // not round()'s (0), on every backend, and the call is reported as a graph break.
  for (const char* backend : {"eager", "aot_eager", "inductor"}) {
    auto f = fw::compile(
        [](const Tensor& x, const Tensor& w) {
          Tensor h = (x * w).sin();
          Tensor r = RoundSTE::apply(h * 4);
          return (r * r + h).sum();
        },
        fw::CompileOptions().backend(backend));
    for (int call = 0; call < 2; call++) {
      Tensor x = values({0.3, -0.7, 1.1}), w = values({2, 1.5, -1}).requires_grad_(true);
      Tensor we = w.detach().clone().requires_grad_(true);
      Tensor he = (x * we).sin();
      Tensor re = RoundSTE::apply(he * 4);
      Tensor le = (re * re + he).sum();
      le.backward();
      Tensor l = f(x, w);
      expect_close(l, le.detach(), 1e-12, 0);
      l.backward();
      expect_close(w.grad(), we.grad(), 1e-12, 0);
      // d/dw of r^2 + h with dr/dh = 4 (straight through): (8 r + 1) cos(x w) x.
      Tensor expect = (8 * re.detach() + 1) * (x * w.detach()).cos() * x;
      expect_close(w.grad(), expect, 1e-12, 0);
    }
  }
  auto strict = fw::compile([](const Tensor& x) { return RoundSTE::apply(x * 2).sum(); },
                            fw::CompileOptions().fullgraph(true));
  std::string e = error_of([&] { strict(values({0.4})); });
  EXPECT_NE(e.find("graph break in fullgraph mode at (anonymous namespace)::RoundSTE: a custom autograd Function runs eagerly"), std::string::npos) << e;
}

TEST(CustomFunction, IValueKinds) {
  fw::IValue none, d(2.5), i(int64_t(3)), small(7), b(true), s("name"), il(std::vector<int64_t>{1, 2}),
      dl(std::vector<double>{0.5}), t(values({1})), tl(std::vector<Tensor>{values({1}), values({2})});
  EXPECT_TRUE(none.isNone());
  EXPECT_EQ(d.toDouble(), 2.5);
  EXPECT_EQ(i.toInt(), 3);
  EXPECT_EQ(small.toInt(), 7);
  EXPECT_TRUE(b.toBool());
  EXPECT_EQ(s.toStringRef(), "name");
  EXPECT_EQ(il.toIntVector(), (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(dl.toDoubleVector(), (std::vector<double>{0.5}));
  EXPECT_EQ(t.toTensor().item<double>(), 1.0);
  EXPECT_EQ(tl.toTensorVector().size(), 2u);
  EXPECT_TRUE(d.isScalar() && i.isScalar() && !s.isScalar());
  EXPECT_EQ(i.toScalar().to<int64_t>(), 3);
  std::string e = error_of([&] { i.toDouble(); });
  EXPECT_EQ(e, "[IValue] expected Double but got Int");
  e = error_of([&] { none.toTensor(); });
  EXPECT_EQ(e, "[IValue] expected Tensor but got None");
}

TEST(TensorHooks, RemoveHook) {
  Tensor x = values({1, 2}).requires_grad_(true);
  Tensor y = x * 3;
  unsigned h1 = y.register_hook([](const Tensor& g) { return g * 10; });
  unsigned h2 = y.register_hook([](const Tensor& g) { return g + 1; });
  y.remove_hook(h1);
  y.sum().backward();
  expect_close(x.grad(), values({6, 6}), 0, 0);  // (1 + 1) * 3, the x10 hook removed
  std::string e = error_of([&] { y.remove_hook(h1); });
  EXPECT_NE(e.find("[remove_hook] Invalid index 0"), std::string::npos) << e;
  e = error_of([&] { y.remove_hook(h2 + 5); });
  EXPECT_NE(e.find("[remove_hook] Invalid index 6"), std::string::npos) << e;
  // On a leaf.
  Tensor w = values({1, 1}).requires_grad_(true);
  unsigned hl = w.register_hook([](const Tensor& g) { return g * 100; });
  w.remove_hook(hl);
  (w * 2).sum().backward();
  expect_close(w.grad(), values({2, 2}), 0, 0);
}

TEST(TensorHooks, MutableGrad) {
  Tensor p = values({1, 2}).requires_grad_(true);
  EXPECT_FALSE(p.mutable_grad().defined());
  p.mutable_grad() = values({5, 6});
  expect_close(p.grad(), values({5, 6}), 0, 0);
  (p * 2).sum().backward();
  expect_close(p.grad(), values({7, 8}), 0, 0);  // accumulates into the assigned gradient
  p.mutable_grad().zero_();
  expect_close(p.grad(), values({0, 0}), 0, 0);
  Tensor& g = p.mutable_grad();
  g = Tensor();
  EXPECT_FALSE(p.grad().defined());
}
