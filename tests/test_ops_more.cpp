// The "more of libtorch's tensor functions" of include/fw/ops_extra.h, the n-dimensional FFTs and
// the Tensor methods added with them, against PyTorch 1.13 (tests/fixtures/gen_ops_more.py):
// values, integer outputs exactly, gradients of sum(y0 * g); then edge cases, in-place forms,
// in-place metadata changes, resize_, errors and libtorch spellings.
#include <gtest/gtest.h>

#include <cstdint>

#include <cmath>
#include <cstring>
#include <set>
#include <sstream>
#include <functional>
#include <map>

#include <fw/fw.h>

#include "tests/expect_error.h"
#include "tests/fixture.h"
#include "tests/records.h"
#include "core/functors.h"

using fw::Tensor;
using Case = fwtest::RecordCase;

namespace {

using Inputs = fwtest::RecordInputs;
using Fn = fwtest::RecordFn;
using V = std::vector<Tensor>;

fw::ScalarType int_dtype(const Case& c) {
  if (!c.opts.count("dtype")) return fw::kLong;
  return c.opt("dtype") == "u8" ? fw::kByte : fw::kInt;
}

const std::map<std::string, Fn>& table() {
  static const std::map<std::string, Fn> t = {
      {"mode",
       [](const Case& c, const Inputs& in) {
         auto [v, i] = fw::mode(in.at("x"), c.num("dim"), c.flag("keepdim"));
         return V{v, i};
       }},
      {"dist", [](const Case& c, const Inputs& in) { return V{fw::dist(in.at("a"), in.at("b"), c.real("p"))}; }},
      {"renorm",
       [](const Case& c, const Inputs& in) {
         return V{fw::renorm(in.at("x"), c.real("p"), c.num("dim"), c.real("maxnorm"))};
       }},
      {"frexp",
       [](const Case&, const Inputs& in) {
         auto [m, e] = fw::frexp(in.at("x"));
         EXPECT_EQ(e.dtype(), fw::kInt);
         return V{m, e};
       }},
      {"nextafter", [](const Case&, const Inputs& in) { return V{fw::nextafter(in.at("a"), in.at("b"))}; }},
      {"lshift",
       [](const Case& c, const Inputs& in) {
         const auto dt = int_dtype(c);
         Tensor y = fw::bitwise_left_shift(in.at("a").to(dt), in.at("b").to(dt));
         EXPECT_EQ(y.dtype(), dt);
         return V{y};
       }},
      {"rshift",
       [](const Case& c, const Inputs& in) {
         const auto dt = int_dtype(c);
         Tensor y = fw::bitwise_right_shift(in.at("a").to(dt), in.at("b").to(dt));
         EXPECT_EQ(y.dtype(), dt);
         return V{y};
       }},
      {"tensor_split",
       [](const Case& c, const Inputs& in) {
         if (c.opts.count("sections")) return fw::tensor_split(in.at("x"), c.num("sections"), c.num("dim"));
         return fw::tensor_split(in.at("x"), c.ints("indices"), c.num("dim"));
       }},
      {"hsplit",
       [](const Case& c, const Inputs& in) {
         return c.opts.count("sections") ? in.at("x").hsplit(c.num("sections")) : fw::hsplit(in.at("x"), c.ints("indices"));
       }},
      {"vsplit", [](const Case& c, const Inputs& in) { return fw::vsplit(in.at("x"), c.num("sections")); }},
      {"dsplit", [](const Case& c, const Inputs& in) { return in.at("x").dsplit(c.ints("indices")); }},
      {"movedim",
       [](const Case& c, const Inputs& in) {
         auto s = c.ints("src"), d = c.ints("dst");
         if (s.size() == 1) return V{in.at("x").movedim(s[0], d[0])};
         return V{fw::movedim(in.at("x"), s, d)};
       }},
      {"index_copy",
       [](const Case& c, const Inputs& in) {
         return V{fw::index_copy(in.at("x"), c.num("dim"), in.at("i"), in.at("src"))};
       }},
      {"put",
       [](const Case& c, const Inputs& in) { return V{in.at("x").put(in.at("i"), in.at("src"), c.flag("accumulate"))}; }},
      {"round", [](const Case& c, const Inputs& in) { return V{fw::round(in.at("x"), c.num("decimals"))}; }},
      {"fill_diagonal",
       [](const Case& c, const Inputs& in) {
         Tensor z = in.at("x").clone();
         z.fill_diagonal_(2.5, c.flag("wrap"));
         return V{z};
       }},
      {"count_nonzero", [](const Case& c, const Inputs& in) { return V{in.at("x").count_nonzero(c.ints("dims"))}; }},
      {"var_mean",
       [](const Case&, const Inputs& in) {
         auto [v, m] = fw::var_mean(in.at("x"));
         return V{v, m};
       }},
      {"std_mean",
       [](const Case& c, const Inputs& in) {
         auto [s, m] = fw::std_mean(in.at("x"), c.flag("unbiased"));
         return V{s, m};
       }},
      {"isin", [](const Case& c, const Inputs& in) { return V{fw::isin(in.at("x"), in.at("s"), false, c.flag("invert"))}; }},
      {"sum_to_size", [](const Case& c, const Inputs& in) { return V{in.at("x").sum_to_size(c.ints("size"))}; }},
      {"repeat_interleave_t",
       [](const Case& c, const Inputs& in) {
         if (!in.count("x")) return V{fw::repeat_interleave(in.at("r"))};
         if (c.none("dim")) return V{fw::repeat_interleave(in.at("x"), in.at("r"))};
         return V{in.at("x").repeat_interleave(in.at("r"), c.num("dim"))};
       }},
      {"select_scatter",
       [](const Case& c, const Inputs& in) {
         return V{fw::select_scatter(in.at("x"), in.at("src"), c.num("dim"), c.num("index"))};
       }},
      {"slice_scatter",
       [](const Case& c, const Inputs& in) {
         return V{in.at("x").slice_scatter(in.at("src"), c.num("dim"), c.num("start"), c.num("end"), c.num("step"))};
       }},
      {"diagonal_scatter",
       [](const Case& c, const Inputs& in) { return V{fw::diagonal_scatter(in.at("x"), in.at("src"), c.num("offset"))}; }},
      {"combinations",
       [](const Case& c, const Inputs& in) {
         return V{fw::combinations(in.at("x"), c.num("r"), c.flag("rep"))};
       }},
      {"channel_shuffle",
       [](const Case& c, const Inputs& in) {
         fw::nn::ChannelShuffle m(fw::nn::ChannelShuffleOptions(c.num("groups")));
         Tensor y = m(in.at("x"));
         EXPECT_TRUE(fw::equal(y, fw::channel_shuffle(in.at("x"), c.num("groups"))));
         return V{y};
       }},
      {"sort_stable",
       [](const Case& c, const Inputs& in) {
         auto [v, i] = in.at("x").sort(/*stable=*/true, 1, c.flag("desc"));
         auto [v2, i2] = fw::sort(in.at("x"), std::optional<bool>(true), 1, c.flag("desc"));
         EXPECT_TRUE(fw::equal(i, i2));
         return V{v, i, fw::argsort(in.at("x"), /*stable=*/true, 1, c.flag("desc"))};
       }},
      {"scatter_str",
       [](const Case& c, const Inputs& in) {
         Tensor y = in.at("x").scatter(1, in.at("i"), in.at("src"), c.opt("reduce"));
         Tensor z = in.at("x").detach().clone();
         z.scatter_(1, in.at("i"), in.at("src").detach(), c.opt("reduce"));
         EXPECT_TRUE(fw::equal(z, y.detach()));
         return V{y};
       }},
      {"scatter_str_value",
       [](const Case& c, const Inputs& in) {
         Tensor y = fw::scatter(in.at("x"), 1, in.at("i"), c.real("value"), c.opt("reduce"));
         Tensor z = in.at("x").detach().clone();
         z.scatter_(1, in.at("i"), c.real("value"), c.opt("reduce"));
         EXPECT_TRUE(fw::equal(z, y.detach()));
         return V{y};
       }},
      {"index_reduce",
       [](const Case& c, const Inputs& in) {
         Tensor y = in.at("x").index_reduce(c.num("dim"), in.at("i"), in.at("src"), c.opt("reduce"),
                                            c.flag("include_self"));
         Tensor z = in.at("x").detach().clone();
         z.index_reduce_(c.num("dim"), in.at("i"), in.at("src").detach(), c.opt("reduce"), c.flag("include_self"));
         EXPECT_TRUE(fw::equal(z, y.detach()));
         return V{y};
       }},
      {"var_corr",
       [](const Case& c, const Inputs& in) {
         fw::OptionalIntArrayRef dims;
         std::vector<int64_t> d;
         if (!c.none("dims")) d = c.ints("dims"), dims = fw::IntArrayRef(d);
         const Tensor& x = in.at("x");
         const std::optional<int64_t> corr = c.num("correction");
         auto [v, m] = fw::var_mean(x, dims, corr, c.flag("keepdim"));
         Tensor sd = x.std(dims, corr, c.flag("keepdim"));
         auto [s2, m2] = fw::std_mean(x, dims, corr, c.flag("keepdim"));
         EXPECT_TRUE(fw::allclose(s2, sd, 1e-12, 0, /*equal_nan=*/true));
         return V{x.var(dims, corr, c.flag("keepdim")), fw::std(x, dims, corr, c.flag("keepdim")), v, m};
       }},
      {"gradient",
       [](const Case& c, const Inputs& in) {
         const Tensor& x = in.at("x");
         const std::string mode = c.opt("mode");
         const int64_t eo = c.num("edge_order");
         if (mode == "unit") return eo == 1 ? fw::gradient(x) : fw::gradient(x, std::nullopt, std::nullopt, eo);
         if (mode == "dims") return fw::gradient(x, c.ints("dim"), eo);
         if (mode == "scalar") {
           std::vector<int64_t> d = c.ints("dim");
           if (d.size() == 1) return fw::gradient(x, std::optional<fw::Scalar>(c.real("h")), d[0], eo);
           return fw::gradient(x, fw::Scalar(c.real("h")), fw::IntArrayRef(d), eo);
         }
         if (mode == "list") {
           std::vector<fw::Scalar> hs;
           std::stringstream ss(c.opt("hs"));
           for (std::string tok; std::getline(ss, tok, ',');) hs.push_back(std::stod(tok));
           if (c.opts.count("dim")) return fw::gradient(x, fw::ArrayRef<fw::Scalar>(hs), fw::IntArrayRef(c.ints("dim")), eo);
           return fw::gradient(x, fw::ArrayRef<fw::Scalar>(hs), std::nullopt, eo);
         }
         std::vector<Tensor> coords{in.at("c0"), in.at("c2")};
         return fw::gradient(x, fw::TensorList(coords), fw::IntArrayRef(c.ints("dim")), eo);
       }},
      {"bilinear",
       [](const Case&, const Inputs& in) {
         Tensor b = in.count("b") ? in.at("b") : Tensor();
         Tensor y = fw::nn::functional::bilinear(in.at("x1"), in.at("x2"), in.at("w"), b);
         return V{y};
       }},
      {"sdpa",
       [](const Case& c, const Inputs& in) {
         Tensor m = in.count("m") ? in.at("m") : Tensor();
         if (c.name == "boolmask") m = m.to(fw::kBool);  // records store bool tensors as int64
         std::optional<double> scale;
         if (!c.none("scale")) scale = c.real("scale");
         return V{fw::scaled_dot_product_attention(in.at("q"), in.at("k"), in.at("v"), m, 0.0, c.flag("causal"), scale)};
       }},
      {"max2", [](const Case&, const Inputs& in) { return V{fw::max(in.at("a"), in.at("b")), fw::min(in.at("a"), in.at("b"))}; }},
      {"hyp",
       [](const Case& c, const Inputs& in) {
         const std::string op = c.opt("op");
         const Tensor& x = in.at("x");
         return V{op == "asinh" ? x.arcsinh() : op == "acosh" ? fw::arccosh(x) : fw::atanh(x)};
       }},
  };
  return t;
}

}  // namespace

