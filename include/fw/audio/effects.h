// torchaudio.functional's SoX-style effects and measures (torchaudio 0.13 numerics): contrast,
// dcshift, overdrive, phaser, flanger, loudness (ITU-R BS.1770-4), vad (SoX's voice-activity trim),
// pitch_shift and apply_codec.
//   namespace F = fw::audio::functional;
//   auto y = F::overdrive(x, 20, 20);
//   auto lkfs = F::loudness(x, 16000);          // x: (..., channels, time) -> (...)
//   auto trimmed = F::vad(x, 16000);            // leading silence removed
// Inputs are float32 or float64 `(..., time)` (flanger and loudness: `(..., channels, time)`), on
// any device (the recursive effects run on the host). Arguments are checked; errors read
// "[audio::<function>] ..." and name the offending value. All but vad are differentiable in the
// waveform (phaser and flanger through adjoint loops); vad returns a slice of its input.
#pragma once
#include <optional>
#include <string>

#include "fw/audio/transforms.h"
#include "fw/fw.h"

namespace fw::audio::functional {

// sin(x * pi/2 + c * sin(x * 2 pi)) with c = enhancement_amount / 750; enhancement_amount in [0, 100].
Tensor contrast(const Tensor& waveform, double enhancement_amount = 75.0);
// waveform + shift clamped to [-1, 1]; with limiter_gain, the samples beyond 1 - (|shift| -
// limiter_gain) on the shift's side are compressed by limiter_gain instead (SoX dcshift). The
// input is left unchanged (torchaudio 0.13 writes the limited result into it).
Tensor dcshift(const Tensor& waveform, double shift, std::optional<double> limiter_gain = std::nullopt);
// Cubic soft clipping of waveform * 10^(gain/20) + colour/200 (gain, colour in [0, 100]), a DC
// blocker (y[n] = t[n] - t[n-1] + 0.995 y[n-1]), mixed as 0.5 x + 0.75 y and clamped to [-1, 1].
Tensor overdrive(const Tensor& waveform, double gain = 20, double colour = 20);
// SoX phaser: a modulated delay line with feedback `decay`; gains in (0, 1], delay_ms in (0, 5],
// decay in (0, 0.99], mod_speed in [0.1, 2] Hz; sinusoidal or triangular modulation.
Tensor phaser(const Tensor& waveform, int64_t sample_rate, double gain_in = 0.4, double gain_out = 0.74,
              double delay_ms = 3.0, double decay = 0.4, double mod_speed = 0.5, bool sinusoidal = true);
// SoX flanger on (..., channels, time) with at most 4 channels: delay and depth in ms, regen and
// width in percent, speed in Hz, phase in percent between channels; modulation "sinusoidal" or
// "triangular", interpolation "linear" or "quadratic".
Tensor flanger(const Tensor& waveform, int64_t sample_rate, double delay = 0.0, double depth = 2.0,
               double regen = 0.0, double width = 71.0, double speed = 0.5, double phase = 25.0,
               const std::string& modulation = "sinusoidal", const std::string& interpolation = "linear");
// Integrated loudness in LKFS of (..., channels, time) (at most 5 channels; channels 4 and 5 weigh
// 1.41): K-weighting, 400 ms blocks with 75% overlap, absolute (-70 LKFS) and relative (-10 LU)
// gating. Returns (...).
Tensor loudness(const Tensor& waveform, int64_t sample_rate);
// SoX vad: trims leading silence (or noise) of (channels, time) or (time) audio, returning the
// input from a little before the first voice-activity trigger (measured on each channel; the
// earliest trigger wins). Times are in seconds, frequencies in Hz; measure_duration defaults to
// 2 / measure_freq. Leading dims beyond one are treated as channels, as torchaudio does.
struct VadOptions {
  FW_ARG(double, trigger_level) = 7.0;
  FW_ARG(double, trigger_time) = 0.25;
  FW_ARG(double, search_time) = 1.0;
  FW_ARG(double, allowed_gap) = 0.25;
  FW_ARG(double, pre_trigger_time) = 0.0;
  FW_ARG(double, boot_time) = 0.35;
  FW_ARG(double, noise_up_time) = 0.1;
  FW_ARG(double, noise_down_time) = 0.01;
  FW_ARG(double, noise_reduction_amount) = 1.35;
  FW_ARG(double, measure_freq) = 20.0;
  FW_ARG(std::optional<double>, measure_duration) = std::nullopt;
  FW_ARG(double, measure_smooth_time) = 0.4;
  FW_ARG(double, hp_filter_freq) = 50.0;
  FW_ARG(double, lp_filter_freq) = 6000.0;
  FW_ARG(double, hp_lifter_freq) = 150.0;
  FW_ARG(double, lp_lifter_freq) = 2000.0;
};
Tensor vad(const Tensor& waveform, int64_t sample_rate, const VadOptions& options = {});
// Shifts the pitch by n_steps / bins_per_octave octaves keeping the duration: a phase-vocoder time
// stretch (STFT with n_fft, win_length = n_fft, hop_length = win_length / 4 and a Hann window by
// default) resampled back, cut or zero-padded to the input length.
Tensor pitch_shift(const Tensor& waveform, int64_t sample_rate, int64_t n_steps, int64_t bins_per_octave = 12,
                   int64_t n_fft = 512, std::optional<int64_t> win_length = std::nullopt,
                   std::optional<int64_t> hop_length = std::nullopt, const std::optional<Tensor>& window = std::nullopt);

// torchaudio's apply_codec: encodes the waveform as a `format` file ("wav", "flac", "ogg" or
// "vorbis"; encoding, bits_per_sample and compression as fw::audio::save takes them) and decodes
// it again, so the result carries the format's quantization or coding loss. Input (channels, time)
// (channels_first) or (time, channels), or (time) for mono, with any leading batch dims; float32
// result of the same shape on the input's device, not differentiable. The round trip goes
// through a private temporary file. Unlike torchaudio 0.13 (whose in-memory FLAC round trip
// returns no samples), FLAC works; sox-only formats (mp3, amr-nb, gsm) are not available.
Tensor apply_codec(const Tensor& waveform, int64_t sample_rate, const std::string& format, bool channels_first = true,
                   std::optional<double> compression = std::nullopt,
                   std::optional<std::string> encoding = std::nullopt,
                   std::optional<int64_t> bits_per_sample = std::nullopt);

}  // namespace fw::audio::functional

