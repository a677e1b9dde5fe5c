// The ops of include/fw/ops_extra.h against PyTorch 1.13 (tests/fixtures/gen_ops_extra.py):
// values, integer outputs exactly, gradients of sum(y * g) where PyTorch has them; then
// gradcheck of the differentiable composites, errors, and a compiled use.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <map>
#include <sstream>

#include <fw/fw.h>
#include <fw/jit.h>

#include "tests/expect_error.h"
#include "tests/fixture.h"
#include "tests/records.h"

using fw::Tensor;
using Case = fwtest::RecordCase;

namespace {

using Inputs = fwtest::RecordInputs;
using Fn = fwtest::RecordFn;

std::optional<int64_t> opt_dim(const Case& c) {
  if (c.none("dim")) return std::nullopt;
  return c.num("dim");
}


// One entry per fixture kind: the fw call producing y0, y1, ...
const std::map<std::string, Fn>& table() {
  static const std::map<std::string, Fn> t = {
      {"nansum",
       [](const Case& c, const Inputs& in) {
         return std::vector<Tensor>{c.none("dim") ? fw::nansum(in.at("x"))
                                                  : fw::nansum(in.at("x"), c.ints("dim"), c.flag("keepdim"))};
       }},
      {"nanmean",
       [](const Case& c, const Inputs& in) {
         return std::vector<Tensor>{c.none("dim") ? fw::nanmean(in.at("x"))
                                                  : fw::nanmean(in.at("x"), c.ints("dim"), c.flag("keepdim"))};
       }},
      {"aminmax",
       [](const Case& c, const Inputs& in) {
         auto [lo, hi] = fw::aminmax(in.at("x"), opt_dim(c), c.flag("keepdim"));
         return std::vector<Tensor>{lo, hi};
       }},
      {"kthvalue",
       [](const Case& c, const Inputs& in) {
         auto [v, i] = fw::kthvalue(in.at("x"), c.num("k"), c.num("dim"), c.flag("keepdim"));
         return std::vector<Tensor>{v, i};
       }},
      {"cummax",
       [](const Case& c, const Inputs& in) {
         auto [v, i] = fw::cummax(in.at("x"), c.num("dim"));
         return std::vector<Tensor>{v, i};
       }},
      {"cummin",
       [](const Case& c, const Inputs& in) {
         auto [v, i] = fw::cummin(in.at("x"), c.num("dim"));
         return std::vector<Tensor>{v, i};
       }},
      {"logcumsumexp",
       [](const Case& c, const Inputs& in) { return std::vector<Tensor>{fw::logcumsumexp(in.at("x"), c.num("dim"))}; }},
      {"quantile",
       [](const Case& c, const Inputs& in) {
         const bool nan = c.flag("nan");
         const std::string interp = c.opt("interpolation");
         if (c.opt("scalar_q") != "0") {
           double q = c.real("scalar_q");
           return std::vector<Tensor>{nan ? fw::nanquantile(in.at("x"), q, opt_dim(c), c.flag("keepdim"), interp)
                                          : fw::quantile(in.at("x"), q, opt_dim(c), c.flag("keepdim"), interp)};
         }
         return std::vector<Tensor>{nan ? fw::nanquantile(in.at("x"), in.at("q"), opt_dim(c), c.flag("keepdim"), interp)
                                        : fw::quantile(in.at("x"), in.at("q"), opt_dim(c), c.flag("keepdim"), interp)};
       }},
      {"searchsorted",
       [](const Case& c, const Inputs& in) {
         std::optional<Tensor> sorter;
         if (in.count("sorter")) sorter = in.at("sorter");
         return std::vector<Tensor>{
             fw::searchsorted(in.at("seq"), in.at("v"), false, c.flag("right"), std::nullopt, sorter)};
       }},
      {"bucketize",
       [](const Case& c, const Inputs& in) {
         return std::vector<Tensor>{fw::bucketize(in.at("x"), in.at("b"), false, c.flag("right"))};
       }},
      {"bincount",
       [](const Case& c, const Inputs& in) {
         std::optional<Tensor> w;
         if (in.count("w")) w = in.at("w");
         return std::vector<Tensor>{fw::bincount(in.at("x"), w, c.num("minlength"))};
       }},
      {"histc",
       [](const Case& c, const Inputs& in) {
         return std::vector<Tensor>{fw::histc(in.at("x"), c.num("bins"), c.real("min"), c.real("max"))};
       }},
      {"unique2",
       [](const Case&, const Inputs& in) {
         auto [v, i, n] = fw::_unique2(in.at("x"), true, true, true);
         return std::vector<Tensor>{v, i, n};
       }},
      {"unique_dim",
       [](const Case& c, const Inputs& in) {
         auto [v, i, n] = fw::unique_dim(in.at("x"), c.num("dim"), true, true, true);
         return std::vector<Tensor>{v, i, n};
       }},
      {"unique_consecutive",
       [](const Case& c, const Inputs& in) {
         auto [v, i, n] = fw::unique_consecutive(in.at("x"), true, true, opt_dim(c));
         return std::vector<Tensor>{v, i, n};
       }},
      {"meshgrid",
       [](const Case& c, const Inputs& in) {
         return fw::meshgrid({in.at("a"), in.at("b"), in.at("c")}, c.opt("indexing"));
       }},
      {"cartesian_prod",
       [](const Case&, const Inputs& in) {
         return std::vector<Tensor>{fw::cartesian_prod({in.at("a"), in.at("b"), in.at("c")})};
       }},
      {"tril_indices",
       [](const Case& c, const Inputs&) {
         return std::vector<Tensor>{fw::tril_indices(c.num("row"), c.num("col"), c.num("offset")),
                                    fw::triu_indices(c.num("row"), c.num("col"), c.num("offset"))};
       }},
      {"kron", [](const Case&, const Inputs& in) { return std::vector<Tensor>{fw::kron(in.at("a"), in.at("b"))}; }},
      {"rot90",
       [](const Case& c, const Inputs& in) {
         return std::vector<Tensor>{fw::rot90(in.at("x"), c.num("k"), c.ints("dims"))};
       }},
      {"diag_embed",
       [](const Case& c, const Inputs& in) {
         return std::vector<Tensor>{fw::diag_embed(in.at("x"), c.num("offset"), c.num("dim1"), c.num("dim2"))};
       }},
      {"take_along_dim",
       [](const Case& c, const Inputs& in) {
         return std::vector<Tensor>{fw::take_along_dim(in.at("x"), in.at("i"), opt_dim(c))};
       }},
      {"masked_scatter",
       [](const Case&, const Inputs& in) {
         return std::vector<Tensor>{fw::masked_scatter(in.at("x"), in.at("mask").to(fw::kBool), in.at("src"))};
       }},
      {"cov",
       [](const Case& c, const Inputs& in) {
         std::optional<Tensor> f, a;
         if (in.count("fw")) f = in.at("fw");
         if (in.count("aw")) a = in.at("aw");
         return std::vector<Tensor>{fw::cov(in.at("x"), c.num("correction"), f, a)};
       }},
      {"corrcoef", [](const Case&, const Inputs& in) { return std::vector<Tensor>{fw::corrcoef(in.at("x"))}; }},
      {"cdist",
       [](const Case& c, const Inputs& in) {
         return std::vector<Tensor>{fw::cdist(in.at("x1"), in.at("x2"), c.real("p"))};
       }},
      {"msort", [](const Case&, const Inputs& in) { return std::vector<Tensor>{fw::msort(in.at("x"))}; }},
      {"scatter_reduce",
       [](const Case& c, const Inputs& in) {
         return std::vector<Tensor>{
             in.at("x").scatter_reduce(c.num("dim"), in.at("i"), in.at("src"), c.opt("reduce"), c.flag("include_self"))};
       }},
      {"nanmedian",
       [](const Case& c, const Inputs& in) {
         auto [v, i] = fw::nanmedian(in.at("x"), c.num("dim"), c.flag("keepdim"));
         return std::vector<Tensor>{v, i};
       }},
      {"diff",
       [](const Case& c, const Inputs& in) {
         std::optional<Tensor> pre, app;
         if (in.count("pre")) pre = in.at("pre");
         if (in.count("app")) app = in.at("app");
         return std::vector<Tensor>{fw::diff(in.at("x"), c.num("n"), c.num("dim"), pre, app)};
       }},
      {"trapezoid",
       [](const Case& c, const Inputs& in) {
         if (in.count("xs"))
           return std::vector<Tensor>{fw::trapezoid(in.at("fy"), in.at("xs")), fw::cumulative_trapezoid(in.at("fy"), in.at("xs"))};
         return std::vector<Tensor>{fw::trapz(in.at("fy"), c.real("dx")), fw::cumulative_trapezoid(in.at("fy"), c.real("dx"))};
       }},
      {"heaviside",
       [](const Case&, const Inputs& in) { return std::vector<Tensor>{fw::heaviside(in.at("x"), in.at("v"))}; }},
      {"block_diag",
       [](const Case&, const Inputs& in) {
         return std::vector<Tensor>{fw::block_diag({in.at("a"), in.at("b"), in.at("c")})};
       }},
      {"vander",
       [](const Case& c, const Inputs& in) {
         return std::vector<Tensor>{fw::vander(in.at("x"), c.num("N"), c.flag("increasing"))};
       }},
      {"tensordot",
       [](const Case& c, const Inputs& in) {
         return std::vector<Tensor>{fw::tensordot(in.at("a"), in.at("b"), c.ints("da"), c.ints("db"))};
       }},
      {"inner", [](const Case&, const Inputs& in) { return std::vector<Tensor>{fw::inner(in.at("a"), in.at("b"))}; }},
      {"chain_matmul",
       [](const Case&, const Inputs& in) {
         return std::vector<Tensor>{fw::chain_matmul({in.at("a"), in.at("b"), in.at("c")})};
       }},
      {"addmv",
       [](const Case&, const Inputs& in) {
         return std::vector<Tensor>{fw::addmv(in.at("t"), in.at("m"), in.at("v"), 0.5, 2.0)};
       }},
      {"addr",
       [](const Case&, const Inputs& in) {
         return std::vector<Tensor>{fw::addr(in.at("t"), in.at("a"), in.at("b"), 2.0, -1.0)};
       }},
      {"ldexp", [](const Case&, const Inputs& in) { return std::vector<Tensor>{fw::ldexp(in.at("x"), in.at("e"))}; }},
      {"sinc", [](const Case&, const Inputs& in) { return std::vector<Tensor>{fw::sinc(in.at("x"))}; }},
      {"float_power",
       [](const Case& c, const Inputs& in) {
         return std::vector<Tensor>{fw::float_power(in.at("x"), c.real("exponent"))};
       }},
      {"gcd",
       [](const Case&, const Inputs& in) {
         return std::vector<Tensor>{fw::gcd(in.at("a"), in.at("b")), fw::lcm(in.at("a"), in.at("b"))};
       }},
  };
  return t;
}

}  // namespace