TEST(OpsMore, MatchesPyTorch) {
  EXPECT_EQ(fwtest::run_record_table("ops_more.txt", table(), {1e-6, 1e-12, 1e-6, 1e-10}), 130);
}

TEST(OpsMore, FftnMatchesPyTorch) {
  int checked = 0;
  for (const Case& c : fwtest::load_records("ops_more.txt", "fft")) {
    SCOPED_TRACE(c.name);
    const bool complex_in = c.has("xr");
    Tensor x = complex_in ? fw::view_as_complex(c.get("xr").clone()) : c.get("x").clone();
    const bool grad = c.has("grad");
    if (grad) x.requires_grad_(true);
    fw::OptionalIntArrayRef s, dim;
    if (!c.none("s")) s = c.ints("s");
    if (!c.none("dim")) dim = c.ints("dim");
    std::optional<std::string_view> norm;
    if (!c.none("norm")) norm = c.opt("norm");
    const std::string fn = c.opt("fn");
    const std::vector<int64_t> last2{-2, -1};
    const fw::IntArrayRef d2 = dim ? *dim : fw::IntArrayRef(last2);
    Tensor y = fn == "fftn"     ? fw::fft::fftn(x, s, dim, norm)
               : fn == "ifftn"  ? fw::fft::ifftn(x, s, dim, norm)
               : fn == "rfftn"  ? fw::fft::rfftn(x, s, dim, norm)
               : fn == "irfftn" ? fw::fft::irfftn(x, s, dim, norm)
               : fn == "hfftn"  ? fw::fft::hfftn(x, s, dim, norm)
               : fn == "ihfftn" ? fw::fft::ihfftn(x, s, dim, norm)
               : fn == "fft2"   ? fw::fft::fft2(x, s, d2, norm)
               : fn == "ifft2"  ? fw::fft::ifft2(x, s, d2, norm)
               : fn == "rfft2"  ? fw::fft::rfft2(x, s, d2, norm)
               : fn == "irfft2" ? fw::fft::irfft2(x, s, d2, norm)
               : fn == "hfft2"  ? fw::fft::hfft2(x, s, d2, norm)
                                : fw::fft::ihfft2(x, s, d2, norm);
    Tensor yr = y.is_complex() ? fw::view_as_real(y) : y;
    Tensor want = c.get("y0");
    EXPECT_EQ(yr.sizes().vec(), want.sizes().vec());
    const double tol = want.dtype() == fw::kFloat ? 2e-5 : 1e-10;
    FW_EXPECT_CLOSE(yr, want, tol, tol);
    if (grad) {
      Tensor gx = fw::autograd::grad({(yr * c.get("g")).sum()}, {x})[0];
      FW_EXPECT_CLOSE(gx.is_complex() ? fw::view_as_real(gx) : gx, c.get("grad"), 1e-10, 1e-10);
    }
    checked++;
  }
  EXPECT_EQ(checked, 19);
}

TEST(OpsMore, GradcheckComposites) {
  auto x = fw::randn({3, 4}, fw::kDouble).requires_grad_(true);
  auto check = [&](const char* name, std::function<Tensor(const Tensor&)> f) {
    SCOPED_TRACE(name);
    auto g = [&](const V& in) -> V { return {f(in[0])}; };
    EXPECT_EQ(fwtest::error_of([&] { EXPECT_TRUE(fw::autograd::gradcheck(g, {x})); }), "") << "gradcheck";
    EXPECT_EQ(fwtest::error_of([&] { EXPECT_TRUE(fw::autograd::gradgradcheck(g, {x})); }), "") << "gradgradcheck";
  };
  check("renorm", [](const Tensor& t) { return fw::renorm(t, 2, 0, 0.7); });
  check("dist", [](const Tensor& t) { return fw::dist(t, t.flip({1}) * 0.3); });
  check("index_copy", [](const Tensor& t) {
    return fw::index_copy(t, 1, fw::tensor({3, 0}), t.narrow(1, 1, 2) * 2);
  });
  check("put", [](const Tensor& t) { return t.put(fw::tensor({5, 0, -1}), t.reshape({-1}).narrow(0, 2, 3), true); });
  check("asinh", [](const Tensor& t) { return fw::asinh(t); });
  check("atanh", [](const Tensor& t) { return fw::atanh(t * 0.2); });
  check("acosh", [](const Tensor& t) { return fw::acosh(t * t + 1.5); });
  check("frexp mantissa", [](const Tensor& t) { return std::get<0>(fw::frexp(t)) * 1.0; });
  check("fftn", [](const Tensor& t) { return fw::view_as_real(fw::fft::fftn(t)); });
  check("rfft2 then irfft2", [](const Tensor& t) { return fw::fft::irfft2(fw::fft::rfft2(t) * 1.5, fw::IntArrayRef{3, 4}); });
}

