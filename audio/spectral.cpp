// fw::audio::functional, spectral part: spectrograms, filter banks, dB scaling, mu-law, phase
// vocoder, masks, deltas, CMN, spectral centroid and pitch. Formulas and defaults follow
// torchaudio 0.13; float32 filter banks are computed in float32 in torchaudio's operation order
// so they agree to rounding.
#include <cmath>

#include "fw/audio/functional.h"
#include "core/parallel.h"
#include "fw/fw.h"

namespace fw::audio::functional {

namespace {

DimVec leading(const Tensor& t, int64_t keep_last) {
  DimVec s;
  for (int64_t i = 0; i + keep_last < t.dim(); i++) s.push_back(t.sizes()[i]);
  return s;
}
// lead + the last `n` sizes of t.
DimVec with_tail(DimVec lead, const Tensor& t, int64_t n) {
  for (int64_t i = t.dim() - n; i < t.dim(); i++) lead.push_back(t.sizes()[i]);
  return lead;
}

double hz_to_mel(double f, const std::string& scale) {
  if (scale == "htk") return 2595.0 * std::log10(1.0 + f / 700.0);
  const double f_sp = 200.0 / 3, min_log_hz = 1000.0, min_log_mel = min_log_hz / f_sp, logstep = std::log(6.4) / 27.0;
  return f >= min_log_hz ? min_log_mel + std::log(f / min_log_hz) / logstep : f / f_sp;
}

Tensor mel_to_hz(const Tensor& mels, const std::string& scale) {
  if (scale == "htk") return (fw::pow(10.0, mels / 2595.0) - 1.0) * 700.0;
  const double f_sp = 200.0 / 3, min_log_hz = 1000.0, min_log_mel = min_log_hz / f_sp, logstep = std::log(6.4) / 27.0;
  Tensor lin = mels * f_sp;
  Tensor log = fw::exp((mels - min_log_mel) * logstep) * min_log_hz;
  return fw::where(mels >= min_log_mel, log, lin);
}

// (n_freqs, n_filter) triangles with corners at f_pts (n_filter + 2 points).
Tensor triangular_filterbank(const Tensor& all_freqs, const Tensor& f_pts) {
  int64_t n = f_pts.sizes()[0];
  Tensor f_diff = f_pts.slice(0, 1, n) - f_pts.slice(0, 0, n - 1);
  Tensor slopes = f_pts.unsqueeze(0) - all_freqs.unsqueeze(1);
  Tensor down = (slopes.slice(1, 0, n - 2) * -1.0) / f_diff.slice(0, 0, n - 2);
  Tensor up = slopes.slice(1, 2, n) / f_diff.slice(0, 1, n - 1);
  return fw::maximum(fw::zeros({1}), fw::minimum(down, up));
}

// re^2 + im^2 of a (..., freq, frames) complex view whose memory is (..., frames, freq), in one
// pass over that memory (no autograd: the differentiable path is abs().pow(2)). Equal to
// torchaudio's |z|^2 to an ulp or two.
Tensor power_spectrum(const Tensor& spec) {
  Tensor z = spec.transpose(-1, -2).contiguous();  // a view of the FFT output: no copy
  Tensor out = fw::empty(z.sizes(), to_real_value_type(z.dtype()));
  const int64_t n = z.numel();
  if (z.dtype() == kComplexFloat) {
    const float* x = reinterpret_cast<const float*>(z.data_ptr());
    float* y = out.data_ptr<float>();
    detail::parallel_for(0, n, 1 << 15, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; i++) y[i] = x[2 * i] * x[2 * i] + x[2 * i + 1] * x[2 * i + 1];
    });
  } else {
    const double* x = reinterpret_cast<const double*>(z.data_ptr());
    double* y = out.data_ptr<double>();
    detail::parallel_for(0, n, 1 << 15, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; i++) y[i] = x[2 * i] * x[2 * i] + x[2 * i + 1] * x[2 * i + 1];
    });
  }
  return out.transpose(-1, -2);
}

}  // namespace

