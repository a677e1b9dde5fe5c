// libtorch API compatibility: loss modules (torch/nn/modules/loss.h), top-level losses with ATen
// signatures (fw::mse_loss(a, b, fw::Reduction::Sum), ...), cosine_similarity/pairwise_distance,
// the data transforms (Normalize, Lambda, TensorLambda, BatchLambda) and libtorch's batch types
// (std::vector<Example<>> unless the dataset is mapped with Stack<>), make_data_loader(ds, 4) and
// loader->options().batch_size.
#include <gtest/gtest.h>

#include <cmath>
#include <set>
#include <sstream>
#include <type_traits>

#include "fw/fw.h"
#include "tests/expect_error.h"

namespace F = fw::nn::functional;
namespace D = fw::data;
using fw::Tensor;

namespace {

Tensor ftensor(std::vector<float> v) { return fw::tensor(v); }
Tensor ltensor(std::vector<int64_t> v) { return fw::tensor(v); }
double item(const Tensor& t) { return t.item<double>(); }

std::string printed(const fw::nn::Module& m) {
  std::ostringstream s;
  m.pretty_print(s);
  return s.str();
}

void expect_close(const Tensor& a, const Tensor& b, double tol = 1e-6) {
  ASSERT_EQ(a.sizes().vec(), b.sizes().vec());
  EXPECT_TRUE(fw::allclose(a.to(fw::kDouble), b.to(fw::kDouble), tol, tol)) << a << "\nvs\n" << b;
}

}  // namespace

// ---- loss modules

TEST(ApiCompatLosses, UsageFromLibtorchPrograms) {
  Tensor logits = ftensor({0, 0, 1, 2, 3, 0}).reshape({2, 3});
  Tensor target = ltensor({0, 2});
  fw::nn::CrossEntropyLoss crit;
  auto l = crit(logits, target);
  // Rows (0, 0, 1) with target 0 and (2, 3, 0) with target 2: -logit[t] + log(sum(exp(logits))).
  double l0 = std::log(2.0 + std::exp(1.0));
  double l1 = std::log(std::exp(2.0) + std::exp(3.0) + 1.0);
  EXPECT_NEAR(item(l), (l0 + l1) / 2, 1e-6);
  EXPECT_EQ(crit->options.label_smoothing(), 0.0);
  EXPECT_EQ(crit->options.ignore_index(), -100);

  Tensor a = ftensor({1, 2, 3}), b = ftensor({1, 1, 1});
  fw::nn::MSELoss mse(fw::nn::MSELossOptions().reduction(fw::kSum));
  EXPECT_NEAR(item(mse->forward(a, b)), 5.0, 1e-6);
  fw::nn::MSELoss mse_mean;
  EXPECT_NEAR(item(mse_mean(a, b)), 5.0 / 3, 1e-6);
  fw::nn::MSELoss mse_none(fw::kNone);  // MSELossOptions(torch::kNone), as libtorch
  expect_close(mse_none(a, b), ftensor({0, 1, 4}));
  fw::nn::L1Loss l1loss(fw::nn::L1LossOptions(fw::kSum));
  EXPECT_NEAR(item(l1loss(a, b)), 3.0, 1e-6);

  // The functional option names are the same types.
  static_assert(std::is_same_v<fw::nn::CrossEntropyLossOptions, F::CrossEntropyFuncOptions>);
  static_assert(std::is_same_v<fw::nn::BCEWithLogitsLossOptions, F::BinaryCrossEntropyWithLogitsFuncOptions>);
  static_assert(std::is_same_v<fw::nn::KLDivLossOptions, F::KLDivFuncOptions>);
  static_assert(std::is_same_v<decltype(crit->options), fw::nn::CrossEntropyLossOptions>);
}

