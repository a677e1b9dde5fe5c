// The functions of include/fw/special_fns.h against PyTorch 1.13 (tests/fixtures/gen_special.py):
// values in float32 and float64 over each domain (zeros, poles, tails, infinities, NaN), integer
// promotion, broadcasting and Scalar overloads, gradients of sum(y * g); then gradcheck and
// gradgradcheck of the differentiable ones, the gradients PyTorch does not implement, dtype
// errors, and binomial sampling checked statistically.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <sstream>

#include <fw/fw.h>
#include <fw/special_fns.h>

#include "tests/expect_error.h"
#include "tests/fixture.h"
#include "tests/records.h"

using fw::Tensor;
using Case = fwtest::RecordCase;
namespace sp = fw::special;

namespace {

using Unary = std::function<Tensor(const Tensor&)>;
using Binary = std::function<Tensor(const Tensor&, const Tensor&)>;

const std::map<std::string, Unary>& unary_table() {
  static const std::map<std::string, Unary> t = {
      {"i0", [](const Tensor& x) { return fw::i0(x); }},
      {"i0e", sp::i0e},
      {"i1", sp::i1},
      {"i1e", sp::i1e},
      {"log_ndtr", sp::log_ndtr},
      {"ndtri", sp::ndtri},
      {"erfcx", sp::erfcx},
      {"bessel_j0", sp::bessel_j0},
      {"bessel_j1", sp::bessel_j1},
      {"bessel_y0", sp::bessel_y0},
      {"bessel_y1", sp::bessel_y1},
      {"modified_bessel_i0", sp::modified_bessel_i0},
      {"modified_bessel_i1", sp::modified_bessel_i1},
      {"modified_bessel_k0", sp::modified_bessel_k0},
      {"modified_bessel_k1", sp::modified_bessel_k1},
      {"scaled_modified_bessel_k0", sp::scaled_modified_bessel_k0},
      {"scaled_modified_bessel_k1", sp::scaled_modified_bessel_k1},
      {"spherical_bessel_j0", sp::spherical_bessel_j0},
      {"airy_ai", sp::airy_ai},
  };
  return t;
}

const std::map<std::string, Binary>& binary_table() {
  static const std::map<std::string, Binary> t = {
      {"zeta", [](const Tensor& a, const Tensor& b) { return sp::zeta(a, b); }},
      {"gammainc", [](const Tensor& a, const Tensor& b) { return sp::gammainc(a, b); }},
      {"gammaincc", [](const Tensor& a, const Tensor& b) { return fw::igammac(a, b); }},
  };
  return t;
}

// Tolerances against PyTorch's values (relative, absolute). The kernels follow PyTorch's
// algorithms and, for float32, its float arithmetic, so values agree to a few ulp (most bit for
// bit); the slack covers a build that fuses multiply-adds differently. The regularized gamma
// functions are in [0, 1] and some come from 1 - (the other), so their error is absolute; the
// float32 Bessel functions sit on ill-conditioned evaluations (float's x - pi/4 at large x).
std::pair<double, double> tolerance(const std::string& fn, fw::ScalarType t) {
  const bool f64 = t == fw::kDouble;
  if (fn == "gammainc" || fn == "gammaincc") return f64 ? std::make_pair(1e-12, 4e-15) : std::make_pair(4e-6, 1e-6);
  if (fn.rfind("bessel_", 0) == 0 && !f64) return {4e-6, 2e-6};
  // Ai oscillates for x << 0 with a phase of 2/3 |x|^1.5 (2600 at x = -250): errors are
  // relative to its amplitude, not to its value near a zero.
  if (fn == "airy_ai") return f64 ? std::make_pair(1e-12, 1e-14) : std::make_pair(4e-6, 2e-6);
  return f64 ? std::make_pair(1e-12, 1e-300) : std::make_pair(4e-6, 1e-37);
}

void expect_close(const Tensor& got, const Tensor& want, const std::string& fn) {
  auto [rtol, atol] = tolerance(fn, want.dtype());
  FW_EXPECT_CLOSE(got, want, rtol, atol);
}

// Gradients: |got - want| <= rtol |want| + 8 eps * scale, scale (>= 0, per element) the size
// of the terms the gradient formula adds or subtracts (times |g|), so that a cancellation -
// i0e' = i1e - sgn(x) i0e at large |x|, erfcx' = 2 x erfcx - 2 / sqrt(pi), the exponent of
// igamma' - is held to the accuracy its inputs allow. Non-finite values must agree exactly.
void expect_grad_close(const Tensor& got, const Tensor& want, const Tensor& scale) {
  ASSERT_EQ(got.dtype(), want.dtype());
  ASSERT_EQ(got.sizes().vec(), want.sizes().vec());
  const double eps = want.dtype() == fw::kDouble ? 2.220446049250313e-16 : 1.1920928955078125e-07;
  const double rtol = want.dtype() == fw::kDouble ? 1e-12 : 4e-6;
  auto flat = [](const Tensor& t) { return t.detach().to(fw::kDouble).contiguous().reshape({-1}); };
  Tensor a = flat(got), e = flat(want), s = flat(scale.expand(want.sizes()));
  const double *pa = a.data_ptr<double>(), *pe = e.data_ptr<double>(), *ps = s.data_ptr<double>();
  int bad = 0;
  std::ostringstream os;
  for (int64_t i = 0; i < a.numel(); i++) {
    const double x = pa[i], y = pe[i];
    bool ok = (std::isnan(x) && std::isnan(y)) || x == y;
    if (!ok && std::isfinite(x) && std::isfinite(y)) {
      const double bound = rtol * std::abs(y) + 8 * eps * (std::isfinite(ps[i]) ? ps[i] : 0);
      ok = std::abs(x - y) <= bound;
    }
    if (!ok && bad++ < 5) os << "at " << i << ": " << x << " vs expected " << y << " (scale " << ps[i] << "); ";
  }
  EXPECT_EQ(bad, 0) << os.str();
}

// The scale of expect_grad_close for fn's gradient at x (times |g|), in float64.
Tensor grad_scale(const std::string& fn, const Tensor& x_in, const Tensor& g, const Tensor& want) {
  fw::NoGradGuard no_grad;
  const Tensor x = x_in.to(fw::kDouble), w = want.to(fw::kDouble).abs(), ag = g.to(fw::kDouble).abs();
  const Tensor ax = x.abs();
  if (fn == "i0") return ag * sp::i1(x).abs();
  if (fn == "i0e") return ag * (sp::i1e(x).abs() + sp::i0e(x).abs());
  if (fn == "i1") return ag * (sp::i0(x) + fw::where(ax > 0, sp::i1(x).abs() / ax, fw::ones_like(x)));
  if (fn == "i1e") return ag * (sp::i0e(x) + fw::where(ax > 0, sp::i1e(x).abs() * (1 + 1 / ax), fw::ones_like(x)));
  if (fn == "log_ndtr") return w * (1 + sp::log_ndtr(x).abs() + x * x);
  if (fn == "ndtri") return w * (1 + sp::ndtri(x).square());
  if (fn == "erfcx") return ag * (2 * ax * sp::erfcx(x) + 2 / std::sqrt(M_PI));
  return w;
}

// The same for the gradient of gammainc / gammaincc / zeta in their second argument.
Tensor grad_scale2(const std::string& fn, const Tensor& a_in, const Tensor& x_in, const Tensor& want) {
  fw::NoGradGuard no_grad;
  const Tensor w = want.to(fw::kDouble).abs();
  if (fn == "zeta") return w;
  const Tensor a = a_in.to(fw::kDouble), x = x_in.to(fw::kDouble);
  return w * (1 + ((a - 1) * fw::log(x)).abs() + x.abs() + fw::lgamma(a).abs());
}

fw::Scalar scalar_opt(const Case& c) {
  return c.flag("is_int") ? fw::Scalar(int64_t(c.num("s"))) : fw::Scalar(c.real("s"));
}

}  // namespace