TEST(OpsMore, EdgeCases) {
  // mode of a 0-D tensor, ties pick the smallest value
  auto [mv, mi] = fw::mode(fw::tensor(4.0));
  EXPECT_EQ(mv.dim(), 0);
  EXPECT_EQ(mv.item<double>(), 4.0);
  EXPECT_EQ(mi.item<int64_t>(), 0);
  // shifts outside the width: 0 to the left, the sign to the right
  Tensor a = fw::tensor({5, -5}, fw::kInt);
  EXPECT_TRUE(fw::equal(fw::bitwise_left_shift(a, 32), fw::tensor({0, 0}, fw::kInt)));
  EXPECT_TRUE(fw::equal(fw::bitwise_right_shift(a, 40), fw::tensor({0, -1}, fw::kInt)));
  EXPECT_TRUE(fw::equal(a.bitwise_left_shift(fw::tensor({1, 2}, fw::kInt)), fw::tensor({10, -20}, fw::kInt)));
  // libtorch's operator methods (values from PyTorch 1.13) and the in-place bitwise forms
  EXPECT_TRUE(fw::equal(a.__lshift__(3), fw::tensor({40, -40}, fw::kInt)));
  EXPECT_TRUE(fw::equal(fw::tensor({5, -7}, fw::kInt).__rshift__(1), fw::tensor({2, -4}, fw::kInt)));
  EXPECT_TRUE(fw::equal(fw::__rshift__(fw::tensor({-128}, fw::kChar), 3), fw::tensor({-16}, fw::kChar)));
  EXPECT_TRUE(fw::equal(fw::__lshift__(fw::tensor({100}, fw::kChar), fw::tensor({1}, fw::kChar)),
                        fw::tensor({-56}, fw::kChar)));
  EXPECT_TRUE(fw::equal(fw::tensor({true}).__lshift__(1), fw::tensor({2}, fw::kLong)));  // result type int64
  EXPECT_TRUE(fw::equal(fw::bitwise_left_shift(3, fw::tensor({1, 2}, fw::kShort)), fw::tensor({6, 12}, fw::kShort)));
  Tensor i7 = fw::tensor({5, -7}, fw::kInt);
  EXPECT_TRUE(fw::equal(i7.__and__(3), fw::tensor({1, 1}, fw::kInt)));
  EXPECT_TRUE(fw::equal(i7.__or__(fw::tensor({1, 2}, fw::kChar)), fw::tensor({5, -5}, fw::kInt)));
  EXPECT_TRUE(fw::equal(fw::__xor__(i7, 1), fw::tensor({4, -8}, fw::kInt)));
  Tensor s8 = fw::tensor({1, 2}, fw::kChar);
  s8.__ilshift__(fw::tensor({7, 1}));
  EXPECT_TRUE(fw::equal(s8, fw::tensor({-128, 4}, fw::kChar)));
  Tensor bits = fw::tensor({12, 10}, fw::kLong);
  bits &= fw::tensor({10, 6}, fw::kLong);
  EXPECT_TRUE(fw::equal(bits, fw::tensor({8, 2}, fw::kLong)));
  bits |= 5;
  bits ^= fw::tensor({1, 1}, fw::kLong);
  EXPECT_TRUE(fw::equal(bits, fw::tensor({12, 6}, fw::kLong)));
  bits.__irshift__(1).bitwise_not_();
  EXPECT_TRUE(fw::equal(bits, fw::tensor({-7, -4}, fw::kLong)));
  Tensor flags = fw::tensor({true, false});
  flags.__iand__(fw::tensor({true, true}));
  EXPECT_TRUE(fw::equal(flags, fw::tensor({true, false})));
  EXPECT_ERROR(flags.__iand__(fw::tensor({1, 1})), "[bitwise_and_] result type int64 can't be cast to the desired output type bool");
  EXPECT_ERROR(fw::tensor({1.5}).__rshift__(1), "[bitwise_right_shift] expects integer operands");
  EXPECT_ERROR(fw::tensor({1, 2}, fw::kInt).__ilshift__(1.5), "[bitwise_left_shift] expects an integer shift");
  // tensor_split from a tensor: 0-D = sections, 1-D = indices
  auto p = fw::tensor_split(fw::arange(7), fw::tensor(3));
  ASSERT_EQ(p.size(), 3u);
  EXPECT_EQ(p[0].numel(), 3);
  auto q = fw::tensor_split(fw::arange(7), fw::tensor({2, 4}));
  ASSERT_EQ(q.size(), 3u);
  EXPECT_EQ(q[2].numel(), 3);
  // movedim on a 0-D tensor, swapdims/moveaxis spellings
  EXPECT_EQ(fw::movedim(fw::tensor(1.0), 0, 0).dim(), 0);
  Tensor x = fw::randn({2, 3, 4});
  EXPECT_TRUE(fw::equal(fw::moveaxis(x, 0, 2), x.permute({1, 2, 0})));
  EXPECT_TRUE(fw::equal(fw::swapdims(x, 0, 2), x.transpose(0, 2)));
  EXPECT_TRUE(fw::equal(x.swapaxes(0, 1), x.transpose(0, 1)));
  // isreal, positive, T/mT/H/mH, data()
  Tensor c = fw::complex(fw::tensor({1.0, 2.0}), fw::tensor({0.0, 1.0}));
  EXPECT_TRUE(fw::equal(fw::isreal(c), fw::tensor({true, false})));
  EXPECT_TRUE(fw::isreal(x).all().item<bool>());
  EXPECT_TRUE(fw::positive(x).is_same(x));
  EXPECT_EQ(x.T().sizes().vec(), (std::vector<int64_t>{4, 3, 2}));
  Tensor m = fw::complex(fw::randn({2, 3}), fw::randn({2, 3}));
  EXPECT_TRUE(fw::equal(m.H(), m.t().conj()));
  EXPECT_TRUE(fw::equal(m.mH(), m.transpose(-2, -1).conj()));
  Tensor w = fw::randn({3}, fw::requires_grad());
  Tensor wd = w.data();
  EXPECT_FALSE(wd.requires_grad());
  EXPECT_EQ(wd.data_ptr(), w.data_ptr());
  // range includes its end; randint_like keeps the dtype
  EXPECT_TRUE(fw::equal(fw::range(1, 4), fw::tensor({1.f, 2.f, 3.f, 4.f})));
  EXPECT_TRUE(fw::equal(fw::range(0, 1, 0.5, fw::kDouble), fw::tensor({0.0, 0.5, 1.0})));
  Tensor ri = fw::randint_like(fw::zeros({50}, fw::kInt), 3, 6);
  EXPECT_EQ(ri.dtype(), fw::kInt);
  EXPECT_GE(ri.min().item<int64_t>(), 3);
  EXPECT_LE(ri.max().item<int64_t>(), 5);
  // the aliases compute their targets
  Tensor y = fw::rand({5}) * 0.9;
  EXPECT_TRUE(fw::equal(fw::arccos(y), fw::acos(y)));
  EXPECT_TRUE(fw::equal(fw::arctan2(y, y + 1), fw::atan2(y, y + 1)));
  EXPECT_TRUE(fw::equal(fw::divide(fw::tensor({7, -7}), 2, "floor"), fw::tensor({3, -4})));
  EXPECT_TRUE(fw::equal(fw::subtract(y, 1, 2), y - 2));
  EXPECT_TRUE(fw::equal(fw::multiply(y, y), y * y));
  EXPECT_TRUE(fw::equal(fw::fix(fw::tensor({-1.5, 1.5})), fw::tensor({-1.0, 1.0})));
  EXPECT_TRUE(fw::equal(fw::row_stack({y, y}), fw::vstack({y, y})));
  FW_EXPECT_CLOSE(fw::mvlgamma(y + 2, 3), fw::special::multigammaln(y + 2, 3), 0, 0);
  // a scalar left operand keeps double precision for float64 tensors (it was rounded to float32)
  EXPECT_EQ((0.8 / fw::tensor({5.290518110322588}, fw::kDouble)).item<double>(), 0.8 / 5.290518110322588);
  EXPECT_EQ((0.8 / fw::tensor({2.0}, fw::kFloat)).dtype(), fw::kFloat);
  EXPECT_EQ((1.5 / fw::tensor({2, 4})).dtype(), fw::kFloat);
  EXPECT_TRUE(fw::equal(7 % fw::tensor({2, 4}), fw::tensor({1, 3})));
  EXPECT_EQ((2.5 % fw::tensor({2.0}, fw::kDouble)).item<double>(), 0.5);
  fw::set_num_interop_threads(3);
  EXPECT_EQ(fw::get_num_interop_threads(), 3);
  EXPECT_TRUE(x.to(fw::kCPU).is_same(x));
}

