// torchaudio.functional's filters, convolutions, gain/dither/noise and resampling (torchaudio 0.13
// numerics; convolve/fftconvolve/add_noise/preemphasis/deemphasis follow torchaudio 2.x, where they
// first appear in functional). Every function takes `(..., time)` input, keeps leading dims as a batch,
// is built from fw ops where the math allows and is differentiable:
//   namespace F = fw::audio::functional;
//   auto y = F::lowpass_biquad(x, 16000, 1000.0);           // Q defaults to 0.707 as in torchaudio
//   auto z = F::resample(x, 44100, 16000);                  // sinc_interp_hann, width 6, rolloff 0.99
// Arguments are checked; errors read "[audio::<function>] ..." and name the offending shapes/values.
#pragma once
#include <optional>
#include <string>
#include <utility>

#include "fw/fw.h"

namespace fw::audio::functional {

// A filter-design parameter given as a number or as a tensor (0-dim or one element), as torchaudio's
// "float or Tensor" arguments: a tensor argument makes the result differentiable in it. Numbers become
// tensors of the waveform's dtype before any arithmetic, as torch.as_tensor(x, dtype=waveform.dtype).
class FilterArg {
 public:
  FilterArg(double v) : value_(v) {}
  FilterArg(const Tensor& t) : tensor_(t) {}
  // The argument as a 0-dim tensor of `dtype`.
  Tensor as_tensor(ScalarType dtype) const;
  bool is_tensor() const { return tensor_.defined(); }

