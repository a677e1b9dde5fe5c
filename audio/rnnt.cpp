// RNN-T loss (fw/audio/rnnt.h): per sequence, the forward (alpha) and backward (beta) log-space
// recursions over the (T, U + 1) lattice of the log-softmax of the joiner output, in double; the
// gradient with respect to the logits is formed in the same pass, as torchaudio's fused kernel.
#include "fw/audio/rnnt.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "core/parallel.h"
#include "fw/autograd_function.h"

namespace fw::audio::functional {

namespace {

constexpr double kNegInf = -std::numeric_limits<double>::infinity();

double log_add(double a, double b) {
  if (a == kNegInf) return b;
  if (b == kNegInf) return a;
  const double m = std::max(a, b);
  return m + std::log1p(std::exp(-std::abs(a - b)));
}

struct Problem {
  int64_t B, maxT, maxU1, V, blank;
  double clamp;
  std::vector<int64_t> T, U;      // per sequence
  std::vector<int64_t> targets;   // (B, maxU1 - 1)
};

// Cost of sequence b; its logit gradient into grad (same layout as logits) when grad is non-null.
template <class S>
double sequence(const Problem& p, int64_t b, const S* logits, S* grad) {
  const int64_t T = p.T[size_t(b)], U = p.U[size_t(b)], V = p.V, U1 = U + 1;
  const int64_t* y = p.targets.data() + b * (p.maxU1 - 1);
  const S* x = logits + b * p.maxT * p.maxU1 * V;
  auto at = [&](int64_t t, int64_t u) { return x + (t * p.maxU1 + u) * V; };
  std::vector<double> lse(size_t(T * U1)), lp_blank(size_t(T * U1)), lp_label(size_t(T * U1), kNegInf);
  for (int64_t t = 0; t < T; t++)
    for (int64_t u = 0; u < U1; u++) {
      const S* row = at(t, u);
      double m = kNegInf;
      for (int64_t k = 0; k < V; k++) m = std::max(m, double(row[k]));
      double s = 0;
      for (int64_t k = 0; k < V; k++) s += std::exp(double(row[k]) - m);
      const double l = m + std::log(s);
      const size_t i = size_t(t * U1 + u);
      lse[i] = l;
      lp_blank[i] = double(row[p.blank]) - l;
      if (u < U) lp_label[i] = double(row[y[u]]) - l;
    }
  std::vector<double> alpha(size_t(T * U1)), beta(size_t(T * U1));
  auto A = [&](int64_t t, int64_t u) -> double& { return alpha[size_t(t * U1 + u)]; };
  auto Bt = [&](int64_t t, int64_t u) -> double& { return beta[size_t(t * U1 + u)]; };
  auto idx = [&](int64_t t, int64_t u) { return size_t(t * U1 + u); };
  for (int64_t t = 0; t < T; t++)
    for (int64_t u = 0; u < U1; u++) {
      if (t == 0 && u == 0) {
        A(0, 0) = 0;
        continue;
      }
      double v = kNegInf;
      if (t > 0) v = A(t - 1, u) + lp_blank[idx(t - 1, u)];
      if (u > 0) v = log_add(v, A(t, u - 1) + lp_label[idx(t, u - 1)]);
      A(t, u) = v;
    }
  for (int64_t t = T - 1; t >= 0; t--)
    for (int64_t u = U; u >= 0; u--) {
      if (t == T - 1 && u == U) {
        Bt(t, u) = lp_blank[idx(t, u)];
        continue;
      }
      double v = kNegInf;
      if (t + 1 < T) v = Bt(t + 1, u) + lp_blank[idx(t, u)];
      if (u < U) v = log_add(v, Bt(t, u + 1) + lp_label[idx(t, u)]);
      Bt(t, u) = v;
    }
  const double ll = Bt(0, 0);
  if (grad != nullptr) {
    S* gx = grad + b * p.maxT * p.maxU1 * V;
    for (int64_t t = 0; t < T; t++)
      for (int64_t u = 0; u < U1; u++) {
        const size_t i = idx(t, u);
        const S* row = at(t, u);
        S* g = gx + (t * p.maxU1 + u) * V;
        const double occ = A(t, u) + Bt(t, u) - ll;
        const double next_t = t + 1 < T ? Bt(t + 1, u) : (u == U ? 0.0 : kNegInf);
        for (int64_t k = 0; k < V; k++) {
          double v = std::exp(occ + double(row[k]) - lse[i]);
          if (k == p.blank) v -= std::exp(A(t, u) + lp_blank[i] + next_t - ll);
          if (u < U && k == y[u]) v -= std::exp(A(t, u) + lp_label[i] + Bt(t, u + 1) - ll);
          if (p.clamp > 0) v = std::min(std::max(v, -p.clamp), p.clamp);
          g[k] = S(v);
        }
      }
  }
  return -ll;
}

std::vector<int64_t> host_ints(const Tensor& t) {
  Tensor c = t.detach().to(Device(kCPU), kLong).contiguous();
  return std::vector<int64_t>(c.data_ptr<int64_t>(), c.data_ptr<int64_t>() + c.numel());
}

struct RnntFn : autograd::Function<RnntFn> {
  static autograd::variable_list forward(autograd::AutogradContext* ctx, const Tensor& logits, const Problem& p) {
    Tensor x = logits.detach().to(Device(kCPU)).contiguous();
    const bool want_grad = ctx->needs_input_grad(0);
    Tensor grad = want_grad ? fw::zeros(x.sizes(), x.options()) : Tensor();
    Tensor costs = fw::empty({p.B}, x.options());
    auto run = [&](auto tag) {
      using S = decltype(tag);
      const S* xp = x.data_ptr<S>();
      S* gp = want_grad ? grad.data_ptr<S>() : nullptr;
      S* cp = costs.data_ptr<S>();
      fw::parallel_for(0, p.B, 1, [&](int64_t b0, int64_t b1) {
        for (int64_t b = b0; b < b1; b++) cp[b] = S(sequence<S>(p, b, xp, gp));
      });
    };
    if (x.dtype() == kFloat)
      run(float());
    else
      run(double());
    if (want_grad) ctx->saved_data["grad"] = grad.to(logits.device());
    return {costs.to(logits.device())};
  }
  static autograd::variable_list backward(autograd::AutogradContext* ctx, autograd::variable_list g) {
    Tensor grad = ctx->saved_data["grad"].toTensor();
    return {grad * g[0].reshape({-1, 1, 1, 1}), Tensor()};
  }
};

}  // namespace

Tensor rnnt_loss(const Tensor& logits, const Tensor& targets, const Tensor& logit_lengths, const Tensor& target_lengths,
                 int64_t blank, double clamp, const std::string& reduction) {
  const char* op = "[audio::rnnt_loss]";
  FW_CHECK(reduction == "none" || reduction == "mean" || reduction == "sum", op,
           " reduction should be one of \"none\", \"mean\", or \"sum\", got \"", reduction, "\"");
  FW_CHECK(logits.defined() && targets.defined() && logit_lengths.defined() && target_lengths.defined(), op,
           " got an undefined tensor");
  FW_CHECK(logits.dtype() == kFloat || logits.dtype() == kDouble, op, " logits must be float32 or float64, got ",
           dtype_str(logits.dtype()));
  auto check_int = [&](const Tensor& t, const char* name) {
    FW_CHECK(t.dtype() == kInt || t.dtype() == kLong, op, " ", name, " must be int32 (or int64), got ",
             dtype_str(t.dtype()));
  };
  check_int(targets, "targets");
  check_int(logit_lengths, "logit_lengths");
  check_int(target_lengths, "target_lengths");
  FW_CHECK(logits.dim() == 4, op, " logits must be 4-D (batch, max_T, max_U + 1, classes), got shape ",
           logits.sizes());
  FW_CHECK(targets.dim() == 2, op, " targets must be 2-D (batch, max_U), got shape ", targets.sizes());
  FW_CHECK(logit_lengths.dim() == 1 && target_lengths.dim() == 1, op,
           " logit_lengths and target_lengths must be 1-D, got shapes ", logit_lengths.sizes(), " and ",
           target_lengths.sizes());
  Problem p;
  p.B = logits.size(0);
  p.maxT = logits.size(1);
  p.maxU1 = logits.size(2);
  p.V = logits.size(3);
  FW_CHECK(logit_lengths.size(0) == p.B && target_lengths.size(0) == p.B && targets.size(0) == p.B, op,
           " batch dimension mismatch: logits ", logits.sizes(), ", targets ", targets.sizes(), ", logit_lengths ",
           logit_lengths.sizes(), ", target_lengths ", target_lengths.sizes());
  FW_CHECK(p.V > 0, op, " logits have no classes (shape ", logits.sizes(), ")");
  p.blank = blank < 0 ? p.V + blank : blank;
  FW_CHECK(p.blank >= 0 && p.blank < p.V, op, " blank ", blank, " is out of range for ", p.V, " classes");
  p.clamp = clamp;
  p.T = host_ints(logit_lengths);
  p.U = host_ints(target_lengths);
  p.targets = host_ints(targets);
  if (p.B == 0) {  // as torch: an empty mean is NaN, an empty sum 0
    Tensor none = fw::empty({0}, logits.options());
    return reduction == "none" ? none : reduction == "sum" ? none.sum() : none.mean();
  }
  const int64_t maxT = *std::max_element(p.T.begin(), p.T.end());
  const int64_t maxU = *std::max_element(p.U.begin(), p.U.end());
  FW_CHECK(*std::min_element(p.T.begin(), p.T.end()) >= 1, op, " logit_lengths must be at least 1");
  FW_CHECK(*std::min_element(p.U.begin(), p.U.end()) >= 0, op, " target_lengths must be non-negative");
  FW_CHECK(p.maxT == maxT, op, " input length mismatch: logits have ", p.maxT,
           " frames but max(logit_lengths) is ", maxT);
  FW_CHECK(p.maxU1 == maxU + 1, op, " output length mismatch: logits have ", p.maxU1,
           " label positions but max(target_lengths) + 1 is ", maxU + 1);
  FW_CHECK(targets.size(1) == maxU, op, " target length mismatch: targets have ", targets.size(1),
           " columns but max(target_lengths) is ", maxU);
  for (int64_t b = 0; b < p.B; b++)
    for (int64_t u = 0; u < p.U[size_t(b)]; u++) {
      const int64_t y = p.targets[size_t(b * maxU + u)];
      FW_CHECK(y >= 0 && y < p.V, op, " target ", y, " (sequence ", b, ", position ", u, ") is out of range for ",
               p.V, " classes");
    }
  Tensor costs = RnntFn::apply(logits, p)[0];
  if (reduction == "mean") return costs.mean();
  if (reduction == "sum") return costs.sum();
  return costs;
}

}  // namespace fw::audio::functional
