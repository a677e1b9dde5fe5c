// libtorch's remaining activations (hardshrink, softshrink, softsign, tanhshrink, celu, rrelu, glu,
// softmin, prelu, threshold, logsigmoid, Softmax2d) and multi-head attention, functional and
// module forms: values and input gradients against PyTorch (tests/fixtures/gen_activation.py),
// pretty_print, parameters, error messages, gradcheck/gradgradcheck in float64, rrelu's sampling.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>

#include <fw/fw.h>

#include "tests/fixture.h"
#include "tests/expect_error.h"

namespace nn = fw::nn;
namespace F = fw::nn::functional;
using fw::Tensor;
using fw::autograd::variable_list;

namespace {

// ---- fixture loading (tests/fixtures/activation.txt: "t <key> <ndim> <sizes...> <values...>")

const std::map<std::string, Tensor>& fixtures() {
  static const std::map<std::string, Tensor> f = [] {
    std::map<std::string, Tensor> r;
    std::ifstream in(std::string(FW_FIXTURE_DIR) + "/activation.txt");
    EXPECT_TRUE(in.good()) << "missing tests/fixtures/activation.txt";
    std::string line, tok;
    while (std::getline(in, line)) {
      if (line.empty() || line[0] == '#') continue;
      std::istringstream is(line);
      std::string kind, key;
      int64_t nd = 0;
      is >> kind >> key >> nd;
      std::vector<int64_t> sizes(nd);
      int64_t n = 1;
      for (auto& v : sizes) {
        is >> v;
        n *= v;
      }
      std::vector<float> vals(n);
      for (auto& v : vals) {  // strtof: istream does not read "-inf"
        is >> tok;
        v = std::strtof(tok.c_str(), nullptr);
      }
      r[key] = fw::tensor(vals).reshape(sizes);
    }
    return r;
  }();
  return f;
}

Tensor T(const std::string& key) {
  auto it = fixtures().find(key);
  EXPECT_TRUE(it != fixtures().end()) << "no fixture tensor " << key;
  return it == fixtures().end() ? Tensor() : it->second.clone();
}
bool has(const std::string& key) { return fixtures().count(key) > 0; }


// fn(x) and d sum(fn(x) * g) / dx against the fixture case `name`.
void check_case(const std::string& name, const std::function<Tensor(const Tensor&)>& fn) {
  SCOPED_TRACE(name);
  Tensor x = T(name + ".x").requires_grad_(true);
  Tensor y = fn(x);
  FW_EXPECT_CLOSE(y, T(name + ".y"));
  Tensor dx = fw::autograd::grad({(y * T(name + ".g")).sum()}, {x})[0];
  FW_EXPECT_CLOSE(dx, T(name + ".dx"));
}

std::string printed(const nn::Module& m) {
  std::ostringstream os;
  m.pretty_print(os);
  return os.str();
}

Tensor leaf(std::vector<int64_t> shape, uint64_t seed, double lo = -2, double hi = 2) {
  fw::manual_seed(seed);
  return (fw::rand(shape, fw::kDouble) * (hi - lo) + lo).requires_grad_(true);
}

void check_grads(const std::string& name, const std::function<variable_list(const variable_list&)>& fn,
                 const variable_list& inputs) {
  try {
    EXPECT_TRUE(fw::autograd::gradcheck(fn, inputs)) << name;
    EXPECT_TRUE(fw::autograd::gradgradcheck(fn, inputs)) << name;
  } catch (const std::exception& e) {
    ADD_FAILURE() << name << ": " << e.what();
  }
}

}  // namespace

// ---- values and gradients against PyTorch

