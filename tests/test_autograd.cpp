// Autograd: engine semantics, error messages, hooks, higher order, and gradcheck of every
// differentiable op of the core families (the other families check theirs in their own files).
#include <gtest/gtest.h>

#include "tests/fixture.h"

using fw::Tensor;
using fw::autograd::variable_list;

namespace {

Tensor leaf(std::vector<int64_t> shape, double lo = -2, double hi = 2, uint64_t seed = 3) {
  fw::manual_seed(seed);
  return (fw::rand(shape, fw::kDouble) * (hi - lo) + lo).requires_grad_(true);
}

// gradcheck and gradgradcheck of fn at inputs; failures name the case.
void check(const std::string& name, const std::function<variable_list(const variable_list&)>& fn,
           const variable_list& inputs) {
  try {
    EXPECT_TRUE(fw::autograd::gradcheck(fn, inputs)) << name;
    EXPECT_TRUE(fw::autograd::gradgradcheck(fn, inputs)) << name;
  } catch (const std::exception& e) {
    ADD_FAILURE() << name << ": " << e.what();
  }
}

void check_unary(const char* name, Tensor (*f)(const Tensor&), double lo, double hi) {
  Tensor x = leaf({2, 3}, lo, hi);
  check(name, [f](const variable_list& v) { return variable_list{f(v[0])}; }, {x});
}

}  // namespace

TEST(Autograd, UnaryOpsPassGradcheck) {
  struct U { const char* n; Tensor (*f)(const Tensor&); double lo, hi; };
  for (U u : std::vector<U>{
           {"exp", fw::exp, -2, 2}, {"exp2", fw::exp2, -2, 2}, {"expm1", fw::expm1, -2, 2}, {"log", fw::log, 0.5, 3},
           {"log2", fw::log2, 0.5, 3}, {"log10", fw::log10, 0.5, 3}, {"log1p", fw::log1p, -0.5, 3},
           {"sqrt", fw::sqrt, 0.5, 3}, {"rsqrt", fw::rsqrt, 0.5, 3}, {"abs", fw::abs, 0.2, 2}, {"neg", fw::neg, -2, 2},
           {"frac", fw::frac, 0.1, 0.9}, {"reciprocal", fw::reciprocal, 0.5, 2}, {"sin", fw::sin, -2, 2},
           {"cos", fw::cos, -2, 2}, {"tan", fw::tan, -1, 1}, {"asin", fw::asin, -0.8, 0.8}, {"acos", fw::acos, -0.8, 0.8},
           {"atan", fw::atan, -2, 2}, {"sinh", fw::sinh, -2, 2}, {"cosh", fw::cosh, -2, 2}, {"tanh", fw::tanh, -2, 2},
           {"sigmoid", fw::sigmoid, -3, 3}, {"erf", fw::erf, -2, 2}, {"erfc", fw::erfc, -2, 2}, {"relu", fw::relu, 0.1, 2},
           {"silu", fw::silu, -3, 3}, {"mish", fw::mish, -3, 3}, {"log_sigmoid", fw::log_sigmoid, -3, 3},
           {"square", fw::square, -2, 2}, {"lgamma", fw::lgamma, 0.3, 4}, {"digamma", fw::digamma, 0.3, 4},
           {"erfinv", fw::erfinv, -0.8, 0.8}, {"asinh", fw::asinh, -2, 2}, {"acosh", fw::acosh, 1.2, 3},
           {"atanh", fw::atanh, -0.8, 0.8}}) {
    check_unary(u.n, u.f, u.lo, u.hi);
  }
}

TEST(Autograd, PolygammaPassesGradcheck) {
  for (int64_t n : {0, 1, 2}) {
    Tensor x = leaf({2, 3}, 0.4, 4);
    check("polygamma", [n](const variable_list& v) { return variable_list{fw::polygamma(n, v[0])}; }, {x});
  }
}

