// Signal windows (fw/fft.h), computed in the requested dtype with the same operation order as
// PyTorch, so float32 windows agree to the last bits where it matters (the near-zero edges of a
// Hann window lose most of their relative precision to the 1 - cos cancellation).
#include <cmath>

#include "core/op.h"
#include "fw/fft.h"

namespace fw {
using namespace detail;

namespace {

TensorOptions window_options(const TensorOptions& o, const char* op) {
  ScalarType t = o.has_dtype() ? o.dtype() : get_default_dtype();
  FW_CHECK(is_floating_point(t), "[", op, "] expected a floating point dtype, got ", dtype_str(t));
  return TensorOptions().dtype(t);
}

// Shared prologue: validates the length, handles 0/1-point windows, and returns the symmetric
// length to compute (window_length + 1 for periodic windows) or -1 when `out` is already final.
int64_t window_setup(int64_t window_length, bool periodic, const TensorOptions& o, const char* op, Tensor* out) {
  FW_CHECK(window_length >= 0, "[", op, "] requires non-negative window_length, got window_length=", window_length);
  if (window_length == 0) {
    *out = fw::empty({0}, o);
    return -1;
  }
  if (window_length == 1) {
    *out = fw::ones({1}, o);
    return -1;
  }
  return periodic ? window_length + 1 : window_length;
}

Tensor finish(const Tensor& w, int64_t window_length, bool periodic) {
  return periodic ? w.narrow(0, 0, window_length).contiguous() : w;
}

}  // namespace

Tensor hamming_window(int64_t window_length, bool periodic, double alpha, double beta, const TensorOptions& options) {
  TensorOptions o = window_options(options, "hamming_window");
  Tensor out;
  int64_t n = window_setup(window_length, periodic, o, "hamming_window", &out);
  if (n < 0) return out;
  Tensor w = fw::arange(n, o).mul(2.0 * M_PI / double(n - 1)).cos().mul(-beta).add(alpha);
  return finish(w, window_length, periodic);
}
Tensor hamming_window(int64_t window_length, bool periodic, double alpha, const TensorOptions& options) {
  return hamming_window(window_length, periodic, alpha, 0.46, options);
}
Tensor hamming_window(int64_t window_length, bool periodic, const TensorOptions& options) {
  return hamming_window(window_length, periodic, 0.54, 0.46, options);
}
Tensor hamming_window(int64_t window_length, const TensorOptions& options) {
  return hamming_window(window_length, true, options);
}
Tensor hann_window(int64_t window_length, bool periodic, const TensorOptions& options) {
  FW_CHECK(window_length >= 0, "[hann_window] requires non-negative window_length, got window_length=", window_length);
  return hamming_window(window_length, periodic, 0.5, 0.5, options);
}
Tensor hann_window(int64_t window_length, const TensorOptions& options) { return hann_window(window_length, true, options); }

Tensor blackman_window(int64_t window_length, bool periodic, const TensorOptions& options) {
  TensorOptions o = window_options(options, "blackman_window");
  Tensor out;
  int64_t n = window_setup(window_length, periodic, o, "blackman_window", &out);
  if (n < 0) return out;
  Tensor base = fw::arange(n, o).mul(M_PI / double(n - 1));
  Tensor w = base.mul(4).cos().mul(0.08) - base.mul(2).cos().mul(0.5) + 0.42;
  return finish(w, window_length, periodic);
}
Tensor blackman_window(int64_t window_length, const TensorOptions& options) {
  return blackman_window(window_length, true, options);
}

Tensor bartlett_window(int64_t window_length, bool periodic, const TensorOptions& options) {
  TensorOptions o = window_options(options, "bartlett_window");
  Tensor out;
  int64_t n = window_setup(window_length, periodic, o, "bartlett_window", &out);
  if (n < 0) return out;
  Tensor w = fw::arange(n, o).mul(2.0 / double(n - 1));
  int64_t half = ((n - 1) >> 1) + 1;
  Tensor tail = w.narrow(0, half, n - half);
  tail.mul_(-1).add_(2);
  return finish(w, window_length, periodic);
}
Tensor bartlett_window(int64_t window_length, const TensorOptions& options) {
  return bartlett_window(window_length, true, options);
}

// I0(beta sqrt(1 - (2k/(n-1) - 1)^2)) / I0(beta), evaluated in double and rounded once.
Tensor kaiser_window(int64_t window_length, bool periodic, double beta, const TensorOptions& options) {
  TensorOptions o = window_options(options, "kaiser_window");
  Tensor out;
  int64_t n = window_setup(window_length, periodic, o, "kaiser_window", &out);
  if (n < 0) return out;
  FW_CHECK(std::isfinite(beta), "[kaiser_window] beta must be finite, got ", beta);
  std::vector<double> v(static_cast<size_t>(n));
  const double inv_i0 = 1.0 / std::cyl_bessel_i(0.0, std::abs(beta));
  for (int64_t k = 0; k < n; k++) {
    double r = 2.0 * double(k) / double(n - 1) - 1.0;
    v[size_t(k)] = std::cyl_bessel_i(0.0, std::abs(beta * std::sqrt(std::max(0.0, 1.0 - r * r)))) * inv_i0;
  }
  Tensor w = fw::tensor(v, TensorOptions().dtype(kDouble)).to(o.dtype());
  return finish(w, window_length, periodic);
}
Tensor kaiser_window(int64_t window_length, const TensorOptions& options) {
  return kaiser_window(window_length, true, 12.0, options);
}

}  // namespace fw