TEST(Special, UnaryMatchesPyTorch) {
  int checked = 0;
  for (const Case& c : fwtest::load_records("special.txt", "unary")) {
    SCOPED_TRACE(c.name);
    const std::string fn = c.opt("fn");
    ASSERT_TRUE(unary_table().count(fn)) << fn;
    Tensor x = c.get("x").clone();
    const bool grad = c.has("grad.x");
    if (grad) x.requires_grad_(true);
    Tensor y = unary_table().at(fn)(x);
    expect_close(y, c.get("y0"), fn);
    if (grad) {
      ASSERT_TRUE(y.requires_grad());
      Tensor gx = fw::autograd::grad({(y * c.get("g")).sum()}, {x})[0];
      SCOPED_TRACE("grad");
      expect_grad_close(gx, c.get("grad.x"), grad_scale(fn, c.get("x"), c.get("g"), c.get("grad.x")));
    } else if (x.is_floating_point() && (fn.find("bessel") != std::string::npos || fn == "airy_ai")) {
      // Not differentiable in PyTorch 1.13: the result does not require grad.
      x.requires_grad_(true);
      EXPECT_FALSE(unary_table().at(fn)(x).requires_grad());
    }
    checked++;
  }
  EXPECT_EQ(checked, 19 * 4);
}

