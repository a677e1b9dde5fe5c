// Autograd of the linear-algebra and NN primitives (mm/addmm/bmm/baddbmm/dot, softmax,
// log_softmax, the native norms, pools, upsampling) and of composites built on them, plus a
// tiny MLP that trains with plain SGD.
#include <gtest/gtest.h>

#include "fw/nn/functional.h"
#include "tests/fixture.h"

using fw::Tensor;
using fw::autograd::variable_list;
namespace F = fw::nn::functional;

namespace {

Tensor leaf(std::vector<int64_t> shape, uint64_t seed = 3, double lo = -2, double hi = 2) {
  fw::manual_seed(seed);
  return (fw::rand(shape, fw::kDouble) * (hi - lo) + lo).requires_grad_(true);
}

// Distinct values at least 0.1 apart (no ties for max pooling), shuffled.
Tensor distinct_leaf(std::vector<int64_t> shape, uint64_t seed = 3) {
  fw::manual_seed(seed);
  int64_t n = 1;
  for (int64_t s : shape) n *= s;
  return (fw::randperm(n, fw::kDouble) * 0.1 - 1.0).view(shape).requires_grad_(true);
}

using Fn = std::function<variable_list(const variable_list&)>;

void check(const std::string& name, const Fn& fn, const variable_list& inputs, bool second = true) {
  try {
    EXPECT_TRUE(fw::autograd::gradcheck(fn, inputs)) << name;
    if (second) EXPECT_TRUE(fw::autograd::gradgradcheck(fn, inputs)) << name;
  } catch (const std::exception& e) {
    ADD_FAILURE() << name << ": " << e.what();
  }
}

// fn applied to the first input only.
void check1(const std::string& name, const std::function<Tensor(const Tensor&)>& f, const Tensor& x) {
  check(name, [f](const variable_list& v) { return variable_list{f(v[0])}; }, {x});
}

}  // namespace

TEST(AutogradNN, MatrixProductsPassGradcheck) {
  Tensor a = leaf({2, 3}, 1), b = leaf({3, 4}, 2), v = leaf({3}, 3), w = leaf({3}, 4);
  check("mm", [](const variable_list& t) { return variable_list{fw::mm(t[0], t[1])}; }, {a, b});
  check("dot", [](const variable_list& t) { return variable_list{fw::dot(t[0], t[1])}; }, {v, w});
  for (auto bias : {leaf({2, 4}, 5), leaf({4}, 6), leaf({2, 1}, 7)}) {
    check("addmm", [](const variable_list& t) { return variable_list{fw::addmm(t[0], t[1], t[2], 0.5, -2)}; },
          {bias, a, b});
  }
  check("addmm beta=0", [](const variable_list& t) { return variable_list{fw::addmm(t[0], t[1], t[2], 0, 1)}; },
        {leaf({4}, 6), a, b});
  Tensor ba = leaf({2, 2, 3}, 8), bb = leaf({2, 3, 2}, 9);
  check("bmm", [](const variable_list& t) { return variable_list{fw::bmm(t[0], t[1])}; }, {ba, bb});
  for (auto bias : {leaf({2, 2, 2}, 10), leaf({2, 1}, 11)}) {
    check("baddbmm", [](const variable_list& t) { return variable_list{fw::baddbmm(t[0], t[1], t[2], 1.5, 0.5)}; },
          {bias, ba, bb});
  }
  // Non-contiguous operands.
  check("mm transposed", [](const variable_list& t) { return variable_list{fw::mm(t[0].t(), t[1].t())}; },
        {leaf({3, 2}, 12), leaf({4, 3}, 13)});
}

TEST(AutogradNN, MatmulCompositesPassGradcheck) {
  auto mm2 = [](const variable_list& t) { return variable_list{fw::matmul(t[0], t[1])}; };
  check("matmul 1x3d", mm2, {leaf({3}, 1), leaf({2, 3, 2}, 2)});
  check("matmul 3dx2d", mm2, {leaf({2, 2, 3}, 3), leaf({3, 2}, 4)});
  check("matmul broadcast", mm2, {leaf({2, 1, 2, 3}, 5), leaf({2, 3, 2}, 6)});
  check("matmul mv", mm2, {leaf({2, 3}, 7), leaf({3}, 8)});
  check("linear", [](const variable_list& t) { return variable_list{fw::linear(t[0], t[1], t[2])}; },
        {leaf({2, 2, 3}, 9), leaf({4, 3}, 10), leaf({4}, 11)});
  check("einsum", [](const variable_list& t) { return variable_list{fw::einsum("bij,bjk->bik", {t[0], t[1]})}; },
        {leaf({2, 2, 3}, 12), leaf({2, 3, 2}, 13)});
}

