// oneDNN convolution back end (see conv_dnnl.h).
//
// Note [oneDNN convolutions]
// fw tensors are NCHW; oneDNN picks its own blocked layouts (format_tag::any), so a call reorders
// the input and weight in and the output back out, around one convolution_forward (conv2d) or
// deconvolution_forward (conv_transpose2d) primitive. Building a primitive descriptor costs tens
// of microseconds, so the primitives and reorders are cached by shape. The blocked buffers are
// per-thread scratch that only grows. Measured on the ten W5 layers (benchmarks/bench_conv.cpp,
// 2 threads, medians of 3 runs on a shared machine), summed: forward 566 -> 254 ms, grad_input
// 479 -> 244 ms, grad_weight 902 -> 305 ms against im2col + Eigen GEMM (libtorch 257/255/290).
//
// Note [bfloat16 convolutions]
// A DnnlConvShape with bf16 set builds the same primitives with bfloat16 source, weights and
// destination (and their gradients) and a float32 bias: oneDNN's AVX512-BF16 kernels accumulate
// in float32 and round once, as libtorch's bfloat16 convolutions (which are these kernels) do. The
// shape's bf16 flag is part of the plan key. Winograd and the large-kernel weight-grad form stay
// float32-only. conv.cpp uses this where the build targets AVX512-BF16 (autocast's conv2d).
#include "core/ops/conv_dnnl.h"

#include "core/parallel.h"
#include "core/profile.h"

#include <atomic>
#include <cstdlib>

#ifdef FW_HAVE_DNNL
#include <algorithm>
#include <array>
#include <new>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

#include <oneapi/dnnl/dnnl.hpp>
#endif