TEST(Special, BinaryMatchesPyTorch) {
  int checked = 0;
  for (const Case& c : fwtest::load_records("special.txt", "binary")) {
    SCOPED_TRACE(c.name);
    const std::string fn = c.opt("fn");
    Tensor a = c.get("a").clone(), b = c.get("b").clone();
    const bool grad = c.has("grad.b");
    if (grad) b.requires_grad_(true);
    Tensor y = binary_table().at(fn)(a, b);
    expect_close(y, c.get("y0"), fn);
    if (grad) {
      Tensor gb = fw::autograd::grad({(y * c.get("g")).sum()}, {b})[0];
      SCOPED_TRACE("grad");
      expect_grad_close(gb, c.get("grad.b"), grad_scale2(fn, c.get("a"), c.get("b"), c.get("grad.b")));
    }
    checked++;
  }
  EXPECT_EQ(checked, 3 + 4 + 2 * (4 + 2));
}

TEST(Special, ScalarOverloadsMatchPyTorch) {
  int checked = 0;
  for (const Case& c : fwtest::load_records("special.txt", "zeta_scalar_x")) {
    SCOPED_TRACE(c.name);
    Tensor q = c.get("b").clone();
    if (c.has("grad.b")) q.requires_grad_(true);
    Tensor y = sp::zeta(scalar_opt(c), q);
    expect_close(y, c.get("y0"), "zeta");
    if (c.has("grad.b"))
      expect_grad_close(fw::autograd::grad({(y * c.get("g")).sum()}, {q})[0], c.get("grad.b"), c.get("grad.b").abs());
    checked++;
  }
  for (const Case& c : fwtest::load_records("special.txt", "zeta_scalar_q")) {
    SCOPED_TRACE(c.name);
    expect_close(sp::zeta(c.get("a"), scalar_opt(c)), c.get("y0"), "zeta");
    checked++;
  }
  for (const Case& c : fwtest::load_records("special.txt", "xlogy_scalar_x")) {
    SCOPED_TRACE(c.name);
    expect_close(sp::xlogy(scalar_opt(c), c.get("b")), c.get("y0"), "xlogy");
    checked++;
  }
  for (const Case& c : fwtest::load_records("special.txt", "xlogy_scalar_y")) {
    SCOPED_TRACE(c.name);
    expect_close(sp::xlogy(c.get("a"), scalar_opt(c)), c.get("y0"), "xlogy");
    checked++;
  }
  EXPECT_EQ(checked, 10);
}

namespace {

struct Poly {
  Tensor (*tt)(const Tensor&, const Tensor&);
  Tensor (*st)(const fw::Scalar&, const Tensor&);
  Tensor (*ts)(const Tensor&, const fw::Scalar&);
};

const std::map<std::string, Poly>& poly_table() {
#define FW_POLY(name) {#name, {sp::name, sp::name, sp::name}}
  static const std::map<std::string, Poly> t = {
      FW_POLY(chebyshev_polynomial_t),         FW_POLY(chebyshev_polynomial_u),
      FW_POLY(chebyshev_polynomial_v),         FW_POLY(chebyshev_polynomial_w),
      FW_POLY(shifted_chebyshev_polynomial_t), FW_POLY(shifted_chebyshev_polynomial_u),
      FW_POLY(shifted_chebyshev_polynomial_v), FW_POLY(shifted_chebyshev_polynomial_w),
      FW_POLY(hermite_polynomial_h),           FW_POLY(hermite_polynomial_he),
      FW_POLY(laguerre_polynomial_l),          FW_POLY(legendre_polynomial_p),
  };
#undef FW_POLY
  return t;
}

// The recurrences run in the dtype, so an element's error is relative to the size of the terms
// it sums (up to |x|^n with n <= 20 here), not to its value near a root: the atol covers a build
// that fuses multiply-adds differently from PyTorch's.
void expect_poly_close(const Tensor& got, const Tensor& want) {
  const bool f64 = want.dtype() == fw::kDouble;
  FW_EXPECT_CLOSE(got, want, f64 ? 1e-12 : 4e-6, f64 ? 1e-12 : 4e-6);
}

}  // namespace