SpecNormalized::SpecNormalized(const std::string& s) {
  if (s == "window") mode = Window;
  else if (s == "frame_length") mode = FrameLength;
  else FW_CHECK(false, "[audio::spectrogram] Invalid normalized parameter: ", s, " (expected \"window\" or \"frame_length\")");
}

Tensor spectrogram(const Tensor& waveform, int64_t pad, const Tensor& window, int64_t n_fft, int64_t hop_length,
                   int64_t win_length, std::optional<double> power, SpecNormalized normalized, bool center,
                   const std::string& pad_mode, bool onesided) {
  FW_CHECK(waveform.dim() >= 1, "[audio::spectrogram] expected a (..., time) waveform, got a 0-dim tensor");
  FW_CHECK(!power || *power > 0, "[audio::spectrogram] power must be positive, got ", *power);
  FW_CHECK(pad >= 0, "[audio::spectrogram] pad must be non-negative, got ", pad);
  Tensor x = pad > 0 ? fw::constant_pad_nd(waveform, {pad, pad}, 0) : waveform;
  DimVec lead = leading(x, 1);
  x = x.reshape({-1, x.sizes()[x.dim() - 1]});
  Tensor spec = fw::stft(x, n_fft, hop_length, win_length, window, center, pad_mode,
                         normalized.mode == SpecNormalized::FrameLength, onesided, true);
  spec = spec.reshape(with_tail(lead, spec, 2));
  if (normalized.mode == SpecNormalized::Window) spec = spec / window.pow(2.0).sum().sqrt();
  if (!power) return spec;
  if (*power == 2.0 && !(spec.requires_grad() && fw::is_grad_enabled()) && normalized.mode != SpecNormalized::Window)
    return power_spectrum(spec);
  // |z| over the FFT's own (frames, freq) memory order, then the (freq, frames) view again.
  Tensor mag = spec.transpose(-1, -2).abs().transpose(-1, -2);
  if (*power == 1.0) return mag;
  return mag.pow(*power);
}

Tensor inverse_spectrogram(const Tensor& spectrogram, std::optional<int64_t> length, int64_t pad, const Tensor& window,
                           int64_t n_fft, int64_t hop_length, int64_t win_length, SpecNormalized normalized,
                           bool center, const std::string& pad_mode, bool onesided) {
  FW_CHECK(spectrogram.is_complex(), "[audio::inverse_spectrogram] Expected `spectrogram` to be complex dtype, got ",
           spectrogram.dtype());
  FW_CHECK(spectrogram.dim() >= 2, "[audio::inverse_spectrogram] expected (..., freq, time), got shape ",
           spectrogram.sizes());
  Tensor s = spectrogram;
  if (normalized.mode == SpecNormalized::Window) s = s * window.pow(2.0).sum().sqrt();
  DimVec lead = leading(s, 2);
  s = s.reshape({-1, s.sizes()[s.dim() - 2], s.sizes()[s.dim() - 1]});
  std::optional<int64_t> len;
  if (length) len = *length + 2 * pad;
  Tensor w = fw::istft(s, n_fft, hop_length, win_length, window, center, normalized.mode == SpecNormalized::FrameLength,
                       onesided, len, false);
  if (length && pad > 0) w = w.slice(-1, pad, w.sizes()[w.dim() - 1] - pad);
  return w.reshape(with_tail(lead, w, 1));
}