TEST(OpsExtra, MatchesPyTorch) {
  EXPECT_EQ(fwtest::run_record_table("ops_extra.txt", table(), {1e-5, 1e-10, 1e-9, 1e-9}), 104);
}

TEST(OpsExtra, GradcheckComposites) {
  using V = std::vector<Tensor>;
  auto x = fw::randn({3, 5}, fw::kDouble).requires_grad_(true);
  auto check = [&](const char* name, std::function<Tensor(const Tensor&)> f) {
    SCOPED_TRACE(name);
    auto g = [&](const V& in) -> V { return {f(in[0])}; };
    EXPECT_EQ(fwtest::error_of([&] { EXPECT_TRUE(fw::autograd::gradcheck(g, {x})); }), "") << "gradcheck";
    EXPECT_EQ(fwtest::error_of([&] { EXPECT_TRUE(fw::autograd::gradgradcheck(g, {x})); }), "") << "gradgradcheck";
  };
  check("logcumsumexp", [](const Tensor& t) { return fw::logcumsumexp(t, 1); });
  check("logcumsumexp dim0", [](const Tensor& t) { return fw::logcumsumexp(t * 3, 0); });
  check("cummax", [](const Tensor& t) { return std::get<0>(fw::cummax(t, 1)); });
  check("kthvalue", [](const Tensor& t) { return std::get<0>(fw::kthvalue(t, 2, 1)); });
  check("quantile", [](const Tensor& t) { return fw::quantile(t, 0.37, 1); });
  check("nanmean", [](const Tensor& t) { return fw::nanmean(t, {0}); });
  check("cov", [](const Tensor& t) { return fw::cov(t); });
  check("corrcoef", [](const Tensor& t) { return fw::corrcoef(t); });
  check("cdist p2", [](const Tensor& t) { return fw::cdist(t, t.flip({0}) * 0.5 + 1); });
  check("cdist p3", [](const Tensor& t) { return fw::cdist(t, t.flip({0}) * 0.5 + 1, 3); });
  check("kron", [](const Tensor& t) { return fw::kron(t, t.narrow(0, 0, 2)); });
  // scatter_reduce with a src wider than the index (its extra columns get no gradient).
  Tensor idx = fw::tensor(std::vector<int64_t>{2, 0, 2, 1, 0, 0, 1, 2}).reshape({2, 4});
  for (const char* red : {"sum", "mean", "prod", "amax", "amin"})
    for (bool inc : {true, false})
      check(red, [&](const Tensor& t) { return fw::scatter_reduce(t.narrow(0, 0, 3) * 2, 0, idx, t.narrow(0, 1, 2), red, inc); });
  check("diag_embed", [](const Tensor& t) { return fw::diag_embed(t, 1, 0, 2); });
  check("masked_scatter", [](const Tensor& t) {
    return fw::masked_scatter(t, fw::tensor(std::vector<int64_t>{1, 0, 1, 1, 0}).to(fw::kBool), t.flatten() * 2);
  });
}