TEST(Autograd, ParametrisedActivationsPassGradcheck) {
  Tensor x = leaf({7}, -2.7, 2.7);
  std::vector<std::function<Tensor(const Tensor&)>> fs = {
      [](const Tensor& t) { return fw::gelu(t); },
      [](const Tensor& t) { return fw::gelu(t, "tanh"); },
      [](const Tensor& t) { return fw::elu(t, 0.7, 1.3, 0.9); },
      [](const Tensor& t) { return fw::leaky_relu(t, 0.1); },
      [](const Tensor& t) { return fw::hardtanh(t, -1.1, 1.3); },
      [](const Tensor& t) { return fw::softplus(t, 2, 3); },
      [](const Tensor& t) { return fw::hardsigmoid(t); },
      [](const Tensor& t) { return fw::hardswish(t); },
      [](const Tensor& t) { return fw::clamp(t, -1.1, 0.9); },
      [](const Tensor& t) { return fw::logit(fw::sigmoid(t), 0.1); },
      [](const Tensor& t) { return fw::nan_to_num(t); },
  };
  for (size_t i = 0; i < fs.size(); i++)
    check("activation " + std::to_string(i), [&](const variable_list& v) { return variable_list{fs[i](v[0])}; }, {x});
}

TEST(Autograd, BinaryOpsPassGradcheckWithBroadcasting) {
  Tensor a = leaf({3, 1}, 0.5, 2, 5), b = leaf({1, 4}, 0.5, 2, 6);
  using B = std::function<Tensor(const Tensor&, const Tensor&)>;
  std::vector<std::pair<const char*, B>> fs = {
      {"add", [](const Tensor& x, const Tensor& y) { return fw::add(x, y, 2.5); }},
      {"sub", [](const Tensor& x, const Tensor& y) { return fw::sub(x, y, 0.5); }},
      {"mul", [](const Tensor& x, const Tensor& y) { return x * y; }},
      {"div", [](const Tensor& x, const Tensor& y) { return x / y; }},
      {"pow", [](const Tensor& x, const Tensor& y) { return fw::pow(x, y); }},
      {"atan2", [](const Tensor& x, const Tensor& y) { return fw::atan2(x, y); }},
      {"maximum", [](const Tensor& x, const Tensor& y) { return fw::maximum(x, y * 1.3); }},
      {"minimum", [](const Tensor& x, const Tensor& y) { return fw::minimum(x, y * 1.3); }},
      {"fmax", [](const Tensor& x, const Tensor& y) { return fw::fmax(x, y * 1.3); }},
      {"fmin", [](const Tensor& x, const Tensor& y) { return fw::fmin(x, y * 1.3); }},
      {"hypot", [](const Tensor& x, const Tensor& y) { return fw::hypot(x, y); }},
      {"xlogy", [](const Tensor& x, const Tensor& y) { return fw::xlogy(x, y); }},
      {"remainder", [](const Tensor& x, const Tensor& y) { return fw::remainder(x * 3, y); }},
      {"fmod", [](const Tensor& x, const Tensor& y) { return fw::fmod(x * 3, y); }},
      {"copysign", [](const Tensor& x, const Tensor& y) { return fw::copysign(x, y - 1.25); }},
      {"lerp", [](const Tensor& x, const Tensor& y) { return fw::lerp(x, y, 0.3); }},
      {"lerp_t", [](const Tensor& x, const Tensor& y) { return fw::lerp(x, y, fw::sigmoid(x * y)); }},
      {"where", [](const Tensor& x, const Tensor& y) { return fw::where(x > y, x, y * 2); }},
      {"clamp_t", [](const Tensor& x, const Tensor& y) { return fw::clamp(x * y, std::optional<Tensor>(x), std::optional<Tensor>(y + 1)); }},
      {"addcmul", [](const Tensor& x, const Tensor& y) { return fw::addcmul(x, x, y, 0.5); }},
      {"addcdiv", [](const Tensor& x, const Tensor& y) { return fw::addcdiv(y, x, y, 2); }},
      {"scalar_ops", [](const Tensor& x, const Tensor& y) { return (x * 2 + 1) / 3 - y.pow(2) + fw::pow(x, 1.5); }},
  };
  for (auto& [n, f] : fs) check(n, [f = f](const variable_list& v) { return variable_list{f(v[0], v[1])}; }, {a, b});
}