Tensor griffinlim(const Tensor& specgram, const Tensor& window, int64_t n_fft, int64_t hop_length, int64_t win_length,
                  double power, int64_t n_iter, double momentum, std::optional<int64_t> length, bool rand_init) {
  FW_CHECK(momentum >= 0 && momentum < 1, "[audio::griffinlim] momentum must be in range [0, 1). Found: ", momentum);
  FW_CHECK(specgram.dim() >= 2, "[audio::griffinlim] expected (..., freq, time), got shape ", specgram.sizes());
  FW_CHECK(n_iter >= 0, "[audio::griffinlim] n_iter must be non-negative, got ", n_iter);
  momentum = momentum / (1 + momentum);
  DimVec lead = leading(specgram, 2);
  Tensor mag = specgram.reshape({-1, specgram.sizes()[specgram.dim() - 2], specgram.sizes()[specgram.dim() - 1]})
                   .pow(1.0 / power);
  ScalarType cdt = to_complex_type(mag.dtype());
  Tensor angles = rand_init ? fw::complex(fw::rand(mag.sizes(), mag.dtype()), fw::rand(mag.sizes(), mag.dtype()))
                            : fw::complex(fw::ones(mag.sizes(), mag.dtype()), fw::zeros(mag.sizes(), mag.dtype()));
  FW_ASSERT(angles.dtype() == cdt);
  Tensor tprev;
  for (int64_t i = 0; i < n_iter; i++) {
    Tensor inverse = fw::istft(mag * angles, n_fft, hop_length, win_length, window, true, false, std::nullopt, length);
    Tensor rebuilt = fw::stft(inverse, n_fft, hop_length, win_length, window, true, "reflect", false, true, true);
    angles = rebuilt;
    if (momentum != 0 && tprev.defined()) angles = angles - tprev * momentum;
    angles = angles / (angles.abs() + 1e-16);
    tprev = rebuilt;
  }
  Tensor w = fw::istft(mag * angles, n_fft, hop_length, win_length, window, true, false, std::nullopt, length);
  return w.reshape(with_tail(lead, w, 1));
}

Tensor melscale_fbanks(int64_t n_freqs, double f_min, double f_max, int64_t n_mels, int64_t sample_rate,
                       std::optional<std::string> norm, const std::string& mel_scale) {
  FW_CHECK(!norm || *norm == "slaney", "[audio::melscale_fbanks] norm must be one of None or \"slaney\", got ", *norm);
  FW_CHECK(mel_scale == "htk" || mel_scale == "slaney",
           "[audio::melscale_fbanks] mel_scale should be one of \"htk\" or \"slaney\", got ", mel_scale);
  FW_CHECK(n_freqs >= 1 && n_mels >= 1 && sample_rate > 0, "[audio::melscale_fbanks] expected positive n_freqs, n_mels ",
           "and sample_rate, got ", n_freqs, ", ", n_mels, ", ", sample_rate);
  Tensor all_freqs = fw::linspace(0, sample_rate / 2, n_freqs, kFloat);
  Tensor m_pts = fw::linspace(hz_to_mel(f_min, mel_scale), hz_to_mel(f_max, mel_scale), n_mels + 2, kFloat);
  Tensor f_pts = mel_to_hz(m_pts, mel_scale);
  Tensor fb = triangular_filterbank(all_freqs, f_pts);
  if (norm) fb = fb * (2.0 / (f_pts.slice(0, 2, n_mels + 2) - f_pts.slice(0, 0, n_mels))).unsqueeze(0);
  return fb;
}

Tensor linear_fbanks(int64_t n_freqs, double f_min, double f_max, int64_t n_filter, int64_t sample_rate) {
  FW_CHECK(n_freqs >= 1 && n_filter >= 1 && sample_rate > 0, "[audio::linear_fbanks] expected positive n_freqs, ",
           "n_filter and sample_rate, got ", n_freqs, ", ", n_filter, ", ", sample_rate);
  Tensor all_freqs = fw::linspace(0, sample_rate / 2, n_freqs, kFloat);
  Tensor f_pts = fw::linspace(f_min, f_max, n_filter + 2, kFloat);
  return triangular_filterbank(all_freqs, f_pts);
}