TEST(OpsExtra, EdgeCasesAndSpellings) {
  // logcumsumexp of -inf runs and of +inf stays finite where PyTorch's is.
  const double inf = INFINITY;
  Tensor l = fw::logcumsumexp(fw::tensor(std::vector<double>{-inf, -inf, 0, inf, 1}, fw::kDouble), 0);
  FW_EXPECT_CLOSE(l, fw::tensor(std::vector<double>{-inf, -inf, 0, inf, inf}, fw::kDouble), 0, 0);
  // Scalar searchsorted / bucketize, int32 output, side.
  Tensor seq = fw::tensor(std::vector<int64_t>{1, 3, 5, 7});
  EXPECT_EQ(fw::searchsorted(seq, fw::Scalar(int64_t(5))).item<int64_t>(), 2);
  EXPECT_EQ(fw::searchsorted(seq, fw::Scalar(int64_t(5)), false, false, "right").item<int64_t>(), 3);
  EXPECT_EQ(fw::bucketize(fw::Scalar(6.5), fw::tensor(std::vector<double>{1, 3, 5, 7}, fw::kDouble), true).dtype(), fw::kInt);
  // _unique without counts gives empty extras; unique of an empty tensor.
  auto [u, inv] = fw::_unique(fw::tensor(std::vector<int64_t>{4, 2, 4}), true, true);
  EXPECT_TRUE(fw::equal(u, fw::tensor(std::vector<int64_t>{2, 4})));
  EXPECT_TRUE(fw::equal(inv, fw::tensor(std::vector<int64_t>{1, 0, 1})));
  EXPECT_EQ(std::get<0>(fw::_unique2(fw::empty({0}))).numel(), 0);
  // NaNs sort last and are distinct from each other (PyTorch 2's CPU result; 1.13's is scrambled).
  auto [nv, ni, nc] = fw::_unique2(fw::tensor(std::vector<double>{2, NAN, 1, 2, NAN, -1}, fw::kDouble), true, true, true);
  FW_EXPECT_CLOSE(nv, fw::tensor(std::vector<double>{-1, 1, 2, NAN, NAN}, fw::kDouble), 0, 0);
  EXPECT_TRUE(fw::equal(ni, fw::tensor(std::vector<int64_t>{2, 3, 1, 2, 4, 0})));
  EXPECT_TRUE(fw::equal(nc, fw::tensor(std::vector<int64_t>{1, 1, 2, 1, 1})));
  // atleast / stacks / flips.
  EXPECT_EQ(fw::atleast_3d(fw::ones({4})).sizes().vec(), (std::vector<int64_t>{1, 4, 1}));
  EXPECT_EQ(fw::dstack({fw::ones({2, 3}), fw::ones({2, 3})}).sizes().vec(), (std::vector<int64_t>{2, 3, 2}));
  EXPECT_EQ(fw::column_stack({fw::ones({3}), fw::ones({3, 2})}).sizes().vec(), (std::vector<int64_t>{3, 3}));
  Tensor m = fw::arange(6).reshape({2, 3});
  EXPECT_TRUE(fw::equal(fw::fliplr(m), m.flip({1})));
  EXPECT_TRUE(fw::equal(fw::flipud(m), m.flip({0})));
  EXPECT_TRUE(fw::equal(fw::argwhere(m > 3), fw::nonzero(m > 3)));
  EXPECT_TRUE(fw::equal(fw::sgn(fw::tensor(std::vector<double>{-2, 0, 3}, fw::kDouble)), fw::tensor(std::vector<double>{-1, 0, 1}, fw::kDouble)));
  EXPECT_EQ(fw::elementSize(fw::kDouble), 8u);
  EXPECT_EQ(fw::result_type(fw::ones({3}), fw::ones({}, fw::kDouble)), fw::kFloat);  // 0-D does not promote
  EXPECT_EQ(fw::result_type(fw::ones({3}, fw::kLong), fw::ones({}, fw::kDouble)), fw::kDouble);  // higher category
  EXPECT_EQ(fw::result_type(fw::ones({3}), fw::ones({2}, fw::kDouble)), fw::kDouble);
  EXPECT_FALSE(fw::can_cast(fw::kDouble, fw::kLong));
  EXPECT_TRUE(fw::can_cast(fw::kLong, fw::kDouble));
  EXPECT_FALSE(fw::can_cast(fw::kLong, fw::kBool));
  EXPECT_EQ(fw::block_diag({}).sizes().vec(), (std::vector<int64_t>{1, 0}));
  EXPECT_EQ(fw::autograd::GradMode::is_enabled(), true);
  // histc of constant data widens the range by one on each side.
  FW_EXPECT_CLOSE(fw::histc(fw::full({3}, 2.0), 4), fw::tensor(std::vector<float>{0, 0, 3, 0}), 0, 0);
}

