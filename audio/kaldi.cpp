// Kaldi-compatible features (fw/audio/kaldi.h), following torchaudio.compliance.kaldi step by
// step (so results agree to float32 rounding) but batched, and with Kaldi's own rules where
// torchaudio stops with an assertion: a signal shorter than one frame gives zero frames with
// snip_edges and reflected samples without it.
#include "fw/audio/kaldi.h"

#include <cfloat>
#include <cmath>

#include "fw/audio/functional.h"
#include "fw/fw.h"

namespace fw::audio::kaldi {

namespace {

struct FrameArgs {
  double blackman_coeff, dither, energy_floor, frame_length, frame_shift, min_duration, preemph, sample_frequency;
  int64_t channel;
  bool raw_energy, remove_dc_offset, round_pow2, snip_edges, subtract_mean;
  std::string window_type;
};
template <class O>
FrameArgs frame_args(const O& o) {
  return {o.blackman_coeff(), o.dither(), o.energy_floor(), o.frame_length(), o.frame_shift(), o.min_duration(),
          o.preemphasis_coefficient(), o.sample_frequency(), o.channel(), o.raw_energy(), o.remove_dc_offset(),
          o.round_to_power_of_two(), o.snip_edges(), o.subtract_mean(), o.window_type()};
}

int64_t next_pow2(int64_t x) {
  int64_t p = 1;
  while (p < x) p <<= 1;
  return p;
}

Tensor feature_window(const std::string& type, int64_t n, double blackman_coeff, ScalarType dt, const char* op) {
  if (type == "hanning") return fw::hann_window(n, false, dt);
  if (type == "hamming") return fw::hamming_window(n, false, 0.54, 0.46, dt);
  if (type == "povey") return fw::hann_window(n, false, dt).pow(0.85);
  if (type == "rectangular") return fw::ones({n}, dt);
  if (type == "blackman") {
    double a = 2 * M_PI / double(n - 1);
    Tensor k = fw::arange(n, dt);
    return (blackman_coeff - fw::cos(k * a) * 0.5) + fw::cos(k * (2 * a)) * (0.5 - blackman_coeff);
  }
  FW_CHECK(false, "[audio::kaldi::", op, "] Invalid window type ", type,
           " (expected hamming, hanning, povey, rectangular or blackman)");
  return {};
}

// log(max(sum x^2, eps)), floored at log(energy_floor) unless that is 0; x is (B, m, n).
Tensor log_energy(const Tensor& x, double energy_floor) {
  Tensor e = fw::clamp((x * x).sum({-1}), double(FLT_EPSILON)).log();
  if (energy_floor == 0.0) return e;
  return fw::clamp(e, std::log(energy_floor));
}

struct Framed {
  Tensor frames;      // (B, m, padded) windowed frames
  Tensor log_energy;  // (B, m)
  int64_t padded = 0;
  DimVec lead;        // leading dims of the output
  bool too_short = false;  // shorter than min_duration: torchaudio returns an empty tensor
};

// Kaldi's framing: sample positions of each frame, reflecting at the ends without snip_edges.
Tensor frame_samples(const Tensor& x, int64_t ws, int64_t shift, bool snip_edges) {
  const int64_t T = x.sizes()[1];
  if (snip_edges) {
    if (T < ws) return fw::empty({x.sizes()[0], 0, ws}, x.dtype());
    return x.unfold(1, ws, shift);  // (B, 1 + (T - ws) / shift, ws)
  }
  const int64_t m = (T + shift / 2) / shift;
  const int64_t pad = ws / 2 - shift / 2;
  if (m == 0) return fw::empty({x.sizes()[0], 0, ws}, x.dtype());
  // The reflected signal below holds 2T + pad samples; the last frame must fit in it.
  if (pad <= T && T > 0 && (m - 1) * shift + ws <= 2 * T + pad) {
    // torchaudio's layout: [x[pad-1] .. x[0]] x [x[T-1] .. x[0]], framed every `shift`.
    Tensor rev = x.flip({1});
    Tensor ext = pad > 0 ? fw::cat({rev.slice(1, T - pad, T), x, rev}, 1) : fw::cat({x.slice(1, -pad, T), rev}, 1);
    return ext.unfold(1, ws, shift).slice(1, 0, m);
  }
  // Very short signals: Kaldi's ExtractWindow reflection, repeated until inside [0, T).
  std::vector<int64_t> idx(size_t(m * ws));
  for (int64_t f = 0; f < m; f++) {
    int64_t start = f * shift + shift / 2 - ws / 2;
    for (int64_t s = 0; s < ws; s++) {
      int64_t p = start + s;
      while (p < 0 || p >= T) p = p < 0 ? -p - 1 : 2 * T - 1 - p;
      idx[size_t(f * ws + s)] = p;
    }
  }
  return x.index_select(1, fw::tensor(idx, kLong)).view({x.sizes()[0], m, ws});
}

Framed frame_signal(const Tensor& waveform, const FrameArgs& a, const char* op) {
  FW_CHECK(waveform.dim() >= 1, "[audio::kaldi::", op, "] expected a (time), (channel, time) or (..., channel, time) ",
           "waveform, got a 0-dim tensor");
  FW_CHECK(waveform.is_floating_point(), "[audio::kaldi::", op, "] expected a floating point waveform, got ",
           waveform.dtype());
  Framed r;
  Tensor x;
  if (waveform.dim() == 1) {
    FW_CHECK(a.channel <= 0, "[audio::kaldi::", op, "] Invalid channel ", a.channel, " for a 1-D waveform");
    x = waveform.unsqueeze(0);
  } else {
    int64_t ch = std::max<int64_t>(a.channel, 0), C = waveform.sizes()[waveform.dim() - 2];
    FW_CHECK(ch < C, "[audio::kaldi::", op, "] Invalid channel ", ch, " for size ", C);
    x = waveform.select(waveform.dim() - 2, ch);
    for (int64_t i = 0; i + 2 < waveform.dim(); i++) r.lead.push_back(waveform.sizes()[i]);
    x = x.reshape({-1, x.sizes()[x.dim() - 1]});
  }
  const int64_t T = x.sizes()[1];
  const int64_t shift = int64_t(a.sample_frequency * a.frame_shift * 0.001);
  const int64_t ws = int64_t(a.sample_frequency * a.frame_length * 0.001);
  r.padded = a.round_pow2 ? next_pow2(ws) : ws;
  FW_CHECK(a.sample_frequency > 0, "[audio::kaldi::", op, "] `sample_frequency` must be greater than zero, got ",
           a.sample_frequency);
  FW_CHECK(ws >= 2, "[audio::kaldi::", op, "] choose a window size ", ws, " that is at least 2 samples (frame_length ",
           a.frame_length, " ms at ", a.sample_frequency, " Hz)");
  FW_CHECK(shift > 0, "[audio::kaldi::", op, "] `window_shift` must be greater than 0 (frame_shift ", a.frame_shift,
           " ms at ", a.sample_frequency, " Hz)");
  FW_CHECK(r.padded % 2 == 0, "[audio::kaldi::", op, "] the padded `window_size` (", r.padded,
           ") must be divisible by two. use `round_to_power_of_two` or change `frame_length`");
  FW_CHECK(a.preemph >= 0.0 && a.preemph <= 1.0, "[audio::kaldi::", op,
           "] `preemphasis_coefficient` must be between [0,1], got ", a.preemph);
  if (double(T) < a.min_duration * a.sample_frequency) {
    r.too_short = true;
    return r;
  }
  Tensor s = frame_samples(x, ws, shift, a.snip_edges);  // (B, m, ws)
  if (a.dither != 0.0) s = s + fw::randn(s.sizes(), s.dtype()) * a.dither;
  if (a.remove_dc_offset) s = s - s.mean({-1}, true);
  if (a.raw_energy) r.log_energy = log_energy(s, a.energy_floor);
  if (a.preemph != 0.0) {
    // x[i] - c x[i-1], with x[-1] = x[0].
    Tensor prev = fw::cat({s.slice(-1, 0, 1), s.slice(-1, 0, ws - 1)}, -1);
    s = s - prev * a.preemph;
  }
  s = s * feature_window(a.window_type, ws, a.blackman_coeff, s.dtype(), op);
  if (r.padded != ws) s = fw::constant_pad_nd(s, {0, r.padded - ws}, 0);
  if (!a.raw_energy) r.log_energy = log_energy(s, a.energy_floor);
  r.frames = s;
  return r;
}

// (B, m, k) -> lead + (m, k), subtracting the per-utterance column means if asked.
Tensor finish(Tensor f, const Framed& r, bool subtract_mean) {
  if (subtract_mean && f.sizes()[1] > 0) f = f - f.mean({1}, true);
  DimVec shape = r.lead;
  shape.push_back(f.sizes()[1]);
  shape.push_back(f.sizes()[2]);
  return f.reshape(shape);
}

// |rfft|^2 of the frames, (B, m, padded/2 + 1), as torchaudio computes it.
Tensor power_spectrum(const Tensor& frames) { return fw::fft::rfft(frames).abs().pow(2.0); }

}  // namespace

double mel_scale_scalar(double freq) { return 1127.0 * std::log(1.0 + freq / 700.0); }
double inverse_mel_scale_scalar(double mel_freq) { return 700.0 * (std::exp(mel_freq / 1127.0) - 1.0); }
Tensor mel_scale(const Tensor& freq) { return fw::log(freq / 700.0 + 1.0) * 1127.0; }
Tensor inverse_mel_scale(const Tensor& mel_freq) { return (fw::exp(mel_freq / 1127.0) - 1.0) * 700.0; }

Tensor vtln_warp_freq(double vtln_low_cutoff, double vtln_high_cutoff, double low_freq, double high_freq,
                      double vtln_warp_factor, const Tensor& freq) {
  FW_CHECK(vtln_low_cutoff > low_freq, "[audio::kaldi::vtln_warp_freq] be sure to set the vtln_low option higher than "
           "low_freq (", vtln_low_cutoff, " vs ", low_freq, ")");
  FW_CHECK(vtln_high_cutoff < high_freq, "[audio::kaldi::vtln_warp_freq] be sure to set the vtln_high option lower "
           "than high_freq [or negative] (", vtln_high_cutoff, " vs ", high_freq, ")");
  const double l = vtln_low_cutoff * std::max(1.0, vtln_warp_factor);
  const double h = vtln_high_cutoff * std::min(1.0, vtln_warp_factor);
  const double scale = 1.0 / vtln_warp_factor, Fl = scale * l, Fh = scale * h;
  FW_CHECK(l > low_freq && h < high_freq, "[audio::kaldi::vtln_warp_freq] warped cutoffs [", l, ", ", h,
           "] fall outside [low_freq, high_freq] = [", low_freq, ", ", high_freq, "]");
  const double scale_left = (Fl - low_freq) / (l - low_freq);
  const double scale_right = (high_freq - Fh) / (high_freq - h);
  // Later rules win, as in torchaudio's sequence of masked assignments.
  Tensor res = (freq - high_freq) * scale_right + high_freq;                      // freq >= h
  res = fw::where(freq < h, freq * scale, res);                                   // freq < h
  res = fw::where(freq < l, (freq - low_freq) * scale_left + low_freq, res);      // freq < l
  res = fw::where((freq < low_freq).logical_or(freq > high_freq), freq, res);     // outside
  return res;
}

Tensor vtln_warp_mel_freq(double vtln_low_cutoff, double vtln_high_cutoff, double low_freq, double high_freq,
                          double vtln_warp_factor, const Tensor& mel_freq) {
  return mel_scale(vtln_warp_freq(vtln_low_cutoff, vtln_high_cutoff, low_freq, high_freq, vtln_warp_factor,
                                  inverse_mel_scale(mel_freq)));
}

std::pair<Tensor, Tensor> get_mel_banks(int64_t num_bins, int64_t window_length_padded, double sample_freq,
                                        double low_freq, double high_freq, double vtln_low, double vtln_high,
                                        double vtln_warp_factor) {
  FW_CHECK(num_bins > 3, "[audio::kaldi::get_mel_banks] Must have at least 3 mel bins, got ", num_bins);
  FW_CHECK(window_length_padded % 2 == 0, "[audio::kaldi::get_mel_banks] the padded window length must be even, got ",
           window_length_padded);
  const int64_t num_fft_bins = window_length_padded / 2;
  const double nyquist = 0.5 * sample_freq;
  if (high_freq <= 0.0) high_freq += nyquist;
  FW_CHECK(low_freq >= 0.0 && low_freq < nyquist && high_freq > 0.0 && high_freq <= nyquist && low_freq < high_freq,
           "[audio::kaldi::get_mel_banks] Bad values in options: low-freq ", low_freq, " and high-freq ", high_freq,
           " vs. nyquist ", nyquist);
  const double bin_width = sample_freq / double(window_length_padded);
  const double mel_low = mel_scale_scalar(low_freq), mel_high = mel_scale_scalar(high_freq);
  const double delta = (mel_high - mel_low) / double(num_bins + 1);
  if (vtln_high < 0.0) vtln_high += nyquist;
  FW_CHECK(vtln_warp_factor == 1.0 ||
               (low_freq < vtln_low && vtln_low < high_freq && vtln_high > 0.0 && vtln_high < high_freq &&
                vtln_low < vtln_high),
           "[audio::kaldi::get_mel_banks] Bad values in options: vtln-low ", vtln_low, " and vtln-high ", vtln_high,
           ", versus low-freq ", low_freq, " and high-freq ", high_freq);
  Tensor bin = fw::arange(num_bins, kLong).unsqueeze(1);
  Tensor left = bin * delta + mel_low;  // float32, as torchaudio's int tensor * float
  Tensor center = (bin + 1.0) * delta + mel_low;
  Tensor right = (bin + 2.0) * delta + mel_low;
  if (vtln_warp_factor != 1.0) {
    left = vtln_warp_mel_freq(vtln_low, vtln_high, low_freq, high_freq, vtln_warp_factor, left);
    center = vtln_warp_mel_freq(vtln_low, vtln_high, low_freq, high_freq, vtln_warp_factor, center);
    right = vtln_warp_mel_freq(vtln_low, vtln_high, low_freq, high_freq, vtln_warp_factor, right);
  }
  Tensor center_freqs = inverse_mel_scale(center);
  Tensor mel = mel_scale(fw::arange(num_fft_bins, kFloat) * bin_width).unsqueeze(0);
  Tensor up = (mel - left) / (center - left);
  Tensor down = (right - mel) / (right - center);
  Tensor bins;
  if (vtln_warp_factor == 1.0) {
    bins = fw::maximum(fw::zeros({1}), fw::minimum(up, down));
  } else {
    Tensor up_idx = (mel > left).logical_and(mel <= center);
    Tensor down_idx = (mel > center).logical_and(mel < right);
    bins = fw::where(up_idx, up, fw::where(down_idx, down, fw::zeros({1})));
  }
  return {bins, center_freqs.squeeze(1)};
}

Tensor spectrogram(const Tensor& waveform, const SpectrogramOptions& o) {
  FrameArgs a = frame_args(o);
  Framed r = frame_signal(waveform, a, "spectrogram");
  if (r.too_short) return fw::empty({0}, waveform.dtype());
  Tensor p = fw::clamp(power_spectrum(r.frames), double(FLT_EPSILON)).log();  // (B, m, padded/2 + 1)
  p = fw::cat({r.log_energy.unsqueeze(-1), p.slice(-1, 1, p.sizes()[2])}, -1);
  return finish(p, r, a.subtract_mean);
}

namespace {
template <class O>
Tensor fbank_impl(const Tensor& waveform, const O& o, bool use_log_fbank, bool use_power, bool subtract_mean,
                  Framed* out_r, const char* op) {
  FrameArgs a = frame_args(o);
  Framed r = frame_signal(waveform, a, op);
  *out_r = r;
  if (r.too_short) return {};
  Tensor spec = use_power ? power_spectrum(r.frames) : fw::fft::rfft(r.frames).abs();
  auto [banks, centers] = get_mel_banks(o.num_mel_bins(), r.padded, a.sample_frequency, o.low_freq(), o.high_freq(),
                                        o.vtln_low(), o.vtln_high(), o.vtln_warp());
  banks = fw::constant_pad_nd(banks.to(spec.dtype()), {0, 1}, 0);  // (bins, padded/2 + 1)
  Tensor mel = fw::matmul(spec, banks.t());
  if (use_log_fbank) mel = fw::clamp(mel, double(FLT_EPSILON)).log();
  if (o.use_energy()) {
    Tensor e = r.log_energy.unsqueeze(-1);
    mel = o.htk_compat() ? fw::cat({mel, e}, -1) : fw::cat({e, mel}, -1);
  }
  if (subtract_mean && mel.sizes()[1] > 0) mel = mel - mel.mean({1}, true);
  return mel;
}
}  // namespace

Tensor fbank(const Tensor& waveform, const FbankOptions& o) {
  Framed r;
  Tensor mel = fbank_impl(waveform, o, o.use_log_fbank(), o.use_power(), o.subtract_mean(), &r, "fbank");
  if (r.too_short) return fw::empty({0}, waveform.dtype());
  return finish(mel, r, false);
}

Tensor mfcc(const Tensor& waveform, const MfccOptions& o) {
  const int64_t nb = o.num_mel_bins(), nc = o.num_ceps();
  FW_CHECK(nc <= nb, "[audio::kaldi::mfcc] num_ceps cannot be larger than num_mel_bins: ", nc, " vs ", nb);
  FW_CHECK(nc >= 1, "[audio::kaldi::mfcc] num_ceps must be positive, got ", nc);
  Framed r;
  Tensor feat = fbank_impl(waveform, o, true, true, false, &r, "mfcc");
  if (r.too_short) return fw::empty({0}, waveform.dtype());
  Tensor energy;
  if (o.use_energy()) {
    energy = feat.select(-1, o.htk_compat() ? nb : 0);
    int64_t off = o.htk_compat() ? 0 : 1;
    feat = feat.slice(-1, off, off + nb);
  }
  // Orthonormal DCT-II with Kaldi's first column sqrt(1/n), first num_ceps columns.
  Tensor dct = functional::create_dct(nb, nb, "ortho");
  Tensor first = fw::full({nb, 1}, std::sqrt(1.0 / double(nb)));
  dct = fw::cat({first, dct.slice(1, 1, nb)}, 1).slice(1, 0, nc).to(feat.dtype());
  feat = fw::matmul(feat, dct);
  if (o.cepstral_lifter() != 0.0) {
    Tensor i = fw::arange(nc, kFloat);
    Tensor lifter = fw::sin(i * (M_PI / o.cepstral_lifter())) * (0.5 * o.cepstral_lifter()) + 1.0;
    feat = feat * lifter.to(feat.dtype());
  }
  if (o.use_energy()) feat = fw::cat({energy.unsqueeze(-1), feat.slice(-1, 1, nc)}, -1);
  if (o.htk_compat()) {
    Tensor e = feat.slice(-1, 0, 1);
    if (!o.use_energy()) e = e * std::sqrt(2.0);
    feat = fw::cat({feat.slice(-1, 1, nc), e}, -1);
  }
  return finish(feat, r, o.subtract_mean());
}

}  // namespace fw::audio::kaldi
