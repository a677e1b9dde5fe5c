// Discrete Fourier transforms: the primitives fft_r2c / fft_c2r / fft_c2c on FFTW3, and the
// composites of fw/fft.h (fft, ifft, rfft, irfft, hfft, ihfft, stft, istft, ...).
//
// Note [FFT plans and rows]
// A transform along one dim runs one 1-D FFT per "row" (every index of the other dims). Each
// worker gathers its row into an aligned scratch buffer, executes a cached FFTW plan for the row
// length with FFTW's new-array interface (thread-safe; planning is not, so the cache holds a
// mutex) and scatters the scaled result through the output's strides. Gathering costs O(n) next
// to the O(n log n) transform and lets any input layout (stft's overlapping frames, transposed
// views) run without a contiguous copy. Multi-dim transforms apply one dim after the other.
#include <fftw3.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <mutex>
#include <tuple>

#include "core/op.h"
#include "core/parallel.h"
#include "core/visit.h"
#include "fw/fft.h"
#include "fw/nn/functional.h"

namespace fw {
using namespace detail;

namespace {

enum class Kind { R2C, C2R, C2C };

// FFTW's float and double APIs behind one name.
template <class R> struct Fftw;
template <> struct Fftw<float> {
  using Plan = fftwf_plan;
  using C = fftwf_complex;
  static void* alloc(size_t bytes) { return fftwf_malloc(bytes); }
  static void release(void* p) { fftwf_free(p); }
  static Plan r2c(int n, float* i, C* o, unsigned f) { return fftwf_plan_dft_r2c_1d(n, i, o, f); }
  static Plan c2r(int n, C* i, float* o, unsigned f) { return fftwf_plan_dft_c2r_1d(n, i, o, f); }
  static Plan c2c(int n, C* i, C* o, int sign, unsigned f) { return fftwf_plan_dft_1d(n, i, o, sign, f); }
  static void run_r2c(Plan p, float* i, C* o) { fftwf_execute_dft_r2c(p, i, o); }
  static void run_c2r(Plan p, C* i, float* o) { fftwf_execute_dft_c2r(p, i, o); }
  static void run_c2c(Plan p, C* i, C* o) { fftwf_execute_dft(p, i, o); }
};
template <> struct Fftw<double> {
  using Plan = fftw_plan;
  using C = fftw_complex;
  static void* alloc(size_t bytes) { return fftw_malloc(bytes); }
  static void release(void* p) { fftw_free(p); }
  static Plan r2c(int n, double* i, C* o, unsigned f) { return fftw_plan_dft_r2c_1d(n, i, o, f); }
  static Plan c2r(int n, C* i, double* o, unsigned f) { return fftw_plan_dft_c2r_1d(n, i, o, f); }
  static Plan c2c(int n, C* i, C* o, int sign, unsigned f) { return fftw_plan_dft_1d(n, i, o, sign, f); }
  static void run_r2c(Plan p, double* i, C* o) { fftw_execute_dft_r2c(p, i, o); }
  static void run_c2r(Plan p, C* i, double* o) { fftw_execute_dft_c2r(p, i, o); }
  static void run_c2c(Plan p, C* i, C* o) { fftw_execute_dft(p, i, o); }
};

// Scratch memory from FFTW's allocator, so that executing buffers have the alignment the plans
// were made with.
template <class R>
struct Scratch {
  void* p;
  explicit Scratch(size_t bytes) : p(Fftw<R>::alloc(std::max<size_t>(bytes, 64))) {
    FW_CHECK(p, "[fft] out of memory allocating ", bytes, " bytes of scratch");
  }
  ~Scratch() { Fftw<R>::release(p); }
  Scratch(const Scratch&) = delete;
  Scratch& operator=(const Scratch&) = delete;
};

// Plans live for the process (one per kind, length and direction actually used). Rows are many
// and short, so FFTW_MEASURE pays for itself on repeated sizes; FW_FFTW_ESTIMATE=1 skips the
// measuring (a few ms per new size) for programs that touch many sizes once.
template <class R>
typename Fftw<R>::Plan get_plan(Kind kind, int64_t n, bool forward) {
  static std::mutex mu;
  static std::map<std::tuple<int, int64_t, bool>, typename Fftw<R>::Plan> plans;
  static const unsigned flags = [] {
    const char* e = std::getenv("FW_FFTW_ESTIMATE");
    return (e && *e && *e != '0') ? FFTW_ESTIMATE : FFTW_MEASURE;
  }();
  std::lock_guard<std::mutex> lock(mu);
  auto key = std::make_tuple(int(kind), n, forward);
  auto it = plans.find(key);
  if (it != plans.end()) return it->second;
  FW_CHECK(n <= (int64_t(1) << 30), "[fft] transform length ", n, " is too large");
  using C = typename Fftw<R>::C;
  Scratch<R> a(sizeof(C) * size_t(n + 2)), b(sizeof(C) * size_t(n + 2));
  typename Fftw<R>::Plan p = nullptr;
  if (kind == Kind::R2C) p = Fftw<R>::r2c(int(n), (R*)a.p, (C*)b.p, flags);
  else if (kind == Kind::C2R) p = Fftw<R>::c2r(int(n), (C*)a.p, (R*)b.p, flags);
  else p = Fftw<R>::c2c(int(n), (C*)a.p, (C*)b.p, forward ? FFTW_FORWARD : FFTW_BACKWARD, flags);
  FW_CHECK(p, "[fft] FFTW could not plan a transform of length ", n);
  plans.emplace(key, p);
  return p;
}

double norm_scale(int64_t normalization, int64_t n) {
  if (normalization == 1) return 1.0 / std::sqrt(double(n));
  if (normalization == 2) return 1.0 / double(n);
  return 1.0;
}

// One 1-D transform of length n along `dim` for every row, src -> dst (see Note [FFT plans and
// rows]). R2C writes n/2+1 bins (or all n, mirrored, when dst has n along dim); C2R reads the
// first n/2+1 bins of src and writes n samples; C2C maps n to n.
template <class R>
void transform_rows(Kind kind, const Tensor& src, const Tensor& dst, int64_t dim, int64_t n, bool forward,
                    double scale) {
  using C = std::complex<R>;
  using FC = typename Fftw<R>::C;
  const int64_t nd = dst.dim();
  DimVec rsz, sst, dstr;
  for (int64_t k = 0; k < nd; k++) {
    if (k == dim) continue;
    rsz.push_back(dst.sizes()[k]);
    sst.push_back(src.strides()[k]);
    dstr.push_back(dst.strides()[k]);
  }
  int64_t rows = 1;
  for (int64_t s : rsz) rows *= s;
  if (rows == 0 || n == 0) return;
  const int64_t si = src.strides()[dim], so = dst.strides()[dim], dst_len = dst.sizes()[dim];
  const int64_t bins = n / 2 + 1;
  auto plan = get_plan<R>(kind, n, forward);
  char* sbase = static_cast<char*>(src.data_ptr());
  char* dbase = static_cast<char*>(dst.data_ptr());
  const size_t sel = src.element_size(), del = dst.element_size();
  const R sc = R(scale);
  int64_t grain = std::max<int64_t>(1, 16384 / std::max<int64_t>(n, 1));
  parallel_for(0, rows, grain, [&](int64_t b, int64_t e) {
    Scratch<R> in(sizeof(C) * size_t(n + 2)), out(sizeof(C) * size_t(n + 2));
    R* rin = static_cast<R*>(in.p);
    C* cin = static_cast<C*>(in.p);
    R* rout = static_cast<R*>(out.p);
    C* cout = static_cast<C*>(out.p);
    // Row index -> offsets, then an odometer over the row dims.
    DimVec idx(rsz.size(), 0);
    int64_t soff = 0, doff = 0;
    for (int64_t k = int64_t(rsz.size()) - 1, r = b; k >= 0; k--) {
      idx[k] = r % rsz[k];
      r /= rsz[k];
      soff += idx[k] * sst[k];
      doff += idx[k] * dstr[k];
    }
    for (int64_t r = b; r < e; r++) {
      const char* sp = sbase + soff * int64_t(sel);
      char* dp = dbase + doff * int64_t(del);
      if (kind == Kind::R2C) {
        const R* x = reinterpret_cast<const R*>(sp);
        for (int64_t i = 0; i < n; i++) rin[i] = x[i * si];
        Fftw<R>::run_r2c(plan, rin, reinterpret_cast<FC*>(cout));
        C* y = reinterpret_cast<C*>(dp);
        for (int64_t k = 0; k < bins; k++) y[k * so] = cout[k] * sc;
        for (int64_t k = bins; k < dst_len; k++) y[k * so] = std::conj(cout[n - k]) * sc;
      } else if (kind == Kind::C2R) {
        const C* x = reinterpret_cast<const C*>(sp);
        for (int64_t k = 0; k < bins; k++) cin[k] = x[k * si];
        Fftw<R>::run_c2r(plan, reinterpret_cast<FC*>(cin), rout);
        R* y = reinterpret_cast<R*>(dp);
        for (int64_t i = 0; i < n; i++) y[i * so] = rout[i] * sc;
      } else {
        const C* x = reinterpret_cast<const C*>(sp);
        for (int64_t i = 0; i < n; i++) cin[i] = x[i * si];
        Fftw<R>::run_c2c(plan, reinterpret_cast<FC*>(cin), reinterpret_cast<FC*>(cout));
        C* y = reinterpret_cast<C*>(dp);
        for (int64_t i = 0; i < n; i++) y[i * so] = cout[i] * sc;
      }
      for (int64_t k = int64_t(rsz.size()) - 1; k >= 0; k--) {
        soff += sst[k];
        doff += dstr[k];
        if (++idx[k] < rsz[k]) break;
        soff -= idx[k] * sst[k];
        doff -= idx[k] * dstr[k];
        idx[k] = 0;
      }
    }
  });
}

void transform(Kind kind, const Tensor& src, const Tensor& dst, int64_t dim, int64_t n, bool forward, double scale) {
  if (src.dtype() == kFloat || src.dtype() == kComplexFloat) transform_rows<float>(kind, src, dst, dim, n, forward, scale);
  else transform_rows<double>(kind, src, dst, dim, n, forward, scale);
}

// Wrapped dims, distinct, at least one.
DimVec fft_dims(const Tensor& t, IntArrayRef dims, const char* op) {
  FW_CHECK(!dims.empty(), "[", op, "] expected at least one dim to transform");
  DimVec out;
  for (int64_t d : dims) {
    int64_t w = wrap_dim(d, t.dim(), op);
    for (int64_t o : out) FW_CHECK(o != w, "[", op, "] dims must be unique, got dim ", w, " twice");
    out.push_back(w);
  }
  return out;
}

void check_norm(int64_t normalization, const char* op) {
  FW_CHECK(normalization >= 0 && normalization <= 2, "[", op, "] invalid normalization mode ", normalization,
           " (expected 0 none, 1 by_root_n, 2 by_n)");
}

// ---- fft_r2c
void r2c_meta(const OpCall& c, Metas& m) {
  const Tensor& x = c.in[0];
  FW_CHECK(x.dtype() == kFloat || x.dtype() == kDouble, "[fft_r2c] expected a float32 or float64 input, got ",
           dtype_str(x.dtype()));
  check_norm(c.a.i0, "fft_r2c");
  DimVec dims = fft_dims(x, c.a.ints, "fft_r2c");
  DimVec sz(x.sizes());
  for (int64_t d : dims) FW_CHECK(sz[d] > 0, "[fft_r2c] Invalid number of data points (", sz[d], ") specified");
  if (c.a.flags & 1) sz[dims.back()] = sz[dims.back()] / 2 + 1;
  m.push_back({sz, to_complex_type(x.dtype())});
}
void r2c_kernel(const OpCall& c, Outs& o) {
  const Tensor& x = c.in[0];
  DimVec dims = fft_dims(x, c.a.ints, "fft_r2c");
  const int64_t last = dims.back(), n = x.sizes()[last];
  transform(Kind::R2C, x, o[0], last, n, true, norm_scale(c.a.i0, n));
  for (size_t k = 0; k + 1 < dims.size(); k++) {
    int64_t d = dims[k], nk = o[0].sizes()[d];
    Tensor tmp = o[0].clone();
    transform(Kind::C2C, tmp, o[0], d, nk, true, norm_scale(c.a.i0, nk));
  }
}
// Gradient: the adjoint is the unnormalised backward transform with the same scale; bins the
// onesided output dropped had no gradient (zero-padded).
void r2c_vjp(const VjpCtx& c, ArrayRef<Tensor> g, Outs& r) {
  const Tensor& x = c.in[0];
  DimVec dims = fft_dims(x, c.a.ints, "fft_r2c");
  Tensor gx = g[0];
  if (c.a.flags & 1) {
    int64_t last = dims.back(), missing = x.sizes()[last] - gx.sizes()[last];
    if (missing > 0) {
      DimVec pad(2 * (gx.dim() - last), 0);
      pad[2 * (gx.dim() - 1 - last) + 1] = missing;
      gx = fw::constant_pad_nd(gx, pad, 0);
    }
  }
  r[0] = fw::real(fw::_fft_c2c(gx, dims, c.a.i0, false));
}

// ---- fft_c2r
void c2r_meta(const OpCall& c, Metas& m) {
  const Tensor& x = c.in[0];
  FW_CHECK(x.is_complex(), "[fft_c2r] expected a complex input, got ", dtype_str(x.dtype()));
  check_norm(c.a.i0, "fft_c2r");
  DimVec dims = fft_dims(x, c.a.ints, "fft_c2r");
  const int64_t last = dims.back(), n = c.a.i1;
  FW_CHECK(n >= 1, "[fft_c2r] Invalid number of data points (", n, ") specified");
  FW_CHECK(x.sizes()[last] >= n / 2 + 1, "[fft_c2r] output length ", n, " needs ", n / 2 + 1,
           " input bins along dim ", last, ", got ", x.sizes()[last]);
  for (int64_t d : dims) FW_CHECK(x.sizes()[d] > 0, "[fft_c2r] Invalid number of data points (0) specified");
  DimVec sz(x.sizes());
  sz[last] = n;
  m.push_back({sz, to_real_value_type(x.dtype())});
}
void c2r_kernel(const OpCall& c, Outs& o) {
  const Tensor& x = c.in[0];
  DimVec dims = fft_dims(x, c.a.ints, "fft_c2r");
  Tensor src = x;
  for (size_t k = 0; k + 1 < dims.size(); k++) {
    int64_t d = dims[k], nk = x.sizes()[d];
    Tensor tmp = make_tensor(src.sizes(), src.dtype());
    transform(Kind::C2C, src, tmp, d, nk, false, norm_scale(c.a.i0, nk));
    src = tmp;
  }
  const int64_t last = dims.back(), n = c.a.i1;
  transform(Kind::C2R, src, o[0], last, n, false, norm_scale(c.a.i0, n));
}
// Gradient (PyTorch's rule): the onesided forward transform of the gradient, with the bins that
// stand for two conjugate bins of the full spectrum doubled; bins past n/2+1 get zero.
void c2r_vjp(const VjpCtx& c, ArrayRef<Tensor> g, Outs& r) {
  const Tensor& x = c.in[0];
  DimVec dims = fft_dims(x, c.a.ints, "fft_c2r");
  const int64_t last = dims.back(), n = c.a.i1, bins = n / 2 + 1;
  Tensor gi = fw::_fft_r2c(g[0], dims, c.a.i0, true);
  int64_t twice = n - bins;
  if (twice > 0) {
    std::vector<double> w(size_t(bins), 1.0);
    for (int64_t k = 1; k <= twice; k++) w[size_t(k)] = 2.0;
    DimVec shape(gi.dim(), 1);
    shape[last] = bins;
    Tensor wt = fw::tensor(w, TensorOptions().dtype(to_real_value_type(gi.dtype()))).view(shape);
    gi = gi * wt;
  }
  int64_t extra = x.sizes()[last] - bins;
  if (extra > 0) {
    DimVec pad(2 * (gi.dim() - last), 0);
    pad[2 * (gi.dim() - 1 - last) + 1] = extra;
    gi = fw::constant_pad_nd(gi, pad, 0);
  }
  r[0] = gi;
}

// ---- fft_c2c
void c2c_meta(const OpCall& c, Metas& m) {
  const Tensor& x = c.in[0];
  FW_CHECK(x.is_complex(), "[fft_c2c] expected a complex input, got ", dtype_str(x.dtype()));
  check_norm(c.a.i0, "fft_c2c");
  DimVec dims = fft_dims(x, c.a.ints, "fft_c2c");
  for (int64_t d : dims)
    FW_CHECK(x.sizes()[d] > 0, "[fft_c2c] Invalid number of data points (", x.sizes()[d], ") specified");
  m.push_back({DimVec(x.sizes()), x.dtype()});
}
void c2c_kernel(const OpCall& c, Outs& o) {
  const Tensor& x = c.in[0];
  DimVec dims = fft_dims(x, c.a.ints, "fft_c2c");
  const bool fwd = c.a.flags & 1;
  Tensor src = x;
  for (size_t k = 0; k < dims.size(); k++) {
    int64_t d = dims[k], nk = x.sizes()[d];
    Tensor dst = k + 1 == dims.size() ? o[0] : make_tensor(x.sizes(), x.dtype());
    transform(Kind::C2C, src, dst, d, nk, fwd, norm_scale(c.a.i0, nk));
    src = dst;
  }
}
void c2c_vjp(const VjpCtx& c, ArrayRef<Tensor> g, Outs& r) {
  r[0] = fw::_fft_c2c(g[0], c.a.ints, c.a.i0, !(c.a.flags & 1));
}

// ---- check_nola: in = {envelope}, real floating; the output is a copy of it.
void nola_meta(const OpCall& c, Metas& m) {
  const Tensor& e = c.in[0];
  FW_CHECK(e.dtype() == kFloat || e.dtype() == kDouble, "[istft] the window envelope must be float32 or float64, got ",
           dtype_str(e.dtype()));
  m.push_back({DimVec(e.sizes()), e.dtype()});
}
void nola_kernel(const OpCall& c, Outs& o) {
  Tensor e = c.in[0].contiguous();
  double lo = std::numeric_limits<double>::infinity();
  visit_float(e.dtype(), "istft", [&]<class T>() {
    const T* p = e.data_ptr<T>();
    for (int64_t i = 0, n = e.numel(); i < n; i++) lo = std::min(lo, double(std::abs(p[i])));
  });
  FW_CHECK(!(lo <= 1e-11), "[istft] window overlap add min: ", lo,
           " (the window's squared overlap-add must be nonzero everywhere, NOLA)");
  o[0].copy_(e);
}
void nola_vjp(const VjpCtx&, ArrayRef<Tensor> g, Outs& r) { r[0] = g[0]; }

}  // namespace

FW_DEFINE_OP(check_nola) {
  d.meta = nola_meta;
  d.cpu = nola_kernel;
  d.vjp = nola_vjp;
  d.vjp_reads_in = false;
}
FW_DEFINE_OP(fft_r2c) {
  d.meta = r2c_meta;
  d.cpu = r2c_kernel;
  d.vjp = r2c_vjp;
  d.vjp_reads_in = false;
}
FW_DEFINE_OP(fft_c2r) {
  d.meta = c2r_meta;
  d.cpu = c2r_kernel;
  d.vjp = c2r_vjp;
  d.vjp_reads_in = false;
}
FW_DEFINE_OP(fft_c2c) {
  d.meta = c2c_meta;
  d.cpu = c2c_kernel;
  d.vjp = c2c_vjp;
  d.vjp_reads_in = false;
}

Tensor detail::check_nola(const Tensor& envelope) { return dispatch1(OpId::check_nola, {envelope}, OpAttrs{}); }

// ---- primitives
Tensor _fft_r2c(const Tensor& self, IntArrayRef dim, int64_t normalization, bool onesided) {
  OpAttrs a;
  a.ints = DimVec(dim);
  a.i0 = normalization;
  a.flags = onesided ? 1u : 0u;
  return dispatch1(OpId::fft_r2c, {self}, a);
}
Tensor _fft_c2r(const Tensor& self, IntArrayRef dim, int64_t normalization, int64_t last_dim_size) {
  OpAttrs a;
  a.ints = DimVec(dim);
  a.i0 = normalization;
  a.i1 = last_dim_size;
  return dispatch1(OpId::fft_c2r, {self}, a);
}
Tensor _fft_c2c(const Tensor& self, IntArrayRef dim, int64_t normalization, bool forward) {
  OpAttrs a;
  a.ints = DimVec(dim);
  a.i0 = normalization;
  a.flags = forward ? 1u : 0u;
  return dispatch1(OpId::fft_c2c, {self}, a);
}

namespace fft {
namespace {

// PyTorch's norm string -> normalization of the forward or inverse transform.
int64_t norm_mode(std::optional<std::string_view> norm, bool forward, const char* op) {
  std::string_view s = norm.value_or("backward");
  if (s == "backward") return forward ? 0 : 2;
  if (s == "forward") return forward ? 2 : 0;
  if (s == "ortho") return 1;
  ::fw::detail::throw_error("[fft_", op, "] Invalid normalization mode: \"", std::string(s), "\"");
}

// Real inputs of integer/bool dtypes become the default float dtype; float16 is not supported.
Tensor promote_real(const Tensor& x, const char* op) {
  if (x.is_complex() || x.dtype() == kFloat || x.dtype() == kDouble) return x;
  FW_CHECK(is_integral(x.dtype(), true), "[fft_", op, "] Unsupported dtype ", dtype_str(x.dtype()));
  return x.to(get_default_dtype());
}

// x trimmed or zero-padded along dim to n.
Tensor resize_dim(const Tensor& x, int64_t dim, int64_t n, const char* op) {
  FW_CHECK(n >= 1, "[fft_", op, "] Invalid number of data points (", n, ") specified");
  int64_t cur = x.sizes()[dim];
  if (cur == n) return x;
  if (cur > n) return x.narrow(dim, 0, n);
  DimVec pad(2 * (x.dim() - dim), 0);
  pad[2 * (x.dim() - 1 - dim) + 1] = n - cur;
  return fw::constant_pad_nd(x, pad, 0);
}

Tensor to_complex(const Tensor& x) {
  return x.is_complex() ? x : fw::complex(x, fw::zeros_like(x));
}

}  // namespace

Tensor fft(const Tensor& self, std::optional<int64_t> n, int64_t dim, std::optional<std::string_view> norm) {
  Tensor x = promote_real(self, "fft");
  int64_t d = wrap_dim(dim, x.dim(), "fft_fft");
  x = resize_dim(x, d, n.value_or(x.sizes()[d]), "fft");
  int64_t mode = norm_mode(norm, true, "fft");
  return x.is_complex() ? _fft_c2c(x, {d}, mode, true) : _fft_r2c(x, {d}, mode, false);
}
Tensor ifft(const Tensor& self, std::optional<int64_t> n, int64_t dim, std::optional<std::string_view> norm) {
  Tensor x = promote_real(self, "ifft");
  int64_t d = wrap_dim(dim, x.dim(), "fft_ifft");
  x = resize_dim(x, d, n.value_or(x.sizes()[d]), "ifft");
  int64_t mode = norm_mode(norm, false, "ifft");
  // A real signal's inverse transform is the conjugate of its forward one (same scale).
  return x.is_complex() ? _fft_c2c(x, {d}, mode, false) : fw::conj(_fft_r2c(x, {d}, mode, false));
}
Tensor rfft(const Tensor& self, std::optional<int64_t> n, int64_t dim, std::optional<std::string_view> norm) {
  FW_CHECK(!self.is_complex(), "[fft_rfft] rfft expects a real input tensor, but got ", dtype_str(self.dtype()));
  Tensor x = promote_real(self, "rfft");
  int64_t d = wrap_dim(dim, x.dim(), "fft_rfft");
  x = resize_dim(x, d, n.value_or(x.sizes()[d]), "rfft");
  return _fft_r2c(x, {d}, norm_mode(norm, true, "rfft"), true);
}
Tensor irfft(const Tensor& self, std::optional<int64_t> n, int64_t dim, std::optional<std::string_view> norm) {
  Tensor x = promote_real(self, "irfft");
  int64_t d = wrap_dim(dim, x.dim(), "fft_irfft");
  int64_t out_n = n.value_or(2 * (x.sizes()[d] - 1));
  FW_CHECK(out_n >= 1, "[fft_irfft] Invalid number of data points (", out_n, ") specified");
  x = resize_dim(to_complex(x), d, out_n / 2 + 1, "irfft");
  return _fft_c2r(x, {d}, norm_mode(norm, false, "irfft"), out_n);
}
Tensor hfft(const Tensor& self, std::optional<int64_t> n, int64_t dim, std::optional<std::string_view> norm) {
  Tensor x = promote_real(self, "hfft");
  int64_t d = wrap_dim(dim, x.dim(), "fft_hfft");
  int64_t out_n = n.value_or(2 * (x.sizes()[d] - 1));
  FW_CHECK(out_n >= 1, "[fft_hfft] Invalid number of data points (", out_n, ") specified");
  x = resize_dim(to_complex(x), d, out_n / 2 + 1, "hfft");
  // hfft(x) = irfft(conj(x)) with the forward transform's scaling.
  return _fft_c2r(fw::conj(x), {d}, norm_mode(norm, true, "hfft"), out_n);
}
Tensor ihfft(const Tensor& self, std::optional<int64_t> n, int64_t dim, std::optional<std::string_view> norm) {
  FW_CHECK(!self.is_complex(), "[fft_ihfft] ihfft expects a real input tensor, but got ", dtype_str(self.dtype()));
  Tensor x = promote_real(self, "ihfft");
  int64_t d = wrap_dim(dim, x.dim(), "fft_ihfft");
  x = resize_dim(x, d, n.value_or(x.sizes()[d]), "ihfft");
  return fw::conj(_fft_r2c(x, {d}, norm_mode(norm, false, "ihfft"), true));
}
// ---- n-dimensional transforms
namespace {
struct ShapeDims {
  DimVec s, dims;
};
// PyTorch's defaults for s and dim (see fw/fft.h), wrapped and checked.
ShapeDims shape_and_dims(const Tensor& x, OptionalIntArrayRef s, OptionalIntArrayRef dim, const char* op) {
  ShapeDims r;
  if (dim) {
    for (int64_t d : *dim) {
      int64_t w = wrap_dim(d, x.dim(), op);
      for (int64_t o : r.dims) FW_CHECK(o != w, "[", op, "] dims must be unique, got dim ", w, " twice");
      r.dims.push_back(w);
    }
    if (s) FW_CHECK(s->size() == r.dims.size(), "[", op, "] When given, dim and shape arguments must have the same "
                    "length, got ", r.dims.size(), " dims and ", s->size(), " sizes");
  } else if (s) {
    FW_CHECK(int64_t(s->size()) <= x.dim(), "[", op, "] Got shape with ", s->size(),
             " values but input tensor only has ", x.dim(), " dimensions.");
    for (int64_t i = 0; i < int64_t(s->size()); i++) r.dims.push_back(x.dim() - int64_t(s->size()) + i);
  } else {
    for (int64_t i = 0; i < x.dim(); i++) r.dims.push_back(i);
  }
  for (size_t i = 0; i < r.dims.size(); i++) {
    int64_t n = s ? (*s)[i] : -1;
    r.s.push_back(n == -1 ? x.sizes()[r.dims[i]] : n);
  }
  FW_CHECK(!r.dims.empty(), "[", op, "] expected at least one dim to transform");
  return r;
}
Tensor resize_all(Tensor x, const ShapeDims& sd, const char* op) {
  for (size_t i = 0; i < sd.dims.size(); i++) x = resize_dim(x, sd.dims[i], sd.s[i], op);
  return x;
}
// The c2r forms: the last dim's output length (default 2 * (bins - 1)) and the input resized to
// its bins.
std::pair<Tensor, int64_t> c2r_input(const Tensor& self, OptionalIntArrayRef s, OptionalIntArrayRef dim,
                                     const char* op) {
  Tensor x = to_complex(promote_real(self, op));
  ShapeDims sd = shape_and_dims(x, s, dim, op);
  const int64_t last = sd.dims.back();
  const int64_t out_n = (s && (*s).back() != -1) ? (*s).back() : 2 * (x.sizes()[last] - 1);
  FW_CHECK(out_n >= 1, "[fft_", op, "] Invalid number of data points (", out_n, ") specified");
  sd.s.back() = out_n / 2 + 1;
  return {resize_all(x, sd, op), out_n};
}
DimVec dims_of(const Tensor& x, OptionalIntArrayRef s, OptionalIntArrayRef dim, const char* op) {
  return shape_and_dims(x, s, dim, op).dims;
}
}  // namespace

Tensor fftn(const Tensor& self, OptionalIntArrayRef s, OptionalIntArrayRef dim, std::optional<std::string_view> norm) {
  Tensor x = promote_real(self, "fftn");
  ShapeDims sd = shape_and_dims(x, s, dim, "fft_fftn");
  x = resize_all(x, sd, "fftn");
  const int64_t mode = norm_mode(norm, true, "fftn");
  return x.is_complex() ? _fft_c2c(x, sd.dims, mode, true) : _fft_r2c(x, sd.dims, mode, false);
}
Tensor ifftn(const Tensor& self, OptionalIntArrayRef s, OptionalIntArrayRef dim, std::optional<std::string_view> norm) {
  Tensor x = promote_real(self, "ifftn");
  ShapeDims sd = shape_and_dims(x, s, dim, "fft_ifftn");
  x = resize_all(x, sd, "ifftn");
  const int64_t mode = norm_mode(norm, false, "ifftn");
  return x.is_complex() ? _fft_c2c(x, sd.dims, mode, false) : fw::conj(_fft_r2c(x, sd.dims, mode, false));
}
Tensor rfftn(const Tensor& self, OptionalIntArrayRef s, OptionalIntArrayRef dim, std::optional<std::string_view> norm) {
  FW_CHECK(!self.is_complex(), "[fft_rfftn] rfftn expects a real-valued input tensor, but got ", dtype_str(self.dtype()));
  Tensor x = promote_real(self, "rfftn");
  ShapeDims sd = shape_and_dims(x, s, dim, "fft_rfftn");
  x = resize_all(x, sd, "rfftn");
  return _fft_r2c(x, sd.dims, norm_mode(norm, true, "rfftn"), true);
}
Tensor irfftn(const Tensor& self, OptionalIntArrayRef s, OptionalIntArrayRef dim, std::optional<std::string_view> norm) {
  auto [x, out_n] = c2r_input(self, s, dim, "irfftn");
  return _fft_c2r(x, dims_of(x, s, dim, "fft_irfftn"), norm_mode(norm, false, "irfftn"), out_n);
}
Tensor hfftn(const Tensor& self, OptionalIntArrayRef s, OptionalIntArrayRef dim, std::optional<std::string_view> norm) {
  auto [x, out_n] = c2r_input(self, s, dim, "hfftn");
  return _fft_c2r(fw::conj(x), dims_of(x, s, dim, "fft_hfftn"), norm_mode(norm, true, "hfftn"), out_n);
}
Tensor ihfftn(const Tensor& self, OptionalIntArrayRef s, OptionalIntArrayRef dim, std::optional<std::string_view> norm) {
  FW_CHECK(!self.is_complex(), "[fft_ihfftn] ihfftn expects a real-valued input tensor, but got ",
           dtype_str(self.dtype()));
  Tensor x = promote_real(self, "ihfftn");
  ShapeDims sd = shape_and_dims(x, s, dim, "fft_ihfftn");
  x = resize_all(x, sd, "ihfftn");
  return fw::conj(_fft_r2c(x, sd.dims, norm_mode(norm, false, "ihfftn"), true));
}
Tensor fft2(const Tensor& self, OptionalIntArrayRef s, IntArrayRef dim, std::optional<std::string_view> norm) {
  return fftn(self, s, dim, norm);
}
Tensor ifft2(const Tensor& self, OptionalIntArrayRef s, IntArrayRef dim, std::optional<std::string_view> norm) {
  return ifftn(self, s, dim, norm);
}
Tensor rfft2(const Tensor& self, OptionalIntArrayRef s, IntArrayRef dim, std::optional<std::string_view> norm) {
  return rfftn(self, s, dim, norm);
}
Tensor irfft2(const Tensor& self, OptionalIntArrayRef s, IntArrayRef dim, std::optional<std::string_view> norm) {
  return irfftn(self, s, dim, norm);
}
Tensor hfft2(const Tensor& self, OptionalIntArrayRef s, IntArrayRef dim, std::optional<std::string_view> norm) {
  return hfftn(self, s, dim, norm);
}
Tensor ihfft2(const Tensor& self, OptionalIntArrayRef s, IntArrayRef dim, std::optional<std::string_view> norm) {
  return ihfftn(self, s, dim, norm);
}

Tensor fftfreq(int64_t n, double d, const TensorOptions& options) {
  FW_CHECK(n >= 1, "[fft_fftfreq] n must be positive, got ", n);
  TensorOptions o = options;
  if (!o.has_dtype()) o = o.dtype(get_default_dtype());
  // [0, 1, ..., ceil(n/2)-1, -floor(n/2), ..., -1] / (d n)
  Tensor k = fw::arange(n, TensorOptions().dtype(kLong));
  k = fw::where(k < (n + 1) / 2, k, k - n);
  return k.to(o.dtype()).div(d * double(n));
}
Tensor rfftfreq(int64_t n, double d, const TensorOptions& options) {
  FW_CHECK(n >= 1, "[fft_rfftfreq] n must be positive, got ", n);
  TensorOptions o = options;
  if (!o.has_dtype()) o = o.dtype(get_default_dtype());
  return fw::arange(n / 2 + 1, TensorOptions().dtype(kLong)).to(o.dtype()).div(d * double(n));
}
namespace {
Tensor shift(const Tensor& x, IntArrayRef dims, bool inverse) {
  DimVec ds, shifts;
  if (dims.empty()) {
    for (int64_t d = 0; d < x.dim(); d++) ds.push_back(d);
  } else {
    for (int64_t d : dims) ds.push_back(wrap_dim(d, x.dim(), inverse ? "fft_ifftshift" : "fft_fftshift"));
  }
  if (ds.empty()) return x.clone();
  for (int64_t d : ds) shifts.push_back(inverse ? (x.sizes()[d] + 1) / 2 : x.sizes()[d] / 2);
  return fw::roll(x, shifts, ds);
}
}  // namespace
Tensor fftshift(const Tensor& self, IntArrayRef dims) { return shift(self, dims, false); }
Tensor ifftshift(const Tensor& self, IntArrayRef dims) { return shift(self, dims, true); }

}  // namespace fft

// ---- stft / istft (composites; see fw/fft.h)
namespace {

// window (win_length, or ones) centred in n_fft samples.
Tensor padded_window(const std::optional<Tensor>& window, int64_t n_fft, int64_t win_length, ScalarType dt,
                     const char* op) {
  Tensor w;
  if (window && window->defined()) {
    w = *window;
    FW_CHECK(w.dim() == 1 && w.sizes()[0] == win_length, "[", op, "] expected a 1D window tensor of size equal to win_length=",
             win_length, ", but got window with size ", shape_str(w.sizes()));
  } else {
    w = fw::ones({win_length}, TensorOptions().dtype(is_complex(dt) ? to_real_value_type(dt) : dt));
  }
  if (win_length < n_fft) {
    int64_t left = (n_fft - win_length) / 2;
    w = fw::constant_pad_nd(w, {left, n_fft - win_length - left}, 0);
  }
  return w;
}

}  // namespace

Tensor stft(const Tensor& self, int64_t n_fft, std::optional<int64_t> hop_length, std::optional<int64_t> win_length,
            const std::optional<Tensor>& window, bool center, std::string_view pad_mode, bool normalized,
            std::optional<bool> onesided, std::optional<bool> return_complex) {
  const bool complex_in = self.is_complex() || (window && window->defined() && window->is_complex());
  FW_CHECK(return_complex.has_value() || complex_in,
           "[stft] stft requires the return_complex parameter be given for real inputs, and will further require "
           "that return_complex=True in a future PyTorch release.");
  FW_CHECK(self.dim() == 1 || self.dim() == 2, "[stft] expected a 1D or 2D tensor, got ", self.dim(), "D of shape ",
           shape_str(self.sizes()));
  Tensor x = self.dim() == 1 ? self.unsqueeze(0) : self;
  if (!x.is_complex() && x.dtype() != kFloat && x.dtype() != kDouble) {
    FW_CHECK(is_integral(x.dtype(), true), "[stft] expected a floating point or complex input, got ", dtype_str(x.dtype()));
    x = x.to(get_default_dtype());
  }
  const int64_t hop = hop_length.value_or(n_fft / 4), win = win_length.value_or(n_fft);
  if (center) {
    // pad wants a batch dim before the padded one: (B, 1, T).
    std::string mode(pad_mode);
    FW_CHECK(mode == "reflect" || mode == "constant" || mode == "replicate" || mode == "circular",
             "[stft] unsupported pad_mode \"", mode, "\" (expected reflect, constant, replicate or circular)");
    x = fw::pad(x.unsqueeze(1), {n_fft / 2, n_fft / 2}, mode).squeeze(1);
  }
  const int64_t len = x.sizes()[1];
  FW_CHECK(n_fft > 0 && n_fft <= len, "[stft] expected 0 < n_fft < ", len, ", but got n_fft=", n_fft);
  FW_CHECK(hop > 0, "[stft] expected hop_length > 0, but got hop_length=", hop);
  FW_CHECK(win > 0 && win <= n_fft, "[stft] expected 0 < win_length <= n_fft, but got win_length=", win);
  Tensor w = padded_window(window, n_fft, win, x.dtype(), "stft");
  Tensor frames = x.unfold(1, n_fft, hop);  // (B, n_frames, n_fft), overlapping view
  // A missing window is rectangular: it only matters when win_length < n_fft (zero padding).
  if ((window && window->defined()) || win < n_fft) frames = frames * w;
  const int64_t norm = normalized ? 1 : 0;
  const bool one = onesided.value_or(!complex_in);
  Tensor spec;
  if (frames.is_complex()) {
    FW_CHECK(!one, "[stft] Cannot have onesided output if window or input is complex");
    spec = _fft_c2c(frames, {2}, norm, true);
  } else {
    spec = _fft_r2c(frames, {2}, norm, one);
  }
  spec = spec.transpose(1, 2);  // (B, freq, n_frames)
  if (self.dim() == 1) spec = spec.squeeze(0);
  if (!return_complex.value_or(true)) spec = fw::view_as_real(spec);
  return spec;
}

Tensor stft(const Tensor& self, int64_t n_fft, std::optional<int64_t> hop_length, std::optional<int64_t> win_length,
            const std::optional<Tensor>& window, bool normalized, std::optional<bool> onesided,
            std::optional<bool> return_complex) {
  return stft(self, n_fft, hop_length, win_length, window, false, "reflect", normalized, onesided, return_complex);
}

Tensor Tensor::stft(int64_t n_fft, std::optional<int64_t> hop_length, std::optional<int64_t> win_length,
                    const std::optional<Tensor>& window, bool center, std::string_view pad_mode, bool normalized,
                    std::optional<bool> onesided, std::optional<bool> return_complex) const {
  return fw::stft(*this, n_fft, hop_length, win_length, window, center, pad_mode, normalized, onesided, return_complex);
}
Tensor Tensor::stft(int64_t n_fft, std::optional<int64_t> hop_length, std::optional<int64_t> win_length,
                    const std::optional<Tensor>& window, bool normalized, std::optional<bool> onesided,
                    std::optional<bool> return_complex) const {
  return fw::stft(*this, n_fft, hop_length, win_length, window, normalized, onesided, return_complex);
}
Tensor Tensor::istft(int64_t n_fft, std::optional<int64_t> hop_length, std::optional<int64_t> win_length,
                     const std::optional<Tensor>& window, bool center, bool normalized, std::optional<bool> onesided,
                     std::optional<int64_t> length, bool return_complex) const {
  return fw::istft(*this, n_fft, hop_length, win_length, window, center, normalized, onesided, length, return_complex);
}

Tensor istft(const Tensor& self, int64_t n_fft, std::optional<int64_t> hop_length, std::optional<int64_t> win_length,
             const std::optional<Tensor>& window, bool center, bool normalized, std::optional<bool> onesided,
             std::optional<int64_t> length, bool return_complex) {
  FW_CHECK(self.is_complex(), "[istft] istft requires a complex-valued input tensor, got ", dtype_str(self.dtype()));
  FW_CHECK(self.dim() == 2 || self.dim() == 3, "[istft] expected a tensor with 2 or 3 dimensions of complex, got ",
           self.dim(), "D of shape ", shape_str(self.sizes()));
  Tensor spec = self.dim() == 2 ? self.unsqueeze(0) : self;  // (B, freq, frames)
  const int64_t hop = hop_length.value_or(n_fft / 4), win = win_length.value_or(n_fft);
  const int64_t n_frames = spec.sizes()[2], fft_size = spec.sizes()[1];
  FW_CHECK(n_fft > 0, "[istft] expected n_fft > 0, got ", n_fft);
  FW_CHECK(hop > 0 && hop <= win, "[istft] expected 0 < hop_length <= win_length");
  FW_CHECK(win > 0 && win <= n_fft, "[istft] expected 0 < win_length <= n_fft");
  FW_CHECK(n_frames > 0, "[istft] expected at least one frame, got input of shape ", shape_str(self.sizes()));
  const bool one = onesided.value_or(fft_size != n_fft);
  if (one) {
    FW_CHECK(n_fft / 2 + 1 == fft_size, "[istft] expected the frequency dimension (3rd to the last) of the input tensor "
             "to match n_fft / 2 + 1 when onesided=True, but got ", fft_size);
  } else {
    FW_CHECK(n_fft == fft_size, "[istft] expected the frequency dimension (3rd to the last) of the input tensor to "
             "match n_fft when onesided=False, but got ", fft_size);
  }
  FW_CHECK(!(one && return_complex), "[istft] cannot have onesided output if window or input is complex");
  Tensor w = padded_window(window, n_fft, win, to_real_value_type(spec.dtype()), "istft");
  const int64_t norm = normalized ? 1 : 2;
  Tensor frames = spec.transpose(1, 2);  // (B, frames, freq)
  if (one) {
    frames = _fft_c2r(frames, {2}, norm, n_fft);
  } else {
    frames = _fft_c2c(frames, {2}, norm, false);
    if (!return_complex) frames = fw::real(frames);
  }
  frames = frames * w;  // (B, frames, n_fft)
  // Overlap-add: sample j of frame f lands at f*hop + j. index_add accumulates repeated targets.
  const int64_t out_len = n_fft + hop * (n_frames - 1);
  Tensor pos = (fw::arange(n_frames, TensorOptions().dtype(kLong)).unsqueeze(1) * hop +
                fw::arange(n_fft, TensorOptions().dtype(kLong)).unsqueeze(0)).reshape({-1});
  const int64_t B = frames.sizes()[0];
  Tensor y = fw::zeros({B, out_len}, TensorOptions().dtype(frames.dtype()))
                 .index_add(1, pos, frames.reshape({B, n_frames * n_fft}));
  Tensor env = fw::zeros({out_len}, TensorOptions().dtype(w.dtype()))
                   .index_add(0, pos, (w * w).unsqueeze(0).expand({n_frames, n_fft}).reshape({-1}));
  const int64_t start = center ? n_fft / 2 : 0;
  int64_t end = out_len;
  if (length) end = std::min(out_len, start + *length);
  else if (center) end = out_len - n_fft / 2;
  FW_CHECK(end > start, "[istft] the requested output is empty (start ", start, ", end ", end, ")");
  y = y.slice(1, start, end);
  env = env.slice(0, start, end);
  y = y / detail::check_nola(env);
  if (length && y.sizes()[1] < *length) y = fw::constant_pad_nd(y, {0, *length - y.sizes()[1]}, 0);
  if (self.dim() == 2) y = y.squeeze(0);
  return y;
}

}  // namespace fw