TEST(ApiCompatLosses, HandComputedValues) {
  Tensor a = ftensor({1, 2, 3}), b = ftensor({1, 1, 1});
  // SmoothL1 (beta 1) and Huber (delta 1) of diffs 0, 1, 2: 0, 0.5, 1.5.
  EXPECT_NEAR(item(fw::nn::SmoothL1Loss()(a, b)), 2.0 / 3, 1e-6);
  EXPECT_NEAR(item(fw::nn::SmoothL1Loss(fw::nn::SmoothL1LossOptions(fw::kSum).beta(4.0))(a, b)),
              (0 + 0.5 * 1 / 4.0 + 0.5 * 4 / 4.0), 1e-6);
  EXPECT_NEAR(item(fw::nn::HuberLoss(fw::nn::HuberLossOptions().reduction(fw::kSum))(a, b)), 2.0, 1e-6);
  // delta 2: 0, 0.5, 2 * (2 - 1) = 2.
  EXPECT_NEAR(item(fw::nn::HuberLoss(fw::nn::HuberLossOptions(fw::kSum).delta(2.0))(a, b)), 2.5, 1e-6);

  // NLL of log-probabilities, with and without class weights.
  Tensor logp = ftensor({-1, -2, -3, -4}).reshape({2, 2});
  Tensor t = ltensor({1, 0});
  EXPECT_NEAR(item(fw::nn::NLLLoss()(logp, t)), 2.5, 1e-6);
  fw::nn::NLLLoss weighted(fw::nn::NLLLossOptions().weight(ftensor({1, 3})));
  EXPECT_NEAR(item(weighted(logp, t)), (3 * 2.0 + 1 * 3.0) / 4, 1e-6);
  EXPECT_NEAR(item(fw::nn::NLLLoss(fw::nn::NLLLossOptions().ignore_index(0))(logp, t)), 2.0, 1e-6);

  // BCE: -log(0.5) per element; with logits 0 the same, pos_weight scales the positive term.
  EXPECT_NEAR(item(fw::nn::BCELoss()(ftensor({0.5f, 0.5f}), ftensor({1, 0}))), std::log(2.0), 1e-6);
  fw::nn::BCELoss bce_w(fw::nn::BCELossOptions().weight(ftensor({2, 0})).reduction(fw::kSum));
  EXPECT_NEAR(item(bce_w(ftensor({0.5f, 0.25f}), ftensor({1, 0}))), 2 * std::log(2.0), 1e-6);
  EXPECT_NEAR(item(fw::nn::BCEWithLogitsLoss()(ftensor({0}), ftensor({1}))), std::log(2.0), 1e-6);
  fw::nn::BCEWithLogitsLoss bce_pos(fw::nn::BCEWithLogitsLossOptions().pos_weight(ftensor({3})));
  EXPECT_NEAR(item(bce_pos(ftensor({0}), ftensor({1}))), 3 * std::log(2.0), 1e-6);

  // KL(p || q) with input log q = log(0.5, 0.5) and target p = (1, 0): log 2 in total.
  Tensor logq = ftensor({0.5f, 0.5f}).log().reshape({2, 1});
  Tensor p = ftensor({1, 0}).reshape({2, 1});
  EXPECT_NEAR(item(fw::nn::KLDivLoss(fw::nn::KLDivLossOptions(fw::kSum))(logq, p)), std::log(2.0), 1e-6);
  EXPECT_NEAR(item(fw::nn::KLDivLoss()(logq, p)), std::log(2.0) / 2, 1e-6);
  EXPECT_NEAR(item(fw::nn::KLDivLoss(fw::kBatchMean)(logq, p)), std::log(2.0) / 2, 1e-6);

  // Cross entropy with label smoothing 0.1 over 2 classes of equal logits is still log 2.
  fw::nn::CrossEntropyLoss smooth(fw::nn::CrossEntropyLossOptions().label_smoothing(0.1));
  EXPECT_EQ(smooth->options.label_smoothing(), 0.1);
  EXPECT_NEAR(item(smooth(ftensor({0, 0}).reshape({1, 2}), ltensor({0}))), std::log(2.0), 1e-6);
}