TEST(AutogradNN, SoftmaxPassesGradcheck) {
  Tensor x = leaf({2, 3, 2});
  for (int64_t d : {0, 1, -1}) {
    check1("softmax " + std::to_string(d), [d](const Tensor& t) { return fw::softmax(t, d); }, x);
    check1("log_softmax " + std::to_string(d), [d](const Tensor& t) { return fw::log_softmax(t, d); }, x);
  }
  check1("softmax 0-dim", [](const Tensor& t) { return fw::softmax(t, 0) * t; }, leaf({}, 4));
}

TEST(AutogradNN, SoftmaxWithDtypeGivesGradInInputDtype) {
  Tensor x = fw::tensor({{1.0f, -2.0f, 0.5f}, {0.25f, 3.0f, -1.0f}}).requires_grad_(true);
  Tensor wts = fw::tensor({{1.0, 2.0, 3.0}, {-1.0, 0.5, 2.0}});
  (fw::log_softmax(x, 1, fw::kDouble) * wts).sum().backward();
  Tensor gx = x.grad();
  ASSERT_EQ(gx.dtype(), fw::kFloat);
  Tensor x64 = x.detach().to(fw::kDouble).requires_grad_(true);
  (fw::log_softmax(x64, 1) * wts).sum().backward();
  EXPECT_TRUE(fw::allclose(gx.to(fw::kDouble), x64.grad(), 1e-5, 1e-6));
  Tensor y = x.detach().clone().requires_grad_(true);
  (fw::softmax(y, 0, fw::kDouble) * wts).sum().backward();
  EXPECT_EQ(y.grad().dtype(), fw::kFloat);
}

TEST(AutogradNN, LayerNormPassesGradcheck) {
  Tensor x = leaf({2, 2, 3}, 1), w = leaf({2, 3}, 2), b = leaf({2, 3}, 3), w1 = leaf({3}, 4);
  check("native_layer_norm affine", [](const variable_list& t) {
    auto [y, m, r] = fw::native_layer_norm(t[0], {2, 3}, t[1], t[2], 1e-5);
    return variable_list{y};
  }, {x, w, b});
  check("layer_norm weight only", [](const variable_list& t) {
    return variable_list{fw::layer_norm(t[0], {3}, t[1], {}, 1e-5, true)};
  }, {x, w1});
  check1("layer_norm plain", [](const Tensor& t) { return fw::layer_norm(t, {3}, {}, {}, 1e-5, true); }, x);
  // Gradients that reach the mean/rstd outputs.
  check("native_layer_norm stats", [](const variable_list& t) {
    auto [y, m, r] = fw::native_layer_norm(t[0], {3}, t[1], {}, 1e-5);
    return variable_list{y, m, r};
  }, {x, w1});
}

TEST(AutogradNN, GroupNormPassesGradcheck) {
  Tensor x = leaf({2, 4, 3}, 1), w = leaf({4}, 2), b = leaf({4}, 3);
  check("group_norm affine", [](const variable_list& t) {
    return variable_list{fw::group_norm(t[0], 2, t[1], t[2], 1e-5, true)};
  }, {x, w, b});
  check1("group_norm plain 4d", [](const Tensor& t) { return fw::group_norm(t, 1, {}, {}, 1e-5, true); },
         leaf({1, 2, 2, 3}, 4));
  check("native_group_norm stats", [](const variable_list& t) {
    auto [y, m, r] = fw::native_group_norm(t[0], t[1], {}, 2, 4, 3, 4, 1e-5);
    return variable_list{y, m, r};
  }, {x, w});
}

