// libtorch front-end pieces added with the "more of libtorch" work: nn::Functional, F::embedding
// (negative padding_idx, scale_grad_by_freq), the Hardswish/Hardsigmoid modules, init::dirac_ /
// sparse_ / trunc_normal_, ReduceLROnPlateauScheduler, serialize::OutputArchive/InputArchive
// with Module::save/load, addbmm and a few spellings.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <string>

#include <fw/fw.h>

#include "tests/expect_error.h"
#include "tests/fixture.h"

using fw::Tensor;
namespace F = fw::nn::functional;

TEST(ApiMore, FunctionalModuleInSequential) {
  fw::nn::Sequential seq(fw::nn::Linear(3, 4), fw::nn::Functional(fw::relu),
                         fw::nn::Functional([](Tensor x) { return x * 2; }),
                         fw::nn::Functional(fw::softmax, 1, std::nullopt));
  Tensor x = fw::randn({5, 3});
  Tensor y = seq->forward(x);
  auto* lin = seq[0]->as<fw::nn::Linear>();
  ASSERT_NE(lin, nullptr);
  Tensor want = fw::softmax(fw::relu(lin->forward(x)) * 2, 1);
  FW_EXPECT_CLOSE(y, want, 1e-6, 1e-6);
  std::ostringstream os;
  os << *seq;
  EXPECT_NE(os.str().find("fw::nn::Functional()"), std::string::npos);
  fw::nn::Hardswish hs;
  fw::nn::Hardsigmoid hg;
  FW_EXPECT_CLOSE(hs(x), fw::hardswish(x), 0, 0);
  FW_EXPECT_CLOSE(hg(x), fw::hardsigmoid(x), 0, 0);
}

TEST(ApiMore, FunctionalEmbedding) {
  Tensor w = fw::randn({5, 3}, fw::kDouble).requires_grad_(true);
  Tensor idx = fw::tensor({{0, 4, 4}, {1, 0, 4}});
  Tensor y = F::embedding(idx, w);
  FW_EXPECT_CLOSE(y, w.index_select(0, idx.reshape({-1})).reshape({2, 3, 3}), 0, 0);
  // padding_idx = -1 is row 4: no gradient there; scale_grad_by_freq divides by the counts
  Tensor g = fw::randn({2, 3, 3}, fw::kDouble);
  Tensor y2 = F::embedding(idx, w, F::EmbeddingFuncOptions().padding_idx(-1).scale_grad_by_freq(true));
  FW_EXPECT_CLOSE(y2, y, 0, 0);
  Tensor gw = fw::autograd::grad({(y2 * g).sum()}, {w})[0];
  Tensor want = fw::zeros({5, 3}, fw::kDouble);
  want[0] = (g[0][0] + g[1][1]) / 2;
  want[1] = g[1][0];
  FW_EXPECT_CLOSE(gw, want, 1e-12, 1e-12);
  // max_norm renormalises the looked-up rows of the table in place
  Tensor t = fw::full({3, 2}, 3.0, fw::kDouble);
  F::embedding(fw::tensor({2}), t, F::EmbeddingFuncOptions().max_norm(1.0));
  FW_EXPECT_CLOSE(t[2].norm(), fw::tensor(1.0, fw::kDouble), 1e-6, 1e-6);
  EXPECT_EQ(t[0][0].item<double>(), 3.0);
  EXPECT_ERROR(F::embedding(idx.to(fw::kFloat), w), "[embedding] Expected tensor for argument #1 'indices'");
  EXPECT_ERROR(F::embedding(idx, w, F::EmbeddingFuncOptions().padding_idx(5)), "[embedding] Padding_idx must be within");
  // the module goes through the same function
  fw::nn::Embedding emb(fw::nn::EmbeddingOptions(5, 3).padding_idx(2));
  Tensor ge = fw::autograd::grad({emb(fw::tensor({2, 1})).sum()}, {emb->weight})[0];
  EXPECT_EQ(ge[2].abs().sum().item<float>(), 0.f);
  EXPECT_EQ(ge[1].sum().item<float>(), 3.f);
}