TEST(OpsMore, InPlaceForms) {
  Tensor x = fw::tensor({{1.0, -2.0}, {3.5, 4.0}});
  Tensor y = x.clone();
  y.tril_();
  EXPECT_TRUE(fw::equal(y, x.tril()));
  y = x.clone();
  y.triu_(1);
  EXPECT_TRUE(fw::equal(y, x.triu(1)));
  y = x.clone();
  y.cumsum_(1);
  EXPECT_TRUE(fw::equal(y, x.cumsum(1)));
  y = x.clone();
  y.fmod_(3);
  EXPECT_TRUE(fw::equal(y, x.fmod(3)));
  y = x.clone();
  y.remainder_(fw::tensor(3.0));
  EXPECT_TRUE(fw::equal(y, x.remainder(3)));
  y = x.clone();
  y.lerp_(fw::zeros_like(x), 0.5);
  EXPECT_TRUE(fw::equal(y, x * 0.5));
  y = x.clone();
  y.div_(2, "trunc");
  EXPECT_TRUE(fw::equal(y, fw::tensor({{0.0, -1.0}, {1.0, 2.0}})));
  y = x.clone();
  y.round_(0);
  EXPECT_TRUE(fw::equal(y, fw::round(x)));
  y = x.clone();
  y.index_fill_(0, fw::tensor({1}), -1);
  EXPECT_TRUE(fw::equal(y, fw::tensor({{1.0, -2.0}, {-1.0, -1.0}})));
  y = x.clone();
  y.index_copy_(1, fw::tensor({0}), fw::tensor({{9.0}, {8.0}}));
  EXPECT_TRUE(fw::equal(y, fw::tensor({{9.0, -2.0}, {8.0, 4.0}})));
  y = x.clone();
  y.put_(fw::tensor({3}), fw::tensor({0.5}));
  EXPECT_EQ(y[1][1].item<double>(), 0.5);
  y = x.clone();
  y.masked_scatter_(x > 0, fw::tensor({7.0, 8.0, 9.0}));
  EXPECT_TRUE(fw::equal(y, fw::tensor({{7.0, -2.0}, {8.0, 9.0}})));
  y = x.clone();
  y.logical_not_();
  EXPECT_TRUE(fw::equal(y, fw::zeros_like(x)));
  y = x.clone();
  y.addmm_(fw::eye(2, x.options()), x, 0, 1);
  EXPECT_TRUE(fw::equal(y, x));
  y = fw::tensor({std::nan(""), 1.0});
  y.nan_to_num_(0.0);
  EXPECT_TRUE(fw::equal(y, fw::tensor({0.0, 1.0})));
  y = fw::tensor({{3.0, 4.0}, {0.3, 0.4}});
  y.renorm_(2, 0, 1);
  FW_EXPECT_CLOSE(y, fw::tensor({{0.6, 0.8}, {0.3, 0.4}}), 1e-6, 1e-6);
  // an integer tensor cannot take a float result in place
  Tensor i = fw::tensor({1, 2});
  EXPECT_ERROR(i.div_(fw::tensor(2), std::nullopt), "[div_] result type float32 can't be cast to the desired output type int64");
  EXPECT_ERROR(i.lerp_(i, 0.5), "lerp");
  // allclose/isclose/equal/is_nonzero/is_signed
  EXPECT_TRUE(x.allclose(x + 1e-9));
  EXPECT_TRUE(x.isclose(x).all().item<bool>());
  EXPECT_TRUE(x.equal(x.clone()));
  EXPECT_TRUE(fw::tensor({2.0}).is_nonzero());
  EXPECT_FALSE(fw::tensor(0).is_nonzero());
  EXPECT_ERROR(x.is_nonzero(), "[is_nonzero] Boolean value of Tensor with more than one value is ambiguous");
  EXPECT_TRUE(x.is_signed());
  EXPECT_FALSE(fw::zeros({1}, fw::kByte).is_signed());
  EXPECT_EQ(x.count_nonzero().item<int64_t>(), 4);
  EXPECT_TRUE(fw::equal(x.count_nonzero(0), fw::tensor({2, 2})));
}

TEST(OpsMore, InPlaceMetadataAndResize) {
  Tensor x = fw::arange(6.0).reshape({1, 2, 3});
  Tensor alias = x;  // shares the handle's impl, so it sees the change too (as libtorch)
  x.squeeze_();
  EXPECT_EQ(alias.sizes().vec(), (std::vector<int64_t>{2, 3}));
  x.unsqueeze_(2);
  EXPECT_EQ(x.sizes().vec(), (std::vector<int64_t>{2, 3, 1}));
  x.squeeze_(-1);
  x.t_();
  EXPECT_EQ(x.sizes().vec(), (std::vector<int64_t>{3, 2}));
  EXPECT_EQ(x[2][1].item<double>(), 5.0);
  x.transpose_(0, 1);
  EXPECT_TRUE(x.is_contiguous());
  x.as_strided_({3}, {2}, 0);
  EXPECT_TRUE(fw::equal(x, fw::tensor({0.0, 2.0, 4.0})));
  Tensor g = fw::ones({2, 1}, fw::requires_grad());
  EXPECT_ERROR(g.squeeze_(), "[squeeze_] in-place view ops are not supported on tensors that require grad");

  // resize_: shrinking keeps the storage, growing keeps the old values in front
  Tensor r = fw::arange(4.0);
  Tensor view = r.view({2, 2});
  r.resize_({2});
  EXPECT_TRUE(fw::equal(r, fw::tensor({0.0, 1.0})));
  r.resize_({3, 4});
  EXPECT_EQ(r.sizes().vec(), (std::vector<int64_t>{3, 4}));
  EXPECT_TRUE(fw::equal(r.reshape({-1}).narrow(0, 0, 4), fw::tensor({0.0, 1.0, 2.0, 3.0})));
  EXPECT_TRUE(fw::equal(view, fw::tensor({{0.0, 1.0}, {2.0, 3.0}})));  // the other view reads the grown storage
  r.resize_as_(fw::zeros({2, 2, 2}));
  EXPECT_EQ(r.numel(), 8);
  EXPECT_ERROR(r.resize_({-1, 2}), "[resize_] Trying to create tensor with negative dimension -1");
  EXPECT_ERROR(fw::ones({2}, fw::requires_grad()).resize_({4}), "[resize_] cannot resize variables that require grad");
  float buf[2] = {1, 2};
  Tensor blob = fw::from_blob(buf, {2}, fw::kFloat);
  EXPECT_ERROR(blob.resize_({8}), "not resizable");
}

