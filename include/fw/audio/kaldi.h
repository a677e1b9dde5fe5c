// fw::audio::kaldi: Kaldi-compatible features with torchaudio.compliance.kaldi's options and
// defaults (povey window, snip_edges, 1127 ln(1 + f/700) mel scale, float32 epsilon log floor).
// Like Kaldi, the features expect samples on the int16 scale (multiply a [-1, 1] waveform by
// 32768). Inputs: (time), (channel, time) as torchaudio (the `channel` option picks one, -1 = 0),
// or batched (..., channel, time) -> (..., frames, bins).
#pragma once
#include <string>

#include "fw/nn/options.h"
#include "fw/tensor.h"

namespace fw::audio::kaldi {

// Framing options shared by spectrogram, fbank and mfcc (Kaldi's FrameExtractionOptions).
#define FW_KALDI_FRAME_ARGS                                       \
  FW_ARG(double, blackman_coeff) = 0.42;                          \
  FW_ARG(int64_t, channel) = -1;                                  \
  FW_ARG(double, dither) = 0.0;                                   \
  FW_ARG(double, energy_floor) = 1.0;                             \
  FW_ARG(double, frame_length) = 25.0; /* ms */                   \
  FW_ARG(double, frame_shift) = 10.0;  /* ms */                   \
  FW_ARG(double, min_duration) = 0.0;  /* s */                    \
  FW_ARG(double, preemphasis_coefficient) = 0.97;                 \
  FW_ARG(bool, raw_energy) = true;                                \
  FW_ARG(bool, remove_dc_offset) = true;                          \
  FW_ARG(bool, round_to_power_of_two) = true;                     \
  FW_ARG(double, sample_frequency) = 16000.0;                     \
  FW_ARG(bool, snip_edges) = true;                                \
  FW_ARG(bool, subtract_mean) = false;                            \
  FW_ARG(std::string, window_type) = "povey"; /* hamming hanning povey rectangular blackman */

// Mel filter bank options (Kaldi's MelBanksOptions, plus VTLN warping).
#define FW_KALDI_MEL_ARGS                         \
  FW_ARG(double, high_freq) = 0.0; /* <= 0: offset from Nyquist */ \
  FW_ARG(bool, htk_compat) = false;               \
  FW_ARG(double, low_freq) = 20.0;                \
  FW_ARG(int64_t, num_mel_bins) = 23;             \
  FW_ARG(bool, use_energy) = false;               \
  FW_ARG(double, vtln_high) = -500.0;             \
  FW_ARG(double, vtln_low) = 100.0;               \
  FW_ARG(double, vtln_warp) = 1.0;

struct SpectrogramOptions {
  FW_KALDI_FRAME_ARGS
};

struct FbankOptions {
  FW_KALDI_FRAME_ARGS
  FW_KALDI_MEL_ARGS
  FW_ARG(bool, use_log_fbank) = true;
  FW_ARG(bool, use_power) = true;
};

struct MfccOptions {
  FW_KALDI_FRAME_ARGS
  FW_KALDI_MEL_ARGS
  FW_ARG(double, cepstral_lifter) = 22.0;
  FW_ARG(int64_t, num_ceps) = 13;
};

// Log power spectrum, (frames, padded_window/2 + 1); column 0 holds the log energy.
Tensor spectrogram(const Tensor& waveform, const SpectrogramOptions& options = {});
// Log mel filter bank energies, (frames, num_mel_bins [+1 with use_energy]).
Tensor fbank(const Tensor& waveform, const FbankOptions& options = {});
// MFCCs, (frames, num_ceps).
Tensor mfcc(const Tensor& waveform, const MfccOptions& options = {});

// Kaldi's mel scale and the triangular banks: (num_bins, window_length_padded / 2) weights and
// the (num_bins) centre frequencies, VTLN-warped when vtln_warp_factor != 1.
double mel_scale_scalar(double freq);
double inverse_mel_scale_scalar(double mel_freq);
Tensor mel_scale(const Tensor& freq);
Tensor inverse_mel_scale(const Tensor& mel_freq);
Tensor vtln_warp_freq(double vtln_low_cutoff, double vtln_high_cutoff, double low_freq, double high_freq,
                      double vtln_warp_factor, const Tensor& freq);
Tensor vtln_warp_mel_freq(double vtln_low_cutoff, double vtln_high_cutoff, double low_freq, double high_freq,
                          double vtln_warp_factor, const Tensor& mel_freq);
std::pair<Tensor, Tensor> get_mel_banks(int64_t num_bins, int64_t window_length_padded, double sample_freq,
                                        double low_freq, double high_freq, double vtln_low, double vtln_high,
                                        double vtln_warp_factor);

}  // namespace fw::audio::kaldi