TEST(ApiMore, InitFunctions) {
  Tensor w = fw::empty({4, 4, 3, 3});
  fw::nn::init::dirac_(w);
  Tensor x = fw::randn({2, 4, 5, 5});
  FW_EXPECT_CLOSE(F::conv2d(x, w, F::Conv2dFuncOptions().padding(1)), x, 1e-6, 1e-6);
  Tensor wg = fw::empty({6, 2, 3});
  fw::nn::init::dirac_(wg, 2);  // 3 outputs per group, 2 inputs each
  EXPECT_EQ(wg.sum().item<float>(), 4.f);
  EXPECT_EQ(wg[4][1][1].item<float>(), 1.f);
  EXPECT_ERROR(fw::nn::init::dirac_(fw::empty({2, 2})), "[dirac_] Only tensors with 3, 4, or 5 dimensions");

  Tensor s = fw::empty({10, 6});
  fw::nn::init::sparse_(s, 0.25);
  Tensor zeros_per_col = (s == 0).sum({0});
  EXPECT_TRUE(fw::equal(zeros_per_col, fw::full({6}, 3, fw::kLong)));
  EXPECT_ERROR(fw::nn::init::sparse_(fw::empty({2, 2, 2}), 0.1), "[sparse_] Only tensors with 2 dimensions");

  fw::manual_seed(3);
  Tensor tn = fw::empty({20000});
  fw::nn::init::trunc_normal_(tn, 1.0, 2.0, -1.0, 2.0);
  EXPECT_GE(tn.min().item<float>(), -1.f);
  EXPECT_LE(tn.max().item<float>(), 2.f);
  // mean of N(1, 4) truncated to [-1, 2]: mu + sigma (phi(a') - phi(b')) / (Phi(b') - Phi(a')), a' = -1, b' = 0.5
  auto phi = [](double z) { return std::exp(-z * z / 2) / std::sqrt(2 * M_PI); };
  auto Phi = [](double z) { return 0.5 * std::erfc(-z / std::sqrt(2.0)); };
  const double mean = 1 + 2 * (phi(-1) - phi(0.5)) / (Phi(0.5) - Phi(-1));
  EXPECT_NEAR(tn.mean().item<float>(), mean, 0.02);
}

TEST(ApiMore, ReduceLROnPlateauScheduler) {
  Tensor p = fw::zeros({1}, fw::requires_grad());
  Tensor q = fw::zeros({1}, fw::requires_grad());
  fw::optim::SGD opt({fw::optim::OptimizerParamGroup({p}), fw::optim::OptimizerParamGroup({q})},
                     fw::optim::SGDOptions(0.1));
  using S = fw::optim::ReduceLROnPlateauScheduler;
  S sched(opt, S::min, 0.5f, 1, 1e-4, S::rel, 0, {0.03f, 0.06f});
  sched.step(1.0f);  // best
  sched.step(1.0f);  // bad 1 (patience 1: no change yet)
  EXPECT_DOUBLE_EQ(opt.param_groups()[0].options().get_lr(), 0.1);
  sched.step(1.0f);  // bad 2: halve
  EXPECT_NEAR(opt.param_groups()[0].options().get_lr(), 0.05, 1e-9);
  EXPECT_NEAR(opt.param_groups()[1].options().get_lr(), 0.06, 1e-7);  // its floor (a float)
  sched.step(1.0f);
  sched.step(1.0f);
  EXPECT_NEAR(opt.param_groups()[0].options().get_lr(), 0.03, 1e-7);  // floored
  EXPECT_ERROR(S(opt, S::max, 0.5f, 1, 1e-4, S::abs, 0, {0.1f, 0.2f, 0.3f}),
               "[ReduceLROnPlateau] expected 2 min_lrs (one per param group), got 3");
}