TEST(OpsMore, SetDataAndPrint) {
  fw::nn::Linear l(3, 4);
  Tensor alias = l->parameters()[0];
  {
    fw::NoGradGuard g;
    l->weight.set_data(fw::ones({4, 3}));
  }
  EXPECT_TRUE(fw::equal(alias, fw::ones({4, 3})));  // every handle sees the new data
  EXPECT_TRUE(alias.requires_grad());
  EXPECT_TRUE(alias.is_leaf());
  l(fw::ones({2, 3})).sum().backward();
  EXPECT_TRUE(fw::equal(l->weight.grad(), fw::full({4, 3}, 2.0)));
  Tensor t = fw::zeros({2});
  t.set_data(fw::arange(6, fw::kDouble).view({2, 3}).t());
  EXPECT_EQ(t.dtype(), fw::kDouble);
  EXPECT_EQ(t.sizes().vec(), (std::vector<int64_t>{3, 2}));
  EXPECT_EQ(t[2][1].item<double>(), 5.0);
  EXPECT_ERROR(l->bias.set_data(fw::tensor({1, 2, 3, 4})), "[set_data] a tensor that requires grad needs floating point data");
  // Tensor::print writes type and sizes to stderr; fw::print writes the tensor to stdout (libtorch's)
  ::testing::internal::CaptureStderr();
  fw::ones({2, 3}).print();
  fw::zeros({4}, fw::kLong).print();
  EXPECT_EQ(::testing::internal::GetCapturedStderr(), "[CPUFloatType [2, 3]]\n[CPULongType [4]]\n");
  ::testing::internal::CaptureStdout();
  fw::print(fw::zeros({2}, fw::kLong));
  EXPECT_EQ(::testing::internal::GetCapturedStdout(), " 0\n 0\n[ CPULongType{2} ]\n");
  fw::autograd::AutoGradMode off(false);
  EXPECT_FALSE(fw::GradMode::is_enabled());
}

TEST(OpsMore, Errors) {
  Tensor x = fw::randn({3, 4});
  EXPECT_ERROR(fw::mode(fw::zeros({0})), "[mode] Expected reduction dim 0 to have non-zero size.");
  EXPECT_ERROR(fw::renorm(x, 0, 0, 1), "[renorm] non-positive norm not supported");
  EXPECT_ERROR(fw::renorm(x, 2, 0, -1), "[renorm] expected maxnorm to be >= 0");
  EXPECT_ERROR(fw::renorm(fw::randn({3}), 2, 0, 1), "[renorm] input needs at least 2 dimensions");
  EXPECT_ERROR(fw::frexp(fw::tensor({1, 2})), "[frexp] torch.frexp() only supports floating-point dtypes");
  EXPECT_ERROR(fw::nextafter(fw::tensor({1}), fw::tensor({2})), "[nextafter] not implemented for dtype int64");
  EXPECT_ERROR(fw::bitwise_left_shift(x, x), "[bitwise_left_shift] expects integer operands, got float32 and float32");
  EXPECT_ERROR(fw::tensor_split(x, 0), "[tensor_split] number of sections must be larger than 0, got 0");
  EXPECT_ERROR(fw::tensor_split(fw::tensor(1.0), 2), "[tensor_split] expected at least a 1-dimensional tensor");
  EXPECT_ERROR(fw::tensor_split(x, fw::tensor({1.0})), "expected tensor_indices_or_sections to have dtype of long");
  EXPECT_ERROR(fw::hsplit(x, 3), "[hsplit] torch.hsplit attempted to split along dimension 1, but the size of the "
                                 "dimension 4 is not divisible by the split_size 3!");
  EXPECT_ERROR(fw::vsplit(fw::randn({4}), 2), "[vsplit] torch.vsplit requires a tensor with at least 2 dimensions");
  EXPECT_ERROR(fw::dsplit(x, 2), "[dsplit] torch.dsplit requires a tensor with at least 3 dimensions");
  EXPECT_ERROR(fw::movedim(x, {0, 1}, {1}), "[movedim] Invalid source or destination dims");
  EXPECT_ERROR(fw::movedim(x, {0, 0}, {1, 0}), "[movedim] repeated dim in `source` (0)");
  EXPECT_ERROR(fw::movedim(x, 2, 0), "[movedim] Dimension out of range");
  EXPECT_ERROR(fw::index_copy(x, 0, fw::tensor({0, 1}), fw::randn({3, 4})),
               "[index_copy] Number of indices (2) should be equal to source.size(dim) (3)");
  EXPECT_ERROR(fw::index_copy(x, 0, fw::tensor({0.0}), fw::randn({1, 4})), "[index_copy] Expected a long tensor for index");
  EXPECT_ERROR(fw::put(x, fw::tensor({12}), fw::tensor({1.f})), "[put] index 12 is out of bounds for a tensor of 12 elements");
  EXPECT_ERROR(fw::put(x, fw::tensor({1, 2}), fw::tensor({1.f})), "[put] Expected source and index to have the same number");
  EXPECT_ERROR(fw::round(fw::tensor({1, 2}), 2), "[round] rounding to decimals is not implemented for dtype int64");
  EXPECT_ERROR(fw::zeros({2, 3, 4}).fill_diagonal_(1), "[fill_diagonal_] all dimensions of input must be of equal length");
  EXPECT_ERROR(fw::positive(fw::tensor({true})), "[positive] The `+` operator, on a bool tensor is not supported.");
  EXPECT_ERROR(fw::randn({2, 2, 2}).H(), "[H] tensor.H is only supported on matrices");
  EXPECT_ERROR(fw::randn({3}).mH(), "[mH] tensor.mH is only supported on matrices or batches of matrices");
  EXPECT_ERROR(fw::fft::fftn(x, fw::IntArrayRef{2, 3, 4}), "[fft_fftn] Got shape with 3 values but input tensor only has 2");
  EXPECT_ERROR(fw::fft::fftn(x, std::nullopt, fw::IntArrayRef{0, -2}), "[fft_fftn] dims must be unique");
  EXPECT_ERROR(fw::fft::rfftn(fw::view_as_complex(fw::randn({2, 2}))), "[fft_rfftn] rfftn expects a real-valued input");
  EXPECT_ERROR(fw::range(0, 1, 0), "[range] step must be nonzero");
  EXPECT_ERROR(fw::range(0, 1, -1), "[range] upper bound and larger bound inconsistent with step sign");
  EXPECT_ERROR(fw::combinations(x, 2), "[combinations] Expect a 1D vector, but got shape [3, 4]");
  EXPECT_ERROR(fw::combinations(fw::arange(3), -1), "[combinations] Expect a non-negative number, but got -1");
  EXPECT_ERROR(fw::combinations(fw::arange(3000), 4), "[combinations] the result for 3000 elements and r = 4 has more");
  EXPECT_EQ(fw::combinations(fw::arange(3), 0).sizes(), (std::vector<int64_t>{0}));
  EXPECT_EQ(fw::combinations(fw::arange(0), 2, true).sizes(), (std::vector<int64_t>{0, 2}));
  EXPECT_ERROR(fw::channel_shuffle(x, 2), "[channel_shuffle] expects input with > 2 dims, but got input with sizes [3, 4]");
  EXPECT_ERROR(fw::channel_shuffle(fw::randn({2, 3, 4}), 0), "Number of groups to divide channels in must be positive");
  EXPECT_ERROR(fw::channel_shuffle(fw::randn({2, 3, 4}), 2),
               "Number of channels must be divisible by groups. Got 3 channels and 2 groups.");
}