TEST(AutogradNN, BatchNormPassesGradcheck) {
  Tensor x = leaf({3, 2, 2}, 1), w = leaf({2}, 2), b = leaf({2}, 3);
  check("batch_norm train", [](const variable_list& t) {
    return variable_list{fw::batch_norm(t[0], t[1], t[2], {}, {}, true, 0.1, 1e-5, true)};
  }, {x, w, b});
  check1("batch_norm train 4d plain", [](const Tensor& t) {
    return fw::batch_norm(t, {}, {}, {}, {}, true, 0.1, 1e-5, true);
  }, leaf({2, 2, 2, 2}, 4));
  check("native_batch_norm stats", [](const variable_list& t) {
    auto [y, m, r] = fw::native_batch_norm(t[0], t[1], {}, {}, {}, true, 0.1, 1e-5);
    return variable_list{y, m, r};
  }, {x, w});
  Tensor rm = fw::tensor({0.3, -0.2}), rv = fw::tensor({0.5, 2.0});
  check("batch_norm eval", [rm, rv](const variable_list& t) {
    return variable_list{fw::batch_norm(t[0], t[1], t[2], rm, rv, false, 0.1, 1e-5, true)};
  }, {x, w, b});
  check1("instance_norm", [](const Tensor& t) {
    return fw::instance_norm(t, {}, {}, {}, {}, true, 0.1, 1e-5, true);
  }, leaf({2, 2, 3}, 5));
}

TEST(AutogradNN, BatchNormTrainingUpdatesRunningStatsAndBackwards) {
  Tensor x = leaf({4, 3}, 1), w = fw::ones({3}, fw::kDouble).requires_grad_(true);
  Tensor rm = fw::zeros({3}, fw::kDouble), rv = fw::ones({3}, fw::kDouble);
  Tensor y = fw::batch_norm(x, w, {}, rm, rv, true, 0.1, 1e-5, true);
  (y * fw::arange(12, fw::kDouble).view({4, 3})).sum().backward();
  EXPECT_TRUE(fw::allclose(rm, x.detach().mean({0}) * 0.1));
  // Batch-norm outputs sum to a constant per channel: the input gradient sums to zero.
  EXPECT_TRUE(fw::allclose(x.grad().sum({0}), fw::zeros({3}, fw::kDouble), 1e-6, 1e-9));
  EXPECT_EQ(w.grad().sizes(), fw::IntArrayRef({3}));
}

TEST(AutogradNN, MaxPoolPassesGradcheckAwayFromTies) {
  Tensor x = distinct_leaf({1, 2, 5, 5});
  check1("max_pool2d", [](const Tensor& t) { return fw::max_pool2d(t, {2, 2}, {}, {0}, {1}, false); }, x);
  check1("max_pool2d stride pad", [](const Tensor& t) { return fw::max_pool2d(t, {3, 2}, {2, 1}, {1, 1}, {1}, false); },
         x);
  check1("max_pool2d dilation ceil", [](const Tensor& t) { return fw::max_pool2d(t, {2}, {2}, {0}, {2}, true); }, x);
  check1("max_pool2d unbatched", [](const Tensor& t) { return fw::max_pool2d(t, {2}, {1}, {0}, {1}, false); },
         distinct_leaf({2, 3, 3}));
  check1("max_pool1d", [](const Tensor& t) { return fw::max_pool1d(t, {2}, {1}, {1}, {1}, false); },
         distinct_leaf({2, 2, 4}));
}

TEST(AutogradNN, AvgPoolPassesGradcheckForEveryOption) {
  Tensor x = leaf({1, 2, 5, 5});
  for (bool ceil : {false, true})
    for (bool include_pad : {false, true})
      for (std::optional<int64_t> div : {std::optional<int64_t>(), std::optional<int64_t>(3)}) {
        std::string name = "avg_pool2d ceil=" + std::to_string(ceil) + " pad=" + std::to_string(include_pad) +
                           " div=" + std::to_string(div.value_or(0));
        check1(name, [=](const Tensor& t) { return fw::avg_pool2d(t, {3, 2}, {2, 2}, {1, 1}, ceil, include_pad, div); },
               x);
      }
  check1("avg_pool2d unbatched", [](const Tensor& t) { return fw::avg_pool2d(t, {2}, {1}, {0}, false, true, {}); },
         leaf({2, 3, 3}, 4));
  check1("avg_pool1d", [](const Tensor& t) { return fw::avg_pool1d(t, {3}, {2}, {1}, true, false); },
         leaf({2, 2, 6}, 5));
}

