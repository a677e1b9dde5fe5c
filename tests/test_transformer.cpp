// Transformer layers, stacks and model against PyTorch 1.13 (tests/fixtures/transformer.txt from
// gen_transformer.py, float64): outputs, input gradients and parameter gradients with causal,
// floating and key-padding masks; plus custom encoders/decoders through AnyModule, cloning,
// eval-mode dropout and errors.
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <sstream>

#include "fw/autograd.h"
#include "fw/nn.h"
#include "tests/fixture.h"

namespace nn = fw::nn;
using fw::Tensor;

namespace {

struct TCase {
  std::string kind, name;
  std::map<std::string, std::string> a;
  std::map<std::string, Tensor> t;
  int64_t i(const std::string& k) const { return std::stoll(a.at(k)); }
  Tensor mask(const std::string& k) const {
    auto it = t.find(k);
    if (it == t.end()) return {};
    return a.count(k + "_bool") ? it->second.to(fw::kBool) : it->second;
  }
};

const std::vector<TCase>& cases() {
  static std::vector<TCase> all = [] {
    std::vector<TCase> r;
    std::ifstream in(std::string(FW_FIXTURE_DIR) + "/transformer.txt");
    EXPECT_TRUE(in.good()) << "missing fixture transformer.txt";
    std::string line;
    while (std::getline(in, line)) {
      std::istringstream ls(line);
      std::string kind;
      ls >> kind;
      if (kind == "case") {
        r.emplace_back();
        ls >> r.back().kind >> r.back().name;
      } else if (kind == "a") {
        std::string k, v;
        ls >> k >> v;
        r.back().a[k] = v;
      } else if (kind == "t") {
        std::string k;
        ls >> k;
        r.back().t[k] = fwtest::read_record_tensor(ls);
      }
    }
    return r;
  }();
  return all;
}

nn::activation_t activation_of(const std::string& s) {
  if (s == "relu") return fw::kReLU;
  if (s == "gelu") return fw::kGELU;
  return std::function<Tensor(const Tensor&)>([](const Tensor& x) { return fw::tanh(x); });
}

template <class O>
O layer_options(const TCase& c) {
  return O(c.i("d_model"), c.i("nhead")).dim_feedforward(c.i("dim_feedforward")).dropout(0.0).activation(
      activation_of(c.a.at("activation")));
}

// Builds the case's module (float64) and returns it with a function running its forward.
std::pair<std::shared_ptr<nn::Module>, std::function<Tensor(const std::map<std::string, Tensor>&)>> build(
    const TCase& c) {
  if (c.kind == "enc_layer") {
    auto m = nn::TransformerEncoderLayer(layer_options<nn::TransformerEncoderLayerOptions>(c));
    return {m.ptr(), [m, &c](const std::map<std::string, Tensor>& in) mutable {
              return m(in.at("src"), c.mask("src_mask"), c.mask("src_key_padding_mask"));
            }};
  }
  auto dec_call = [&c](auto m) {
    return [m, &c](const std::map<std::string, Tensor>& in) mutable {
      return m(in.at("tgt"), in.at("memory"), c.mask("tgt_mask"), c.mask("memory_mask"),
               c.mask("tgt_key_padding_mask"), c.mask("memory_key_padding_mask"));
    };
  };
  if (c.kind == "dec_layer") {
    auto m = nn::TransformerDecoderLayer(layer_options<nn::TransformerDecoderLayerOptions>(c));
    return {m.ptr(), dec_call(m)};
  }
  if (c.kind == "encoder") {
    auto o = nn::TransformerEncoderOptions(layer_options<nn::TransformerEncoderLayerOptions>(c), c.i("num_layers"));
    if (c.i("norm")) o.norm(nn::AnyModule(nn::LayerNorm(nn::LayerNormOptions({c.i("d_model")}))));
    auto m = nn::TransformerEncoder(o);
    return {m.ptr(), [m, &c](const std::map<std::string, Tensor>& in) mutable {
              return m(in.at("src"), c.mask("src_mask"), c.mask("src_key_padding_mask"));
            }};
  }
  if (c.kind == "decoder") {
    auto o = nn::TransformerDecoderOptions(layer_options<nn::TransformerDecoderLayerOptions>(c), c.i("num_layers"));
    if (c.i("norm")) o.norm(nn::AnyModule(nn::LayerNorm(nn::LayerNormOptions({c.i("d_model")}))));
    auto m = nn::TransformerDecoder(o);
    return {m.ptr(), dec_call(m)};
  }
  auto o = nn::TransformerOptions(c.i("d_model"), c.i("nhead"), c.i("num_encoder_layers"), c.i("num_decoder_layers"))
               .dim_feedforward(c.i("dim_feedforward"))
               .dropout(0.0)
               .activation(activation_of(c.a.at("activation")));
  auto m = nn::Transformer(o);
  return {m.ptr(), [m, &c](const std::map<std::string, Tensor>& in) mutable {
            return m(in.at("src"), in.at("tgt"), c.mask("src_mask"), c.mask("tgt_mask"), c.mask("memory_mask"),
                     c.mask("src_key_padding_mask"), c.mask("tgt_key_padding_mask"), c.mask("memory_key_padding_mask"));
          }};
}

}  // namespace