TEST(ApiCompatLosses, ModulesMatchFunctional) {
  fw::manual_seed(3);
  Tensor x = fw::randn({4, 5}), y = fw::randn({4, 5});
  Tensor cls = ltensor({0, 4, 2, 2});
  Tensor w = fw::rand({5}) + 0.5;
  Tensor prob = fw::rand({4, 5}) * 0.9 + 0.05, bin = (fw::rand({4, 5}) > 0.5).to(fw::kFloat);
  expect_close(fw::nn::CrossEntropyLoss(fw::nn::CrossEntropyLossOptions().weight(w).label_smoothing(0.2))(x, cls),
               F::cross_entropy(x, cls, F::CrossEntropyFuncOptions().weight(w).label_smoothing(0.2)));
  expect_close(fw::nn::NLLLoss(fw::nn::NLLLossOptions().weight(w).reduction(fw::kNone))(x.log_softmax(1), cls),
               F::nll_loss(x.log_softmax(1), cls, F::NLLLossFuncOptions().weight(w).reduction(fw::kNone)));
  expect_close(fw::nn::MSELoss(fw::kNone)(x, y), F::mse_loss(x, y, F::MSELossFuncOptions(fw::kNone)));
  expect_close(fw::nn::L1Loss()(x, y), F::l1_loss(x, y));
  expect_close(fw::nn::SmoothL1Loss(fw::nn::SmoothL1LossOptions().beta(0.3))(x, y),
               F::smooth_l1_loss(x, y, F::SmoothL1LossFuncOptions().beta(0.3)));
  expect_close(fw::nn::HuberLoss(fw::nn::HuberLossOptions().delta(0.7))(x, y),
               F::huber_loss(x, y, F::HuberLossFuncOptions().delta(0.7)));
  expect_close(fw::nn::BCELoss(fw::nn::BCELossOptions().weight(w))(prob, bin),
               F::binary_cross_entropy(prob, bin, F::BinaryCrossEntropyFuncOptions().weight(w)));
  expect_close(fw::nn::BCEWithLogitsLoss(fw::nn::BCEWithLogitsLossOptions().pos_weight(w).reduction(fw::kSum))(x, bin),
               F::binary_cross_entropy_with_logits(
                   x, bin, F::BinaryCrossEntropyWithLogitsFuncOptions().pos_weight(w).reduction(fw::kSum)));
  expect_close(fw::nn::KLDivLoss(fw::nn::KLDivLossOptions(fw::kBatchMean).log_target(true))(x.log_softmax(1),
                                                                                             y.log_softmax(1)),
               F::kl_div(x.log_softmax(1), y.log_softmax(1), F::KLDivFuncOptions(fw::kBatchMean).log_target(true)));

  // CTC: (T, N, C) log-probabilities, padded targets.
  Tensor lp = fw::randn({6, 2, 4}).log_softmax(2);
  Tensor targets = ltensor({1, 2, 3, 1, 0, 0}).reshape({2, 3});
  Tensor il = ltensor({6, 5}), tl = ltensor({3, 1});
  fw::nn::CTCLoss ctc;
  expect_close(ctc(lp, targets, il, tl), F::ctc_loss(lp, targets, il, tl));
  fw::nn::CTCLoss ctc_sum(fw::nn::CTCLossOptions().reduction(fw::kSum).zero_infinity(true));
  expect_close(ctc_sum(lp, targets, il, tl),
               F::ctc_loss(lp, targets, il, tl, F::CTCLossFuncOptions().reduction(fw::kSum).zero_infinity(true)));
}

TEST(ApiCompatLosses, PrettyPrintBuffersCloneAndGradients) {
  EXPECT_EQ(printed(*fw::nn::CrossEntropyLoss()), "fw::nn::CrossEntropyLoss()");
  EXPECT_EQ(printed(*fw::nn::MSELoss()), "fw::nn::MSELoss()");
  EXPECT_EQ(printed(*fw::nn::L1Loss()), "fw::nn::L1Loss()");
  EXPECT_EQ(printed(*fw::nn::NLLLoss()), "fw::nn::NLLLoss()");
  EXPECT_EQ(printed(*fw::nn::BCELoss()), "fw::nn::BCELoss()");
  EXPECT_EQ(printed(*fw::nn::BCEWithLogitsLoss()), "fw::nn::BCEWithLogitsLoss()");
  EXPECT_EQ(printed(*fw::nn::KLDivLoss()), "fw::nn::KLDivLoss()");
  EXPECT_EQ(printed(*fw::nn::CTCLoss()), "fw::nn::CTCLoss()");
  EXPECT_EQ(printed(*fw::nn::SmoothL1Loss()), "fw::nn::SmoothL1Loss");  // libtorch prints these two
  EXPECT_EQ(printed(*fw::nn::HuberLoss()), "fw::nn::HuberLoss");        // without parentheses
  std::ostringstream tree;
  tree << *fw::nn::MSELoss();
  EXPECT_EQ(tree.str(), "fw::nn::MSELoss()");

  // Class weights are buffers (undefined ones are not listed), converted by to() and cloned.
  EXPECT_TRUE(fw::nn::CrossEntropyLoss()->buffers().empty());
  fw::nn::CrossEntropyLoss crit(fw::nn::CrossEntropyLossOptions().weight(ftensor({1, 2})));
  auto named = crit->named_buffers();
  ASSERT_EQ(named.size(), 1u);
  EXPECT_EQ(named.begin()->key(), "weight");
  EXPECT_TRUE(crit->parameters().empty());
  crit->to(fw::kDouble);
  EXPECT_EQ(crit->weight.dtype(), fw::kDouble);
  auto copy = std::dynamic_pointer_cast<fw::nn::CrossEntropyLossImpl>(crit->clone());
  ASSERT_TRUE(copy != nullptr);
  expect_close(copy->weight, ftensor({1, 2}));
  fw::nn::BCEWithLogitsLoss bl(fw::nn::BCEWithLogitsLossOptions().weight(ftensor({1})).pos_weight(ftensor({2})));
  EXPECT_EQ(bl->named_buffers().size(), 2u);

  // Gradients flow through the modules: d/dlogits mean CE = (softmax - onehot) / N.
  Tensor logits = ftensor({0, 0}).reshape({1, 2}).requires_grad_();
  fw::nn::CrossEntropyLoss()(logits, ltensor({0})).backward();
  expect_close(logits.grad(), ftensor({-0.5f, 0.5f}).reshape({1, 2}));
  Tensor a = ftensor({1, 2, 3}).requires_grad_();
  fw::nn::MSELoss(fw::kSum)(a, ftensor({1, 1, 1})).backward();
  expect_close(a.grad(), ftensor({0, 2, 4}));
}