// torch.special's orthogonal polynomials (Note [Orthogonal polynomials]): a grid of x and
// degrees (endpoints, high degrees' closed forms, negative, fractional and NaN inputs) in
// float32 and float64, integer degrees, and the Scalar overloads; not differentiable.
TEST(Special, OrthogonalPolynomialsMatchPyTorch) {
  int checked = 0;
  for (const Case& c : fwtest::load_records("special.txt", "poly")) {
    SCOPED_TRACE(c.name);
    const Poly& f = poly_table().at(c.opt("fn"));
    Tensor x = c.get("a").clone();
    Tensor y = f.tt(x, c.get("b"));
    EXPECT_EQ(y.dtype(), c.get("y0").dtype());
    expect_poly_close(y, c.get("y0"));
    x.requires_grad_(true);
    EXPECT_FALSE(f.tt(x, c.get("b")).requires_grad());
    checked++;
  }
  for (const Case& c : fwtest::load_records("special.txt", "scalar_n_poly")) {
    SCOPED_TRACE(c.name);
    expect_poly_close(poly_table().at(c.opt("fn")).ts(c.get("a"), scalar_opt(c)), c.get("y0"));
    checked++;
  }
  for (const Case& c : fwtest::load_records("special.txt", "scalar_x_poly")) {
    SCOPED_TRACE(c.name);
    Tensor y = poly_table().at(c.opt("fn")).st(scalar_opt(c), c.get("b"));
    EXPECT_EQ(y.dtype(), c.get("y0").dtype());
    expect_poly_close(y, c.get("y0"));
    checked++;
  }
  EXPECT_EQ(checked, 12 * 5);
  // ATen's flat name, and a complex input's error.
  Tensor x = fw::tensor({0.5, 2.0});
  EXPECT_TRUE(fw::equal(fw::special_legendre_polynomial_p(x, fw::tensor({2.0, 2.0})), fw::tensor({-0.125, 5.5})));
  EXPECT_ERROR(sp::hermite_polynomial_h(fw::complex(x, x), x), "[special_hermite_polynomial_h] not implemented");
}