Tensor create_dct(int64_t n_mfcc, int64_t n_mels, std::optional<std::string> norm) {
  FW_CHECK(!norm || *norm == "ortho", "[audio::create_dct] norm must be either \"ortho\" or None, got ", *norm);
  FW_CHECK(n_mfcc >= 1 && n_mels >= 1, "[audio::create_dct] expected positive n_mfcc and n_mels, got ", n_mfcc, ", ",
           n_mels);
  Tensor n = fw::arange(n_mels, kFloat);
  Tensor k = fw::arange(n_mfcc, kFloat).unsqueeze(1);
  Tensor dct = fw::cos(((n + 0.5) * (M_PI / double(n_mels))) * k);  // (n_mfcc, n_mels)
  if (!norm) {
    dct = dct * 2.0;
  } else {
    Tensor scale = fw::ones({n_mfcc, 1});
    scale.index_put_({0}, 1.0 / std::sqrt(2.0));
    dct = dct * scale * std::sqrt(2.0 / double(n_mels));
  }
  return dct.t().contiguous();
}

Tensor amplitude_to_DB(const Tensor& x, double multiplier, double amin, double db_multiplier,
                       std::optional<double> top_db) {
  Tensor db = fw::log10(fw::clamp(x, amin)) * multiplier;
  if (db_multiplier != 0.0) db = db - multiplier * db_multiplier;  // ref 1.0 (the default): exactly 0
  if (top_db) {
    FW_CHECK(x.dim() >= 2, "[audio::amplitude_to_DB] top_db needs a (..., freq, time) input, got shape ", x.sizes());
    DimVec shape(db.sizes());
    int64_t ch = db.dim() > 2 ? shape[shape.size() - 3] : 1;
    Tensor p = db.reshape({-1, ch, shape[shape.size() - 2], shape[shape.size() - 1]});
    p = fw::maximum(p, (p.amax({-3, -2, -1}) - *top_db).view({-1, 1, 1, 1}));
    db = p.reshape(shape);
  }
  return db;
}

Tensor DB_to_amplitude(const Tensor& x, double ref, double power) {
  return fw::pow(fw::pow(10.0, x * 0.1), power) * ref;
}

Tensor mu_law_encoding(const Tensor& x, int64_t quantization_channels) {
  FW_CHECK(quantization_channels >= 2, "[audio::mu_law_encoding] quantization_channels must be >= 2, got ",
           quantization_channels);
  Tensor xf = x.is_floating_point() ? x : x.to(kFloat);
  Tensor mu = fw::full({}, double(quantization_channels - 1), xf.dtype());
  Tensor y = fw::sign(xf) * fw::log1p(mu * fw::abs(xf)) / fw::log1p(mu);
  return ((y + 1) / 2 * mu + 0.5).to(kLong);
}

Tensor mu_law_decoding(const Tensor& x_mu, int64_t quantization_channels) {
  FW_CHECK(quantization_channels >= 2, "[audio::mu_law_decoding] quantization_channels must be >= 2, got ",
           quantization_channels);
  Tensor xf = x_mu.is_floating_point() ? x_mu : x_mu.to(kFloat);
  Tensor mu = fw::full({}, double(quantization_channels - 1), xf.dtype());
  Tensor y = (xf / mu) * 2 - 1.0;
  return fw::sign(y) * (fw::exp(fw::abs(y) * fw::log1p(mu)) - 1.0) / mu;
}

Tensor phase_vocoder(const Tensor& complex_specgrams, double rate, const Tensor& phase_advance) {
  FW_CHECK(complex_specgrams.is_complex(), "[audio::phase_vocoder] expected a complex spectrogram, got ",
           complex_specgrams.dtype());
  FW_CHECK(rate > 0, "[audio::phase_vocoder] rate must be positive, got ", rate);
  FW_CHECK(complex_specgrams.dim() >= 2, "[audio::phase_vocoder] expected (..., freq, time), got shape ",
           complex_specgrams.sizes());
  if (rate == 1.0) return complex_specgrams;
  DimVec lead = leading(complex_specgrams, 2);
  const int64_t F = complex_specgrams.sizes()[complex_specgrams.dim() - 2];
  const int64_t T = complex_specgrams.sizes()[complex_specgrams.dim() - 1];
  Tensor s = complex_specgrams.reshape({-1, F, T});
  ScalarType real_t = to_real_value_type(s.dtype());
  Tensor steps = fw::arange(0, T, rate, real_t);
  Tensor alphas = fw::remainder(steps, 1.0);
  Tensor phase0 = s.slice(-1, 0, 1).angle();
  s = fw::constant_pad_nd(s, {0, 2}, 0);
  Tensor idx = steps.to(kLong);
  Tensor s0 = s.index_select(-1, idx), s1 = s.index_select(-1, idx + 1);
  Tensor phase = s1.angle() - s0.angle() - phase_advance;
  phase = phase - fw::round(phase / (2 * M_PI)) * (2 * M_PI);
  phase = phase + phase_advance;
  phase = fw::cat({phase0, phase.slice(-1, 0, phase.sizes()[2] - 1)}, -1);
  Tensor acc = fw::cumsum(phase, -1);
  Tensor mag = alphas * s1.abs() + (1 - alphas) * s0.abs();
  Tensor out = fw::polar(mag, acc);
  return out.reshape(with_tail(lead, out, 2));
}

