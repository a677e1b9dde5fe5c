// Autograd of the convolutions: gradcheck and gradgradcheck of conv2d and conv_transpose2d over
// stride, padding (numeric and "same" with an even kernel), dilation, groups, output_padding and
// bias, plus the composites conv1d/conv_transpose1d, float32 grads against float64 ones, and the
// float32 oneDNN kernels against the im2col ones.
#include <gtest/gtest.h>

#include "core/ops/conv_dnnl.h"
#include "tests/fixture.h"

using fw::Tensor;
using fw::autograd::variable_list;

namespace {

Tensor leaf(std::vector<int64_t> shape, uint64_t seed) {
  fw::manual_seed(seed);
  return (fw::rand(shape, fw::kDouble) * 2 - 1).requires_grad_(true);
}

void check(const std::string& name, const std::function<variable_list(const variable_list&)>& fn,
           const variable_list& inputs) {
  try {
    EXPECT_TRUE(fw::autograd::gradcheck(fn, inputs)) << name;
    EXPECT_TRUE(fw::autograd::gradgradcheck(fn, inputs)) << name;
  } catch (const std::exception& e) {
    ADD_FAILURE() << name << ": " << e.what();
  }
}

struct Opt {
  int64_t sh, sw, ph, pw, dh, dw, groups;
  bool bias;
};

std::string describe(const Opt& o) {
  return "stride " + std::to_string(o.sh) + "x" + std::to_string(o.sw) + " pad " + std::to_string(o.ph) + "x" +
         std::to_string(o.pw) + " dil " + std::to_string(o.dh) + "x" + std::to_string(o.dw) + " groups " +
         std::to_string(o.groups) + (o.bias ? " bias" : "");
}

const std::vector<Opt> kOpts = {
    {1, 1, 0, 0, 1, 1, 1, false}, {1, 1, 1, 1, 1, 1, 1, true},  {2, 1, 1, 0, 1, 1, 1, true},
    {2, 2, 0, 1, 1, 1, 2, false}, {1, 1, 2, 1, 2, 1, 1, true},  {3, 2, 1, 2, 1, 2, 2, true},
    {1, 2, 0, 0, 2, 2, 4, false}, {2, 3, 2, 1, 2, 1, 4, true},
};

}  // namespace

TEST(AutogradConv, Conv2dPassesGradcheckOverOptions) {
  for (const Opt& o : kOpts) {
    int64_t c = 4, out = o.groups == 4 ? 4 : 2 * o.groups;
    Tensor x = leaf({2, c, 6, 7}, 1), w = leaf({out, c / o.groups, 3, 2}, 2), b = leaf({out}, 3);
    auto fn = [o](const variable_list& v) {
      Tensor bias = o.bias ? v[2] : Tensor();
      return variable_list{fw::conv2d(v[0], v[1], bias, {o.sh, o.sw}, {o.ph, o.pw}, {o.dh, o.dw}, o.groups)};
    };
    check("conv2d " + describe(o), fn, o.bias ? variable_list{x, w, b} : variable_list{x, w});
  }
}

TEST(AutogradConv, Conv2dSamePaddingWithEvenKernel) {
  Tensor x = leaf({1, 2, 5, 6}, 4), w = leaf({3, 2, 2, 4}, 5), b = leaf({3}, 6);
  check("conv2d same", [](const variable_list& v) { return variable_list{fw::conv2d(v[0], v[1], v[2], 1, "same", {2, 1})}; },
        {x, w, b});
  check("conv2d valid", [](const variable_list& v) { return variable_list{fw::conv2d(v[0], v[1], v[2], 1, "valid")}; },
        {x, w, b});
}