TEST(Special, AliasesAndPromotion) {
  Tensor x = fw::linspace(-12, 12, 25, fw::kDouble);
  EXPECT_TRUE(fw::equal(sp::i0(x), fw::i0(x)));
  EXPECT_TRUE(fw::equal(sp::modified_bessel_i0(x), fw::i0(x)));
  Tensor a = fw::linspace(0.5, 30, 7, fw::kDouble), p = fw::linspace(0.1, 40, 7, fw::kDouble);
  EXPECT_TRUE(fw::equal(sp::gammainc(a, p), fw::igamma(a, p)));
  EXPECT_TRUE(fw::equal(sp::gammaincc(a, p), fw::igammac(a, p)));
  // P + Q = 1.
  FW_EXPECT_CLOSE(fw::igamma(a, p) + fw::igammac(a, p), fw::ones_like(a), 1e-14, 1e-14);
  // bool promotes to the default float dtype, as do integers (float64 when that is the default).
  Tensor b = fw::tensor({true, false});
  EXPECT_EQ(sp::i1(b).dtype(), fw::kFloat);
  FW_EXPECT_CLOSE(sp::erfcx(b), sp::erfcx(fw::tensor({1.0f, 0.0f})));
  fw::set_default_dtype(fw::kDouble);
  Tensor r = sp::ndtri(fw::tensor(std::vector<int64_t>{0, 1}));
  Tensor z = sp::zeta(fw::tensor(std::vector<int64_t>{2}), 1);
  fw::set_default_dtype(fw::kFloat);
  EXPECT_EQ(r.dtype(), fw::kDouble);
  EXPECT_EQ(z.dtype(), fw::kDouble);
  EXPECT_NEAR(z.item<double>(), M_PI * M_PI / 6, 1e-15);
  // bfloat16 where PyTorch's kernels have it (i0, i0e; igamma also float16), computed in float.
  Tensor xb = fw::tensor({0.5f, 3.0f}).to(fw::kBFloat16);
  EXPECT_EQ(fw::i0(xb).dtype(), fw::kBFloat16);
  FW_EXPECT_CLOSE(sp::i0e(xb).to(fw::kFloat), sp::i0e(xb.to(fw::kFloat)).to(fw::kBFloat16).to(fw::kFloat));
  Tensor ah = fw::tensor({1.0f, 2.0f}).to(fw::kHalf);
  EXPECT_EQ(fw::igamma(ah, ah).dtype(), fw::kHalf);
  // Empty and 0-dim inputs.
  EXPECT_EQ(sp::i1(fw::empty({0, 3})).sizes().vec(), (std::vector<int64_t>{0, 3}));
  EXPECT_EQ(sp::zeta(fw::scalar_tensor(2.0), fw::scalar_tensor(1.0)).dim(), 0);
}

TEST(Special, Gradcheck) {
  using V = std::vector<Tensor>;
  auto check = [](const char* name, const std::function<Tensor(const Tensor&)>& f, const Tensor& x) {
    SCOPED_TRACE(name);
    auto g = [&](const V& in) -> V { return {f(in[0])}; };
    Tensor xx = x.detach().clone().requires_grad_(true);
    EXPECT_EQ(fwtest::error_of([&] { EXPECT_TRUE(fw::autograd::gradcheck(g, {xx})); }), "") << "gradcheck";
    EXPECT_EQ(fwtest::error_of([&] { EXPECT_TRUE(fw::autograd::gradgradcheck(g, {xx})); }), "") << "gradgradcheck";
  };
  fw::manual_seed(3);
  Tensor x = fw::randn({3, 5}, fw::kDouble) * 4;
  check("i0", [](const Tensor& t) { return fw::i0(t); }, x);
  check("i0e", sp::i0e, x);
  check("i1", sp::i1, x);
  check("i1e", sp::i1e, x);
  check("i0 large", [](const Tensor& t) { return sp::i0e(t * 5); }, x);
  check("log_ndtr", sp::log_ndtr, x);
  check("log_ndtr tail", [](const Tensor& t) { return sp::log_ndtr(t * 5 - 10); }, x);
  check("erfcx", sp::erfcx, x);
  check("ndtri", sp::ndtri, fw::rand({3, 5}, fw::kDouble) * 0.98 + 0.01);
  Tensor pos = fw::rand({3, 5}, fw::kDouble) * 5 + 0.2;
  Tensor s = fw::rand({3, 5}, fw::kDouble) * 4 + 1.5;
  check("zeta q", [&](const Tensor& q) { return sp::zeta(s, q); }, pos);
  check("zeta scalar q", [&](const Tensor& q) { return sp::zeta(3.5, q); }, pos);
  check("gammainc x", [&](const Tensor& t) { return sp::gammainc(s, t); }, pos);
  check("gammaincc x", [&](const Tensor& t) { return sp::gammaincc(s, t); }, pos);
  // The x -> 0 limit of i1' and i1e' (1/2), also in the double backward.
  Tensor z = fw::zeros({2}, fw::kDouble).requires_grad_(true);
  Tensor g1 = fw::autograd::grad({sp::i1(z).sum()}, {z}, {}, std::nullopt, true)[0];
  FW_EXPECT_CLOSE(g1, fw::full({2}, 0.5, fw::kDouble));
  Tensor g2 = fw::autograd::grad({sp::i1e(z).sum()}, {z})[0];
  FW_EXPECT_CLOSE(g2, fw::full({2}, 0.5, fw::kDouble));
  // i0'' = i1' = 1/2 at 0.
  Tensor d1 = fw::autograd::grad({fw::i0(z).sum()}, {z}, {}, std::nullopt, true)[0];
  Tensor d2 = fw::autograd::grad({d1.sum()}, {z})[0];
  FW_EXPECT_CLOSE(d2, fw::full({2}, 0.5, fw::kDouble));
}

