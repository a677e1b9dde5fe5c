// Multi-channel beamforming (fw/audio/beamforming.h) from fw ops: complex matmul, linalg.solve and
// linalg.eigh, so everything is differentiable.
#include "fw/audio/beamforming.h"

#include <utility>

#include "fw/linalg.h"

namespace fw::audio::functional {

namespace {

Tensor mat_trace(const Tensor& m) { return m.diagonal(0, -2, -1).sum({-1}); }

// Tikhonov regularisation: m + (trace(m).real * reg + eps) I.
Tensor tik_reg(const Tensor& m, double reg, double eps = 1e-8) {
  Tensor e = mat_trace(m).real().unsqueeze(-1).unsqueeze(-1) * reg + eps;
  return m + e * fw::eye(m.size(-1), m.options());
}

void check_psd_pair(const char* op, const Tensor& psd_s, const Tensor& psd_n) {
  FW_CHECK(psd_s.defined() && psd_n.defined(), "[audio::", op, "] psd_s and psd_n must be defined");
  FW_CHECK(psd_s.dim() >= 3 && psd_n.dim() >= 3, "[audio::", op,
           "] Expected at least 3D Tensor (..., freq, channel, channel) for psd_s and psd_n. Found ", psd_s.sizes(),
           " for psd_s and ", psd_n.sizes(), " for psd_n.");
  FW_CHECK(psd_s.is_complex() && psd_n.is_complex(), "[audio::", op,
           "] The type of psd_s and psd_n must be complex64 or complex128. Found ", dtype_str(psd_s.dtype()),
           " for psd_s and ", dtype_str(psd_n.dtype()), " for psd_n.");
  FW_CHECK(psd_s.sizes().equals(psd_n.sizes()), "[audio::", op,
           "] The dimensions of psd_s and psd_n should be the same. Found ", psd_s.sizes(), " and ", psd_n.sizes(),
           ".");
  FW_CHECK(psd_s.size(-1) == psd_s.size(-2), "[audio::", op,
           "] The last two dimensions of psd_s should be the same. Found ", psd_s.sizes(), ".");
}

void check_channel(const char* op, int64_t ref, int64_t channels) {
  FW_CHECK(ref >= -channels && ref < channels, "[audio::", op, "] reference_channel ", ref, " is out of range for ",
           channels, " channels");
}

// sum_c m[..., c] * ref[..., c] with ref broadcast over the dims between (a weighting of channels).
Tensor weigh_channels(const Tensor& m, const Tensor& ref, int64_t inserted, const char* op) {
  FW_CHECK(ref.defined() && ref.dim() >= 1 && ref.size(-1) == m.size(-1), "[audio::", op,
           "] a tensor reference_channel must be (..., channel) with ", m.size(-1), " channels, got shape ",
           ref.defined() ? ref.sizes() : IntArrayRef());
  Tensor r = ref.to(m.dtype());
  for (int64_t i = 0; i < inserted; i++) r = r.unsqueeze(-2);
  return (m * r).sum({-1});
}

Tensor souden(const Tensor& psd_s, const Tensor& psd_n, bool loading, double diag_eps, double eps) {
  check_psd_pair("mvdr_weights_souden", psd_s, psd_n);
  Tensor n = loading ? tik_reg(psd_n, diag_eps) : psd_n;
  Tensor num = linalg::solve(n, psd_s);
  return num / (mat_trace(num).unsqueeze(-1).unsqueeze(-1) + eps);
}

Tensor rtf_weights(const Tensor& rtf, const Tensor& psd_n, bool loading, double diag_eps, double eps) {
  const char* op = "[audio::mvdr_weights_rtf]";
  FW_CHECK(rtf.defined() && psd_n.defined(), op, " rtf and psd_n must be defined");
  FW_CHECK(rtf.dim() >= 2, op, " Expected at least 2D Tensor (..., freq, channel) for rtf. Found ", rtf.sizes(), ".");
  FW_CHECK(psd_n.dim() >= 3, op, " Expected at least 3D Tensor (..., freq, channel, channel) for psd_n. Found ",
           psd_n.sizes(), ".");
  FW_CHECK(rtf.is_complex() && psd_n.is_complex(), op, " The type of rtf and psd_n must be complex64 or complex128. Found ",
           dtype_str(rtf.dtype()), " for rtf and ", dtype_str(psd_n.dtype()), " for psd_n.");
  FW_CHECK(rtf.sizes().equals(psd_n.sizes().slice(0, size_t(psd_n.dim() - 1))), op,
           " The dimensions of rtf and the dimensions without the last dimension of psd_n should be the same. Found ",
           rtf.sizes(), " for rtf and ", psd_n.sizes(), " for psd_n.");
  FW_CHECK(psd_n.size(-1) == psd_n.size(-2), op, " The last two dimensions of psd_n should be the same. Found ",
           psd_n.sizes(), ".");
  Tensor n = loading ? tik_reg(psd_n, diag_eps) : psd_n;
  Tensor num = linalg::solve(n, rtf.unsqueeze(-1)).squeeze(-1);
  Tensor den = (rtf.conj() * num).sum({-1});
  return num / (den.real().unsqueeze(-1) + eps);
}

// rtf_power's checks and its first iteration: {psd_n^-1 psd_s, the (loaded) psd_n}.
std::pair<Tensor, Tensor> power_start(const Tensor& psd_s, const Tensor& psd_n, int64_t n_iter, bool loading,
                                      double diag_eps) {
  check_psd_pair("rtf_power", psd_s, psd_n);
  FW_CHECK(n_iter > 0, "[audio::rtf_power] The number of iteration must be greater than 0, got ", n_iter);
  Tensor n = loading ? tik_reg(psd_n, diag_eps) : psd_n;
  return {linalg::solve(n, psd_s), n};
}

Tensor power_iterations(Tensor rtf, const Tensor& phi, const Tensor& psd_s, const Tensor& psd_n, int64_t n_iter) {
  rtf = rtf.unsqueeze(-1);
  if (n_iter >= 2) {
    // phi itself and the final psd_s product count as two of the iterations.
    for (int64_t i = 0; i < n_iter - 2; i++) rtf = fw::matmul(phi, rtf);
    rtf = fw::matmul(psd_s, rtf);
  } else {
    rtf = fw::matmul(psd_n, rtf);  // one iteration: psd_s's reference column, as psd_n phi e_ref
  }
  return rtf.squeeze(-1);
}

}  // namespace

Tensor psd(const Tensor& specgram, const std::optional<Tensor>& mask, bool normalize, double eps) {
  FW_CHECK(specgram.defined() && specgram.dim() >= 3, "[audio::psd] Expected a (..., channel, freq, time) specgram, got ",
           specgram.defined() ? specgram.sizes() : IntArrayRef());
  FW_CHECK(specgram.is_complex(), "[audio::psd] specgram must be complex, got ", dtype_str(specgram.dtype()));
  Tensor s = specgram.transpose(-3, -2);  // (..., freq, channel, time)
  if (!mask || !mask->defined()) return fw::matmul(s, s.mH());
  const Tensor& m0 = *mask;
  IntArrayRef lead = s.sizes().slice(0, size_t(s.dim() - 2));
  FW_CHECK(m0.dim() == s.dim() - 1 && m0.sizes().slice(0, size_t(m0.dim() - 1)).equals(lead) &&
               m0.size(-1) == s.size(-1),
           "[audio::psd] The dimensions of mask except the channel dimension should be the same as specgram. Found ",
           m0.sizes(), " for mask and ", s.sizes(), " for specgram.");
  Tensor m = normalize ? m0 / (m0.sum({-1}, /*keepdim=*/true) + eps) : m0;
  return fw::matmul(s * m.unsqueeze(-2), s.mH());
}

Tensor mvdr_weights_souden(const Tensor& psd_s, const Tensor& psd_n, int64_t reference_channel, bool diagonal_loading,
                           double diag_eps, double eps) {
  Tensor ws = souden(psd_s, psd_n, diagonal_loading, diag_eps, eps);
  check_channel("mvdr_weights_souden", reference_channel, ws.size(-1));
  return ws.select(-1, reference_channel);
}
Tensor mvdr_weights_souden(const Tensor& psd_s, const Tensor& psd_n, const Tensor& reference_channel,
                           bool diagonal_loading, double diag_eps, double eps) {
  Tensor ws = souden(psd_s, psd_n, diagonal_loading, diag_eps, eps);
  return weigh_channels(ws, reference_channel, 2, "mvdr_weights_souden");
}

Tensor mvdr_weights_rtf(const Tensor& rtf, const Tensor& psd_n, std::optional<int64_t> reference_channel,
                        bool diagonal_loading, double diag_eps, double eps) {
  Tensor w = rtf_weights(rtf, psd_n, diagonal_loading, diag_eps, eps);
  if (!reference_channel) return w;
  check_channel("mvdr_weights_rtf", *reference_channel, rtf.size(-1));
  return w * rtf.select(-1, *reference_channel).conj().unsqueeze(-1);
}
Tensor mvdr_weights_rtf(const Tensor& rtf, const Tensor& psd_n, const Tensor& reference_channel, bool diagonal_loading,
                        double diag_eps, double eps) {
  Tensor w = rtf_weights(rtf, psd_n, diagonal_loading, diag_eps, eps);
  return w * weigh_channels(rtf.conj(), reference_channel, 1, "mvdr_weights_rtf").unsqueeze(-1);
}

Tensor rtf_evd(const Tensor& psd_s) {
  FW_CHECK(psd_s.defined() && psd_s.dim() >= 2, "[audio::rtf_evd] Expected (..., channel, channel) psd_s, got ",
           psd_s.defined() ? psd_s.sizes() : IntArrayRef());
  FW_CHECK(psd_s.is_complex(), "[audio::rtf_evd] The type of psd_s must be complex64 or complex128. Found ",
           dtype_str(psd_s.dtype()), ".");
  FW_CHECK(psd_s.size(-1) == psd_s.size(-2), "[audio::rtf_evd] The last two dimensions of psd_s should be the same. "
           "Found ", psd_s.sizes(), ".");
  Tensor v = std::get<1>(linalg::eigh(psd_s));  // eigenvalues ascending
  return v.select(-1, v.size(-1) - 1);
}

Tensor rtf_power(const Tensor& psd_s, const Tensor& psd_n, int64_t reference_channel, int64_t n_iter,
                 bool diagonal_loading, double diag_eps) {
  auto [phi, n] = power_start(psd_s, psd_n, n_iter, diagonal_loading, diag_eps);
  check_channel("rtf_power", reference_channel, psd_s.size(-1));
  return power_iterations(phi.select(-1, reference_channel), phi, psd_s, n, n_iter);
}
Tensor rtf_power(const Tensor& psd_s, const Tensor& psd_n, const Tensor& reference_channel, int64_t n_iter,
                 bool diagonal_loading, double diag_eps) {
  auto [phi, n] = power_start(psd_s, psd_n, n_iter, diagonal_loading, diag_eps);
  return power_iterations(weigh_channels(phi, reference_channel, 2, "rtf_power"), phi, psd_s, n, n_iter);
}

Tensor apply_beamforming(const Tensor& beamform_weights, const Tensor& specgram) {
  const char* op = "[audio::apply_beamforming]";
  FW_CHECK(beamform_weights.defined() && specgram.defined() && beamform_weights.dim() >= 2 && specgram.dim() >= 3, op,
           " Expected beamform_weights (..., freq, channel) and specgram (..., channel, freq, time)");
  FW_CHECK(beamform_weights.sizes().slice(0, size_t(beamform_weights.dim() - 2))
               .equals(specgram.sizes().slice(0, size_t(specgram.dim() - 3))),
           op, " The dimensions except the last two dimensions of beamform_weights should be the same as the "
           "dimensions except the last three dimensions of specgram. Found ", beamform_weights.sizes(),
           " for beamform_weights and ", specgram.sizes(), " for specgram.");
  FW_CHECK(beamform_weights.is_complex() && specgram.is_complex(), op,
           " The type of beamform_weights and specgram must be complex64 or complex128. Found ",
           dtype_str(beamform_weights.dtype()), " for beamform_weights and ", dtype_str(specgram.dtype()),
           " for specgram.");
  FW_CHECK(beamform_weights.size(-1) == specgram.size(-3) && beamform_weights.size(-2) == specgram.size(-2), op,
           " beamform_weights ", beamform_weights.sizes(), " do not match the (channel, freq) of specgram ",
           specgram.sizes());
  // (..., freq, 1, channel) x (..., freq, channel, time) -> (..., freq, time)
  return fw::matmul(beamform_weights.conj().unsqueeze(-2), specgram.transpose(-3, -2)).squeeze(-2);
}

}  // namespace fw::audio::functional

