// torchaudio's band-limited sinc resampling: the polyphase kernel (sinc_resample_kernel) and its
// application (apply_sinc_resample_kernel), and resample() on top.
//
// Note [resampling kernel]
// After dividing the rates by their gcd (orig o, new n), output sample f*n + i (phase i of frame f)
// is sum_j k[i][j] * xp[f*o + j] over the input padded by `width` zeros on the left and width + o on the
// right, with k[i][j] = sinc(pi t) * window(t) * base/o, t = (-i/n + (j - width)/o) * base clamped to
// [-lpw, lpw], base = min(o, n) * rolloff (torchaudio's formula, evaluated in the same dtype and
// operation order). Where the clamp bites, sin(pi t) is sin(lpw pi) = 0: torchaudio's kernel holds its
// rounding residue there (below 1e-12 of the peak), this one exact zeros. Each phase therefore touches
// only ~2 lpw o / base consecutive taps of its 2 width + o, which the polyphase loop exploits.
//
// Note [polyphase loop]
// torchaudio runs the kernel as conv1d(stride o) over all 2 width + o taps. Without autograd, fw runs
// only each phase's span of nonzero taps, vectorised one of two ways (no horizontal sums in either):
//  - many phases (n >= half a SIMD vector, e.g. 44.1k -> 16k: n = 160): consecutive phases are the
//    lanes of a vector, out[f n + i0 ...] = sum_j xp[f o + j] (broadcast) * k[i0 ...][j]; input read
//    and output written in place (polyphase_lanes);
//  - few phases (e.g. 48k -> 16k: n = 1): a block of frames of the padded input is split into its o
//    polyphase streams s_r[m] = xp[(f0 + m) o + r]; then for each phase i and tap j,
//    out_i[m] += k[i][j] s_{j mod o}[m + j div o] is one contiguous multiply-add across frames
//    (polyphase_streams).
// When the waveform or the kernel requires grad, the conv1d formulation runs instead and autograd
// differentiates it.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>
#include <vector>

#include "core/parallel.h"
#include "fw/audio/filtering.h"

