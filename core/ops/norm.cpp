// Normalisation: native_layer_norm, native_group_norm, native_batch_norm (primitives returning
// the statistics backward needs) and the composites layer_norm, group_norm, batch_norm,
// instance_norm.
//
// Note [Norm kernels]
// Every norm reduces contiguous runs: a row (layer norm), a (sample, group) slab (group norm)
// or the (sample, channel) planes of one channel (batch norm). Moments take two passes over
// the run (mean, then centred squares) with double accumulators, which is exact enough for
// any run length and costs nothing extra for an L1-resident row. The affine step is fused:
// y = (x - mean) * a + bias with a = rstd * weight, one vectorised pass (subtracting the
// mean first keeps constant groups exactly zero).
// Optional tensors arrive in the input list behind x in the order weight, bias, running_mean,
// running_var; attrs.flags bit k says whether the k-th of them is present.
#include <algorithm>
#include <cmath>

#include "core/convert.h"
#include "core/layout.h"
#include "core/op.h"
#include "core/parallel.h"
#include "core/visit.h"

namespace fw {
using namespace detail;

namespace {

enum : uint32_t { kWeight = 1, kBias = 2, kRunMean = 4, kRunVar = 8, kTraining = 16 };

// The optional inputs of a norm call (undefined when absent).
struct NormInputs {
  Tensor w, b, rm, rv;
};
NormInputs norm_inputs(const OpCall& c) {
  NormInputs n;
  size_t k = 1;
  if (c.a.flags & kWeight) n.w = c.in[k++];
  if (c.a.flags & kBias) n.b = c.in[k++];
  if (c.a.flags & kRunMean) n.rm = c.in[k++];
  if (c.a.flags & kRunVar) n.rv = c.in[k++];
  return n;
}
std::vector<Tensor> pack_inputs(const Tensor& x, const Tensor& w, const Tensor& b, const Tensor& rm,
                                const Tensor& rv, uint32_t* flags) {
  std::vector<Tensor> in{x};
  const Tensor* opt[] = {&w, &b, &rm, &rv};
  for (uint32_t k = 0; k < 4; k++)
    if (opt[k]->defined()) {
      in.push_back(*opt[k]);
      *flags |= 1u << k;
    }
  return in;
}

ScalarType compute_type(ScalarType t) { return (t == kHalf || t == kBFloat16) ? kFloat : t; }

void check_float(const char* op, const Tensor& x) {
  FW_CHECK(x.is_floating_point(), "[", op, "] not implemented for dtype ", dtype_str(x.dtype()));
}

// A vector parameter in compute type, or an empty pointer when absent.
template <class T>
struct Param {
  Tensor t;
  const T* p = nullptr;
  Param(const Tensor& src, ScalarType ct) {
    if (!src.defined()) return;
    t = cast(src, ct).contiguous();
    p = t.template data_ptr<T>();
  }
};

template <class T>
void moments(const T* x, int64_t n, double& mean, double& var) {
  double s = 0, q = 0;
#pragma omp simd reduction(+ : s)
  for (int64_t i = 0; i < n; i++) s += double(x[i]);
  mean = n > 0 ? s / double(n) : 0;
  double m = mean;
#pragma omp simd reduction(+ : q)
  for (int64_t i = 0; i < n; i++) q += (double(x[i]) - m) * (double(x[i]) - m);
  var = n > 0 ? q / double(n) : 0;
}

template <class T>
void affine(const T* x, T* y, int64_t n, T mean, T a, T b) {
#pragma omp simd
  for (int64_t i = 0; i < n; i++) y[i] = (x[i] - mean) * a + b;
}

// ---- layer norm. attrs: ints = normalized_shape, f0 = eps.

void layer_norm_meta(const OpCall& c, Metas& m) {
  const Tensor& x = c.in[0];
  IntArrayRef ns = c.a.ints;
  NormInputs p = norm_inputs(c);
  FW_CHECK(!ns.empty(), "[layer_norm] Expected normalized_shape to be at least 1-dimensional, i.e., containing at "
           "least one element, but got normalized_shape = ", ns);
  int64_t axis = x.dim() - int64_t(ns.size());
  FW_CHECK(axis >= 0 && x.sizes().slice(size_t(axis), ns.size()).equals(ns), "[layer_norm] Given normalized_shape=",
           ns, ", expected input with shape [*, ", shape_str(ns).substr(1), ", but got input of size", x.sizes());
  FW_CHECK(!p.w.defined() || p.w.sizes().equals(ns), "[layer_norm] Expected weight to be of same shape as "
           "normalized_shape, but got weight of shape ", p.w.sizes(), " and normalized_shape = ", ns);
  FW_CHECK(!p.b.defined() || p.b.sizes().equals(ns), "[layer_norm] Expected bias to be of same shape as "
           "normalized_shape, but got bias of shape ", p.b.sizes(), " and normalized_shape = ", ns);
  check_float("layer_norm", x);
  DimVec stat(x.sizes().slice(0, size_t(axis)));
  for (size_t i = 0; i < ns.size(); i++) stat.push_back(1);
  m.push_back({DimVec(x.sizes()), x.dtype()});
  m.push_back({stat, x.dtype()});
  m.push_back({stat, x.dtype()});
}

template <class T>
void layer_norm_rows(const T* x, T* y, T* mean, T* rstd, int64_t rows, int64_t n, const T* w, const T* b, double eps) {
  parallel_for(0, rows, std::max<int64_t>(1, kGrainSize / std::max<int64_t>(n, 1)), [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; r++) {
      const T* xr = x + r * n;
      T* yr = y + r * n;
      double mu, var;
      moments(xr, n, mu, var);
      T rs = T(1 / std::sqrt(var + eps)), mt = T(mu);
      mean[r] = mt;
      rstd[r] = rs;
      if (!w && !b) {
        affine(xr, yr, n, mt, rs, T(0));
        continue;
      }
      if (w && b) {
#pragma omp simd
        for (int64_t i = 0; i < n; i++) yr[i] = (xr[i] - mt) * rs * w[i] + b[i];
      } else {
        for (int64_t i = 0; i < n; i++) yr[i] = (xr[i] - mt) * rs * (w ? w[i] : T(1)) + (b ? b[i] : T(0));
      }
    }
  });
}

// Runs body<T>(x, y, mean, rstd) on compute-type buffers and copies back into low-precision outputs.
template <class Body>
void with_compute_buffers(const char* op, const Tensor& in, Outs& o, Body body) {
  ScalarType ct = compute_type(in.dtype());
  Tensor x = cast(in, ct).contiguous();
  Outs bufs;
  for (auto& t : o) bufs.push_back(t.dtype() == ct ? t : make_tensor(t.sizes(), ct));
  visit_float(ct, op, [&]<class T>() { body.template operator()<T>(x, bufs); });
  for (size_t k = 0; k < o.size(); k++)
    if (!bufs[k].is_same(o[k])) o[k].copy_(bufs[k]);
}

void layer_norm_kernel(const OpCall& c, Outs& o) {
  NormInputs p = norm_inputs(c);
  int64_t n = shape_numel(c.a.ints, "layer_norm");
  int64_t rows = n == 0 ? 0 : c.in[0].numel() / n;
  with_compute_buffers("layer_norm", c.in[0], o, [&]<class T>(const Tensor& x, Outs& b) {
    Param<T> w(p.w, x.dtype()), bias(p.b, x.dtype());
    layer_norm_rows<T>(x.data_ptr<T>(), b[0].data_ptr<T>(), b[1].data_ptr<T>(), b[2].data_ptr<T>(), rows, n, w.p,
                       bias.p, c.a.f0);
  });
}

// ---- group norm. attrs: ints = {N, C, HxW, groups}, f0 = eps.

void group_norm_meta(const OpCall& c, Metas& m) {
  const Tensor& x = c.in[0];
  NormInputs p = norm_inputs(c);
  int64_t n = c.a.ints[0], ch = c.a.ints[1], hw = c.a.ints[2], g = c.a.ints[3];
  FW_CHECK(g > 0 && ch % g == 0, "[group_norm] Expected number of channels in input to be divisible by num_groups, "
           "but got input of shape ", x.sizes(), " and num_groups=", g);
  FW_CHECK(x.numel() == n * ch * hw, "[group_norm] Expected the input to have ", n * ch * hw,
           " elements (N * C * HxW), but got input of shape ", x.sizes());
  FW_CHECK(!p.w.defined() || (p.w.dim() == 1 && p.w.numel() == ch), "[group_norm] Expected weight to be a vector of "
           "size equal to the number of channels in input, but got weight of shape ", p.w.sizes(),
           " and input of shape ", x.sizes());
  FW_CHECK(!p.b.defined() || (p.b.dim() == 1 && p.b.numel() == ch), "[group_norm] Expected bias to be a vector of "
           "size equal to the number of channels in input, but got bias of shape ", p.b.sizes(),
           " and input of shape ", x.sizes());
  check_float("group_norm", x);
  m.push_back({DimVec(x.sizes()), x.dtype()});
  m.push_back({DimVec{n, g}, x.dtype()});
  m.push_back({DimVec{n, g}, x.dtype()});
}

void group_norm_kernel(const OpCall& c, Outs& o) {
  NormInputs p = norm_inputs(c);
  int64_t n = c.a.ints[0], ch = c.a.ints[1], hw = c.a.ints[2], g = c.a.ints[3], cg = ch / g;
  with_compute_buffers("group_norm", c.in[0], o, [&]<class T>(const Tensor& x, Outs& b) {
    Param<T> w(p.w, x.dtype()), bias(p.b, x.dtype());
    const T* px = x.data_ptr<T>();
    T *py = b[0].data_ptr<T>(), *pm = b[1].data_ptr<T>(), *pr = b[2].data_ptr<T>();
    parallel_for(0, n * g, std::max<int64_t>(1, kGrainSize / std::max<int64_t>(cg * hw, 1)), [&](int64_t s0, int64_t s1) {
      for (int64_t s = s0; s < s1; s++) {
        double mu, var;
        moments(px + s * cg * hw, cg * hw, mu, var);
        double rs = 1 / std::sqrt(var + c.a.f0);
        pm[s] = T(mu);
        pr[s] = T(rs);
        for (int64_t k = 0; k < cg; k++) {
          int64_t chan = (s % g) * cg + k;
          double a = rs * (w.p ? double(w.p[chan]) : 1.0);
          int64_t off = (s * cg + k) * hw;
          affine(px + off, py + off, hw, T(mu), T(a), bias.p ? T(bias.p[chan]) : T(0));
        }
      }
    });
  });
}

// ---- batch norm. attrs: f0 = momentum, f1 = eps, flags: kTraining and the optional inputs.

void batch_norm_meta(const OpCall& c, Metas& m) {
  const Tensor& x = c.in[0];
  NormInputs p = norm_inputs(c);
  bool training = c.a.flags & kTraining;
  FW_CHECK(x.dim() >= 2, "[batch_norm] expected an input with at least 2 dims (N, C, *), got ", x.dim(),
           "-D input of size ", x.sizes());
  int64_t ch = x.size(1);
  const char* names[] = {"weight", "bias", "running_mean", "running_var"};
  const Tensor* ts[] = {&p.w, &p.b, &p.rm, &p.rv};
  for (int k = 0; k < 4; k++)
    FW_CHECK(!ts[k]->defined() || ts[k]->numel() == ch, "[batch_norm] ", names[k], " should contain ", ch,
             " elements not ", ts[k]->numel());
  FW_CHECK(training || (p.rm.defined() && p.rv.defined()), "[batch_norm] running_",
           p.rm.defined() ? "var" : "mean", " must be defined in evaluation mode");
  check_float("batch_norm", x);
  ScalarType st = x.dtype();
  if (compute_type(st) != st && ((p.w.defined() && p.w.dtype() == kFloat) || (p.rm.defined() && p.rm.dtype() == kFloat)))
    st = kFloat;
  m.push_back({DimVec(x.sizes()), x.dtype()});
  m.push_back({DimVec{training ? ch : 0}, st});
  m.push_back({DimVec{training ? ch : 0}, st});
}

// Per-channel mean and biased variance of x viewed as [N, C, L].
template <class T>
void channel_moments(const T* x, int64_t n, int64_t ch, int64_t l, std::vector<double>& mean, std::vector<double>& var) {
  parallel_for(0, ch, std::max<int64_t>(1, kGrainSize / std::max<int64_t>(n * l, 1)), [&](int64_t c0, int64_t c1) {
    for (int64_t c = c0; c < c1; c++) {
      double s = 0, q = 0;
      for (int64_t i = 0; i < n; i++) {
        const T* r = x + (i * ch + c) * l;
#pragma omp simd reduction(+ : s)
        for (int64_t j = 0; j < l; j++) s += double(r[j]);
      }
      double cnt = double(n * l), mu = cnt > 0 ? s / cnt : 0;
      for (int64_t i = 0; i < n; i++) {
        const T* r = x + (i * ch + c) * l;
#pragma omp simd reduction(+ : q)
        for (int64_t j = 0; j < l; j++) q += (double(r[j]) - mu) * (double(r[j]) - mu);
      }
      mean[size_t(c)] = mu;
      var[size_t(c)] = cnt > 0 ? q / cnt : 0;
    }
  });
}

// Per-channel mean and biased variance of x viewed as [R, C] rows (a channels-last input: C
// innermost). The rows are cut into a fixed number of blocks (it depends on R only, not on the
// thread count), each summed into its own double accumulators and combined in block order, so
// the result is the same for any number of threads.
template <class T>
void channel_moments_rows(const T* x, int64_t rows, int64_t ch, std::vector<double>& mean, std::vector<double>& var) {
  const int64_t blocks = std::clamp<int64_t>(rows / 64, 1, 64), per = (rows + blocks - 1) / blocks;
  std::vector<double> part(size_t(blocks * ch));
  auto pass = [&](const std::vector<double>* mu) {
    std::fill(part.begin(), part.end(), 0.0);
    parallel_for(0, blocks, 1, [&](int64_t b0, int64_t b1) {
      for (int64_t b = b0; b < b1; b++) {
        double* acc = part.data() + b * ch;
        for (int64_t r = b * per; r < std::min(rows, (b + 1) * per); r++) {
          const T* xr = x + r * ch;
          if (mu) {
            const double* m = mu->data();
#pragma omp simd
            for (int64_t k = 0; k < ch; k++) acc[k] += (double(xr[k]) - m[k]) * (double(xr[k]) - m[k]);
          } else {
#pragma omp simd
            for (int64_t k = 0; k < ch; k++) acc[k] += double(xr[k]);
          }
        }
      }
    });
    std::vector<double> total(size_t(ch), 0.0);
    for (int64_t b = 0; b < blocks; b++)
      for (int64_t k = 0; k < ch; k++) total[size_t(k)] += part[size_t(b * ch + k)];
    return total;
  };
  const double cnt = double(rows);
  mean = pass(nullptr);
  for (double& m : mean) m = cnt > 0 ? m / cnt : 0;
  var = pass(&mean);
  for (double& v : var) v = cnt > 0 ? v / cnt : 0;
}

// Note [Running statistics and autograd]
// Training-mode batch norm updates running_mean/running_var as a side effect, in place and
// without bumping their version counter: the node recorded for the call saves them as inputs
// (evaluation mode reads them in its vjp), and a second training forward through the same
// layer before backward (a GAN step, a siamese pair) must not invalidate the first node,
// whose training-mode vjp never reads them. Non-contiguous or integer buffers fall back to
// copy_, which does count as a write.
void update_running(const Tensor& running, const std::vector<double>& stat, double momentum, double correction) {
  if (running.is_contiguous() && running.is_floating_point()) {
    visit_float(running.dtype(), "batch_norm", [&]<class T>() {
      T* p = running.data_ptr<T>();
      for (size_t i = 0; i < stat.size(); i++)
        p[i] = convert<T>(convert<double>(p[i]) * (1 - momentum) + stat[i] * correction * momentum);
    });
    return;
  }
  Tensor s = make_tensor({int64_t(stat.size())}, kDouble);
  for (size_t i = 0; i < stat.size(); i++) s.data_ptr<double>()[i] = stat[i] * correction;
  Tensor upd = running.to(kDouble) * (1 - momentum) + s * momentum;
  running.copy_(upd);
}

void batch_norm_kernel(const OpCall& c, Outs& o) {
  NormInputs p = norm_inputs(c);
  const Tensor& in = c.in[0];
  bool training = c.a.flags & kTraining;
  int64_t n = in.size(0), ch = in.size(1), l = in.numel() / std::max<int64_t>(n * ch, 1);
  double eps = c.a.f1;
  std::vector<double> mean(static_cast<size_t>(ch)), var(mean), rstd(mean);
  ScalarType ct = compute_type(in.dtype());
  // A channels-last input with a channels-last result (result_order gives one, Note [Channels-last
  // results]), or an (N, C) input (L = 1, BatchNorm1d after a Linear), is normalised where it
  // lies as [N * L, C] rows; anything else as row-major [N, C, L]. (The [N, C, L] loops over
  // L = 1 took 6.5 ms for a 12544 x 64 input, the rows 0.1 ms.)
  const MemoryFormat cl = in.dim() == 4 ? MemoryFormat::ChannelsLast : MemoryFormat::ChannelsLast3d;
  const bool cl_rows = (in.dim() == 4 || in.dim() == 5) && !in.is_contiguous() && in.is_contiguous(cl) &&
                       o[0].is_contiguous(cl);
  const bool flat_rows = l == 1 && in.is_contiguous() && o[0].is_contiguous();
  const bool rows = in.dtype() == ct && o[0].dtype() == ct && (cl_rows || flat_rows);
  Tensor x = rows ? in : cast(in, ct).contiguous();
  Tensor y = rows || (o[0].dtype() == ct && o[0].is_contiguous()) ? o[0] : make_tensor(o[0].sizes(), ct);
  visit_float(ct, "batch_norm", [&]<class T>() {
    const T* px = x.data_ptr<T>();
    if (training) {
      if (rows) channel_moments_rows(px, n * l, ch, mean, var);
      else channel_moments(px, n, ch, l, mean, var);
    } else {
      Tensor rm = p.rm.to(kDouble).contiguous(), rv = p.rv.to(kDouble).contiguous();
      std::copy(rm.data_ptr<double>(), rm.data_ptr<double>() + ch, mean.begin());
      std::copy(rv.data_ptr<double>(), rv.data_ptr<double>() + ch, var.begin());
    }
    for (int64_t k = 0; k < ch; k++) rstd[size_t(k)] = 1 / std::sqrt(var[size_t(k)] + eps);
    Param<double> w(p.w, kDouble), b(p.b, kDouble);
    T* py = y.data_ptr<T>();
    if (rows) {  // y = (x - mean) * a + b along each row of C channels
      std::vector<T> mt(static_cast<size_t>(ch)), at(mt), bt(mt);
      for (int64_t k = 0; k < ch; k++) {
        mt[size_t(k)] = T(mean[size_t(k)]);
        at[size_t(k)] = T(rstd[size_t(k)] * (w.p ? w.p[k] : 1.0));
        bt[size_t(k)] = T(b.p ? b.p[k] : 0.0);
      }
      const T *m = mt.data(), *a = at.data(), *bb = bt.data();
      parallel_for(0, n * l, std::max<int64_t>(1, kGrainSize / std::max<int64_t>(ch, 1)), [&](int64_t r0, int64_t r1) {
        for (int64_t r = r0; r < r1; r++) {
          const T* xr = px + r * ch;
          T* yr = py + r * ch;
#pragma omp simd
          for (int64_t k = 0; k < ch; k++) yr[k] = (xr[k] - m[k]) * a[k] + bb[k];
        }
      });
      return;
    }
    parallel_for(0, n * ch, std::max<int64_t>(1, kGrainSize / std::max<int64_t>(l, 1)), [&](int64_t r0, int64_t r1) {
      for (int64_t r = r0; r < r1; r++) {
        size_t k = size_t(r % ch);
        double a = rstd[k] * (w.p ? w.p[k] : 1.0);
        affine(px + r * l, py + r * l, l, T(mean[k]), T(a), T(b.p ? b.p[k] : 0.0));
      }
    });
  });
  if (!y.is_same(o[0])) o[0].copy_(y);
  if (!training) return;
  o[1].copy_(fw::tensor(mean, kDouble));
  o[2].copy_(fw::tensor(rstd, kDouble));
  double cnt = double(n * l);
  if (p.rm.defined()) update_running(p.rm, mean, c.a.f0, 1.0);
  if (p.rv.defined()) update_running(p.rv, var, c.a.f0, cnt > 1 ? cnt / (cnt - 1) : INFINITY);
}

// ---- vjps.
//
// Note [Norm vjps]
// All three norms normalise groups of n values: xhat = (x - mean) * rstd, y = xhat * w + b, with
// mean and rstd the op's own outputs (saved, so no statistics are recomputed). For gy and
// gxhat = gy * w, the input gradient is
//   gx = rstd * (gxhat - mean(gxhat) - xhat * mean(gxhat * xhat))      (means over the group)
// and gradients that reach the mean/rstd outputs (only in double backward, where this very
// formula is differentiated through them) add gmean / n - grstd * rstd^2 * xhat / n.
// Everything is computed on views that put the group in the trailing dims of a 3-D shape
// ([rows, n], [N, G, n] or [N, C, L] with the group over dims 0 and 2), in float for 16-bit
// inputs. Batch norm in evaluation mode normalises with the running statistics, which are
// constants: gx = gy * w * rsqrt(running_var + eps).

// Input positions of the optional tensors (-1 when absent).
struct NormSlots {
  int w = -1, b = -1, rm = -1, rv = -1;
};
NormSlots norm_slots(uint32_t flags) {
  NormSlots s;
  int k = 1;
  int* slot[] = {&s.w, &s.b, &s.rm, &s.rv};
  for (uint32_t i = 0; i < 4; i++)
    if (flags & (1u << i)) *slot[i] = k++;
  return s;
}

// gx of the normalisation (Note [Norm vjps]). x3, gy3 (gy3 may be undefined), mean and rstd
// broadcast against each other; dims are the group dims of x3; wb broadcasts w against x3.
struct NormGrad {
  Tensor x3, gy3, mean, rstd, gmean, grstd, wb;
  DimVec dims;
  double n;
};

Tensor normalise_grad(const NormGrad& p, Tensor* xhat_out) {
  Tensor xhat = (p.x3 - p.mean) * p.rstd;
  *xhat_out = xhat;
  Tensor gx;
  auto add = [&](const Tensor& t) { gx = gx.defined() ? gx + t : t; };
  if (p.gy3.defined()) {
    Tensor gxhat = p.wb.defined() ? p.gy3 * p.wb : p.gy3;
    add(p.rstd * (gxhat - gxhat.mean(p.dims, true) - xhat * (gxhat * xhat).mean(p.dims, true)));
  }
  if (p.gmean.defined()) add(p.gmean / p.n);
  if (p.grstd.defined()) add(p.grstd * p.rstd * p.rstd * xhat / -p.n);
  return gx.expand(p.x3.sizes());
}

ScalarType grad_type(const Tensor& x) { return compute_type(x.dtype()); }
Tensor in_type(const Tensor& t, ScalarType ct) { return t.defined() ? t.to(ct) : t; }

// Weight and bias gradients: sums of gy * xhat and gy over sum_dims, in the parameters' shapes.
void affine_grads(const VjpCtx& c, const NormSlots& s, const Tensor& gy3, const Tensor& xhat, const DimVec& sum_dims,
                  Outs& r) {
  if (!gy3.defined()) return;
  if (s.w >= 0 && c.needs[s.w]) r[size_t(s.w)] = (gy3 * xhat).sum(sum_dims).view(c.in[size_t(s.w)].sizes());
  if (s.b >= 0 && c.needs[s.b]) r[size_t(s.b)] = gy3.sum(sum_dims).view(c.in[size_t(s.b)].sizes());
}

void layer_norm_vjp(const VjpCtx& c, ArrayRef<Tensor> g, Outs& r) {
  const Tensor& x = c.in[0];
  NormSlots s = norm_slots(c.a.flags);
  ScalarType ct = grad_type(x);
  int64_t n = shape_numel(c.a.ints, "layer_norm"), rows = n == 0 ? 0 : x.numel() / n;
  auto as2d = [&](const Tensor& t) { return t.defined() ? in_type(t, ct).reshape({rows, n}) : t; };
  auto stat = [&](const Tensor& t) { return t.defined() ? in_type(t, ct).reshape({rows, 1}) : t; };
  NormGrad p{as2d(x), as2d(g[0]), stat(c.out[1]), stat(c.out[2]), stat(g[1]), stat(g[2]),
             s.w >= 0 ? in_type(c.in[size_t(s.w)], ct).reshape({1, n}) : Tensor(), DimVec{1}, double(n)};
  Tensor xhat, gx = normalise_grad(p, &xhat);
  if (c.needs[0]) r[0] = gx.reshape(x.sizes());
  affine_grads(c, s, p.gy3, xhat, DimVec{0}, r);
}

void group_norm_vjp(const VjpCtx& c, ArrayRef<Tensor> g, Outs& r) {
  const Tensor& x = c.in[0];
  NormSlots s = norm_slots(c.a.flags);
  ScalarType ct = grad_type(x);
  int64_t n = c.a.ints[0], ch = c.a.ints[1], hw = c.a.ints[2], gr = c.a.ints[3], d = ch / gr * hw;
  auto grouped = [&](const Tensor& t) { return t.defined() ? in_type(t, ct).reshape({n, gr, d}) : t; };
  auto stat = [&](const Tensor& t) { return t.defined() ? in_type(t, ct).reshape({n, gr, 1}) : t; };
  Tensor wb;
  if (s.w >= 0) wb = in_type(c.in[size_t(s.w)], ct).view({1, ch, 1}).expand({n, ch, hw}).reshape({n, gr, d});
  NormGrad p{grouped(x), grouped(g[0]), stat(c.out[1]), stat(c.out[2]), stat(g[1]), stat(g[2]), wb, DimVec{2},
             double(d)};
  Tensor xhat, gx = normalise_grad(p, &xhat);
  if (c.needs[0]) r[0] = gx.reshape(x.sizes());
  if (p.gy3.defined())
    affine_grads(c, s, p.gy3.reshape({n, ch, hw}), xhat.reshape({n, ch, hw}), DimVec{0, 2}, r);
}

void batch_norm_vjp(const VjpCtx& c, ArrayRef<Tensor> g, Outs& r) {
  const Tensor& x = c.in[0];
  NormSlots s = norm_slots(c.a.flags);
  ScalarType ct = grad_type(x);
  int64_t n = x.size(0), ch = x.size(1), l = n * ch == 0 ? 0 : x.numel() / (n * ch);
  auto as3d = [&](const Tensor& t) { return t.defined() ? in_type(t, ct).reshape({n, ch, l}) : t; };
  auto chan = [&](const Tensor& t) { return t.defined() ? in_type(t, ct).reshape({1, ch, 1}) : t; };
  Tensor wb = s.w >= 0 ? chan(c.in[size_t(s.w)]) : Tensor();
  Tensor x3 = as3d(x), gy3 = as3d(g[0]), xhat;
  if (c.a.flags & kTraining) {
    NormGrad p{x3, gy3, chan(c.out[1]), chan(c.out[2]), chan(g[1]), chan(g[2]), wb, DimVec{0, 2}, double(n * l)};
    Tensor gx = normalise_grad(p, &xhat);
    if (c.needs[0]) r[0] = gx.reshape(x.sizes());
  } else {
    Tensor rstd = fw::rsqrt(chan(c.in[size_t(s.rv)]) + c.a.f1);
    xhat = (x3 - chan(c.in[size_t(s.rm)])) * rstd;
    if (c.needs[0] && gy3.defined()) r[0] = (gy3 * (wb.defined() ? wb * rstd : rstd)).reshape(x.sizes());
  }
  affine_grads(c, s, gy3, xhat, DimVec{0, 2}, r);
}

}  // namespace