TEST(OpsExtra, Errors) {
  Tensor x = fw::randn({3, 4});
  EXPECT_ERROR(fw::kthvalue(x, 5, 1), "[kthvalue] selected number k = 5 out of range for dimension 1 of size 4");
  EXPECT_ERROR(fw::quantile(x, 1.5), "[quantile] q values must be in the range [0, 1], got 1.5");
  EXPECT_ERROR(fw::quantile(x, 0.5, 1, false, "cubic"), "[quantile] interpolation must be one of linear");
  EXPECT_ERROR(fw::quantile(x.to(fw::kLong), 0.5), "[quantile] input tensor must be either float or double dtype");
  EXPECT_ERROR(fw::nanmean(fw::ones({2}, fw::kLong)), "[nanmean] expected input to have floating point dtype");
  EXPECT_ERROR(fw::searchsorted(fw::ones({2, 3}), fw::ones({3, 3})),
               "[searchsorted] boundaries tensor should be 1 dimension or the first N-1 dimensions");
  EXPECT_ERROR(fw::searchsorted(fw::ones({3}), fw::ones({2}), false, true, "left"),
               "[searchsorted] side and right can't be set to opposites");
  EXPECT_ERROR(fw::bincount(fw::tensor(std::vector<int64_t>{1, -2})),
               "[bincount] only supports 1-d non-negative integral inputs, got the value -2");
  EXPECT_ERROR(fw::bincount(fw::ones({2})), "[bincount] only supports 1-d non-negative integral inputs");
  EXPECT_ERROR(fw::histc(x, 0), "[histc] bins must be > 0, but got 0");
  EXPECT_ERROR(fw::histc(x, 5, 2, 1), "[histc] max must be larger than min");
  EXPECT_ERROR(fw::meshgrid({fw::ones({2, 2})}), "[meshgrid] Expected 0D or 1D tensor in the tensor list but got: [2, 2]");
  EXPECT_ERROR(fw::meshgrid({fw::ones({2})}, "yx"), "[meshgrid] indexing must be one of");
  EXPECT_ERROR(fw::rot90(x, 1, {0, 0}), "[rot90] expected rotation dims to be different");
  EXPECT_ERROR(fw::rot90(fw::ones({3}), 1), "[rot90] expected total dims >= 2, but got total dims = 1");
  EXPECT_ERROR(fw::diag_embed(x, 0, 1, 1), "[diag_embed] diagonal dimensions cannot be identical");
  EXPECT_ERROR(fw::masked_scatter(x, x > 0, fw::ones({0})), "[masked_scatter] Number of elements of source < number of ones in mask");
  EXPECT_ERROR(fw::masked_scatter(x, fw::ones({3, 4}, fw::kLong), x), "[masked_scatter] only supports boolean masks");
  EXPECT_ERROR(fw::cov(fw::ones({2, 2, 2})), "[cov] expected input to have two or fewer dimensions");
  EXPECT_ERROR(fw::cdist(x, fw::ones({2, 5})), "[cdist] X1 and X2 must have the same number of columns. X1: 4 X2: 5");
  EXPECT_ERROR(fw::cdist(x, x, -1), "[cdist] only supports non-negative p values");
  EXPECT_ERROR(fw::take_along_dim(x, fw::zeros({3}, fw::kLong), 0), "[take_along_dim] input and indices should have the same number of dimensions");
  EXPECT_ERROR(fw::tril_indices(-1, 3), "[tril_indices] row must be non-negative");
  EXPECT_ERROR(fw::cummax(x, 2), "[cummax] Dimension out of range");
  EXPECT_ERROR(fw::scatter_reduce(x, 0, fw::zeros({3, 4}, fw::kLong), x, "max"),
               "[scatter_reduce] reduce argument must be either sum, prod, mean, amax or amin, got max");
  EXPECT_ERROR(fw::scatter_reduce(x, 0, fw::full({1, 1}, 3, fw::kLong), x, "sum"),
               "[scatter_reduce] index 3 is out of bounds for dimension 0 with size 3");
  EXPECT_ERROR(fw::poisson(fw::full({2}, -1.0)), "[poisson] rates must be finite and non-negative, got -1");
  EXPECT_ERROR(fw::empty({2}).geometric_(1.5), "[geometric_] expects p to be in (0, 1)");
}

