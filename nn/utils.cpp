// fw::nn::utils: gradient clipping and parameter <-> vector conversion.
#include <cmath>
#include <limits>

#include "fw/ops.h"
#include "fw/utils.h"

namespace fw::nn::utils {

static std::vector<Tensor> defined_grads(const std::vector<Tensor>& parameters) {
  std::vector<Tensor> grads;
  for (const auto& p : parameters) {
    Tensor g = p.grad();
    if (g.defined()) grads.push_back(g);
  }
  return grads;
}

double clip_grad_norm_(const std::vector<Tensor>& parameters, double max_norm, double norm_type,
                       bool error_if_nonfinite) {
  NoGradGuard no_grad;
  auto grads = defined_grads(parameters);
  if (grads.empty()) return 0.0;
  ScalarType dtype = grads.front().scalar_type();
  std::vector<Tensor> norms;
  norms.reserve(grads.size());
  bool is_inf = std::isinf(norm_type) && norm_type > 0;
  for (const auto& g : grads) {
    Tensor n = is_inf ? g.abs().max() : fw::norm(g, norm_type);
    norms.push_back(n.to(dtype));
  }
  Tensor stacked = fw::stack(norms);
  Tensor total = is_inf ? stacked.max() : fw::norm(stacked, norm_type);
  double total_norm = total.item<double>();
  FW_CHECK(!error_if_nonfinite || std::isfinite(total_norm), "[clip_grad_norm_] The total norm of order ",
           norm_type, " for gradients from `parameters` is non-finite, so it cannot be clipped. ",
           "To disable this error and scale the gradients by the non-finite norm anyway, set ",
           "`error_if_nonfinite=false`");
  // Note [clip coefficient]: as PyTorch, the coefficient is computed in the gradients' dtype and
  // applied unconditionally (clamped to 1), so a NaN norm propagates into the gradients.
  Tensor coef = (max_norm / (total + 1e-6)).clamp_max(1.0);
  for (auto& g : grads) g.mul_(coef.to(g.scalar_type()));
  return total_norm;
}

double clip_grad_norm_(const Tensor& parameter, double max_norm, double norm_type,
                       bool error_if_nonfinite) {
  return clip_grad_norm_(std::vector<Tensor>{parameter}, max_norm, norm_type, error_if_nonfinite);
}

void clip_grad_value_(const std::vector<Tensor>& parameters, double clip_value) {
  NoGradGuard no_grad;
  for (auto& g : defined_grads(parameters)) g.clamp_(-clip_value, clip_value);
}

void clip_grad_value_(const Tensor& parameter, double clip_value) {
  clip_grad_value_(std::vector<Tensor>{parameter}, clip_value);
}

Tensor parameters_to_vector(const std::vector<Tensor>& parameters) {
  FW_CHECK(!parameters.empty(), "[parameters_to_vector] expected at least one parameter");
  std::vector<Tensor> flat;
  flat.reserve(parameters.size());
  for (const auto& p : parameters) flat.push_back(p.reshape({-1}));
  return fw::cat(flat);
}

void vector_to_parameters(const Tensor& vec, const std::vector<Tensor>& parameters) {
  FW_CHECK(vec.dim() == 1, "[vector_to_parameters] expected a 1-D vector, got ", vec.dim(),
           " dims");
  NoGradGuard no_grad;
  int64_t offset = 0;
  for (const auto& p : parameters) {
    int64_t n = p.numel();
    FW_CHECK(offset + n <= vec.numel(), "[vector_to_parameters] vector of size ", vec.numel(),
             " is too short for the parameters (needs at least ", offset + n, ")");
    Tensor dst = p;
    dst.copy_(vec.narrow(0, offset, n).view(p.sizes()));
    offset += n;
  }
}

}  // namespace fw::nn::utils