TEST(Transformer, LayersStacksAndModelMatchPyTorch) {
  ASSERT_EQ(cases().size(), 8u);
  for (const auto& c : cases()) {
    SCOPED_TRACE(c.kind + " " + c.name);
    auto [module, run] = build(c);
    module->to(fw::kDouble);
    // Every PyTorch parameter has an fw parameter of the same name and shape, and vice versa.
    auto params = module->named_parameters();
    size_t expected = 0;
    for (const auto& [k, v] : c.t) expected += k.rfind("p.", 0) == 0;
    EXPECT_EQ(params.size(), expected);
    {
      fw::NoGradGuard ng;
      for (const auto& item : params) {
        auto it = c.t.find("p." + item.key());
        ASSERT_NE(it, c.t.end()) << "PyTorch has no parameter " << item.key();
        Tensor p = item.value();
        ASSERT_EQ(p.sizes(), it->second.sizes()) << item.key();
        p.copy_(it->second);
      }
    }
    std::map<std::string, Tensor> in;
    for (const char* k : {"src", "tgt", "memory"})
      if (c.t.count(k)) in[k] = c.t.at(k).clone().requires_grad_(true);
    Tensor out = run(in);
    FW_EXPECT_CLOSE(out, c.t.at("out"), 1e-9, 1e-10);
    (out * c.t.at("w")).sum().backward();
    for (const auto& [k, v] : in) {
      SCOPED_TRACE("grad of " + k);
      FW_EXPECT_CLOSE(v.grad(), c.t.at("g." + k), 1e-8, 1e-10);
    }
    for (const auto& item : params) {
      SCOPED_TRACE("grad of " + item.key());
      ASSERT_TRUE(item.value().grad().defined());
      FW_EXPECT_CLOSE(item.value().grad(), c.t.at("g.p." + item.key()), 1e-8, 1e-10);
    }
  }
}

TEST(Transformer, ParameterNamesFollowPyTorch) {
  nn::Transformer t(nn::TransformerOptions(16, 4, 2, 1).dim_feedforward(32));
  auto names = t->named_parameters().keys();
  auto has = [&](const std::string& n) { return std::find(names.begin(), names.end(), n) != names.end(); };
  for (const char* n : {"encoder.layers.0.self_attn.in_proj_weight", "encoder.layers.1.linear2.bias",
                        "encoder.norm.weight", "decoder.layers.0.multihead_attn.out_proj.weight",
                        "decoder.layers.0.norm3.bias", "decoder.norm.bias"})
    EXPECT_TRUE(has(n)) << n;
  // 2 encoder layers x 16 tensors... counted: self_attn 4, linear1/2 4, norm1/2 4 = 12 per encoder
  // layer; decoder layer 4 + 4 + 4 + 6 = 18; two final norms 4.
  EXPECT_EQ(names.size(), 2u * 12 + 18 + 4);
  // Matrices are xavier-uniform: bounded by sqrt(6 / (fan_in + fan_out)).
  Tensor w = t->named_parameters()["encoder.layers.0.linear1.weight"];
  EXPECT_LE(w.abs().max().item<double>(), std::sqrt(6.0 / (16 + 32)) + 1e-7);
}

