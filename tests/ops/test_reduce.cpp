// Op-table entries for the reduction family (argument conventions: tests/fixtures/gen_reduce.py)
// and tests of what fixtures cannot show: the parallel and split paths on large inputs,
// layouts against a contiguous reference, and multi-output plumbing.
#include <gtest/gtest.h>

#include <cmath>

#include "tests/op_table.h"

using fw::Tensor;
using fwtest::FixArg;
using fwtest::FixCase;
using V = std::vector<Tensor>;

namespace {

std::optional<fw::ScalarType> opt_dtype(const FixArg& a) {
  if (a.is_none()) return std::nullopt;
  return a.dtype;
}
std::optional<int64_t> opt_int(const FixArg& a) {
  if (a.is_none()) return std::nullopt;
  return a.i;
}
Tensor bool_tensor(bool b) { return fw::full({}, b, fw::TensorOptions(fw::kBool)); }
V pair(std::tuple<Tensor, Tensor> t) { return {std::get<0>(t), std::get<1>(t)}; }

Tensor x23() { return fw::arange(6, fw::TensorOptions(fw::kFloat)).reshape({2, 3}); }
Tensor empty03() { return fw::zeros({0, 3}); }

}  // namespace

FW_OP_TEST(sum) {
  t.run = [](const FixCase& c) {
    auto& a = c.args;
    if (a[0].is_none()) return V{fw::sum(c.in[0], opt_dtype(a[2]))};
    return V{fw::sum(c.in[0], a[0].ints, a[1].b, opt_dtype(a[2]))};
  };
  t.error([] { fw::sum(x23(), {0, 0}); }, "[sum] dim 0 appears multiple times in the list of dims");
  t.error([] { fw::sum(x23(), {3}); }, "[sum] Dimension out of range (expected to be in range of [-2, 1], but got 3)");
  t.error([] { fw::sum(fw::ones({}), {0, -1}); }, "appears multiple times");
}

FW_OP_TEST(mean) {
  t.run = [](const FixCase& c) {
    auto& a = c.args;
    if (a[0].is_none()) return V{fw::mean(c.in[0], opt_dtype(a[2]))};
    return V{fw::mean(c.in[0], a[0].ints, a[1].b, opt_dtype(a[2]))};
  };
  t.error([] { fw::mean(fw::arange(3)); },
          "[mean] mean(): could not infer output dtype. Input dtype must be either a floating point or complex dtype. "
          "Got: Long");
  t.error([] { fw::mean(fw::arange(3), fw::kLong); }, "Optional dtype must be either a floating point or complex dtype");
  t.error([] { fw::mean(x23(), {-3}); }, "[mean] Dimension out of range");
}

FW_OP_TEST(prod) {
  t.run = [](const FixCase& c) {
    auto& a = c.args;
    if (a[0].is_none()) return V{fw::prod(c.in[0], opt_dtype(a[2]))};
    return V{fw::prod(c.in[0], a[0].i, a[1].b, opt_dtype(a[2]))};
  };
  t.error([] { fw::prod(x23(), 2); }, "[prod] Dimension out of range");
}