// ---- top-level losses (ATen signatures)

TEST(ApiCompatLosses, TopLevelMatchFunctional) {
  static_assert(fw::Reduction::None == 0 && fw::Reduction::Mean == 1 && fw::Reduction::Sum == 2);
  Tensor a = ftensor({1, 2, 3}), b = ftensor({1, 1, 1});
  EXPECT_NEAR(item(fw::mse_loss(a, b)), 5.0 / 3, 1e-6);
  EXPECT_NEAR(item(fw::mse_loss(a, b, fw::Reduction::Sum)), 5.0, 1e-6);
  expect_close(fw::mse_loss(a, b, fw::Reduction::None), ftensor({0, 1, 4}));
  EXPECT_NEAR(item(fw::l1_loss(a, b, fw::Reduction::Sum)), 3.0, 1e-6);
  EXPECT_NEAR(item(fw::smooth_l1_loss(a, b)), 2.0 / 3, 1e-6);
  expect_close(fw::smooth_l1_loss(a, b, fw::Reduction::Mean, 0.5),
               F::smooth_l1_loss(a, b, F::SmoothL1LossFuncOptions().beta(0.5)));
  EXPECT_NEAR(item(fw::huber_loss(a, b, fw::Reduction::Sum, 2.0)), 2.5, 1e-6);
  EXPECT_THROW(fw::mse_loss(a, b, 7), fw::Error);

  fw::manual_seed(5);
  Tensor x = fw::randn({3, 4}), y = fw::randn({3, 4});
  Tensor cls = ltensor({3, 0, 1});
  Tensor w = fw::rand({4}) + 0.5;
  expect_close(fw::nll_loss(x.log_softmax(1), cls), F::nll_loss(x.log_softmax(1), cls));
  expect_close(fw::nll_loss(x.log_softmax(1), cls, w, fw::Reduction::Sum, 0),
               F::nll_loss(x.log_softmax(1), cls, F::NLLLossFuncOptions().weight(w).reduction(fw::kSum).ignore_index(0)));
  expect_close(fw::cross_entropy_loss(x, cls), F::cross_entropy(x, cls));
  expect_close(fw::cross_entropy_loss(x, cls, w, fw::Reduction::Mean, -100, 0.1),
               F::cross_entropy(x, cls, F::CrossEntropyFuncOptions().weight(w).label_smoothing(0.1)));
  expect_close(fw::cross_entropy_loss(x, cls, std::nullopt, fw::Reduction::None),
               F::cross_entropy(x, cls, F::CrossEntropyFuncOptions().reduction(fw::kNone)));
  Tensor prob = x.sigmoid(), bin = (y > 0).to(fw::kFloat);
  expect_close(fw::binary_cross_entropy(prob, bin), F::binary_cross_entropy(prob, bin));
  expect_close(fw::binary_cross_entropy(prob, bin, w, fw::Reduction::Sum),
               F::binary_cross_entropy(prob, bin, F::BinaryCrossEntropyFuncOptions().weight(w).reduction(fw::kSum)));
  expect_close(fw::binary_cross_entropy_with_logits(x, bin, {}, w),
               F::binary_cross_entropy_with_logits(x, bin, F::BinaryCrossEntropyWithLogitsFuncOptions().pos_weight(w)));
  expect_close(fw::binary_cross_entropy_with_logits(x, bin, w, std::nullopt, fw::Reduction::None),
               F::binary_cross_entropy_with_logits(
                   x, bin, F::BinaryCrossEntropyWithLogitsFuncOptions().weight(w).reduction(fw::kNone)));
  // at::kl_div's Mean averages over all elements (not 'batchmean').
  expect_close(fw::kl_div(x.log_softmax(1), y.softmax(1)), F::kl_div(x.log_softmax(1), y.softmax(1)));
  expect_close(fw::kl_div(x.log_softmax(1), y.log_softmax(1), fw::Reduction::Sum, true),
               F::kl_div(x.log_softmax(1), y.log_softmax(1), F::KLDivFuncOptions(fw::kSum).log_target(true)));
  Tensor lp = fw::randn({5, 2, 3}).log_softmax(2);
  Tensor targets = ltensor({1, 2, 2, 0}).reshape({2, 2});
  expect_close(fw::ctc_loss(lp, targets, ltensor({5, 4}), ltensor({2, 1})),
               F::ctc_loss(lp, targets, ltensor({5, 4}), ltensor({2, 1})));
  expect_close(fw::ctc_loss(lp, targets, {5, 4}, {2, 1}, 0, fw::Reduction::Sum),
               F::ctc_loss(lp, targets, ltensor({5, 4}), ltensor({2, 1}), F::CTCLossFuncOptions().reduction(fw::kSum)));
}

