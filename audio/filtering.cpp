// torchaudio.functional's filters (lfilter and the biquad designs), convolutions, gain, dither and
// add_noise on fw ops. Resampling lives in resample.cpp.
//
// Note [differentiable IIR]
// The recursion y[n] = x[n] - sum_{k>=1} a[k] y[n-k] runs as a plain loop over the samples
// (iir_loop), outside autograd. Its gradient is attached with attach_vjp: the inputs that need a
// gradient are flattened into one tensor v, the result is returned as y + (v[:numel(y)] - detach),
// which has y's value and passes the output gradient g to v unchanged, and a hook on v replaces that
// gradient by the hand-written vjp (as torchaudio's DifferentiableIIR):
//   dL/dx = iir(g reversed in time, a) reversed;  dL/da[k] = sum_{batch,n} g[n] * w[n-k], w = iir(-y, a).
// The vjp is written with the same differentiable iir, so when the backward pass builds a graph
// (create_graph with an upstream gradient that requires grad) second derivatives work too. The FIR
// part (b) is an fw conv1d and differentiates as one.
#include <cmath>
#include <functional>
#include <vector>

#include "core/parallel.h"
#include "fw/audio/filtering.h"
#include "fw/fft.h"

namespace fw::audio::functional {

Tensor FilterArg::as_tensor(ScalarType dtype) const {
  if (!tensor_.defined()) return scalar_tensor(value_, TensorOptions(dtype));
  FW_CHECK(tensor_.numel() == 1, "[audio::biquad] a filter parameter tensor must have one element, got shape ",
           tensor_.sizes());
  return tensor_.to(dtype).reshape({});
}

namespace {

using VjpFn = std::function<std::vector<Tensor>(const Tensor& g)>;

// Returns `value` (computed outside autograd from `inputs`) wired into the graph so that the gradient
// of the inputs is vjp(upstream gradient); see Note [differentiable IIR]. vjp returns one tensor per
// input (undefined: no gradient).
Tensor attach_vjp(const Tensor& value, const std::vector<Tensor>& inputs, VjpFn vjp) {
  if (!is_grad_enabled() || value.numel() == 0) return value;
  std::vector<size_t> need;
  for (size_t i = 0; i < inputs.size(); i++)
    if (inputs[i].requires_grad()) need.push_back(i);
  if (need.empty()) return value;
  std::vector<Tensor> parts;
  std::vector<int64_t> numels;
  int64_t nv = 0, ny = value.numel();
  for (size_t i : need) {
    parts.push_back(inputs[i].reshape({-1}));
    numels.push_back(inputs[i].numel());
    nv += inputs[i].numel();
  }
  if (nv < ny) parts.push_back(zeros({ny - nv}, TensorOptions(value.dtype())));
  Tensor v = cat(parts, 0);
  DimVec shape(value.sizes());
  ScalarType dt = value.dtype();
  v.register_hook([vjp = std::move(vjp), need, numels, nv, ny, shape, dt](const Tensor& gv) -> Tensor {
    std::vector<Tensor> grads = vjp(gv.narrow(0, 0, ny).view(shape.ref()));
    std::vector<Tensor> out;
    for (size_t k = 0; k < need.size(); k++) {
      const Tensor& g = grads[need[k]];
      out.push_back(g.defined() ? g.reshape({-1}) : zeros({numels[k]}, TensorOptions(dt)));
    }
    if (nv < ny) out.push_back(zeros({ny - nv}, TensorOptions(dt)));
    return cat(out, 0);
  });
  Tensor head = v.narrow(0, 0, ny);
  return value + (head - head.detach()).view(value.sizes());
}

// One row of the recursion, in torchaudio's operation order (no fused multiply-adds, so float32
// results match its loop): out has K-1 leading zeros, af is a reversed with af[K-1] == 1.
template <class T, int K>
__attribute__((optimize("fp-contract=off"))) void iir_row_fixed(const T* x, const T* af, T* out, int64_t n) {
  T c[K];
  for (int k = 0; k < K; k++) c[k] = af[k];
  for (int64_t i = 0; i < n; i++) {
    T acc = x[i];
    for (int k = 0; k < K; k++) acc -= out[i + k] * c[k];
    out[i + K - 1] = acc;
  }
}

template <class T>
__attribute__((optimize("fp-contract=off"))) void iir_row(const T* x, const T* af, T* out, int64_t n, int64_t K) {
  switch (K) {
    case 1:
      return iir_row_fixed<T, 1>(x, af, out, n);
    case 2:
      return iir_row_fixed<T, 2>(x, af, out, n);
    case 3:
      return iir_row_fixed<T, 3>(x, af, out, n);
    case 4:
      return iir_row_fixed<T, 4>(x, af, out, n);
    case 5:
      return iir_row_fixed<T, 5>(x, af, out, n);
    default:
      for (int64_t i = 0; i < n; i++) {
        T acc = x[i];
        for (int64_t k = 0; k < K; k++) acc -= out[i + k] * af[k];
        out[i + K - 1] = acc;
      }
  }
}

// x: (B, C, T), a: (C, K) normalised (a[:, 0] == 1). No autograd.
Tensor iir_raw(const Tensor& x_in, const Tensor& a_in) {
  NoGradGuard ng;
  Tensor x = x_in.detach().contiguous();
  Tensor af = a_in.detach().flip({1}).contiguous();
  int64_t B = x.size(0), C = x.size(1), n = x.size(2), K = af.size(1);
  Tensor out = zeros({B, C, n + K - 1}, TensorOptions(x.dtype()));
  int64_t rows = B * C;
  int64_t grain = std::max<int64_t>(1, fw::detail::kGrainSize / std::max<int64_t>(1, n * K));
  auto run = [&](auto tag) {
    using T = decltype(tag);
    const T* xp = x.data_ptr<T>();
    const T* ap = af.data_ptr<T>();
    T* op = out.data_ptr<T>();
    fw::detail::parallel_for(0, rows, grain, [&](int64_t r0, int64_t r1) {
      for (int64_t r = r0; r < r1; r++) iir_row<T>(xp + r * n, ap + (r % C) * K, op + r * (n + K - 1), n, K);
    });
  };
  if (x.dtype() == kDouble)
    run(double());
  else
    run(float());
  return out.narrow(2, K - 1, n);
}

// The differentiable recursion (Note [differentiable IIR]).
Tensor iir(const Tensor& x, const Tensor& a) {
  Tensor y = iir_raw(x, a);
  return attach_vjp(y, {x, a}, [x, a, y](const Tensor& g) -> std::vector<Tensor> {
    bool build = g.requires_grad();
    AutoGradMode mode(build);
    Tensor xs = build ? x : x.detach(), as = build ? a : a.detach();
    std::vector<Tensor> grads(2);
    if (x.requires_grad()) grads[0] = iir(g.flip({-1}), as).flip({-1});
    if (a.requires_grad()) {
      Tensor yv = build ? iir(xs, as) : y;
      Tensor w = iir(-yv, as);
      int64_t n = g.size(2), K = a.size(1);
      std::vector<Tensor> cols;
      for (int64_t k = 0; k < K; k++) {
        if (k >= n) {
          cols.push_back(zeros({a.size(0)}, TensorOptions(a.dtype())));
          continue;
        }
        cols.push_back((g.narrow(2, k, n - k) * w.narrow(2, 0, n - k)).sum({0, 2}));
      }
      grads[1] = stack(cols, 1);
    }
    return grads;
  });
}

// x: (B, C, T), b: (C, K): y[n] = sum_k b[k] x[n-k] as a grouped conv1d.
Tensor fir(const Tensor& x, const Tensor& b) {
  int64_t K = b.size(1), C = b.size(0);
  Tensor xp = pad(x, {K - 1, 0});
  return conv1d(xp, b.flip({1}).unsqueeze(1), {}, 1, 0, 1, C);
}

bool is_filter_dtype(ScalarType t) { return t == kFloat || t == kDouble; }

}  // namespace

Tensor lfilter(const Tensor& waveform, const Tensor& a_coeffs, const Tensor& b_coeffs, bool clamp, bool batching) {
  FW_CHECK(waveform.defined() && a_coeffs.defined() && b_coeffs.defined(),
           "[audio::lfilter] waveform, a_coeffs and b_coeffs must be defined");
  FW_CHECK(a_coeffs.sizes().equals(b_coeffs.sizes()),
           "[audio::lfilter] Expected coeffs to be the same size. Found: a_coeffs size: ", a_coeffs.sizes(),
           ", b_coeffs size: ", b_coeffs.sizes());
  FW_CHECK(a_coeffs.dim() == 1 || a_coeffs.dim() == 2,
           "[audio::lfilter] Expected coeffs to have 1 or 2 dimensions (order+1) or (num_filters, order+1). Found: ",
           a_coeffs.dim(), " dimensions (shape ", a_coeffs.sizes(), ")");
  FW_CHECK(is_filter_dtype(waveform.dtype()), "[audio::lfilter] Expected a float32 or float64 waveform, got ",
           dtype_str(waveform.dtype()));
  FW_CHECK(a_coeffs.dtype() == waveform.dtype() && b_coeffs.dtype() == waveform.dtype(),
           "[audio::lfilter] Expected coeffs of the waveform's dtype ", dtype_str(waveform.dtype()),
           ". Found: a_coeffs ", dtype_str(a_coeffs.dtype()), ", b_coeffs ", dtype_str(b_coeffs.dtype()));
  FW_CHECK(waveform.dim() >= 1, "[audio::lfilter] Expected a waveform of shape (..., time). Found a 0-dim tensor");
  FW_CHECK(a_coeffs.size(-1) > 0, "[audio::lfilter] Expected n_order to be positive. Found: ", a_coeffs.size(-1));
  Tensor x = waveform, a = a_coeffs, b = b_coeffs;
  if (a.dim() == 2) {
    int64_t nf = a.size(0);
    if (batching) {
      FW_CHECK(x.dim() >= 2, "[audio::lfilter] With 2-D coeffs and batching=true the waveform needs shape (..., ", nf,
               ", time). Found: ", x.sizes());
      FW_CHECK(x.size(-2) == nf,
               "[audio::lfilter] Expected number of batches in waveform and coeffs to be the same. Found: coeffs "
               "batches: ",
               nf, ", waveform batches: ", x.size(-2), " (waveform shape ", x.sizes(), ")");
    } else {
      DimVec sz(x.sizes());
      sz.insert(sz.size() - 1, nf);
      x = x.unsqueeze(-2).expand(sz.ref());
    }
  } else {
    a = a.unsqueeze(0);
    b = b.unsqueeze(0);
  }
  DimVec shape(x.sizes());
  int64_t C = a.size(0), n = x.size(-1);
  int64_t lead = 1;
  for (size_t d = 0; d + 1 < shape.size(); d++) lead *= shape[d];
  if (n == 0 || lead == 0) return zeros(shape.ref(), TensorOptions(x.dtype())) + x.sum() * 0;
  Tensor x3 = x.reshape({lead / C, C, n});
  Tensor a0 = a.narrow(1, 0, 1);
  Tensor out = iir(fir(x3, b / a0), a / a0);
  if (clamp) out = fw::clamp(out, -1.0, 1.0);
  return out.reshape(shape.ref());
}

Tensor filtfilt(const Tensor& waveform, const Tensor& a_coeffs, const Tensor& b_coeffs, bool clamp) {
  Tensor fwd = lfilter(waveform, a_coeffs, b_coeffs, false, true);
  return lfilter(fwd.flip({-1}), a_coeffs, b_coeffs, clamp, true).flip({-1});
}

// ---- biquads

Tensor biquad(const Tensor& waveform, FilterArg b0, FilterArg b1, FilterArg b2, FilterArg a0, FilterArg a1,
              FilterArg a2) {
  FW_CHECK(waveform.defined() && is_filter_dtype(waveform.dtype()),
           "[audio::biquad] Expected a float32 or float64 waveform, got ",
           waveform.defined() ? dtype_str(waveform.dtype()) : "an undefined tensor");
  ScalarType dt = waveform.dtype();
  auto v = [dt](const FilterArg& p) { return p.as_tensor(dt).view({1}); };
  return lfilter(waveform, cat({v(a0), v(a1), v(a2)}), cat({v(b0), v(b1), v(b2)}));
}

namespace {

constexpr double kPi = 3.14159265358979323846;

void check_waveform(const Tensor& w, const char* fn) {
  FW_CHECK(w.defined() && is_filter_dtype(w.dtype()), "[audio::", fn, "] Expected a float32 or float64 waveform, got ",
           w.defined() ? dtype_str(w.dtype()) : "an undefined tensor");
}

void check_rate(int64_t sample_rate, const char* fn) {
  FW_CHECK(sample_rate > 0, "[audio::", fn, "] sample_rate must be positive, got ", sample_rate);
}

// w0 = 2 pi f / sample_rate in the waveform's dtype, as torchaudio's tensor arithmetic.
Tensor omega(const Tensor& f, int64_t sample_rate) { return f * (2 * kPi) / double(sample_rate); }

}  // namespace

Tensor lowpass_biquad(const Tensor& waveform, int64_t sample_rate, FilterArg cutoff_freq, FilterArg Q) {
  check_waveform(waveform, "lowpass_biquad");
  check_rate(sample_rate, "lowpass_biquad");
  ScalarType dt = waveform.dtype();
  Tensor w0 = omega(cutoff_freq.as_tensor(dt), sample_rate);
  Tensor alpha = sin(w0) / 2 / Q.as_tensor(dt);
  Tensor c = cos(w0);
  Tensor b0 = (1 - c) / 2;
  return biquad(waveform, b0, 1 - c, b0, 1 + alpha, -2 * c, 1 - alpha);
}

Tensor highpass_biquad(const Tensor& waveform, int64_t sample_rate, FilterArg cutoff_freq, FilterArg Q) {
  check_waveform(waveform, "highpass_biquad");
  check_rate(sample_rate, "highpass_biquad");
  ScalarType dt = waveform.dtype();
  Tensor w0 = omega(cutoff_freq.as_tensor(dt), sample_rate);
  Tensor alpha = sin(w0) / 2.0 / Q.as_tensor(dt);
  Tensor c = cos(w0);
  Tensor b0 = (1 + c) / 2;
  return biquad(waveform, b0, -1 - c, b0, 1 + alpha, -2 * c, 1 - alpha);
}

Tensor bandpass_biquad(const Tensor& waveform, int64_t sample_rate, FilterArg central_freq, FilterArg Q,
                       bool const_skirt_gain) {
  check_waveform(waveform, "bandpass_biquad");
  check_rate(sample_rate, "bandpass_biquad");
  ScalarType dt = waveform.dtype();
  Tensor w0 = omega(central_freq.as_tensor(dt), sample_rate);
  Tensor alpha = sin(w0) / 2 / Q.as_tensor(dt);
  Tensor temp = const_skirt_gain ? sin(w0) / 2 : alpha;
  return biquad(waveform, temp, 0.0, -temp, 1 + alpha, -2 * cos(w0), 1 - alpha);
}

Tensor bandreject_biquad(const Tensor& waveform, int64_t sample_rate, FilterArg central_freq, FilterArg Q) {
  check_waveform(waveform, "bandreject_biquad");
  check_rate(sample_rate, "bandreject_biquad");
  ScalarType dt = waveform.dtype();
  Tensor w0 = omega(central_freq.as_tensor(dt), sample_rate);
  Tensor alpha = sin(w0) / 2 / Q.as_tensor(dt);
  Tensor c2 = -2 * cos(w0);
  return biquad(waveform, 1.0, c2, 1.0, 1 + alpha, c2, 1 - alpha);
}

Tensor allpass_biquad(const Tensor& waveform, int64_t sample_rate, FilterArg central_freq, FilterArg Q) {
  check_waveform(waveform, "allpass_biquad");
  check_rate(sample_rate, "allpass_biquad");
  ScalarType dt = waveform.dtype();
  Tensor w0 = omega(central_freq.as_tensor(dt), sample_rate);
  Tensor alpha = sin(w0) / 2 / Q.as_tensor(dt);
  Tensor c2 = -2 * cos(w0);
  return biquad(waveform, 1 - alpha, c2, 1 + alpha, 1 + alpha, c2, 1 - alpha);
}

Tensor band_biquad(const Tensor& waveform, int64_t sample_rate, FilterArg central_freq, FilterArg Q, bool noise) {
  check_waveform(waveform, "band_biquad");
  check_rate(sample_rate, "band_biquad");
  ScalarType dt = waveform.dtype();
  Tensor f = central_freq.as_tensor(dt);
  Tensor w0 = omega(f, sample_rate);
  Tensor bw_hz = f / Q.as_tensor(dt);
  Tensor a2 = exp(bw_hz * (-2 * kPi) / double(sample_rate));
  Tensor a1 = a2 * -4 / (1 + a2) * cos(w0);
  Tensor b0 = sqrt(1 - a1 * a1 / (a2 * 4)) * (1 - a2);
  if (noise) {
    Tensor mult = sqrt(((1 + a2) * (1 + a2) - a1 * a1) * (1 - a2) / (1 + a2)) / b0;
    b0 = mult * b0;
  }
  return biquad(waveform, b0, 0.0, 0.0, 1.0, a1, a2);
}

namespace {
// The shelving filters' shared terms (RBJ cookbook, torchaudio's operation order).
struct Shelf {
  Tensor A, temp1, temp2, temp3;
};
Shelf shelf_terms(const Tensor& waveform, int64_t sample_rate, FilterArg gain, FilterArg central_freq, FilterArg Q,
                  const char* op) {
  check_waveform(waveform, op);
  check_rate(sample_rate, op);
  ScalarType dt = waveform.dtype();
  Tensor w0 = omega(central_freq.as_tensor(dt), sample_rate);
  Tensor alpha = sin(w0) / 2 / Q.as_tensor(dt);
  Tensor A = exp(gain.as_tensor(dt) / 40 * std::log(10.0));
  return {A, 2 * sqrt(A) * alpha, (A - 1) * cos(w0), (A + 1) * cos(w0)};
}
}  // namespace

Tensor bass_biquad(const Tensor& waveform, int64_t sample_rate, FilterArg gain, FilterArg central_freq, FilterArg Q) {
  auto [A, temp1, temp2, temp3] = shelf_terms(waveform, sample_rate, gain, central_freq, Q, "bass_biquad");
  Tensor b0 = A * ((A + 1) - temp2 + temp1);
  Tensor b1 = 2 * A * ((A - 1) - temp3);
  Tensor b2 = A * ((A + 1) - temp2 - temp1);
  Tensor a0 = (A + 1) + temp2 + temp1;
  Tensor a1 = -2 * ((A - 1) + temp3);
  Tensor a2 = (A + 1) + temp2 - temp1;
  return biquad(waveform, b0 / a0, b1 / a0, b2 / a0, a0 / a0, a1 / a0, a2 / a0);
}

Tensor treble_biquad(const Tensor& waveform, int64_t sample_rate, FilterArg gain, FilterArg central_freq, FilterArg Q) {
  auto [A, temp1, temp2, temp3] = shelf_terms(waveform, sample_rate, gain, central_freq, Q, "treble_biquad");
  Tensor b0 = A * ((A + 1) + temp2 + temp1);
  Tensor b1 = -2 * A * ((A - 1) + temp3);
  Tensor b2 = A * ((A + 1) + temp2 - temp1);
  Tensor a0 = (A + 1) - temp2 + temp1;
  Tensor a1 = 2 * ((A - 1) - temp3);
  Tensor a2 = (A + 1) - temp2 - temp1;
  return biquad(waveform, b0, b1, b2, a0, a1, a2);
}

Tensor equalizer_biquad(const Tensor& waveform, int64_t sample_rate, FilterArg center_freq, FilterArg gain,
                        FilterArg Q) {
  check_waveform(waveform, "equalizer_biquad");
  check_rate(sample_rate, "equalizer_biquad");
  ScalarType dt = waveform.dtype();
  Tensor w0 = omega(center_freq.as_tensor(dt), sample_rate);
  Tensor A = exp(gain.as_tensor(dt) / 40.0 * std::log(10.0));
  Tensor alpha = sin(w0) / 2 / Q.as_tensor(dt);
  Tensor c2 = -2 * cos(w0);
  return biquad(waveform, 1 + alpha * A, c2, 1 - alpha * A, 1 + alpha / A, c2, 1 - alpha / A);
}

Tensor deemph_biquad(const Tensor& waveform, int64_t sample_rate) {
  check_waveform(waveform, "deemph_biquad");
  double central_freq, width_slope, gain_db;
  if (sample_rate == 44100) {
    central_freq = 5283, width_slope = 0.4845, gain_db = -9.477;
  } else if (sample_rate == 48000) {
    central_freq = 5356, width_slope = 0.479, gain_db = -9.62;
  } else {
    FW_CHECK(false, "[audio::deemph_biquad] Sample rate must be 44100 (audio-CD) or 48000 (DAT), got ", sample_rate);
  }
  double w0 = 2 * kPi * central_freq / double(sample_rate);
  double A = std::exp(gain_db / 40.0 * std::log(10.0));
  double alpha = std::sin(w0) / 2 * std::sqrt((A + 1 / A) * (1 / width_slope - 1) + 2);
  double temp1 = 2 * std::sqrt(A) * alpha, temp2 = (A - 1) * std::cos(w0), temp3 = (A + 1) * std::cos(w0);
  double b0 = A * ((A + 1) + temp2 + temp1), b1 = -2 * A * ((A - 1) + temp3), b2 = A * ((A + 1) + temp2 - temp1);
  double a0 = (A + 1) - temp2 + temp1, a1 = 2 * ((A - 1) - temp3), a2 = (A + 1) - temp2 - temp1;
  return biquad(waveform, b0, b1, b2, a0, a1, a2);
}

Tensor riaa_biquad(const Tensor& waveform, int64_t sample_rate) {
  check_waveform(waveform, "riaa_biquad");
  double z0, z1, p0, p1;
  if (sample_rate == 44100) {
    z0 = -0.2014898, z1 = 0.9233820, p0 = 0.7083149, p1 = 0.9924091;
  } else if (sample_rate == 48000) {
    z0 = -0.1766069, z1 = 0.9321590, p0 = 0.7396325, p1 = 0.9931330;
  } else if (sample_rate == 88200) {
    z0 = -0.1168735, z1 = 0.9648312, p0 = 0.8590646, p1 = 0.9964002;
  } else if (sample_rate == 96000) {
    z0 = -0.1141486, z1 = 0.9676817, p0 = 0.8699137, p1 = 0.9966946;
  } else {
    FW_CHECK(false, "[audio::riaa_biquad] Sample rate must be 44.1k, 48k, 88.2k, or 96k, got ", sample_rate);
  }
  // Numerator/denominator polynomials from the zeros/poles, normalised to 0 dB at 1 kHz.
  double b0 = 1.0, b1 = -(z0 + z1), b2 = z0 * z1;
  double a0 = 1.0, a1 = -(p0 + p1), a2 = p0 * p1;
  double y = 2 * kPi * 1000 / double(sample_rate);
  double b_re = b0 + b1 * std::cos(-y) + b2 * std::cos(-2 * y);
  double a_re = a0 + a1 * std::cos(-y) + a2 * std::cos(-2 * y);
  double b_im = b1 * std::sin(-y) + b2 * std::sin(-2 * y);
  double a_im = a1 * std::sin(-y) + a2 * std::sin(-2 * y);
  double g = 1 / std::sqrt((b_re * b_re + b_im * b_im) / (a_re * a_re + a_im * a_im));
  return biquad(waveform, b0 * g, b1 * g, b2 * g, a0, a1, a2);
}

// ---- pre/de-emphasis, gain

Tensor preemphasis(const Tensor& waveform, double coeff) {
  FW_CHECK(waveform.defined() && waveform.dim() >= 1 && waveform.is_floating_point(),
           "[audio::preemphasis] Expected a floating (..., time) waveform");
  int64_t n = waveform.size(-1);
  if (n < 2) return waveform.clone();
  Tensor head = waveform.narrow(-1, 0, 1);
  Tensor rest = waveform.narrow(-1, 1, n - 1) - waveform.narrow(-1, 0, n - 1) * coeff;
  return cat({head, rest}, -1);
}

Tensor deemphasis(const Tensor& waveform, double coeff) {
  check_waveform(waveform, "deemphasis");
  TensorOptions o(waveform.dtype());
  Tensor a = tensor({1.0, -coeff}, o);
  Tensor b = tensor({1.0, 0.0}, o);
  return lfilter(waveform, a, b);
}

Tensor gain(const Tensor& waveform, double gain_db) {
  FW_CHECK(waveform.defined(), "[audio::gain] waveform is undefined");
  if (gain_db == 0) return waveform;
  return waveform * std::pow(10.0, gain_db / 20);
}

// ---- convolution

namespace {

void check_convolve(const Tensor& x, const Tensor& y, const std::string& mode, const char* fn) {
  FW_CHECK(x.defined() && y.defined(), "[audio::", fn, "] x and y must be defined");
  FW_CHECK(x.dim() >= 1 && x.dim() == y.dim(), "[audio::", fn, "] The operands must be the same dimension (got ",
           x.dim(), " and ", y.dim(), ").");
  for (int64_t i = 0; i + 1 < x.dim(); i++) {
    int64_t a = x.size(i), b = y.size(i);
    FW_CHECK(a == b || a == 1 || b == 1, "[audio::", fn, "] Leading dimensions of x and y are not broadcastable (got ",
             x.sizes(), " and ", y.sizes(), ").");
  }
  FW_CHECK(mode == "full" || mode == "valid" || mode == "same", "[audio::", fn, "] Unrecognized mode value '", mode,
           "'. Please specify one of ['full', 'valid', 'same'].");
  FW_CHECK(x.size(-1) > 0 && y.size(-1) > 0, "[audio::", fn, "] the operands must not be empty along time (got ",
           x.sizes(), " and ", y.sizes(), ")");
}

Tensor apply_mode(const Tensor& r, int64_t xl, int64_t yl, const std::string& mode) {
  if (mode == "full") return r;
  int64_t len = mode == "valid" ? std::max(xl, yl) - std::min(xl, yl) + 1 : xl;
  int64_t start = (r.size(-1) - len) / 2;
  return r.narrow(-1, start, len);
}

}  // namespace

Tensor convolve(const Tensor& x_in, const Tensor& y_in, const std::string& mode) {
  check_convolve(x_in, y_in, mode, "convolve");
  FW_CHECK(x_in.is_floating_point() && x_in.dtype() == y_in.dtype(),
           "[audio::convolve] Expected floating operands of one dtype, got ", dtype_str(x_in.dtype()), " and ",
           dtype_str(y_in.dtype()));
  int64_t xl = x_in.size(-1), yl = y_in.size(-1);
  Tensor x = x_in, y = y_in;
  if (xl < yl) std::swap(x, y);
  DimVec lead;
  for (int64_t i = 0; i + 1 < x.dim(); i++) lead.push_back(std::max(x.size(i), y.size(i)));
  DimVec xs = lead, ys = lead;
  xs.push_back(x.size(-1));
  ys.push_back(y.size(-1));
  int64_t n = 1;
  for (int64_t s : lead) n *= s;
  Tensor rx = x.expand(xs.ref()).reshape({1, n, x.size(-1)});
  Tensor ry = y.expand(ys.ref()).reshape({n, 1, y.size(-1)});
  Tensor out = conv1d(rx, ry.flip({-1}), {}, 1, y.size(-1) - 1, 1, n);
  DimVec os = lead;
  os.push_back(out.size(-1));
  return apply_mode(out.reshape(os.ref()), xl, yl, mode);
}

Tensor fftconvolve(const Tensor& x, const Tensor& y, const std::string& mode) {
  check_convolve(x, y, mode, "fftconvolve");
  FW_CHECK(is_filter_dtype(x.dtype()) && is_filter_dtype(y.dtype()),
           "[audio::fftconvolve] Expected float32 or float64 operands, got ", dtype_str(x.dtype()), " and ",
           dtype_str(y.dtype()));
  int64_t xl = x.size(-1), yl = y.size(-1), n = xl + yl - 1;
  Tensor r = fft::irfft(fft::rfft(x, n) * fft::rfft(y, n), n);
  return apply_mode(r, xl, yl, mode);
}

// ---- dither

namespace {

// torch.bartlett_window(n) (periodic) in T, in torch's operation order.
template <class T>
void bartlett(T* w, int64_t n) {
  if (n == 1) {
    w[0] = 1;
    return;
  }
  int64_t len = n + 1;  // periodic
  T step = T(2.0 / double(len - 1));
  int64_t first_half = ((len - 1) >> 1) + 1;
  for (int64_t i = 0; i < n; i++) {
    T v = T(i) * step;
    w[i] = i < first_half ? v : T(2) - v;
  }
}

int64_t randint_below(int64_t high) { return randint(high, {1}).item<int64_t>(); }

}  // namespace

Tensor dither(const Tensor& waveform, const std::string& density_function, bool noise_shaping) {
  check_waveform(waveform, "dither");
  FW_CHECK(waveform.dim() >= 1 && waveform.numel() > 0,
           "[audio::dither] Expected a non-empty (..., time) waveform, got ", waveform.sizes());
  FW_CHECK(density_function == "TPDF" || density_function == "RPDF" || density_function == "GPDF",
           "[audio::dither] density_function must be \"TPDF\", \"RPDF\" or \"GPDF\", got \"", density_function, "\"");
  NoGradGuard ng;
  Tensor x = waveform.detach().reshape({-1, waveform.size(-1)});
  int64_t channel_size = x.size(0) - 1, time_size = x.size(1) - 1;
  int64_t random_channel = channel_size > 0 ? randint_below(channel_size) : 0;
  int64_t random_time = time_size > 0 ? randint_below(time_size) : 0;
  constexpr int bits = 16;
  const double up = double((1 << (bits - 1)) - 2), down = double(1 << (bits - 1));
  Tensor scaled = x * up;
  Tensor dis;
  if (density_function == "RPDF") {
    dis = scaled + (x.select(0, random_channel).select(0, random_time) - 0.5);
  } else if (density_function == "GPDF") {
    // The sum of seven randomly picked samples (torchaudio picks channels below the last one; a single
    // channel uses channel 0, where torchaudio's randint(0) fails).
    Tensor g = x.select(0, random_channel).select(0, random_time).clone();
    for (int i = 0; i < 6; i++) {
      int64_t c = channel_size > 0 ? randint_below(channel_size) : 0;
      int64_t t = time_size > 0 ? randint_below(time_size) : 0;
      g = g + x.select(0, c).select(0, t);
    }
    dis = scaled + g;
  } else {
    Tensor w = empty({x.size(1)}, TensorOptions(x.dtype()));
    if (x.dtype() == kDouble)
      bartlett(w.data_ptr<double>(), x.size(1));
    else
      bartlett(w.data_ptr<float>(), x.size(1));
    dis = scaled + w;
  }
  Tensor q = round(dis) / down;
  if (noise_shaping) {
    Tensor err = q - x;
    int64_t n = x.size(1);
    Tensor shifted = cat({zeros({x.size(0), 1}, TensorOptions(x.dtype())), err}, 1).narrow(1, 0, n);
    q = q + shifted;
  }
  return q.reshape(waveform.sizes());
}

// ---- add_noise

Tensor add_noise(const Tensor& waveform, const Tensor& noise, const Tensor& snr, const std::optional<Tensor>& lengths) {
  FW_CHECK(waveform.defined() && noise.defined() && snr.defined(), "[audio::add_noise] inputs must be defined");
  bool dims_ok = waveform.dim() >= 1 && waveform.dim() == noise.dim() && waveform.dim() - 1 == snr.dim() &&
                 (!lengths || lengths->dim() == snr.dim());
  FW_CHECK(dims_ok, "[audio::add_noise] Input leading dimensions don't match (waveform ", waveform.sizes(), ", noise ",
           noise.sizes(), ", snr ", snr.sizes(), lengths ? ", lengths " : "",
           lengths ? lengths->sizes() : IntArrayRef(), ").");
  int64_t L = waveform.size(-1);
  FW_CHECK(L == noise.size(-1), "[audio::add_noise] Length dimensions of waveform and noise don't match (got ", L,
           " and ", noise.size(-1), ").");
  Tensor mw = waveform, mn = noise;
  if (lengths) {
    Tensor mask = arange(L, TensorOptions(kLong)).expand(waveform.sizes()).lt(lengths->unsqueeze(-1));
    mw = waveform * mask;
    mn = noise * mask;
  }
  Tensor es = norm(mw, 2, {-1}).pow(2);
  Tensor en = norm(mn, 2, {-1}).pow(2);
  Tensor orig_db = (log10(es) - log10(en)) * 10;
  Tensor scale = pow(10.0, (orig_db - snr) / 20.0);
  return waveform + scale.unsqueeze(-1) * noise;
}

}  // namespace fw::audio::functional