namespace fw::detail {

namespace {
std::atomic<bool> g_dnnl_on{true};
// Note [Winograd convolutions]
// FW_CONV_WINOGRAD=1 (or set_conv_dnnl_winograd) asks oneDNN for Winograd F(4x4, 3x3) on 3x3
// stride-1 undilated ungrouped float32 convolutions, forward and backward (other shapes, and
// shapes its kernels refuse, such as 3 input channels, stay direct). On W5's layers it is ~1.7x
// faster than the direct kernels (forward, 2 threads), but it rounds differently: outputs differ
// from the direct ones by ~1e-6 relative to their largest magnitude (3e-5 absolute on W5's
// layers), more than direct convolutions differ among themselves, which is why it is opt-in.
std::atomic<bool> g_wino{[] {
  const char* e = std::getenv("FW_CONV_WINOGRAD");
  return e && *e && *e != '0';
}()};
}  // namespace

#ifdef FW_HAVE_DNNL

namespace {

using dnnl::memory;
using tag = memory::format_tag;
using dt = memory::data_type;

dnnl::engine& cpu_engine() {
  static dnnl::engine eng(dnnl::engine::kind::cpu, 0);
  return eng;
}

// One cached convolution: the compute primitive, the argument slots of its two inputs and its
// output, and the reorders it needs (empty when the chosen layout is already the user's).
struct Plan {
  dnnl::primitive conv;
  int src_arg = DNNL_ARG_SRC, wei_arg = DNNL_ARG_WEIGHTS, dst_arg = DNNL_ARG_DST;
  memory::desc src_md, wei_md, dst_md;              // chosen by oneDNN
  memory::desc usr_src_md, usr_wei_md, usr_dst_md;  // fw's NCHW / OIHW
  memory::desc bias_md;
  dnnl::reorder src_in, wei_in, dst_out;
  bool src_re = false, wei_re = false, dst_re = false;
};

using Key = std::array<int64_t, 23>;

// Whether Winograd is asked for this convolution (Note [Winograd convolutions]).
bool winograd_for(const DnnlConvShape& s, bool transposed) {
  return g_wino.load(std::memory_order_relaxed) && !transposed && !s.bf16 && s.kh == 3 && s.kw == 3 && s.sh == 1 && s.sw == 1 &&
         s.dh == 1 && s.dw == 1 && s.groups == 1;
}

Key make_key(const DnnlConvShape& s, bool transposed, bool bias) {
  return {s.n, s.c, s.h, s.w, s.o, s.oh, s.ow, s.kh, s.kw, s.sh, s.sw, s.ph, s.pw, s.ph_end, s.pw_end, s.dh, s.dw,
          s.groups, transposed ? 1 : 0, bias ? 1 : 0, winograd_for(s, transposed) ? 1 : 0, s.nhwc ? 1 : 0,
          s.bf16 ? 1 : 0};
}

void add_reorders(Plan& p) {
  auto& eng = cpu_engine();
  if ((p.src_re = p.src_md != p.usr_src_md)) p.src_in = dnnl::reorder(memory(p.usr_src_md, eng), memory(p.src_md, eng));
  if ((p.wei_re = p.wei_md != p.usr_wei_md)) p.wei_in = dnnl::reorder(memory(p.usr_wei_md, eng), memory(p.wei_md, eng));
  if ((p.dst_re = p.dst_md != p.usr_dst_md)) p.dst_out = dnnl::reorder(memory(p.dst_md, eng), memory(p.usr_dst_md, eng));
}

// conv2d: input (n, c, h, w) -> output (n, o, oh, ow); conv_transpose2d: input (n, c, h, w) ->
// output (n, o, oh, ow) as the adjoint, weight stored (c, o/g, kh, kw).
std::unique_ptr<Plan> build_plan(const DnnlConvShape& s, bool transposed, bool bias, bool winograd) {
  auto p = std::make_unique<Plan>();
  const dt io = s.bf16 ? dt::bf16 : dt::f32;
  auto& eng = cpu_engine();
  memory::dims src{s.n, s.c, s.h, s.w}, dst{s.n, s.o, s.oh, s.ow};
  memory::dims strides{s.sh, s.sw}, dil{s.dh - 1, s.dw - 1}, pl{s.ph, s.pw}, pr{s.ph_end, s.pw_end};
  memory::dims wdims;
  tag wtag;
  if (!transposed) {
    wdims = s.groups == 1 ? memory::dims{s.o, s.c, s.kh, s.kw}
                          : memory::dims{s.groups, s.o / s.groups, s.c / s.groups, s.kh, s.kw};
    wtag = s.groups == 1 ? tag::oihw : tag::goihw;
  } else {
    // Deconvolution weights are (out, in) = (o, c); fw stores (c, o/g): the "io" layouts.
    wdims = s.groups == 1 ? memory::dims{s.o, s.c, s.kh, s.kw}
                          : memory::dims{s.groups, s.o / s.groups, s.c / s.groups, s.kh, s.kw};
    wtag = s.groups == 1 ? tag::iohw : tag::giohw;
  }
  p->usr_src_md = memory::desc(src, io, s.nhwc ? tag::nhwc : tag::nchw);
  p->usr_dst_md = memory::desc(dst, io, s.nhwc ? tag::nhwc : tag::nchw);
  p->usr_wei_md = memory::desc(wdims, io, wtag);
  p->bias_md = bias ? memory::desc({s.o}, dt::f32, tag::x) : memory::desc();
  memory::desc a_src(src, io, tag::any), a_dst(dst, io, tag::any), a_wei(wdims, io, tag::any);
  // forward_training, also for inference: oneDNN 2.6 then picks its blocked (nChw16c) direct
  // kernels, where forward_inference picks the brgemm kernels on NHWC. Measured on W5's ten layers
  // (2 threads, SCHED_FIFO so that the shared machine's load stays out): 212 ms of convolution +
  // 10 ms of reorders per forward, against 217 + 17 ms (the NCHW <-> NHWC reorders are the
  // slower ones). libtorch 1.13 asks for forward_training too. A channels-last input (s.nhwc,
  // Note [Channels-last convolutions] in conv.cpp) is the other way round: forward_inference's
  // NHWC kernels read and write it with no reorder at all, 1.70 ms against 2.09 ms for the
  // blocked kernels on 16x64x28x28, 64 3x3 filters (NCHW: 1.93 ms).
  auto prop = s.nhwc ? dnnl::prop_kind::forward_inference : dnnl::prop_kind::forward_training;
  if (!transposed) {
    auto alg = winograd ? dnnl::algorithm::convolution_winograd : dnnl::algorithm::convolution_direct;
    dnnl::convolution_forward::desc d(prop, alg, a_src, a_wei, p->bias_md, a_dst, strides, dil, pl, pr);
    dnnl::convolution_forward::primitive_desc pd(d, eng);
    p->src_md = pd.src_desc(), p->wei_md = pd.weights_desc(), p->dst_md = pd.dst_desc();
    p->conv = dnnl::convolution_forward(pd);
  } else {
    dnnl::deconvolution_forward::desc d(prop, dnnl::algorithm::deconvolution_direct, a_src, a_wei, p->bias_md, a_dst,
                                        strides, dil, pl, pr);
    dnnl::deconvolution_forward::primitive_desc pd(d, eng);
    p->src_md = pd.src_desc(), p->wei_md = pd.weights_desc(), p->dst_md = pd.dst_desc();
    p->conv = dnnl::deconvolution_forward(pd);
  }
  add_reorders(*p);
  return p;
}

// Note [Large-kernel conv2d as backward weights]
// conv2d's weight grad runs as a conv2d with batch and channels swapped (conv.cpp), whose kernel
// is the image and whose output is the small filter. Direct forward kernels handle that shape
// poorly; it is exactly a backward-weights convolution of the original problem, so it runs as
// convolution_backward_weights on strided views: the original src is x with dims 0 and 1
// exchanged, the original diff_dst is w likewise, and the filter grad lands in y likewise.
std::unique_ptr<Plan> build_wgrad_plan(const DnnlConvShape& s) {
  auto p = std::make_unique<Plan>();
  auto& eng = cpu_engine();
  int64_t oh = s.kh, ow = s.kw, kh = s.oh, kw = s.ow;  // the original problem's output and kernel
  memory::dims strides{s.dh, s.dw}, dil{s.sh - 1, s.sw - 1}, pl{s.ph, s.pw};
  memory::dims pr{(oh - 1) * s.dh + (kh - 1) * s.sh + 1 - s.h - s.ph, (ow - 1) * s.dw + (kw - 1) * s.sw + 1 - s.w - s.pw};
  if (pr[0] < 0 || pr[1] < 0) return nullptr;
  memory::dims src{s.c, s.n, s.h, s.w}, dst{s.c, s.o, oh, ow}, wei{s.o, s.n, kh, kw};
  p->usr_src_md = memory::desc(src, dt::f32, memory::dims{s.h * s.w, s.c * s.h * s.w, s.w, 1});
  p->usr_wei_md = memory::desc(dst, dt::f32, memory::dims{oh * ow, s.c * oh * ow, ow, 1});
  p->usr_dst_md = memory::desc(wei, dt::f32, memory::dims{kh * kw, s.o * kh * kw, kw, 1});
  memory::desc a_src(src, dt::f32, tag::any), a_dst(dst, dt::f32, tag::any), a_wei(wei, dt::f32, tag::any);
  auto alg = dnnl::algorithm::convolution_direct;
  dnnl::convolution_forward::desc fd(dnnl::prop_kind::forward_training, alg, a_src, a_wei, a_dst, strides, dil, pl, pr);
  dnnl::convolution_forward::primitive_desc fpd(fd, eng);
  dnnl::convolution_backward_weights::desc bd(alg, a_src, a_wei, a_dst, strides, dil, pl, pr);
  dnnl::convolution_backward_weights::primitive_desc pd(bd, eng, fpd);
  p->src_md = pd.src_desc(), p->wei_md = pd.diff_dst_desc(), p->dst_md = pd.diff_weights_desc();
  p->wei_arg = DNNL_ARG_DIFF_DST, p->dst_arg = DNNL_ARG_DIFF_WEIGHTS;
  p->conv = dnnl::convolution_backward_weights(pd);
  add_reorders(*p);
  return p;
}

// The weight-grad shape: one group, no bias, a kernel larger than the output.
bool wgrad_shape(const DnnlConvShape& s, bool transposed, bool bias) {
  return !transposed && !bias && !s.bf16 && s.groups == 1 && s.kh * s.kw > s.oh * s.ow;
}

const Plan* find_plan(const DnnlConvShape& s, bool transposed, bool bias) {
  static std::mutex mu;
  static std::map<Key, std::unique_ptr<Plan>> cache;
  Key k = make_key(s, transposed, bias);
  std::lock_guard<std::mutex> lock(mu);
  auto it = cache.find(k);
  if (it != cache.end()) return it->second.get();
  // An unsupported geometry is remembered as null, so the fallback is chosen at once next time.
  std::unique_ptr<Plan> p;
  try {
    if (!s.nhwc && wgrad_shape(s, transposed, bias)) p = build_wgrad_plan(s);
  } catch (const dnnl::error&) {
  }
  try {
    if (!p && winograd_for(s, transposed)) p = build_plan(s, transposed, bias, true);
  } catch (const dnnl::error&) {  // a shape oneDNN's Winograd kernels refuse: direct
  }
  try {
    if (!p) p = build_plan(s, transposed, bias, false);
  } catch (const dnnl::error&) {
  }
  return cache.emplace(k, std::move(p)).first->second.get();
}

// Per-thread blocked buffers, grown as needed (forward: slot 0 src, 1 weights, 2 dst; the
// backward uses all six).
// 64-byte aligned: some of oneDNN's kernels (the Winograd ones) load blocked data with aligned
// instructions, and a std::vector's 16-byte alignment made them fault.
struct Scratch {
  float* p = nullptr;
  size_t n = 0;
  ~Scratch() { std::free(p); }
  float* get(size_t want) {
    if (want > n) {
      std::free(p);
      n = (want + 15) / 16 * 16;
      p = static_cast<float*>(std::aligned_alloc(64, n * sizeof(float)));
      if (!p) throw std::bad_alloc();
      std::fill(p, p + n, 0.f);
    }
    return p;
  }
};

memory scratch(const memory::desc& md, int slot) {
  thread_local Scratch buf[6];
  return memory(md, cpu_engine(), buf[slot].get(md.get_size() / sizeof(float) + 1));
}

// The user's buffer in the primitive's layout: itself, or reordered into scratch `slot`.
memory reordered_input(bool needed, const char* what, const memory::desc& md, int slot, const dnnl::reorder& r,
                       dnnl::stream& strm, memory usr) {
  if (!needed) return usr;
  ProfileScope prof("dnnl", what);
  memory m = scratch(md, slot);
  r.execute(strm, usr, m);
  return m;
}

bool run(const DnnlConvShape& s, bool transposed, const void* x, const void* w, const float* b, void* y) {
  if (!g_dnnl_on.load(std::memory_order_relaxed)) return false;
  const Plan* p = find_plan(s, transposed, b != nullptr);
  if (!p) return false;
  auto& eng = cpu_engine();
  dnnl::stream strm(eng);
  memory usr_src(p->usr_src_md, eng, const_cast<void*>(x)), usr_wei(p->usr_wei_md, eng, const_cast<void*>(w));
  memory usr_dst(p->usr_dst_md, eng, y);
  memory src = reordered_input(p->src_re, "reorder src", p->src_md, 0, p->src_in, strm, usr_src);
  memory wei = reordered_input(p->wei_re, "reorder weights", p->wei_md, 1, p->wei_in, strm, usr_wei);
  memory dst = usr_dst;
  if (p->dst_re) dst = scratch(p->dst_md, 2);
  std::unordered_map<int, memory> args{{p->src_arg, src}, {p->wei_arg, wei}, {p->dst_arg, dst}};
  if (b) args.emplace(DNNL_ARG_BIAS, memory(p->bias_md, eng, const_cast<float*>(b)));
  {
    ProfileScope prof("dnnl", "compute");
    p->conv.execute(strm, args);
  }
  if (p->dst_re) {
    ProfileScope prof("dnnl", "reorder dst");
    p->dst_out.execute(strm, dst, usr_dst);
  }
  strm.wait();
  note_openmp_region();
  return true;
}

// Note [Fused conv2d backward]
// Without create_graph, conv2d's vjp needs plain gradients, not a differentiable composite, so it
// runs oneDNN's two backward primitives directly (conv.cpp decides). Against the composite
// (conv_transpose2d for the input grad, a channel/batch-swapped conv2d for the weight grad, a
// sum for the bias grad) this saves, per layer: the contiguous copies of the swapped x and gy,
// one of the two reorders of gy into the blocked layout (both primitives read the same one when
// they choose the same layout), and the separate pass over gy for the bias (the backward-weights
// primitive accumulates it while it reads gy).
struct BwdPlan {
  memory::desc usr_src_md, usr_wei_md, usr_dst_md, bias_md;
  bool data = false, weights = false, bias = false;
  // backward data: diff_dst, weights -> diff_src
  dnnl::primitive bd;
  memory::desc bd_ddst_md, bd_wei_md, bd_dsrc_md;
  dnnl::reorder bd_ddst_in, bd_wei_in, bd_dsrc_out;
  bool bd_ddst_re = false, bd_wei_re = false, bd_dsrc_re = false;
  // backward weights: src, diff_dst -> diff_weights (+ diff_bias)
  dnnl::primitive bw;
  memory::desc bw_src_md, bw_ddst_md, bw_dwei_md;
  dnnl::reorder bw_src_in, bw_ddst_in, bw_dwei_out;
  bool bw_src_re = false, bw_ddst_re = false, bw_dwei_re = false, shared_ddst = false;
};

// A reorder from -> to when the two layouts differ; returns whether one is needed.
bool make_reorder(const memory::desc& from, const memory::desc& to, dnnl::reorder& r) {
  if (from == to) return false;
  r = dnnl::reorder(memory(from, cpu_engine()), memory(to, cpu_engine()));
  return true;
}

std::unique_ptr<BwdPlan> build_bwd_plan(const DnnlConvShape& s, bool data, bool weights, bool bias, bool winograd) {
  auto p = std::make_unique<BwdPlan>();
  const dt io = s.bf16 ? dt::bf16 : dt::f32;
  auto& eng = cpu_engine();
  p->data = data, p->weights = weights, p->bias = bias;
  memory::dims src{s.n, s.c, s.h, s.w}, dst{s.n, s.o, s.oh, s.ow};
  memory::dims strides{s.sh, s.sw}, dil{s.dh - 1, s.dw - 1}, pl{s.ph, s.pw}, pr{s.ph_end, s.pw_end};
  memory::dims wdims = s.groups == 1 ? memory::dims{s.o, s.c, s.kh, s.kw}
                                     : memory::dims{s.groups, s.o / s.groups, s.c / s.groups, s.kh, s.kw};
  p->usr_src_md = memory::desc(src, io, tag::nchw);
  p->usr_dst_md = memory::desc(dst, io, tag::nchw);
  p->usr_wei_md = memory::desc(wdims, io, s.groups == 1 ? tag::oihw : tag::goihw);
  p->bias_md = bias ? memory::desc({s.o}, dt::f32, tag::x) : memory::desc();
  memory::desc a_src(src, io, tag::any), a_dst(dst, io, tag::any), a_wei(wdims, io, tag::any);
  auto alg = winograd ? dnnl::algorithm::convolution_winograd : dnnl::algorithm::convolution_direct;
  // The backward primitives take the forward primitive descriptor as a hint.
  dnnl::convolution_forward::desc fd(dnnl::prop_kind::forward_training, alg, a_src, a_wei, p->bias_md, a_dst, strides,
                                     dil, pl, pr);
  dnnl::convolution_forward::primitive_desc fpd(fd, eng);
  if (data) {
    dnnl::convolution_backward_data::desc d(alg, a_src, a_wei, a_dst, strides, dil, pl, pr);
    dnnl::convolution_backward_data::primitive_desc pd(d, eng, fpd);
    p->bd_ddst_md = pd.diff_dst_desc(), p->bd_wei_md = pd.weights_desc(), p->bd_dsrc_md = pd.diff_src_desc();
    p->bd = dnnl::convolution_backward_data(pd);
    p->bd_ddst_re = make_reorder(p->usr_dst_md, p->bd_ddst_md, p->bd_ddst_in);
    p->bd_wei_re = make_reorder(p->usr_wei_md, p->bd_wei_md, p->bd_wei_in);
    p->bd_dsrc_re = make_reorder(p->bd_dsrc_md, p->usr_src_md, p->bd_dsrc_out);
  }
  if (weights) {
    dnnl::convolution_backward_weights::desc d(alg, a_src, a_wei, p->bias_md, a_dst, strides, dil, pl, pr);
    dnnl::convolution_backward_weights::primitive_desc pd(d, eng, fpd);
    p->bw_src_md = pd.src_desc(), p->bw_ddst_md = pd.diff_dst_desc(), p->bw_dwei_md = pd.diff_weights_desc();
    if (bias && pd.diff_bias_desc() != p->bias_md) throw dnnl::error(dnnl_unimplemented, "diff_bias layout");
    p->bw = dnnl::convolution_backward_weights(pd);
    p->bw_src_re = make_reorder(p->usr_src_md, p->bw_src_md, p->bw_src_in);
    p->shared_ddst = data && p->bw_ddst_md == p->bd_ddst_md;
    if (!p->shared_ddst) p->bw_ddst_re = make_reorder(p->usr_dst_md, p->bw_ddst_md, p->bw_ddst_in);
    p->bw_dwei_re = make_reorder(p->bw_dwei_md, p->usr_wei_md, p->bw_dwei_out);
  }
  return p;
}

const BwdPlan* find_bwd_plan(const DnnlConvShape& s, bool data, bool weights, bool bias) {
  static std::mutex mu;
  static std::map<std::pair<Key, int>, std::unique_ptr<BwdPlan>> cache;
  auto k = std::make_pair(make_key(s, false, bias), (data ? 1 : 0) | (weights ? 2 : 0));
  std::lock_guard<std::mutex> lock(mu);
  auto it = cache.find(k);
  if (it != cache.end()) return it->second.get();
  std::unique_ptr<BwdPlan> p;
  try {
    if (winograd_for(s, false)) p = build_bwd_plan(s, data, weights, bias, true);
  } catch (const dnnl::error&) {  // a shape oneDNN's Winograd kernels refuse: direct
  }
  try {
    if (!p) p = build_bwd_plan(s, data, weights, bias, false);
  } catch (const dnnl::error&) {
  }
  return cache.emplace(k, std::move(p)).first->second.get();
}

bool conv2d_backward(const DnnlConvShape& s, const void* x, const void* w, const void* gy, void* gx, void* gw,
                     float* gb) {
  if (!g_dnnl_on.load(std::memory_order_relaxed)) return false;
  bool data = gx != nullptr, weights = gw != nullptr || gb != nullptr, bias = gb != nullptr;
  if (!data && !weights) return true;
  const BwdPlan* p = find_bwd_plan(s, data, weights, bias);
  if (!p) return false;
  auto& eng = cpu_engine();
  dnnl::stream strm(eng);
  memory usr_gy(p->usr_dst_md, eng, const_cast<void*>(gy));
  memory bd_ddst = usr_gy;
  if (data) {
    memory usr_w(p->usr_wei_md, eng, const_cast<void*>(w)), usr_gx(p->usr_src_md, eng, gx);
    bd_ddst = reordered_input(p->bd_ddst_re, "reorder diff_dst", p->bd_ddst_md, 0, p->bd_ddst_in, strm, usr_gy);
    memory wei = reordered_input(p->bd_wei_re, "reorder weights", p->bd_wei_md, 1, p->bd_wei_in, strm, usr_w);
    memory dsrc = usr_gx;
    if (p->bd_dsrc_re) dsrc = scratch(p->bd_dsrc_md, 2);
    {
      ProfileScope prof("dnnl", "backward data");
      p->bd.execute(strm, {{DNNL_ARG_DIFF_DST, bd_ddst}, {DNNL_ARG_WEIGHTS, wei}, {DNNL_ARG_DIFF_SRC, dsrc}});
    }
    if (p->bd_dsrc_re) {
      ProfileScope prof("dnnl", "reorder diff_src");
      p->bd_dsrc_out.execute(strm, dsrc, usr_gx);
    }
  }
  if (weights) {
    memory usr_x(p->usr_src_md, eng, const_cast<void*>(x));
    memory src = reordered_input(p->bw_src_re, "reorder src", p->bw_src_md, 3, p->bw_src_in, strm, usr_x);
    memory ddst = p->shared_ddst ? bd_ddst
                                 : reordered_input(p->bw_ddst_re, "reorder diff_dst", p->bw_ddst_md, 4, p->bw_ddst_in,
                                                   strm, usr_gy);
    // The weight grad is computed even when only the bias grad is wanted (into scratch).
    memory usr_gw = gw ? memory(p->usr_wei_md, eng, gw) : memory();
    memory dwei = (p->bw_dwei_re || !gw) ? scratch(p->bw_dwei_md, 5) : usr_gw;
    std::unordered_map<int, memory> args{{DNNL_ARG_SRC, src}, {DNNL_ARG_DIFF_DST, ddst}, {DNNL_ARG_DIFF_WEIGHTS, dwei}};
    if (bias) args.emplace(DNNL_ARG_DIFF_BIAS, memory(p->bias_md, eng, gb));
    {
      ProfileScope prof("dnnl", "backward weights");
      p->bw.execute(strm, args);
    }
    if (gw && p->bw_dwei_re) {
      ProfileScope prof("dnnl", "reorder diff_weights");
      p->bw_dwei_out.execute(strm, dwei, usr_gw);
    }
  }
  strm.wait();
  note_openmp_region();
  return true;
}

}  // namespace

bool conv_dnnl_enabled() { return g_dnnl_on.load(); }

bool dnnl_conv2d(const DnnlConvShape& s, const float* x, const float* w, const float* b, float* y) {
  return !s.bf16 && run(s, false, x, w, b, y);
}

bool dnnl_conv_transpose2d(const DnnlConvShape& s, const float* x, const float* w, const float* b, float* y) {
  return run(s, true, x, w, b, y);
}

bool dnnl_conv2d_bf16(const DnnlConvShape& s, const uint16_t* x, const uint16_t* w, const float* b, uint16_t* y) {
  return s.bf16 && run(s, false, x, w, b, y);
}

bool dnnl_conv2d_backward(const DnnlConvShape& s, const float* x, const float* w, const float* gy, float* gx,
                          float* gw, float* gb) {
  return !s.bf16 && conv2d_backward(s, x, w, gy, gx, gw, gb);
}

bool dnnl_conv2d_backward_bf16(const DnnlConvShape& s, const uint16_t* x, const uint16_t* w, const uint16_t* gy,
                               uint16_t* gx, uint16_t* gw, float* gb) {
  return s.bf16 && conv2d_backward(s, x, w, gy, gx, gw, gb);
}


#else

bool conv_dnnl_enabled() { return false; }
bool dnnl_conv2d(const DnnlConvShape&, const float*, const float*, const float*, float*) { return false; }
bool dnnl_conv_transpose2d(const DnnlConvShape&, const float*, const float*, const float*, float*) { return false; }
bool dnnl_conv2d_backward(const DnnlConvShape&, const float*, const float*, const float*, float*, float*, float*) {
  return false;
}
bool dnnl_conv2d_bf16(const DnnlConvShape&, const uint16_t*, const uint16_t*, const float*, uint16_t*) { return false; }
bool dnnl_conv2d_backward_bf16(const DnnlConvShape&, const uint16_t*, const uint16_t*, const uint16_t*, uint16_t*,
                               uint16_t*, float*) {
  return false;
}

#endif

void set_conv_dnnl_enabled(bool on) { g_dnnl_on.store(on); }
void set_conv_dnnl_winograd(bool on) { g_wino.store(on); }
bool conv_dnnl_winograd() { return g_wino.load(); }

}  // namespace fw::detail