TEST(OpsExtra, UnderCompile) {
  auto f = [](const Tensor& x) {
    Tensor q = fw::quantile(x, 0.25, 1, true);
    return fw::nansum(fw::logcumsumexp(x - q, 1) * std::get<0>(fw::cummax(x, 0)), {1});
  };
  auto compiled = fw::compile(f);
  Tensor x = fw::randn({4, 6});
  Tensor xe = x.clone().requires_grad_(true), xc = x.clone().requires_grad_(true);
  Tensor ye = f(xe), yc = compiled(xc);
  FW_EXPECT_CLOSE(yc, ye, 1e-5, 1e-5);
  ye.sum().backward();
  yc.sum().backward();
  FW_EXPECT_CLOSE(xc.grad(), xe.grad(), 1e-5, 1e-5);
}

TEST(OpsExtra, Special) {
  namespace S = fw::special;
  Tensor x = fw::tensor(std::vector<double>{-1.5, 0, 0.5, 2, 7}, fw::kDouble);
  FW_EXPECT_CLOSE(S::gammaln(x), fw::lgamma(x), 0, 0);
  FW_EXPECT_CLOSE(S::psi(x), fw::digamma(x), 0, 0);
  FW_EXPECT_CLOSE(S::expit(x), fw::sigmoid(x), 0, 0);
  // Reference values: scipy-free identities and known constants.
  FW_EXPECT_CLOSE(S::ndtr(fw::tensor(std::vector<double>{0, 1.959963984540054, -1}, fw::kDouble)),
                  fw::tensor(std::vector<double>{0.5, 0.975, 0.15865525393145707}, fw::kDouble), 1e-12, 1e-12);
  FW_EXPECT_CLOSE(S::entr(fw::tensor(std::vector<double>{0, 0.5, 1, -1, NAN}, fw::kDouble)),
                  fw::tensor(std::vector<double>{0, 0.5 * std::log(2.0), 0, -INFINITY, NAN}, fw::kDouble), 1e-15, 1e-15);
  FW_EXPECT_CLOSE(S::xlog1py(fw::tensor(std::vector<double>{0, 2, 0}, fw::kDouble), fw::tensor(std::vector<double>{-1, 1, NAN}, fw::kDouble)),
                  fw::tensor(std::vector<double>{0, 2 * std::log(2.0), NAN}, fw::kDouble), 1e-15, 1e-15);
  // multigammaln(x, 1) = lgamma(x); p = 2: lgamma(x) + lgamma(x - 1/2) + log(pi) / 2.
  Tensor y = fw::tensor(std::vector<double>{1.5, 3}, fw::kDouble);
  FW_EXPECT_CLOSE(S::multigammaln(y, 1), fw::lgamma(y), 1e-15, 1e-15);
  FW_EXPECT_CLOSE(S::multigammaln(y, 2), fw::lgamma(y) + fw::lgamma(y - 0.5) + std::log(M_PI) / 2, 1e-14, 1e-14);
  EXPECT_ERROR(S::multigammaln(y, 4), "[multigammaln] All elements must be greater than (p-1)/2");
}

