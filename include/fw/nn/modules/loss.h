// Loss modules (libtorch's torch/nn/modules/loss.h): each holds its options and calls the
// fw::nn::functional loss in forward(input, target). The module options are the functional
// option structs under libtorch's module names (libtorch typedefs them the other way round:
// CrossEntropyFuncOptions = CrossEntropyLossOptions), so both spellings name one type.
#pragma once
#include "fw/nn/functional.h"
#include "fw/nn/module.h"
#include "fw/nn/options.h"

namespace fw::nn {

// Options of L1Loss / MSELoss: reduction (kNone, kMean (default), kSum); MSELossOptions(fw::kSum).
using L1LossOptions = functional::L1LossFuncOptions;
using MSELossOptions = functional::MSELossFuncOptions;
// Options of KLDivLoss: reduction (kNone, kBatchMean, kSum, kMean (default)), log_target.
using KLDivLossOptions = functional::KLDivFuncOptions;
// Options of BCELoss: weight, reduction.
using BCELossOptions = functional::BinaryCrossEntropyFuncOptions;
// Options of BCEWithLogitsLoss: weight, reduction, pos_weight.
using BCEWithLogitsLossOptions = functional::BinaryCrossEntropyWithLogitsFuncOptions;
// Options of SmoothL1Loss: reduction, beta (1.0).
using SmoothL1LossOptions = functional::SmoothL1LossFuncOptions;
// Options of HuberLoss: reduction, delta (1.0).
using HuberLossOptions = functional::HuberLossFuncOptions;
// Options of NLLLoss: weight, ignore_index (-100), reduction.
using NLLLossOptions = functional::NLLLossFuncOptions;
// Options of CrossEntropyLoss: weight, ignore_index (-100), reduction, label_smoothing (0).
using CrossEntropyLossOptions = functional::CrossEntropyFuncOptions;
// Options of CTCLoss: blank (0), reduction, zero_infinity (false).
using CTCLossOptions = functional::CTCLossFuncOptions;
// Options of MarginRankingLoss: margin (0), reduction.
using MarginRankingLossOptions = functional::MarginRankingLossFuncOptions;
// Options of HingeEmbeddingLoss: margin (1), reduction.
using HingeEmbeddingLossOptions = functional::HingeEmbeddingLossFuncOptions;
// Options of SoftMarginLoss / MultiLabelMarginLoss: reduction; SoftMarginLossOptions(fw::kSum).
using SoftMarginLossOptions = functional::SoftMarginLossFuncOptions;
using MultiLabelMarginLossOptions = functional::MultilabelMarginLossFuncOptions;
// Options of MultiLabelSoftMarginLoss: weight, reduction.
using MultiLabelSoftMarginLossOptions = functional::MultilabelSoftMarginLossFuncOptions;
// Options of MultiMarginLoss: p (1 or 2), margin (1), weight, reduction.
using MultiMarginLossOptions = functional::MultiMarginLossFuncOptions;
// Options of CosineEmbeddingLoss: margin (0), reduction.
using CosineEmbeddingLossOptions = functional::CosineEmbeddingLossFuncOptions;
// Options of TripletMarginLoss: margin (1), p (2), eps (1e-6), swap (false), reduction.
using TripletMarginLossOptions = functional::TripletMarginLossFuncOptions;
// Options of TripletMarginWithDistanceLoss: distance_function, margin (1, must be > 0), swap, reduction.
using TripletMarginWithDistanceLossOptions = functional::TripletMarginWithDistanceLossFuncOptions;
// Options of PoissonNLLLoss: log_input (true), full (false), eps (1e-8), reduction.
using PoissonNLLLossOptions = functional::PoissonNLLLossFuncOptions;
// Options of GaussianNLLLoss: full (false), eps (1e-6), reduction.
using GaussianNLLLossOptions = functional::GaussianNLLLossFuncOptions;

// Mean absolute error |input - target|.
class L1LossImpl : public Cloneable<L1LossImpl> {
 public:
  explicit L1LossImpl(const L1LossOptions& options_ = {});
  void reset() override;
  void pretty_print(std::ostream& stream) const override;
  Tensor forward(const Tensor& input, const Tensor& target);