TEST(ActivationExtra, FunctionalsMatchPyTorch) {
  check_case("hardshrink", [](const Tensor& x) { return F::hardshrink(x); });
  check_case("hardshrink_l1.2", [](const Tensor& x) { return F::hardshrink(x, F::HardshrinkFuncOptions().lambda(1.2)); });
  check_case("softshrink", [](const Tensor& x) { return F::softshrink(x); });
  check_case("softshrink_l0.9", [](const Tensor& x) { return F::softshrink(x, 0.9); });
  check_case("softsign", [](const Tensor& x) { return F::softsign(x); });
  check_case("tanhshrink", [](const Tensor& x) { return F::tanhshrink(x); });
  check_case("celu", [](const Tensor& x) { return F::celu(x); });
  check_case("celu_a0.7", [](const Tensor& x) { return F::celu(x, F::CELUFuncOptions().alpha(0.7)); });
  check_case("rrelu_eval", [](const Tensor& x) { return F::rrelu(x); });
  check_case("rrelu_eval_0.05_0.6",
             [](const Tensor& x) { return F::rrelu(x, F::RReLUFuncOptions().lower(0.05).upper(0.6)); });
  check_case("glu", [](const Tensor& x) { return F::glu(x); });
  check_case("glu_d1", [](const Tensor& x) { return F::glu(x, 1); });
  check_case("softmin_d1", [](const Tensor& x) { return F::softmin(x, F::SoftminFuncOptions(1)); });
  check_case("softmin_dm1", [](const Tensor& x) { return F::softmin(x, -1); });
  check_case("threshold_0.3_m2", [](const Tensor& x) { return F::threshold(x, F::ThresholdFuncOptions(0.3, -2.0)); });
  check_case("threshold_m0.5_0.5", [](const Tensor& x) { return F::threshold(x, {-0.5, 0.5}); });
  check_case("logsigmoid", [](const Tensor& x) { return F::logsigmoid(x); });
}

TEST(ActivationExtra, ModulesMatchPyTorch) {
  check_case("hardshrink", nn::Hardshrink());
  check_case("hardshrink_l1.2", nn::Hardshrink(1.2));
  check_case("softshrink", nn::Softshrink());
  check_case("softshrink_l0.9", nn::Softshrink(nn::SoftshrinkOptions(0.9)));
  check_case("softsign", nn::Softsign());
  check_case("tanhshrink", nn::Tanhshrink());
  check_case("celu", nn::CELU());
  check_case("celu_a0.7", nn::CELU(nn::CELUOptions().alpha(0.7)));
  nn::RReLU rrelu(nn::RReLUOptions().lower(0.05).upper(0.6));
  rrelu->eval();
  check_case("rrelu_eval_0.05_0.6", rrelu);
  check_case("glu", nn::GLU());
  check_case("glu_d1", nn::GLU(1));
  check_case("softmin_d1", nn::Softmin(1));
  check_case("softmin_dm1", nn::Softmin(nn::SoftminOptions(-1)));
  check_case("threshold_0.3_m2", nn::Threshold(0.3, -2.0));
  check_case("threshold_m0.5_0.5", nn::Threshold(nn::ThresholdOptions(-0.5, 0.5)));
  check_case("logsigmoid", nn::LogSigmoid());
  check_case("softmax2d_4d", nn::Softmax2d());
  check_case("softmax2d_3d", nn::Softmax2d());
}

TEST(ActivationExtra, PReLUMatchesPyTorch) {
  for (std::string name : {"prelu_1", "prelu_c4d", "prelu_c2d", "prelu_1d"}) {
    SCOPED_TRACE(name);
    Tensor x = T(name + ".x").requires_grad_(true);
    Tensor w = T(name + ".w").requires_grad_(true);
    Tensor y = F::prelu(x, w);
    FW_EXPECT_CLOSE(y, T(name + ".y"));
    auto grads = fw::autograd::grad({(y * T(name + ".g")).sum()}, {x, w});
    FW_EXPECT_CLOSE(grads[0], T(name + ".dx"));
    FW_EXPECT_CLOSE(grads[1], T(name + ".dw"), 1e-5, 1e-5);

    // The module: its weight gets the same gradient.
    nn::PReLU m(nn::PReLUOptions().num_parameters(w.numel()));
    {
      fw::NoGradGuard ng;
      m->weight.copy_(w.detach());
    }
    Tensor ym = m(x.detach());
    FW_EXPECT_CLOSE(ym, T(name + ".y"));
    (ym * T(name + ".g")).sum().backward();
    FW_EXPECT_CLOSE(m->weight.grad(), T(name + ".dw"), 1e-5, 1e-5);
  }
}

// ---- modules: options, printing, parameters