TEST(ApiCompatLosses, CosineSimilarityAndPairwiseDistance) {
  Tensor x1 = ftensor({1, 0, 1, 1, 3, 4}).reshape({3, 2});
  Tensor x2 = ftensor({0, 1, 1, 1, 4, 3}).reshape({3, 2});
  expect_close(fw::cosine_similarity(x1, x2), ftensor({0, 1, 0.96f}));
  expect_close(F::cosine_similarity(x1, x2, F::CosineSimilarityFuncOptions().dim(1)), ftensor({0, 1, 0.96f}));
  expect_close(fw::cosine_similarity(x1.t(), x2.t(), 0), ftensor({0, 1, 0.96f}));
  expect_close(fw::cosine_similarity(x1, x2, -1), ftensor({0, 1, 0.96f}));
  // Broadcasting and a zero vector (the eps clamp keeps it finite: 0).
  expect_close(fw::cosine_similarity(ftensor({0, 0}).reshape({1, 2}), x2), ftensor({0, 0, 0}));
  expect_close(fw::cosine_similarity(x1, ftensor({1, 0}).reshape({1, 2})), ftensor({1, 1 / std::sqrt(2.f), 0.6f}));
  // d cos / d x1 at x1 = (3, 4), x2 = (4, 3): x2 / 25 - 0.96 x1 / 25.
  Tensor a = ftensor({3, 4}).reshape({1, 2}).requires_grad_();
  fw::cosine_similarity(a, ftensor({4, 3}).reshape({1, 2})).sum().backward();
  expect_close(a.grad(), ftensor({0.0448f, -0.0336f}).reshape({1, 2}), 1e-5);

  Tensor p = ftensor({0, 0, 1, 1}).reshape({2, 2}), q = ftensor({3, 4, 1, 1}).reshape({2, 2});
  double e = 1e-6;
  double d0 = std::sqrt((3 - e) * (3 - e) + (4 - e) * (4 - e));
  expect_close(fw::pairwise_distance(p, q), fw::tensor(std::vector<double>{d0, std::sqrt(2.0) * e}, fw::kDouble), 1e-6);
  expect_close(F::pairwise_distance(p, q), fw::pairwise_distance(p, q));
  expect_close(fw::pairwise_distance(p, q, 1), fw::tensor(std::vector<double>{7 - 2 * e, 2 * e}, fw::kDouble), 1e-6);
  auto kd = fw::pairwise_distance(p, q, 2, 1e-6, true);
  EXPECT_EQ(kd.sizes().vec(), (std::vector<int64_t>{2, 1}));
  expect_close(F::pairwise_distance(p, q, F::PairwiseDistanceFuncOptions().p(1).keepdim(true)),
               fw::tensor(std::vector<double>{7 - 2 * e, 2 * e}, fw::kDouble).reshape({2, 1}), 1e-6);
  Tensor r = ftensor({0, 0}).reshape({1, 2}).requires_grad_();
  fw::pairwise_distance(r, ftensor({3, 4}).reshape({1, 2})).sum().backward();
  expect_close(r.grad(), ftensor({-0.6f, -0.8f}).reshape({1, 2}), 1e-5);
}