TEST(AutogradConv, ConvTranspose2dPassesGradcheckOverOptions) {
  for (const Opt& o : kOpts) {
    int64_t c = 4, og = o.groups == 4 ? 1 : 2;
    // output_padding must stay below stride or dilation; use the largest allowed.
    int64_t oph = std::max(o.sh, o.dh) - 1, opw = std::max(o.sw, o.dw) - 1;
    Tensor x = leaf({2, c, 4, 3}, 7), w = leaf({c, og, 2, 3}, 8), b = leaf({og * o.groups}, 9);
    auto fn = [o, oph, opw](const variable_list& v) {
      Tensor bias = o.bias ? v[2] : Tensor();
      return variable_list{
          fw::conv_transpose2d(v[0], v[1], bias, {o.sh, o.sw}, {o.ph, o.pw}, {oph, opw}, o.groups, {o.dh, o.dw})};
    };
    check("conv_transpose2d " + describe(o), fn, o.bias ? variable_list{x, w, b} : variable_list{x, w});
  }
}

TEST(AutogradConv, Conv1dCompositesPassGradcheck) {
  Tensor x = leaf({2, 4, 7}, 10), w = leaf({4, 2, 3}, 11), b = leaf({4}, 12);
  check("conv1d", [](const variable_list& v) { return variable_list{fw::conv1d(v[0], v[1], v[2], 2, 1, 1, 2)}; },
        {x, w, b});
  check("conv_transpose1d",
        [](const variable_list& v) { return variable_list{fw::conv_transpose1d(v[0], v[1], v[2], 2, 1, 1, 2, 1)}; },
        {x, w, b});
  Tensor xu = leaf({2, 6}, 13);
  check("conv1d unbatched", [](const variable_list& v) { return variable_list{fw::conv1d(v[0], v[1])}; }, {xu, w});
}

TEST(AutogradConv, Float32GradsMatchFloat64) {
  // A VGG-like layer (3x3, padding 1) in float32 against the same in float64.
  Tensor x = leaf({3, 8, 10, 6}, 14), w = leaf({16, 8, 3, 3}, 15), b = leaf({16}, 16);
  auto grads = [](const Tensor& xs, const Tensor& ws, const Tensor& bs) {
    Tensor xv = xs.detach().requires_grad_(true), wv = ws.detach().requires_grad_(true);
    Tensor bv = bs.detach().requires_grad_(true);
    Tensor y = fw::conv2d(xv, wv, bv, 1, 1);
    (y * y).sum().backward();
    return std::vector<Tensor>{y, xv.grad(), wv.grad(), bv.grad()};
  };
  auto g64 = grads(x, w, b);
  auto g32 = grads(x.to(fw::kFloat), w.to(fw::kFloat), b.to(fw::kFloat));
  for (size_t i = 0; i < g64.size(); i++) {
    double err = (g32[i].to(fw::kDouble) - g64[i]).abs().max().item<double>();
    double scale = g64[i].abs().max().item<double>();
    EXPECT_LE(err, 1e-5 * std::max(1.0, scale)) << "output " << i;
  }
}

TEST(AutogradConv, OneDnnKernelsMatchIm2col) {
  if (!fw::detail::conv_dnnl_enabled()) GTEST_SKIP() << "built without oneDNN";
  auto both = [](const std::function<Tensor()>& f) {
    Tensor a = f();
    fw::detail::set_conv_dnnl_enabled(false);
    Tensor b = f();
    fw::detail::set_conv_dnnl_enabled(true);
    return std::pair{a, b};
  };
  auto expect_same = [](const std::pair<Tensor, Tensor>& r, const std::string& name) {
    ASSERT_EQ(r.first.sizes(), r.second.sizes()) << name;
    double err = (r.first - r.second).abs().max().item<double>();
    EXPECT_LE(err, 1e-4 * std::max(1.0, r.second.abs().max().item<double>())) << name;
  };
  for (const Opt& o : kOpts) {
    int64_t c = 8, out = 2 * o.groups, og = 2;
    int64_t oph = std::max(o.sh, o.dh) - 1, opw = std::max(o.sw, o.dw) - 1;
    Tensor x = leaf({3, c, 9, 11}, 20).detach().to(fw::kFloat), w = leaf({out, c / o.groups, 3, 2}, 21).detach().to(fw::kFloat);
    Tensor wt = leaf({c, og, 2, 3}, 22).detach().to(fw::kFloat), b = leaf({og * o.groups}, 23).detach().to(fw::kFloat);
    Tensor bias = o.bias ? b : Tensor();
    expect_same(both([&] { return fw::conv2d(x, w, bias, {o.sh, o.sw}, {o.ph, o.pw}, {o.dh, o.dw}, o.groups); }),
                "conv2d " + describe(o));
    expect_same(both([&] {
                  return fw::conv_transpose2d(x, wt, bias, {o.sh, o.sw}, {o.ph, o.pw}, {oph, opw}, o.groups, {o.dh, o.dw});
                }),
                "conv_transpose2d " + describe(o));
  }
  Tensor x = leaf({2, 4, 7, 6}, 24).detach().to(fw::kFloat), w = leaf({3, 4, 2, 4}, 25).detach().to(fw::kFloat);
  expect_same(both([&] { return fw::conv2d(x, w, {}, 1, "same", {2, 1}); }), "conv2d same");
  // The weight-grad geometry: kernel as large as the image, a 3x3 output.
  Tensor k = leaf({2, 5, 7, 6}, 26).detach().to(fw::kFloat);
  expect_same(both([&] { return fw::conv2d(x.transpose(0, 1), k.transpose(0, 1), {}, 1, 1); }), "swapped conv2d");
}

