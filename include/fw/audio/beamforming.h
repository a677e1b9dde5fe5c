// torchaudio's multi-channel beamforming (torchaudio 0.13): power spectral density matrices, MVDR
// weights (Souden's and the relative-transfer-function form), RTF estimates and applying weights
// to a multi-channel STFT.
//   namespace F = fw::audio::functional;
//   Tensor psd_s = F::psd(spec, speech_mask), psd_n = F::psd(spec, noise_mask);  // (..., freq, C, C)
//   Tensor w = F::mvdr_weights_souden(psd_s, psd_n, /*reference_channel=*/0);   // (..., freq, C)
//   Tensor enhanced = F::apply_beamforming(w, spec);                             // (..., freq, time)
// spec is complex (..., channel, freq, time); masks are real (..., freq, time). A reference channel is
// an index or a one-hot / weighting tensor (..., channel). Built from fw ops (complex linalg.solve
// and eigh), so differentiable; errors read "[audio::<function>] ..." with the offending shapes.
#pragma once
#include <optional>
#include <string>

#include "fw/audio/transforms.h"
#include "fw/fw.h"

namespace fw::audio::functional {

// sum_t mask[t] x[:, t] x[:, t]^H per frequency: (..., channel, freq, time) -> (..., freq, C, C).
// normalize divides the mask by its sum over time (+ eps) first.
Tensor psd(const Tensor& specgram, const std::optional<Tensor>& mask = std::nullopt, bool normalize = true,
           double eps = 1e-10);
// (psd_n^-1 psd_s) / trace(psd_n^-1 psd_s) picked at the reference channel. diagonal_loading adds
// (trace(psd_n) * diag_eps + 1e-8) I to psd_n first.
Tensor mvdr_weights_souden(const Tensor& psd_s, const Tensor& psd_n, int64_t reference_channel,
                           bool diagonal_loading = true, double diag_eps = 1e-7, double eps = 1e-8);
Tensor mvdr_weights_souden(const Tensor& psd_s, const Tensor& psd_n, const Tensor& reference_channel,
                           bool diagonal_loading = true, double diag_eps = 1e-7, double eps = 1e-8);
// psd_n^-1 rtf / (rtf^H psd_n^-1 rtf), scaled by the conjugate RTF at the reference channel when one
// is given. rtf: (..., freq, channel).
Tensor mvdr_weights_rtf(const Tensor& rtf, const Tensor& psd_n, std::optional<int64_t> reference_channel = std::nullopt,
                        bool diagonal_loading = true, double diag_eps = 1e-7, double eps = 1e-8);
Tensor mvdr_weights_rtf(const Tensor& rtf, const Tensor& psd_n, const Tensor& reference_channel,
                        bool diagonal_loading = true, double diag_eps = 1e-7, double eps = 1e-8);
// The eigenvector of psd_s with the largest eigenvalue (its phase is arbitrary, as eigh's).
Tensor rtf_evd(const Tensor& psd_s);
// n_iter power iterations of psd_n^-1 psd_s from the reference channel, mapped back by psd_s.
Tensor rtf_power(const Tensor& psd_s, const Tensor& psd_n, int64_t reference_channel, int64_t n_iter = 3,
                 bool diagonal_loading = true, double diag_eps = 1e-7);
Tensor rtf_power(const Tensor& psd_s, const Tensor& psd_n, const Tensor& reference_channel, int64_t n_iter = 3,
                 bool diagonal_loading = true, double diag_eps = 1e-7);
// sum_c conj(w[..., f, c]) spec[..., c, f, t]: (..., freq, channel) x (..., channel, freq, time).
Tensor apply_beamforming(const Tensor& beamform_weights, const Tensor& specgram);

}  // namespace fw::audio::functional

namespace fw::audio::transforms {

// torchaudio.transforms.PSD: multi_mask averages a per-channel mask (..., channel, freq, time).
class PSDImpl : public nn::Cloneable<PSDImpl> {
 public:
  explicit PSDImpl(bool multi_mask = false, bool normalize = true, double eps = 1e-15)
      : multi_mask(multi_mask), normalize(normalize), eps(eps) {}
  void reset() override {}
  Tensor forward(const Tensor& specgram, const std::optional<Tensor>& mask = std::nullopt);
  bool multi_mask, normalize;
  double eps;
};
FW_MODULE(PSD);

// torchaudio.transforms.SoudenMVDR / RTFMVDR: the weights above applied to the STFT.
class SoudenMVDRImpl : public nn::Cloneable<SoudenMVDRImpl> {
 public:
  void reset() override {}
  Tensor forward(const Tensor& specgram, const Tensor& psd_s, const Tensor& psd_n, int64_t reference_channel,
                 bool diagonal_loading = true, double diag_eps = 1e-7, double eps = 1e-8);
  Tensor forward(const Tensor& specgram, const Tensor& psd_s, const Tensor& psd_n, const Tensor& reference_channel,
                 bool diagonal_loading = true, double diag_eps = 1e-7, double eps = 1e-8);
};
FW_MODULE(SoudenMVDR);

class RTFMVDRImpl : public nn::Cloneable<RTFMVDRImpl> {
 public:
  void reset() override {}
  Tensor forward(const Tensor& specgram, const Tensor& rtf, const Tensor& psd_n, int64_t reference_channel,
                 bool diagonal_loading = true, double diag_eps = 1e-7, double eps = 1e-8);
  Tensor forward(const Tensor& specgram, const Tensor& rtf, const Tensor& psd_n, const Tensor& reference_channel,
                 bool diagonal_loading = true, double diag_eps = 1e-7, double eps = 1e-8);
};
FW_MODULE(RTFMVDR);

struct MVDROptions {
  FW_ARG(int64_t, ref_channel) = 0;
  // "ref_channel" (Souden's weights), "stv_evd" or "stv_power" (RTF weights from that estimate).
  FW_ARG(std::string, solution) = "ref_channel";
  FW_ARG(bool, multi_mask) = false;
  FW_ARG(bool, diag_loading) = true;
  FW_ARG(double, diag_eps) = 1e-7;
  // Accumulate the PSD matrices over calls (buffers psd_s, psd_n, mask_sum_s, mask_sum_n).
  FW_ARG(bool, online) = false;
};

// torchaudio.transforms.MVDR: PSDs from time-frequency masks, MVDR weights by `solution`, applied
// to the STFT; computed in complex128 and returned in the input's dtype. mask_n defaults to
// 1 - mask_s (torchaudio also warns).
class MVDRImpl : public nn::Cloneable<MVDRImpl> {
 public:
  explicit MVDRImpl(const MVDROptions& options_ = {});
  void reset() override;
  Tensor forward(const Tensor& specgram, const Tensor& mask_s, const std::optional<Tensor>& mask_n = std::nullopt);
  MVDROptions options;
  Tensor psd_s, psd_n, mask_sum_s, mask_sum_n;  // online state; zeros({1}) until the first call
};
FW_MODULE(MVDR);

}  // namespace fw::audio::transforms