namespace {
struct Block : fw::nn::Module {
  Block() {
    lin = register_module("lin", fw::nn::Linear(3, 2));
    bn = register_module("bn", fw::nn::BatchNorm1d(2));
  }
  fw::nn::Linear lin{nullptr};
  fw::nn::BatchNorm1d bn{nullptr};
};
}  // namespace

TEST(ApiMore, Archives) {
  const std::string path = ::testing::TempDir() + "fw_archive_test.pt";
  auto a = std::make_shared<Block>();
  auto b = std::make_shared<Block>();
  a->bn->running_mean.fill_(0.25);
  {
    fw::serialize::OutputArchive ar, nested;
    a->save(ar);
    nested.write("w", fw::arange(3.0));
    nested.write("lr", fw::IValue(0.125));
    nested.write("steps", fw::IValue(int64_t(7)));
    nested.write("name", fw::IValue(std::string("adam")));
    ar.write("extra", nested);
    ar.save_to(path);
  }
  fw::serialize::InputArchive in;
  in.load_from(path);
  b->load(in);
  for (const auto& kv : a->named_parameters()) FW_EXPECT_CLOSE(b->named_parameters()[kv.key()], kv.value(), 0, 0);
  EXPECT_EQ(b->bn->running_mean[1].item<float>(), 0.25f);
  fw::serialize::InputArchive sub;
  in.read("extra", sub);
  Tensor w;
  sub.read("w", w);
  EXPECT_TRUE(fw::equal(w, fw::arange(3.0)));
  fw::IValue v;
  sub.read("lr", v);
  EXPECT_EQ(v.toDouble(), 0.125);
  sub.read("steps", v);
  EXPECT_EQ(v.toInt(), 7);
  sub.read("name", v);
  EXPECT_EQ(v.toStringRef(), "adam");
  auto keys = in.keys();
  EXPECT_NE(std::find(keys.begin(), keys.end(), "extra"), keys.end());
  EXPECT_NE(std::find(keys.begin(), keys.end(), "lin"), keys.end());
  EXPECT_FALSE(sub.try_read("missing", w));
  EXPECT_ERROR(sub.read("missing", w), "has no tensor 'missing'");
  // the file is an ordinary safetensors file
  auto m = fw::load(path);
  EXPECT_TRUE(m.count("lin.weight") && m.count("extra.w"));
  // a module of another shape is rejected and left unchanged
  fw::nn::Linear other(4, 2);
  Tensor before = other->weight.clone();
  fw::serialize::InputArchive lin_ar;
  in.read("lin", lin_ar);
  EXPECT_ERROR(other->load(lin_ar), "[Module::load] size mismatch for 'weight'");
  EXPECT_TRUE(fw::equal(other->weight, before));
  std::remove(path.c_str());
}

TEST(ApiMore, AddbmmAndSpellings) {
  Tensor t = fw::randn({3, 4}, fw::kDouble);
  Tensor b1 = fw::randn({5, 3, 2}, fw::kDouble), b2 = fw::randn({5, 2, 4}, fw::kDouble);
  Tensor want = t * 0.5 + fw::bmm(b1, b2).sum({0}) * 2;
  FW_EXPECT_CLOSE(fw::addbmm(t, b1, b2, 0.5, 2), want, 1e-12, 1e-12);
  Tensor nan = fw::full({3, 4}, std::nan(""), fw::kDouble);
  FW_EXPECT_CLOSE(fw::addbmm(nan, b1, b2, 0, 1), fw::bmm(b1, b2).sum({0}), 1e-12, 1e-12);
  EXPECT_ERROR(fw::addbmm(t, b1[0], b2), "[addbmm] batch1 must be a 3D tensor");
  FW_EXPECT_CLOSE(fw::linalg::matmul(b1, b2), fw::matmul(b1, b2), 0, 0);
  fw::cuda::manual_seed(1);
  fw::cuda::manual_seed_all(1);
  EXPECT_FALSE(fw::cuda::is_available());
  EXPECT_TRUE(fw::fft::fft2(fw::randn({2, 4, 4})).is_complex());
}