TEST(OpsExtra, Samplers) {
  // Moments of 20000 draws (loose bounds: 5+ standard errors).
  fw::manual_seed(3);
  Tensor e = fw::empty({20000}, fw::kDouble).exponential_(2.0);
  EXPECT_NEAR(e.mean().item<double>(), 0.5, 0.02);
  EXPECT_GE(e.min().item<double>(), 0.0);
  Tensor g = fw::empty({20000}, fw::kDouble).geometric_(0.25);
  EXPECT_NEAR(g.mean().item<double>(), 4.0, 0.15);
  EXPECT_GE(g.min().item<double>(), 1.0);
  EXPECT_TRUE(fw::equal(g, g.round()));
  Tensor c = fw::empty({20000}, fw::kDouble).cauchy_(1.0, 2.0);
  EXPECT_NEAR(fw::median(c).item<double>(), 1.0, 0.1);
  Tensor l = fw::empty({20000}, fw::kDouble).log_normal_(0.0, 0.5);
  EXPECT_NEAR(fw::log(l).std().item<double>(), 0.5, 0.02);
  Tensor p = fw::poisson(fw::full({20000}, 3.5, fw::kDouble));
  EXPECT_NEAR(p.mean().item<double>(), 3.5, 0.1);
  EXPECT_NEAR(p.var().item<double>(), 3.5, 0.25);
  EXPECT_TRUE(fw::equal(fw::poisson(fw::zeros({3})), fw::zeros({3})));
  fw::manual_seed(9);
  Tensor p1 = fw::poisson(fw::full({5}, 10.0));
  fw::manual_seed(9);
  EXPECT_TRUE(fw::equal(p1, fw::poisson(fw::full({5}, 10.0))));  // reproducible under manual_seed
}