TEST(OpsMore, CompatSpellings) {
  Tensor x = fw::randn({4, 6}, fw::kDouble);
  Tensor idx = fw::tensor({{0, 2}, {1, 1}, {3, 0}, {5, 5}});
  EXPECT_ERROR(x.scatter(1, idx, x, "mean"), "[scatter] reduce argument must be either add or multiply, got 'mean'");
  EXPECT_ERROR(x.index_reduce(0, fw::tensor({0}), x.narrow(0, 0, 1), "sum"),
               "[index_reduce] reduce argument must be either prod, mean, amax or amin, got sum");
  EXPECT_ERROR(x.index_reduce(0, fw::tensor({0, 1}), x.narrow(0, 0, 1), "prod"),
               "[index_reduce] Number of indices (2) should be equal to source.size(dim) (1)");
  EXPECT_ERROR(x.index_reduce(0, fw::tensor({0}), fw::randn({1, 5}, fw::kDouble), "prod"),
               "must match in every dimension but 0");
  EXPECT_ERROR(x.index_reduce(0, fw::tensor({{0}}), x.narrow(0, 0, 1), "prod"), "Index is supposed to be a vector");
  EXPECT_ERROR(x.index_reduce(0, fw::tensor({9}), x.narrow(0, 0, 1), "prod"), "index 9 is out of bounds");
  // Aliases give the functions they name.
  auto parts = fw::unsafe_split(x, 4, 1);
  ASSERT_EQ(parts.size(), 2u);
  EXPECT_TRUE(fw::equal(parts[1], x.narrow(1, 4, 2)));
  EXPECT_EQ(x.unsafe_chunk(3, 1).size(), 3u);
  EXPECT_EQ(fw::unsafe_split_with_sizes(x, {1, 3}, 0)[1].size(0), 3);
  Tensor m = fw::randn({3, 3}, fw::kDouble);
  FW_EXPECT_CLOSE(fw::matrix_power(m, 3), m.mm(m).mm(m), 1e-12, 1e-12);
  FW_EXPECT_CLOSE(fw::pinverse(x), fw::linalg::pinv(x, 1e-15), 0, 0);
  auto [q, r] = fw::qr(fw::randn({5, 3}, fw::kDouble), /*some=*/false);
  EXPECT_EQ(q.sizes(), (std::vector<int64_t>{5, 5}));
  EXPECT_EQ(r.sizes(), (std::vector<int64_t>{5, 3}));
  // The unbiased / correction forms agree where they overlap.
  FW_EXPECT_CLOSE(fw::var(x, fw::OptionalIntArrayRef(), std::optional<int64_t>()), x.var(), 0, 0);
  FW_EXPECT_CLOSE(x.std(fw::IntArrayRef{1}, std::optional<int64_t>(0), true), x.std({1}, false, true), 0, 0);
}

// The minimum of a signed integer type divided by -1 overflows (a SIGFPE trap on x86): the
// quotient wraps to the minimum again and the remainder is 0, for every division op (fused kernels
// use the same functors, core/functors.h; found by a bug hunt: the process died).
TEST(OpsMore, IntegerMinimumDividedByMinusOne) {
  for (auto dt : {fw::kInt, fw::kLong, fw::kShort, fw::kChar}) {
    const int64_t lo = dt == fw::kInt ? INT32_MIN : dt == fw::kLong ? INT64_MIN : dt == fw::kShort ? INT16_MIN : INT8_MIN;
    Tensor a = fw::tensor({lo, lo, int64_t(7), int64_t(-7)}).to(dt), b = fw::tensor({-1, 2, -1, -1}).to(dt);
    EXPECT_TRUE(fw::equal(fw::floor_divide(a, b), fw::tensor({lo, lo / 2, int64_t(-7), int64_t(7)}).to(dt)))
        << fw::dtype_name(dt) << ": " << fw::floor_divide(a, b);
    EXPECT_TRUE(fw::equal(fw::div(a, b, "trunc"), fw::tensor({lo, lo / 2, int64_t(-7), int64_t(7)}).to(dt)));
    EXPECT_TRUE(fw::equal(fw::remainder(a, b), fw::zeros({4}, dt)));
    EXPECT_TRUE(fw::equal(fw::fmod(a, b), fw::zeros({4}, dt)));
    EXPECT_TRUE(fw::equal(fw::remainder(a, -1), fw::zeros({4}, dt)));
  }
}

TEST(OpsMore, MethodsAndFreeFunctions) {
  Tensor x = fw::tensor({{-1.5, 0.0, 2.0}, {3.0, -0.25, 0.5}}, fw::kDouble);
  Tensor y = fw::tensor({{2.0, -1.0, 0.5}, {1.0, 4.0, -2.0}}, fw::kDouble);
  EXPECT_TRUE(fw::equal(x.copysign(y), fw::copysign(x, y)));
  EXPECT_TRUE(fw::equal(x.hypot(y), fw::hypot(x, y)));
  EXPECT_TRUE(fw::equal(x.fmax(y), fw::fmax(x, y)));
  EXPECT_TRUE(fw::equal(x.fmin(y), fw::fmin(x, y)));
  EXPECT_TRUE(fw::equal(x.signbit(), fw::signbit(x)));
  EXPECT_TRUE(fw::equal((x / 0.0).isposinf(), fw::isposinf(x / 0.0)));
  EXPECT_TRUE(fw::equal((x / 0.0).isneginf(), fw::isneginf(x / 0.0)));
  EXPECT_TRUE(fw::equal(x.deg2rad().rad2deg(), fw::rad2deg(fw::deg2rad(x))));
  EXPECT_TRUE(fw::equal(x.sinc(), fw::sinc(x)));
  EXPECT_TRUE(fw::equal(x.ldexp(fw::ones_like(x)), x * 2));
  EXPECT_TRUE(fw::equal(x.float_power(2), fw::float_power(x, 2)));
  EXPECT_TRUE(fw::equal(x.floor_divide(y), fw::floor_divide(x, y)));
  EXPECT_TRUE(fw::equal(x.true_divide(y), x / y));
  EXPECT_TRUE(fw::equal(x.heaviside(y), fw::heaviside(x, y)));
  Tensor a = fw::tensor({12, 18}), b = fw::tensor({8, 27});
  EXPECT_TRUE(fw::equal(a.gcd(b), fw::tensor({4, 9})));
  EXPECT_TRUE(fw::equal(a.lcm(b), fw::tensor({24, 54})));
  EXPECT_TRUE(fw::equal(x.nextafter(y), fw::nextafter(x, y)));
  EXPECT_TRUE(fw::equal(x.inner(y), fw::inner(x, y)));
  EXPECT_TRUE(fw::equal(x[0].ger(y[0]), fw::outer(x[0], y[0])));
  EXPECT_TRUE(fw::equal(x.diff(), fw::diff(x)));
  EXPECT_TRUE(fw::equal(x.msort(), fw::msort(x)));
  EXPECT_EQ(x.ravel().dim(), 1);
  EXPECT_EQ(fw::ravel(x).numel(), 6);
  Tensor nc = x.narrow_copy(1, 1, 2);
  EXPECT_TRUE(nc.is_contiguous());
  EXPECT_NE(nc.data_ptr(), x.data_ptr());
  EXPECT_TRUE(fw::equal(fw::narrow_copy(x, 1, 1, 2), x.narrow(1, 1, 2)));
  auto [q, r] = y.qr();
  FW_EXPECT_CLOSE(q.matmul(r), y, 1e-12, 1e-12);
  EXPECT_TRUE(fw::equal(x.hardshrink(1.0), fw::tensor({{-1.5, 0.0, 2.0}, {3.0, 0.0, 0.0}}, fw::kDouble)));
  Tensor sr = fw::zeros({3}, fw::kDouble);
  sr.scatter_reduce_(0, fw::tensor({0, 0, 2}), fw::tensor({1.0, 2.0, 5.0}, fw::kDouble), "sum");
  EXPECT_TRUE(fw::equal(sr, fw::tensor({3.0, 0.0, 5.0}, fw::kDouble)));
  EXPECT_TRUE(fw::is_floating_point(x));
  EXPECT_FALSE(fw::is_complex(x));
  EXPECT_TRUE(fw::is_nonzero(fw::tensor(3)));
  EXPECT_EQ(fw::numel(x), 6);
  EXPECT_TRUE(fw::is_signed(x));
  FW_EXPECT_CLOSE(x.i0(), fw::special::i0(x), 0, 0);
  Tensor xi = x.clone();
  xi.i0_();
  FW_EXPECT_CLOSE(xi, fw::i0(x), 0, 0);
  Tensor pa = fw::tensor({0.5, 2.0}, fw::kDouble), px = fw::tensor({1.0, 3.0}, fw::kDouble);
  FW_EXPECT_CLOSE(pa.igamma(px) + pa.igammac(px), fw::ones({2}, fw::kDouble), 1e-14, 1e-14);
  // isin with scalars, normal with tensor parameters
  EXPECT_TRUE(fw::equal(fw::isin(a, 18), fw::tensor({false, true})));
  EXPECT_TRUE(fw::equal(fw::isin(12, a), fw::tensor(true)));
  fw::manual_seed(5);
  Tensor n1 = fw::normal(fw::full({20000}, 3.0), 0.5);
  EXPECT_NEAR(n1.mean().item<float>(), 3.0, 0.02);
  EXPECT_NEAR(n1.std().item<float>(), 0.5, 0.02);
  Tensor n2 = fw::normal(-1.0, fw::full({20000}, 2.0));
  EXPECT_NEAR(n2.mean().item<float>(), -1.0, 0.06);
  EXPECT_NEAR(n2.std().item<float>(), 2.0, 0.05);
  EXPECT_ERROR(x.sum_to_size({4}), "[sum_to_size] size [4] is not expandable to size [2, 3]");
  EXPECT_ERROR(fw::repeat_interleave(fw::tensor({1, -1})), "[repeat_interleave] repeats can not be negative, got -1");
  EXPECT_ERROR(fw::select_scatter(x, fw::zeros({2}), 0, 0), "[select_scatter] expected src to have a size equal");
  // linear-algebra methods are the fw/linalg_more.h functions
  Tensor m = fw::tensor({{2.0, 0.5}, {0.25, 1.5}}, fw::kDouble);
  Tensor l = fw::tensor({{2.0, 0.0}, {0.5, 1.0}}, fw::kDouble);
  Tensor rhs = fw::tensor({{1.0}, {2.0}}, fw::kDouble);
  FW_EXPECT_CLOSE(m.matrix_exp(), fw::matrix_exp(m), 0, 0);
  FW_EXPECT_CLOSE(fw::tensor({1.0, 0.0, 0.0}).cross(fw::tensor({0.0, 1.0, 0.0})), fw::tensor({0.0, 0.0, 1.0}), 0, 0);
  EXPECT_EQ(fw::tensor({1.0, 2.0}).vdot(fw::tensor({3.0, 4.0})).item<float>(), 11.f);
  FW_EXPECT_CLOSE(rhs.cholesky_solve(l), fw::cholesky_solve(rhs, l), 0, 0);
  FW_EXPECT_CLOSE(l.cholesky_inverse(), fw::cholesky_inverse(l), 0, 0);
  FW_EXPECT_CLOSE(std::get<0>(rhs.triangular_solve(l, false)), std::get<0>(fw::triangular_solve(rhs, l, false)), 0, 0);
  auto [lu, piv] = fw::linalg::lu_factor(m);
  FW_EXPECT_CLOSE(m.matmul(rhs.lu_solve(lu, piv)), rhs, 1e-12, 1e-12);
}