  L1LossOptions options;
};
FW_MODULE(L1Loss);

// Kullback-Leibler divergence; input holds log-probabilities.
class KLDivLossImpl : public Cloneable<KLDivLossImpl> {
 public:
  explicit KLDivLossImpl(const KLDivLossOptions& options_ = {});
  void reset() override;
  void pretty_print(std::ostream& stream) const override;
  Tensor forward(const Tensor& input, const Tensor& target);

  KLDivLossOptions options;
};
FW_MODULE(KLDivLoss);

// Mean squared error (input - target)^2.
class MSELossImpl : public Cloneable<MSELossImpl> {
 public:
  explicit MSELossImpl(const MSELossOptions& options_ = {});
  void reset() override;
  void pretty_print(std::ostream& stream) const override;
  Tensor forward(const Tensor& input, const Tensor& target);

  MSELossOptions options;
};
FW_MODULE(MSELoss);

// Binary cross entropy of probabilities; options.weight() is registered as buffer "weight".
class BCELossImpl : public Cloneable<BCELossImpl> {
 public:
  explicit BCELossImpl(const BCELossOptions& options_ = {});
  void reset() override;
  void pretty_print(std::ostream& stream) const override;
  Tensor forward(const Tensor& input, const Tensor& target);

  BCELossOptions options;
};
FW_MODULE(BCELoss);

// Smooth L1 loss (quadratic below beta, linear above).
class SmoothL1LossImpl : public Cloneable<SmoothL1LossImpl> {
 public:
  explicit SmoothL1LossImpl(const SmoothL1LossOptions& options_ = {});
  void reset() override;
  void pretty_print(std::ostream& stream) const override;
  Tensor forward(const Tensor& input, const Tensor& target);

  SmoothL1LossOptions options;
};
FW_MODULE(SmoothL1Loss);

// Huber loss (quadratic below delta, delta-scaled linear above).
class HuberLossImpl : public Cloneable<HuberLossImpl> {
 public:
  explicit HuberLossImpl(const HuberLossOptions& options_ = {});
  void reset() override;
  void pretty_print(std::ostream& stream) const override;
  Tensor forward(const Tensor& input, const Tensor& target);

  HuberLossOptions options;
};
FW_MODULE(HuberLoss);

// Connectionist temporal classification loss; see functional::ctc_loss for the shapes.
class CTCLossImpl : public Cloneable<CTCLossImpl> {
 public:
  explicit CTCLossImpl(const CTCLossOptions& options_ = {});
  void reset() override;
  void pretty_print(std::ostream& stream) const override;
  Tensor forward(const Tensor& log_probs, const Tensor& targets, const Tensor& input_lengths,
                 const Tensor& target_lengths);

  CTCLossOptions options;
};
FW_MODULE(CTCLoss);

// Negative log likelihood of log-probabilities; `weight` is registered as buffer "weight".
class NLLLossImpl : public Cloneable<NLLLossImpl> {
 public:
  explicit NLLLossImpl(const NLLLossOptions& options_ = {});
  void reset() override;
  void pretty_print(std::ostream& stream) const override;
  Tensor forward(const Tensor& input, const Tensor& target);

  NLLLossOptions options;
  // A manual rescaling weight per class (undefined: all ones).
  Tensor weight;
};
FW_MODULE(NLLLoss);

// log_softmax + NLLLoss (class-index or class-probability targets, label smoothing);
// `weight` is registered as buffer "weight".
class CrossEntropyLossImpl : public Cloneable<CrossEntropyLossImpl> {
 public:
  explicit CrossEntropyLossImpl(const CrossEntropyLossOptions& options_ = {});
  void reset() override;
  void pretty_print(std::ostream& stream) const override;
  Tensor forward(const Tensor& input, const Tensor& target);