TEST(AutogradNN, AdaptiveAvgPoolPassesGradcheck) {
  check1("adaptive 5x7->3x4", [](const Tensor& t) { return fw::adaptive_avg_pool2d(t, {3, 4}); }, leaf({1, 2, 5, 7}));
  check1("adaptive global", [](const Tensor& t) { return fw::adaptive_avg_pool2d(t, {1}); }, leaf({2, 2, 3, 3}, 4));
  check1("adaptive upsampling", [](const Tensor& t) { return fw::adaptive_avg_pool2d(t, {3, 5}); }, leaf({2, 2, 3}, 5));
  check1("adaptive_avg_pool1d", [](const Tensor& t) { return fw::adaptive_avg_pool1d(t, {3}); }, leaf({2, 2, 7}, 6));
}

TEST(AutogradNN, UpsamplingPassesGradcheck) {
  Tensor x = leaf({1, 2, 3, 4});
  check1("nearest up", [](const Tensor& t) { return fw::upsample_nearest2d(t, {5, 7}, {}, {}); }, x);
  check1("nearest down", [](const Tensor& t) { return fw::upsample_nearest2d(t, {2, 3}, {}, {}); }, x);
  check1("nearest scales", [](const Tensor& t) { return fw::upsample_nearest2d(t, {6, 6}, 2.0, 1.6); }, x);
  for (bool align : {false, true}) {
    std::string a = align ? " align" : "";
    check1("bilinear up" + a, [=](const Tensor& t) { return fw::upsample_bilinear2d(t, {5, 7}, align, {}, {}); }, x);
    check1("bilinear down" + a, [=](const Tensor& t) { return fw::upsample_bilinear2d(t, {2, 3}, align, {}, {}); }, x);
    check1("bilinear scales" + a, [=](const Tensor& t) { return fw::upsample_bilinear2d(t, {6, 6}, align, 2.0, 1.6); },
           x);
  }
  check1("interpolate linear", [](const Tensor& t) {
    return F::interpolate(t, F::InterpolateFuncOptions().size(std::vector<int64_t>{7}).mode(fw::kLinear));
  }, leaf({1, 2, 4}, 5));
}

TEST(AutogradNN, DropoutPassesGradcheck) {
  check1("dropout", [](const Tensor& t) {
    fw::manual_seed(7);
    return fw::dropout(t, 0.4, true);
  }, leaf({3, 4}));
}

TEST(AutogradNN, TinyMlpTrainsWithSgd) {
  fw::manual_seed(0);
  int64_t n = 32, in = 4, hidden = 16, classes = 3;
  Tensor x = fw::randn({n, in});
  Tensor target = fw::argmax(x.narrow(1, 0, classes), 1);  // learnable: the largest of 3 features
  Tensor w1 = (fw::randn({hidden, in}) * 0.5).requires_grad_(true), b1 = fw::zeros({hidden}).requires_grad_(true);
  Tensor w2 = (fw::randn({classes, hidden}) * 0.5).requires_grad_(true), b2 = fw::zeros({classes}).requires_grad_(true);
  auto loss_fn = [&] {
    Tensor h = fw::relu(fw::linear(x, w1, b1));
    Tensor logits = fw::linear(h, w2, b2);
    return -fw::log_softmax(logits, 1).gather(1, target.unsqueeze(1)).mean();
  };
  float first = 0, last = 0;
  for (int step = 0; step < 100; step++) {
    Tensor loss = loss_fn();
    if (step == 0) first = loss.item<float>();
    last = loss.item<float>();
    loss.backward();
    fw::NoGradGuard guard;
    for (Tensor* p : {&w1, &b1, &w2, &b2}) {
      p->sub_(p->grad() * 0.5);
      p->grad().zero_();
    }
  }
  EXPECT_LT(last, first * 0.5) << "first " << first << " last " << last;
}