TEST(Autograd, ShapeOpsPassGradcheck) {
  Tensor x = leaf({2, 3, 4});
  using F = std::function<Tensor(const Tensor&)>;
  std::vector<std::pair<const char*, F>> fs = {
      {"view", [](const Tensor& t) { return t.view({4, 6}) * fw::arange(6, fw::kDouble); }},
      {"permute", [](const Tensor& t) { return t.permute({2, 0, 1}).contiguous() * fw::arange(3, fw::kDouble); }},
      {"expand", [](const Tensor& t) { return t.select(2, 0).unsqueeze(0).expand({3, 2, 3}); }},
      {"slice", [](const Tensor& t) { return t.slice(2, 1, 4, 2); }},
      {"select", [](const Tensor& t) { return t.select(1, -1) * 3; }},
      {"squeeze", [](const Tensor& t) { return t.narrow(0, 0, 1).squeeze(0); }},
      {"cat", [](const Tensor& t) { return fw::cat({t, t * 2, t.slice(1, 0, 1)}, 1); }},
      {"stack", [](const Tensor& t) { return fw::stack({t, t.exp()}, 0); }},
      {"index_t", [](const Tensor& t) { return t.transpose(0, 2).reshape({-1}).slice(0, 3, 20, 3); }},
      {"to_float", [](const Tensor& t) { return t.to(fw::kFloat).to(fw::kDouble) * 0 + t; }},
  };
  for (auto& [n, f] : fs) check(n, [f = f](const variable_list& v) { return variable_list{f(v[0])}; }, {x});
}

TEST(Autograd, BackwardAccumulatesIntoLeaves) {
  Tensor x = fw::tensor({1.0, 2.0, 3.0}).requires_grad_();
  Tensor y = (x * x).sum();
  y.backward();
  FW_EXPECT_CLOSE(x.grad(), fw::tensor({2.0f, 4.0f, 6.0f}));
  (x * 3).sum().backward();
  FW_EXPECT_CLOSE(x.grad(), fw::tensor({5.0f, 7.0f, 9.0f}));
  EXPECT_TRUE(x.is_leaf());
  EXPECT_FALSE(y.is_leaf());
  EXPECT_EQ(y.grad_fn()->name(), "SumBackward0");
  x.grad().zero_();
  EXPECT_EQ(x.grad().sum().item<float>(), 0.0f);
}

TEST(Autograd, GradFunctionAndHigherOrder) {
  Tensor x = fw::tensor({0.5, -1.0}, fw::kDouble).requires_grad_();
  Tensor y = (x * x * x).sum();
  auto g = fw::autograd::grad({y}, {x}, {}, std::nullopt, /*create_graph=*/true);
  FW_EXPECT_CLOSE(g[0], fw::tensor({0.75, 3.0}, fw::kDouble));
  EXPECT_FALSE(x.grad().defined());  // grad() does not accumulate
  auto g2 = fw::autograd::grad({g[0].sum()}, {x});
  FW_EXPECT_CLOSE(g2[0], fw::tensor({3.0, -6.0}, fw::kDouble));
  Tensor z = fw::ones({2}).requires_grad_();
  EXPECT_THROW(fw::autograd::grad({(x * 2).sum()}, {z}), fw::Error);
  auto u = fw::autograd::grad({(x * 2).sum()}, {z}, {}, std::nullopt, false, /*allow_unused=*/true);
  EXPECT_FALSE(u[0].defined());
}

// masked_fill_ writes where(mask, v, self) into self; where's gradient needs only the mask, so
// backward through it works, as in PyTorch (found by a bug hunt: it raised a version error).
TEST(Autograd, MaskedFillInPlaceKeepsTheGraphValid) {
  Tensor x = fw::tensor({-1.0, -0.25, 0.5, 2.0}, fw::kDouble).requires_grad_();
  Tensor y = fw::tensor({1.0, 2.0, 3.0, 4.0}, fw::kDouble);
  Tensor h = x.clone();
  h.masked_fill_(h < -0.5, 0.0);
  (h * y).sum().backward();
  EXPECT_TRUE(fw::equal(x.grad(), fw::tensor({0.0, 2.0, 3.0, 4.0}, fw::kDouble))) << x.grad();
}