TEST(OpsMore, Multinomial) {
  fw::manual_seed(11);
  // With replacement: the frequencies of 40000 draws match the weights (not normalised).
  Tensor w = fw::tensor({1.0, 0.0, 2.0, 7.0});
  Tensor s = fw::multinomial(w, 40000, /*replacement=*/true);
  EXPECT_EQ(s.dtype(), fw::kLong);
  EXPECT_EQ(s.sizes(), (std::vector<int64_t>{40000}));
  Tensor counts = fw::bincount(s, {}, 4).to(fw::kDouble) / 40000;
  FW_EXPECT_CLOSE(counts, fw::tensor({0.1, 0.0, 0.2, 0.7}, fw::kDouble), 0, 0.01);
  // Without replacement: distinct categories per row, never a zero weight, and the heavier
  // category first more often.
  Tensor rows = fw::tensor({{0.0, 5.0, 1.0, 1.0, 0.0}, {1.0, 1.0, 1.0, 1.0, 1.0}});
  int heavy_first = 0;
  for (int rep = 0; rep < 200; rep++) {
    Tensor t = fw::multinomial(rows, 3);
    ASSERT_EQ(t.sizes(), (std::vector<int64_t>{2, 3}));
    auto a = t.accessor<int64_t, 2>();
    for (int r = 0; r < 2; r++) {
      std::set<int64_t> seen{a[r][0], a[r][1], a[r][2]};
      EXPECT_EQ(seen.size(), 3u);
      if (r == 0) {
        EXPECT_EQ(seen.count(0) + seen.count(4), 0u);
        heavy_first += a[0][0] == 1;
      }
    }
  }
  EXPECT_GT(heavy_first, 120);  // P(first = 1) = 5/7
  // The same seed gives the same draws.
  fw::manual_seed(3);
  Tensor d1 = fw::multinomial(rows, 2);
  fw::manual_seed(3);
  EXPECT_TRUE(fw::equal(fw::multinomial(rows, 2), d1));
  EXPECT_ERROR(fw::multinomial(fw::ones({2, 2, 2}), 1), "[multinomial] prob_dist must be 1 or 2 dim");
  EXPECT_ERROR(fw::multinomial(fw::tensor({1, 2}), 1), "only supports floating-point dtypes");
  EXPECT_ERROR(fw::multinomial(w, 0), "cannot sample n_sample <= 0 samples");
  EXPECT_ERROR(fw::multinomial(w, 5), "cannot sample n_sample > prob_dist.size(-1) samples without replacement");
  EXPECT_ERROR(fw::multinomial(w, 4), "not enough non-negative category to sample");
  EXPECT_ERROR(fw::multinomial(fw::tensor({1.0, -1.0}), 1, true), "contains either `inf`, `nan` or element < 0");
  EXPECT_ERROR(fw::multinomial(fw::zeros({3}), 1, true), "sum of probabilities <= 0");
}