TEST(Special, GradientsPyTorchLacks) {
  // zeta has no derivative in x; igamma / igammac none in a (PyTorch raises the same).
  Tensor x = fw::tensor({2.5, 3.0}, fw::kDouble).requires_grad_(true);
  Tensor q = fw::tensor({1.5, 2.0}, fw::kDouble).requires_grad_(true);
  Tensor y = sp::zeta(x, q);
  EXPECT_TRUE(y.requires_grad());
  EXPECT_ERROR(y.sum().backward(), "the derivative for 'zeta' is not implemented");
  EXPECT_ERROR(sp::zeta(x, 1.5).sum().backward(), "the derivative for 'zeta' is not implemented");
  EXPECT_ERROR(fw::igamma(x, q).sum().backward(), "the derivative for 'igamma: input' is not implemented");
  EXPECT_ERROR(sp::gammaincc(x, q).sum().backward(), "the derivative for 'igammac: input' is not implemented");
  // Only x needing a gradient is fine.
  Tensor g = fw::autograd::grad({fw::igamma(x.detach(), q).sum()}, {q})[0];
  EXPECT_TRUE(g.defined());
  // The Bessel functions of the second group are not differentiable.
  EXPECT_FALSE(sp::bessel_j0(q).requires_grad());
  EXPECT_FALSE(sp::scaled_modified_bessel_k1(q).requires_grad());
}

TEST(Special, DtypeErrors) {
  Tensor c = fw::tensor({1.0f, 2.0f}).to(fw::kComplexFloat);
  EXPECT_ERROR(fw::i0(c), "[i0] not implemented for dtype complex64");
  EXPECT_ERROR(sp::i0e(c), "[special_i0e] not implemented for dtype complex64");
  EXPECT_ERROR(sp::i1(c), "[special_i1] not implemented");
  EXPECT_ERROR(sp::i1e(c), "[special_i1e] not implemented");
  EXPECT_ERROR(sp::log_ndtr(c), "[special_log_ndtr] not implemented");
  EXPECT_ERROR(sp::ndtri(c), "[special_ndtri] not implemented");
  EXPECT_ERROR(sp::erfcx(c), "[special_erfcx] not implemented");
  EXPECT_ERROR(sp::bessel_y1(c), "[special_bessel_y1] not implemented for dtype complex64");
  EXPECT_ERROR(sp::spherical_bessel_j0(c), "[special_spherical_bessel_j0] not implemented");
  Tensor h = fw::tensor({1.0f, 2.0f}).to(fw::kHalf);
  EXPECT_ERROR(fw::i0(h), "[i0] not implemented for dtype float16");
  EXPECT_ERROR(sp::i1(h.to(fw::kBFloat16)), "[special_i1] not implemented for dtype bfloat16");
  EXPECT_ERROR(sp::zeta(h, h), "[special_zeta] not implemented for dtype float16");
  EXPECT_ERROR(sp::zeta(c, fw::tensor({1.0f})), "[special_zeta] not implemented for dtype complex64");
  // igamma has no integer kernel (an integer with a float operand promotes to float).
  Tensor i = fw::tensor(std::vector<int64_t>{1, 2});
  EXPECT_ERROR(fw::igamma(i, i), "[igamma] not implemented for dtype int64");
  EXPECT_ERROR(sp::gammaincc(fw::tensor({true}), fw::tensor({true})), "[igammac] not implemented for dtype bool");
  EXPECT_ERROR(fw::igamma(c, c), "[igamma] not implemented for dtype complex64");
  EXPECT_ERROR(sp::zeta(fw::ones({2}), fw::ones({3})), "zeta");
}

