// Loss modules (include/fw/nn/modules/loss.h): thin holders of options over fw::nn::functional's
// losses. pretty_print follows libtorch's strings with fw's namespace ("fw::nn::MSELoss()"; as in
// libtorch SmoothL1Loss and HuberLoss print without parentheses).
#include "fw/nn/modules/loss.h"

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

}  // namespace fw::nn