namespace {
int64_t mask_param_for(int64_t mask_param, double p, int64_t axis_length) {
  return p == 1.0 ? mask_param : std::min<int64_t>(mask_param, int64_t(double(axis_length) * p));
}
}  // namespace

Tensor mask_along_axis(const Tensor& specgram, int64_t mask_param, double mask_value, int64_t axis, double p) {
  FW_CHECK(axis == 1 || axis == 2, "[audio::mask_along_axis] Only Frequency and Time masking are supported (axis 1 or "
           "2), got axis ", axis);
  FW_CHECK(p >= 0.0 && p <= 1.0, "[audio::mask_along_axis] The value of p must be between 0.0 and 1.0 (", p, " given).");
  FW_CHECK(specgram.dim() >= 2, "[audio::mask_along_axis] expected (..., freq, time), got shape ", specgram.sizes());
  DimVec shape(specgram.sizes());
  Tensor s = specgram.reshape({-1, shape[shape.size() - 2], shape[shape.size() - 1]});
  const int64_t len = s.sizes()[axis];
  mask_param = mask_param_for(mask_param, p, len);
  if (mask_param < 1) return specgram;
  double value = fw::rand({1}).item<double>() * double(mask_param);
  double min_value = fw::rand({1}).item<double>() * (double(len) - value);
  int64_t start = int64_t(min_value), end = int64_t(min_value) + int64_t(value);
  Tensor pos = fw::arange(len, kLong);
  Tensor mask = (pos >= start).logical_and(pos < end);
  mask = axis == 1 ? mask.unsqueeze(-1) : mask;
  return s.masked_fill(mask, mask_value).reshape(shape);
}

Tensor mask_along_axis_iid(const Tensor& specgrams, int64_t mask_param, double mask_value, int64_t axis, double p) {
  FW_CHECK(axis == 2 || axis == 3, "[audio::mask_along_axis_iid] Only Frequency and Time masking are supported (axis 2 "
           "or 3), got axis ", axis);
  FW_CHECK(p >= 0.0 && p <= 1.0, "[audio::mask_along_axis_iid] The value of p must be between 0.0 and 1.0 (", p,
           " given).");
  FW_CHECK(specgrams.dim() == 4, "[audio::mask_along_axis_iid] expected (batch, channel, freq, time), got shape ",
           specgrams.sizes());
  const int64_t len = specgrams.sizes()[axis];
  mask_param = mask_param_for(mask_param, p, len);
  if (mask_param < 1) return specgrams;
  ScalarType dt = specgrams.is_floating_point() ? specgrams.dtype() : kFloat;
  DimVec bc{specgrams.sizes()[0], specgrams.sizes()[1]};
  Tensor value = fw::rand(bc, dt) * double(mask_param);
  Tensor min_value = fw::rand(bc, dt) * (double(len) - value);
  Tensor start = min_value.to(kLong).unsqueeze(-1).unsqueeze(-1);
  Tensor end = (min_value.to(kLong) + value.to(kLong)).unsqueeze(-1).unsqueeze(-1);
  Tensor pos = fw::arange(len, kLong);
  Tensor mask = (pos >= start).logical_and(pos < end);  // (B, C, 1, len) over the masked axis
  Tensor s = specgrams.transpose(axis, -1);
  return s.masked_fill(mask, mask_value).transpose(axis, -1);
}