TEST(AutogradNN, FloatAndHalfGradsMatchDouble) {
  using G = std::function<Tensor(const Tensor&)>;
  std::vector<std::pair<const char*, G>> fs = {
      {"softmax", [](const Tensor& t) { return fw::softmax(t, 1); }},
      {"layer_norm", [](const Tensor& t) { return fw::layer_norm(t, {2, 3}, {}, {}, 1e-5, true); }},
      {"group_norm", [](const Tensor& t) { return fw::group_norm(t, 2, {}, {}, 1e-5, true); }},
      {"batch_norm", [](const Tensor& t) { return fw::batch_norm(t, {}, {}, {}, {}, true, 0.1, 1e-5, true); }},
      {"avg_pool2d", [](const Tensor& t) { return fw::avg_pool2d(t, {2}, {1}, {1}, true, false, {}); }},
      {"bilinear", [](const Tensor& t) { return fw::upsample_bilinear2d(t, {3, 5}, false, {}, {}); }},
  };
  Tensor x64 = leaf({2, 4, 2, 3}, 9);
  Tensor wts = leaf({2, 4, 2, 3}, 10).detach();
  for (auto& [name, f] : fs) {
    Tensor y64 = f(x64);
    Tensor w = fw::rand(y64.sizes(), fw::kDouble);
    Tensor g64 = fw::autograd::grad({(y64 * w).sum()}, {x64})[0];
    for (fw::ScalarType t : {fw::kFloat, fw::kBFloat16}) {
      Tensor x = x64.detach().to(t).requires_grad_(true);
      (f(x).to(fw::kDouble) * w).sum().backward();
      ASSERT_EQ(x.grad().dtype(), t) << name;
      double tol = t == fw::kFloat ? 1e-4 : 0.1;
      EXPECT_TRUE(fw::allclose(x.grad().to(fw::kDouble), g64, tol, tol)) << name << " " << fw::dtype_name(t);
    }
  }
}

TEST(AutogradNN, TwoTrainingForwardsThroughBatchNormThenBackward) {
  Tensor x = leaf({4, 3}, 1);
  Tensor rm = fw::zeros({3}, fw::kDouble), rv = fw::ones({3}, fw::kDouble);
  Tensor a = fw::batch_norm(x, {}, {}, rm, rv, true, 0.1, 1e-5, true);
  Tensor b = fw::batch_norm(x * 2, {}, {}, rm, rv, true, 0.1, 1e-5, true);
  ((a + b) * fw::arange(12, fw::kDouble).view({4, 3})).sum().backward();
  EXPECT_EQ(x.grad().sizes(), x.sizes());
}

TEST(AutogradNN, PlainReluAndMaxPoolGradsMatchTheDifferentiableOnes) {
  // backward() without create_graph computes relu's and max_pool2d's gradients in one pass
  // (relu_grad in core/ops/unary.cpp, max_pool_vjp in core/ops/pool.cpp); create_graph keeps the
  // composites. Both must give the same values, bit for bit, ties, NaN and inf included.
  struct P {
    std::vector<int64_t> k, s, p, d;
    bool ceil;
  };
  std::vector<P> pools = {{{2, 1}, {2, 1}, {0, 0}, {1, 1}, false}, {{2, 2}, {2, 2}, {0, 0}, {1, 1}, false},
                          {{3, 2}, {1, 2}, {1, 1}, {1, 1}, false}, {{2, 3}, {2, 1}, {0, 1}, {2, 1}, true},
                          {{3, 3}, {2, 2}, {1, 0}, {1, 1}, true}};
  for (auto dtype : {fw::kFloat, fw::kDouble}) {
    for (size_t pi = 0; pi < pools.size(); pi++) {
      const P& p = pools[pi];
      fw::manual_seed(40 + pi);
      // Rounded values give ties; a few NaN and inf entries; a permuted (non-contiguous) input.
      Tensor base = (fw::randn({3, 4, 9, 8}, dtype) * 2).round().permute({0, 1, 3, 2}).contiguous().permute({0, 1, 3, 2});
      {
        fw::NoGradGuard ng;
        base.select(0, 1).select(0, 2).select(0, 3).fill_(std::nan(""));
        base.select(0, 2).select(0, 0).select(0, 0).fill_(INFINITY);
        base.select(0, 0).select(0, 3).select(0, 5).fill_(-INFINITY);
      }
      auto grads = [&](bool create_graph) {
        Tensor x = base.detach().requires_grad_(true);
        Tensor y = fw::max_pool2d(fw::relu(x), p.k, p.s, p.p, p.d, p.ceil);
        Tensor gy = fw::sin(fw::arange(y.numel(), dtype) * 0.7).view(y.sizes());
        {
          fw::NoGradGuard ng;
          gy.view({-1}).select(0, 5).fill_(INFINITY);
        }
        if (create_graph) return fw::autograd::grad({y}, {x}, {gy}, true, true)[0].detach();
        y.backward(gy);
        return x.grad();
      };
      Tensor a = grads(false), b = grads(true);
      ASSERT_EQ(a.sizes(), b.sizes());
      Tensor same = (a == b) | (a.isnan() & b.isnan());
      EXPECT_TRUE(same.all().item<bool>()) << "pool " << pi << " " << fw::dtype_name(dtype);
    }
  }
}