namespace fw::audio::transforms {

// torchaudio.transforms.Vad, Loudness and PitchShift: modules over the functions above.
class VadImpl : public nn::Cloneable<VadImpl> {
 public:
  explicit VadImpl(int64_t sample_rate, const functional::VadOptions& options_ = {})
      : sample_rate(sample_rate), options(options_) {}
  void reset() override {}
  Tensor forward(const Tensor& waveform) { return functional::vad(waveform, sample_rate, options); }
  int64_t sample_rate;
  functional::VadOptions options;
};
FW_MODULE(Vad);

class LoudnessImpl : public nn::Cloneable<LoudnessImpl> {
 public:
  explicit LoudnessImpl(int64_t sample_rate) : sample_rate(sample_rate) {}
  void reset() override {}
  Tensor forward(const Tensor& waveform) { return functional::loudness(waveform, sample_rate); }
  int64_t sample_rate;
};
FW_MODULE(Loudness);

struct PitchShiftOptions {
  PitchShiftOptions(int64_t sample_rate, int64_t n_steps) : sample_rate_(sample_rate), n_steps_(n_steps) {}
  FW_ARG(int64_t, sample_rate);
  FW_ARG(int64_t, n_steps);
  FW_ARG(int64_t, bins_per_octave) = 12;
  FW_ARG(int64_t, n_fft) = 512;
  FW_ARG(std::optional<int64_t>, win_length) = std::nullopt;
  FW_ARG(std::optional<int64_t>, hop_length) = std::nullopt;
  FW_ARG(WindowFn, window_fn) = hann();
};

// The window (window_fn(win_length)) is made once, at construction.
class PitchShiftImpl : public nn::Cloneable<PitchShiftImpl> {
 public:
  explicit PitchShiftImpl(const PitchShiftOptions& options_) : options(options_) { reset(); }
  void reset() override { window = options.window_fn()(options.win_length().value_or(options.n_fft())); }
  Tensor forward(const Tensor& waveform) {
    return functional::pitch_shift(waveform, options.sample_rate(), options.n_steps(), options.bins_per_octave(),
                                   options.n_fft(), options.win_length(), options.hop_length(),
                                   window.to(waveform.device(), waveform.dtype()));
  }
  PitchShiftOptions options;
  Tensor window;
};
FW_MODULE(PitchShift);

}  // namespace fw::audio::transforms