TEST(Transformer, SquareSubsequentMask) {
  Tensor m = nn::TransformerImpl::generate_square_subsequent_mask(4);
  ASSERT_EQ(m.sizes(), std::vector<int64_t>({4, 4}));
  EXPECT_EQ(m.dtype(), fw::kFloat);
  for (int i = 0; i < 4; i++)
    for (int j = 0; j < 4; j++) {
      double v = m[i][j].item<double>();
      if (j > i) EXPECT_TRUE(std::isinf(v) && v < 0) << i << "," << j;
      else EXPECT_EQ(v, 0.0) << i << "," << j;
    }
  EXPECT_THROW(nn::TransformerImpl::generate_square_subsequent_mask(-1), std::exception);
}

namespace {
// A custom encoder and decoder with the stacks' forward signatures.
struct ScaleEncoderImpl : nn::Cloneable<ScaleEncoderImpl> {
  void reset() override {}
  Tensor forward(const Tensor& src, const Tensor& mask, const Tensor& kpm) {
    seen_mask = mask.defined();
    seen_kpm = kpm.defined();
    return src * 2;
  }
  bool seen_mask = false, seen_kpm = false;
};
FW_MODULE(ScaleEncoder);
struct AddDecoderImpl : nn::Cloneable<AddDecoderImpl> {
  void reset() override {}
  Tensor forward(const Tensor& tgt, const Tensor& memory, const Tensor&, const Tensor&, const Tensor&, const Tensor&) {
    return tgt + memory.mean(0, true);
  }
};
FW_MODULE(AddDecoder);
}  // namespace

TEST(Transformer, CustomEncoderAndDecoderThroughAnyModule) {
  nn::Transformer t(nn::TransformerOptions(4, 2)
                        .custom_encoder(nn::AnyModule(ScaleEncoder()))
                        .custom_decoder(nn::AnyModule(AddDecoder())));
  fw::manual_seed(3);
  Tensor src = fw::randn({5, 2, 4}), tgt = fw::randn({3, 2, 4});
  Tensor kpm = fw::zeros({2, 5}, fw::kBool);
  Tensor out = t(src, tgt, Tensor(), Tensor(), Tensor(), kpm);
  FW_EXPECT_CLOSE(out, tgt + (src * 2).mean(0, true));
  auto& enc = t->encoder.get<ScaleEncoderImpl>();
  EXPECT_FALSE(enc.seen_mask);
  EXPECT_TRUE(enc.seen_kpm);
  EXPECT_TRUE(t->parameters().empty());
}

TEST(Transformer, AnyModuleForwardChecksArguments) {
  nn::AnyModule enc(ScaleEncoder{});
  Tensor x = fw::ones({2, 1, 4});
  EXPECT_TRUE(fw::equal(enc.forward<Tensor>(x, Tensor(), Tensor()), x * 2));
  try {
    enc.forward<Tensor>(x, Tensor());
    ADD_FAILURE() << "no error for a missing argument";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find("takes 3 arguments, got 2"), std::string::npos) << e.what();
  }
  try {
    enc.forward<Tensor>(x, 1.5, Tensor());
    ADD_FAILURE() << "no error for a double where a Tensor is expected";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find("argument 1"), std::string::npos) << e.what();
  }
  EXPECT_THROW(enc.forward<int>(x, Tensor(), Tensor()), std::exception);  // wrong return type
  // One-Tensor modules keep working through the same entry point.
  nn::AnyModule relu(nn::ReLU{});
  EXPECT_TRUE(fw::equal(relu.forward<Tensor>(-x), fw::zeros_like(x)));
}