TEST(OpsExtra, TensorMethods) {
  Tensor x = fw::randn({4, 5}, fw::kDouble);
  EXPECT_TRUE(fw::equal(x.nansum({1}), fw::nansum(x, {1})));
  EXPECT_TRUE(fw::equal(std::get<1>(x.kthvalue(2)), std::get<1>(fw::kthvalue(x, 2))));
  EXPECT_TRUE(fw::equal(std::get<0>(x.cummax(1)), std::get<0>(fw::cummax(x, 1))));
  EXPECT_TRUE(fw::equal(x.quantile(0.5, 0), fw::quantile(x, 0.5, 0)));
  EXPECT_TRUE(fw::equal(x.rot90(), fw::rot90(x)));
  EXPECT_TRUE(fw::equal(x.diag_embed(), fw::diag_embed(x)));
  EXPECT_TRUE(fw::equal(x.cov(), fw::cov(x)));
  EXPECT_TRUE(fw::equal(x.logcumsumexp(0), fw::logcumsumexp(x, 0)));
  EXPECT_TRUE(fw::equal(x.sgn(), x.sign()));
  Tensor sq = fw::randn({3, 3}, fw::kDouble) + fw::eye(3, fw::kDouble) * 4;
  FW_EXPECT_CLOSE(sq.inverse().matmul(sq), fw::eye(3, fw::kDouble), 1e-12, 1e-12);
  FW_EXPECT_CLOSE(sq.det(), fw::det(sq), 1e-12, 1e-12);
  FW_EXPECT_CLOSE(sq.matrix_power(2), sq.matmul(sq), 1e-12, 1e-12);
  FW_EXPECT_CLOSE(x.matmul(x.pinverse()).matmul(x), x, 1e-10, 1e-10);  // Moore-Penrose: A A+ A = A
}