TEST(Autograd, ErrorsNameTheProblem) {
  Tensor x = fw::ones({3}).requires_grad_();
  Tensor h = x * 2;
  Tensor y = h.exp();  // saves its output
  y.mul_(2);
  try {
    y.sum().backward();
    FAIL() << "expected an error";
  } catch (const fw::Error& e) {
    EXPECT_NE(std::string(e.what()).find("modified by an in-place operation (mul_)"), std::string::npos) << e.what();
  }
  Tensor s = (x * x).sum();
  s.backward();
  EXPECT_THROW(s.backward(), fw::Error);  // graph freed (mul saved x)
  EXPECT_THROW(x.mul_(2), fw::Error);     // leaf that requires grad
  EXPECT_THROW((x * 2).backward(), fw::Error);  // non-scalar without gradient
  EXPECT_THROW(fw::ones({2}).sum().backward(), fw::Error);  // nothing requires grad
  EXPECT_THROW(x.select(0, 1).mul_(3), fw::Error);  // a view of a leaf that requires grad
  // A view of a non-leaf is fine: the write enters the base's history (test_autograd_views.cpp).
  Tensor z = fw::tensor({1.0, 2.0}, fw::kDouble).requires_grad_();
  Tensor b = z * 1;
  b.select(0, 1).mul_(3);
  b.sum().backward();
  EXPECT_TRUE(fw::allclose(z.grad(), fw::tensor({1.0, 3.0}, fw::kDouble)));
}

TEST(Autograd, InPlaceOnNonLeafKeepsTheGraph) {
  Tensor x = fw::tensor({1.0, 2.0}, fw::kDouble).requires_grad_();
  Tensor y = x * 3;
  y.add_(x);
  y.mul_(y);  // y = (4x)^2
  y.sum().backward();
  FW_EXPECT_CLOSE(x.grad(), fw::tensor({32.0, 64.0}, fw::kDouble));
}

TEST(Autograd, HooksAndRetainGrad) {
  Tensor x = fw::tensor({1.0, 2.0}).requires_grad_();
  Tensor h = x * 2;
  h.retain_grad();
  h.register_hook([](const Tensor& g) { return g * 10; });
  int leaf_calls = 0;
  x.register_hook([&](const Tensor&) { leaf_calls++; });
  (h * h).sum().backward();
  FW_EXPECT_CLOSE(x.grad(), fw::tensor({80.0f, 160.0f}));
  EXPECT_EQ(leaf_calls, 1);
  EXPECT_TRUE(h.grad().defined());
}

TEST(Autograd, NoGradAndDetach) {
  Tensor x = fw::ones({2}).requires_grad_();
  {
    fw::NoGradGuard ng;
    EXPECT_FALSE((x * 2).requires_grad());
  }
  {
    fw::InferenceMode im;
    EXPECT_FALSE((x * 2).requires_grad());
  }
  EXPECT_TRUE((x * 2).requires_grad());
  EXPECT_FALSE((x * 2).detach().requires_grad());
  EXPECT_FALSE((x > 0).requires_grad());  // comparisons are not differentiable
}

TEST(Autograd, AnomalyModeNamesTheNode) {
  Tensor x = fw::tensor({0.0, 1.0}, fw::kDouble).requires_grad_();
  fw::autograd::DetectAnomalyGuard guard;
  Tensor y = fw::sqrt(x) * 0;
  try {
    y.sum().backward();
    FAIL() << "expected an error";
  } catch (const fw::Error& e) {
    EXPECT_NE(std::string(e.what()).find("SqrtBackward0"), std::string::npos) << e.what();
  }
}