// ---- data: transforms

namespace {

// data[i] = {i, 10 i} (float), target[i] = i (long).
D::datasets::LabeledTensorDataset make_dataset(int64_t n) {
  Tensor idx = fw::arange(n);
  return D::datasets::LabeledTensorDataset(fw::stack({idx.to(fw::kFloat), idx.to(fw::kFloat) * 10}, 1), idx);
}

}  // namespace

TEST(ApiCompatData, Normalize) {
  // Per channel of (C, H, W) data: (x - mean[c]) / std[c].
  D::transforms::Normalize<> norm({0.5, 1.0, 2.0}, {0.5, 2.0, 4.0});
  EXPECT_EQ(norm.mean.sizes().vec(), (std::vector<int64_t>{3, 1, 1}));
  EXPECT_EQ(norm.mean.dtype(), fw::kFloat);
  Tensor out = norm(fw::ones({3, 2, 2}));
  expect_close(out.select(0, 0), fw::full({2, 2}, 1.0));
  expect_close(out.select(0, 1), fw::full({2, 2}, 0.0));
  expect_close(out.select(0, 2), fw::full({2, 2}, -0.25));
  // One value for all channels.
  D::transforms::Normalize<> scalar(0.5, 0.25);
  expect_close(scalar(ftensor({0.5f, 1.5f, 0.f, 1.f}).reshape({1, 2, 2})),
               ftensor({0, 4, -2, 2}).reshape({1, 2, 2}));
  // As a dataset transform: the target passes through.
  auto e = norm.apply(D::Example<>(fw::ones({3, 1, 1}), ltensor({7})));
  expect_close(e.data.flatten(), ftensor({1, 0, -0.25f}));
  EXPECT_EQ(e.target.item<int64_t>(), 7);
  Tensor images = fw::arange(8).to(fw::kFloat).reshape({4, 2, 1, 1});
  auto ds = D::datasets::LabeledTensorDataset(images, fw::arange(4))
                .map(D::transforms::Normalize<>({1.0, 2.0}, {2.0, 4.0}))
                .map(D::transforms::Stack<>());
  auto loader = D::make_data_loader<D::samplers::SequentialSampler>(std::move(ds), 4);
  int batches = 0;
  for (auto& batch : *loader) {
    ++batches;
    EXPECT_EQ(batch.data.sizes().vec(), (std::vector<int64_t>{4, 2, 1, 1}));
    expect_close(batch.data.flatten(), (images.flatten() - ftensor({1, 2}).repeat({4})) / ftensor({2, 4}).repeat({4}));
    expect_close(batch.target, fw::arange(4));
  }
  EXPECT_EQ(batches, 1);
}

TEST(ApiCompatData, LambdaTensorLambdaBatchLambda) {
  auto ds = make_dataset(6)
                .map(D::transforms::TensorLambda<>([](Tensor t) { return t * 2; }))
                .map(D::transforms::Lambda<D::Example<>>([](D::Example<> e) {
                  e.target = e.target + 100;
                  return e;
                }));
  auto batch = ds.get_batch({1, 5});
  static_assert(std::is_same_v<decltype(batch), std::vector<D::Example<>>>);
  ASSERT_EQ(batch.size(), 2u);
  expect_close(batch[1].data, ftensor({10, 100}));
  EXPECT_EQ(batch[1].target.item<int64_t>(), 105);
  // A batch transform may change the batch type: here to the sum of the targets.
  auto sums = make_dataset(6).map(D::transforms::BatchLambda<std::vector<D::Example<>>, int64_t>(
      [](std::vector<D::Example<>> b) {
        int64_t s = 0;
        for (auto& e : b) s += e.target.item<int64_t>();
        return s;
      }));
  auto loader = D::make_data_loader<D::samplers::SequentialSampler>(std::move(sums), 4);
  std::vector<int64_t> got;
  for (auto& s : *loader) got.push_back(s);
  EXPECT_EQ(got, (std::vector<int64_t>{0 + 1 + 2 + 3, 4 + 5}));
}

// ---- data: libtorch's TensorDataset, TensorExample and Stack<TensorExample>

