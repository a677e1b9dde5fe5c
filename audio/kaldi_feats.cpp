// Feature post-processing of Kaldi recipes (fw/audio/kaldi_io.h): add-deltas and CMVN, from fw
// ops. Kaldi's definitions (feat/feature-functions.cc, transform/cmvn.cc):
//   deltas: the order-i filter is the order-(i-1) filter convolved with [-w, ..., w] and divided
//           by sum_{j=-w..w} j^2; every order is applied to the original features, with frame
//           indices clamped to [0, T-1].
//   CMVN:   stats (2, F+1): [sum x | count ; sum x^2 | 0]; mean = sum / count, var = sum x^2 /
//           count - mean^2 floored at 1e-20; x <- x * scale + offset with scale = 1 (or
//           1/sqrt(var)) and offset = -mean * scale.
#include <cmath>

#include "fw/audio/kaldi_io.h"
#include "fw/ops.h"

namespace fw::audio::kaldi_io {

namespace {
// Kaldi's regression filters, filters[i] of length 2 * i * window + 1.
std::vector<std::vector<double>> delta_filters(int64_t order, int64_t window) {
  std::vector<std::vector<double>> f(size_t(order + 1));
  f[0] = {1.0};
  double norm = 0;
  for (int64_t j = -window; j <= window; ++j) norm += double(j * j);
  for (int64_t i = 1; i <= order; ++i) {
    const std::vector<double>& prev = f[size_t(i - 1)];
    const int64_t prev_half = (int64_t(prev.size()) - 1) / 2, half = prev_half + window;
    std::vector<double> cur(prev.size() + size_t(2 * window), 0.0);
    for (int64_t j = -window; j <= window; ++j)
      for (int64_t k = -prev_half; k <= prev_half; ++k)
        cur[size_t(j + k + half)] += double(j) * prev[size_t(k + prev_half)];
    for (double& c : cur) c /= norm;
    f[size_t(i)] = std::move(cur);
  }
  return f;
}
}  // namespace

Tensor add_deltas(const Tensor& feats, int64_t order, int64_t window) {
  const char* op = "[kaldi_io::add_deltas]";
  FW_CHECK(feats.defined() && feats.dim() >= 2, op, " expected (..., frames, dims) features, got ",
           feats.defined() ? feats.dim() : 0, "-D");
  FW_CHECK(feats.scalar_type() == kFloat || feats.scalar_type() == kDouble, op,
           " expected float32 or float64 features, got ", feats.scalar_type());
  FW_CHECK(order >= 0 && order < 1000, op, " order must be in [0, 1000), got ", order);
  FW_CHECK(window > 0 && window < 1000, op, " window must be in [1, 1000), got ", window);
  const int64_t T = feats.size(-2);
  std::vector<Tensor> parts{feats};
  if (order == 0) return feats.clone();
  if (T == 0) {
    for (int64_t i = 1; i <= order; ++i) parts.push_back(feats);
    return fw::cat(parts, -1);
  }
  // Frames -P .. T-1+P with indices clamped to the utterance (edge replication), P the widest reach.
  const int64_t P = order * window;
  Tensor idx = fw::clamp_max(fw::clamp_min(fw::arange(-P, T + P, kLong), 0), T - 1);
  Tensor padded = feats.index_select(feats.dim() - 2, idx);
  const auto filters = delta_filters(order, window);
  for (int64_t i = 1; i <= order; ++i) {
    const std::vector<double>& f = filters[size_t(i)];
    const int64_t half = i * window;
    Tensor acc;
    for (int64_t j = 0; j <= 2 * half; ++j) {
      if (f[size_t(j)] == 0.0) continue;  // even orders have zero taps in the middle
      Tensor term = padded.narrow(-2, P - half + j, T) * f[size_t(j)];
      acc = acc.defined() ? acc + term : term;
    }
    parts.push_back(acc.defined() ? acc : fw::zeros_like(feats));
  }
  return fw::cat(parts, -1);
}

Tensor compute_cmvn_stats(const Tensor& feats) {
  const char* op = "[kaldi_io::compute_cmvn_stats]";
  FW_CHECK(feats.defined() && feats.dim() == 2, op, " expected (frames, dims) features, got ",
           feats.defined() ? feats.dim() : 0, "-D");
  FW_CHECK(feats.is_floating_point(), op, " expected floating-point features, got ", feats.scalar_type());
  const int64_t T = feats.size(0), F = feats.size(1);
  Tensor x = feats.to(kDouble);
  Tensor sums = T ? x.sum({0}) : fw::zeros({F}, kDouble);
  Tensor squares = T ? (x * x).sum({0}) : fw::zeros({F}, kDouble);
  Tensor row0 = fw::cat({sums, fw::full({1}, double(T), kDouble)});
  Tensor row1 = fw::cat({squares, fw::zeros({1}, kDouble)});
  return fw::stack({row0, row1});
}

Tensor compute_cmvn_stats(const std::vector<Tensor>& feats) {
  const char* op = "[kaldi_io::compute_cmvn_stats]";
  FW_CHECK(!feats.empty(), op, " no feature matrices given");
  Tensor total;
  for (size_t i = 0; i < feats.size(); ++i) {
    Tensor s = compute_cmvn_stats(feats[i]);
    FW_CHECK(!total.defined() || s.size(1) == total.size(1), op, " feature matrix ", i, " has ", s.size(1) - 1,
             " dims, matrix 0 has ", total.defined() ? total.size(1) - 1 : 0);
    total = total.defined() ? total + s : s;
  }
  return total;
}

std::map<std::string, Tensor> compute_speaker_cmvn_stats(
    const std::map<std::string, Tensor>& features, const std::map<std::string, std::vector<std::string>>& spk2utt) {
  const char* op = "[kaldi_io::compute_speaker_cmvn_stats]";
  std::map<std::string, Tensor> out;
  for (const auto& [spk, utts] : spk2utt) {
    FW_CHECK(!utts.empty(), op, " speaker \"", spk, "\" has no utterances");
    std::vector<Tensor> fs;
    for (const auto& u : utts) {
      auto it = features.find(u);
      FW_CHECK(it != features.end(), op, " utterance \"", u, "\" of speaker \"", spk, "\" has no features");
      fs.push_back(it->second);
    }
    try {
      out.emplace(spk, compute_cmvn_stats(fs));
    } catch (const Error& e) {
      FW_CHECK(false, op, " speaker \"", spk, "\": ", e.what());
    }
  }
  return out;
}

Tensor apply_cmvn(const Tensor& feats, const Tensor& stats, bool norm_vars) {
  const char* op = "[kaldi_io::apply_cmvn]";
  FW_CHECK(feats.defined() && feats.dim() >= 2, op, " expected (..., frames, dims) features, got ",
           feats.defined() ? feats.dim() : 0, "-D");
  FW_CHECK(feats.is_floating_point(), op, " expected floating-point features, got ", feats.scalar_type());
  FW_CHECK(stats.defined() && stats.dim() == 2, op, " expected (2, dims + 1) stats, got ",
           stats.defined() ? stats.dim() : 0, "-D");
  const int64_t F = feats.size(-1);
  FW_CHECK(stats.size(1) == F + 1 && (stats.size(0) == 2 || (stats.size(0) == 1 && !norm_vars)), op,
           " stats of sizes ", stats.sizes(), " do not fit features with ", F, " dims: expected (2, ", F + 1, ")",
           norm_vars ? " (norm_vars needs the row of squares)" : " or (1, " + std::to_string(F + 1) + ")");
  Tensor s = stats.to(kDouble).cpu();
  const double count = s.select(0, 0).narrow(0, F, 1).item<double>();
  FW_CHECK(count >= 1.0, op, " Insufficient stats for cepstral mean and variance normalization: count = ", count);
  Tensor mean = s.select(0, 0).narrow(0, 0, F) / count;
  Tensor scale, offset;
  if (norm_vars) {
    Tensor var = fw::clamp_min(s.select(0, 1).narrow(0, 0, F) / count - mean * mean, 1e-20);
    scale = fw::ones_like(var) / var.sqrt();
    offset = -(mean * scale);
  } else {
    offset = -mean;
  }
  FW_CHECK(fw::isfinite(offset).all().item<bool>() && (!scale.defined() || fw::isfinite(scale).all().item<bool>()), op,
           " NaN or infinity in the CMVN stats (count ", count, ")");
  const ScalarType dt = feats.scalar_type();
  Tensor out = scale.defined() ? feats * scale.to(dt).to(feats.device()) : feats;
  return out + offset.to(dt).to(feats.device());
}

}  // namespace fw::audio::kaldi_io