TEST(ActivationExtra, OptionDefaults) {
  EXPECT_EQ(nn::HardshrinkOptions().lambda(), 0.5);
  EXPECT_EQ(nn::SoftshrinkOptions().lambda(), 0.5);
  EXPECT_EQ(nn::CELUOptions().alpha(), 1.0);
  EXPECT_FALSE(nn::CELUOptions().inplace());
  EXPECT_EQ(nn::RReLUOptions().lower(), 1.0 / 8.0);
  EXPECT_EQ(nn::RReLUOptions().upper(), 1.0 / 3.0);
  EXPECT_FALSE(F::RReLUFuncOptions().training());
  EXPECT_EQ(nn::GLUOptions().dim(), -1);
  EXPECT_EQ(nn::PReLUOptions().num_parameters(), 1);
  EXPECT_EQ(nn::PReLUOptions().init(), 0.25);
  EXPECT_FALSE(nn::ThresholdOptions(1, 2).inplace());
  EXPECT_FALSE(F::SoftminFuncOptions(0).dtype().has_value());
  nn::MultiheadAttentionOptions o(16, 4);
  EXPECT_EQ(o.kdim(), 16);
  EXPECT_EQ(o.vdim(), 16);
  EXPECT_EQ(o.dropout(), 0.0);
  EXPECT_TRUE(o.bias());
  EXPECT_FALSE(o.add_bias_kv());
  EXPECT_FALSE(o.add_zero_attn());
  F::MultiheadAttentionForwardFuncOptions fo(4, 2, {}, {}, {}, {}, false, 0.0, {}, {});
  EXPECT_TRUE(fo.training());
  EXPECT_TRUE(fo.need_weights());
  EXPECT_TRUE(fo.average_attn_weights());
  EXPECT_FALSE(fo.use_separate_proj_weight());
}

TEST(ActivationExtra, PrettyPrintMatchesLibtorch) {
  EXPECT_EQ(printed(*nn::Hardshrink()), "fw::nn::Hardshrink(0.5)");
  EXPECT_EQ(printed(*nn::Hardshrink(1.25)), "fw::nn::Hardshrink(1.25)");
  EXPECT_EQ(printed(*nn::Softshrink(0.3)), "fw::nn::Softshrink(0.3)");
  EXPECT_EQ(printed(*nn::Softsign()), "fw::nn::Softsign()");
  EXPECT_EQ(printed(*nn::Tanhshrink()), "fw::nn::Tanhshrink()");
  EXPECT_EQ(printed(*nn::CELU()), "fw::nn::CELU(alpha=1)");
  EXPECT_EQ(printed(*nn::CELU(nn::CELUOptions().alpha(0.5).inplace(true))), "fw::nn::CELU(alpha=0.5, inplace=true)");
  EXPECT_EQ(printed(*nn::RReLU()), "fw::nn::RReLU(lower=0.125, upper=0.333333)");
  EXPECT_EQ(printed(*nn::RReLU(nn::RReLUOptions().lower(0.1).upper(0.4).inplace(true))),
            "fw::nn::RReLU(lower=0.1, upper=0.4, inplace=true)");
  EXPECT_EQ(printed(*nn::GLU()), "fw::nn::GLU(dim=-1)");
  EXPECT_EQ(printed(*nn::Softmin(1)), "fw::nn::Softmin(dim=1)");
  EXPECT_EQ(printed(*nn::Softmax2d()), "fw::nn::Softmax2d()");
  EXPECT_EQ(printed(*nn::PReLU()), "fw::nn::PReLU(num_parameters=1)");
  EXPECT_EQ(printed(*nn::PReLU(nn::PReLUOptions().num_parameters(3))), "fw::nn::PReLU(num_parameters=3)");
  EXPECT_EQ(printed(*nn::Threshold(0.1, 20)), "fw::nn::Threshold(threshold=0.1, value=20)");
  EXPECT_EQ(printed(*nn::Threshold(nn::ThresholdOptions(0.5, -1).inplace(true))),
            "fw::nn::Threshold(threshold=0.5, value=-1, inplace=true)");
  EXPECT_EQ(printed(*nn::LogSigmoid()), "fw::nn::LogSigmoid()");
  std::ostringstream os;
  os << nn::MultiheadAttention(8, 2);
  EXPECT_EQ(os.str(),
            "fw::nn::MultiheadAttention(\n"
            "  (out_proj): fw::nn::Linear(in_features=8, out_features=8, bias=true)\n"
            ")");
}

