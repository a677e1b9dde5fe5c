// AdaptiveLogSoftmaxWithLoss: libtorch's adaptive softmax (Grave et al., "Efficient softmax
// approximation for GPUs"): frequent classes in a head softmax, rare ones in tail clusters reached
// through the head's cluster entries.
#pragma once
#include <vector>

#include "fw/nn/module.h"
#include "fw/nn/modules/container.h"
#include "fw/nn/modules/linear.h"

namespace fw::nn {

// libtorch's options: in_features, n_classes, cutoffs (sorted, unique, in [1, n_classes - 1]),
// div_value (each tail cluster's hidden size divides in_features by it once more), head_bias.
struct AdaptiveLogSoftmaxWithLossOptions {
  AdaptiveLogSoftmaxWithLossOptions(int64_t in_features, int64_t n_classes, std::vector<int64_t> cutoffs)
      : in_features_(in_features), n_classes_(n_classes), cutoffs_(std::move(cutoffs)) {}
  FW_ARG(int64_t, in_features);
  FW_ARG(int64_t, n_classes);
  FW_ARG(std::vector<int64_t>, cutoffs);
  FW_ARG(double, div_value) = 4.;
  FW_ARG(bool, head_bias) = false;
};

// What forward returns: each example's log-probability of its target, and the mean negative
// log-likelihood as a number (as in libtorch; differentiate through `output`).
struct ASMoutput {
  ASMoutput(Tensor output_, double loss_) : output(std::move(output_)), loss(loss_) {}
  Tensor output;
  double loss;
};

class AdaptiveLogSoftmaxWithLossImpl : public Cloneable<AdaptiveLogSoftmaxWithLossImpl> {
 public:
  AdaptiveLogSoftmaxWithLossImpl(int64_t in_features, int64_t n_classes, std::vector<int64_t> cutoffs)
      : AdaptiveLogSoftmaxWithLossImpl(AdaptiveLogSoftmaxWithLossOptions(in_features, n_classes, std::move(cutoffs))) {}
  explicit AdaptiveLogSoftmaxWithLossImpl(AdaptiveLogSoftmaxWithLossOptions options_);
  // input (N, in_features) with target (N) of class indices, or input (in_features) with a 0-dim
  // target.
  ASMoutput forward(const Tensor& input, const Tensor& target);
  void reset() override;
  void reset_parameters();
  void pretty_print(std::ostream& stream) const override;
  // Log-probabilities of every class, (N, n_classes), from the input and the head's output.
  Tensor _get_full_log_prob(const Tensor& input, const Tensor& head_output);
  Tensor log_prob(const Tensor& input);
  // The most likely class of each example, (N): the full distribution is computed only for rows
  // whose head prediction is a tail cluster.
  Tensor predict(const Tensor& input);

  AdaptiveLogSoftmaxWithLossOptions options;
  std::vector<int64_t> cutoffs;  // options.cutoffs() followed by n_classes
  int64_t shortlist_size = 0;
  int64_t n_clusters = 0;
  int64_t head_size = 0;
  Linear head = nullptr;
  ModuleList tail = nullptr;
};
FW_MODULE(AdaptiveLogSoftmaxWithLoss);

}  // namespace fw::nn
