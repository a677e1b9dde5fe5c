// AdaptiveLogSoftmaxWithLoss (include/fw/nn/modules/adaptive.h).
#include <algorithm>
#include <cmath>
#include <set>

#include "fw/nn.h"

namespace fw::nn {

AdaptiveLogSoftmaxWithLossImpl::AdaptiveLogSoftmaxWithLossImpl(AdaptiveLogSoftmaxWithLossOptions options_)
    : options(std::move(options_)) {
  AdaptiveLogSoftmaxWithLossImpl::reset();
}

void AdaptiveLogSoftmaxWithLossImpl::reset() {
  const std::vector<int64_t>& c = options.cutoffs();
  const int64_t n = options.n_classes();
  FW_CHECK(!c.empty(), "[AdaptiveLogSoftmaxWithLoss] cutoffs should be a sequence of length larger than 0");
  bool ok = std::is_sorted(c.begin(), c.end()) && std::set<int64_t>(c.begin(), c.end()).size() == c.size() &&
            c.front() > 0 && c.back() <= n - 1;
  FW_CHECK(ok, "[AdaptiveLogSoftmaxWithLoss] cutoffs should be a sequence of unique, positive integers sorted in an "
           "increasing order, where each value is between 1 and n_classes-1; got cutoffs ", IntArrayRef(c),
           " with n_classes ", n);
  FW_CHECK(options.div_value() != 0, "[AdaptiveLogSoftmaxWithLoss] div_value should not be equal to 0");
  FW_CHECK(options.in_features() > 0, "[AdaptiveLogSoftmaxWithLoss] in_features must be positive, got ",
           options.in_features());
  cutoffs = c;
  cutoffs.push_back(n);
  shortlist_size = cutoffs[0];
  n_clusters = int64_t(cutoffs.size()) - 1;
  head_size = shortlist_size + n_clusters;
  head = register_module("head", Linear(LinearOptions(options.in_features(), head_size).bias(options.head_bias())));
  tail = register_module("tail", ModuleList());
  for (int64_t i = 0; i < n_clusters; i++) {
    // Cluster i projects to in_features / div_value^(i+1) dims, then to its classes.
    auto hidden = int64_t(std::floor(double(options.in_features()) / std::pow(options.div_value(), double(i + 1))));
    int64_t classes = cutoffs[size_t(i) + 1] - cutoffs[size_t(i)];
    tail->push_back(Sequential(Linear(LinearOptions(options.in_features(), hidden).bias(false)),
                               Linear(LinearOptions(hidden, classes).bias(false))));
  }
}

void AdaptiveLogSoftmaxWithLossImpl::reset_parameters() {
  head->reset_parameters();
  for (const auto& cluster : *tail)
    for (const auto& layer : cluster->children()) layer->as<Linear>()->reset_parameters();
}

void AdaptiveLogSoftmaxWithLossImpl::pretty_print(std::ostream& stream) const {
  stream << "fw::nn::AdaptiveLogSoftmaxWithLoss";
}

ASMoutput AdaptiveLogSoftmaxWithLossImpl::forward(const Tensor& input_, const Tensor& target_) {
  const int64_t tdim = target_.dim();
  FW_CHECK(tdim == 0 || tdim == 1, "[AdaptiveLogSoftmaxWithLoss] 0D or 1D target tensor expected, multi-target not "
           "supported; got target of size ", target_.sizes());
  FW_CHECK(input_.dim() == tdim + 1, "[AdaptiveLogSoftmaxWithLoss] ", tdim, "D target tensor expects ", tdim + 1,
           "D input tensors, but found inputs with sizes ", input_.sizes(), ".");
  FW_CHECK(!target_.is_floating_point() && !target_.is_complex() && target_.dtype() != kBool,
           "[AdaptiveLogSoftmaxWithLoss] expected a target of class indices (an integer dtype), got ",
           dtype_name(target_.dtype()));
  const bool batched = tdim == 1;
  Tensor input = batched ? input_ : input_.unsqueeze(0);
  Tensor target = (batched ? target_ : target_.unsqueeze(0)).to(kLong);
  FW_CHECK(input.size(0) == target.size(0), "[AdaptiveLogSoftmaxWithLoss] Input and target should have the same size "
           "in the batch dimension: input ", input.sizes(), ", target ", target.sizes());
  FW_CHECK(input.size(1) == options.in_features(), "[AdaptiveLogSoftmaxWithLoss] expected input with ",
           options.in_features(), " features, got input of size ", input.sizes());
  const int64_t batch = target.size(0);

  // Each row's log-probability within its tail cluster (0 for shortlist targets), and the head
  // entry it adds: the target itself in the shortlist, else its cluster's entry.
  Tensor output = fw::zeros({batch}, input.options());
  Tensor head_index = fw::empty({batch}, kLong);
  int64_t covered = 0;
  int64_t low = 0;
  for (int64_t i = 0; i <= n_clusters; i++) {
    const int64_t high = cutoffs[size_t(i)];
    Tensor rows = ((target >= low) & (target < high)).nonzero().flatten();
    if (rows.numel() > 0) {
      Tensor t = target.index_select(0, rows);
      if (i == 0) {
        head_index.index_copy_(0, rows, t);
      } else {
        head_index.index_fill_(0, rows, shortlist_size + i - 1);
        Tensor logits = tail[size_t(i - 1)]->as<Sequential>()->forward(input.index_select(0, rows));
        Tensor lp = fw::log_softmax(logits, 1).gather(1, (t - low).unsqueeze(1)).squeeze(1);
        output = output.index_copy(0, rows, lp);
      }
      covered += rows.numel();
    }
    low = high;
  }
  FW_CHECK(covered == batch, "[AdaptiveLogSoftmaxWithLoss] Target values should be in [0, ", options.n_classes() - 1,
           "], but values in range [", target.min().item<int64_t>(), ", ", target.max().item<int64_t>(),
           "] were found.");
  Tensor head_lp = fw::log_softmax(head->forward(input), 1);
  output = output + head_lp.gather(1, head_index.unsqueeze(1)).squeeze(1);
  const double loss = (-output).mean().item<double>();
  return ASMoutput(batched ? output : output.squeeze(0), loss);
}

Tensor AdaptiveLogSoftmaxWithLossImpl::_get_full_log_prob(const Tensor& input, const Tensor& head_output) {
  Tensor head_lp = fw::log_softmax(head_output, 1);
  std::vector<Tensor> parts{head_lp.narrow(1, 0, shortlist_size)};
  for (int64_t i = 0; i < n_clusters; i++) {
    Tensor cluster_lp = fw::log_softmax(tail[size_t(i)]->as<Sequential>()->forward(input), 1);
    parts.push_back(cluster_lp + head_lp.narrow(1, shortlist_size + i, 1));
  }
  return fw::cat(parts, 1);
}

Tensor AdaptiveLogSoftmaxWithLossImpl::log_prob(const Tensor& input) {
  FW_CHECK(input.dim() == 2 && input.size(1) == options.in_features(), "[AdaptiveLogSoftmaxWithLoss] log_prob "
           "expects an input of size (N, ", options.in_features(), "), got ", input.sizes());
  return _get_full_log_prob(input, head->forward(input));
}

Tensor AdaptiveLogSoftmaxWithLossImpl::predict(const Tensor& input) {
  FW_CHECK(input.dim() == 2 && input.size(1) == options.in_features(), "[AdaptiveLogSoftmaxWithLoss] predict "
           "expects an input of size (N, ", options.in_features(), "), got ", input.sizes());
  Tensor head_output = head->forward(input);
  Tensor best = head_output.argmax(1);
  Tensor in_tail = best >= shortlist_size;
  if (!in_tail.any().item<bool>()) return best;
  if (in_tail.all().item<bool>()) return _get_full_log_prob(input, head_output).argmax(1);
  Tensor rows = in_tail.nonzero().flatten();
  Tensor lp = _get_full_log_prob(input.index_select(0, rows), head_output.index_select(0, rows));
  return best.index_copy(0, rows, lp.argmax(1));
}

}  // namespace fw::nn