TEST(ActivationExtra, PReLUParameter) {
  nn::PReLU one;
  EXPECT_EQ(one->named_parameters().keys(), std::vector<std::string>{"weight"});
  EXPECT_EQ(one->weight.sizes(), (std::vector<int64_t>{1}));
  EXPECT_TRUE(one->weight.requires_grad());
  nn::PReLU many(nn::PReLUOptions().num_parameters(4).init(0.1));
  EXPECT_EQ(many->weight.sizes(), (std::vector<int64_t>{4}));
  EXPECT_TRUE(fw::allclose(many->weight, fw::full({4}, 0.1)));
  // Channel slopes apply along dim 1.
  Tensor x = -fw::ones({2, 4, 3});
  {
    fw::NoGradGuard ng;
    many->weight.copy_(fw::tensor({1.0f, 2.0f, 3.0f, 4.0f}));
  }
  Tensor y = many(x);
  EXPECT_TRUE(fw::equal(y.select(0, 1).select(1, 2), fw::tensor({-1.0f, -2.0f, -3.0f, -4.0f})));
  auto copy = std::dynamic_pointer_cast<nn::PReLUImpl>(many->clone());
  EXPECT_FALSE(copy->weight.is_same(many->weight));
  EXPECT_TRUE(fw::equal(copy->weight, many->weight));
}

// ---- errors

TEST(ActivationExtra, BadInputsNameOpAndShapes) {
  Tensor x = fw::randn({2, 3, 5});
  EXPECT_ERROR(F::prelu(x, fw::ones({4})), "[prelu] Mismatch of parameter numbers and input channel size. Found "
                                           "parameter numbers = 4 and channel size = 3");
  EXPECT_ERROR(F::prelu(x, fw::ones({3, 1})), "[prelu] Expected weight to be a scalar or 1D tensor, but got shape [3, 1]");
  EXPECT_ERROR(F::prelu(fw::randn({3}), fw::ones({3})), "channel size = 1");
  EXPECT_ERROR(nn::PReLU(nn::PReLUOptions().num_parameters(2))(x), "Found parameter numbers = 2 and channel size = 3");
  EXPECT_ERROR(F::glu(x), "[glu] Halving dimension must be even, but dimension -1 is size 5");
  EXPECT_ERROR(F::glu(x, 1), "dimension 1 is size 3");
  EXPECT_ERROR(F::glu(fw::scalar_tensor(1.0)), "[glu] glu does not support scalars");
  EXPECT_ERROR(F::glu(x, 3), "[glu] dim 3 is out of range for an input of shape [2, 3, 5]");
  EXPECT_ERROR(F::softshrink(x, -0.5), "[softshrink] lambda must be greater or equal to 0, but found to be -0.5");
  EXPECT_ERROR(F::celu(x, F::CELUFuncOptions().alpha(0)), "[celu] alpha cannot be 0");
  EXPECT_ERROR(F::rrelu(x, F::RReLUFuncOptions().lower(0.5).upper(0.2)),
               "[rrelu] lower bound should be less than or equal to the upper bound (got lower 0.5, upper 0.2)");
  EXPECT_ERROR(nn::Softmax2d()(fw::randn({3, 4})), "[Softmax2d] requires a 3D or 4D tensor as input, got shape [3, 4]");
  EXPECT_ERROR(nn::PReLU(nn::PReLUOptions().num_parameters(0)), "[PReLU] num_parameters must be positive");
}

// ---- gradcheck / gradgradcheck in float64

TEST(ActivationExtra, FunctionalsPassGradcheck) {
  using Fn = std::function<Tensor(const Tensor&)>;
  std::vector<std::pair<std::string, Fn>> cases = {
      {"hardshrink", [](const Tensor& x) { return F::hardshrink(x, 0.7); }},
      {"softshrink", [](const Tensor& x) { return F::softshrink(x, 0.7); }},
      {"softsign", [](const Tensor& x) { return F::softsign(x); }},
      {"tanhshrink", [](const Tensor& x) { return F::tanhshrink(x); }},
      {"celu", [](const Tensor& x) { return F::celu(x, F::CELUFuncOptions().alpha(0.6)); }},
      {"rrelu_eval", [](const Tensor& x) { return F::rrelu(x); }},
      {"glu", [](const Tensor& x) { return F::glu(x, 1); }},
      {"softmin", [](const Tensor& x) { return F::softmin(x, 2); }},
      {"threshold", [](const Tensor& x) { return F::threshold(x, {0.2, -1.5}); }},
      {"logsigmoid", [](const Tensor& x) { return F::logsigmoid(x); }},
      {"softmax2d", [](const Tensor& x) { return nn::Softmax2d()(x); }},
  };
  uint64_t seed = 11;
  for (auto& [name, fn] : cases) {
    Tensor x = leaf({2, 4, 3}, seed++);
    check_grads(name, [fn = fn](const variable_list& v) { return variable_list{fn(v[0])}; }, {x});
  }
  Tensor x = leaf({2, 3, 4}, 40), w = leaf({3}, 41, 0.05, 0.5);
  check_grads("prelu", [](const variable_list& v) { return variable_list{F::prelu(v[0], v[1])}; }, {x, w});
  Tensor w1 = leaf({1}, 42, 0.05, 0.5);
  check_grads("prelu_1", [](const variable_list& v) { return variable_list{F::prelu(v[0], v[1])}; }, {x, w1});
}

