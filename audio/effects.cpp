// torchaudio.functional's SoX-style effects (fw/audio/effects.h). The memoryless effects and
// loudness/pitch_shift are fw op graphs (differentiable, any device); the delay-line effects and
// vad are sequential per sample and run as host loops in the waveform's dtype, with torchaudio's
// order of operations so float32 results round alike. phaser and flanger are linear in their
// input (before the final clamp), so their backward is the adjoint loop run backwards in time.
#include "fw/audio/effects.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "fw/audio/filtering.h"
#include "fw/audio/functional.h"
#include "fw/autograd_function.h"
#include "fw/fft.h"

namespace fw::audio::functional {

namespace {

constexpr double kPi = 3.14159265358979323846;

void check_waveform(const Tensor& w, const char* op, int64_t min_dim = 1) {
  FW_CHECK(w.defined(), "[audio::", op, "] the waveform is an undefined tensor");
  FW_CHECK(w.dtype() == kFloat || w.dtype() == kDouble, "[audio::", op,
           "] expected a float32 or float64 waveform, got ", dtype_str(w.dtype()));
  FW_CHECK(w.dim() >= min_dim, "[audio::", op, "] expected a waveform of shape ",
           min_dim == 1 ? "(..., time)" : "(..., channels, time)", ", got shape ", w.sizes());
}

void check_range(double v, double lo, double hi, const char* op, const char* name) {
  FW_CHECK(v >= lo && v <= hi, "[audio::", op, "] ", name, " must be in [", lo, ", ", hi, "], got ", v);
}

// SoX's modulation tables (torchaudio's _generate_wave_table), computed in double: a sine or
// triangle over table_size points between lo and hi, starting `phase` radians in. As integers
// (rounded half away from zero) or as float32 values.
std::vector<double> wave_table(bool sine, int64_t table_size, double lo, double hi, double phase, bool as_int) {
  const int64_t offset = int64_t(phase / kPi / 2 * double(table_size) + 0.5);
  std::vector<double> d(static_cast<size_t>(table_size));
  for (int64_t t = 0; t < table_size; t++) {
    const int64_t point = (t + offset) % table_size;
    const double p = double(point);
    double v;
    if (sine) {
      v = (std::sin(p / double(table_size) * 2 * kPi) + 1) / 2;
    } else {
      v = p * 2 / double(table_size);
      switch ((4 * point) / table_size) {
        case 0: v = v + 0.5; break;
        case 1:
        case 2: v = 1.5 - v; break;
        default: v = v - 1.5; break;
      }
    }
    v = v * (hi - lo) + lo;
    if (as_int)
      v = double(int32_t(v < 0 ? v - 0.5 : v + 0.5));
    else
      v = double(float(v));
    d[size_t(t)] = v;
  }
  return d;
}

// The waveform as a contiguous host tensor of its dtype, rows of `time` samples.
Tensor host_rows(const Tensor& w) {
  int64_t rows = 1;
  for (int64_t d = 0; d + 1 < w.dim(); d++) rows *= w.size(d);
  return w.detach().to(Device(kCPU)).contiguous().reshape({rows, w.size(-1)});
}

// The phaser's delay line holds decay * temp[j] for the step j that last wrote each slot, so it is
// the recursion temp[i] = x[i] + decay * temp[src[i]] (src[i] < 0: the slot was never written)
// with src[i] = i - buf_len + mod[i % mod_len] - 1, the same rounding as the ring buffer. Its
// adjoint runs it backwards: g_x = g_temp, g_temp[src[i]] += decay * g_temp[i] from the end.
std::vector<int64_t> phaser_sources(int64_t n, const std::vector<double>& mod, int64_t buf_len) {
  std::vector<int64_t> src(static_cast<size_t>(n));
  const int64_t mod_len = int64_t(mod.size());
  for (int64_t i = 0; i < n; i++) src[size_t(i)] = i - buf_len + int64_t(mod[size_t(i % mod_len)]) - 1;
  return src;
}

template <class T>
void phaser_loop(const T* x, T* out, int64_t rows, int64_t n, const int64_t* src, T decay) {
  for (int64_t r = 0; r < rows; r++) {
    const T* xr = x + r * n;
    T* o = out + r * n;
    for (int64_t i = 0; i < n; i++) o[i] = src[i] >= 0 ? xr[i] + o[src[i]] * decay : xr[i];
  }
}

template <class T>
void phaser_adjoint(const T* g, T* gx, int64_t rows, int64_t n, const int64_t* src, T decay) {
  for (int64_t r = 0; r < rows; r++) {
    T* o = gx + r * n;
    std::copy(g + r * n, g + (r + 1) * n, o);
    for (int64_t i = n - 1; i >= 0; i--)
      if (src[i] >= 0) o[src[i]] += decay * o[i];
  }
}

struct FlangerParams {
  double feedback_gain, in_gain, delay_gain;
  int64_t buf_len;
  bool quadratic;
};

// Per channel and step, the integer delay and its fraction (float32, as torchaudio's LFO table).
struct FlangerTaps {
  Tensor delay;  // (channels, n) int64
  Tensor frac;   // (channels, n) float32
};

FlangerTaps flanger_taps(int64_t channels, int64_t n, const std::vector<double>& lfo,
                         const std::vector<int64_t>& channel_phase) {
  FlangerTaps t{fw::empty({channels, n}, kLong), fw::empty({channels, n}, kFloat)};
  int64_t* dl = t.delay.data_ptr<int64_t>();
  float* fr = t.frac.data_ptr<float>();
  const int64_t lfo_len = int64_t(lfo.size());
  for (int64_t c = 0; c < channels; c++)
    for (int64_t i = 0; i < n; i++) {
      const float d = float(lfo[size_t((i % lfo_len + channel_phase[size_t(c)]) % lfo_len)]);
      const float fl = std::floor(d);
      dl[c * n + i] = int64_t(fl);
      fr[c * n + i] = d - fl;
    }
  return t;
}

// x, out: (batch, channels, n). The delay line of each (batch, channel) holds
// buf[i] = x[i] + feedback * delayed[i-1]; delayed[i] interpolates buf at i - delay and the next
// one or two older steps; out = x * in_gain + delayed * delay_gain.
template <class T>
void flanger_loop(const T* x, T* out, int64_t batch, int64_t channels, int64_t n, const FlangerTaps& taps,
                  const FlangerParams& p) {
  const int64_t L = p.buf_len;
  const int64_t* dl = taps.delay.data_ptr<int64_t>();
  const float* fr = taps.frac.data_ptr<float>();
  const T fb = T(p.feedback_gain), in_gain = T(p.in_gain), delay_gain = T(p.delay_gain);
  std::vector<T> bufs(size_t(batch * channels * L), T(0)), last(size_t(batch * channels), T(0));
  int64_t pos = 0;
  for (int64_t i = 0; i < n; i++) {
    pos = (pos + L - 1) % L;
    for (int64_t c = 0; c < channels; c++) {
      const T frac = T(fr[c * n + i]);
      const int64_t delay = dl[c * n + i];
      for (int64_t b = 0; b < batch; b++) {
        const int64_t bc = b * channels + c;
        T* buf = bufs.data() + bc * L;
        const T xi = x[bc * n + i];
        buf[pos] = xi + last[size_t(bc)] * fb;
        const T d0 = buf[(pos + delay) % L];
        T d1 = buf[(pos + delay + 1) % L];
        T delayed;
        if (!p.quadratic) {
          delayed = d0 + (d1 - d0) * frac;
        } else {
          T d2 = buf[(pos + delay + 2) % L];
          d2 = d2 - d0;
          d1 = d1 - d0;
          const T a = d2 * T(0.5) - d1;
          const T bq = d1 * T(2) - d2 * T(0.5);
          delayed = d0 + (a * frac + bq) * frac;
        }
        last[size_t(bc)] = delayed;
        out[bc * n + i] = xi * in_gain + delayed * delay_gain;
      }
    }
  }
}

// The adjoint of flanger_loop: the slot read at offset k from step i holds buf[i - (k mod L)];
// running i backwards, delayed[i]'s gradient (from out[i] and from buf[i+1]) reaches the taps it
// read, after which buf[i]'s gradient is complete.
template <class T>
void flanger_adjoint(const T* g, T* gx, int64_t batch, int64_t channels, int64_t n, const FlangerTaps& taps,
                     const FlangerParams& p) {
  const int64_t L = p.buf_len;
  const int64_t* dl = taps.delay.data_ptr<int64_t>();
  const float* fr = taps.frac.data_ptr<float>();
  const T fb = T(p.feedback_gain), in_gain = T(p.in_gain), delay_gain = T(p.delay_gain);
  std::vector<T> gbuf(static_cast<size_t>(n));
  for (int64_t b = 0; b < batch; b++)
    for (int64_t c = 0; c < channels; c++) {
      const int64_t bc = b * channels + c;
      std::fill(gbuf.begin(), gbuf.end(), T(0));
      for (int64_t i = n - 1; i >= 0; i--) {
        const T gd = g[bc * n + i] * delay_gain + (i + 1 < n ? fb * gbuf[size_t(i + 1)] : T(0));
        const T f = T(fr[c * n + i]);
        const int64_t d = dl[c * n + i];
        T w[3];
        int taps_used = 2;
        if (!p.quadratic) {
          w[0] = T(1) - f;
          w[1] = f;
        } else {
          w[0] = T(1) - T(1.5) * f + T(0.5) * f * f;
          w[1] = T(2) * f - f * f;
          w[2] = T(-0.5) * f + T(0.5) * f * f;
          taps_used = 3;
        }
        for (int k = 0; k < taps_used; k++) {
          const int64_t j = i - (d + k) % L;
          if (j >= 0) gbuf[size_t(j)] += w[k] * gd;
        }
        gx[bc * n + i] = g[bc * n + i] * in_gain + gbuf[size_t(i)];
      }
    }
}

// The delay-line effects as autograd functions over host loops (forward on a contiguous host copy;
// backward by the adjoint loops above).
struct PhaserFn : autograd::Function<PhaserFn> {
  static Tensor forward(autograd::AutogradContext* ctx, const Tensor& x, const std::vector<double>& mod,
                        int64_t buf_len, double decay) {
    Tensor h = host_rows(x);
    Tensor out = fw::empty(h.sizes(), h.options());
    const int64_t rows = h.size(0), n = h.size(1);
    const std::vector<int64_t> sv = phaser_sources(n, mod, buf_len);
    Tensor src = fw::empty({n}, kLong);
    int64_t* s = src.data_ptr<int64_t>();
    std::copy(sv.begin(), sv.end(), s);
    if (h.dtype() == kFloat)
      phaser_loop<float>(h.data_ptr<float>(), out.data_ptr<float>(), rows, n, s, float(decay));
    else
      phaser_loop<double>(h.data_ptr<double>(), out.data_ptr<double>(), rows, n, s, decay);
    ctx->saved_data["src"] = src;
    ctx->saved_data["decay"] = decay;
    return out.reshape(x.sizes()).to(x.device());
  }
  static autograd::variable_list backward(autograd::AutogradContext* ctx, autograd::variable_list g) {
    Tensor src = ctx->saved_data["src"].toTensor();
    const double decay = ctx->saved_data["decay"].toDouble();
    Tensor h = host_rows(g[0]);
    Tensor gx = fw::empty(h.sizes(), h.options());
    const int64_t rows = h.size(0), n = h.size(1);
    if (h.dtype() == kFloat)
      phaser_adjoint<float>(h.data_ptr<float>(), gx.data_ptr<float>(), rows, n, src.data_ptr<int64_t>(), float(decay));
    else
      phaser_adjoint<double>(h.data_ptr<double>(), gx.data_ptr<double>(), rows, n, src.data_ptr<int64_t>(), decay);
    return {gx.reshape(g[0].sizes()).to(g[0].device()), Tensor(), Tensor(), Tensor()};
  }
};

struct FlangerFn : autograd::Function<FlangerFn> {
  static Tensor forward(autograd::AutogradContext* ctx, const Tensor& x, const FlangerTaps& taps,
                        const FlangerParams& p) {
    Tensor h = host_rows(x);
    const int64_t channels = x.size(-2), n = x.size(-1);
    const int64_t batch = channels > 0 ? h.size(0) / channels : 0;
    Tensor out = fw::empty(h.sizes(), h.options());
    if (h.numel() > 0) {
      if (h.dtype() == kFloat)
        flanger_loop<float>(h.data_ptr<float>(), out.data_ptr<float>(), batch, channels, n, taps, p);
      else
        flanger_loop<double>(h.data_ptr<double>(), out.data_ptr<double>(), batch, channels, n, taps, p);
    }
    ctx->saved_data["delay"] = taps.delay;
    ctx->saved_data["frac"] = taps.frac;
    ctx->saved_data["params"] = std::vector<double>{p.feedback_gain, p.in_gain, p.delay_gain, double(p.buf_len),
                                                    p.quadratic ? 1.0 : 0.0};
    return out.reshape(x.sizes()).to(x.device());
  }
  static autograd::variable_list backward(autograd::AutogradContext* ctx, autograd::variable_list g) {
    FlangerTaps taps{ctx->saved_data["delay"].toTensor(), ctx->saved_data["frac"].toTensor()};
    const std::vector<double> v = ctx->saved_data["params"].toDoubleVector();
    const FlangerParams p{v[0], v[1], v[2], int64_t(v[3]), v[4] != 0};
    const int64_t channels = g[0].size(-2), n = g[0].size(-1);
    Tensor h = host_rows(g[0]);
    const int64_t batch = channels > 0 ? h.size(0) / channels : 0;
    Tensor gx = fw::zeros(h.sizes(), h.options());
    if (h.numel() > 0) {
      if (h.dtype() == kFloat)
        flanger_adjoint<float>(h.data_ptr<float>(), gx.data_ptr<float>(), batch, channels, n, taps, p);
      else
        flanger_adjoint<double>(h.data_ptr<double>(), gx.data_ptr<double>(), batch, channels, n, taps, p);
    }
    return {gx.reshape(g[0].sizes()).to(g[0].device()), Tensor(), Tensor()};
  }
};

}  // namespace

Tensor contrast(const Tensor& waveform, double enhancement_amount) {
  check_waveform(waveform, "contrast");
  check_range(enhancement_amount, 0, 100, "contrast", "enhancement_amount");
  const double c = enhancement_amount / 750.0;
  Tensor t1 = waveform * (kPi / 2);
  return fw::sin(t1 + c * fw::sin(t1 * 4));
}

Tensor dcshift(const Tensor& waveform, double shift, std::optional<double> limiter_gain) {
  check_waveform(waveform, "dcshift");
  Tensor plain = (waveform + shift).clamp(-1, 1);
  if (!limiter_gain || shift == 0) return plain;
  const double lg = *limiter_gain;
  const double thr = 1.0 - (std::abs(shift) - lg);
  if (shift > 0) {
    Tensor limited = ((waveform - thr) * lg / (1 - thr) + thr + shift).clamp_max(thr);
    return fw::where(waveform > thr, limited, plain);
  }
  Tensor limited = ((waveform + thr) * lg / (1 - thr) - thr + shift).clamp_min(-thr);
  return fw::where(waveform < -thr, limited, plain);
}

Tensor overdrive(const Tensor& waveform, double gain, double colour) {
  check_waveform(waveform, "overdrive");
  const double g = std::exp(gain * std::log(10.0) / 20.0);
  Tensor t = waveform * g + colour / 200;
  t = fw::where(t < -1, fw::full({}, -2.0 / 3.0, t.options()),
                fw::where(t > 1, fw::full({}, 2.0 / 3.0, t.options()), t - t.pow(3) * (1.0 / 3)));
  // The DC blocker y[n] = t[n] - t[n-1] + 0.995 y[n-1] as an unclamped IIR filter.
  auto opts = TensorOptions(waveform.dtype()).device(waveform.device());
  Tensor a = fw::tensor({1.0, -0.995}, opts), b = fw::tensor({1.0, -1.0}, opts);
  Tensor y = lfilter(t, a, b, /*clamp=*/false);
  return (waveform * 0.5 + y * 0.75).clamp(-1, 1);
}

Tensor phaser(const Tensor& waveform, int64_t sample_rate, double gain_in, double gain_out, double delay_ms,
              double decay, double mod_speed, bool sinusoidal) {
  check_waveform(waveform, "phaser");
  FW_CHECK(sample_rate > 0, "[audio::phaser] sample_rate must be positive, got ", sample_rate);
  FW_CHECK(mod_speed > 0, "[audio::phaser] mod_speed must be positive, got ", mod_speed);
  const int64_t buf_len = int64_t(delay_ms * 0.001 * double(sample_rate) + 0.5);
  FW_CHECK(buf_len >= 1, "[audio::phaser] delay_ms ", delay_ms, " at ", sample_rate,
           " Hz gives an empty delay line (it must span at least one sample)");
  const int64_t mod_len = int64_t(double(sample_rate) / mod_speed + 0.5);
  FW_CHECK(mod_len >= 1, "[audio::phaser] mod_speed ", mod_speed, " is too fast for ", sample_rate, " Hz");
  std::vector<double> mod = wave_table(sinusoidal, mod_len, 1.0, double(buf_len), kPi / 2, /*as_int=*/true);
  Tensor out = PhaserFn::apply(waveform * gain_in, mod, buf_len, decay);
  return (out * gain_out).clamp(-1, 1);
}

Tensor flanger(const Tensor& waveform, int64_t sample_rate, double delay, double depth, double regen, double width,
               double speed, double phase, const std::string& modulation, const std::string& interpolation) {
  check_waveform(waveform, "flanger", 2);
  FW_CHECK(modulation == "sinusoidal" || modulation == "triangular",
           "[audio::flanger] Only \"sinusoidal\" or \"triangular\" modulation allowed, got \"", modulation, "\"");
  FW_CHECK(interpolation == "linear" || interpolation == "quadratic",
           "[audio::flanger] Only \"linear\" or \"quadratic\" interpolation allowed, got \"", interpolation, "\"");
  const int64_t channels = waveform.size(-2);
  FW_CHECK(channels <= 4, "[audio::flanger] Max 4 channels allowed, got ", channels, " (shape ", waveform.sizes(), ")");
  FW_CHECK(sample_rate > 0, "[audio::flanger] sample_rate must be positive, got ", sample_rate);
  FW_CHECK(speed > 0, "[audio::flanger] speed must be positive, got ", speed);
  FW_CHECK(delay >= 0 && depth >= 0, "[audio::flanger] delay and depth must be non-negative, got ", delay, " and ",
           depth);
  const int64_t lfo_len = int64_t(double(sample_rate) / speed);
  FW_CHECK(lfo_len >= 1, "[audio::flanger] speed ", speed, " is too fast for ", sample_rate, " Hz");
  FlangerParams p;
  p.feedback_gain = regen / 100;
  double delay_gain = width / 100;
  const double channel_phase = phase / 100, delay_min = delay / 1000, delay_depth = depth / 1000;
  p.in_gain = 1.0 / (1 + delay_gain);
  delay_gain = delay_gain / (1 + delay_gain);
  p.delay_gain = delay_gain * (1 - std::abs(p.feedback_gain));
  p.buf_len = int64_t((delay_min + delay_depth) * double(sample_rate) + 0.5) + 2;
  p.quadratic = interpolation == "quadratic";
  const double table_min = std::floor(delay_min * double(sample_rate) + 0.5);
  const double table_max = double(p.buf_len) - 2.0;
  std::vector<double> lfo = wave_table(modulation == "sinusoidal", lfo_len, table_min, table_max, 3 * kPi / 2, false);
  std::vector<int64_t> cphase(static_cast<size_t>(channels));
  for (int64_t c = 0; c < channels; c++)  // torchaudio computes this offset in float32
    cphase[size_t(c)] = int64_t(float(float(c * lfo_len) * float(channel_phase)) + 0.5f);
  FlangerTaps taps = flanger_taps(channels, waveform.size(-1), lfo, cphase);
  return FlangerFn::apply(waveform, taps, p).clamp(-1, 1);
}

Tensor loudness(const Tensor& waveform, int64_t sample_rate) {
  check_waveform(waveform, "loudness", 2);
  const int64_t channels = waveform.size(-2);
  FW_CHECK(channels <= 5, "[audio::loudness] Only up to 5 channels are supported, got ", channels, " (shape ",
           waveform.sizes(), ")");
  FW_CHECK(sample_rate > 0, "[audio::loudness] sample_rate must be positive, got ", sample_rate);
  const int64_t gate = int64_t(std::nearbyint(0.4 * double(sample_rate)));
  const int64_t step = int64_t(std::nearbyint(double(gate) * (1 - 0.75)));
  FW_CHECK(waveform.size(-1) >= gate && step >= 1, "[audio::loudness] needs at least one 400 ms block (", gate,
           " samples at ", sample_rate, " Hz), got ", waveform.size(-1), " samples");
  const double bias = -0.691;
  Tensor w = treble_biquad(waveform, sample_rate, 4.0, 1500.0, 1 / std::sqrt(2.0));
  w = highpass_biquad(w, sample_rate, 38.0, 0.5);
  Tensor energy = fw::square(w).unfold(-1, gate, step).mean({-1});  // (..., channels, blocks)
  Tensor g = fw::tensor({1.0, 1.0, 1.0, 1.41, 1.41}, TensorOptions(w.dtype()).device(w.device())).slice(0, 0, channels);
  Tensor block_loudness = bias + 10 * fw::log10(fw::sum(g.unsqueeze(-1) * energy, {-2}));
  auto gated_energy = [&](const Tensor& gated) {  // gated: (..., 1, blocks)
    Tensor e = fw::sum(gated * energy, {-1}) / fw::count_nonzero(gated, -1);
    return fw::sum(g * e, {-1});
  };
  Tensor gated = (block_loudness > -70.0).unsqueeze(-2);
  Tensor gamma_rel = bias + 10 * fw::log10(gated_energy(gated)) - 10;
  gated = fw::logical_and(gated.squeeze(-2), block_loudness > gamma_rel.unsqueeze(-1)).unsqueeze(-2);
  return bias + 10 * fw::log10(gated_energy(gated));
}

namespace {

struct VadState {
  int64_t measure_len, dft_len, spectrum_start, spectrum_end, cepstrum_start, cepstrum_end;
  std::vector<float> spectrum_window, cepstrum_window;
  float noise_reduction, up_mult, down_mult;
  double smooth_mult;
};

// One measure of voice activity (SoX vad's measure): the cepstral power between the lifter
// frequencies of the noise-reduced, smoothed spectrum of the last measure_len samples, in float32.
double vad_measure(const VadState& s, const std::vector<float>& samples, int64_t index, std::vector<float>& spectrum,
                   std::vector<float>& noise, int64_t boot_count) {
  const int64_t n = int64_t(samples.size());
  Tensor buf = fw::zeros({s.dft_len}, kFloat);
  float* b = buf.data_ptr<float>();
  for (int64_t k = 0; k < s.measure_len; k++) b[k] = samples[size_t((index + k) % n)] * s.spectrum_window[size_t(k)];
  Tensor mag = fw::fft::rfft(buf).abs().contiguous();
  const float* m = mag.data_ptr<float>();
  const double mult_d = boot_count >= 0 ? double(boot_count) / (1.0 + double(boot_count)) : s.smooth_mult;
  const float mult = float(mult_d), one_minus = float(1.0 - mult_d);
  Tensor cep = fw::zeros({s.dft_len >> 1}, kFloat);
  float* c = cep.data_ptr<float>();
  for (int64_t k = s.spectrum_start; k < s.spectrum_end; k++) {
    float& sp = spectrum[size_t(k)];
    sp = sp * mult + m[k] * one_minus;
    const float d = sp * sp;
    float& ns = noise[size_t(k)];
    const float nm = boot_count >= 0 ? 0.0f : (d > ns ? s.up_mult : s.down_mult);
    ns = ns * nm + d * (1.0f - nm);
    const float r = std::sqrt(std::max(0.0f, d - s.noise_reduction * ns));
    c[k] = r * s.cepstrum_window[size_t(k - s.spectrum_start)];
  }
  Tensor cmag = fw::fft::rfft(cep).abs().pow(2).slice(0, s.cepstrum_start, s.cepstrum_end).sum();
  double result = double(cmag.item<float>());
  result = result > 0 ? std::log(result / double(s.cepstrum_end - s.cepstrum_start))
                      : -std::numeric_limits<double>::infinity();
  return std::max(0.0, 21 + result);
}

std::vector<float> scaled_hann(int64_t len) {
  Tensor h = fw::hann_window(len, TensorOptions(kFloat)).contiguous();
  const float* hp = h.data_ptr<float>();
  std::vector<float> w(static_cast<size_t>(len));
  const float scale = float(2.0 / std::sqrt(double(len)));
  for (int64_t i = 0; i < len; i++) w[size_t(i)] = scale * hp[i];
  return w;
}

}  // namespace

Tensor vad(const Tensor& waveform, int64_t sample_rate, const VadOptions& o) {
  check_waveform(waveform, "vad");
  FW_CHECK(sample_rate > 0, "[audio::vad] sample_rate must be positive, got ", sample_rate);
  FW_CHECK(o.measure_freq() > 0, "[audio::vad] measure_freq must be positive, got ", o.measure_freq());
  FW_CHECK(o.search_time() > 0 && o.allowed_gap() >= 0 && o.pre_trigger_time() >= 0 && o.boot_time() >= 0,
           "[audio::vad] search_time must be positive and allowed_gap, pre_trigger_time, boot_time non-negative, "
           "got ", o.search_time(), ", ", o.allowed_gap(), ", ", o.pre_trigger_time(), ", ", o.boot_time());
  FW_CHECK(o.noise_up_time() > 0 && o.noise_down_time() > 0 && o.measure_smooth_time() > 0 && o.trigger_time() > 0,
           "[audio::vad] the time constants (trigger_time, noise_up_time, noise_down_time, measure_smooth_time) must "
           "be positive");
  const double sr = double(sample_rate), freq = o.measure_freq();
  const double duration = o.measure_duration().value_or(2.0 / freq);
  VadState s;
  s.measure_len = int64_t(sr * duration + 0.5);
  FW_CHECK(s.measure_len >= 1, "[audio::vad] measure_duration ", duration, " s spans no samples at ", sample_rate,
           " Hz");
  s.dft_len = 16;
  while (s.dft_len < s.measure_len) s.dft_len *= 2;
  const int64_t period = int64_t(sr / freq + 0.5);
  FW_CHECK(period >= 1, "[audio::vad] measure_freq ", freq, " is above the sample rate ", sample_rate);
  const int64_t measures_len = int64_t(std::ceil(o.search_time() * freq));
  const int64_t gap_len = int64_t(o.allowed_gap() * freq + 0.5);
  const int64_t fixed_pre = int64_t(o.pre_trigger_time() * sr + 0.5);
  const int64_t samples_len = fixed_pre + measures_len * period + s.measure_len;
  s.spectrum_start = std::max<int64_t>(int64_t(o.hp_filter_freq() / sr * double(s.dft_len) + 0.5), 1);
  s.spectrum_end = std::min<int64_t>(int64_t(o.lp_filter_freq() / sr * double(s.dft_len) + 0.5), s.dft_len / 2);
  FW_CHECK(s.spectrum_end > s.spectrum_start, "[audio::vad] hp_filter_freq ", o.hp_filter_freq(),
           " Hz and lp_filter_freq ", o.lp_filter_freq(), " Hz leave no spectrum bins at ", sample_rate, " Hz");
  s.cepstrum_start = int64_t(std::ceil(sr * 0.5 / o.lp_lifter_freq()));
  s.cepstrum_end = std::min<int64_t>(int64_t(std::floor(sr * 0.5 / o.hp_lifter_freq())), s.dft_len / 4);
  FW_CHECK(s.cepstrum_end > s.cepstrum_start, "[audio::vad] Expected cepstrum_start to be smaller than cepstrum_end. "
           "Found: cepstrum_start: ", s.cepstrum_start, ", cepstrum_end: ", s.cepstrum_end, ".");
  s.spectrum_window = scaled_hann(s.measure_len);
  s.cepstrum_window = scaled_hann(s.spectrum_end - s.spectrum_start);
  s.noise_reduction = float(o.noise_reduction_amount());
  s.up_mult = float(std::exp(-1.0 / (o.noise_up_time() * freq)));
  s.down_mult = float(std::exp(-1.0 / (o.noise_down_time() * freq)));
  s.smooth_mult = std::exp(-1.0 / (o.measure_smooth_time() * freq));
  const double trigger_mult = std::exp(-1.0 / (o.trigger_time() * freq));
  const float trigger_level = float(o.trigger_level());
  const int64_t boot_max = int64_t(o.boot_time() * freq - 0.5);

  Tensor x = host_rows(waveform).to(kFloat).contiguous();
  const int64_t channels = x.size(0), ilen = x.size(1);
  const float* xp = x.data_ptr<float>();
  std::vector<std::vector<float>> samples(size_t(channels), std::vector<float>(size_t(samples_len), 0.0f));
  std::vector<std::vector<float>> spectrum(size_t(channels), std::vector<float>(size_t(s.dft_len), 0.0f));
  std::vector<std::vector<float>> noise = spectrum;
  std::vector<std::vector<float>> measures(size_t(channels), std::vector<float>(size_t(measures_len), 0.0f));
  std::vector<float> mean_meas(size_t(channels), 0.0f);
  int64_t timer = s.measure_len, boot_count = 0, measures_index = 0, flushed = 0, sample_index = 0, to_flush = 0;
  int64_t pos = 0;
  bool triggered = false;
  while (pos < ilen && !triggered) {
    timer -= 1;
    for (int64_t ch = 0; ch < channels; ch++) {
      auto& smp = samples[size_t(ch)];
      smp[size_t(sample_index)] = xp[ch * ilen + pos];
      if (timer != 0) continue;
      const int64_t index = (sample_index + samples_len - s.measure_len) % samples_len;
      const double meas = vad_measure(s, smp, index, spectrum[size_t(ch)], noise[size_t(ch)], boot_count);
      auto& ms = measures[size_t(ch)];
      ms[size_t(measures_index)] = float(meas);
      float& mm = mean_meas[size_t(ch)];
      mm = mm * float(trigger_mult) + float(meas * (1.0 - trigger_mult));
      triggered = triggered || mm >= trigger_level;
      if (!triggered) continue;
      // Measures to keep before the trigger: back to the first silent one after the last loud
      // one that is within gap_len of its successor.
      const int64_t n = measures_len;
      int64_t k = measures_index, j_trigger = n, j_zero = n, j = 0;
      for (j = 0; j < n; j++) {
        if (ms[size_t(k)] >= trigger_level && j <= j_trigger + gap_len)
          j_zero = j_trigger = j;
        else if (ms[size_t(k)] == 0 && j_trigger >= j_zero)
          j_zero = j;
        k = (k + n - 1) % n;
      }
      j = std::min(n - 1, j_zero);  // the loop variable ends at n - 1, as in torchaudio
      to_flush = std::min(std::max(to_flush, j), n);
    }
    sample_index += 1;
    pos += 1;
    if (sample_index == samples_len) sample_index = 0;
    if (timer == 0) {
      timer = period;
      measures_index = (measures_index + 1) % measures_len;
      if (boot_count >= 0) boot_count = boot_count == boot_max ? -1 : boot_count + 1;
    }
    if (triggered) {
      flushed = (measures_len - to_flush) * period;
      sample_index = (sample_index + flushed) % samples_len;
    }
  }
  // torchaudio slices from pos - samples_len + flushed with Python semantics, so a negative start
  // (a trigger before the ring buffer first filled) would wrap to the end of the signal; the
  // buffer holds nothing earlier than the input's first sample, so fw starts there instead.
  const int64_t start = std::max<int64_t>(pos - samples_len + flushed, 0);
  return waveform.narrow(-1, start, ilen - start);
}

Tensor pitch_shift(const Tensor& waveform, int64_t sample_rate, int64_t n_steps, int64_t bins_per_octave,
                   int64_t n_fft, std::optional<int64_t> win_length, std::optional<int64_t> hop_length,
                   const std::optional<Tensor>& window) {
  check_waveform(waveform, "pitch_shift");
  FW_CHECK(sample_rate > 0, "[audio::pitch_shift] sample_rate must be positive, got ", sample_rate);
  FW_CHECK(bins_per_octave > 0, "[audio::pitch_shift] bins_per_octave must be positive, got ", bins_per_octave);
  FW_CHECK(n_fft > 0, "[audio::pitch_shift] n_fft must be positive, got ", n_fft);
  const int64_t hop = hop_length.value_or(n_fft / 4);
  const int64_t win = win_length.value_or(n_fft);
  FW_CHECK(hop > 0, "[audio::pitch_shift] hop_length must be positive, got ", hop);
  Tensor w = window ? *window : fw::hann_window(win, TensorOptions(waveform.dtype()).device(waveform.device()));
  const int64_t len = waveform.size(-1);
  Tensor x = waveform.reshape({-1, len});
  const double rate = std::pow(2.0, -double(n_steps) / double(bins_per_octave));
  Tensor spec = fw::stft(x, n_fft, hop, win, w, /*center=*/true, "reflect", /*normalized=*/false, /*onesided=*/true,
                         /*return_complex=*/true);
  const int64_t freqs = spec.size(-2);
  Tensor advance = fw::linspace(0, kPi * double(hop), freqs, TensorOptions(waveform.dtype()).device(waveform.device()))
                       .unsqueeze(-1);
  Tensor stretched = phase_vocoder(spec, rate, advance);
  const int64_t len_stretch = int64_t(std::nearbyint(double(len) / rate));
  Tensor y = fw::istft(stretched, n_fft, hop, win, w, /*center=*/true, /*normalized=*/false, std::nullopt, len_stretch);
  y = resample(y, int64_t(double(sample_rate) / rate), sample_rate);
  const int64_t got = y.size(-1);
  y = got > len ? y.slice(-1, 0, len) : fw::constant_pad_nd(y, {0, len - got}, 0);
  return y.reshape(waveform.sizes());
}

}  // namespace fw::audio::functional