FW_DEFINE_OP(native_layer_norm) {
  d.meta = layer_norm_meta;
  d.cpu = layer_norm_kernel;
  d.vjp = layer_norm_vjp;
  d.vjp_uses_out = true;
}
FW_DEFINE_OP(native_group_norm) {
  d.meta = group_norm_meta;
  d.cpu = group_norm_kernel;
  d.vjp = group_norm_vjp;
  d.vjp_uses_out = true;
}
FW_DEFINE_OP(native_batch_norm) {
  d.meta = batch_norm_meta;
  d.cpu = batch_norm_kernel;
  d.vjp = batch_norm_vjp;
  d.vjp_uses_out = true;
}

std::tuple<Tensor, Tensor, Tensor> native_layer_norm(const Tensor& x, IntArrayRef normalized_shape,
                                                     const Tensor& weight, const Tensor& bias, double eps) {
  OpAttrs a;
  a.ints = DimVec(normalized_shape);
  a.f0 = eps;
  auto in = pack_inputs(x, weight, bias, Tensor(), Tensor(), &a.flags);
  Outs o = dispatch(OpId::native_layer_norm, in, a);
  return {o[0], o[1], o[2]};
}

std::tuple<Tensor, Tensor, Tensor> native_group_norm(const Tensor& x, const Tensor& weight, const Tensor& bias,
                                                     int64_t n, int64_t c, int64_t hxw, int64_t group, double eps) {
  OpAttrs a;
  a.ints = DimVec{n, c, hxw, group};
  a.f0 = eps;
  auto in = pack_inputs(x, weight, bias, Tensor(), Tensor(), &a.flags);
  Outs o = dispatch(OpId::native_group_norm, in, a);
  return {channels_last_if(o[0], is_channels_last(x)), o[1], o[2]};  // Note [Channels-last results]
}