Tensor compute_deltas(const Tensor& specgram, int64_t win_length, const std::string& mode) {
  FW_CHECK(win_length >= 3, "[audio::compute_deltas] Window length should be greater than or equal to 3. Found "
           "win_length ", win_length);
  FW_CHECK(specgram.dim() >= 1, "[audio::compute_deltas] expected (..., time), got a 0-dim tensor");
  const int64_t n = (win_length - 1) / 2;
  const double denom = double(n * (n + 1) * (2 * n + 1)) / 3.0;
  DimVec shape(specgram.sizes());
  const int64_t T = shape.back();
  Tensor x = fw::pad(specgram.reshape({1, -1, T}), {n, n}, mode);
  // sum_k k (x[t+k] - x[t-k]), k = 1..n, as the grouped conv1d with kernel [-n..n] computes.
  Tensor out;
  for (int64_t k = 1; k <= n; k++) {
    Tensor term = (x.slice(-1, n + k, n + k + T) - x.slice(-1, n - k, n - k + T)) * double(k);
    out = out.defined() ? out + term : term;
  }
  return (out / denom).reshape(shape);
}

Tensor sliding_window_cmn(const Tensor& specgram, int64_t cmn_window, int64_t min_cmn_window, bool center,
                          bool norm_vars) {
  FW_CHECK(specgram.dim() >= 2, "[audio::sliding_window_cmn] expected (..., time, feats), got shape ", specgram.sizes());
  FW_CHECK(cmn_window >= 1 && min_cmn_window >= 1, "[audio::sliding_window_cmn] windows must be positive, got ",
           cmn_window, " and ", min_cmn_window);
  DimVec shape(specgram.sizes());
  const int64_t T = shape[shape.size() - 2], Fd = shape.back();
  if (T == 0) return specgram.clone();
  Tensor x = specgram.reshape({-1, T, Fd});
  // Window [start, end) of each frame, as torchaudio (and Kaldi's apply-cmvn-sliding) choose it.
  std::vector<int64_t> starts(static_cast<size_t>(T)), ends(static_cast<size_t>(T));
  for (int64_t t = 0; t < T; t++) {
    int64_t ws = center ? t - cmn_window / 2 : t - cmn_window;
    int64_t we = center ? ws + cmn_window : t + 1;
    if (ws < 0) {
      we -= ws;
      ws = 0;
    }
    if (!center && we > t) we = std::max(t + 1, min_cmn_window);
    if (we > T) {
      ws -= we - T;
      we = T;
      if (ws < 0) ws = 0;
    }
    starts[size_t(t)] = ws;
    ends[size_t(t)] = we;
  }
  Tensor st = fw::tensor(starts, kLong), en = fw::tensor(ends, kLong);
  // Window sums from prefix sums in float64 (exact enough for any length, unlike a running sum).
  Tensor xd = x.to(kDouble);
  Tensor zero = fw::zeros({x.sizes()[0], 1, Fd}, kDouble);
  Tensor csum = fw::cat({zero, fw::cumsum(xd, 1)}, 1);
  Tensor wf = (en - st).to(kDouble).view({1, T, 1});
  Tensor sum = csum.index_select(1, en) - csum.index_select(1, st);
  Tensor out = xd - sum / wf;
  if (norm_vars) {
    Tensor csq = fw::cat({zero, fw::cumsum(xd * xd, 1)}, 1);
    Tensor sumsq = csq.index_select(1, en) - csq.index_select(1, st);
    Tensor var = sumsq / wf - (sum * sum) / (wf * wf);
    out = fw::where(wf == 1.0, fw::zeros({}, kDouble), out * fw::pow(var, -0.5));
  }
  out = out.to(x.dtype()).reshape(shape);
  return out;
}