static_assert(std::is_same_v<D::example::NoTarget, void>);
static_assert(std::is_same_v<D::TensorExample, D::Example<Tensor, D::example::NoTarget>>);
static_assert(std::is_same_v<D::datasets::TensorDataset::ExampleType, D::TensorExample>);
static_assert(std::is_same_v<D::TensorExample::TargetType, void>);
static_assert(std::is_convertible_v<Tensor, D::TensorExample>);
static_assert(std::is_convertible_v<D::TensorExample&, Tensor&>);
static_assert(std::is_same_v<D::transforms::Stack<D::TensorExample>::OutputBatchType, D::TensorExample>);

TEST(ApiCompatData, TensorDatasetYieldsTensorExamples) {
  Tensor t = fw::arange(12).to(fw::kFloat).reshape({6, 2});
  D::datasets::TensorDataset ds(t);
  EXPECT_EQ(*ds.size(), 6u);
  EXPECT_TRUE(ds.tensor.is_same(t));
  D::TensorExample e = ds.get(2);
  Tensor& as_tensor = e;  // a TensorExample is its data
  expect_close(as_tensor, ftensor({4, 5}));
  const D::TensorExample& ce = e;
  const Tensor& as_const = ce;
  EXPECT_TRUE(as_const.is_same(e.data));
  // The list constructor stacks: each tensor is one example.
  D::datasets::TensorDataset listed(std::vector<Tensor>{ftensor({1, 2}), ftensor({3, 4}), ftensor({5, 6})});
  EXPECT_EQ(listed.tensor.sizes().vec(), (std::vector<int64_t>{3, 2}));
  EXPECT_EQ(*listed.size(), 3u);
  expect_close(listed.get(2).data, ftensor({5, 6}));
  // Unstacked batches are vectors of TensorExamples; Stack<TensorExample> makes one tensor.
  auto plain = ds.get_batch({5, 0});
  static_assert(std::is_same_v<decltype(plain), std::vector<D::TensorExample>>);
  expect_close(plain[0].data, ftensor({10, 11}));
  auto loader = D::make_data_loader<D::samplers::SequentialSampler>(
      D::datasets::TensorDataset(t).map(D::transforms::Stack<D::TensorExample>()), D::DataLoaderOptions().batch_size(4));
  std::vector<Tensor> batches;
  for (auto& batch : *loader) {
    static_assert(std::is_same_v<std::decay_t<decltype(batch)>, D::TensorExample>);
    Tensor b = batch;
    batches.push_back(b);
  }
  ASSERT_EQ(batches.size(), 2u);
  expect_close(batches[0], t.narrow(0, 0, 4));
  expect_close(batches[1], t.narrow(0, 4, 2));
  // Tensor transforms work on TensorExamples (the target type is NoTarget).
  auto normalized = D::datasets::TensorDataset(fw::full({2, 1, 1, 1}, 2.0f))
                        .map(D::transforms::Normalize<D::example::NoTarget>(1.0, 0.5))
                        .map(D::transforms::Stack<D::TensorExample>());
  expect_close(normalized.get_batch({0, 1}).data, fw::full({2, 1, 1, 1}, 2.0f));
  auto doubled = D::datasets::TensorDataset(t).map(
      D::transforms::TensorLambda<D::example::NoTarget>([](Tensor x) { return x * 2; }));
  expect_close(doubled.get_batch({1})[0].data, ftensor({4, 6}));
  // Errors name the dataset and the offending value.
  EXPECT_ERROR(ds.get(6), "[TensorDataset] index 6 is out of bounds for dataset of size 6");
  EXPECT_ERROR(D::datasets::TensorDataset(fw::tensor(1.0)), "[TensorDataset] expected a defined tensor with at least one dimension");
  EXPECT_ERROR(D::datasets::TensorDataset(std::vector<Tensor>{}), "[TensorDataset] expected a non-empty list of tensors");
  EXPECT_ERROR(D::datasets::TensorDataset(std::vector<Tensor>{ftensor({1, 2}), ftensor({1})}), "[stack]");
  EXPECT_ERROR(D::transforms::Stack<D::TensorExample>().apply_batch({}), "[Stack] cannot collate an empty batch");
}

// ---- data: batch types and make_data_loader