std::tuple<Tensor, Tensor, Tensor> native_batch_norm(const Tensor& x, const Tensor& weight, const Tensor& bias,
                                                     const Tensor& running_mean, const Tensor& running_var,
                                                     bool training, double momentum, double eps) {
  OpAttrs a;
  a.f0 = momentum;
  a.f1 = eps;
  auto in = pack_inputs(x, weight, bias, running_mean, running_var, &a.flags);
  if (training) a.flags |= kTraining;
  Outs o = dispatch(OpId::native_batch_norm, in, a);
  return {channels_last_if(o[0], is_channels_last(x)), o[1], o[2]};  // Note [Channels-last results]
}

Tensor layer_norm(const Tensor& x, IntArrayRef normalized_shape, const Tensor& weight, const Tensor& bias, double eps,
                  bool) {
  return std::get<0>(native_layer_norm(x, normalized_shape, weight, bias, eps));
}

Tensor group_norm(const Tensor& x, int64_t num_groups, const Tensor& weight, const Tensor& bias, double eps, bool) {
  FW_CHECK(x.dim() >= 2, "[group_norm] expected an input with at least 2 dims (N, C, *), got ", x.dim(),
           "-D input of size ", x.sizes());
  int64_t n = x.size(0), c = x.size(1), hw = 1;
  for (int64_t d = 2; d < x.dim(); d++) hw *= x.size(d);
  return std::get<0>(native_group_norm(x, weight, bias, n, c, hw, num_groups, eps));
}