TEST(OpsExtra, LogAddExpAndIndexFill) {
  Tensor a = fw::tensor(std::vector<double>{0, 1000, -INFINITY, INFINITY, -3}, fw::kDouble);
  Tensor b = fw::tensor(std::vector<double>{1, 1000, -INFINITY, 1, 2}, fw::kDouble);
  FW_EXPECT_CLOSE(fw::logaddexp(a, b),
                  fw::tensor(std::vector<double>{std::log(1 + std::exp(1.0)), 1000 + std::log(2.0), -INFINITY, INFINITY,
                                                 2 + std::log1p(std::exp(-5.0))}, fw::kDouble),
                  1e-14, 1e-14);
  FW_EXPECT_CLOSE(fw::logaddexp2(a.narrow(0, 0, 2), b.narrow(0, 0, 2)),
                  fw::tensor(std::vector<double>{std::log2(1 + 2.0), 1001}, fw::kDouble), 1e-14, 1e-14);
  auto f = [](const std::vector<Tensor>& v) -> std::vector<Tensor> { return {fw::logaddexp(v[0], v[1])}; };
  EXPECT_TRUE(fw::autograd::gradcheck(f, {fw::randn({4}, fw::kDouble).requires_grad_(true),
                                          fw::randn({4}, fw::kDouble).requires_grad_(true)}));
  Tensor m = fw::arange(12).reshape({3, 4}).to(fw::kFloat);
  Tensor filled = m.index_fill(1, fw::tensor(std::vector<int64_t>{0, -1}), -5);
  EXPECT_TRUE(fw::equal(filled.select(1, 0), fw::full({3}, -5.0f)));
  EXPECT_TRUE(fw::equal(filled.select(1, 3), fw::full({3}, -5.0f)));
  EXPECT_TRUE(fw::equal(filled.select(1, 1), m.select(1, 1)));
  EXPECT_ERROR(m.index_fill(0, fw::tensor(std::vector<int64_t>{3}), 0), "[index_fill] index 3 is out of bounds for dimension 0 with size 3");
}

TEST(OpsExtra, MemoryFormats) {
  Tensor x = fw::randn({2, 3, 4, 5});
  Tensor cl = x.contiguous(fw::MemoryFormat::ChannelsLast);
  EXPECT_TRUE(cl.is_contiguous(fw::MemoryFormat::ChannelsLast));
  EXPECT_FALSE(cl.is_contiguous());
  EXPECT_EQ(cl.strides().vec(), (std::vector<int64_t>{60, 1, 15, 3}));
  EXPECT_TRUE(fw::equal(cl, x));
  EXPECT_EQ(cl.suggest_memory_format(), fw::MemoryFormat::ChannelsLast);
  EXPECT_EQ(x.suggest_memory_format(), fw::MemoryFormat::Contiguous);
  EXPECT_TRUE(cl.contiguous(fw::MemoryFormat::ChannelsLast).is_same(cl));
  Tensor back = cl.contiguous(fw::MemoryFormat::Contiguous);
  EXPECT_TRUE(back.is_contiguous());
  EXPECT_TRUE(fw::equal(back, x));
  Tensor copy = cl.clone(fw::MemoryFormat::ChannelsLast);
  EXPECT_FALSE(copy.is_same(cl));
  EXPECT_TRUE(copy.is_contiguous(fw::MemoryFormat::ChannelsLast));
  // Layers accept channels-last inputs.
  Tensor w = fw::randn({6, 3, 3, 3});
  FW_EXPECT_CLOSE(fw::conv2d(cl, w), fw::conv2d(x, w), 1e-5, 1e-5);
  Tensor x5 = fw::randn({1, 2, 3, 4, 5});
  EXPECT_TRUE(x5.contiguous(fw::MemoryFormat::ChannelsLast3d).is_contiguous(fw::MemoryFormat::ChannelsLast3d));
  EXPECT_ERROR(fw::randn({2, 3}).contiguous(fw::MemoryFormat::ChannelsLast),
               "[contiguous] required rank 4 tensor to use channels_last format");
}
