// 3-d convolutions and pools (Note [3-d convolutions] in core/ops/conv.cpp, Note [3-d pooling] in
// core/ops/pool.cpp), adaptive max pools, max_unpool1d/2d/3d, lp_pool1d/2d and the Conv3d,
// ConvTranspose3d, BatchNorm3d, pooling and unpooling modules: values and gradients against
// PyTorch 1.13 (tests/fixtures/gen_conv_pool_3d.py, float64), module printing and
// initialisation, errors, and the layers under fw::compile. Forward values in float32 and
// int64 are in the op table (tests/fixtures/gen_nn.py).
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <map>
#include <optional>
#include <sstream>

#include <fw/fw.h>
#include <fw/jit.h>

#include "tests/fixture.h"
#include "tests/records.h"

namespace nn = fw::nn;
namespace F = fw::nn::functional;
using fw::Tensor;

namespace {

using Case = fwtest::RecordCase;

// The cases of one kind (exactly) of conv_pool_3d.txt.
std::vector<Case> load(const std::string& kind) {
  std::vector<Case> r;
  for (auto& c : fwtest::load_records("conv_pool_3d.txt", kind))
    if (c.kind == kind) r.push_back(c);
  return r;
}

Tensor leaf(const Case& c, const std::string& k) { return c.get(k).clone().requires_grad_(true); }

// Runs fn on the case's float inputs (as leaves), compares y and the gradients of sum(y * g).
void check_case(const Case& c, const std::vector<std::string>& inputs,
                const std::function<Tensor(const std::map<std::string, Tensor>&)>& fn, double tol = 1e-10) {
  SCOPED_TRACE(c.kind + " " + c.name);
  std::map<std::string, Tensor> in;
  for (const auto& k : inputs)
    if (c.has(k)) in[k] = leaf(c, k);
  Tensor y = fn(in);
  FW_EXPECT_CLOSE(y, c.get("y"), tol, tol);
  std::vector<Tensor> wrt;
  std::vector<std::string> names;
  for (const auto& [k, v] : in) wrt.push_back(v), names.push_back(k);
  auto grads = fw::autograd::grad({(y * c.get("g")).sum()}, wrt);
  for (size_t i = 0; i < names.size(); i++) {
    SCOPED_TRACE("grad." + names[i]);
    FW_EXPECT_CLOSE(grads[i], c.get("grad." + names[i]), tol, tol);
  }
}

Tensor opt_tensor(const std::map<std::string, Tensor>& in, const std::string& k) {
  auto it = in.find(k);
  return it == in.end() ? Tensor() : it->second;
}

TEST(Conv3d, ValuesAndGradientsMatchTorch) {
  for (const Case& c : load("conv3d"))
    check_case(c, {"x", "w", "b"}, [&](const auto& in) {
      Tensor b = opt_tensor(in, "b");
      if (c.opt("padding") == "same")
        return fw::conv3d(in.at("x"), in.at("w"), b, c.ints("stride"), std::string("same"), c.ints("dilation"),
                          c.num("groups"));
      return fw::conv3d(in.at("x"), in.at("w"), b, c.ints("stride"), c.ints("padding"), c.ints("dilation"),
                        c.num("groups"));
    });
}

TEST(ConvTranspose3d, ValuesAndGradientsMatchTorch) {
  for (const Case& c : load("conv_transpose3d"))
    check_case(c, {"x", "w", "b"}, [&](const auto& in) {
      return fw::conv_transpose3d(in.at("x"), in.at("w"), opt_tensor(in, "b"), c.ints("stride"), c.ints("padding"),
                                  c.ints("output_padding"), c.num("groups"), c.ints("dilation"));
    });
}

TEST(Pool3d, MaxAndAvgMatchTorch) {
  for (const Case& c : load("max_pool3d"))
    check_case(c, {"x"}, [&](const auto& in) {
      auto o = F::MaxPool3dFuncOptions(fw::ExpandingArray<3>(c.ints("kernel")))
                   .padding(fw::ExpandingArray<3>(c.ints("padding")))
                   .dilation(fw::ExpandingArray<3>(c.ints("dilation")))
                   .ceil_mode(c.flag("ceil"));
      if (!c.ints("stride").empty()) o.stride(fw::ExpandingArray<3>(c.ints("stride")));
      Tensor y = F::max_pool3d(in.at("x"), o);
      // The index path gives the same values, and its indices pick them out of the input.
      auto [v, idx] = F::max_pool3d_with_indices(in.at("x").detach(), o);
      FW_EXPECT_CLOSE(v, y.detach());
      Tensor x = in.at("x").detach();
      int64_t planes = x.numel() / (x.size(-1) * x.size(-2) * x.size(-3));
      FW_EXPECT_CLOSE(x.reshape({planes, -1}).gather(1, idx.reshape({planes, -1})).view(v.sizes()), v);
      return y;
    });
  for (const Case& c : load("avg_pool3d"))
    check_case(c, {"x"}, [&](const auto& in) {
      auto o = F::AvgPool3dFuncOptions(fw::ExpandingArray<3>(c.ints("kernel")))
                   .padding(fw::ExpandingArray<3>(c.ints("padding")))
                   .ceil_mode(c.flag("ceil"))
                   .count_include_pad(c.flag("count_include_pad"));
      if (!c.ints("stride").empty()) o.stride(fw::ExpandingArray<3>(c.ints("stride")));
      if (!c.none("divisor")) o.divisor_override(c.num("divisor"));
      return F::avg_pool3d(in.at("x"), o);
    });
}

// Narrow integer types average without overflowing (sums in int64), truncating toward zero as
// PyTorch's integer kernels; empty batches pass through the composites.
TEST(Pool3d, IntegerAveragesAndEmptyBatches) {
  Tensor u = fw::full({1, 1, 2, 2, 2}, 200, fw::kByte);
  Tensor a = fw::avg_pool3d(u, 2);
  EXPECT_EQ(a.dtype(), fw::kByte);
  EXPECT_EQ(a.item<int64_t>(), 200);
  Tensor s = fw::tensor(std::vector<int64_t>{-7, 0, 0, 0, 0, 0, 0, 0}).view({1, 1, 2, 2, 2}).to(fw::kChar);
  EXPECT_EQ(fw::avg_pool3d(s, 2).item<int64_t>(), 0);                          // -7 / 8 -> 0
  EXPECT_EQ(fw::avg_pool3d(s, 2, {}, 0, false, true, 3).item<int64_t>(), -2);  // -7 / 3 -> -2
  Tensor e = fw::zeros({0, 2, 4, 4, 4});
  EXPECT_EQ(fw::max_pool3d(e, 2).sizes().vec(), (std::vector<int64_t>{0, 2, 2, 2, 2}));
  EXPECT_EQ(std::get<1>(fw::adaptive_max_pool3d(e, 3)).sizes().vec(), (std::vector<int64_t>{0, 2, 3, 3, 3}));
  EXPECT_EQ(fw::adaptive_avg_pool3d(e, {1, 2, 3}).sizes().vec(), (std::vector<int64_t>{0, 2, 1, 2, 3}));
  auto [v, i] = fw::max_pool2d_with_indices(fw::zeros({0, 2, 4, 4}), 2);
  EXPECT_EQ(fw::max_unpool2d(v, i, {4, 4}).sizes().vec(), (std::vector<int64_t>{0, 2, 4, 4}));
}

// The global average (one pass over each volume) is the mean, values and gradients, batched or not.
TEST(AdaptivePool, GlobalAverageIsTheMean) {
  for (auto sizes : {std::vector<int64_t>{2, 3, 4, 5, 6}, std::vector<int64_t>{3, 2, 5, 4}}) {
    Tensor x = fw::randn(sizes, fw::kDouble).requires_grad_(true);
    Tensor y = fw::adaptive_avg_pool3d(x, 1);
    Tensor ref = x.mean({-3, -2, -1}, true);
    FW_EXPECT_CLOSE(y, ref, 1e-12, 1e-12);
    Tensor g = fw::randn(ref.sizes(), fw::kDouble);
    auto gy = fw::autograd::grad({(y * g).sum()}, {x});
    auto gr = fw::autograd::grad({(ref * g).sum()}, {x});
    FW_EXPECT_CLOSE(gy[0], gr[0], 1e-12, 1e-12);
  }
}

TEST(AdaptivePool, AvgAndMaxMatchTorch) {
  for (const Case& c : load("adaptive_avg_pool3d"))
    check_case(c, {"x"}, [&](const auto& in) {
      return F::adaptive_avg_pool3d(in.at("x"), F::AdaptiveAvgPool3dFuncOptions(fw::ExpandingArray<3>(c.ints("size"))));
    });
  for (const Case& c : load("adaptive_max_pool1d"))
    check_case(c, {"x"}, [&](const auto& in) {
      return F::adaptive_max_pool1d(in.at("x"), F::AdaptiveMaxPool1dFuncOptions(c.ints("size")[0]));
    });
  for (const Case& c : load("adaptive_max_pool2d"))
    check_case(c, {"x"}, [&](const auto& in) {
      return nn::AdaptiveMaxPool2d(fw::ExpandingArray<2>(c.ints("size")))->forward(in.at("x"));
    });
  for (const Case& c : load("adaptive_max_pool3d"))
    check_case(c, {"x"}, [&](const auto& in) {
      nn::AdaptiveMaxPool3d m(fw::ExpandingArray<3>(c.ints("size")));
      auto [v, idx] = m->forward_with_indices(in.at("x").detach());
      Tensor y = m->forward(in.at("x"));
      FW_EXPECT_CLOSE(v, y.detach());
      return y;
    });
}

TEST(MaxUnpool, MatchesTorch) {
  for (const char* kind : {"max_unpool1d", "max_unpool2d", "max_unpool3d"})
    for (const Case& c : load(kind))
      check_case(c, {"x"}, [&](const auto& in) {
        std::optional<std::vector<int64_t>> size;
        if (!c.none("size")) size = c.ints("size");
        const Tensor& idx = c.get("i");
        auto k = c.ints("kernel");
        auto s = c.none("stride") ? k : c.ints("stride");
        auto p = c.ints("padding");
        if (k.size() == 1 && std::string(kind) == "max_unpool1d")
          return F::max_unpool1d(in.at("x"), idx, F::MaxUnpool1dFuncOptions(k[0]).stride(s[0]).padding(p[0]).output_size(size));
        if (std::string(kind) == "max_unpool2d") {
          nn::MaxUnpool2d m(nn::MaxUnpool2dOptions(fw::ExpandingArray<2>(k)).stride(fw::ExpandingArray<2>(s)).padding(
              fw::ExpandingArray<2>(p)));
          return m->forward(in.at("x"), idx, size);
        }
        return F::max_unpool3d(in.at("x"), idx,
                               F::MaxUnpool3dFuncOptions(fw::ExpandingArray<3>(k))
                                   .stride(fw::ExpandingArray<3>(s))
                                   .padding(fw::ExpandingArray<3>(p))
                                   .output_size(size));
      });
}

TEST(LPPool, MatchesTorch) {
  for (const Case& c : load("lp_pool1d"))
    check_case(c, {"x"}, [&](const auto& in) {
      auto o = nn::LPPool1dOptions(c.real("norm"), c.ints("kernel")[0]).ceil_mode(c.flag("ceil"));
      if (!c.none("stride")) o.stride(c.ints("stride")[0]);
      return nn::LPPool1d(o)->forward(in.at("x"));
    });
  for (const Case& c : load("lp_pool2d"))
    check_case(c, {"x"}, [&](const auto& in) {
      auto o = F::LPPool2dFuncOptions(c.real("norm"), fw::ExpandingArray<2>(c.ints("kernel"))).ceil_mode(c.flag("ceil"));
      if (!c.none("stride")) o.stride(fw::ExpandingArray<2>(c.ints("stride")));
      return F::lp_pool2d(in.at("x"), o);
    });
}

TEST(Conv3dModule, ForwardAndGradientsMatchTorch) {
  // The module's own parameters: load them, then compare forward and parameter gradients.
  const Case c = load("Conv3d")[0];
  nn::Conv3d m(nn::Conv3dOptions(4, 6, {3, 2, 2}).stride({1, 2, 1}).padding({1, 0, 1}).dilation({2, 1, 1}).groups(2));
  m->to(fw::kDouble);
  {
    fw::NoGradGuard ng;
    m->weight.copy_(c.get("weight"));
    m->bias.copy_(c.get("bias"));
  }
  Tensor x = leaf(c, "x");
  Tensor y = m->forward(x);
  FW_EXPECT_CLOSE(y, c.get("y"), 1e-10, 1e-10);
  (y * c.get("g")).sum().backward();
  FW_EXPECT_CLOSE(x.grad(), c.get("grad.x"), 1e-10, 1e-10);
  FW_EXPECT_CLOSE(m->weight.grad(), c.get("grad.weight"), 1e-10, 1e-10);
  FW_EXPECT_CLOSE(m->bias.grad(), c.get("grad.bias"), 1e-10, 1e-10);
}

void expect_module(nn::Module& m, const Case& c, const std::function<Tensor(const Tensor&)>& fwd) {
  SCOPED_TRACE(c.kind);
  {
    fw::NoGradGuard ng;
    m.named_parameters()["weight"].copy_(c.get("weight"));
    m.named_parameters()["bias"].copy_(c.get("bias"));
  }
  Tensor x = leaf(c, "x");
  Tensor y = fwd(x);
  FW_EXPECT_CLOSE(y, c.get("y"), 1e-10, 1e-10);
  (y * c.get("g")).sum().backward();
  FW_EXPECT_CLOSE(x.grad(), c.get("grad.x"), 1e-10, 1e-10);
  FW_EXPECT_CLOSE(m.named_parameters()["weight"].grad(), c.get("grad.weight"), 1e-10, 1e-10);
  FW_EXPECT_CLOSE(m.named_parameters()["bias"].grad(), c.get("grad.bias"), 1e-10, 1e-10);
}

TEST(Conv3dModule, ReflectPaddingAndTransposedOutputSize) {
  nn::Conv3d conv(nn::Conv3dOptions(2, 3, 3).padding(1).padding_mode(fw::kReflect));
  conv->to(fw::kDouble);
  expect_module(*conv, load("Conv3d_reflect")[0], [&](const Tensor& x) { return conv->forward(x); });
  const Case c = load("ConvTranspose3d")[0];
  nn::ConvTranspose3d convt(nn::ConvTranspose3dOptions(4, 6, {2, 3, 2}).stride(2).padding({0, 1, 1}).groups(2));
  convt->to(fw::kDouble);
  expect_module(*convt, c, [&](const Tensor& x) { return convt->forward(x, c.ints("output_size")); });
  EXPECT_THROW(convt->forward(c.get("x"), std::vector<int64_t>{9, 6, 5}), fw::Error);
}

TEST(BatchNorm3dModule, TrainingStatisticsMatchTorch) {
  const Case c = load("BatchNorm3d")[0];
  nn::BatchNorm3d bn(nn::BatchNorm3dOptions(3).momentum(0.2));
  bn->to(fw::kDouble);
  Tensor x = leaf(c, "x");
  bn->forward(x);
  Tensor y = bn->forward(x * 0.5);
  FW_EXPECT_CLOSE(y, c.get("y"), 1e-10, 1e-10);
  FW_EXPECT_CLOSE(bn->running_mean, c.get("running_mean"), 1e-10, 1e-10);
  FW_EXPECT_CLOSE(bn->running_var, c.get("running_var"), 1e-10, 1e-10);
  (y * c.get("g")).sum().backward();
  FW_EXPECT_CLOSE(x.grad(), c.get("grad.x"), 1e-10, 1e-10);
  EXPECT_EQ(bn->num_batches_tracked.item<int64_t>(), 2);
  try {
    bn->forward(fw::zeros({2, 3, 4, 4}));
    ADD_FAILURE() << "4-d input accepted";
  } catch (const fw::Error& e) {
    EXPECT_NE(std::string(e.what()).find("[BatchNorm3d] expected 5D input (got 4D input)"), std::string::npos) << e.what();
  }
}

std::string printed(const nn::Module& m) {
  std::ostringstream os;
  m.pretty_print(os);
  return os.str();
}

TEST(Modules3d, PrintingShapesAndInit) {
  nn::Conv3d conv(nn::Conv3dOptions(4, 8, {3, 2, 1}).padding(fw::kSame).groups(2).bias(false));
  EXPECT_EQ(printed(*conv), "fw::nn::Conv3d(4, 8, kernel_size=[3, 2, 1], stride=[1, 1, 1], padding='same', groups=2, bias=false)");
  EXPECT_THROW(nn::Conv3d(nn::Conv3dOptions(4, 8, 3).stride(2).padding(fw::kSame)), fw::Error);
  nn::Conv3d c3(3, 5, 2);
  EXPECT_EQ(c3->weight.sizes().vec(), (std::vector<int64_t>{5, 3, 2, 2, 2}));
  // kaiming_uniform_(a = sqrt(5)) and the bias both bound by 1 / sqrt(fan_in), fan_in = 3 * 8.
  double bound = 1.0 / std::sqrt(24.0);
  EXPECT_LE(c3->weight.abs().max().item<double>(), bound);
  EXPECT_LE(c3->bias.abs().max().item<double>(), bound);
  EXPECT_GT(c3->weight.abs().max().item<double>(), bound * 0.5);
  nn::ConvTranspose3d ct(nn::ConvTranspose3dOptions(4, 6, 3).groups(2).output_padding(1).stride(2));
  EXPECT_EQ(ct->weight.sizes().vec(), (std::vector<int64_t>{4, 3, 3, 3, 3}));
  EXPECT_EQ(printed(*ct), "fw::nn::ConvTranspose3d(4, 6, kernel_size=[3, 3, 3], stride=[2, 2, 2], output_padding=[1, 1, 1], groups=2)");
  EXPECT_EQ(printed(*nn::MaxPool3d(nn::MaxPool3dOptions(2).stride({1, 2, 2}))),
            "fw::nn::MaxPool3d(kernel_size=[2, 2, 2], stride=[1, 2, 2], padding=[0, 0, 0], dilation=[1, 1, 1], ceil_mode=false)");
  EXPECT_EQ(printed(*nn::AvgPool3d(3)), "fw::nn::AvgPool3d(kernel_size=[3, 3, 3], stride=[3, 3, 3], padding=[0, 0, 0])");
  EXPECT_EQ(printed(*nn::AdaptiveAvgPool3d(nn::AdaptiveAvgPool3dOptions({1, 2, 3}))),
            "fw::nn::AdaptiveAvgPool3d(output_size=[1, 2, 3])");
  EXPECT_EQ(printed(*nn::AdaptiveMaxPool1d(4)), "fw::nn::AdaptiveMaxPool1d(output_size=4)");
  EXPECT_EQ(printed(*nn::MaxUnpool3d(nn::MaxUnpool3dOptions(2).padding(1))),
            "fw::nn::MaxUnpool3d(kernel_size=[2, 2, 2], stride=[2, 2, 2], padding=[1, 1, 1])");
  EXPECT_EQ(printed(*nn::LPPool2d(nn::LPPool2dOptions(2, {3, 2}).stride(1))),
            "fw::nn::LPPool2d(norm_type=2, kernel_size=[3, 2], stride=[1, 1], ceil_mode=false)");
  EXPECT_EQ(printed(*nn::BatchNorm3d(4)),
            "fw::nn::BatchNorm3d(4, eps=1e-05, momentum=0.1, affine=true, track_running_stats=true)");
  // A module with forward_with_indices: MaxPool3d's indices are the functional's.
  Tensor x = fw::randn({2, 3, 4, 5, 6});
  nn::MaxPool3d mp(nn::MaxPool3dOptions({2, 3, 2}).padding(1));
  auto [v, i] = mp->forward_with_indices(x);
  auto [v2, i2] = fw::max_pool3d_with_indices(x, {2, 3, 2}, {2, 3, 2}, 1);
  EXPECT_TRUE(fw::equal(v, v2));
  EXPECT_TRUE(fw::equal(i, i2));
}

void expect_error(const std::function<void()>& f, const std::string& fragment) {
  try {
    f();
    ADD_FAILURE() << "no error; expected: " << fragment;
  } catch (const fw::Error& e) {
    EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
  }
}

TEST(MaxUnpool, Errors) {
  Tensor x = fw::randn({1, 2, 3, 3});
  auto [v, i] = fw::max_pool2d_with_indices(x, 2);
  expect_error([&] { fw::max_unpool2d(v, i * 0 + 7, {2, 2}); },
               "[max_unpool2d] Found an invalid max index: 7 (output volumes are of size [2, 2])");
  expect_error([&] { fw::max_unpool2d(v, i * 0 - 1, {2, 2}); }, "[max_unpool2d] Found an invalid max index: -1");
  expect_error([&] { fw::max_unpool2d(v, i.to(fw::kInt), {2, 2}); }, "[max_unpool2d] elements in indices should be type int64 but got: int32");
  expect_error([&] { fw::max_unpool2d(v, i.view({1, 2, 1}), {2, 2}); },
               "[max_unpool2d] Expected shape of indices to be same as that of the input tensor");
  expect_error([&] { fw::max_unpool2d(v, i, {2, 2, 2}); }, "[max_unpool2d] There should be exactly 2 elements");
  expect_error([&] { F::max_unpool2d(v, i, F::MaxUnpool2dFuncOptions(2).output_size(std::vector<int64_t>{5, 2})); },
               "[max_unpool2d] invalid output_size [5, 2] (dim 0 must be between 0 and 4)");
  expect_error([&] { F::max_unpool2d(v, i, F::MaxUnpool2dFuncOptions(2).output_size(std::vector<int64_t>{2})); },
               "[max_unpool2d] output_size should be a sequence containing 2 or 4 elements");
  expect_error([&] { fw::max_unpool3d(v.unsqueeze(2), i.unsqueeze(2), {1, 2, 2}, {1, 0, 1}, {0, 0, 0}); },
               "[max_unpool3d] stride should be 3 positive integers");
}

// Conv3d -> relu -> max_pool3d -> avg_pool3d -> adaptive_max_pool3d under fw::compile: the
// composites trace to primitives; values and every gradient as eager.
TEST(Modules3d, CompiledNetworkMatchesEager) {
  fw::manual_seed(5);
  nn::Conv3d conv(nn::Conv3dOptions(2, 4, 3).padding(1));
  nn::ConvTranspose3d up(nn::ConvTranspose3dOptions(4, 2, 2).stride(2));
  auto net = [&](const Tensor& x) {
    Tensor h = fw::relu(conv->forward(x));
    h = fw::max_pool3d(h, 2);
    h = up->forward(h);
    h = fw::avg_pool3d(h, {2, 1, 2}, 1, {1, 0, 0});
    return std::get<0>(fw::adaptive_max_pool3d(h, {2, 3, 2})).sum({2, 3, 4});
  };
  Tensor x = fw::randn({2, 2, 6, 6, 4});
  auto params = conv->parameters();
  for (auto& p : up->parameters()) params.push_back(p);
  Tensor xe = x.clone().requires_grad_(true);
  Tensor ye = net(xe);
  std::vector<Tensor> wrt{xe};
  for (auto& p : params) wrt.push_back(p);
  auto ge = fw::autograd::grad({ye.sum()}, wrt);
  auto compiled = fw::compile([&](const Tensor& in) { return net(in); });
  Tensor xc = x.clone().requires_grad_(true);
  Tensor yc = compiled(xc);
  FW_EXPECT_CLOSE(yc, ye, 1e-5, 1e-5);
  std::vector<Tensor> wrtc{xc};
  for (auto& p : params) wrtc.push_back(p);
  auto gc = fw::autograd::grad({yc.sum()}, wrtc);
  for (size_t k = 0; k < ge.size(); k++) FW_EXPECT_CLOSE(gc[k], ge[k], 1e-4, 1e-5);
}

}  // namespace
