// fw::nll_loss, fw::mse_loss, ... (include/fw/losses.h): ATen-signature forms of the
// fw::nn::functional losses, and the functional cosine_similarity / pairwise_distance.
#include "fw/losses.h"

#include <algorithm>
#include <variant>

#include "fw/linalg_more.h"
#include "fw/nn/functional.h"
#include "fw/ops.h"

namespace fw {
namespace {

namespace F = nn::functional;

F::loss_reduction_t to_reduction(int64_t r) {
  switch (r) {
    case Reduction::None: return enumtype::kNone();
    case Reduction::Mean: return enumtype::kMean();
    case Reduction::Sum: return enumtype::kSum();
    default: FW_CHECK(false, "[loss] invalid reduction ", r, " (expected fw::Reduction::None, Mean or Sum)");
  }
  return enumtype::kMean();
}

Tensor or_undefined(const std::optional<Tensor>& t) { return t ? *t : Tensor(); }

}  // namespace

Tensor nll_loss(const Tensor& self, const Tensor& target, const std::optional<Tensor>& weight, int64_t reduction,
                int64_t ignore_index) {
  return F::nll_loss(self, target,
                     F::NLLLossFuncOptions().weight(or_undefined(weight)).ignore_index(ignore_index).reduction(
                         to_reduction(reduction)));
}

Tensor cross_entropy_loss(const Tensor& self, const Tensor& target, const std::optional<Tensor>& weight,
                          int64_t reduction, int64_t ignore_index, double label_smoothing) {
  return F::cross_entropy(self, target,
                          F::CrossEntropyFuncOptions()
                              .weight(or_undefined(weight))
                              .ignore_index(ignore_index)
                              .reduction(to_reduction(reduction))
                              .label_smoothing(label_smoothing));
}

Tensor mse_loss(const Tensor& self, const Tensor& target, int64_t reduction) {
  return F::mse_loss(self, target, F::MSELossFuncOptions(to_reduction(reduction)));
}

Tensor l1_loss(const Tensor& self, const Tensor& target, int64_t reduction) {
  return F::l1_loss(self, target, F::L1LossFuncOptions(to_reduction(reduction)));
}

Tensor binary_cross_entropy(const Tensor& self, const Tensor& target, const std::optional<Tensor>& weight,
                            int64_t reduction) {
  return F::binary_cross_entropy(
      self, target, F::BinaryCrossEntropyFuncOptions().weight(or_undefined(weight)).reduction(to_reduction(reduction)));
}

Tensor binary_cross_entropy_with_logits(const Tensor& self, const Tensor& target, const std::optional<Tensor>& weight,
                                        const std::optional<Tensor>& pos_weight, int64_t reduction) {
  return F::binary_cross_entropy_with_logits(self, target,
                                             F::BinaryCrossEntropyWithLogitsFuncOptions()
                                                 .weight(or_undefined(weight))
                                                 .pos_weight(or_undefined(pos_weight))
                                                 .reduction(to_reduction(reduction)));
}

Tensor smooth_l1_loss(const Tensor& self, const Tensor& target, int64_t reduction, double beta) {
  return F::smooth_l1_loss(self, target, F::SmoothL1LossFuncOptions(to_reduction(reduction)).beta(beta));
}

Tensor huber_loss(const Tensor& self, const Tensor& target, int64_t reduction, double delta) {
  return F::huber_loss(self, target, F::HuberLossFuncOptions(to_reduction(reduction)).delta(delta));
}

Tensor kl_div(const Tensor& self, const Tensor& target, int64_t reduction, bool log_target) {
  F::KLDivFuncOptions o;  // None, Mean or Sum; never 'batchmean' (as at::kl_div)
  std::visit([&](auto r) { o.reduction(r); }, to_reduction(reduction));
  return F::kl_div(self, target, o.log_target(log_target));
}

Tensor ctc_loss(const Tensor& log_probs, const Tensor& targets, const Tensor& input_lengths,
                const Tensor& target_lengths, int64_t blank, int64_t reduction, bool zero_infinity) {
  return F::ctc_loss(log_probs, targets, input_lengths, target_lengths,
                     F::CTCLossFuncOptions().blank(blank).reduction(to_reduction(reduction)).zero_infinity(zero_infinity));
}

Tensor ctc_loss(const Tensor& log_probs, const Tensor& targets, IntArrayRef input_lengths, IntArrayRef target_lengths,
                int64_t blank, int64_t reduction, bool zero_infinity) {
  return ctc_loss(log_probs, targets, fw::tensor(input_lengths.vec()), fw::tensor(target_lengths.vec()), blank,
                  reduction, zero_infinity);
}

Tensor margin_ranking_loss(const Tensor& input1, const Tensor& input2, const Tensor& target, double margin,
                           int64_t reduction) {
  return F::margin_ranking_loss(input1, input2, target,
                                F::MarginRankingLossFuncOptions().margin(margin).reduction(to_reduction(reduction)));
}

Tensor hinge_embedding_loss(const Tensor& self, const Tensor& target, double margin, int64_t reduction) {
  return F::hinge_embedding_loss(self, target,
                                 F::HingeEmbeddingLossFuncOptions().margin(margin).reduction(to_reduction(reduction)));
}

Tensor soft_margin_loss(const Tensor& self, const Tensor& target, int64_t reduction) {
  return F::soft_margin_loss(self, target, F::SoftMarginLossFuncOptions(to_reduction(reduction)));
}

Tensor multilabel_margin_loss(const Tensor& self, const Tensor& target, int64_t reduction) {
  return F::multilabel_margin_loss(self, target, F::MultilabelMarginLossFuncOptions(to_reduction(reduction)));
}

Tensor multi_margin_loss(const Tensor& self, const Tensor& target, const Scalar& p, const Scalar& margin,
                         const std::optional<Tensor>& weight, int64_t reduction) {
  double pv = p.to<double>();
  FW_CHECK(pv == 1 || pv == 2, "[multi_margin_loss] only p == 1 and p == 2 supported, got p = ", pv);
  return F::multi_margin_loss(self, target,
                              F::MultiMarginLossFuncOptions()
                                  .p(int64_t(pv))
                                  .margin(margin.to<double>())
                                  .weight(or_undefined(weight))
                                  .reduction(to_reduction(reduction)));
}

Tensor cosine_embedding_loss(const Tensor& input1, const Tensor& input2, const Tensor& target, double margin,
                             int64_t reduction) {
  return F::cosine_embedding_loss(
      input1, input2, target, F::CosineEmbeddingLossFuncOptions().margin(margin).reduction(to_reduction(reduction)));
}

Tensor triplet_margin_loss(const Tensor& anchor, const Tensor& positive, const Tensor& negative, double margin,
                           double p, double eps, bool swap, int64_t reduction) {
  return F::triplet_margin_loss(
      anchor, positive, negative,
      F::TripletMarginLossFuncOptions().margin(margin).p(p).eps(eps).swap(swap).reduction(to_reduction(reduction)));
}

Tensor poisson_nll_loss(const Tensor& input, const Tensor& target, bool log_input, bool full, double eps,
                        int64_t reduction) {
  return F::poisson_nll_loss(
      input, target,
      F::PoissonNLLLossFuncOptions().log_input(log_input).full(full).eps(eps).reduction(to_reduction(reduction)));
}

Tensor cosine_similarity(const Tensor& x1, const Tensor& x2, int64_t dim, double eps) {
  return F::cosine_similarity(x1, x2, F::CosineSimilarityFuncOptions().dim(dim).eps(eps));
}

Tensor pairwise_distance(const Tensor& x1, const Tensor& x2, double p, double eps, bool keepdim) {
  return F::pairwise_distance(x1, x2, F::PairwiseDistanceFuncOptions().p(p).eps(eps).keepdim(keepdim));
}

namespace nn::functional {

// As ATen (1.13): w12 / sqrt(max(w1 * w2, eps^2)) with w12 = sum(x1 x2), wi = sum(xi^2) along dim,
// computed in the promoted floating type of x1 and x2.
Tensor cosine_similarity(const Tensor& x1, const Tensor& x2, const CosineSimilarityFuncOptions& o) {
  FW_CHECK(x1.defined() && x2.defined(), "[cosine_similarity] inputs must be defined");
  Tensor w12 = (x1 * x2).sum({o.dim()});
  Tensor w1 = (x1 * x1).sum({o.dim()});
  Tensor w2 = (x2 * x2).sum({o.dim()});
  if (!is_floating_point(w12.dtype())) {
    w12 = w12.to(kFloat);
    w1 = w1.to(kFloat);
    w2 = w2.to(kFloat);
  }
  return w12 / (w1 * w2).clamp_min(o.eps() * o.eps()).sqrt();
}

// As ATen: norm(x1 - x2 + eps, p) over the last dim of the broadcast result.
Tensor pairwise_distance(const Tensor& x1, const Tensor& x2, const PairwiseDistanceFuncOptions& o) {
  int64_t last = std::max(x1.dim(), x2.dim()) - 1;
  Tensor d = x1 - x2 + o.eps();
  if (!is_floating_point(d.dtype())) d = d.to(kFloat);
  return fw::norm(d, o.p(), {last}, o.keepdim());
}

Tensor pdist(const Tensor& input, double p) { return fw::pdist(input, p); }

}  // namespace nn::functional
}  // namespace fw
