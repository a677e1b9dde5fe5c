// Loss functions of fw::nn::functional, composed from differentiable public ops (their gradients
// come from the ops' vjps). ctc_loss runs its alpha recursion as a chain of small tensor ops.
#include <cmath>
#include <limits>

#include "core/autocast.h"
#include "core/op.h"
#include "fw/autograd.h"
#include "fw/nn/functional.h"

namespace fw::nn::functional {
namespace {

template <class V>
std::string reduction_name(const V& r) {
  return mode_name(r);
}

Tensor reduce(const Tensor& l, const std::string& r) {
  if (r == "mean") return l.mean();
  if (r == "sum") return l.sum();
  return l;
}

// Shape (1, C, 1, ...) for broadcasting a per-class vector along dim `cdim` of an n-d input.
Tensor class_view(const Tensor& w, int64_t ndim, int64_t cdim) {
  std::vector<int64_t> s(size_t(ndim), 1);
  s[size_t(cdim)] = w.numel();
  return w.reshape(s);
}

void check_weight(const char* op, const Tensor& w, int64_t C) {
  if (!w.defined()) return;
  FW_CHECK(w.dim() == 1 && w.numel() == C, "[", op, "] weight tensor should be defined either for all ", C,
           " classes or no classes but got weight tensor of shape: ", w.sizes());
}

// Shape checks of nll_loss: input (C), (N, C) or (N, C, d1, ...); target (), (N) or (N, d1, ...).
void check_nll_shapes(const Tensor& x, const Tensor& t) {
  FW_CHECK(x.dim() >= 1, "[nll_loss] input tensor should be 1D or more, but got ", x.dim(), "D");
  FW_CHECK(t.dtype() == kLong, "[nll_loss] expected target of scalar type Long but found ", dtype_name(t.dtype()));
  if (x.dim() == 1) {
    FW_CHECK(t.dim() == 0, "[nll_loss] 0D target tensor expected for 1D input, but got ", t.dim(), "D");
    return;
  }
  bool ok = t.dim() == x.dim() - 1 && t.size(0) == x.size(0);
  for (int64_t d = 2; ok && d < x.dim(); d++) ok = t.size(d - 1) == x.size(d);
  FW_CHECK(ok, "[nll_loss] Expected input batch_size and target shape to match: input ", x.sizes(), ", target ",
           t.sizes());
}

// Per-element weighted nll with class-index targets; returns (losses, summed weights of kept targets).
std::pair<Tensor, Tensor> nll_elements(const Tensor& logp, const Tensor& target, const Tensor& weight, int64_t ignore) {
  check_nll_shapes(logp, target);
  int64_t cdim = logp.dim() == 1 ? 0 : 1, C = logp.size(cdim);
  check_weight("nll_loss", weight, C);
  Tensor t = fw::detail::check_targets(target, C, ignore);  // raises for out-of-range targets (in its kernel)
  Tensor keep = t.ne(ignore);
  Tensor cls = class_view(fw::arange(C, kLong), logp.dim(), cdim);
  Tensor mask = cls.eq(t.unsqueeze(cdim)).logical_and(keep.unsqueeze(cdim));
  Tensor sel = fw::where(mask, logp, 0.0);
  Tensor wmask = mask.to(logp.dtype());
  if (weight.defined()) {
    Tensor wc = class_view(weight.to(logp.dtype()), logp.dim(), cdim);
    sel = sel * wc;
    wmask = wmask * wc;
  }
  return {-sel.sum({cdim}), wmask.detach().sum()};
}

Tensor nll_reduce(const std::pair<Tensor, Tensor>& lw, const std::string& r) {
  if (r == "mean") return lw.first.sum() / lw.second;
  return reduce(lw.first, r);
}

Tensor cross_entropy_indices(const Tensor& logp, const Tensor& t, const CrossEntropyFuncOptions& o,
                             const std::string& r) {
  auto lw = nll_elements(logp, t, o.weight(), o.ignore_index());
  Tensor nll = nll_reduce(lw, r);
  double eps = o.label_smoothing();
  if (eps <= 0) return nll;
  int64_t cdim = logp.dim() == 1 ? 0 : 1, C = logp.size(cdim);
  Tensor lp = o.weight().defined() ? logp * class_view(o.weight().to(logp.dtype()), logp.dim(), cdim) : logp;
  Tensor smooth = -lp.sum({cdim});
  smooth = smooth.masked_fill(t.eq(o.ignore_index()), 0.0);
  // 'mean' divides by the summed weights of the kept targets (their count without weights), as nll does.
  smooth = r == "mean" ? smooth.sum() / lw.second : reduce(smooth, r);
  return nll * (1 - eps) + smooth * (eps / double(C));
}

Tensor cross_entropy_probs(const Tensor& logp, const Tensor& t, const CrossEntropyFuncOptions& o,
                           const std::string& r) {
  int64_t cdim = logp.dim() == 1 ? 0 : 1, C = logp.size(cdim);
  FW_CHECK(o.ignore_index() < 0, "[cross_entropy] ignore_index is not supported for floating point target");
  check_weight("cross_entropy", o.weight(), C);
  Tensor tgt = t;
  if (o.label_smoothing() > 0) tgt = t * (1 - o.label_smoothing()) + o.label_smoothing() / double(C);
  Tensor prod = logp * tgt;
  if (o.weight().defined()) prod = prod * class_view(o.weight().to(logp.dtype()), logp.dim(), cdim);
  Tensor l = -prod.sum({cdim});
  if (r == "mean") return logp.numel() == 0 ? l.sum() / 0.0 : l.sum() / double(logp.numel() / C);
  return reduce(l, r);
}

void check_same_size(const char* op, const Tensor& x, const Tensor& t) {
  FW_CHECK(x.sizes().equals(t.sizes()), "[", op, "] Using a target size (", t.sizes(),
           ") that is different to the input size (", x.sizes(), ") is deprecated. Please ensure they have the same size.");
}

}  // namespace

Tensor cross_entropy(const Tensor& input, const Tensor& target, const CrossEntropyFuncOptions& o) {
  if (FW_UNLIKELY(fw::detail::tls().autocast))  // autocast's float32 list
    return fw::detail::autocast_float32([](auto&&... a) { return cross_entropy(a...); }, input, target, o);
  FW_CHECK(input.dim() >= 1, "[cross_entropy] input tensor should be 1D or more, but got ", input.dim(), "D");
  FW_CHECK(o.label_smoothing() >= 0 && o.label_smoothing() <= 1,
           "[cross_entropy] label_smoothing must be between 0.0 and 1.0. Got: ", o.label_smoothing());
  int64_t cdim = input.dim() == 1 ? 0 : 1;
  Tensor logp = fw::log_softmax(input, cdim);
  std::string r = reduction_name(o.reduction());
  if (target.is_floating_point()) {
    FW_CHECK(target.sizes().equals(input.sizes()), "[cross_entropy] probability targets must have the input's shape ",
             input.sizes(), ", but got ", target.sizes());
    return cross_entropy_probs(logp, target, o, r);
  }
  return cross_entropy_indices(logp, target, o, r);
}

Tensor nll_loss(const Tensor& input, const Tensor& target, const NLLLossFuncOptions& o) {
  if (FW_UNLIKELY(fw::detail::tls().autocast))  // autocast's float32 list
    return fw::detail::autocast_float32([](auto&&... a) { return nll_loss(a...); }, input, target, o);
  return nll_reduce(nll_elements(input, target, o.weight(), o.ignore_index()), reduction_name(o.reduction()));
}

Tensor mse_loss(const Tensor& input, const Tensor& target, const MSELossFuncOptions& o) {
  if (FW_UNLIKELY(fw::detail::tls().autocast))  // autocast's float32 list
    return fw::detail::autocast_float32([](auto&&... a) { return mse_loss(a...); }, input, target, o);
  return reduce((input - target).square(), reduction_name(o.reduction()));
}

Tensor l1_loss(const Tensor& input, const Tensor& target, const L1LossFuncOptions& o) {
  if (FW_UNLIKELY(fw::detail::tls().autocast))  // autocast's float32 list
    return fw::detail::autocast_float32([](auto&&... a) { return l1_loss(a...); }, input, target, o);
  return reduce((input - target).abs(), reduction_name(o.reduction()));
}

Tensor smooth_l1_loss(const Tensor& input, const Tensor& target, const SmoothL1LossFuncOptions& o,
                      std::optional<double> beta_opt) {
  if (FW_UNLIKELY(fw::detail::tls().autocast))  // autocast's float32 list
    return fw::detail::autocast_float32([](auto&&... a) { return smooth_l1_loss(a...); }, input, target, o, beta_opt);
  double beta = beta_opt ? *beta_opt : o.beta();
  FW_CHECK(beta >= 0, "[smooth_l1_loss] smooth_l1_loss does not support negative values for beta.");
  Tensor d = input - target, z = d.abs();
  if (beta == 0) return reduce(z, reduction_name(o.reduction()));
  Tensor l = fw::where(z.lt(beta), d.square() * (0.5 / beta), z - 0.5 * beta);
  return reduce(l, reduction_name(o.reduction()));
}

Tensor huber_loss(const Tensor& input, const Tensor& target, const HuberLossFuncOptions& o) {
  if (FW_UNLIKELY(fw::detail::tls().autocast))  // autocast's float32 list
    return fw::detail::autocast_float32([](auto&&... a) { return huber_loss(a...); }, input, target, o);
  double delta = o.delta();
  FW_CHECK(delta > 0, "[huber_loss] huber_loss does not support non-positive values for delta.");
  Tensor d = input - target, z = d.abs();
  Tensor l = fw::where(z.lt(delta), d.square() * 0.5, (z - 0.5 * delta) * delta);
  return reduce(l, reduction_name(o.reduction()));
}

Tensor binary_cross_entropy(const Tensor& input, const Tensor& target, const BinaryCrossEntropyFuncOptions& o) {
  if (FW_UNLIKELY(fw::detail::tls().autocast))  // autocast's float32 list
    return fw::detail::autocast_float32([](auto&&... a) { return binary_cross_entropy(a...); }, input, target, o);
  check_same_size("binary_cross_entropy", input, target);
  if (input.numel() > 0) {
    NoGradGuard g;
    FW_CHECK(input.ge(0).logical_and(input.le(1)).all().item<bool>(),
             "[binary_cross_entropy] all elements of input should be between 0 and 1");
  }
  Tensor l = -(target * input.log().clamp_min(-100) + (1 - target) * (1 - input).log().clamp_min(-100));
  if (o.weight().defined()) l = l * o.weight();
  return reduce(l, reduction_name(o.reduction()));
}

Tensor binary_cross_entropy_with_logits(const Tensor& input, const Tensor& target,
                                        const BinaryCrossEntropyWithLogitsFuncOptions& o) {
  if (FW_UNLIKELY(fw::detail::tls().autocast))  // autocast's float32 list
    return fw::detail::autocast_float32([](auto&&... a) { return binary_cross_entropy_with_logits(a...); }, input, target, o);
  check_same_size("binary_cross_entropy_with_logits", input, target);
  // -log(sigmoid(x)) = softplus(-x); the positive term carries pos_weight.
  Tensor lw = o.pos_weight().defined() ? (o.pos_weight() - 1) * target + 1 : Tensor();
  Tensor pos = -fw::log_sigmoid(input);
  Tensor l = (1 - target) * input + (lw.defined() ? lw * pos : pos);
  if (o.weight().defined()) l = l * o.weight();
  return reduce(l, reduction_name(o.reduction()));
}

Tensor kl_div(const Tensor& input, const Tensor& target, const KLDivFuncOptions& o) {
  if (FW_UNLIKELY(fw::detail::tls().autocast))  // autocast's float32 list
    return fw::detail::autocast_float32([](auto&&... a) { return kl_div(a...); }, input, target, o);
  Tensor l = o.log_target() ? target.exp() * (target - input) : fw::xlogy(target, target) - target * input;
  std::string r = reduction_name(o.reduction());
  if (r == "batchmean") return input.dim() == 0 ? l.sum() : l.sum() / double(input.size(0));
  return reduce(l, r);
}

}  // namespace fw::nn::functional