TEST(Transformer, CloneIsDeepAndEvalDisablesDropout) {
  fw::manual_seed(0);
  nn::TransformerEncoder enc(nn::TransformerEncoderOptions(nn::TransformerEncoderLayerOptions(8, 2).dim_feedforward(16).dropout(0.5), 2));
  auto copy = std::dynamic_pointer_cast<nn::TransformerEncoderImpl>(enc->clone());
  ASSERT_TRUE(copy);
  Tensor src = fw::randn({4, 3, 8});
  enc->eval();
  copy->eval();
  Tensor a = enc(src), b = copy->forward(src);
  EXPECT_TRUE(fw::allclose(a, b));
  EXPECT_TRUE(fw::equal(enc(src), a));  // eval: no dropout, deterministic
  {
    fw::NoGradGuard ng;
    Tensor w = copy->layers->at<nn::TransformerEncoderLayerImpl>(0).linear1->weight;
    w.mul_(3.0);  // (adding a constant would cancel: the layer input is normalised to zero mean)
  }
  EXPECT_TRUE(fw::equal(enc(src), a));  // the original is untouched
  EXPECT_FALSE(fw::allclose(copy->forward(src), a));
  enc->train();
  EXPECT_FALSE(fw::allclose(enc(src), a));  // training: dropout 0.5 changes the output
}

TEST(Transformer, ClearErrors) {
  auto message = [](auto&& f) -> std::string {
    try {
      f();
    } catch (const std::exception& e) {
      return e.what();
    }
    return "no error";
  };
  EXPECT_NE(message([] { nn::TransformerEncoderLayer(6, 4); }).find("divisible"), std::string::npos);
  nn::TransformerEncoderLayer layer(nn::TransformerEncoderLayerOptions(8, 2).dim_feedforward(16));
  EXPECT_NE(message([&] { layer(fw::randn({5, 8})); }).find("TransformerEncoderLayer"), std::string::npos);
  EXPECT_NE(message([&] { layer(fw::randn({5, 2, 6})); }).find("[5, 2, 6]"), std::string::npos);
  nn::Transformer t(nn::TransformerOptions(8, 2, 1, 1).dim_feedforward(16));
  EXPECT_NE(message([&] { t(fw::randn({5, 2, 8}), fw::randn({3, 3, 8})); }).find("equal batch size"),
            std::string::npos);
  nn::TransformerDecoderLayer dl(nn::TransformerDecoderLayerOptions(8, 2).dim_feedforward(16));
  EXPECT_NE(message([&] { dl(fw::randn({3, 2, 8}), fw::randn({4, 3, 8})); }).find("batch size"), std::string::npos);
  EXPECT_NE(message([] { nn::TransformerEncoder(nn::TransformerEncoderLayer(nullptr), 2); }).find("empty"),
            std::string::npos);
}

namespace {
// A module whose forward is noexcept (and one returning a move-only value): both must still be
// storable in a Sequential / AnyModule.
struct NoexceptScaleImpl : nn::Cloneable<NoexceptScaleImpl> {
  void reset() override {}
  Tensor forward(const Tensor& x) noexcept { return x * 3; }
};
FW_MODULE(NoexceptScale);
struct MoveOnlyImpl : nn::Cloneable<MoveOnlyImpl> {
  void reset() override {}
  std::unique_ptr<int> forward(const Tensor& x, int k) { return std::make_unique<int>(int(x.numel()) + k); }
};
FW_MODULE(MoveOnly);
}  // namespace

TEST(Transformer, AnyModuleKeepsNoexceptAndMoveOnlyModulesWorking) {
  nn::Sequential seq(NoexceptScale{}, nn::ReLU{});
  Tensor x = fw::tensor({-1.0, 2.0});
  EXPECT_TRUE(fw::equal(seq->forward(x), fw::tensor({0.0, 6.0})));
  nn::AnyModule a(NoexceptScale{});
  EXPECT_TRUE(fw::equal(a.forward<Tensor>(x), x * 3));
  nn::AnyModule m(MoveOnly{});
  EXPECT_THROW(m.forward<int>(x, 1), std::exception);  // non-copyable result: a clear error, not a compile error
}

TEST(Transformer, EmptyStackReturnsItsInputAndResetRenewsTheNorm) {
  nn::TransformerEncoder empty(nn::TransformerEncoderOptions(nn::TransformerEncoderLayerOptions(4, 2), 0));
  Tensor src = fw::randn({3, 2, 4});
  EXPECT_TRUE(fw::equal(empty(src), src));
  auto o = nn::TransformerEncoderOptions(nn::TransformerEncoderLayerOptions(4, 2).dim_feedforward(8), 1)
               .norm(nn::AnyModule(nn::LayerNorm(nn::LayerNormOptions({4}))));
  nn::TransformerEncoder enc(o);
  {
    fw::NoGradGuard ng;
    Tensor w = enc->norm.get<nn::LayerNormImpl>().weight;
    w.fill_(5.0);
  }
  enc->reset_parameters();
  EXPECT_TRUE(fw::equal(enc->norm.get<nn::LayerNormImpl>().weight, fw::ones({4})));
  auto names = enc->named_parameters().keys();
  EXPECT_EQ(std::count(names.begin(), names.end(), std::string("norm.weight")), 1);
}