namespace fw::audio::transforms {

Tensor PSDImpl::forward(const Tensor& specgram, const std::optional<Tensor>& mask) {
  std::optional<Tensor> m = mask;
  if (m && m->defined() && multi_mask) m = m->mean({-3});
  return functional::psd(specgram, m, normalize, eps);
}

Tensor SoudenMVDRImpl::forward(const Tensor& specgram, const Tensor& psd_s, const Tensor& psd_n,
                               int64_t reference_channel, bool diagonal_loading, double diag_eps, double eps) {
  return functional::apply_beamforming(
      functional::mvdr_weights_souden(psd_s, psd_n, reference_channel, diagonal_loading, diag_eps, eps), specgram);
}
Tensor SoudenMVDRImpl::forward(const Tensor& specgram, const Tensor& psd_s, const Tensor& psd_n,
                               const Tensor& reference_channel, bool diagonal_loading, double diag_eps, double eps) {
  return functional::apply_beamforming(
      functional::mvdr_weights_souden(psd_s, psd_n, reference_channel, diagonal_loading, diag_eps, eps), specgram);
}

Tensor RTFMVDRImpl::forward(const Tensor& specgram, const Tensor& rtf, const Tensor& psd_n, int64_t reference_channel,
                            bool diagonal_loading, double diag_eps, double eps) {
  return functional::apply_beamforming(
      functional::mvdr_weights_rtf(rtf, psd_n, reference_channel, diagonal_loading, diag_eps, eps), specgram);
}
Tensor RTFMVDRImpl::forward(const Tensor& specgram, const Tensor& rtf, const Tensor& psd_n,
                            const Tensor& reference_channel, bool diagonal_loading, double diag_eps, double eps) {
  return functional::apply_beamforming(
      functional::mvdr_weights_rtf(rtf, psd_n, reference_channel, diagonal_loading, diag_eps, eps), specgram);
}

MVDRImpl::MVDRImpl(const MVDROptions& options_) : options(options_) {
  const std::string& s = options.solution();
  FW_CHECK(s == "ref_channel" || s == "stv_evd" || s == "stv_power",
           "[audio::MVDR] `solution` must be one of [\"ref_channel\", \"stv_evd\", \"stv_power\"]. Given ", s);
  reset();
}

void MVDRImpl::reset() {
  psd_s = register_buffer("psd_s", fw::zeros({1}));
  psd_n = register_buffer("psd_n", fw::zeros({1}));
  mask_sum_s = register_buffer("mask_sum_s", fw::zeros({1}));
  mask_sum_n = register_buffer("mask_sum_n", fw::zeros({1}));
}

Tensor MVDRImpl::forward(const Tensor& specgram, const Tensor& mask_s, const std::optional<Tensor>& mask_n) {
  FW_CHECK(specgram.defined() && specgram.dim() >= 3,
           "[audio::MVDR] Expected at least 3D tensor (..., channel, freq, time). Found: ",
           specgram.defined() ? specgram.sizes() : IntArrayRef());
  FW_CHECK(specgram.is_complex(), "[audio::MVDR] The type of specgram must be complex64 or complex128. Found: ",
           dtype_str(specgram.dtype()));
  const int64_t channels = specgram.size(-3);
  FW_CHECK(options.ref_channel() >= -channels && options.ref_channel() < channels, "[audio::MVDR] ref_channel ",
           options.ref_channel(), " is out of range for ", channels, " channels");
  const ScalarType dtype = specgram.dtype();
  Tensor x = specgram.to(kComplexDouble);
  Tensor ms = mask_s, mn = mask_n && mask_n->defined() ? *mask_n : 1 - mask_s;
  PSDImpl psd(options.multi_mask());
  Tensor ps = psd.forward(x, ms), pn = psd.forward(x, mn);
  Tensor u = fw::zeros(x.sizes().slice(0, size_t(x.dim() - 2)), TensorOptions(kComplexDouble).device(x.device()));
  u.select(-1, options.ref_channel()).fill_(1);
  if (options.online()) {
    if (options.multi_mask()) {
      ms = ms.mean({-3});
      mn = mn.mean({-3});
    }
    const Tensor sum_s = ms.sum({-1}), sum_n = mn.sum({-1});
    if (psd_s.dim() == 1) {
      psd_s.set_data(ps);
      psd_n.set_data(pn);
      mask_sum_s.set_data(sum_s);
      mask_sum_n.set_data(sum_n);
    } else {  // torchaudio's running update of the (already mask-normalized) PSDs
      auto update = [](const Tensor& old, const Tensor& now, const Tensor& old_sum, const Tensor& sum) {
        Tensor total = old_sum + sum;
        return old * (old_sum / total).unsqueeze(-1).unsqueeze(-1) + now * (1 / total).unsqueeze(-1).unsqueeze(-1);
      };
      ps = update(psd_s, ps, mask_sum_s, sum_s);
      pn = update(psd_n, pn, mask_sum_n, sum_n);
      psd_s.set_data(ps);
      psd_n.set_data(pn);
      mask_sum_s.set_data(mask_sum_s + sum_s);
      mask_sum_n.set_data(mask_sum_n + sum_n);
    }
  }
  const bool load = options.diag_loading();
  const double deps = options.diag_eps();
  Tensor w;
  if (options.solution() == "ref_channel") {
    w = functional::mvdr_weights_souden(ps, pn, u, load, deps);
  } else {
    Tensor stv = options.solution() == "stv_evd" ? functional::rtf_evd(ps)
                                                 : functional::rtf_power(ps, pn, u, 3, load, deps);
    w = functional::mvdr_weights_rtf(stv, pn, u, load, deps);
  }
  return functional::apply_beamforming(w, x).to(dtype);
}

}  // namespace fw::audio::transforms