// ---- RReLU sampling

TEST(ActivationExtra, RReLUTrainingSlopesLieInBounds) {
  const double lower = 0.1, upper = 0.3;
  fw::manual_seed(5);
  Tensor x = fw::cat({-fw::rand({4000}, fw::kDouble) - 0.5, fw::rand({1000}, fw::kDouble) + 0.1}).requires_grad_(true);
  Tensor y = F::rrelu(x, F::RReLUFuncOptions().lower(lower).upper(upper).training(true));
  Tensor neg = x.detach().lt(0);
  Tensor slope = (y.detach() / x.detach()).masked_select(neg);
  EXPECT_GE(slope.min().item<double>(), lower);
  EXPECT_LE(slope.max().item<double>(), upper);
  // Spread over the whole range, not one value: mean near the middle, extremes near the bounds.
  EXPECT_NEAR(slope.mean().item<double>(), (lower + upper) / 2, 0.01);
  EXPECT_LT(slope.min().item<double>(), lower + 0.01);
  EXPECT_GT(slope.max().item<double>(), upper - 0.01);
  EXPECT_TRUE(fw::equal(y.detach().masked_select(neg.logical_not()), x.detach().masked_select(neg.logical_not())));
  // The gradient is the slope drawn for each element.
  Tensor dx = fw::autograd::grad({y.sum()}, {x})[0];
  EXPECT_TRUE(fw::allclose(dx.masked_select(neg), slope));
  EXPECT_TRUE(fw::equal(dx.masked_select(neg.logical_not()), fw::ones({1000}, fw::kDouble)));

  // The module samples in train mode and uses the mean slope in eval mode.
  nn::RReLU m(nn::RReLUOptions().lower(lower).upper(upper));
  Tensor xn = -fw::ones({1000});
  Tensor train_y = m(xn);
  EXPECT_GT((train_y - train_y.mean()).abs().max().item<float>(), 0.01f);
  m->eval();
  EXPECT_TRUE(fw::allclose(m(xn), fw::full({1000}, -(lower + upper) / 2)));
}

TEST(ActivationExtra, InplaceVariantsWriteTheInput) {
  Tensor x = fw::tensor({-2.0f, -0.5f, 0.5f, 2.0f});
  Tensor r = F::threshold(x, F::ThresholdFuncOptions(0.0, 9.0).inplace(true));
  EXPECT_TRUE(r.is_same(x));
  EXPECT_TRUE(fw::equal(x, fw::tensor({9.0f, 9.0f, 0.5f, 2.0f})));
  Tensor c = fw::tensor({-1.0f, 1.0f});
  nn::CELU(nn::CELUOptions().inplace(true))(c);
  EXPECT_NEAR(c.select(0, 0).item<float>(), std::expm1(-1.0), 1e-6);
  Tensor d = fw::tensor({-1.0f, 1.0f});
  F::rrelu(d, F::RReLUFuncOptions().inplace(true));
  EXPECT_NEAR(d.select(0, 0).item<float>(), -(1.0 / 8 + 1.0 / 3) / 2, 1e-6);
}

// ---- multi-head attention against PyTorch

