// gradcheck / gradgradcheck: analytical Jacobians (one backward per output element) against
// central differences in float64, with PyTorch's default eps/atol/rtol.
#include <sstream>

#include "autograd/node.h"

namespace fw::autograd {

namespace {

using fn_t = std::function<variable_list(const variable_list&)>;

std::vector<size_t> differentiable_inputs(const variable_list& inputs, const char* op) {
  std::vector<size_t> idx;
  for (size_t i = 0; i < inputs.size(); i++) {
    if (!inputs[i].defined() || !inputs[i].requires_grad()) continue;
    FW_CHECK(inputs[i].dtype() == kDouble, "[", op, "] input ", i, " has dtype ", dtype_str(inputs[i].dtype()),
             "; gradcheck needs float64 inputs for its finite differences to be meaningful");
    idx.push_back(i);
  }
  FW_CHECK(!idx.empty(), "[", op, "] no input requires grad");
  return idx;
}

variable_list outputs_of(const fn_t& fn, const variable_list& inputs) {
  variable_list outs = fn(inputs);
  variable_list kept;
  for (auto& o : outs)
    if (o.defined() && o.is_floating_point()) kept.push_back(o);
  return kept;
}

// Outputs as values: fn may return views of (or the very) inputs that the next perturbation
// changes in place.
variable_list output_values(const fn_t& fn, const variable_list& inputs) {
  variable_list outs = outputs_of(fn, inputs);
  for (auto& o : outs) o = o.detach().clone();
  return outs;
}

// J[o][i] has shape [numel(input i), numel(output o)].
using Jacobians = std::vector<std::vector<Tensor>>;

// fn runs with grad mode as the caller has it: gradgradcheck's fn itself calls autograd::grad.
Jacobians numerical(const fn_t& fn, const variable_list& inputs, const std::vector<size_t>& diff, double eps) {
  variable_list base = output_values(fn, inputs);
  Jacobians J(base.size(), std::vector<Tensor>(diff.size()));
  for (size_t k = 0; k < diff.size(); k++) {
    Tensor x = inputs[diff[k]].detach();
    double* data = x.data_ptr<double>();
    // Element e in logical (row-major) order, wherever the input's strides put it.
    auto element = [&](int64_t e) -> double& {
      int64_t off = 0;
      for (int64_t d = x.dim() - 1; d >= 0; d--) {
        off += (e % x.size(d)) * x.stride(d);
        e /= x.size(d);
      }
      return data[off];
    };
    for (size_t o = 0; o < base.size(); o++) J[o][k] = zeros({x.numel(), base[o].numel()}, kDouble);
    for (int64_t e = 0; e < x.numel(); e++) {
      double& v = element(e);
      double orig = v;
      v = orig + eps;
      variable_list plus = output_values(fn, inputs);
      v = orig - eps;
      variable_list minus = output_values(fn, inputs);
      v = orig;
      for (size_t o = 0; o < base.size(); o++)
        J[o][k][e].copy_(((plus[o].to(kDouble) - minus[o].to(kDouble)) / (2 * eps)).reshape({-1}));
    }
  }
  return J;
}

Jacobians analytical(const fn_t& fn, const variable_list& inputs, const std::vector<size_t>& diff) {
  variable_list outs = outputs_of(fn, inputs);
  variable_list xs;
  for (size_t i : diff) xs.push_back(inputs[i]);
  Jacobians J(outs.size(), std::vector<Tensor>(diff.size()));
  for (size_t o = 0; o < outs.size(); o++) {
    for (size_t k = 0; k < diff.size(); k++) J[o][k] = zeros({xs[k].numel(), outs[o].numel()}, kDouble);
    if (!outs[o].requires_grad()) continue;
    for (int64_t e = 0; e < outs[o].numel(); e++) {
      Tensor go = zeros_like(outs[o], MemoryFormat::Contiguous);
      go.view({-1})[e].fill_(1.0);
      variable_list g = grad({outs[o]}, xs, {go}, /*retain_graph=*/true, false, /*allow_unused=*/true);
      for (size_t k = 0; k < diff.size(); k++)
        if (g[k].defined()) J[o][k].select(1, e).copy_(g[k].to(kDouble).reshape({-1}));
    }
  }
  return J;
}

bool compare(const Jacobians& num, const Jacobians& ana, const std::vector<size_t>& diff, double atol, double rtol,
             bool raise, const char* op) {
  for (size_t o = 0; o < num.size(); o++)
    for (size_t k = 0; k < diff.size(); k++) {
      Tensor n = num[o][k], a = ana[o][k];
      Tensor bad = (a - n).abs() > (n.abs() * rtol + atol);
      if (bad.sum().item<int64_t>() == 0) continue;
      if (!raise) return false;
      std::ostringstream os;
      os << "[" << op << "] Jacobian mismatch for output " << o << " with respect to input " << diff[k]
         << ",\nnumerical:" << n << "\nanalytical:" << a;
      throw Error(os.str());
    }
  return true;
}

}  // namespace

bool gradcheck(const fn_t& fn, const variable_list& inputs, double eps, double atol, double rtol, bool raise) {
  auto diff = differentiable_inputs(inputs, "gradcheck");
  Jacobians num = numerical(fn, inputs, diff, eps);
  Jacobians ana = analytical(fn, inputs, diff);
  return compare(num, ana, diff, atol, rtol, raise, "gradcheck");
}

bool gradgradcheck(const fn_t& fn, const variable_list& inputs, double eps, double atol, double rtol, bool raise) {
  auto diff = differentiable_inputs(inputs, "gradgradcheck");
  variable_list outs = outputs_of(fn, inputs);
  size_t n_in = inputs.size();
  // Random (fixed-seed) output gradients, themselves differentiable inputs of the vjp.
  variable_list all = inputs;
  for (auto& o : outs) {
    Tensor g = randn(o.sizes(), kDouble).detach();
    all.push_back(g.requires_grad_(true));
  }
  fn_t vjp = [&fn, n_in, diff](const variable_list& args) {
    variable_list ins(args.begin(), args.begin() + n_in);
    variable_list gos(args.begin() + n_in, args.end());
    variable_list o = outputs_of(fn, ins);
    variable_list xs;
    for (size_t i : diff) xs.push_back(ins[i]);
    variable_list gs = grad(o, xs, gos, true, /*create_graph=*/true, /*allow_unused=*/true);
    variable_list res;
    for (auto& g : gs)
      if (g.defined()) res.push_back(g);
    return res;
  };
  return gradcheck(vjp, all, eps, atol, rtol, raise);
}

}  // namespace fw::autograd