TEST(Autograd, GradcheckCatchesAWrongGradient) {
  Tensor x = leaf({3});
  // A hook that corrupts the gradient must make gradcheck fail.
  auto fn = [](const variable_list& v) {
    Tensor y = v[0] * 2;
    y.register_hook([](const Tensor& g) { return g * 1.5; });
    return variable_list{y};
  };
  EXPECT_FALSE(fw::autograd::gradcheck(fn, {x}, 1e-6, 1e-5, 1e-3, /*raise=*/false));
  EXPECT_THROW(fw::autograd::gradcheck(fn, {x}), fw::Error);
}

TEST(Autograd, ComplexAndStridedOpsPassGradcheck) {
  Tensor a = leaf({3}, 0.5, 2, 11), t = leaf({3}, -1, 1, 12);
  // complex64 intermediates (float32 parts): compare with a float64 reference through the same
  // real-valued function instead of finite differences (complex128 gets gradcheck below).
  auto f = [](const Tensor& x, const Tensor& y) {
    Tensor z = fw::polar(x.to(fw::kFloat), y.to(fw::kFloat));
    Tensor w = fw::complex(fw::real(z) * 2, fw::imag(z) + 1);
    Tensor v = fw::view_as_complex(fw::view_as_real(w) * 3);
    return (fw::angle(v) + fw::real(v) * fw::imag(v)).sum();
  };
  auto ref = [](const Tensor& x, const Tensor& y) {
    Tensor re = x * fw::cos(y) * 2 * 3, im = (x * fw::sin(y) + 1) * 3;
    return (fw::atan2(im, re) + re * im).sum();
  };
  auto g = fw::autograd::grad({f(a, t)}, {a, t});
  auto gr = fw::autograd::grad({ref(a, t)}, {a, t});
  FW_EXPECT_CLOSE(g[0], gr[0].to(fw::kDouble), 1e-4, 1e-4);
  FW_EXPECT_CLOSE(g[1], gr[1].to(fw::kDouble), 1e-4, 1e-4);
  Tensor x = leaf({6});
  check("as_strided overlapping windows", [](const variable_list& v) {
    return variable_list{v[0].as_strided({3, 3}, {1, 1}, 1) * fw::arange(9, fw::kDouble).view({3, 3})};
  }, {x});
  // as_strided of an expanded view: each storage position is shared by three input elements, and
  // each gets a third of its gradient (PyTorch 1.13 gives x.grad = [0, 1, 10, 100] here; counting
  // the position once per alias would give three times that).
  Tensor x4 = leaf({4});
  auto of_expanded = [](const variable_list& v) {
    return variable_list{v[0].view({2, 2}).unsqueeze(1).expand({2, 3, 2}).as_strided({3}, {1}, 1) *
                         fw::tensor({1.0, 10.0, 100.0}).to(fw::kDouble)};
  };
  check("as_strided of an expanded view", of_expanded, {x4});
  Tensor gx = fw::autograd::grad({of_expanded({x4})[0].sum()}, {x4})[0];
  FW_EXPECT_CLOSE(gx, fw::tensor({0.0, 1.0, 10.0, 100.0}).to(fw::kDouble), 0, 0);
}

