// Margin, embedding and likelihood losses of fw::nn::functional (margin_ranking_loss, ...,
// gaussian_nll_loss). Each is composed from differentiable public ops following ATen's (or, where
// ATen has none, torch.nn.functional's) formula, so first and higher-order gradients come from the
// ops' vjps.
#include <cmath>
#include <sstream>

#include "core/autocast.h"
#include "fw/nn/functional.h"

namespace fw::nn::functional {
namespace {

Tensor reduce(const Tensor& l, const loss_reduction_t& r) {
  if (std::holds_alternative<enumtype::kMean>(r)) return l.mean();
  if (std::holds_alternative<enumtype::kSum>(r)) return l.sum();
  return l;
}

std::string dims_str(IntArrayRef s) {
  std::ostringstream os;
  os << s;
  return os.str();
}

void check_defined(const char* op, std::initializer_list<const Tensor*> ts) {
  for (const Tensor* t : ts) FW_CHECK(t->defined(), "[", op, "] inputs must be defined tensors");
}

// Leaves NoGradGuard's scope before returning: reads one boolean out of a tensor.
bool any_true(const Tensor& cond) {
  NoGradGuard g;
  return cond.numel() > 0 && cond.any().item<bool>();
}

// Input (C) or (N, C) (or a 0-d input, one class) of the multi-class margin losses; returns (N, C).
Tensor as_frames(const char* op, const Tensor& x) {
  FW_CHECK((x.dim() == 2 && x.size(1) != 0) || (x.dim() == 1 && x.size(0) != 0) || x.dim() == 0, "[", op,
           "] Expected non-empty vector or matrix with optional 0-dim batch size, but got: ", dims_str(x.sizes()));
  if (x.dim() == 2) return x;
  return x.reshape({1, x.numel()});
}

}  // namespace

Tensor margin_ranking_loss(const Tensor& input1, const Tensor& input2, const Tensor& target,
                           const MarginRankingLossFuncOptions& o) {
  if (FW_UNLIKELY(fw::detail::tls().autocast))  // autocast's float32 list
    return fw::detail::autocast_float32([](auto&&... a) { return margin_ranking_loss(a...); }, input1, input2, target, o);
  check_defined("margin_ranking_loss", {&input1, &input2, &target});
  FW_CHECK(input1.dim() == input2.dim() && input1.dim() == target.dim(),
           "[margin_ranking_loss] All input tensors should have same dimension but got sizes: input1: ",
           dims_str(input1.sizes()), ", input2: ", dims_str(input2.sizes()), ", target: ", dims_str(target.sizes()));
  return reduce((-target * (input1 - input2) + o.margin()).clamp_min(0), o.reduction());
}

Tensor hinge_embedding_loss(const Tensor& input, const Tensor& target, const HingeEmbeddingLossFuncOptions& o) {
  if (FW_UNLIKELY(fw::detail::tls().autocast))  // autocast's float32 list
    return fw::detail::autocast_float32([](auto&&... a) { return hinge_embedding_loss(a...); }, input, target, o);
  check_defined("hinge_embedding_loss", {&input, &target});
  Tensor margin_part = fw::where(target.ne(1), (o.margin() - input).clamp_min(0), 0.0);
  Tensor self_part = fw::where(target.ne(-1), input, 0.0);
  return reduce(margin_part + self_part, o.reduction());
}

Tensor soft_margin_loss(const Tensor& input, const Tensor& target, const SoftMarginLossFuncOptions& o) {
  if (FW_UNLIKELY(fw::detail::tls().autocast))  // autocast's float32 list
    return fw::detail::autocast_float32([](auto&&... a) { return soft_margin_loss(a...); }, input, target, o);
  check_defined("soft_margin_loss", {&input, &target});
  return reduce(fw::log1p(fw::exp(-target * input)), o.reduction());
}

Tensor multilabel_margin_loss(const Tensor& input, const Tensor& target, const MultilabelMarginLossFuncOptions& o) {
  if (FW_UNLIKELY(fw::detail::tls().autocast))  // autocast's float32 list
    return fw::detail::autocast_float32([](auto&&... a) { return multilabel_margin_loss(a...); }, input, target, o);
  const char* op = "multilabel_margin_loss";
  check_defined(op, {&input, &target});
  Tensor x = as_frames(op, input);
  const int64_t N = x.size(0), C = x.size(1);
  bool shape_ok = input.dim() <= 1 ? target.dim() <= 1 && target.numel() == C : target.sizes().equals(input.sizes());
  FW_CHECK(shape_ok, "[", op, "] inconsistent target size: ", dims_str(target.sizes()), " for input of size: ",
           dims_str(input.sizes()));
  FW_CHECK(target.dtype() == kLong, "[", op, "] expected target of scalar type Long but found ",
           dtype_name(target.dtype()));
  Tensor t = target.reshape({N, C});
  // Targets are the entries before the first negative one; later entries are ignored.
  Tensor valid = t.ge(0).to(kLong).cumprod(1).to(kBool);
  FW_CHECK(!any_true(valid.logical_and(t.ge(C))), "[", op, "] target index is out of range: targets must be in [0, ",
           C, ") before the first -1, got ", t.max().item<int64_t>());
  Tensor tc = fw::where(valid, t, int64_t(0));
  Tensor classes = fw::arange(C, kLong).view({1, 1, C});
  Tensor hit = tc.unsqueeze(2).eq(classes).logical_and(valid.unsqueeze(2));  // (N, j, i): target j is class i
  Tensor is_target = hit.any(1);                                                // (N, i)
  Tensor x_target = x.gather(1, tc);                                            // (N, j)
  Tensor terms = (1 - (x_target.unsqueeze(2) - x.unsqueeze(1))).clamp_min(0);  // (N, j, i)
  Tensor keep = valid.unsqueeze(2).logical_and(is_target.logical_not().unsqueeze(1));
  Tensor l = fw::where(keep, terms, 0.0).sum({1, 2}) / double(C);
  if (input.dim() <= 1) l = l.reshape({});
  return reduce(l, o.reduction());
}

Tensor multilabel_soft_margin_loss(const Tensor& input, const Tensor& target,
                                   const MultilabelSoftMarginLossFuncOptions& o) {
  check_defined("multilabel_soft_margin_loss", {&input, &target});
  FW_CHECK(input.dim() >= 1, "[multilabel_soft_margin_loss] input must have a class dim, got a 0-d input");
  Tensor l = -(target * fw::log_sigmoid(input) + (1 - target) * fw::log_sigmoid(-input));
  if (o.weight().defined()) l = l * o.weight();
  const int64_t cdim = input.dim() - 1;
  return reduce(l.sum({cdim}) / double(input.size(cdim)), o.reduction());
}

Tensor multi_margin_loss(const Tensor& input, const Tensor& target, const MultiMarginLossFuncOptions& o) {
  const char* op = "multi_margin_loss";
  check_defined(op, {&input, &target});
  FW_CHECK(o.p() == 1 || o.p() == 2, "[", op, "] only p == 1 and p == 2 supported, got p = ", o.p());
  Tensor x = as_frames(op, input);
  const int64_t N = x.size(0), C = x.size(1);
  FW_CHECK(target.dim() <= 1 && target.numel() == N, "[", op, "] inconsistent target size, expected ", N,
           " values but got ", dims_str(target.sizes()), " for input of size ", dims_str(input.sizes()));
  FW_CHECK(target.dtype() == kLong, "[", op, "] expected target of scalar type Long but found ",
           dtype_name(target.dtype()));
  const Tensor& w = o.weight();
  FW_CHECK(!w.defined() || (w.dim() <= 1 && w.numel() == C), "[", op, "] inconsistent weight size, expected ", C,
           " but got ", w.defined() ? dims_str(w.sizes()) : "");
  Tensor t = target.reshape({N, 1});
  FW_CHECK(!any_true(t.lt(0).logical_or(t.ge(C))), "[", op, "] target out of range: targets must be in [0, ", C,
           "), got ", dims_str(target.sizes()), " values between ", t.min().item<int64_t>(), " and ",
           t.max().item<int64_t>());
  Tensor z = (o.margin() - x.gather(1, t) + x).clamp_min(0);
  if (o.p() == 2) z = z.square();
  if (w.defined()) z = z * w.reshape({C}).to(x.dtype()).index_select(0, t.reshape({N})).unsqueeze(1);
  Tensor l = fw::where(fw::arange(C, kLong).view({1, C}).ne(t), z, 0.0).sum({1}) / double(C);
  if (target.dim() == 0) l = l.reshape({});
  return reduce(l, o.reduction());
}

Tensor cosine_embedding_loss(const Tensor& input1, const Tensor& input2, const Tensor& target,
                             const CosineEmbeddingLossFuncOptions& o) {
  if (FW_UNLIKELY(fw::detail::tls().autocast))  // autocast's float32 list
    return fw::detail::autocast_float32([](auto&&... a) { return cosine_embedding_loss(a...); }, input1, input2, target, o);
  const char* op = "cosine_embedding_loss";
  check_defined(op, {&input1, &input2, &target});
  const int64_t td = target.dim();
  FW_CHECK(td <= 1, "[", op, "] 0D or 1D target tensor expected, multi-target not supported, got target of size ",
           dims_str(target.sizes()));
  FW_CHECK(input1.dim() == td + 1 && input2.dim() == td + 1, "[", op, "] ", td, "D target tensor expects ", td + 1,
           "D input tensors, but found inputs with sizes ", dims_str(input1.sizes()), " and ", dims_str(input2.sizes()));
  const double kEps = 1e-12;  // ATen's EPSILON
  Tensor prod = (input1 * input2).sum({td});
  Tensor mag1 = (input1 * input1).sum({td}) + kEps;
  Tensor mag2 = (input2 * input2).sum({td}) + kEps;
  Tensor cos = prod / (mag1 * mag2).sqrt();
  Tensor pos = fw::where(target.eq(1), 1 - cos, 0.0);
  Tensor neg = fw::where(target.eq(-1), (cos - o.margin()).clamp_min(0), 0.0);
  return reduce(pos + neg, o.reduction());
}

namespace {

void check_triplet_dims(const char* op, const Tensor& a, const Tensor& p, const Tensor& n) {
  check_defined(op, {&a, &p, &n});
  FW_CHECK(a.dim() == p.dim() && p.dim() == n.dim(), "[", op,
           "] The anchor, positive, and negative tensors are expected to have the same number of dimensions, but "
           "got: anchor ", a.dim(), "D, positive ", p.dim(), "D, and negative ", n.dim(), "D inputs");
}

}  // namespace

Tensor triplet_margin_loss(const Tensor& anchor, const Tensor& positive, const Tensor& negative,
                           const TripletMarginLossFuncOptions& o) {
  if (FW_UNLIKELY(fw::detail::tls().autocast))  // autocast's float32 list
    return fw::detail::autocast_float32([](auto&&... a) { return triplet_margin_loss(a...); }, anchor, positive, negative, o);
  check_triplet_dims("triplet_margin_loss", anchor, positive, negative);
  auto dist = PairwiseDistanceFuncOptions().p(o.p()).eps(o.eps());
  Tensor d_pos = pairwise_distance(anchor, positive, dist);
  Tensor d_neg = pairwise_distance(anchor, negative, dist);
  if (o.swap()) d_neg = fw::minimum(d_neg, pairwise_distance(positive, negative, dist));
  return reduce((o.margin() + d_pos - d_neg).clamp_min(0), o.reduction());
}

Tensor triplet_margin_with_distance_loss(const Tensor& anchor, const Tensor& positive, const Tensor& negative,
                                         const TripletMarginWithDistanceLossFuncOptions& o) {
  check_triplet_dims("triplet_margin_with_distance_loss", anchor, positive, negative);
  auto dist = [&](const Tensor& a, const Tensor& b) {
    Tensor d = o.distance_function() ? (*o.distance_function())(a, b) : pairwise_distance(a, b);
    FW_CHECK(d.defined(), "[triplet_margin_with_distance_loss] distance_function returned an undefined tensor");
    return d;
  };
  Tensor d_pos = dist(anchor, positive), d_neg = dist(anchor, negative);
  if (o.swap()) d_neg = fw::minimum(d_neg, dist(positive, negative));
  return reduce((d_pos - d_neg + o.margin()).clamp_min(0), o.reduction());
}

Tensor poisson_nll_loss(const Tensor& input, const Tensor& target, const PoissonNLLLossFuncOptions& o) {
  if (FW_UNLIKELY(fw::detail::tls().autocast))  // autocast's float32 list
    return fw::detail::autocast_float32([](auto&&... a) { return poisson_nll_loss(a...); }, input, target, o);
  check_defined("poisson_nll_loss", {&input, &target});
  Tensor l = o.log_input() ? fw::exp(input) - target * input : input - target * fw::log(input + o.eps());
  if (o.full()) {
    Tensor stirling = target * fw::log(target) - target + 0.5 * fw::log(2 * M_PI * target);
    l = l + stirling.masked_fill(target.le(1), 0.0);
  }
  return reduce(l, o.reduction());
}

Tensor gaussian_nll_loss(const Tensor& input, const Tensor& target, const Tensor& var,
                         const GaussianNLLLossFuncOptions& o) {
  const char* op = "gaussian_nll_loss";
  check_defined(op, {&input, &target, &var});
  Tensor v = var;
  if (!var.sizes().equals(input.sizes())) {
    // Homoscedastic cases: var is input's shape without the last dim, or with the last dim 1.
    IntArrayRef in = input.sizes(), vs = var.sizes();
    bool ok = input.dim() >= 1;
    if (ok && in.slice(0, in.size() - 1).equals(vs)) {
      v = var.unsqueeze(-1);
    } else {
      ok = ok && var.dim() == input.dim() && var.size(-1) == 1 && in.slice(0, in.size() - 1).equals(vs.slice(0, vs.size() - 1));
      FW_CHECK(ok, "[", op, "] var is of incorrect size: expected ", dims_str(in), ", or that with the last dim 1 or "
               "dropped, but got ", dims_str(vs));
    }
  }
  FW_CHECK(!any_true(var.lt(0)), "[", op, "] var has negative entry/entries");
  // Clamped in value only: the gradient reaches var unchanged, as PyTorch's in-place clamp under no_grad.
  Tensor vc = v + (v.clamp_min(o.eps()) - v).detach();
  Tensor l = 0.5 * (fw::log(vc) + (input - target).square() / vc);
  if (o.full()) l = l + 0.5 * std::log(2 * M_PI);
  return reduce(l, o.reduction());
}

}  // namespace fw::nn::functional