namespace {

struct MhaCase {
  std::string name;
  nn::MultiheadAttentionOptions options;
  bool self_attn = false, need_weights = true, average = true;
  bool bool_attn_mask = false, bool_kpm = true;
};

Tensor mask_of(const std::string& key, bool as_bool) {
  if (!has(key)) return {};
  Tensor m = T(key);
  return as_bool ? m.ne(0) : m;
}

void check_mha(const MhaCase& c) {
  SCOPED_TRACE(c.name);
  nn::MultiheadAttention m(c.options);
  m->eval();
  {
    fw::NoGradGuard ng;
    for (auto& p : m->named_parameters()) p.value().copy_(T(c.name + ".p." + p.key()));
  }
  Tensor q = T(c.name + ".q").requires_grad_(true);
  Tensor k = c.self_attn ? q : T(c.name + ".k").requires_grad_(true);
  Tensor v = c.self_attn ? q : T(c.name + ".v").requires_grad_(true);
  Tensor attn_mask = mask_of(c.name + ".attn_mask", c.bool_attn_mask);
  Tensor kpm = mask_of(c.name + ".key_padding_mask", c.bool_kpm);
  auto [out, w] = m(q, k, v, kpm, c.need_weights, attn_mask, c.average);
  FW_EXPECT_CLOSE(out, T(c.name + ".out"), 1e-4, 1e-5);
  Tensor loss = (out * T(c.name + ".g")).sum();
  if (c.need_weights) {
    FW_EXPECT_CLOSE(w, T(c.name + ".w"), 1e-4, 1e-6);
    loss = loss + (w * T(c.name + ".gw")).sum();
  } else {
    EXPECT_FALSE(w.defined());
  }
  variable_list inputs = c.self_attn ? variable_list{q} : variable_list{q, k, v};
  auto params = m->named_parameters();
  for (auto& p : params) inputs.push_back(p.value());
  auto grads = fw::autograd::grad({loss}, inputs);
  const char* names[] = {"q", "k", "v"};
  size_t i = 0;
  for (; i < (c.self_attn ? 1u : 3u); i++) FW_EXPECT_CLOSE(grads[i], T(c.name + ".d" + names[i]), 1e-4, 1e-5);
  for (auto& p : params) {
    SCOPED_TRACE(p.key());
    FW_EXPECT_CLOSE(grads[i++], T(c.name + ".dp." + p.key()), 1e-4, 1e-5);
  }
}

}  // namespace

TEST(MultiheadAttention, MatchesPyTorch) {
  using O = nn::MultiheadAttentionOptions;
  std::vector<MhaCase> cases = {
      {"mha_self", O(8, 2), true},
      {"mha_self_causal_bool", O(8, 2), true, true, false, true},
      {"mha_cross_masks", O(8, 4)},
      {"mha_cross_masks_heads", O(8, 4), false, true, false},
      {"mha_kvdim_bool", O(6, 3).kdim(5).vdim(7), false, true, true, true},
      {"mha_bias_kv_zero_attn", O(8, 2).add_bias_kv(true).add_zero_attn(true)},
      {"mha_zero_attn_kvdim", O(6, 2).kdim(4).vdim(3).add_zero_attn(true), false, true, false},
      {"mha_nobias_noweights", O(8, 2).bias(false), false, false},
      {"mha_mask3d", O(8, 2)},
      {"mha_kpm_float", O(8, 2), false, true, true, false, false},
  };
  for (auto& c : cases) check_mha(c);
}

TEST(MultiheadAttention, FunctionalMatchesPyTorch) {
  const std::string n = "mha_cross_masks";
  Tensor q = T(n + ".q"), k = T(n + ".k"), v = T(n + ".v");
  auto o = F::MultiheadAttentionForwardFuncOptions(8, 4, T(n + ".p.in_proj_weight"), T(n + ".p.in_proj_bias"), {}, {},
                                                   false, 0.0, T(n + ".p.out_proj.weight"),
                                                   T(n + ".p.out_proj.bias"))
               .attn_mask(T(n + ".attn_mask"))
               .key_padding_mask(T(n + ".key_padding_mask").ne(0));
  auto [out, w] = F::multi_head_attention_forward(q, k, v, o);
  FW_EXPECT_CLOSE(out, T(n + ".out"), 1e-4, 1e-5);
  FW_EXPECT_CLOSE(w, T(n + ".w"), 1e-4, 1e-6);
  // A uint8 key_padding_mask acts as a bool one.
  auto [out8, w8] = F::multi_head_attention_forward(q, k, v, o.key_padding_mask(T(n + ".key_padding_mask").to(fw::kByte)));
  FW_EXPECT_CLOSE(out8, T(n + ".out"), 1e-4, 1e-5);
  // A bool mask and the float mask holding -inf at the same places agree.
  Tensor bmask = fw::rand({4, 5}).gt(0.7);
  bmask.select(1, 0).fill_(false);
  o.key_padding_mask(Tensor());
  auto [ob, wb] = F::multi_head_attention_forward(q, k, v, o.attn_mask(bmask));
  auto [of, wf] = F::multi_head_attention_forward(
      q, k, v, o.attn_mask(fw::zeros({4, 5}).masked_fill(bmask, -std::numeric_limits<double>::infinity())));
  FW_EXPECT_CLOSE(ob, of);
  FW_EXPECT_CLOSE(wb, wf);
  EXPECT_EQ(wb.masked_select(bmask.unsqueeze(0).expand({3, 4, 5})).abs().max().item<float>(), 0.0f);
}