  CrossEntropyLossOptions options;
  // A manual rescaling weight per class (undefined: all ones).
  Tensor weight;
};
FW_MODULE(CrossEntropyLoss);

// Sigmoid + BCELoss in one numerically stable step; weight and pos_weight are buffers.
class BCEWithLogitsLossImpl : public Cloneable<BCEWithLogitsLossImpl> {
 public:
  explicit BCEWithLogitsLossImpl(const BCEWithLogitsLossOptions& options_ = {});
  void reset() override;
  void pretty_print(std::ostream& stream) const override;
  Tensor forward(const Tensor& input, const Tensor& target);

  BCEWithLogitsLossOptions options;
  // A manual rescaling weight per element (broadcast to the batch).
  Tensor weight;
  // A weight of positive examples (broadcast along the classes).
  Tensor pos_weight;
};
FW_MODULE(BCEWithLogitsLoss);

// Declares <Name>Impl: a loss module holding <Options> whose forward(args) calls the functional.
#define FW_LOSS_MODULE(Name, Options, ...)                     \
  class Name##Impl : public Cloneable<Name##Impl> {            \
   public:                                                     \
    explicit Name##Impl(const Options& options_ = {});         \
    void reset() override;                                     \
    void pretty_print(std::ostream& stream) const override;    \
    Tensor forward(__VA_ARGS__);                               \
                                                               \
    Options options;                                           \
  };                                                           \
  FW_MODULE(Name)

// max(0, -target * (input1 - input2) + margin).
FW_LOSS_MODULE(MarginRankingLoss, MarginRankingLossOptions, const Tensor& input1, const Tensor& input2,
               const Tensor& target);
// input where target is 1, max(0, margin - input) where it is -1.
FW_LOSS_MODULE(HingeEmbeddingLoss, HingeEmbeddingLossOptions, const Tensor& input, const Tensor& target);
// log(1 + exp(-target * input)).
FW_LOSS_MODULE(SoftMarginLoss, SoftMarginLossOptions, const Tensor& input, const Tensor& target);
// Multi-class multi-label hinge loss; see functional::multilabel_margin_loss.
FW_LOSS_MODULE(MultiLabelMarginLoss, MultiLabelMarginLossOptions, const Tensor& input, const Tensor& target);
// Per-class logistic loss averaged over classes; options.weight() is registered as buffer "weight".
FW_LOSS_MODULE(MultiLabelSoftMarginLoss, MultiLabelSoftMarginLossOptions, const Tensor& input, const Tensor& target);
// Multi-class hinge loss; reset() checks p is 1 or 2 and registers options.weight() as buffer "weight".
FW_LOSS_MODULE(MultiMarginLoss, MultiMarginLossOptions, const Tensor& input, const Tensor& target);
// 1 - cos(x1, x2) for target 1, max(0, cos(x1, x2) - margin) for target -1.
FW_LOSS_MODULE(CosineEmbeddingLoss, CosineEmbeddingLossOptions, const Tensor& input1, const Tensor& input2,
               const Tensor& target);
// max(0, margin + d(anchor, positive) - d(anchor, negative)) with the p-norm pairwise distance.
FW_LOSS_MODULE(TripletMarginLoss, TripletMarginLossOptions, const Tensor& anchor, const Tensor& positive,
               const Tensor& negative);
// TripletMarginLoss with a caller's distance function; reset() rejects margin <= 0 as PyTorch does.
FW_LOSS_MODULE(TripletMarginWithDistanceLoss, TripletMarginWithDistanceLossOptions, const Tensor& anchor,
               const Tensor& positive, const Tensor& negative);
// Negative log likelihood of a Poisson target given its (log-)rate.
FW_LOSS_MODULE(PoissonNLLLoss, PoissonNLLLossOptions, const Tensor& log_input, const Tensor& target);
// Negative log likelihood of target under N(input, var) (torch.nn.GaussianNLLLoss).
FW_LOSS_MODULE(GaussianNLLLoss, GaussianNLLLossOptions, const Tensor& input, const Tensor& target, const Tensor& var);

#undef FW_LOSS_MODULE

}  // namespace fw::nn