TEST(AutogradConv, FusedOneDnnBackwardMatchesComposite) {
  // backward() without create_graph takes oneDNN's backward primitives (Note [Fused conv2d
  // backward]); create_graph keeps the differentiable composite, and with oneDNN off both run the
  // im2col kernels. All three must agree, for every subset of wanted gradients.
  if (!fw::detail::conv_dnnl_enabled()) GTEST_SKIP() << "built without oneDNN";
  struct Case {
    Opt o;
    bool same;  // padding="same" with an even kernel (extra padding after)
    bool strided_x;
  };
  std::vector<Case> cases;
  for (const Opt& o : kOpts) cases.push_back({o, false, false});
  cases.push_back({{1, 1, 0, 0, 2, 1, 1, true}, true, false});
  cases.push_back({{1, 1, 1, 1, 1, 1, 1, true}, false, true});
  cases.push_back({{2, 1, 1, 0, 1, 1, 2, true}, false, true});
  for (const Case& k : cases) {
    const Opt& o = k.o;
    int64_t c = 8, out = 2 * o.groups;
    Tensor x = leaf({3, c, 9, 11}, 30).detach().to(fw::kFloat);
    if (k.strided_x) x = leaf({c, 3, 11, 9}, 30).detach().to(fw::kFloat).permute({1, 0, 3, 2});
    Tensor w = leaf({out, c / o.groups, 3, 2}, 31).detach().to(fw::kFloat);
    if (k.same) w = leaf({out, c / o.groups, 2, 4}, 31).detach().to(fw::kFloat);
    Tensor b = leaf({out}, 32).detach().to(fw::kFloat);
    for (int mask = 1; mask < 8; mask++) {
      bool gx = mask & 1, gw = mask & 2, gb = (mask & 4) && o.bias;
      if (!gx && !gw && !gb) continue;
      auto run = [&](int mode) {  // 0: backward(), 1: create_graph, 2: im2col
        if (mode == 2) fw::detail::set_conv_dnnl_enabled(false);
        Tensor xv = x.detach().requires_grad_(gx), wv = w.detach().requires_grad_(gw), bv = b.detach().requires_grad_(gb);
        Tensor y = k.same ? fw::conv2d(xv, wv, o.bias ? bv : Tensor(), 1, "same", {o.dh, o.dw})
                          : fw::conv2d(xv, wv, o.bias ? bv : Tensor(), {o.sh, o.sw}, {o.ph, o.pw}, {o.dh, o.dw}, o.groups);
        Tensor gy = fw::cos(fw::arange(y.numel(), fw::kFloat)).view(y.sizes());
        variable_list in;
        if (gx) in.push_back(xv);
        if (gw) in.push_back(wv);
        if (gb) in.push_back(bv);
        variable_list g;
        if (mode == 1) {
          g = fw::autograd::grad({y}, in, {gy}, /*retain_graph=*/true, /*create_graph=*/true);
        } else {
          y.backward(gy);
          for (auto& t : in) g.push_back(t.grad());
        }
        fw::detail::set_conv_dnnl_enabled(true);
        for (auto& t : g) t = t.detach();
        return g;
      };
      variable_list fused = run(0), composite = run(1), im2col = run(2);
      std::string name = describe(o) + (k.same ? " same" : "") + (k.strided_x ? " strided x" : "") + " mask " +
                         std::to_string(mask);
      ASSERT_EQ(fused.size(), composite.size()) << name;
      for (size_t i = 0; i < fused.size(); i++) {
        ASSERT_TRUE(fused[i].defined()) << name;
        ASSERT_EQ(fused[i].sizes(), composite[i].sizes()) << name;
        double scale = std::max(1.0, im2col[i].abs().max().item<double>());
        EXPECT_LE((fused[i] - composite[i]).abs().max().item<double>(), 1e-4 * scale) << name << " grad " << i;
        EXPECT_LE((fused[i] - im2col[i]).abs().max().item<double>(), 1e-4 * scale) << name << " grad " << i;
      }
    }
  }
}

