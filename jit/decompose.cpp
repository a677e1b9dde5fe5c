// Decompositions of composite ops under the inductor backend (Note [Decompositions]).
#include <fw/fw.h>

#include "core/layout.h"
#include "jit/tracer.h"

namespace fw::jit {

using namespace fw::detail;

namespace {

bool float_or_double(const Tensor& t) { return t.dtype() == kFloat || t.dtype() == kDouble; }

// The batch-norm attrs' flags (core/ops/norm.cpp): which optional inputs are present, and training.
enum : uint32_t { kWeight = 1, kBias = 2, kRunMean = 4, kRunVar = 8, kTraining = 16 };

}  // namespace

// Note [Decompositions]
// Under the inductor backend a few composite ops with their own eager kernels are recorded as the
// primitives they compute, so codegen can fuse them with their producers and consumers:
//  * softmax(x, d) = exp(x - m) * (1 / sum(exp(x - m), d)) and log_softmax = x - (m + log(sum(exp(x - m), d))),
//    with m = amax(x, d) taken without gradient (both are shift-invariant, so the exact gradient
//    does not flow through m), each rounded as eager's kernel rounds it;
//  * layer_norm over the last dimension: mean, centred values, biased variance, rstd = 1/sqrt(var + eps),
//    then the affine part; outputs (y, mean, rstd) as the op;
//  * batch_norm in evaluation mode: pointwise with per-channel constants, y = (x - running_mean) *
//    (rsqrt(running_var + eps) * w) + b, so a convolution's BN + ReLU become one fused pass.
//    Training mode keeps the op: decomposed (var_mean over (N, *), the pointwise normalisation, the
//    running-buffer update without gradient) its forward fused with a following ReLU and ran
//    ~18% faster, but the backward derived from the primitives' vjps (sums over (N, *) that do not
//    collapse into one reduced dimension) made a 64x64x40x16 BN + ReLU training step ~8% slower
//    than the op's own single-formula vjp (17.9-18.5 ms vs 16.6-17.1 ms), so it stays one op.
// A non-contiguous input to softmax/log_softmax/layer_norm is first copied row-major (in the
// fused row kernel that copy is a strided read), so the results are row-major as eager's are.
// softmax/log_softmax/layer_norm are recorded as Decomposition entries: codegen's row kernels run
// the original op's single-pass eager kernel when nothing else fuses with them. Other backends keep
// the ops and their eager kernels. Every decomposition is limited to float32/float64 with one
// dtype throughout; anything else (16-bit inputs computed in float, mixed parameter dtypes,
// empty tensors) stays one op.
bool Tracer::decompose(OpId id, ArrayRef<Tensor> in, const OpAttrs& a, Outs& o) {
  const OpDef& d = op_def(id);
  if (id == OpId::native_layer_norm) {
    if (a.ints.size() != 1 || in[0].numel() == 0 || !float_or_double(in[0])) return false;
    Decomposition dc{id, a, {}, {}, {}};
    for (const Tensor& t : in) dc.inputs.push_back(resolve(t));
    const size_t first_node = g_.nodes.size();
    const Tensor x = in[0].contiguous();  // eager's result is row-major (Note [Traced layouts])
    size_t next = 1;
    Tensor w = (a.flags & kWeight) ? in[next++] : Tensor(), b = (a.flags & kBias) ? in[next++] : Tensor();
    Tensor mean = x.mean({-1}, true);
    Tensor xc = x - mean;
    Tensor rstd = ((xc * xc).mean({-1}, true) + a.f0).rsqrt();
    Tensor y = xc * rstd;
    if (w.defined()) y = y * w;
    if (b.defined()) y = y + b;
    o = {y, mean, rstd};
    for (auto& t : o) dc.outputs.push_back(value_of_.at(t.impl().get()));
    for (size_t i = first_node; i < g_.nodes.size(); i++)
      dc.values.insert(dc.values.end(), g_.nodes[i].out.begin(), g_.nodes[i].out.end());
    g_.decomps.push_back(std::move(dc));
    return true;
  }
  if (id == OpId::softmax || id == OpId::log_softmax) {
    if (in[0].dim() == 0 || in[0].numel() == 0 || !float_or_double(in[0]) || (a.has_dtype() && a.dtype != in[0].dtype()))
      return false;
    int64_t dim = wrap_dim(a.i0, in[0].dim(), d.name);
    const int in_value = resolve(in[0]);
    const size_t first_node = g_.nodes.size();
    const Tensor x = in[0].contiguous();  // eager's result is row-major (Note [Traced layouts])
    Tensor m;
    {
      NoGradGuard ng;
      m = x.amax({dim}, true);
    }
    Tensor z = x - m;
    if (id == OpId::softmax) {
      // exp(z) * (1 / sum), as eager's kernel (and PyTorch's) rounds it: one reciprocal per row
      // and a multiply per element, not a division per element.
      Tensor e = z.exp();
      o = {e * e.sum({dim}, true).reciprocal()};
    } else {
      // x - (m + log(sum)) as eager (and PyTorch) compute it, not (x - m) - log(sum): on rows of
      // large values the two round differently (rows [1e4, 1e4, 0]: -0.693359 against -0.693147).
      o = {x - (m + z.exp().sum({dim}, true).log())};
    }
    Decomposition dc{id, a, {in_value}, {value_of_.at(o[0].impl().get())}, {}};
    for (size_t i = first_node; i < g_.nodes.size(); i++)
      dc.values.insert(dc.values.end(), g_.nodes[i].out.begin(), g_.nodes[i].out.end());
    g_.decomps.push_back(std::move(dc));
    return true;
  }
  if (id == OpId::native_batch_norm) {
    const Tensor& x = in[0];
    if ((a.flags & kTraining) || x.dim() < 2 || x.numel() == 0 || !float_or_double(x)) return false;
    for (const Tensor& t : in)
      if (t.dtype() != x.dtype()) return false;
    size_t next = 1;
    auto opt = [&](uint32_t bit) { return (a.flags & bit) ? in[next++] : Tensor(); };
    Tensor w = opt(kWeight), b = opt(kBias), rm = opt(kRunMean), rv = opt(kRunVar);
    if (!rm.defined() || !rv.defined()) return false;  // the op raises its error
    DimVec cshape(size_t(x.dim()), 1);
    cshape[1] = x.size(1);
    auto per_channel = [&](const Tensor& t) { return t.view(cshape); };
    // Running statistics are not differentiable (as in eager).
    Tensor scale = (per_channel(rv.detach()) + a.f1).rsqrt();
    if (w.defined()) scale = scale * per_channel(w);
    Tensor y = (x - per_channel(rm.detach())) * scale;
    if (b.defined()) y = y + per_channel(b);
    // Eager's result layout (result_order: channels-last after a channels-last input, else
    // row-major); the element-wise steps follow x's own stride order, which may differ.
    std::vector<int64_t> order = is_channels_last(x) ? channels_last_order(x.dim()) : std::vector<int64_t>{};
    if (order.empty())
      for (int64_t d = 0; d < x.dim(); d++) order.push_back(d);
    if (!y.strides().equals(strides_in_order(x.sizes(), order))) y = copy_in_order(y, y.dtype(), order);
    Tensor none = fw::empty({0}, x.options());  // the op's statistics outputs are empty in evaluation mode
    o = {y, none, none.view({0})};
    return true;
  }
  return false;
}

}  // namespace fw::jit