TEST(AutogradNN, MaxPoolMatchesNaiveLoopsOverGeometries) {
  // The vectorised paths (tap by tap over output rows; two passes for windows tiling the rows,
  // Note [Max pool in two passes]) against a plain loop over each window: values and indices
  // equal, with ties, NaN and infinities, for float, double and int32.
  struct P {
    int64_t h, w, kh, kw, sh, sw, ph, pw, dh, dw;
    bool ceil;
  };
  std::vector<P> ps = {{40, 16, 2, 1, 2, 1, 0, 0, 1, 1, false}, {20, 16, 2, 2, 2, 2, 0, 0, 1, 1, false},
                       {5, 8, 2, 2, 2, 2, 0, 0, 1, 1, false},   {9, 8, 3, 2, 2, 2, 0, 0, 1, 1, false},
                       {7, 9, 2, 3, 1, 3, 0, 0, 1, 1, false},   {6, 7, 2, 2, 1, 1, 0, 0, 1, 1, false},
                       {6, 8, 1, 2, 1, 3, 0, 0, 1, 1, false},   {7, 10, 3, 3, 2, 3, 0, 0, 1, 1, false},
                       {7, 7, 3, 3, 2, 2, 1, 1, 1, 1, false},   {8, 9, 2, 3, 2, 1, 0, 1, 2, 1, true},
                       {5, 17, 2, 2, 2, 2, 0, 0, 1, 1, true}};
  for (auto dtype : {fw::kFloat, fw::kDouble, fw::kInt}) {
    for (size_t k = 0; k < ps.size(); k++) {
      const P& p = ps[k];
      fw::manual_seed(60 + k);
      Tensor x = (fw::randn({2, 3, p.h, p.w}, fw::kDouble) * 2).round();
      if (dtype != fw::kInt) {
        fw::NoGradGuard ng;
        x.view({-1}).select(0, 7).fill_(std::nan(""));
        x.view({-1}).select(0, 8).fill_(std::nan(""));
        x.view({-1}).select(0, 30).fill_(INFINITY);
        x.view({-1}).select(0, 31).fill_(-INFINITY);
      }
      x = x.to(dtype);
      auto [y, idx] = fw::max_pool2d_with_indices(x, {p.kh, p.kw}, {p.sh, p.sw}, {p.ph, p.pw}, {p.dh, p.dw}, p.ceil);
      // max_pool2d on an input that needs no gradient skips the indices (Note [Max pool without
      // indices]); the values are the same.
      Tensor values = fw::max_pool2d(x, {p.kh, p.kw}, {p.sh, p.sw}, {p.ph, p.pw}, {p.dh, p.dw}, p.ceil);
      ASSERT_EQ(values.sizes(), y.sizes());
      EXPECT_TRUE(((values == y) | (values.isnan() & y.isnan())).all().item<bool>()) << "values only, geometry " << k;
      Tensor xd = x.to(fw::kDouble).contiguous(), yd = y.to(fw::kDouble).contiguous();
      auto xa = xd.accessor<double, 4>(), ya = yd.accessor<double, 4>();
      Tensor ic = idx.contiguous();
      auto ia = ic.accessor<int64_t, 4>();
      std::string name = "geometry " + std::to_string(k) + " " + fw::dtype_name(dtype);
      for (int64_t n = 0; n < 2; n++)
        for (int64_t c = 0; c < 3; c++)
          for (int64_t oh = 0; oh < y.size(2); oh++)
            for (int64_t ow = 0; ow < y.size(3); ow++) {
              double best = -INFINITY;
              int64_t bi = -1;
              for (int64_t i = 0; i < p.kh; i++)
                for (int64_t j = 0; j < p.kw; j++) {
                  int64_t h = oh * p.sh - p.ph + i * p.dh, w = ow * p.sw - p.pw + j * p.dw;
                  if (h < 0 || h >= p.h || w < 0 || w >= p.w) continue;
                  double v = xa[n][c][h][w];
                  if (bi < 0 || v > best || std::isnan(v)) best = v, bi = h * p.w + w;
                }
              double got = ya[n][c][oh][ow];
              ASSERT_TRUE(got == best || (std::isnan(got) && std::isnan(best))) << name << " at " << oh << "," << ow;
              ASSERT_EQ(ia[n][c][oh][ow], bi) << name << " at " << oh << "," << ow;
            }
    }
  }
}

