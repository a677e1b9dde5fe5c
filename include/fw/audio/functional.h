// fw::audio::functional: torchaudio.functional with the same names, argument order and defaults.
// Inputs are batched over any leading dims ((..., time) waveforms, (..., freq, time)
// spectrograms); everything built from fw ops is differentiable.
#pragma once
#include <algorithm>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "fw/audio/filtering.h"
#include "fw/fft.h"
#include "fw/tensor.h"

namespace fw::audio::functional {

// torchaudio's `normalized` argument: false/true (true = "window") or "window" / "frame_length".
struct SpecNormalized {
  enum Mode { None, Window, FrameLength } mode = None;
  SpecNormalized(bool b = false) : mode(b ? Window : None) {}
  SpecNormalized(const char* s) : SpecNormalized(std::string(s)) {}
  SpecNormalized(const std::string& s);
};

// |STFT|^power of (..., time) -> (..., n_fft/2+1, frames); power = nullopt returns the complex STFT.
Tensor spectrogram(const Tensor& waveform, int64_t pad, const Tensor& window, int64_t n_fft, int64_t hop_length,
                   int64_t win_length, std::optional<double> power, SpecNormalized normalized, bool center = true,
                   const std::string& pad_mode = "reflect", bool onesided = true);
// Complex (..., freq, frames) -> (..., time) by inverse STFT.
Tensor inverse_spectrogram(const Tensor& spectrogram, std::optional<int64_t> length, int64_t pad, const Tensor& window,
                           int64_t n_fft, int64_t hop_length, int64_t win_length, SpecNormalized normalized,
                           bool center = true, const std::string& pad_mode = "reflect", bool onesided = true);
// Phase reconstruction (Griffin-Lim with momentum) from a magnitude^power spectrogram.
Tensor griffinlim(const Tensor& specgram, const Tensor& window, int64_t n_fft, int64_t hop_length, int64_t win_length,
                  double power, int64_t n_iter, double momentum, std::optional<int64_t> length, bool rand_init);

// Filter banks and the DCT matrix.
Tensor melscale_fbanks(int64_t n_freqs, double f_min, double f_max, int64_t n_mels, int64_t sample_rate,
                       std::optional<std::string> norm = std::nullopt, const std::string& mel_scale = "htk");
Tensor linear_fbanks(int64_t n_freqs, double f_min, double f_max, int64_t n_filter, int64_t sample_rate);
Tensor create_dct(int64_t n_mfcc, int64_t n_mels, std::optional<std::string> norm);

// Decibels: multiplier 10 (power) or 20 (amplitude); db_multiplier = log10(max(amin, ref)).
Tensor amplitude_to_DB(const Tensor& x, double multiplier, double amin, double db_multiplier,
                       std::optional<double> top_db = std::nullopt);
Tensor DB_to_amplitude(const Tensor& x, double ref, double power);

Tensor mu_law_encoding(const Tensor& x, int64_t quantization_channels);
Tensor mu_law_decoding(const Tensor& x_mu, int64_t quantization_channels);

// Speeds up complex (..., freq, time) spectrograms by `rate` keeping the pitch.
Tensor phase_vocoder(const Tensor& complex_specgrams, double rate, const Tensor& phase_advance);

// SpecAugment masks. mask_along_axis: one mask for the whole batch on axis 1 (freq) or 2 (time) of
// (..., freq, time); _iid: an independent mask per (batch, channel) on axis 2 or 3 of 4-D input.
Tensor mask_along_axis(const Tensor& specgram, int64_t mask_param, double mask_value, int64_t axis, double p = 1.0);
Tensor mask_along_axis_iid(const Tensor& specgrams, int64_t mask_param, double mask_value, int64_t axis,
                           double p = 1.0);

// Delta coefficients along time (regression over win_length frames).
Tensor compute_deltas(const Tensor& specgram, int64_t win_length = 5, const std::string& mode = "replicate");
// Cepstral mean (and variance) normalisation over a sliding window of frames; (..., time, feats).
Tensor sliding_window_cmn(const Tensor& specgram, int64_t cmn_window = 600, int64_t min_cmn_window = 100,
                          bool center = false, bool norm_vars = false);
Tensor spectral_centroid(const Tensor& waveform, int64_t sample_rate, int64_t pad, const Tensor& window, int64_t n_fft,
                         int64_t hop_length, int64_t win_length);
// Pitch by normalised cross-correlation and median smoothing; (..., frames) in Hz.
Tensor detect_pitch_frequency(const Tensor& waveform, int64_t sample_rate, double frame_time = 1e-2,
                              int64_t win_length = 30, int64_t freq_low = 85, int64_t freq_high = 3400);

// Levenshtein distance between two sequences.
template <class Seq>
int64_t edit_distance(const Seq& a, const Seq& b) {
  std::vector<int64_t> prev(b.size() + 1), cur(b.size() + 1);
  for (size_t j = 0; j <= b.size(); j++) prev[j] = int64_t(j);
  for (size_t i = 1; i <= a.size(); i++) {
    cur[0] = int64_t(i);
    for (size_t j = 1; j <= b.size(); j++) {
      cur[j] = a[i - 1] == b[j - 1] ? prev[j - 1] : 1 + std::min({prev[j - 1], cur[j - 1], prev[j]});
    }
    std::swap(prev, cur);
  }
  return prev[b.size()];
}

}  // namespace fw::audio::functional