TEST(Special, BinomialStatistics) {
  fw::manual_seed(123);
  const int64_t draws = 20000;
  struct P {
    double n, p;
  };
  for (P c : {P{10, 0.3}, P{1, 0.5}, P{50, 0.9}, P{1000, 0.02}, P{100000, 0.4}}) {
    SCOPED_TRACE(std::to_string(c.n) + " " + std::to_string(c.p));
    Tensor out = fw::binomial(fw::full({draws}, c.n, fw::kDouble), fw::full({draws}, c.p, fw::kDouble));
    EXPECT_EQ(out.dtype(), fw::kDouble);
    EXPECT_TRUE(fw::equal(out, fw::floor(out))) << "integer-valued";
    EXPECT_GE(out.min().item<double>(), 0);
    EXPECT_LE(out.max().item<double>(), c.n);
    const double mean = c.n * c.p, var = c.n * c.p * (1 - c.p);
    // The sample mean is within 5 standard errors, the variance within 10%.
    EXPECT_NEAR(out.mean().item<double>(), mean, 5 * std::sqrt(var / draws));
    EXPECT_NEAR(out.var().item<double>() / var, 1.0, 0.1);
  }
  // Edge cases, broadcasting and float32.
  Tensor n = fw::tensor({0.0f, 7.0f, 7.0f, 0.0f});
  Tensor p = fw::tensor({0.5f, 0.0f, 1.0f, 1.0f});
  Tensor out = fw::binomial(n, p);
  EXPECT_EQ(out.dtype(), fw::kFloat);
  EXPECT_TRUE(fw::equal(out, fw::tensor({0.0f, 0.0f, 7.0f, 0.0f})));
  Tensor b = fw::binomial(fw::full({3, 1}, 5.0), fw::tensor({0.2f, 0.7f}));
  EXPECT_EQ(b.sizes().vec(), (std::vector<int64_t>{3, 2}));
  // Reproducible under manual_seed.
  fw::manual_seed(9);
  Tensor r1 = fw::binomial(fw::full({50}, 30.0), fw::full({50}, 0.4));
  fw::manual_seed(9);
  Tensor r2 = fw::binomial(fw::full({50}, 30.0), fw::full({50}, 0.4));
  EXPECT_TRUE(fw::equal(r1, r2));
  // ... whatever the thread count (each block of elements has its own sampler).
  const int threads = fw::get_num_threads();
  fw::manual_seed(10);
  fw::set_num_threads(1);
  Tensor s1 = fw::binomial(fw::full({20000}, 40.0), fw::full({20000}, 0.6));
  fw::set_num_threads(std::max(2, threads));
  fw::manual_seed(10);
  Tensor s2 = fw::binomial(fw::full({20000}, 40.0), fw::full({20000}, 0.6));
  fw::set_num_threads(threads);
  EXPECT_TRUE(fw::equal(s1, s2));
  // Blocks draw different streams.
  EXPECT_FALSE(fw::equal(s1.narrow(0, 0, 4096), s1.narrow(0, 4096, 4096)));
  // Not differentiable.
  EXPECT_FALSE(fw::binomial(fw::full({2}, 3.0).requires_grad_(true), fw::full({2}, 0.5)).requires_grad());
  // Errors.
  EXPECT_ERROR(fw::binomial(fw::full({2}, 3.0), fw::full({2}, 1.5)), "[binomial] prob must be in [0, 1]");
  EXPECT_ERROR(fw::binomial(fw::full({2}, 3.0), fw::full({2}, -0.1)), "[binomial] prob must be in [0, 1]");
  EXPECT_ERROR(fw::binomial(fw::full({2}, 3.0), fw::full({2}, NAN)), "[binomial] prob must be in [0, 1]");
  const char* bad_count = "[binomial] count must be a non-negative integer";
  EXPECT_ERROR(fw::binomial(fw::full({2}, -1.0), fw::full({2}, 0.5)), bad_count);
  EXPECT_ERROR(fw::binomial(fw::full({2}, 2.5), fw::full({2}, 0.5)), bad_count);
  EXPECT_ERROR(fw::binomial(fw::full({2}, INFINITY), fw::full({2}, 0.5)), bad_count);
  EXPECT_ERROR(fw::binomial(fw::full({2}, 3.0, fw::kDouble), fw::full({2}, 0.5)),
               "[binomial] Found dtype float32 but expected float64");
  EXPECT_ERROR(fw::binomial(fw::full({2}, 3, fw::kLong), fw::full({2}, 0, fw::kLong)),
               "[binomial] not implemented for dtype int64");
}
