// Loss modules (include/fw/nn/modules/loss.h): thin holders of options over fw::nn::functional's
// losses. pretty_print follows libtorch's strings with fw's namespace ("fw::nn::MSELoss()"; as in
// libtorch SmoothL1Loss and HuberLoss print without parentheses).
#include "fw/nn/modules/loss.h"

#include <cctype>
#include <ios>
#include <string>

#include "fw/nn/modules/distance.h"

namespace fw::nn {

namespace F = functional;

L1LossImpl::L1LossImpl(const L1LossOptions& options_) : options(options_) {}
void L1LossImpl::reset() {}
void L1LossImpl::pretty_print(std::ostream& stream) const { stream << "fw::nn::L1Loss()"; }
Tensor L1LossImpl::forward(const Tensor& input, const Tensor& target) { return F::l1_loss(input, target, options); }

KLDivLossImpl::KLDivLossImpl(const KLDivLossOptions& options_) : options(options_) {}
void KLDivLossImpl::reset() {}
void KLDivLossImpl::pretty_print(std::ostream& stream) const { stream << "fw::nn::KLDivLoss()"; }
Tensor KLDivLossImpl::forward(const Tensor& input, const Tensor& target) { return F::kl_div(input, target, options); }

MSELossImpl::MSELossImpl(const MSELossOptions& options_) : options(options_) {}
void MSELossImpl::reset() {}
void MSELossImpl::pretty_print(std::ostream& stream) const { stream << "fw::nn::MSELoss()"; }
Tensor MSELossImpl::forward(const Tensor& input, const Tensor& target) { return F::mse_loss(input, target, options); }

BCELossImpl::BCELossImpl(const BCELossOptions& options_) : options(options_) { reset(); }
void BCELossImpl::reset() { register_buffer("weight", options.weight()); }
void BCELossImpl::pretty_print(std::ostream& stream) const { stream << "fw::nn::BCELoss()"; }
Tensor BCELossImpl::forward(const Tensor& input, const Tensor& target) {
  return F::binary_cross_entropy(input, target, options);
}

SmoothL1LossImpl::SmoothL1LossImpl(const SmoothL1LossOptions& options_) : options(options_) {}
void SmoothL1LossImpl::reset() {}
void SmoothL1LossImpl::pretty_print(std::ostream& stream) const { stream << "fw::nn::SmoothL1Loss"; }
Tensor SmoothL1LossImpl::forward(const Tensor& input, const Tensor& target) {
  return F::smooth_l1_loss(input, target, options);
}

HuberLossImpl::HuberLossImpl(const HuberLossOptions& options_) : options(options_) {}
void HuberLossImpl::reset() {}
void HuberLossImpl::pretty_print(std::ostream& stream) const { stream << "fw::nn::HuberLoss"; }
Tensor HuberLossImpl::forward(const Tensor& input, const Tensor& target) {
  return F::huber_loss(input, target, options);
}

CTCLossImpl::CTCLossImpl(const CTCLossOptions& options_) : options(options_) {}
void CTCLossImpl::reset() {}
void CTCLossImpl::pretty_print(std::ostream& stream) const { stream << "fw::nn::CTCLoss()"; }
Tensor CTCLossImpl::forward(const Tensor& log_probs, const Tensor& targets, const Tensor& input_lengths,
                            const Tensor& target_lengths) {
  return F::ctc_loss(log_probs, targets, input_lengths, target_lengths, options);
}

// The weighted losses use their registered buffers (which Module::to converts) rather than the
// options' handles, as libtorch's NLLLoss/CrossEntropyLoss/BCEWithLogitsLoss do.
NLLLossImpl::NLLLossImpl(const NLLLossOptions& options_) : options(options_) { reset(); }
void NLLLossImpl::reset() { weight = register_buffer("weight", options.weight()); }
void NLLLossImpl::pretty_print(std::ostream& stream) const { stream << "fw::nn::NLLLoss()"; }
Tensor NLLLossImpl::forward(const Tensor& input, const Tensor& target) {
  return F::nll_loss(input, target, NLLLossOptions(options).weight(weight));
}

CrossEntropyLossImpl::CrossEntropyLossImpl(const CrossEntropyLossOptions& options_) : options(options_) { reset(); }
void CrossEntropyLossImpl::reset() { weight = register_buffer("weight", options.weight()); }
void CrossEntropyLossImpl::pretty_print(std::ostream& stream) const { stream << "fw::nn::CrossEntropyLoss()"; }
Tensor CrossEntropyLossImpl::forward(const Tensor& input, const Tensor& target) {
  return F::cross_entropy(input, target, CrossEntropyLossOptions(options).weight(weight));
}

BCEWithLogitsLossImpl::BCEWithLogitsLossImpl(const BCEWithLogitsLossOptions& options_) : options(options_) {
  reset();
}
void BCEWithLogitsLossImpl::reset() {
  weight = register_buffer("weight", options.weight());
  pos_weight = register_buffer("pos_weight", options.pos_weight());
}
void BCEWithLogitsLossImpl::pretty_print(std::ostream& stream) const { stream << "fw::nn::BCEWithLogitsLoss()"; }
Tensor BCEWithLogitsLossImpl::forward(const Tensor& input, const Tensor& target) {
  return F::binary_cross_entropy_with_logits(input, target,
                                             BCEWithLogitsLossOptions(options).weight(weight).pos_weight(pos_weight));
}


// ---- margin, embedding and likelihood losses. pretty_print strings are libtorch's.

MarginRankingLossImpl::MarginRankingLossImpl(const MarginRankingLossOptions& options_) : options(options_) {}
void MarginRankingLossImpl::reset() {}
void MarginRankingLossImpl::pretty_print(std::ostream& stream) const { stream << "fw::nn::MarginRankingLoss()"; }
Tensor MarginRankingLossImpl::forward(const Tensor& input1, const Tensor& input2, const Tensor& target) {
  return F::margin_ranking_loss(input1, input2, target, options);
}

HingeEmbeddingLossImpl::HingeEmbeddingLossImpl(const HingeEmbeddingLossOptions& options_) : options(options_) {}
void HingeEmbeddingLossImpl::reset() {}
void HingeEmbeddingLossImpl::pretty_print(std::ostream& stream) const {
  stream << "fw::nn::HingeEmbeddingLoss(margin=" << options.margin() << ")";
}
Tensor HingeEmbeddingLossImpl::forward(const Tensor& input, const Tensor& target) {
  return F::hinge_embedding_loss(input, target, options);
}

SoftMarginLossImpl::SoftMarginLossImpl(const SoftMarginLossOptions& options_) : options(options_) {}
void SoftMarginLossImpl::reset() {}
void SoftMarginLossImpl::pretty_print(std::ostream& stream) const { stream << "fw::nn::SoftMarginLoss()"; }
Tensor SoftMarginLossImpl::forward(const Tensor& input, const Tensor& target) {
  return F::soft_margin_loss(input, target, options);
}

MultiLabelMarginLossImpl::MultiLabelMarginLossImpl(const MultiLabelMarginLossOptions& options_) : options(options_) {}
void MultiLabelMarginLossImpl::reset() {}
void MultiLabelMarginLossImpl::pretty_print(std::ostream& stream) const { stream << "fw::nn::MultiLabelMarginLoss()"; }
Tensor MultiLabelMarginLossImpl::forward(const Tensor& input, const Tensor& target) {
  return F::multilabel_margin_loss(input, target, options);
}

// The weighted modules register options.weight() as a buffer; Module::to converts it in place, so
// forward can keep passing the options.
MultiLabelSoftMarginLossImpl::MultiLabelSoftMarginLossImpl(const MultiLabelSoftMarginLossOptions& options_)
    : options(options_) {
  reset();
}
void MultiLabelSoftMarginLossImpl::reset() { register_buffer("weight", options.weight()); }
void MultiLabelSoftMarginLossImpl::pretty_print(std::ostream& stream) const {
  stream << "fw::nn::MultiLabelSoftMarginLoss()";
}
Tensor MultiLabelSoftMarginLossImpl::forward(const Tensor& input, const Tensor& target) {
  return F::multilabel_soft_margin_loss(input, target, options);
}

MultiMarginLossImpl::MultiMarginLossImpl(const MultiMarginLossOptions& options_) : options(options_) { reset(); }
void MultiMarginLossImpl::reset() {
  FW_CHECK(options.p() == 1 || options.p() == 2, "[MultiMarginLoss] only p == 1 and p == 2 supported, got p = ",
           options.p());
  FW_CHECK(!options.weight().defined() || options.weight().dim() == 1,
           "[MultiMarginLoss] weight must be 1-D (one value per class), got ", options.weight().dim(), "-D");
  register_buffer("weight", options.weight());
}
void MultiMarginLossImpl::pretty_print(std::ostream& stream) const {
  stream << "fw::nn::MultiMarginLoss(p=" << options.p() << ", margin=" << options.margin()
         << ", weight=" << options.weight() << ", reduction=k";
  std::string r = mode_name(options.reduction());
  r[0] = char(std::toupper(r[0]));
  stream << r << ")";
}
Tensor MultiMarginLossImpl::forward(const Tensor& input, const Tensor& target) {
  return F::multi_margin_loss(input, target, options);
}

CosineEmbeddingLossImpl::CosineEmbeddingLossImpl(const CosineEmbeddingLossOptions& options_) : options(options_) {}
void CosineEmbeddingLossImpl::reset() {}
void CosineEmbeddingLossImpl::pretty_print(std::ostream& stream) const {
  stream << "fw::nn::CosineEmbeddingLoss(margin=" << options.margin() << ")";
}
Tensor CosineEmbeddingLossImpl::forward(const Tensor& input1, const Tensor& input2, const Tensor& target) {
  return F::cosine_embedding_loss(input1, input2, target, options);
}

TripletMarginLossImpl::TripletMarginLossImpl(const TripletMarginLossOptions& options_) : options(options_) {}
void TripletMarginLossImpl::reset() {}
void TripletMarginLossImpl::pretty_print(std::ostream& stream) const {
  stream << "fw::nn::TripletMarginLoss(margin=" << options.margin() << ", p=" << options.p()
         << ", eps=" << options.eps() << std::boolalpha << ", swap=" << options.swap() << ")";
}
Tensor TripletMarginLossImpl::forward(const Tensor& anchor, const Tensor& positive, const Tensor& negative) {
  return F::triplet_margin_loss(anchor, positive, negative, options);
}

TripletMarginWithDistanceLossImpl::TripletMarginWithDistanceLossImpl(
    const TripletMarginWithDistanceLossOptions& options_)
    : options(options_) {
  reset();
}
void TripletMarginWithDistanceLossImpl::reset() {
  FW_CHECK(options.margin() > 0, "[TripletMarginWithDistanceLoss] expected margin to be greater than 0, got ",
           options.margin(), " instead");
}
void TripletMarginWithDistanceLossImpl::pretty_print(std::ostream& stream) const {
  stream << "fw::nn::TripletMarginWithDistanceLoss(margin=" << options.margin() << std::boolalpha
         << ", swap=" << options.swap() << ")";
}
Tensor TripletMarginWithDistanceLossImpl::forward(const Tensor& anchor, const Tensor& positive,
                                                   const Tensor& negative) {
  return F::triplet_margin_with_distance_loss(anchor, positive, negative, options);
}

PoissonNLLLossImpl::PoissonNLLLossImpl(const PoissonNLLLossOptions& options_) : options(options_) {}
void PoissonNLLLossImpl::reset() {}
void PoissonNLLLossImpl::pretty_print(std::ostream& stream) const { stream << "fw::nn::PoissonNLLLoss()"; }
Tensor PoissonNLLLossImpl::forward(const Tensor& log_input, const Tensor& target) {
  return F::poisson_nll_loss(log_input, target, options);
}

GaussianNLLLossImpl::GaussianNLLLossImpl(const GaussianNLLLossOptions& options_) : options(options_) {}
void GaussianNLLLossImpl::reset() {}
void GaussianNLLLossImpl::pretty_print(std::ostream& stream) const { stream << "fw::nn::GaussianNLLLoss()"; }
Tensor GaussianNLLLossImpl::forward(const Tensor& input, const Tensor& target, const Tensor& var) {
  return F::gaussian_nll_loss(input, target, var, options);
}


// ---- distance modules (include/fw/nn/modules/distance.h)

CosineSimilarityImpl::CosineSimilarityImpl(const CosineSimilarityOptions& options_) : options(options_) {}
void CosineSimilarityImpl::reset() {}
void CosineSimilarityImpl::pretty_print(std::ostream& stream) const {
  stream << std::boolalpha << "fw::nn::CosineSimilarity(dim=" << options.dim() << ", eps=" << options.eps() << ")";
}
Tensor CosineSimilarityImpl::forward(const Tensor& input1, const Tensor& input2) {
  return F::cosine_similarity(input1, input2, options);
}

PairwiseDistanceImpl::PairwiseDistanceImpl(const PairwiseDistanceOptions& options_) : options(options_) {}
void PairwiseDistanceImpl::reset() {}
void PairwiseDistanceImpl::pretty_print(std::ostream& stream) const {
  stream << std::boolalpha << "fw::nn::PairwiseDistance(p=" << options.p() << ", eps=" << options.eps()
         << ", keepdim=" << options.keepdim() << ")";
}
Tensor PairwiseDistanceImpl::forward(const Tensor& input1, const Tensor& input2) {
  return F::pairwise_distance(input1, input2, options);
}

}  // namespace fw::nn