TEST(AutogradNN, AvgPoolMatchesNaiveLoopsOverGeometries) {
  // The row-wise kernel (Note [Average pool by rows]) against a plain loop over each window, for
  // every count rule, padding at both edges, strides 1, 2 and 3, ceil_mode overhang; exact in
  // double (same sums in the same order) and int64 (truncating division).
  struct P {
    int64_t h, w, kh, kw, sh, sw, ph, pw;
    bool ceil;
  };
  std::vector<P> ps = {{6, 7, 2, 2, 2, 2, 0, 0, false}, {7, 9, 3, 3, 1, 1, 1, 1, false},
                       {9, 10, 3, 2, 2, 3, 1, 1, true}, {5, 11, 2, 4, 1, 3, 1, 2, true},
                       {8, 5, 4, 1, 3, 1, 2, 0, true},  {3, 17, 1, 5, 1, 2, 0, 2, false}};
  for (auto dtype : {fw::kDouble, fw::kLong})
    for (int mode = 0; mode < 3; mode++)  // count_include_pad, exclude, divisor_override = 5
      for (size_t k = 0; k < ps.size(); k++) {
        const P& p = ps[k];
        fw::manual_seed(90 + k);
        Tensor x = (fw::randn({2, 2, p.h, p.w}, fw::kDouble) * 9).round().to(dtype);
        std::optional<int64_t> div = mode == 2 ? std::optional<int64_t>(5) : std::nullopt;
        Tensor y = fw::avg_pool2d(x, {p.kh, p.kw}, {p.sh, p.sw}, {p.ph, p.pw}, p.ceil, mode == 0, div);
        Tensor xd = x.to(fw::kDouble).contiguous(), yd = y.to(fw::kDouble).contiguous();
        auto xa = xd.accessor<double, 4>(), ya = yd.accessor<double, 4>();
        std::string name = "geometry " + std::to_string(k) + " mode " + std::to_string(mode) + " " + fw::dtype_name(dtype);
        for (int64_t n = 0; n < 2; n++)
          for (int64_t c = 0; c < 2; c++)
            for (int64_t oh = 0; oh < y.size(2); oh++)
              for (int64_t ow = 0; ow < y.size(3); ow++) {
                int64_t h0 = oh * p.sh - p.ph, w0 = ow * p.sw - p.pw;
                int64_t h1 = std::min(h0 + p.kh, p.h + p.ph), w1 = std::min(w0 + p.kw, p.w + p.pw);
                int64_t padded = (h1 - h0) * (w1 - w0), inside = 0;
                double sum = 0;
                for (int64_t h = std::max<int64_t>(h0, 0); h < std::min(h1, p.h); h++)
                  for (int64_t w = std::max<int64_t>(w0, 0); w < std::min(w1, p.w); w++) sum += xa[n][c][h][w], inside++;
                int64_t d = mode == 2 ? 5 : mode == 0 ? padded : inside;
                double want = dtype == fw::kLong ? double(int64_t(sum) / d) : sum / double(d);
                ASSERT_EQ(ya[n][c][oh][ow], want) << name << " at " << oh << "," << ow;
              }
      }
}