TEST(OpsMore, GradientAttentionBilinearErrors) {
  Tensor x = fw::randn({3, 4});
  EXPECT_ERROR(fw::gradient(x, std::nullopt, std::nullopt, 3), "[gradient] torch.gradient only supports edge_order=1 and edge_order=2, got 3");
  EXPECT_ERROR(fw::gradient(fw::randn({2, 4}), std::nullopt, std::nullopt, 2),
               "[gradient] torch.gradient expected each dimension size to be at least edge_order+1, but dim 0 of shape [2, 4] has size 2");
  std::vector<fw::Scalar> three{1.0, 2.0, 3.0};
  EXPECT_ERROR(fw::gradient(x, fw::ArrayRef<fw::Scalar>(three), std::nullopt),
               "a list of length equal to 'self.dim() = 2', since dim argument was not given, but got a list of length 3");
  EXPECT_ERROR(fw::gradient(x, fw::ArrayRef<fw::Scalar>(three), fw::IntArrayRef{0, 1}),
               "but got a spacing argument of length 3 and a dim argument of length 2.");
  EXPECT_ERROR(fw::gradient(x, fw::IntArrayRef{1, -1}), "[gradient] dim 1 appears multiple times");
  EXPECT_ERROR(fw::gradient(x, fw::IntArrayRef{2}), "[gradient] Dimension out of range (expected to be in range of [-2, 1], but got 2)");
  std::vector<Tensor> coords{fw::arange(4)};
  EXPECT_ERROR(fw::gradient(x, fw::TensorList(coords), fw::IntArrayRef{0}),
               "[gradient] the coordinates for dim 0 must be a 1-D tensor of 3 values, got shape [4]");
  EXPECT_ERROR(fw::gradient(fw::tensor(1.0)), "[gradient] expected a tensor with at least one dimension");
  // Integral input: default floating dtype; two samples: the one-sided difference at both ends.
  auto g = fw::gradient(fw::tensor({1, 4}));
  ASSERT_EQ(g.size(), 1u);
  EXPECT_EQ(g[0].dtype(), fw::kFloat);
  EXPECT_TRUE(fw::equal(g[0], fw::tensor({3.0f, 3.0f})));

  Tensor q = fw::randn({2, 3, 4}), k = fw::randn({2, 5, 4}), v = fw::randn({2, 5, 6});
  EXPECT_ERROR(fw::scaled_dot_product_attention(q, fw::randn({2, 5, 3}), v),
               "[scaled_dot_product_attention] query and key must share their last dim, got shapes [2, 3, 4] and [2, 5, 3]");
  EXPECT_ERROR(fw::scaled_dot_product_attention(q, k, fw::randn({2, 4, 6})), "key and value must have the same sequence length");
  EXPECT_ERROR(fw::scaled_dot_product_attention(q, k, v, fw::ones({3, 5}), 0.0, true),
               "Explicit attn_mask should not be set when is_causal=True");
  EXPECT_ERROR(fw::scaled_dot_product_attention(q, k, v.to(fw::kDouble)), "expected query, key and value of one floating dtype");
  // Dropout 1 zeroes every weight; dropout draws from the generator (reproducible under a seed).
  EXPECT_TRUE(fw::equal(fw::scaled_dot_product_attention(q, k, v, {}, 1.0), fw::zeros({2, 3, 6})));
  fw::manual_seed(5);
  Tensor d1 = fw::scaled_dot_product_attention(q, k, v, {}, 0.5);
  fw::manual_seed(5);
  EXPECT_TRUE(fw::equal(d1, fw::scaled_dot_product_attention(q, k, v, {}, 0.5)));

  EXPECT_ERROR(fw::bilinear(fw::randn({2, 3}), fw::randn({2, 5}), fw::randn({4, 3})), "[bilinear] expected a 3-D weight (out, in1, in2), got shape [4, 3]");
  EXPECT_ERROR(fw::bilinear(fw::randn({2, 3}), fw::randn({2, 5}), fw::randn({4, 3, 4})), "[bilinear] input2 must end in 4 features");
  EXPECT_ERROR(fw::bilinear(fw::randn({2, 3}), fw::randn({3, 5}), fw::randn({4, 3, 5})), "must have the same leading dims");
  EXPECT_ERROR(fw::bilinear(fw::randn({2, 3}), fw::randn({2, 5}), fw::randn({4, 3, 5}), fw::randn({3})), "[bilinear] expected a bias of shape [4], got [3]");
}

// Eager softmax/log_softmax sum a row's exps in float blocks added to a double (Note [Softmax
// kernels]): on rows far longer than a block every element stays within a few ulp of the float64
// result, a row of one value repeated included (where a row-long float sum drifts most).
TEST(OpsMore, SoftmaxOfLongRowsStaysAccurate) {
  fw::manual_seed(21);
  for (fw::Tensor x : {fw::randn({2, 300001}) * 3, fw::full({1, 1 << 20}, 0.25f), fw::randn({3, 257})}) {
    fw::Tensor xd = x.to(fw::kDouble);
    fw::Tensor y = fw::softmax(x, -1), yd = fw::softmax(xd, -1);
    fw::Tensor rel = ((y.to(fw::kDouble) - yd).abs() / yd.abs()).max();
    EXPECT_LT(rel.item<double>(), 2e-6) << x.sizes();
    fw::Tensor l = fw::log_softmax(x, -1), ld = fw::log_softmax(xd, -1);
    EXPECT_LT(((l.to(fw::kDouble) - ld).abs() / (ld.abs() + 1)).max().item<double>(), 1e-6) << x.sizes();
  }
}

// fn::exp_f32 (core/functors.h): within one ulp of the exact exp over a dense sample of all
// float bit patterns (every 241st; the whole range was checked once, max 0.894 ulp), with exp's
// special values; and exp/sigmoid/silu give the same floats through the eager tensor path (a
// vectorised loop), a strided view (another loop) and the scalar functor (NaN for NaN).
TEST(OpsMore, ExpFloatWithinOneUlpAndTheSameOnEveryPath) {
  double worst = 0;
  uint32_t worst_bits = 0;
  for (uint64_t b = 7; b < (uint64_t(1) << 32); b += 241) {
    const float x = fw::fn::bits_f32(uint32_t(b));
    const float got = fw::fn::exp_f32(x);
    const double want = std::exp(double(x));
    if (std::isnan(x)) {
      ASSERT_TRUE(std::isnan(got)) << x;
      continue;
    }
    if (want > double(std::numeric_limits<float>::max())) {
      // the float nearest e^x is inf once e^x is past FLT_MAX by half an ulp
      ASSERT_TRUE(got == std::numeric_limits<float>::infinity() || double(got) >= 3.4028e38) << x;
      continue;
    }
    int e = 0;
    std::frexp(want, &e);
    const double ulp = std::ldexp(1.0, std::max(e - 24, -149));
    const double err = std::fabs(double(got) - want) / ulp;
    if (err > worst) worst = err, worst_bits = uint32_t(b);
  }
  EXPECT_LE(worst, 1.0) << "at x = " << fw::fn::bits_f32(worst_bits);
  const float inf = std::numeric_limits<float>::infinity();
  EXPECT_EQ(fw::fn::exp_f32(0.0f), 1.0f);
  EXPECT_EQ(fw::fn::exp_f32(-0.0f), 1.0f);
  EXPECT_EQ(fw::fn::exp_f32(inf), inf);
  EXPECT_EQ(fw::fn::exp_f32(-inf), 0.0f);
  EXPECT_EQ(fw::fn::exp_f32(88.7229f), inf);
  EXPECT_EQ(fw::fn::exp_f32(88.7228f), std::exp(88.7228f));
  EXPECT_EQ(fw::fn::exp_f32(-103.972f), std::numeric_limits<float>::denorm_min());
  EXPECT_EQ(fw::fn::exp_f32(-104.0f), 0.0f);
  // far out of range the arithmetic is garbage that the selects replace
  for (float big : {88.8001f, 100.0f, 1.5e7f, 3e9f, 3.4e38f}) EXPECT_EQ(fw::fn::exp_f32(big), inf) << big;
  for (float small : {-104.001f, -150.0f, -1.5e7f, -3e9f, -3.4e38f}) EXPECT_EQ(fw::fn::exp_f32(small), 0.0f) << small;
  EXPECT_EQ(fw::fn::exp_f32(1.0f), std::exp(1.0f));
  EXPECT_TRUE(std::isnan(fw::fn::exp_f32(std::numeric_limits<float>::quiet_NaN())));

  fw::manual_seed(3);
  Tensor x = fw::cat({fw::randn({4099}) * 40, fw::tensor({0.f, -0.f, inf, -inf, std::nanf(""), 88.72f, -87.4f, -103.9f, -200.f, 1e-30f})});
  Tensor xs = fw::stack({x, x}, 1).select(1, 0);  // strided
  const float* px = x.data_ptr<float>();
  auto same = [&](const Tensor& y, auto fn, const char* name) {
    const float* py = y.contiguous().data_ptr<float>();
    for (int64_t i = 0; i < x.numel(); i++) {
      const float w = fn(px[i]);
      // a NaN's sign may differ: a vector loop folds sigmoid's -x into an FMA, which passes the
      // NaN on unnegated
      if (std::isnan(w)) {
        ASSERT_TRUE(std::isnan(py[i])) << name << "(" << px[i] << "): " << py[i];
        continue;
      }
      ASSERT_TRUE(std::memcmp(&w, py + i, 4) == 0) << name << "(" << px[i] << "): " << py[i] << " vs " << w;
    }
  };
  same(fw::exp(x), fw::fn::Exp{}, "exp");
  same(fw::exp(xs), fw::fn::Exp{}, "exp (strided)");
  same(fw::sigmoid(x), fw::fn::Sigmoid{}, "sigmoid");
  same(fw::sigmoid(xs), fw::fn::Sigmoid{}, "sigmoid (strided)");
  same(fw::silu(x), fw::fn::Silu{}, "silu");
}