 private:
  double value_ = 0;
  Tensor tensor_;
};

// ---- IIR / FIR filtering

// IIR filter by the difference equation a0*y[n] = sum_k b[k]*x[n-k] - sum_{k>=1} a[k]*y[n-k] (zero
// initial conditions). a_coeffs/b_coeffs: (order+1) or (num_filters, order+1), same shape and dtype as
// the waveform. 2-D coefficients with batching=true filter waveform[..., i, :] with filter i (the
// waveform's dim -2 must be num_filters); batching=false applies every filter to every signal and
// returns (..., num_filters, time). clamp limits the output to [-1, 1]. Differentiable in all three
// tensors (the backward of the recursion is the same recursion run backwards in time).
Tensor lfilter(const Tensor& waveform, const Tensor& a_coeffs, const Tensor& b_coeffs, bool clamp = true,
               bool batching = true);
// lfilter forwards, then backwards in time on the result (zero-phase); clamp applies at the end.
Tensor filtfilt(const Tensor& waveform, const Tensor& a_coeffs, const Tensor& b_coeffs, bool clamp = true);

// Second-order section with coefficients b0..b2 (numerator) and a0..a2 (denominator); clamps to [-1, 1].
Tensor biquad(const Tensor& waveform, FilterArg b0, FilterArg b1, FilterArg b2, FilterArg a0, FilterArg a1,
              FilterArg a2);
// Audio-EQ-cookbook / SoX designs, applied with biquad.
Tensor lowpass_biquad(const Tensor& waveform, int64_t sample_rate, FilterArg cutoff_freq, FilterArg Q = 0.707);
Tensor highpass_biquad(const Tensor& waveform, int64_t sample_rate, FilterArg cutoff_freq, FilterArg Q = 0.707);
// const_skirt_gain: peak gain Q (true) or 0 dB peak gain (false).
Tensor bandpass_biquad(const Tensor& waveform, int64_t sample_rate, FilterArg central_freq, FilterArg Q = 0.707,
                       bool const_skirt_gain = false);
Tensor bandreject_biquad(const Tensor& waveform, int64_t sample_rate, FilterArg central_freq, FilterArg Q = 0.707);
Tensor allpass_biquad(const Tensor& waveform, int64_t sample_rate, FilterArg central_freq, FilterArg Q = 0.707);
// SoX "band": noise=true selects the mode for un-pitched audio.
Tensor band_biquad(const Tensor& waveform, int64_t sample_rate, FilterArg central_freq, FilterArg Q = 0.707,
                   bool noise = false);
// Shelving tone controls; gain in dB.
Tensor bass_biquad(const Tensor& waveform, int64_t sample_rate, FilterArg gain, FilterArg central_freq = 100.0,
                   FilterArg Q = 0.707);
Tensor treble_biquad(const Tensor& waveform, int64_t sample_rate, FilterArg gain, FilterArg central_freq = 3000.0,
                     FilterArg Q = 0.707);
// Peaking equalizer; gain in dB.
Tensor equalizer_biquad(const Tensor& waveform, int64_t sample_rate, FilterArg center_freq, FilterArg gain,
                        FilterArg Q = 0.707);
// ISO 908 CD de-emphasis; sample_rate 44100 or 48000.
Tensor deemph_biquad(const Tensor& waveform, int64_t sample_rate);
// RIAA vinyl playback equalisation; sample_rate 44100, 48000, 88200 or 96000.
Tensor riaa_biquad(const Tensor& waveform, int64_t sample_rate);

// y[n] = x[n] - coeff * x[n-1] (y[0] = x[0]).
Tensor preemphasis(const Tensor& waveform, double coeff = 0.97);
// Inverse of preemphasis: y[n] = x[n] + coeff * y[n-1], through lfilter (so clamped to [-1, 1]).
Tensor deemphasis(const Tensor& waveform, double coeff = 0.97);

// ---- convolution along the last dim (true convolution, not cross-correlation)
// x: (..., N), y: (..., M) with the same rank and broadcastable leading dims. mode "full" gives
// N + M - 1 samples, "valid" max(N, M) - min(N, M) + 1, "same" N (the centre of the full result).
Tensor convolve(const Tensor& x, const Tensor& y, const std::string& mode = "full");
// The same through real FFTs (faster for long operands; float results).
Tensor fftconvolve(const Tensor& x, const Tensor& y, const std::string& mode = "full");

// ---- level, dither, noise
// waveform * 10^(gain_db / 20) (the waveform itself when gain_db is 0).
Tensor gain(const Tensor& waveform, double gain_db = 1.0);
// torchaudio's dither to 16 bits: round(x * 32766 + d) / 32768 with d per density_function: "TPDF" a
// Bartlett window over time (deterministic, as torchaudio), "RPDF" one randomly picked sample of the
// waveform minus 0.5, "GPDF" the sum of seven randomly picked samples (fw's generator, fw::manual_seed).
// noise_shaping adds the previous sample's quantisation error. Not differentiable (rounding).
Tensor dither(const Tensor& waveform, const std::string& density_function = "TPDF", bool noise_shaping = false);
// waveform + a * noise with a per signal such that 10 log10(|waveform|^2 / |a noise|^2) = snr (dB).
// waveform, noise: (..., L); snr: (...); lengths (...): only the first lengths[i] samples count
// towards the energies.
Tensor add_noise(const Tensor& waveform, const Tensor& noise, const Tensor& snr,
                 const std::optional<Tensor>& lengths = std::nullopt);

// ---- resampling (band-limited sinc interpolation, torchaudio's kernel)
// resampling_method: "sinc_interp_hann" (torchaudio 0.13: "sinc_interpolation") or "sinc_interp_kaiser"
// ("kaiser_window"; beta defaults to 14.769656459379492). Output length ceil(new * time / orig) after
// reducing orig/new by their gcd; returns the waveform itself when orig_freq == new_freq.
Tensor resample(const Tensor& waveform, int64_t orig_freq, int64_t new_freq, int64_t lowpass_filter_width = 6,
                double rolloff = 0.99, const std::string& resampling_method = "sinc_interp_hann",
                std::optional<double> beta = std::nullopt);
// The polyphase kernel, shape (new/gcd, 1, 2*width + orig/gcd), and its one-sided width in input
// samples. dtype given: computed in that dtype (what resample does with the waveform's dtype); nullopt:
// computed in float64 and returned as float32 (what transforms.Resample does by default).
std::pair<Tensor, int64_t> sinc_resample_kernel(int64_t orig_freq, int64_t new_freq, int64_t gcd,
                                                int64_t lowpass_filter_width = 6, double rolloff = 0.99,
                                                const std::string& resampling_method = "sinc_interp_hann",
                                                std::optional<double> beta = std::nullopt,
                                                std::optional<ScalarType> dtype = std::nullopt);
// Applies a kernel from sinc_resample_kernel (same orig/new/gcd) to a floating (..., time) waveform of
// the kernel's dtype.
Tensor apply_sinc_resample_kernel(const Tensor& waveform, int64_t orig_freq, int64_t new_freq, int64_t gcd,
                                  const Tensor& kernel, int64_t width);

}  // namespace fw::audio::functional