namespace {
// forward with trailing defaults, declared for AnyModule as in libtorch.
struct ShiftImpl : nn::Cloneable<ShiftImpl> {
  void reset() override {}
  Tensor forward(const Tensor& x, int64_t k = 2, Tensor mask = {}) {
    Tensor y = x + double(k);
    return mask.defined() ? y.masked_fill(mask, 0) : y;
  }

 protected:
  FORWARD_HAS_DEFAULT_ARGS({1, nn::AnyValue(int64_t(2))}, {2, nn::AnyValue(Tensor())})
};
FW_MODULE(Shift);
// Only the last parameter has a declared default; the second must be passed.
struct PartialImpl : nn::Cloneable<PartialImpl> {
  void reset() override {}
  Tensor forward(const Tensor& x, int64_t k, Tensor mask = {}) { return x + double(k) + (mask.defined() ? 1.0 : 0.0); }
  FORWARD_HAS_DEFAULT_ARGS({2, nn::AnyValue(Tensor())})
};
FW_MODULE(Partial);
// A default of the wrong type (int for an int64_t parameter).
struct WrongDefaultImpl : nn::Cloneable<WrongDefaultImpl> {
  void reset() override {}
  Tensor forward(const Tensor& x, const Tensor& y, int64_t k = 1) { return x + y + double(k); }
  FORWARD_HAS_DEFAULT_ARGS({2, nn::AnyValue(1)})
};
FW_MODULE(WrongDefault);
}  // namespace

TEST(Transformer, AnyModuleFillsDeclaredDefaultArguments) {
  nn::AnyModule m(Shift{});
  Tensor x = fw::zeros({3});
  EXPECT_TRUE(fw::equal(m.forward<Tensor>(x, int64_t(5)), x + 5));  // mask from its declared default
  EXPECT_TRUE(fw::equal(m.forward<Tensor>(x), x + 2));              // both defaults
  EXPECT_TRUE(fw::equal(m.forward(x), x + 2));
  Tensor mask = fw::tensor({true, false, true});
  EXPECT_TRUE(fw::equal(m.forward<Tensor>(x, int64_t(1), mask), fw::tensor({0.f, 1.f, 0.f})));
  nn::Sequential seq(Shift{}, nn::ReLU{});
  EXPECT_TRUE(fw::equal(seq->forward(x - 3), fw::zeros({3})));  // relu(-3 + 2)
  EXPECT_TRUE(fw::equal(seq->clone()->as<nn::Sequential>()->forward(x), x + 2));

  nn::AnyModule p(Partial{});
  EXPECT_TRUE(fw::equal(p.forward<Tensor>(x, int64_t(3)), x + 3));
  try {
    p.forward<Tensor>(x);
    ADD_FAILURE() << "no error for a parameter without a default";
  } catch (const fw::Error& e) {
    EXPECT_NE(std::string(e.what()).find("forward() requires at least 2 argument(s), but received 1"), std::string::npos)
        << e.what();
  }
  nn::AnyModule w(WrongDefault{});
  try {
    w.forward<Tensor>(x, x);
    ADD_FAILURE() << "no error for a default of the wrong type";
  } catch (const fw::Error& e) {
    EXPECT_NE(std::string(e.what()).find("argument 2"), std::string::npos) << e.what();
  }
  EXPECT_TRUE(fw::equal(w.forward<Tensor>(x, x, int64_t(4)), x + 4));

  nn::AnyValue v(int64_t(7));
  EXPECT_EQ(v.get<int64_t>(), 7);
  EXPECT_EQ(v.try_get<int>(), nullptr);
  EXPECT_THROW(v.get<double>(), fw::Error);
}