TEST(MultiheadAttention, ParametersAndInit) {
  auto keys = [](const nn::Module& m) { return m.named_parameters().keys(); };
  auto shape = [](const nn::Module& m, const std::string& k) { return m.named_parameters()[k].sizes().vec(); };
  nn::MultiheadAttention a(16, 4);
  EXPECT_EQ(keys(*a), (std::vector<std::string>{"in_proj_weight", "in_proj_bias", "out_proj.weight", "out_proj.bias"}));
  EXPECT_EQ(shape(*a, "in_proj_weight"), (std::vector<int64_t>{48, 16}));
  EXPECT_EQ(shape(*a, "in_proj_bias"), (std::vector<int64_t>{48}));
  EXPECT_EQ(shape(*a, "out_proj.weight"), (std::vector<int64_t>{16, 16}));
  EXPECT_TRUE(a->_qkv_same_embed_dim);
  EXPECT_EQ(a->head_dim, 4);
  EXPECT_FALSE(a->q_proj_weight.defined());
  // xavier_uniform_ over (3E, E): bound sqrt(6 / (E + 3E)); zero biases.
  const double bound = std::sqrt(6.0 / (16 + 48));
  EXPECT_LE(a->in_proj_weight.abs().max().item<float>(), bound);
  EXPECT_GT(a->in_proj_weight.abs().max().item<float>(), 0.9 * bound);
  EXPECT_EQ(a->in_proj_bias.abs().max().item<float>(), 0.0f);
  EXPECT_EQ(a->out_proj->bias.abs().max().item<float>(), 0.0f);
  EXPECT_EQ(a->name(), "fw::nn::MultiheadAttention");

  nn::MultiheadAttention b(nn::MultiheadAttentionOptions(6, 2).kdim(4).vdim(5).add_bias_kv(true));
  EXPECT_EQ(keys(*b), (std::vector<std::string>{"q_proj_weight", "k_proj_weight", "v_proj_weight", "in_proj_bias",
                                                "bias_k", "bias_v", "out_proj.weight", "out_proj.bias"}));
  EXPECT_EQ(shape(*b, "k_proj_weight"), (std::vector<int64_t>{6, 4}));
  EXPECT_EQ(shape(*b, "v_proj_weight"), (std::vector<int64_t>{6, 5}));
  EXPECT_EQ(shape(*b, "bias_k"), (std::vector<int64_t>{1, 1, 6}));
  EXPECT_FALSE(b->_qkv_same_embed_dim);
  EXPECT_FALSE(b->in_proj_weight.defined());
  EXPECT_GT(b->bias_k.abs().max().item<float>(), 0.0f);

  nn::MultiheadAttention c(nn::MultiheadAttentionOptions(8, 2).bias(false));
  EXPECT_EQ(keys(*c), (std::vector<std::string>{"in_proj_weight", "out_proj.weight"}));
  EXPECT_FALSE(c->out_proj->bias.defined());

  // clone() is deep and computes the same thing.
  auto copy = std::dynamic_pointer_cast<nn::MultiheadAttentionImpl>(a->clone());
  EXPECT_FALSE(copy->in_proj_weight.is_same(a->in_proj_weight));
  EXPECT_TRUE(copy->out_proj.get() != a->out_proj.get());
  Tensor x = fw::randn({3, 2, 16});
  EXPECT_TRUE(fw::allclose(std::get<0>(copy->forward(x, x, x)), std::get<0>(a(x, x, x))));
}

TEST(MultiheadAttention, DropoutAppliesInTrainingOnly) {
  nn::MultiheadAttention m(nn::MultiheadAttentionOptions(8, 2).dropout(0.5));
  Tensor x = fw::randn({6, 2, 8});
  auto [out_t, w_t] = m->forward(x, x, x, {}, true, {}, false);
  // Dropped weights are zero and kept ones scaled by 2: rows no longer sum to 1.
  Tensor zeros = w_t.eq(0).sum();
  EXPECT_GT(zeros.item<int64_t>(), 0);
  m->eval();
  auto [out_e, w_e] = m->forward(x, x, x, {}, true, {}, false);
  EXPECT_TRUE(fw::allclose(w_e.sum(-1), fw::ones({2, 2, 6})));
  auto [out_e2, w_e2] = m(x, x, x);
  EXPECT_TRUE(fw::equal(out_e, out_e2));
  EXPECT_EQ(w_e2.sizes(), (std::vector<int64_t>{2, 6, 6}));
  EXPECT_FALSE(fw::allclose(out_t, out_e));
}