Tensor batch_norm(const Tensor& x, const Tensor& weight, const Tensor& bias, const Tensor& running_mean,
                  const Tensor& running_var, bool training, double momentum, double eps, bool) {
  return std::get<0>(native_batch_norm(x, weight, bias, running_mean, running_var, training, momentum, eps));
}

// Instance norm is batch norm over a (1, N*C, *) view: every (sample, channel) plane is its own
// "channel"; running statistics are averaged over the batch afterwards.
Tensor instance_norm(const Tensor& x, const Tensor& weight, const Tensor& bias, const Tensor& running_mean,
                     const Tensor& running_var, bool use_input_stats, double momentum, double eps, bool) {
  FW_CHECK(x.dim() >= 2, "[instance_norm] expected an input with at least 2 dims (N, C, *), got ", x.dim(),
           "-D input of size ", x.sizes());
  FW_CHECK(use_input_stats || (running_mean.defined() && running_var.defined()),
           "[instance_norm] Expected running_mean and running_var to be defined when use_input_stats is false");
  int64_t n = x.size(0), c = x.size(1);
  auto repeat = [&](const Tensor& t) { return t.defined() ? t.unsqueeze(0).expand({n, c}).contiguous().view({n * c}) : t; };
  DimVec shape{1, n * c};
  for (int64_t d = 2; d < x.dim(); d++) shape.push_back(x.size(d));
  Tensor rm = repeat(running_mean), rv = repeat(running_var);
  if (rm.defined() && rm.is_alias_of(running_mean)) rm = rm.clone();
  if (rv.defined() && rv.is_alias_of(running_var)) rv = rv.clone();
  Tensor y = std::get<0>(native_batch_norm(x.reshape(shape), repeat(weight), repeat(bias), rm, rv, use_input_stats,
                                           momentum, eps));
  if (use_input_stats && running_mean.defined())
    running_mean.copy_(rm.view({n, c}).sum({0}) / double(n));
  if (use_input_stats && running_var.defined())
    running_var.copy_(rv.view({n, c}).sum({0}) / double(n));
  return y.view(x.sizes());
}

}  // namespace fw