Tensor spectral_centroid(const Tensor& waveform, int64_t sample_rate, int64_t pad, const Tensor& window, int64_t n_fft,
                         int64_t hop_length, int64_t win_length) {
  Tensor spec = spectrogram(waveform, pad, window, n_fft, hop_length, win_length, 1.0, false);
  Tensor freqs = fw::linspace(0, sample_rate / 2, 1 + n_fft / 2, spec.dtype()).reshape({-1, 1});
  return (freqs * spec).sum({-2}) / spec.sum({-2});
}

Tensor detect_pitch_frequency(const Tensor& waveform, int64_t sample_rate, double frame_time, int64_t win_length,
                              int64_t freq_low, int64_t freq_high) {
  FW_CHECK(waveform.dim() >= 1, "[audio::detect_pitch_frequency] expected (..., time), got a 0-dim tensor");
  FW_CHECK(sample_rate > 0 && freq_low > 0 && freq_high > 0 && frame_time > 0 && win_length >= 1,
           "[audio::detect_pitch_frequency] sample_rate, frame_time, win_length, freq_low and freq_high must be "
           "positive");
  const double eps = 1e-9;
  DimVec lead = leading(waveform, 1);
  Tensor x = waveform.reshape({-1, waveform.sizes()[waveform.dim() - 1]});
  const int64_t lags = int64_t(std::ceil(double(sample_rate) / double(freq_low)));
  const int64_t frame = int64_t(std::ceil(double(sample_rate) * frame_time));
  const int64_t L = x.sizes()[1];
  const int64_t n_frames = int64_t(std::ceil(double(L) / double(frame)));
  x = fw::constant_pad_nd(x, {0, lags + n_frames * frame - L}, 0);
  const int64_t Lp = x.sizes()[1];
  // Normalised cross-correlation per (frame, lag).
  std::vector<Tensor> cols;
  for (int64_t lag = 1; lag <= lags; lag++) {
    Tensor s1 = x.slice(-1, 0, Lp - lag).unfold(-1, frame, frame).slice(-2, 0, n_frames);
    Tensor s2 = x.slice(-1, lag, Lp).unfold(-1, frame, frame).slice(-2, 0, n_frames);
    Tensor c = (s1 * s2).sum({-1}) / (fw::norm(s1, 2, {-1}) + eps).pow(2) / (fw::norm(s2, 2, {-1}) + eps).pow(2);
    cols.push_back(c.unsqueeze(-1));
  }
  Tensor nccf = fw::cat(cols, -1);
  // Best lag per frame, preferring the first half of the lag range within 1%.
  const int64_t lag_min = int64_t(std::ceil(double(sample_rate) / double(freq_high)));
  FW_CHECK(lag_min < lags, "[audio::detect_pitch_frequency] freq_high ", freq_high, " must be above freq_low ", freq_low);
  auto [bv, bi] = fw::max(nccf.slice(-1, lag_min, lags), -1);
  const int64_t half = lags / 2;
  FW_CHECK(half > lag_min, "[audio::detect_pitch_frequency] the lag range [", lag_min, ", ", half,
           ") is empty; lower freq_low or raise freq_high");
  auto [hv, hi] = fw::max(nccf.slice(-1, lag_min, half), -1);
  Tensor m = hv > bv * 0.99;
  Tensor idx = fw::where(m, hi, bi) + (lag_min + 1);
  // Median smoothing over win_length frames, the first ones padded with frame pad_length's value.
  const int64_t pl = (win_length - 1) / 2;
  if (pl > 0) {
    FW_CHECK(idx.sizes()[1] > 0, "[audio::detect_pitch_frequency] the waveform is too short for one frame");
    Tensor first = idx.slice(-1, 0, 1).expand({idx.sizes()[0], pl});
    idx = fw::cat({first, idx}, -1);
  }
  Tensor med = std::get<0>(fw::median(idx.unfold(-1, win_length, 1), -1));
  Tensor freq = double(sample_rate) / (med.to(kFloat) + eps);
  return freq.reshape(with_tail(lead, freq, 1));
}

}  // namespace fw::audio::functional