// complex128 intermediates between float64 inputs and outputs: gradcheck compares with finite
// differences directly, which checks PyTorch's convention (grad = dL/dRe + i dL/dIm, vjps
// multiply by conjugates) for every op on the way.
TEST(Autograd, Complex128PassesGradcheck) {
  Tensor a = leaf({3}, 0.5, 2, 31), b = leaf({3}, -1, 1, 32);
  using F = std::function<variable_list(const variable_list&)>;
  std::vector<std::pair<const char*, F>> cases = {
      {"complex, view_as_real", [](const variable_list& v) {
         Tensor z = fw::complex(v[0], v[1]);
         EXPECT_EQ(z.dtype(), fw::kComplexDouble);
         return variable_list{fw::view_as_real(z)};
       }},
      {"view_as_complex of a float64 pair", [](const variable_list& v) {
         Tensor z = fw::view_as_complex(fw::stack({v[0], v[1]}, -1));
         return variable_list{fw::view_as_real(z * 3), fw::real(z) - fw::imag(z)};
       }},
      {"real to complex128 cast", [](const variable_list& v) {
         Tensor z = v[0].to(fw::kComplexDouble) + fw::complex(fw::zeros_like(v[1]), v[1]);
         return variable_list{fw::view_as_real(z), fw::real(z.to(fw::kComplexDouble) * 2)};
       }},
      {"mul, div, add/sub with complex alpha", [](const variable_list& v) {
         Tensor z = fw::complex(v[0], v[1]), w = fw::complex(v[1], v[0] + 1);
         Tensor r = fw::add(z * w, z / w, std::complex<double>(0.5, -2));
         return variable_list{fw::view_as_real(fw::sub(r, w, std::complex<double>(1, 1)) * std::complex<double>(0, 3))};
       }},
      {"float64 tensor with complex scalars", [](const variable_list& v) {
         return variable_list{fw::view_as_real(v[0] * std::complex<double>(0.5, 2) - v[1] / std::complex<double>(1, -1))};
       }},
      {"exp, log, sqrt, reciprocal", [](const variable_list& v) {
         Tensor z = fw::complex(v[0], v[1]);
         return variable_list{fw::view_as_real(fw::exp(z) + fw::log(z) + fw::sqrt(z) + fw::reciprocal(z))};
       }},
      {"sin, cos, tan, sinh, cosh, tanh", [](const variable_list& v) {
         Tensor z = fw::complex(v[0] * 0.5, v[1] * 0.5);
         return variable_list{
             fw::view_as_real(fw::sin(z) + fw::cos(z) + fw::tan(z) + fw::sinh(z) + fw::cosh(z) + fw::tanh(z))};
       }},
      {"polar, abs, angle, conj", [](const variable_list& v) {
         Tensor z = fw::polar(v[0], v[1]);
         return variable_list{fw::abs(z * z + 1), fw::angle(z), fw::view_as_real(fw::conj(z) * z.neg())};
       }},
      {"sum, mean, matmul, dot", [](const variable_list& v) {
         Tensor z = fw::complex(v[0], v[1]), w = fw::complex(v[1], v[0]);
         Tensor m = fw::matmul(z.view({3, 1}), w.view({1, 3}));
         return variable_list{fw::view_as_real(m.sum({0}) + m.mean() + fw::dot(z, w))};
       }},
  };
  for (auto& [name, fn] : cases) check(name, fn, {a, b});
}

TEST(Autograd, TransposedWeightGradIsContiguous) {
  Tensor x = leaf({4, 3}, -1, 1, 21), w = leaf({5, 3}, -1, 1, 22), b = leaf({5}, -1, 1, 23);
  fw::addmm(b, x, w.t()).pow(2).sum().backward();
  Tensor y = fw::addmm(b, x, w.t()).detach();
  Tensor expect_w = fw::mm((y * 2).t(), x.detach());
  EXPECT_TRUE(w.grad().is_contiguous());
  FW_EXPECT_CLOSE(w.grad(), expect_w);
  FW_EXPECT_CLOSE(x.grad(), fw::mm(y * 2, w.detach()));
  FW_EXPECT_CLOSE(b.grad(), (y * 2).sum({0}));
}

TEST(Autograd, GradcheckTakesNonContiguousInputs) {
  Tensor base = leaf({4, 3});
  Tensor xt = base.detach().t().requires_grad_(true);  // a leaf with transposed strides
  ASSERT_FALSE(xt.is_contiguous());
  check("transposed leaf", [](const variable_list& v) { return variable_list{(v[0] * v[0]).cumsum(1)}; }, {xt});
}

TEST(Autograd, RetainGradDoesNotKeepItsTensorAlive) {
  Tensor x = fw::ones({3}).requires_grad_();
  Tensor y = x * 2;
  {
    Tensor h = x * 3;
    h.retain_grad();
    y = y + h;
  }
  // h is gone while its node lives on in y's graph: the hook must neither keep h alive nor
  // touch its freed autograd fields.
  y.sum().backward();
  FW_EXPECT_CLOSE(x.grad(), fw::full({3}, 5.0f));
}