TEST(AutogradConv, WinogradMatchesDirectWithinRounding) {
  // Note [Winograd convolutions]: opt-in; outputs and all three gradients within ~1e-5 of the
  // direct kernels' relative to their magnitude, and shapes it does not cover fall back to direct.
  if (!fw::detail::conv_dnnl_enabled()) GTEST_SKIP() << "built without oneDNN";
  struct S {
    int64_t n, c, o, h, w, k, stride;
  };
  for (S s : {S{4, 16, 32, 10, 8, 3, 1}, S{2, 32, 32, 5, 8, 3, 1}, S{3, 3, 16, 12, 7, 3, 1}, S{2, 16, 16, 9, 9, 3, 2},
              S{2, 16, 16, 6, 6, 5, 1}}) {
    Tensor x = leaf({s.n, s.c, s.h, s.w}, 40).detach().to(fw::kFloat);
    Tensor w = (leaf({s.o, s.c, s.k, s.k}, 41).detach() * 0.2).to(fw::kFloat), b = leaf({s.o}, 42).detach().to(fw::kFloat);
    auto run = [&](bool wino) {
      fw::detail::set_conv_dnnl_winograd(wino);
      Tensor xv = x.detach().requires_grad_(true), wv = w.detach().requires_grad_(true), bv = b.detach().requires_grad_(true);
      Tensor y = fw::conv2d(xv, wv, bv, s.stride, s.k / 2);
      (y * fw::cos(y)).sum().backward();
      fw::detail::set_conv_dnnl_winograd(false);
      return std::vector<Tensor>{y.detach(), xv.grad(), wv.grad(), bv.grad()};
    };
    auto direct = run(false), wino = run(true);
    // Buffers at odd offsets (contiguous views one float into their storage) work too.
    auto shifted = [](const Tensor& t) { return fw::cat({fw::zeros({1}), t.reshape({-1})}).narrow(0, 1, t.numel()).view(t.sizes()); };
    Tensor x0 = x, w0 = w, b0 = b;
    x = shifted(x0), w = shifted(w0), b = shifted(b0);
    ASSERT_EQ(x.storage_offset(), 1);
    auto wino_shifted = run(true);
    x = x0, w = w0, b = b0;
    for (size_t i = 0; i < direct.size(); i++)
      EXPECT_TRUE(fw::equal(wino_shifted[i], wino[i])) << "shifted buffers, output " << i;
    for (size_t i = 0; i < direct.size(); i++) {
      double scale = std::max(1.0, direct[i].abs().max().item<double>());
      EXPECT_LE((wino[i] - direct[i]).abs().max().item<double>(), 2e-5 * scale)
          << "shape " << s.c << "->" << s.o << " " << s.h << "x" << s.w << " k" << s.k << " s" << s.stride << " output " << i;
    }
  }
}
