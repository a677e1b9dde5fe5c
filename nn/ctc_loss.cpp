// ctc_loss: the log-space alpha recursion over the blank-extended targets, written as one small
// chain of differentiable tensor ops per time step, so that autograd derives the beta pass.
#include <algorithm>
#include <limits>

#include "core/autocast.h"
#include "fw/nn/functional.h"

namespace fw::nn::functional {
namespace {

// Note [CTC unreachable states]: states no path reaches hold kNeg instead of -inf. With -inf a
// logsumexp over only unreachable states has a NaN gradient (exp(-inf - -inf)), which would
// poison the backward pass; kNeg keeps every step finite, and exp(kNeg - finite) is exactly 0,
// so reachable states are unaffected. A final value below kInfeasible means no path exists.
constexpr double kNeg = -1e200;
constexpr double kInfeasible = -1e100;

std::vector<int64_t> long_values(const char* what, const Tensor& t, int64_t n) {
  FW_CHECK(!t.is_floating_point() && !t.is_complex(), "[ctc_loss] ", what, " must be integral, but got ",
           dtype_name(t.dtype()));
  Tensor c = t.to(kLong).contiguous().flatten();
  FW_CHECK(c.numel() == n, "[ctc_loss] ", what, " must have ", n, " values (one per batch entry), but got ", c.numel());
  const int64_t* p = c.data_ptr<int64_t>();
  return std::vector<int64_t>(p, p + n);
}

// Padded targets (N, S) from a 2-D padded or a 1-D concatenated targets tensor.
std::vector<std::vector<int64_t>> padded_targets(const Tensor& targets, const std::vector<int64_t>& tl, int64_t C) {
  int64_t N = int64_t(tl.size());
  Tensor c = targets.to(kLong).contiguous();
  const int64_t* p = c.data_ptr<int64_t>();
  std::vector<std::vector<int64_t>> out(static_cast<size_t>(N));
  int64_t offset = 0;
  for (int64_t n = 0; n < N; n++) {
    FW_CHECK(tl[size_t(n)] >= 0, "[ctc_loss] target_lengths must be non-negative, but got ", tl[size_t(n)]);
    if (targets.dim() == 2) {
      FW_CHECK(tl[size_t(n)] <= targets.size(1), "[ctc_loss] Expected tensor to have size at least ", tl[size_t(n)],
               " at dimension 1, but got size ", targets.size(1), " for argument #2 'targets'");
      out[size_t(n)].assign(p + n * targets.size(1), p + n * targets.size(1) + tl[size_t(n)]);
    } else {
      FW_CHECK(offset + tl[size_t(n)] <= targets.numel(), "[ctc_loss] target_lengths sum to more than the ",
               targets.numel(), " concatenated targets");
      out[size_t(n)].assign(p + offset, p + offset + tl[size_t(n)]);
      offset += tl[size_t(n)];
    }
    for (int64_t v : out[size_t(n)])
      FW_CHECK(v >= 0 && v < C, "[ctc_loss] target value ", v, " is out of bounds for ", C, " classes");
  }
  return out;
}

struct CtcPlan {
  Tensor onehot;  // (N, C, L): column l selects the class of extended label l
  Tensor skip;    // (N, L): state l may be entered from l - 2
  Tensor final;   // (N, L): the two states a complete path ends in
};

CtcPlan make_plan(const std::vector<std::vector<int64_t>>& tg, int64_t C, int64_t blank, int64_t L) {
  int64_t N = int64_t(tg.size());
  Tensor oh = zeros({N, C, L}, kDouble), skip = zeros({N, L}, kBool), fin = zeros({N, L}, kBool);
  auto o = oh.accessor<double, 3>();
  auto s = skip.accessor<bool, 2>();
  auto f = fin.accessor<bool, 2>();
  for (int64_t n = 0; n < N; n++) {
    const auto& t = tg[size_t(n)];
    int64_t S = int64_t(t.size());
    for (int64_t l = 0; l < L; l++) {
      bool label = l % 2 == 1 && (l - 1) / 2 < S;
      int64_t cls = label ? t[size_t((l - 1) / 2)] : blank;
      o[n][cls][l] = 1.0;
      s[n][l] = label && l >= 3 && t[size_t((l - 3) / 2)] != cls;
    }
    f[n][2 * S] = true;
    if (S > 0) f[n][2 * S - 1] = true;
  }
  return {oh, skip, fin};
}

// Shifts the states right by k along dim 1, filling with kNeg.
Tensor shift(const Tensor& a, int64_t k) {
  int64_t L = a.size(1);
  if (k >= L) return full_like(a, kNeg);
  return fw::cat({full({a.size(0), k}, kNeg, kDouble), a.narrow(1, 0, L - k)}, 1);
}

// Per-sample negative log-likelihoods (N), in float64, kNeg-saturated for infeasible samples.
Tensor ctc_nll(const Tensor& lp, const CtcPlan& plan, const std::vector<int64_t>& il) {
  int64_t T = lp.size(0), N = lp.size(1), L = plan.skip.size(1);
  // (N, T, L): log-probability of each extended label at each time step.
  Tensor lpe = fw::matmul(lp.clamp_min(kNeg).permute({1, 0, 2}), plan.onehot);
  Tensor alpha = full({N, L}, kNeg, kDouble);
  alpha.narrow(1, 0, 1).fill_(0.0);
  Tensor il_t = fw::tensor(il).view({N, 1});
  for (int64_t t = 0; t < T; t++) {
    Tensor a2 = fw::where(plan.skip, shift(alpha, 2), kNeg);
    Tensor next = fw::stack({alpha, shift(alpha, 1), a2}).logsumexp({0}) + lpe.select(1, t);
    alpha = fw::where(il_t.gt(t), next, alpha);
  }
  return -fw::where(plan.final, alpha, kNeg).logsumexp({1});
}

}  // namespace

Tensor ctc_loss(const Tensor& log_probs, const Tensor& targets, const Tensor& input_lengths,
                const Tensor& target_lengths, const CTCLossFuncOptions& o) {
  if (FW_UNLIKELY(fw::detail::tls().autocast))  // autocast's float32 list
    return fw::detail::autocast_float32([](auto&&... a) { return ctc_loss(a...); }, log_probs, targets, input_lengths, target_lengths, o);
  FW_CHECK(log_probs.dim() == 3 || log_probs.dim() == 2, "[ctc_loss] log_probs must be (T, N, C) or (T, C), but got ",
           log_probs.sizes());
  FW_CHECK(log_probs.is_floating_point(), "[ctc_loss] log_probs must be floating point, but got ",
           dtype_name(log_probs.dtype()));
  bool batched = log_probs.dim() == 3;
  Tensor lp = batched ? log_probs : log_probs.unsqueeze(1);
  Tensor tg = batched ? targets : targets.unsqueeze(0);
  FW_CHECK(tg.dim() == 1 || tg.dim() == 2, "[ctc_loss] targets must be 1-D (concatenated) or 2-D (padded), but got ",
           targets.sizes());
  int64_t T = lp.size(0), N = lp.size(1), C = lp.size(2);
  FW_CHECK(o.blank() >= 0 && o.blank() < C, "[ctc_loss] blank must be in label range, but got ", o.blank());
  auto il = long_values("input_lengths", input_lengths, N);
  auto tl = long_values("target_lengths", target_lengths, N);
  for (int64_t v : il)
    FW_CHECK(v >= 0 && v <= T, "[ctc_loss] Expected input_lengths to have value at most ", T, ", but got value ", v);
  auto padded = padded_targets(tg, tl, C);
  int64_t smax = tl.empty() ? 0 : *std::max_element(tl.begin(), tl.end());
  CtcPlan plan = make_plan(padded, C, o.blank(), 2 * smax + 1);
  Tensor nll = ctc_nll(lp.to(kDouble), plan, il);
  Tensor infeasible = nll.detach().gt(-kInfeasible);
  double inf_value = o.zero_infinity() ? 0.0 : std::numeric_limits<double>::infinity();
  Tensor loss = fw::where(infeasible, inf_value, nll).to(log_probs.dtype());
  std::string r = mode_name(o.reduction());
  if (r == "mean") {
    Tensor denom = fw::tensor(tl).clamp_min(1).to(loss.dtype());
    return (loss / denom).mean();
  }
  if (r == "sum") return loss.sum();
  return batched ? loss : loss.squeeze(0);
}

}  // namespace fw::nn::functional