namespace fw::audio::functional {

namespace {

constexpr double kPi = 3.14159265358979323846;
constexpr double kDefaultKaiserBeta = 14.769656459379492;

bool is_kaiser(const std::string& m) { return m == "sinc_interp_kaiser" || m == "kaiser_window"; }
bool is_hann(const std::string& m) { return m == "sinc_interp_hann" || m == "sinc_interpolation"; }

// Modified Bessel function of the first kind, order 0 (power series; all terms positive).
double bessel_i0(double x) {
  double q = x * x / 4, term = 1, sum = 1;
  for (int k = 1; k < 500; k++) {
    term *= q / (double(k) * double(k));
    sum += term;
    if (term < sum * 1e-17) break;
  }
  return sum;
}

// Fills k (n, 2 width + o) in T. phase_f32: the -i/n term is computed in float32 and widened (what
// torchaudio's dtype=None path does: an int64 arange divided by an int gives float32).
template <class T>
__attribute__((optimize("fp-contract=off"))) void build_kernel(T* k, int64_t o, int64_t n, int64_t width, int64_t lpw,
                                                               double base, bool kaiser, double beta, bool phase_f32) {
  int64_t L = 2 * width + o;
  const T lp = T(lpw), tb = T(base), pi = T(kPi), scale = T(base / double(o));
  // torchaudio evaluates the beta terms on a float32 tensor (torch.tensor(float(beta))).
  const T beta_t = T(float(beta));
  const T i0_beta = T(float(bessel_i0(double(float(beta)))));
  for (int64_t i = 0; i < n; i++) {
    T phase = phase_f32 ? T(float(-i) / float(n)) : T(-i) / T(n);
    for (int64_t j = 0; j < L; j++) {
      T idx = T(j - width) / T(o);
      T t = (phase + idx) * tb;
      if (!(t > -lp && t < lp)) {  // clamped: sin(lpw pi) = 0 (Note [resampling kernel])
        k[i * L + j] = T(0);
        continue;
      }
      T window;
      if (kaiser) {
        T r = t / lp;
        window = T(bessel_i0(double(beta_t * std::sqrt(T(1) - r * r)))) / i0_beta;
      } else {
        T c = std::cos(t * pi / lp / T(2));
        window = c * c;
      }
      T tp = t * pi;
      T s = tp == T(0) ? T(1) : std::sin(tp) / tp;
      k[i * L + j] = s * (window * scale);
    }
  }
}

// GCC vector extensions one machine register wide: 64 bytes with AVX-512, else 32 (AVX2; two SSE
// registers without it). The register tiles below hold eight accumulators plus a kernel vector and
// a broadcast, which fit the 16 AVX2 registers only at 32 bytes: at 64 bytes (register pairs)
// they spilled on every tap (44.1k -> 16k: 14 ms instead of 1.7 ms for 60 s on the AVX2 host).
#if defined(__AVX512F__)
constexpr int kVecBytes = 64;
#else
constexpr int kVecBytes = 32;
#endif
typedef float VecF32 __attribute__((vector_size(kVecBytes)));
typedef double VecF64 __attribute__((vector_size(kVecBytes)));
template <class T>
struct Vec64;
template <>
struct Vec64<float> {
  using type = VecF32;
};
template <>
struct Vec64<double> {
  using type = VecF64;
};

template <class V, class T>
inline V load(const T* p) {
  V v;
  std::memcpy(&v, p, sizeof(V));
  return v;
}

// Output (rows, target) = the kernel applied to x (rows, len) through polyphase streams, for few
// phases (Note [polyphase loop]).
template <class T>
void polyphase_streams(const T* x, const T* k, T* out, int64_t rows, int64_t len, int64_t o, int64_t n, int64_t width,
                       int64_t target) {
  const int64_t L = 2 * width + o;
  // Each phase's taps from its first to its last nonzero one: values and (stream, offset) positions.
  std::vector<int64_t> first(n + 1), lo(n);
  for (int64_t i = 0; i < n; i++) {
    int64_t a = 0, b = 0;
    for (int64_t j = 0; j < L; j++)
      if (k[i * L + j] != T(0)) {
        if (b == 0) a = j;
        b = j + 1;
      }
    lo[i] = a;
    first[i + 1] = first[i] + (b - a);
  }
  const int64_t nnz = first[n];
  std::vector<T> tap(static_cast<size_t>(nnz));
  std::vector<int64_t> pos(static_cast<size_t>(nnz));  // stream * S + shift, filled once S is known
  for (int64_t i = 0; i < n; i++)
    for (int64_t t = first[i]; t < first[i + 1]; t++) tap[t] = k[i * L + lo[i] + (t - first[i])];
  using Vec = typename Vec64<T>::type;
  constexpr int kVl = kVecBytes / int(sizeof(T));
  constexpr int W = 4 * kVl;  // frames per register tile
  const int64_t frames = (target + n - 1) / n;
  const int64_t qmax = (L - 1) / o + 1;  // stream samples a frame reaches past its own
  // Frames per block, a multiple of W: the o streams of a block stay within a few hundred KB.
  const int64_t fb = std::clamp<int64_t>((65536 / o + W - 1) / W * W, W, 4096);
  const int64_t blocks = (frames + fb - 1) / fb;
  const int64_t items = rows * blocks;
  const double work = double(rows) * double(frames) * double(std::max<int64_t>(nnz, 1));
  const int64_t grain = work < 2e6 ? items : 1;
  const int64_t S = fb + qmax;  // samples per stream in a block
  for (int64_t i = 0; i < n; i++)
    for (int64_t t = first[i]; t < first[i + 1]; t++) {
      int64_t j = lo[i] + (t - first[i]);
      pos[t] = (j % o) * S + j / o;
    }
  fw::detail::parallel_for(0, items, grain, [&](int64_t it0, int64_t it1) {
    std::vector<T> buf(static_cast<size_t>(o * S), T(0));
    std::vector<T> acc(static_cast<size_t>(n * fb));
    for (int64_t it = it0; it < it1; it++) {
      const int64_t r = it / blocks, f0 = (it % blocks) * fb, nf = std::min(fb, frames - f0);
      const T* xr = x + r * len;
      T* orow = out + r * target;
      // Streams: buf[q * S + m] = xp[(f0 + m) * o + q], xp[p] = x[p - width] (zero outside). Stream by
      // stream: the strided reads revisit the same few cache lines, the writes are contiguous.
      const int64_t ns = nf + qmax;  // stream samples read; the rest of each stream stays zero
      const int64_t pfirst = f0 * o - width, plast = (f0 + ns - 1) * o + o - 1 - width;
      for (int64_t q = 0; q < o; q++) {
        T* d = buf.data() + q * S;
        const int64_t p0 = f0 * o + q - width;
        if (pfirst >= 0 && plast < len) {
          for (int64_t m = 0; m < ns; m++) d[m] = xr[p0 + m * o];
        } else {
          for (int64_t m = 0; m < ns; m++) {
            int64_t p = p0 + m * o;
            d[m] = (p >= 0 && p < len) ? xr[p] : T(0);
          }
        }
      }
      for (int64_t i = 0; i < n; i++) {
        T* a = acc.data() + i * fb;
        // Chunks of W frames accumulate in registers over all taps, then store once (the last chunk
        // may run past nf into the zero-padded streams).
        for (int64_t m0 = 0; m0 < nf; m0 += W) {
          Vec r0{}, r1{}, r2{}, r3{};
          for (int64_t t = first[i]; t < first[i + 1]; t++) {
            const Vec kv = Vec{} + tap[t];
            const T* s = buf.data() + pos[t] + m0;
            r0 += kv * load<Vec>(s);
            r1 += kv * load<Vec>(s + kVl);
            r2 += kv * load<Vec>(s + 2 * kVl);
            r3 += kv * load<Vec>(s + 3 * kVl);
          }
          std::memcpy(a + m0, &r0, sizeof(Vec));
          std::memcpy(a + m0 + kVl, &r1, sizeof(Vec));
          std::memcpy(a + m0 + 2 * kVl, &r2, sizeof(Vec));
          std::memcpy(a + m0 + 3 * kVl, &r3, sizeof(Vec));
        }
      }
      // Interleave the phases: out[(f0 + m) * n + i] = acc[i][m], inside the target length.
      for (int64_t m = 0; m < nf; m++) {
        T* dst = orow + (f0 + m) * n;
        int64_t iend = std::min<int64_t>(n, target - (f0 + m) * n);
        for (int64_t i = 0; i < iend; i++) dst[i] = acc[i * fb + m];
      }
    }
  });
}

// The first and one-past-last nonzero tap of kernel row i.
template <class T>
std::pair<int64_t, int64_t> tap_span(const T* row, int64_t L) {
  int64_t a = 0, b = 0;
  for (int64_t j = 0; j < L; j++)
    if (row[j] != T(0)) {
      if (b == 0) a = j;
      b = j + 1;
    }
  return {a, b};
}

// The same for many phases (Note [polyphase loop], second form): kVl consecutive phases fill the lanes
// of a vector, so out[f * n + i0 .. i0 + kVl) is one contiguous vector, accumulated as
// sum_j x[f * o + j] (broadcast) * k[i0 .. i0 + kVl][j] over the union of the group's taps; eight frames
// share each kernel vector load. Reads the input in place (a zero-padded scratch only at the edges)
// and writes the output in place.
template <class T>
void polyphase_lanes(const T* x, const T* k, T* out, int64_t rows, int64_t len, int64_t o, int64_t n, int64_t width,
                     int64_t target) {
  using Vec = typename Vec64<T>::type;
  constexpr int64_t kVl = kVecBytes / int64_t(sizeof(T));
  constexpr int64_t kFr = 8;  // frames per register tile
  const int64_t L = 2 * width + o;
  const int64_t groups = (n + kVl - 1) / kVl;
  // Per group: tap range [jlo, jhi) and the transposed kernel, one vector of kVl phases per tap.
  std::vector<int64_t> jlo(groups), jhi(groups), first(groups + 1, 0);
  int64_t min_lo = L, max_hi = 0;
  for (int64_t g = 0; g < groups; g++) {
    int64_t a = L, b = 0;
    for (int64_t i = g * kVl; i < std::min(n, (g + 1) * kVl); i++) {
      auto [lo, hi] = tap_span(k + i * L, L);
      if (hi > lo) a = std::min(a, lo), b = std::max(b, hi);
    }
    if (b <= a) a = b = 0;
    jlo[g] = a, jhi[g] = b;
    first[g + 1] = first[g] + (b - a);
    if (b > a) min_lo = std::min(min_lo, a), max_hi = std::max(max_hi, b);
  }
  if (max_hi == 0) min_lo = 0;
  std::vector<Vec> kt(static_cast<size_t>(first[groups]));
  for (int64_t g = 0; g < groups; g++)
    for (int64_t j = jlo[g]; j < jhi[g]; j++) {
      Vec v{};
      for (int64_t l = 0; l < kVl && g * kVl + l < n; l++) v[l] = k[(g * kVl + l) * L + j];
      kt[first[g] + j - jlo[g]] = v;
    }
  const int64_t frames = (target + n - 1) / n;
  // Frames whose taps all fall inside x: f*o - width + min_lo >= 0 and f*o - width + max_hi <= len.
  const int64_t f_in_lo = std::min(frames, std::max<int64_t>(0, (width - min_lo + o - 1) / o));
  const int64_t f_in_hi =
      len + width - max_hi < 0 ? f_in_lo : std::clamp<int64_t>((len + width - max_hi) / o + 1, f_in_lo, frames);

  // Frames [fa, fb) of one row; src[off + (f - fa) * o + j] is xp[f * o + j] (an index >= 0 for every
  // tap read).
  auto run = [&](const T* src, int64_t off, T* orow, int64_t fa, int64_t fb) {
    for (int64_t g = 0; g < groups; g++) {
      const Vec* kg = kt.data() + first[g];
      const int64_t nt = jhi[g] - jlo[g], i0 = g * kVl, lanes = std::min(kVl, n - i0);
      auto store = [&](int64_t f, const Vec& v) {
        int64_t cnt = std::min(lanes, target - (f * n + i0));
        if (cnt == kVl)
          std::memcpy(orow + f * n + i0, &v, sizeof(Vec));
        else if (cnt > 0)
          std::memcpy(orow + f * n + i0, &v, size_t(cnt) * sizeof(T));
      };
      int64_t f = fa;
      for (; f + kFr <= fb; f += kFr) {
        const T* s = src + (off + (f - fa) * o + jlo[g]);
        Vec a0{}, a1{}, a2{}, a3{}, a4{}, a5{}, a6{}, a7{};
        for (int64_t t = 0; t < nt; t++) {
          const Vec kv = kg[t];
          a0 += kv * s[t];
          a1 += kv * s[o + t];
          a2 += kv * s[2 * o + t];
          a3 += kv * s[3 * o + t];
          a4 += kv * s[4 * o + t];
          a5 += kv * s[5 * o + t];
          a6 += kv * s[6 * o + t];
          a7 += kv * s[7 * o + t];
        }
        store(f, a0), store(f + 1, a1), store(f + 2, a2), store(f + 3, a3);
        store(f + 4, a4), store(f + 5, a5), store(f + 6, a6), store(f + 7, a7);
      }
      for (; f < fb; f++) {
        const T* s = src + (off + (f - fa) * o + jlo[g]);
        Vec a0{};
        for (int64_t t = 0; t < nt; t++) a0 += kg[t] * s[t];
        store(f, a0);
      }
    }
  };
  // Edge frames read a zero-padded copy of the samples they reach.
  auto run_padded = [&](const T* xr, T* orow, int64_t fa, int64_t fb) {
    if (fa >= fb) return;
    const int64_t p0 = fa * o - width, cnt = (fb - 1 - fa) * o + L;
    std::vector<T> pad(static_cast<size_t>(cnt));
    for (int64_t q = 0; q < cnt; q++) {
      int64_t p = p0 + q;
      pad[q] = (p >= 0 && p < len) ? xr[p] : T(0);
    }
    run(pad.data(), 0, orow, fa, fb);
  };
  // Frame chunks: at least ~4 per thread, at most 1024 frames.
  const int64_t chunk = std::clamp<int64_t>(frames * rows / (4 * int64_t(fw::detail::max_threads())), 32, 1024);
  const int64_t chunks = (frames + chunk - 1) / chunk, items = rows * chunks;
  const double work = double(rows) * double(frames) * double(std::max<int64_t>(first[groups], 1)) * double(kVl);
  fw::detail::parallel_for(0, items, work < 2e6 ? items : 1, [&](int64_t it0, int64_t it1) {
    for (int64_t it = it0; it < it1; it++) {
      const int64_t r = it / chunks, fa = (it % chunks) * chunk, fb = std::min(frames, fa + chunk);
      const T* xr = x + r * len;
      T* orow = out + r * target;
      const int64_t ia = std::clamp(f_in_lo, fa, fb), ib = std::clamp(f_in_hi, ia, fb);
      run_padded(xr, orow, fa, ia);
      if (ib > ia) run(xr, ia * o - width, orow, ia, ib);
      run_padded(xr, orow, ib, fb);
    }
  });
}

template <class T>
void polyphase(const T* x, const T* k, T* out, int64_t rows, int64_t len, int64_t o, int64_t n, int64_t width,
               int64_t target) {
  constexpr int64_t kVl = kVecBytes / int64_t(sizeof(T));
  if (n >= kVl / 2)
    polyphase_lanes(x, k, out, rows, len, o, n, width, target);
  else
    polyphase_streams(x, k, out, rows, len, o, n, width, target);
}

void check_rates(int64_t orig_freq, int64_t new_freq, int64_t gcd, const char* fn) {
  FW_CHECK(orig_freq > 0 && new_freq > 0, "[audio::", fn,
           "] Original frequency and desired frequency should be positive, got orig_freq=", orig_freq,
           ", new_freq=", new_freq);
  FW_CHECK(gcd > 0 && orig_freq % gcd == 0 && new_freq % gcd == 0, "[audio::", fn, "] gcd=", gcd,
           " must be a positive common divisor of orig_freq=", orig_freq, " and new_freq=", new_freq);
}

}  // namespace

std::pair<Tensor, int64_t> sinc_resample_kernel(int64_t orig_freq, int64_t new_freq, int64_t gcd,
                                                int64_t lowpass_filter_width, double rolloff,
                                                const std::string& resampling_method, std::optional<double> beta,
                                                std::optional<ScalarType> dtype) {
  check_rates(orig_freq, new_freq, gcd, "sinc_resample_kernel");
  FW_CHECK(is_hann(resampling_method) || is_kaiser(resampling_method),
           "[audio::sinc_resample_kernel] Invalid resampling method: \"", resampling_method,
           "\" (expected \"sinc_interp_hann\", \"sinc_interp_kaiser\" or torchaudio 0.13's \"sinc_interpolation\", "
           "\"kaiser_window\")");
  FW_CHECK(lowpass_filter_width > 0, "[audio::sinc_resample_kernel] Low pass filter width should be positive, got ",
           lowpass_filter_width);
  FW_CHECK(rolloff > 0 && std::isfinite(rolloff), "[audio::sinc_resample_kernel] rolloff should be positive, got ",
           rolloff);
  FW_CHECK(!dtype || *dtype == kFloat || *dtype == kDouble,
           "[audio::sinc_resample_kernel] dtype must be float32 or float64, got ", dtype_str(*dtype));
  int64_t o = orig_freq / gcd, n = new_freq / gcd;
  double base = double(std::min(o, n)) * rolloff;
  int64_t width = int64_t(std::ceil(double(lowpass_filter_width * o) / base));
  bool kaiser = is_kaiser(resampling_method);
  double b = beta.value_or(kDefaultKaiserBeta);
  int64_t L = 2 * width + o;
  Tensor k;
  if (dtype && *dtype == kFloat) {
    k = empty({n, 1, L}, TensorOptions(kFloat));
    build_kernel<float>(k.data_ptr<float>(), o, n, width, lowpass_filter_width, base, kaiser, b, false);
  } else {
    k = empty({n, 1, L}, TensorOptions(kDouble));
    build_kernel<double>(k.data_ptr<double>(), o, n, width, lowpass_filter_width, base, kaiser, b, !dtype);
    if (!dtype) k = k.to(kFloat);
  }
  return {k, width};
}

Tensor apply_sinc_resample_kernel(const Tensor& waveform, int64_t orig_freq, int64_t new_freq, int64_t gcd,
                                  const Tensor& kernel, int64_t width) {
  FW_CHECK(waveform.defined() && (waveform.dtype() == kFloat || waveform.dtype() == kDouble),
           "[audio::resample] Expected floating point type (float32 or float64) for waveform tensor, but received ",
           waveform.defined() ? dtype_str(waveform.dtype()) : "an undefined tensor", ".");
  FW_CHECK(waveform.dim() >= 1, "[audio::resample] Expected a (..., time) waveform, got a 0-dim tensor");
  check_rates(orig_freq, new_freq, gcd, "resample");
  int64_t o = orig_freq / gcd, n = new_freq / gcd;
  FW_CHECK(width >= 0, "[audio::resample] width must be non-negative, got ", width);
  FW_CHECK(kernel.defined() && kernel.dim() == 3 && kernel.size(0) == n && kernel.size(1) == 1 &&
               kernel.size(2) == 2 * width + o,
           "[audio::resample] Expected a kernel of shape [", n, ", 1, ", 2 * width + o, "] for orig_freq=", orig_freq,
           ", new_freq=", new_freq, ", gcd=", gcd, ", width=", width, "; got ",
           kernel.defined() ? kernel.sizes() : IntArrayRef());
  FW_CHECK(kernel.dtype() == waveform.dtype(), "[audio::resample] kernel dtype ", dtype_str(kernel.dtype()),
           " does not match the waveform's ", dtype_str(waveform.dtype()));
  int64_t len = waveform.size(-1);
  int64_t target = (n * len + o - 1) / o;
  DimVec out_shape(waveform.sizes());
  out_shape.back() = target;
  Tensor x = waveform.reshape({-1, len});
  int64_t rows = x.size(0);
  if (is_grad_enabled() && (waveform.requires_grad() || kernel.requires_grad())) {
    Tensor xp = pad(x, {width, width + o});
    Tensor res = conv1d(xp.unsqueeze(1), kernel, {}, o);  // (rows, n, frames)
    return res.transpose(1, 2).reshape({rows, -1}).narrow(1, 0, target).reshape(out_shape.ref());
  }
  NoGradGuard ng;
  Tensor xc = x.detach().contiguous();
  Tensor kc = kernel.detach().contiguous();
  Tensor out = empty({rows, target}, TensorOptions(waveform.dtype()));
  if (rows > 0 && target > 0) {
    if (waveform.dtype() == kDouble)
      polyphase<double>(xc.data_ptr<double>(), kc.data_ptr<double>(), out.data_ptr<double>(), rows, len, o, n, width,
                        target);
    else
      polyphase<float>(xc.data_ptr<float>(), kc.data_ptr<float>(), out.data_ptr<float>(), rows, len, o, n, width,
                       target);
  }
  return out.reshape(out_shape.ref());
}

Tensor resample(const Tensor& waveform, int64_t orig_freq, int64_t new_freq, int64_t lowpass_filter_width,
                double rolloff, const std::string& resampling_method, std::optional<double> beta) {
  FW_CHECK(orig_freq > 0 && new_freq > 0,
           "[audio::resample] Original frequency and desired frequency should be positive, got orig_freq=", orig_freq,
           ", new_freq=", new_freq);
  FW_CHECK(waveform.defined(), "[audio::resample] waveform is undefined");
  if (orig_freq == new_freq) return waveform;
  FW_CHECK(waveform.dtype() == kFloat || waveform.dtype() == kDouble,
           "[audio::resample] Expected floating point type (float32 or float64) for waveform tensor, but received ",
           dtype_str(waveform.dtype()), ".");
  int64_t gcd = std::gcd(orig_freq, new_freq);
  auto [kernel, width] = sinc_resample_kernel(orig_freq, new_freq, gcd, lowpass_filter_width, rolloff,
                                              resampling_method, beta, waveform.dtype());
  return apply_sinc_resample_kernel(waveform, orig_freq, new_freq, gcd, kernel, width);
}

}  // namespace fw::audio::functional
