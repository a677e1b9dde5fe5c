// fw::audio::transforms: torchaudio.transforms as fw::nn Modules with libtorch-style Options.
// Defaults are torchaudio 0.13's (Spectrogram: n_fft 400, win_length n_fft, hop win_length/2,
// periodic Hann window, power 2, center, reflect padding). Windows and filter banks are buffers,
// so module.to(dtype) and state_dict work as in torchaudio.
#pragma once
#include <functional>
#include <optional>
#include <string>

#include "fw/audio/functional.h"
#include "fw/nn/module.h"
#include "fw/nn/options.h"

namespace fw::audio::transforms {

using WindowFn = std::function<Tensor(int64_t)>;
// torch.hann_window (periodic).
inline WindowFn hann() { return [](int64_t n) { return fw::hann_window(n); }; }

struct SpectrogramOptions {
  FW_ARG(int64_t, n_fft) = 400;
  FW_ARG(std::optional<int64_t>, win_length) = std::nullopt;
  FW_ARG(std::optional<int64_t>, hop_length) = std::nullopt;
  FW_ARG(int64_t, pad) = 0;
  FW_ARG(WindowFn, window_fn) = hann();
  FW_ARG(std::optional<double>, power) = 2.0;
  FW_ARG(functional::SpecNormalized, normalized) = false;
  FW_ARG(bool, center) = true;
  FW_ARG(std::string, pad_mode) = "reflect";
  FW_ARG(bool, onesided) = true;
};

class SpectrogramImpl : public nn::Cloneable<SpectrogramImpl> {
 public:
  explicit SpectrogramImpl(const SpectrogramOptions& options_ = {});
  void reset() override;
  Tensor forward(const Tensor& waveform);
  SpectrogramOptions options;
  int64_t win_length = 0, hop_length = 0;
  Tensor window;
};
FW_MODULE(Spectrogram);

struct InverseSpectrogramOptions {
  FW_ARG(int64_t, n_fft) = 400;
  FW_ARG(std::optional<int64_t>, win_length) = std::nullopt;
  FW_ARG(std::optional<int64_t>, hop_length) = std::nullopt;
  FW_ARG(int64_t, pad) = 0;
  FW_ARG(WindowFn, window_fn) = hann();
  FW_ARG(functional::SpecNormalized, normalized) = false;
  FW_ARG(bool, center) = true;
  FW_ARG(std::string, pad_mode) = "reflect";
  FW_ARG(bool, onesided) = true;
};

class InverseSpectrogramImpl : public nn::Cloneable<InverseSpectrogramImpl> {
 public:
  explicit InverseSpectrogramImpl(const InverseSpectrogramOptions& options_ = {});
  void reset() override;
  Tensor forward(const Tensor& spectrogram, std::optional<int64_t> length = std::nullopt);
  InverseSpectrogramOptions options;
  int64_t win_length = 0, hop_length = 0;
  Tensor window;
};
FW_MODULE(InverseSpectrogram);

struct GriffinLimOptions {
  FW_ARG(int64_t, n_fft) = 400;
  FW_ARG(int64_t, n_iter) = 32;
  FW_ARG(std::optional<int64_t>, win_length) = std::nullopt;
  FW_ARG(std::optional<int64_t>, hop_length) = std::nullopt;
  FW_ARG(WindowFn, window_fn) = hann();
  FW_ARG(double, power) = 2.0;
  FW_ARG(double, momentum) = 0.99;
  FW_ARG(std::optional<int64_t>, length) = std::nullopt;
  FW_ARG(bool, rand_init) = true;
};

class GriffinLimImpl : public nn::Cloneable<GriffinLimImpl> {
 public:
  explicit GriffinLimImpl(const GriffinLimOptions& options_ = {});
  void reset() override;
  Tensor forward(const Tensor& specgram);
  GriffinLimOptions options;
  int64_t win_length = 0, hop_length = 0;
  Tensor window;
};
FW_MODULE(GriffinLim);

struct AmplitudeToDBOptions {
  FW_ARG(std::string, stype) = "power";  // "power" (10 log10) or "magnitude" (20 log10)
  FW_ARG(std::optional<double>, top_db) = std::nullopt;
};

class AmplitudeToDBImpl : public nn::Cloneable<AmplitudeToDBImpl> {
 public:
  explicit AmplitudeToDBImpl(const AmplitudeToDBOptions& options_ = {});
  void reset() override;
  Tensor forward(const Tensor& x);
  AmplitudeToDBOptions options;
  double multiplier = 10.0, amin = 1e-10, ref_value = 1.0, db_multiplier = 0.0;
};
FW_MODULE(AmplitudeToDB);

struct MelScaleOptions {
  FW_ARG(int64_t, n_mels) = 128;
  FW_ARG(int64_t, sample_rate) = 16000;
  FW_ARG(double, f_min) = 0.0;
  FW_ARG(std::optional<double>, f_max) = std::nullopt;
  FW_ARG(int64_t, n_stft) = 201;
  FW_ARG(std::optional<std::string>, norm) = std::nullopt;
  FW_ARG(std::string, mel_scale) = "htk";
};

class MelScaleImpl : public nn::Cloneable<MelScaleImpl> {
 public:
  explicit MelScaleImpl(const MelScaleOptions& options_ = {});
  void reset() override;
  // (..., freq, time) -> (..., n_mels, time)
  Tensor forward(const Tensor& specgram);
  MelScaleOptions options;
  Tensor fb;  // (n_stft, n_mels)
};
FW_MODULE(MelScale);

struct InverseMelScaleOptions {
  explicit InverseMelScaleOptions(int64_t n_stft) : n_stft_(n_stft) {}
  FW_ARG(int64_t, n_stft);
  FW_ARG(int64_t, n_mels) = 128;
  FW_ARG(int64_t, sample_rate) = 16000;
  FW_ARG(double, f_min) = 0.0;
  FW_ARG(std::optional<double>, f_max) = std::nullopt;
  FW_ARG(int64_t, max_iter) = 100000;
  FW_ARG(double, tolerance_loss) = 1e-5;
  FW_ARG(double, tolerance_change) = 1e-8;
  FW_ARG(double, lr) = 0.1;         // torchaudio's sgdargs
  FW_ARG(double, momentum) = 0.9;
  FW_ARG(std::optional<std::string>, norm) = std::nullopt;
  FW_ARG(std::string, mel_scale) = "htk";
};

// Non-negative spectrogram whose mel projection matches the input, by projected SGD on the
// squared error as torchaudio 0.13 does (random start: results vary with the seed).
class InverseMelScaleImpl : public nn::Cloneable<InverseMelScaleImpl> {
 public:
  explicit InverseMelScaleImpl(const InverseMelScaleOptions& options_);
  void reset() override;
  Tensor forward(const Tensor& melspec);
  InverseMelScaleOptions options;
  Tensor fb;
};
FW_MODULE(InverseMelScale);

struct MelSpectrogramOptions {
  FW_ARG(int64_t, sample_rate) = 16000;
  FW_ARG(int64_t, n_fft) = 400;
  FW_ARG(std::optional<int64_t>, win_length) = std::nullopt;
  FW_ARG(std::optional<int64_t>, hop_length) = std::nullopt;
  FW_ARG(double, f_min) = 0.0;
  FW_ARG(std::optional<double>, f_max) = std::nullopt;
  FW_ARG(int64_t, pad) = 0;
  FW_ARG(int64_t, n_mels) = 128;
  FW_ARG(WindowFn, window_fn) = hann();
  FW_ARG(double, power) = 2.0;
  FW_ARG(bool, normalized) = false;
  FW_ARG(bool, center) = true;
  FW_ARG(std::string, pad_mode) = "reflect";
  FW_ARG(bool, onesided) = true;
  FW_ARG(std::optional<std::string>, norm) = std::nullopt;
  FW_ARG(std::string, mel_scale) = "htk";
};

class MelSpectrogramImpl : public nn::Cloneable<MelSpectrogramImpl> {
 public:
  explicit MelSpectrogramImpl(const MelSpectrogramOptions& options_ = {});
  void reset() override;
  // (..., time) -> (..., n_mels, frames)
  Tensor forward(const Tensor& waveform);
  MelSpectrogramOptions options;
  Spectrogram spectrogram{nullptr};
  MelScale mel_scale{nullptr};
};
FW_MODULE(MelSpectrogram);

struct MFCCOptions {
  FW_ARG(int64_t, sample_rate) = 16000;
  FW_ARG(int64_t, n_mfcc) = 40;
  FW_ARG(int64_t, dct_type) = 2;
  FW_ARG(std::optional<std::string>, norm) = std::string("ortho");
  FW_ARG(bool, log_mels) = false;
  // torchaudio's melkwargs; its sample_rate is replaced by this sample_rate.
  FW_ARG(MelSpectrogramOptions, melkwargs) = {};
};

class MFCCImpl : public nn::Cloneable<MFCCImpl> {
 public:
  explicit MFCCImpl(const MFCCOptions& options_ = {});
  void reset() override;
  // (..., time) -> (..., n_mfcc, frames)
  Tensor forward(const Tensor& waveform);
  MFCCOptions options;
  MelSpectrogram mel_spectrogram{nullptr};
  AmplitudeToDB amplitude_to_db{nullptr};
  Tensor dct_mat;  // (n_mels, n_mfcc)
};
FW_MODULE(MFCC);

struct LFCCOptions {
  FW_ARG(int64_t, sample_rate) = 16000;
  FW_ARG(int64_t, n_filter) = 128;
  FW_ARG(double, f_min) = 0.0;
  FW_ARG(std::optional<double>, f_max) = std::nullopt;
  FW_ARG(int64_t, n_lfcc) = 40;
  FW_ARG(int64_t, dct_type) = 2;
  FW_ARG(std::optional<std::string>, norm) = std::string("ortho");
  FW_ARG(bool, log_lf) = false;
  FW_ARG(SpectrogramOptions, speckwargs) = {};
};

class LFCCImpl : public nn::Cloneable<LFCCImpl> {
 public:
  explicit LFCCImpl(const LFCCOptions& options_ = {});
  void reset() override;
  Tensor forward(const Tensor& waveform);
  LFCCOptions options;
  Spectrogram spectrogram{nullptr};
  AmplitudeToDB amplitude_to_db{nullptr};
  Tensor filter_mat, dct_mat;
};
FW_MODULE(LFCC);

struct ResampleOptions {
  FW_ARG(int64_t, orig_freq) = 16000;
  FW_ARG(int64_t, new_freq) = 16000;
  FW_ARG(std::string, resampling_method) = "sinc_interp_hann";
  FW_ARG(int64_t, lowpass_filter_width) = 6;
  FW_ARG(double, rolloff) = 0.99;
  FW_ARG(std::optional<double>, beta) = std::nullopt;
  FW_ARG(std::optional<ScalarType>, dtype) = std::nullopt;  // nullopt: kernel built in float64, stored as float32
};

// Resampling with the sinc kernel computed once.
class ResampleImpl : public nn::Cloneable<ResampleImpl> {
 public:
  explicit ResampleImpl(const ResampleOptions& options_ = {});
  void reset() override;
  Tensor forward(const Tensor& waveform);
  ResampleOptions options;
  int64_t gcd = 1, width = 0;
  Tensor kernel;
};
FW_MODULE(Resample);

// SpecAugment-style masking of (..., freq, time); iid_masks on 4-D input masks each (batch,
// channel) independently. p caps the mask width at p * axis length.
struct MaskingOptions {
  explicit MaskingOptions(int64_t mask_param) : mask_param_(mask_param) {}
  FW_ARG(int64_t, mask_param);
  FW_ARG(bool, iid_masks) = false;
  FW_ARG(double, p) = 1.0;
};

class FrequencyMaskingImpl : public nn::Cloneable<FrequencyMaskingImpl> {
 public:
  explicit FrequencyMaskingImpl(const MaskingOptions& options_) : options(options_) {}
  FrequencyMaskingImpl(int64_t freq_mask_param, bool iid_masks = false)
      : options(MaskingOptions(freq_mask_param).iid_masks(iid_masks)) {}
  void reset() override {}
  Tensor forward(const Tensor& specgram, double mask_value = 0.0);
  MaskingOptions options;
};
FW_MODULE(FrequencyMasking);

class TimeMaskingImpl : public nn::Cloneable<TimeMaskingImpl> {
 public:
  explicit TimeMaskingImpl(const MaskingOptions& options_) : options(options_) {}
  TimeMaskingImpl(int64_t time_mask_param, bool iid_masks = false, double p = 1.0)
      : options(MaskingOptions(time_mask_param).iid_masks(iid_masks).p(p)) {}
  void reset() override {}
  Tensor forward(const Tensor& specgram, double mask_value = 0.0);
  MaskingOptions options;
};
FW_MODULE(TimeMasking);

struct SpecAugmentOptions {
  FW_ARG(int64_t, n_time_masks) = 1;
  FW_ARG(int64_t, time_mask_param) = 80;
  FW_ARG(int64_t, n_freq_masks) = 1;
  FW_ARG(int64_t, freq_mask_param) = 27;
  FW_ARG(bool, iid_masks) = true;
  FW_ARG(double, p) = 1.0;
  FW_ARG(bool, zero_masking) = false;  // false: masks take the spectrogram's mean
};

class SpecAugmentImpl : public nn::Cloneable<SpecAugmentImpl> {
 public:
  explicit SpecAugmentImpl(const SpecAugmentOptions& options_ = {}) : options(options_) {}
  void reset() override {}
  Tensor forward(const Tensor& specgram);
  SpecAugmentOptions options;
};
FW_MODULE(SpecAugment);

struct TimeStretchOptions {
  FW_ARG(std::optional<int64_t>, hop_length) = std::nullopt;
  FW_ARG(int64_t, n_freq) = 201;
  FW_ARG(std::optional<double>, fixed_rate) = std::nullopt;
};

class TimeStretchImpl : public nn::Cloneable<TimeStretchImpl> {
 public:
  explicit TimeStretchImpl(const TimeStretchOptions& options_ = {});
  void reset() override;
  Tensor forward(const Tensor& complex_specgrams, std::optional<double> overriding_rate = std::nullopt);
  TimeStretchOptions options;
  Tensor phase_advance;  // (n_freq, 1)
};
FW_MODULE(TimeStretch);

class ComputeDeltasImpl : public nn::Cloneable<ComputeDeltasImpl> {
 public:
  explicit ComputeDeltasImpl(int64_t win_length = 5, std::string mode = "replicate")
      : win_length(win_length), mode(std::move(mode)) {}
  void reset() override {}
  Tensor forward(const Tensor& specgram) { return functional::compute_deltas(specgram, win_length, mode); }
  int64_t win_length;
  std::string mode;
};
FW_MODULE(ComputeDeltas);

struct SlidingWindowCmnOptions {
  FW_ARG(int64_t, cmn_window) = 600;
  FW_ARG(int64_t, min_cmn_window) = 100;
  FW_ARG(bool, center) = false;
  FW_ARG(bool, norm_vars) = false;
};

class SlidingWindowCmnImpl : public nn::Cloneable<SlidingWindowCmnImpl> {
 public:
  explicit SlidingWindowCmnImpl(const SlidingWindowCmnOptions& options_ = {}) : options(options_) {}
  void reset() override {}
  Tensor forward(const Tensor& specgram);
  SlidingWindowCmnOptions options;
};
FW_MODULE(SlidingWindowCmn);

// Scales by an amplitude factor, a power factor or decibels, then clamps to [-1, 1].
class VolImpl : public nn::Cloneable<VolImpl> {
 public:
  explicit VolImpl(double gain, std::string gain_type = "amplitude");
  void reset() override {}
  Tensor forward(const Tensor& waveform);
  double gain;
  std::string gain_type;
};
FW_MODULE(Vol);

// Fade in / out over the first and last samples: linear, exponential, logarithmic, quarter_sine,
// half_sine.
class FadeImpl : public nn::Cloneable<FadeImpl> {
 public:
  explicit FadeImpl(int64_t fade_in_len = 0, int64_t fade_out_len = 0, std::string fade_shape = "linear");
  void reset() override {}
  Tensor forward(const Tensor& waveform);
  int64_t fade_in_len, fade_out_len;
  std::string fade_shape;
};
FW_MODULE(Fade);

struct SpectralCentroidOptions {
  explicit SpectralCentroidOptions(int64_t sample_rate) : sample_rate_(sample_rate) {}
  FW_ARG(int64_t, sample_rate);
  FW_ARG(int64_t, n_fft) = 400;
  FW_ARG(std::optional<int64_t>, win_length) = std::nullopt;
  FW_ARG(std::optional<int64_t>, hop_length) = std::nullopt;
  FW_ARG(int64_t, pad) = 0;
  FW_ARG(WindowFn, window_fn) = hann();
};

class SpectralCentroidImpl : public nn::Cloneable<SpectralCentroidImpl> {
 public:
  explicit SpectralCentroidImpl(const SpectralCentroidOptions& options_);
  void reset() override;
  Tensor forward(const Tensor& waveform);
  SpectralCentroidOptions options;
  int64_t win_length = 0, hop_length = 0;
  Tensor window;
};
FW_MODULE(SpectralCentroid);

class MuLawEncodingImpl : public nn::Cloneable<MuLawEncodingImpl> {
 public:
  explicit MuLawEncodingImpl(int64_t quantization_channels = 256) : quantization_channels(quantization_channels) {}
  void reset() override {}
  Tensor forward(const Tensor& x) { return functional::mu_law_encoding(x, quantization_channels); }
  int64_t quantization_channels;
};
FW_MODULE(MuLawEncoding);

class MuLawDecodingImpl : public nn::Cloneable<MuLawDecodingImpl> {
 public:
  explicit MuLawDecodingImpl(int64_t quantization_channels = 256) : quantization_channels(quantization_channels) {}
  void reset() override {}
  Tensor forward(const Tensor& x_mu) { return functional::mu_law_decoding(x_mu, quantization_channels); }
  int64_t quantization_channels;
};
FW_MODULE(MuLawDecoding);

}  // namespace fw::audio::transforms