using PlainLoader = D::DataLoader<D::datasets::LabeledTensorDataset>;
using StackedLoader = D::DataLoader<D::datasets::MapDataset<D::datasets::LabeledTensorDataset, D::transforms::Stack<>>>;
static_assert(std::is_same_v<PlainLoader::BatchType, std::vector<D::Example<>>>);
static_assert(std::is_same_v<decltype(*std::declval<PlainLoader&>().begin()), std::vector<D::Example<>>&>);
static_assert(std::is_same_v<StackedLoader::BatchType, D::Example<>>);
static_assert(std::is_same_v<decltype(*std::declval<StackedLoader&>().begin()), D::Example<>&>);
static_assert(std::is_convertible_v<size_t, D::DataLoaderOptions>);
static_assert(std::is_convertible_v<int, D::DataLoaderOptions>);
static_assert(std::is_base_of_v<D::transforms::BatchTransform<std::vector<D::Example<>>, D::Example<>>,
                                D::transforms::Stack<>>);

TEST(ApiCompatData, UnstackedBatchesAreVectorsOfExamples) {
  auto ds = make_dataset(10);
  auto loader = D::make_data_loader<D::samplers::SequentialSampler>(ds, 4);
  static_assert(std::is_same_v<std::decay_t<decltype(*loader)>, PlainLoader>);
  std::vector<size_t> sizes;
  int64_t expected = 0;
  for (auto& batch : *loader) {
    sizes.push_back(batch.size());
    for (auto& ex : batch) {
      EXPECT_EQ(ex.data.sizes().vec(), (std::vector<int64_t>{2}));
      EXPECT_EQ(ex.data[1].item<float>(), 10.f * float(expected));
      EXPECT_EQ(ex.target.item<int64_t>(), expected);
      ++expected;
    }
  }
  EXPECT_EQ(sizes, (std::vector<size_t>{4, 4, 2}));
  EXPECT_EQ(expected, 10);
  // The same loader with worker threads gives the same batches.
  D::DataLoader threaded(ds, D::DataLoaderOptions(3).workers(2));
  std::vector<int64_t> order;
  for (auto& batch : threaded)
    for (auto& ex : batch) order.push_back(ex.target.item<int64_t>());
  EXPECT_EQ(order, (std::vector<int64_t>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}));
}

TEST(ApiCompatData, StackedBatchesAndMakeDataLoaderOverloads) {
  // make_data_loader(ds, 4): a RandomSampler and batch size 4.
  auto random = D::make_data_loader(make_dataset(10).map(D::transforms::Stack<>()), 4);
  EXPECT_EQ(random->options().batch_size, 4u);  // a field, as libtorch's FullDataLoaderOptions
  EXPECT_EQ(random->options().workers, 0u);
  EXPECT_FALSE(random->options().drop_last);
  std::multiset<int64_t> seen;
  std::vector<int64_t> sizes;
  for (auto& batch : *random) {
    sizes.push_back(batch.data.size(0));
    EXPECT_TRUE(fw::equal(batch.data.select(1, 0), batch.target.to(fw::kFloat)));
    for (int64_t i = 0; i < batch.target.size(0); ++i) seen.insert(batch.target[i].item<int64_t>());
  }
  EXPECT_EQ(sizes, (std::vector<int64_t>{4, 4, 2}));
  EXPECT_EQ(seen, (std::multiset<int64_t>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}));

  // make_data_loader(ds, 4) over an unmapped dataset: vectors of examples.
  auto plain = D::make_data_loader(make_dataset(10), 4);
  size_t total = 0;
  for (auto& batch : *plain) total += batch.size();
  EXPECT_EQ(total, 10u);

  // make_data_loader(ds, sampler, 4) and make_data_loader<SamplerT>(ds, options).
  auto seq = D::make_data_loader(make_dataset(6).map(D::transforms::Stack<>()), D::samplers::SequentialSampler(6), 4);
  std::vector<int64_t> firsts;
  for (auto& batch : *seq) firsts.push_back(batch.target[0].item<int64_t>());
  EXPECT_EQ(firsts, (std::vector<int64_t>{0, 4}));
  auto dropping = D::make_data_loader<D::samplers::SequentialSampler>(
      make_dataset(6).map(D::transforms::Stack<>()), D::DataLoaderOptions(4).drop_last(true).workers(1));
  EXPECT_EQ(dropping->options().max_jobs, 2u);
  EXPECT_TRUE(dropping->options().drop_last);
  int batches = 0;
  for (auto& batch : *dropping) {
    ++batches;
    EXPECT_EQ(batch.data.size(0), 4);
  }
  EXPECT_EQ(batches, 1);
  D::DataLoaderOptions implicit = 16;
  EXPECT_EQ(implicit.batch_size(), 16u);
  EXPECT_EQ(implicit.workers(), 0u);
}