TEST(MultiheadAttention, PassesGradcheck) {
  fw::manual_seed(3);
  nn::MultiheadAttention m(nn::MultiheadAttentionOptions(4, 2).kdim(3).vdim(5).add_bias_kv(true).add_zero_attn(true));
  m->to(fw::kDouble);
  m->eval();
  Tensor q = leaf({2, 2, 4}, 50), k = leaf({3, 2, 3}, 51), v = leaf({3, 2, 5}, 52);
  Tensor mask = fw::tensor({{false, true, false}, {false, false, false}});
  Tensor kpm = fw::tensor({{false, false, false}, {false, false, true}});
  auto fn = [&](const variable_list& in) {
    auto [out, w] = m(in[0], in[1], in[2], kpm, true, mask);
    return variable_list{out, w};
  };
  check_grads("mha inputs", fn, {q, k, v});
  // And through the parameters (the weights as explicit inputs of the functional).
  Tensor wq = leaf({4, 4}, 53, -1, 1), bias = leaf({12}, 54, -1, 1);
  Tensor ow = leaf({4, 4}, 55, -1, 1);
  auto fn2 = [&](const variable_list& in) {
    Tensor w_in = fw::cat({in[0], in[0] * 0.5, in[0].t()});
    auto o = F::MultiheadAttentionForwardFuncOptions(4, 2, w_in, in[1], {}, {}, false, 0.0, in[2], {})
                 .attn_mask(fw::tensor({{0.0, -0.7}, {-0.3, 0.0}}, fw::kDouble));
    return variable_list{std::get<0>(F::multi_head_attention_forward(q.detach(), q.detach() * 2, q.detach(), o))};
  };
  check_grads("mha weights", fn2, {wq, bias, ow});
}

TEST(MultiheadAttention, BadInputsNameOpAndShapes) {
  EXPECT_ERROR(nn::MultiheadAttention(10, 3), "[MultiheadAttention] embed_dim must be divisible by num_heads (embed_dim "
                                              "10, num_heads 3)");
  EXPECT_ERROR(nn::MultiheadAttention(8, 0), "[MultiheadAttention] num_heads must be greater than 0");
  nn::MultiheadAttention m(8, 2);
  Tensor q = fw::randn({4, 3, 8}), kv = fw::randn({5, 3, 8});
  EXPECT_ERROR(m(fw::randn({4, 8}), kv, kv), "[multi_head_attention_forward] expected query (L, N, E)");
  EXPECT_ERROR(m(fw::randn({4, 3, 6}), kv, kv), "query has embed_dim 6 but embed_dim_to_check is 8");
  EXPECT_ERROR(m(q, kv, fw::randn({6, 3, 8})), "key and value must have the same length");
  EXPECT_ERROR(m(q, fw::randn({5, 3, 7}), fw::randn({5, 3, 7})), "key and value need embed_dim 8 features");
  EXPECT_ERROR(m(q, kv, kv, fw::zeros({3, 4}, fw::kBool)), "key_padding_mask must have shape [3, 5]");
  EXPECT_ERROR(m->forward(q, kv, kv, {}, true, fw::zeros({5, 4})), "attn_mask must have shape [4, 5] or [6, 4, 5]");
  EXPECT_ERROR(m->forward(q, kv, kv, {}, true, fw::zeros({4, 5}, fw::kLong)),
               "only bool and floating-point attn_masks");
  nn::MultiheadAttention sep(nn::MultiheadAttentionOptions(8, 2).kdim(4));
  EXPECT_ERROR(sep(q, kv, kv), "k_proj_weight must have shape [8, 8] for key of shape [5, 3, 8], got [8, 4]");
  auto o = F::MultiheadAttentionForwardFuncOptions(8, 3, m->in_proj_weight, m->in_proj_bias, {}, {}, false, 0.0,
                                                   m->out_proj->weight, m->out_proj->bias);
  EXPECT_ERROR(F::multi_head_attention_forward(q, kv, kv, o), "embed_dim must be divisible by num_heads (embed_dim 8, "
                                                              "num_heads 3)");
  o.num_heads(2).bias_k(fw::zeros({1, 1, 8}));
  EXPECT_ERROR(F::multi_head_attention_forward(q, kv, kv, o), "bias_k and bias_v must be given together");
}