#define EXTREME_ENTRY(op)                                                                              \
  FW_OP_TEST(op) {                                                                                     \
    t.run = [](const FixCase& c) { return V{fw::op(c.in[0], c.args[0].ints, c.args[1].b)}; };           \
    t.error([] { fw::op(empty03(), {0}); }, "[" #op "] Expected reduction dim 0 to have non-zero size."); \
    t.error([] { fw::op(fw::zeros({0})); }, "[" #op "] Expected reduction dim to be specified");         \
    t.error([] { fw::op(fw::ones({2}, fw::kComplexFloat)); }, "[" #op "] not implemented for dtype complex64"); \
  }
EXTREME_ENTRY(amax)
EXTREME_ENTRY(amin)

#define MAXMIN_ENTRY(op)                                                                                  \
  FW_OP_TEST(op) {                                                                                        \
    t.run = [](const FixCase& c) {                                                                        \
      if (c.args[0].is_none()) return V{fw::op(c.in[0])};                                                 \
      return pair(fw::op(c.in[0], c.args[0].i, c.args[1].b));                                             \
    };                                                                                                    \
    t.error([] { fw::op(empty03(), 0); }, "[" #op "] Expected reduction dim 0 to have non-zero size.");   \
    t.error([] { fw::op(fw::zeros({0})); },                                                               \
            "[" #op "] Expected reduction dim to be specified for input.numel() == 0. Specify the reduction dim"); \
    t.error([] { fw::op(x23(), 2); }, "[" #op "] Dimension out of range");                                \
  }
MAXMIN_ENTRY(max)
MAXMIN_ENTRY(min)

#define ARG_ENTRY(op)                                                                                   \
  FW_OP_TEST(op) {                                                                                      \
    t.run = [](const FixCase& c) { return V{fw::op(c.in[0], opt_int(c.args[0]), c.args[1].b)}; };        \
    t.error([] { fw::op(empty03(), 0); }, "[" #op "] Expected reduction dim 0 to have non-zero size.");  \
    t.error([] { fw::op(fw::zeros({0})); }, "[" #op "] Expected reduction dim to be specified");          \
    t.error([] { fw::op(x23(), -3); }, "[" #op "] Dimension out of range");                             \
  }
ARG_ENTRY(argmax)
ARG_ENTRY(argmin)

#define LOGICAL_ENTRY(op)                                                                 \
  FW_OP_TEST(op) {                                                                        \
    t.run = [](const FixCase& c) {                                                        \
      if (c.args[0].is_none()) return V{fw::op(c.in[0])};                                 \
      return V{fw::op(c.in[0], c.args[0].i, c.args[1].b)};                                \
    };                                                                                    \
    t.error([] { fw::op(x23(), 2); }, "[" #op "] Dimension out of range");                \
  }
LOGICAL_ENTRY(all)
LOGICAL_ENTRY(any)

FW_OP_TEST(count_nonzero) {
  t.run = [](const FixCase& c) { return V{fw::count_nonzero(c.in[0], opt_int(c.args[0]))}; };
  t.error([] { fw::count_nonzero(x23(), 5); }, "[count_nonzero] Dimension out of range");
}

FW_OP_TEST(var) {
  t.run = [](const FixCase& c) {
    auto& a = c.args;
    bool sd = a[0].s == "std";
    if (a[1].is_none()) return V{sd ? fw::std(c.in[0], a[2].b) : fw::var(c.in[0], a[2].b)};
    return V{sd ? fw::std(c.in[0], a[1].ints, a[2].b, a[3].b) : fw::var(c.in[0], a[1].ints, a[2].b, a[3].b)};
  };
  t.error([] { fw::var(fw::arange(3)); }, "[var] std and var only support floating point and complex dtypes");
  t.error([] { fw::std(fw::ones({2}, fw::kBool)); }, "std and var only support floating point and complex dtypes");
  t.error([] { fw::var(x23(), {1, 1}); }, "[var] dim 1 appears multiple times");
}

FW_OP_TEST(var_mean) {
  t.run = [](const FixCase& c) {
    auto& a = c.args;
    if (a[0].s == "std_mean") return pair(fw::std_mean(c.in[0], a[1].ints, a[2].b, a[3].b));
    return pair(fw::var_mean(c.in[0], a[1].ints, a[2].b, a[3].b));
  };
  t.error([] { fw::var_mean(fw::arange(3), {0}); }, "[var_mean] std and var only support floating point");
}

FW_OP_TEST(logsumexp) {
  t.run = [](const FixCase& c) { return V{fw::logsumexp(c.in[0], c.args[0].ints, c.args[1].b)}; };
  t.error([] { fw::logsumexp(fw::ones({2}, fw::kComplexFloat), {0}); }, "[logsumexp] not implemented for dtype complex64");
  t.error([] { fw::logsumexp(x23(), {2}); }, "[logsumexp] Dimension out of range");
}

FW_OP_TEST(norm) {
  t.run = [](const FixCase& c) {
    auto& a = c.args;
    fw::Scalar p = a[0].kind == FixArg::Kind::Int ? fw::Scalar(a[0].i) : fw::Scalar(a[0].f);
    if (a[1].is_none()) return V{fw::norm(c.in[0], p)};
    return V{fw::norm(c.in[0], p, a[1].ints, a[2].b)};
  };
  t.error([] { fw::norm(fw::arange(3)); }, "[norm] norm(): input dtype should be either floating point or complex. Got Long");
  t.error([] { fw::norm(x23(), 2, {0, 0}); }, "[norm] dim 0 appears multiple times");
}

FW_OP_TEST(isclose) {
  t.run = [](const FixCase& c) {
    auto& a = c.args;
    if (a[0].s == "allclose") return V{bool_tensor(fw::allclose(c.in[0], c.in[1], a[1].f, a[2].f, a[3].b))};
    if (a[0].s == "equal") return V{bool_tensor(fw::equal(c.in[0], c.in[1]))};
    return V{fw::isclose(c.in[0], c.in[1], a[1].f, a[2].f, a[3].b)};
  };
  t.error([] { fw::isclose(fw::arange(3), fw::arange(3).to(fw::kFloat)); }, "[isclose] Long did not match Float");
  t.error([] { fw::isclose(x23(), x23(), -1); }, "[isclose] rtol must be greater than or equal to zero, but got -1");
  t.error([] { fw::isclose(x23(), x23(), 0, -1); }, "[isclose] atol must be greater than or equal to zero");
  t.error([] { fw::isclose(fw::ones({2}), fw::ones({3})); }, "[isclose] The size of tensor a (2) must match");
  t.error([] { fw::allclose(fw::ones({2}), fw::ones({2}, fw::kDouble)); }, "[isclose] Float did not match Double");
}

#define SCAN_ENTRY(op)                                                                                       \
  FW_OP_TEST(op) {                                                                                           \
    t.run = [](const FixCase& c) { return V{fw::op(c.in[0], c.args[0].i, opt_dtype(c.args[1]))}; };          \
    t.error([] { fw::op(x23(), 2); }, "[" #op "] Dimension out of range (expected to be in range of [-2, 1], but got 2)"); \
    t.error([] { fw::op(fw::ones({}), 1); }, "[" #op "] Dimension out of range");                              \
  }
SCAN_ENTRY(cumsum)
SCAN_ENTRY(cumprod)

FW_OP_TEST(sort) {
  t.run = [](const FixCase& c) {
    auto& a = c.args;
    if (a[0].s == "argsort") return V{fw::argsort(c.in[0], a[1].i, a[2].b)};
    return pair(fw::sort(c.in[0], a[1].i, a[2].b));
  };
  t.error([] { fw::sort(x23(), 2); }, "[sort] Dimension out of range");
  t.error([] { fw::sort(fw::ones({2}, fw::kComplexFloat)); }, "[sort] not implemented for dtype complex64");
}

FW_OP_TEST(topk) {
  t.run = [](const FixCase& c) {
    auto& a = c.args;
    return pair(fw::topk(c.in[0], a[0].i, a[1].i, a[2].b, a[3].b));
  };
  t.error([] { fw::topk(fw::arange(3), 4); }, "[topk] selected index k out of range");
  t.error([] { fw::topk(fw::arange(3), -1); }, "[topk] selected index k out of range");
  t.error([] { fw::topk(fw::ones({}), 2); }, "[topk] selected index k out of range");
  t.error([] { fw::topk(x23(), 1, 2); }, "[topk] Dimension out of range");
}

FW_OP_TEST(median) {
  t.run = [](const FixCase& c) {
    auto& a = c.args;
    if (a[0].is_none()) return V{fw::median(c.in[0])};
    return pair(fw::median(c.in[0], a[0].i, a[1].b));
  };
  t.error([] { fw::median(empty03(), 0); }, "[median] Expected reduction dim 0 to have non-zero size.");
  t.error([] { fw::median(x23(), 2); }, "[median] Dimension out of range");
}

// ---- large inputs: parallel splits and column blocks against double references

namespace {
// Values k/64 in [-510/64, 510/64]: exact in float, so sums are exact in double.
Tensor grid(std::vector<int64_t> shape) {
  int64_t n = 1;
  for (auto s : shape) n *= s;
  return (fw::arange(n, fw::TensorOptions(fw::kFloat)).remainder(1021) - 510).div(64).reshape(shape);
}
double ref_sum(const Tensor& t) {
  Tensor c = t.to(fw::kDouble).contiguous();
  double s = 0;
  for (int64_t i = 0; i < c.numel(); i++) s += c.data_ptr<double>()[i];
  return s;
}
}  // namespace

TEST(Reduce, LargeAllReduceSplits) {
  Tensor x = grid({1000, 531});
  EXPECT_DOUBLE_EQ(x.sum().item<float>(), ref_sum(x));
  EXPECT_NEAR(x.mean().item<float>(), ref_sum(x) / x.numel(), 1e-6);
  EXPECT_FLOAT_EQ(x.amax().item<float>(), 510.f / 64);
  EXPECT_FLOAT_EQ(x.amin().item<float>(), -510.f / 64);
  Tensor y = x.clone();
  y.view({-1})[400000] = 100.f;
  EXPECT_EQ(y.argmax().item<int64_t>(), 400000);
  y.view({-1})[123457] = NAN;
  y.view({-1})[300001] = NAN;
  EXPECT_EQ(y.argmax().item<int64_t>(), 123457);
  EXPECT_TRUE(std::isnan(y.amax().item<float>()));
  EXPECT_TRUE(std::isnan(y.min().item<float>()));
  EXPECT_EQ(fw::count_nonzero(y).item<int64_t>(), fw::count_nonzero(y.contiguous().view({531, 1000}), 0).sum().item<int64_t>());
  Tensor b = fw::ones({700000}, fw::kBool);
  EXPECT_TRUE(b.all().item<bool>());
  b[654321] = false;
  EXPECT_FALSE(b.all().item<bool>());
  EXPECT_TRUE(b.any().item<bool>());
}

TEST(Reduce, LargeLayoutsMatchContiguous) {
  Tensor x = grid({64, 300, 17});
  Tensor xt = x.permute({2, 0, 1}).contiguous().permute({1, 2, 0});  // same values, permuted storage
  for (std::vector<int64_t> dims : {std::vector<int64_t>{0}, {1}, {2}, {0, 2}, {0, 1}, {1, 2}}) {
    SCOPED_TRACE(::testing::PrintToString(dims));
    FW_EXPECT_CLOSE(xt.sum(dims), x.sum(dims));
    FW_EXPECT_CLOSE(xt.amax(dims), x.amax(dims));
    FW_EXPECT_CLOSE(xt.var(dims), x.var(dims), 1e-5, 1e-5);
    FW_EXPECT_CLOSE(xt.norm(2, dims), x.norm(2, dims), 1e-5, 1e-5);
    FW_EXPECT_CLOSE(xt.logsumexp(dims), x.logsumexp(dims), 1e-5, 1e-5);
  }
  for (int64_t d = 0; d < 3; d++) {
    FW_EXPECT_CLOSE(xt.argmax(d), x.argmax(d));
    FW_EXPECT_CLOSE(std::get<1>(xt.min(d)), std::get<1>(x.min(d)));
    FW_EXPECT_CLOSE(xt.cumsum(d), x.cumsum(d));
    FW_EXPECT_CLOSE(std::get<0>(xt.sort(d)), std::get<0>(x.sort(d)));
  }
  FW_EXPECT_CLOSE(xt.argmax(), x.argmax());
}

TEST(Reduce, ColumnReduceFewOutputsSplitsRows) {
  Tensor x = grid({300000, 3});
  Tensor s = x.sum({0});
  for (int64_t j = 0; j < 3; j++) EXPECT_DOUBLE_EQ(s[j].item<float>(), ref_sum(x.select(1, j)));
  Tensor v = x.var({0}, false);
  Tensor m = x.mean({0});
  for (int64_t j = 0; j < 3; j++) {
    double mu = ref_sum(x.select(1, j)) / 300000;
    Tensor d = x.select(1, j).to(fw::kDouble) - mu;
    EXPECT_NEAR(v[j].item<float>(), ref_sum(d * d) / 300000, 1e-4);
    EXPECT_NEAR(m[j].item<float>(), mu, 1e-6);
  }
  Tensor y = x.clone();
  y[250000][1] = 99.f;
  auto [vals, idx] = y.max(0);
  EXPECT_EQ(idx[1].item<int64_t>(), 250000);
  EXPECT_FLOAT_EQ(vals[1].item<float>(), 99.f);
}

TEST(Reduce, KeepdimShapesAndOutputs) {
  Tensor x = grid({2, 3, 4});
  EXPECT_EQ(x.sum({1}, true).sizes().vec(), (std::vector<int64_t>{2, 1, 4}));
  EXPECT_EQ(x.argmax(std::nullopt, true).sizes().vec(), (std::vector<int64_t>{1, 1, 1}));
  auto [v, i] = fw::median(x, -1, true);
  EXPECT_EQ(v.sizes().vec(), (std::vector<int64_t>{2, 3, 1}));
  EXPECT_EQ(i.dtype(), fw::kLong);
  EXPECT_EQ(fw::all(fw::ones({2}, fw::kUInt8)).dtype(), fw::kUInt8);
  EXPECT_EQ(fw::cumsum(fw::ones({2}, fw::kInt8), 0).dtype(), fw::kLong);
  auto [vs, ms] = fw::var_mean(x, {0, 2});
  EXPECT_EQ(vs.sizes().vec(), (std::vector<int64_t>{3}));
  EXPECT_EQ(ms.dtype(), fw::kFloat);
}

// ---- gradients: gradcheck (and gradgradcheck where the vjp's own ops are differentiable)

namespace {
using fw::autograd::variable_list;
using Fn = std::function<Tensor(const Tensor&)>;

Tensor leaf(std::vector<int64_t> shape, double lo = -2, double hi = 2, uint64_t seed = 5) {
  fw::manual_seed(seed);
  return (fw::rand(shape, fw::kDouble) * (hi - lo) + lo).requires_grad_(true);
}

void grad_ok(const std::string& name, const Fn& f, const Tensor& x, bool second = true) {
  auto fn = [f](const variable_list& v) { return variable_list{f(v[0])}; };
  try {
    EXPECT_TRUE(fw::autograd::gradcheck(fn, {x})) << name;
    if (second) EXPECT_TRUE(fw::autograd::gradgradcheck(fn, {x})) << name;
  } catch (const std::exception& e) {
    ADD_FAILURE() << name << ": " << e.what();
  }
}
}  // namespace

TEST(Reduce, GradientsOfReductions) {
  Tensor x = leaf({3, 4});
  std::vector<std::pair<std::string, Fn>> fs = {
      {"sum", [](const Tensor& t) { return t.sum(); }},
      {"sum_dim", [](const Tensor& t) { return t.sum({1}); }},
      {"sum_keep_f32", [](const Tensor& t) { return t.sum({0}, true, fw::kDouble); }},
      {"mean", [](const Tensor& t) { return t.mean({0, 1}); }},
      {"mean_keep", [](const Tensor& t) { return t.mean({-1}, true); }},
      {"prod", [](const Tensor& t) { return t.prod(); }},
      {"prod_dim", [](const Tensor& t) { return t.prod(1, true); }},
      {"amax", [](const Tensor& t) { return t.amax({1}); }},
      {"amin_all", [](const Tensor& t) { return t.amin(); }},
      {"max_all", [](const Tensor& t) { return t.max(); }},
      {"max_dim", [](const Tensor& t) { return std::get<0>(t.max(1)); }},
      {"min_dim_keep", [](const Tensor& t) { return std::get<0>(t.min(0, true)); }},
      {"var", [](const Tensor& t) { return t.var({1}); }},
      {"var_biased_all", [](const Tensor& t) { return t.var(false); }},
      {"std", [](const Tensor& t) { return t.std({0}, true, true); }},
      {"var_mean", [](const Tensor& t) { auto [v, m] = fw::var_mean(t, {1}); return v + m * 3; }},
      {"std_mean", [](const Tensor& t) { auto [s, m] = fw::std_mean(t, {0}); return s * m; }},
      {"logsumexp", [](const Tensor& t) { return t.logsumexp({1}); }},
      {"norm2", [](const Tensor& t) { return t.norm(); }},
      {"norm1", [](const Tensor& t) { return t.norm(1, {1}); }},
      {"norm_inf", [](const Tensor& t) { return t.norm(INFINITY, {0}); }},
      {"norm_3", [](const Tensor& t) { return t.norm(3, {1}, true); }},
      {"cumsum", [](const Tensor& t) { return t.cumsum(1); }},
      {"cumsum_0", [](const Tensor& t) { return t.cumsum(0, fw::kDouble); }},
      {"cumprod", [](const Tensor& t) { return t.cumprod(1); }},
      {"median", [](const Tensor& t) { return std::get<0>(t.median(1)); }},
      {"median_all", [](const Tensor& t) { return t.median(); }},
  };
  for (auto& [name, f] : fs) grad_ok(name, f, x);
  for (auto& [name, f] : std::vector<std::pair<std::string, Fn>>{
           {"sort", [](const Tensor& t) { return std::get<0>(t.sort(1, true)); }},
           {"sort_0", [](const Tensor& t) { return std::get<0>(t.sort(0)); }},
           {"topk", [](const Tensor& t) { return std::get<0>(t.topk(2, 1)); }},
       })
    grad_ok(name, f, x, false);
}

TEST(Reduce, GradientsThroughZeros) {
  Tensor x = fw::tensor(std::vector<double>{1.5, 0, 2, -1, 0, 0, 3, 0.5, 2, -2, 1, 0}, fw::kDouble).reshape({3, 4});
  x.requires_grad_(true);
  // First derivatives only: at slices with two zeros the vjps are masked constants, so their
  // own derivatives (second order) miss the cross terms, as PyTorch's do.
  grad_ok("prod_dim_zeros", [](const Tensor& t) { return t.prod(1); }, x, false);
  grad_ok("prod_all_zeros", [](const Tensor& t) { return t.prod(); }, x, false);
  grad_ok("cumprod_zeros", [](const Tensor& t) { return t.cumprod(1); }, x, false);
  grad_ok("cumprod_zeros_0", [](const Tensor& t) { return t.cumprod(0); }, x, false);
  Tensor one_zero = fw::tensor(std::vector<double>{1.5, 0, 2, -1, 0.5, 3}, fw::kDouble).reshape({2, 3}).requires_grad_(true);
  grad_ok("prod_one_zero", [](const Tensor& t) { return t.prod(1); }, one_zero);
  grad_ok("cumprod_one_zero", [](const Tensor& t) { return t.cumprod(1); }, one_zero, false);
  // The gradient of prod at a slice's only zero is the product of the other entries.
  Tensor y = fw::tensor(std::vector<double>{2, 0, 3}, fw::kDouble).requires_grad_(true);
  y.prod().backward();
  FW_EXPECT_CLOSE(y.grad(), fw::tensor(std::vector<double>{0, 6, 0}, fw::kDouble));
  // amax shares the gradient between ties.
  Tensor z = fw::tensor(std::vector<double>{1, 3, 3}, fw::kDouble).requires_grad_(true);
  z.amax().backward();
  FW_EXPECT_CLOSE(z.grad(), fw::tensor(std::vector<double>{0, 0.5, 0.5}, fw::kDouble));
}
