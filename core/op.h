// The op table: every primitive op is declared once in the lists of core/ops/*_list.h and
// defined once (meta, CPU kernel, slots for CUDA, vjp and codegen lowering) by FW_DEFINE_OP.
//
// Note [One definition per op]
// FW_OPS enumerates every primitive. For each entry the build needs a function
// detail::define_<name>(OpDef&), written with FW_DEFINE_OP next to the op's kernel; a missing
// one is a link error, and the table test fails for an op with no test entry. Composite
// functions (reshape, softmax's decomposition, ...) call primitives and are not in the list.
#pragma once
#include <optional>

#include "core/ops/list.h"
#include "fw/ops.h"

namespace fw::detail {

enum class OpKind : uint8_t { Creation, Elementwise, Reduction, View, Opaque };

enum class OpId : uint16_t {
#define FW_X(name, kind) name,
  FW_OPS(FW_X)
#undef FW_X
  NumOps
};

// Non-tensor arguments of an op call. Each op documents which fields it reads; the tracer
// stores a copy in the graph node and guards compare them by value.
struct OpAttrs {
  DimVec ints;         // a dim list, sizes, kernel sizes...
  DimVec ints2;        // a second list: strides, padding...
  DimVec ints3;        // a third list: dilation...
  Scalar s0, s1;       // scalar operands (alpha, fill value, clamp bounds)
  int64_t i0 = 0, i1 = 0, i2 = 0;
  double f0 = 0, f1 = 0, f2 = 0;
  uint32_t flags = 0;  // op-specific booleans (keepdim, descending, scalar operand present...)
  ScalarType dtype = ScalarType::NumTypes;  // NumTypes = not given
  bool has_dtype() const { return dtype != ScalarType::NumTypes; }
};

struct TensorMeta {
  DimVec sizes;
  ScalarType dtype = kFloat;
};
using Metas = SmallVec<TensorMeta, 2>;
using Outs = SmallVec<Tensor, 2>;

struct OpDef;
struct OpCall {
  const OpDef& def;
  ArrayRef<Tensor> in;
  const OpAttrs& a;
};

// What a vjp sees: the op's attrs, its (saved) inputs and outputs, and which inputs need grads.
struct VjpCtx {
  const OpAttrs& a;
  ArrayRef<Tensor> in;
  ArrayRef<Tensor> out;
  const bool* needs;  // needs[i]: input i wants a gradient
};

// meta: validates arguments and fills output sizes/dtypes; runs on placeholders when tracing.
using MetaFn = void (*)(const OpCall&, Metas&);
// kernel: outputs arrive allocated from meta (views: the kernel creates them).
using KernelFn = void (*)(const OpCall&, Outs&);
// vjp: gradients of the inputs from gradients of the outputs (grads[k] undefined when output k
// got none), written with public fw ops so that it is itself differentiable and traceable.
// gin arrives with one undefined slot per input; leave a slot undefined for "no gradient".
using VjpFn = void (*)(const VjpCtx&, ArrayRef<Tensor> grads, Outs& gin);

struct OpDef {
  const char* name = nullptr;
  OpKind kind = OpKind::Opaque;
  MetaFn meta = nullptr;
  KernelFn cpu = nullptr;
  KernelFn cuda = nullptr;              // filled by the CUDA work
  const char* functor = nullptr;        // elementwise: name of the shared scalar functor (codegen)
  VjpFn vjp = nullptr;                  // null and differentiable: backward raises "not implemented"
  bool vjp_uses_out = false;            // the vjp reads ctx.out (saved only when set)
  bool vjp_reads_in = true;             // false: the vjp uses only the inputs' shapes/dtypes, so
                                        // later in-place writes to them do not invalidate it
  uint8_t vjp_ignores_in = 0;           // bit k: as vjp_reads_in = false, for input k alone
  // Entry k (non-zero): the vjp reads input k only for the gradients of the inputs in this bit
  // mask (x*y reads y only for x's gradient), so input k is version-checked only when one of them
  // requires grad (PyTorch saves such inputs only then).
  uint8_t vjp_reads_in_for[4] = {};
  bool differentiable = true;
};

// The table, built on first use from the define_* functions.
const OpDef& op_def(OpId id);
const OpDef* op_table_begin();
constexpr int kNumOps = int(OpId::NumOps);

#define FW_X(name, kind) void define_##name(OpDef& d);
FW_OPS(FW_X)
#undef FW_X
#define FW_DEFINE_OP(name) void ::fw::detail::define_##name(::fw::detail::OpDef& d)

// The dispatch door (DESIGN.md §3): every op call comes through here.
Outs dispatch(OpId id, ArrayRef<Tensor> in, const OpAttrs& a);
inline Tensor dispatch1(OpId id, ArrayRef<Tensor> in, const OpAttrs& a) {
  Outs o = dispatch(id, in, a);
  return std::move(o[0]);
}
// Runs op id writing its single output into `out` (in-place and out= forms). Checks that the
// result broadcasts to out's shape and that its dtype can be cast to out's dtype.
void dispatch_into(OpId id, ArrayRef<Tensor> in, const OpAttrs& a, const Tensor& out);

// ---- helpers shared by op definitions
int64_t wrap_dim(int64_t dim, int64_t ndim, const char* op);
DimVec broadcast_shapes(IntArrayRef a, IntArrayRef b, const char* op);
// PyTorch's result_type over tensors (dimensioned beat 0-dim) and an optional wrapped scalar.
ScalarType result_type(ArrayRef<Tensor> ts, const Scalar* scalar = nullptr);
bool can_cast(ScalarType from, ScalarType to);
DimVec contiguous_strides(IntArrayRef sizes);
int64_t shape_numel(IntArrayRef sizes, const char* op);
Tensor make_tensor(IntArrayRef sizes, ScalarType dtype, Device d = Device(kCPU));
// A view sharing t's storage.
Tensor make_view(const Tensor& t, IntArrayRef sizes, IntArrayRef strides, int64_t offset);
// t converted to dtype (no copy when it already has it).
Tensor cast(const Tensor& t, ScalarType dtype);
std::string shape_str(IntArrayRef s);
void bump_version(const Tensor& t, const char* writer = nullptr);

// Class-index targets as int64, checked against [0, classes) (ignore_index exempt) inside the
// check_targets op's kernel: nll_loss/cross_entropy validate without reading values on the host,
// so a traced loss does not break the graph.
Tensor check_targets(const Tensor& target, int64_t classes, int64_t ignore_index);
// istft's window envelope (real floating), returned unchanged; raises "[istft] window overlap add
// min: v ..." when min |envelope| <= 1e-11 (the window fails NOLA), inside the check_nola kernel.
Tensor check_nola(const Tensor& envelope);

// Sums a broadcast gradient back to `shape` (the vjp of broadcasting).
Tensor sum_to(const Tensor& g, IntArrayRef shape);

// Autograd's entry points into the door, installed by autograd/ (core does not depend on it).
struct AutogradHooks {
  void (*record)(OpId id, ArrayRef<Tensor> in, const OpAttrs& a, Outs& outs);
  // Called before an in-place write into `out` (rejects leaves, and views of leaves, that need grad).
  void (*check_inplace)(const OpDef& d, const Tensor& out);
  // After an in-place write of `result` into the view `view`: the base's history gains the write
  // and the view becomes a view of the new base (Note [In-place writes through views]).
  void (*rebase_view)(const Tensor& view, const Tensor& result);
};
extern const AutogradHooks* g_autograd;
// Gives dst the autograd identity (requires_grad, grad_fn, output_nr) of src.
void rebind_grad(const Tensor& dst, const Tensor& src);
// retain_grad() of t moved to t's current grad_fn (after an in-place write gave it a new one).
void move_retained_grad(const Tensor& t);
// True when t views a base that takes part in autograd (writes into t must enter its history).
inline bool base_requires_grad(const Tensor& t) {
  const auto& b = t.impl()->view_base;
  return b && b->autograd && b->autograd->requires_grad;
}

// fw::compile's entry points into the door, installed by jit/ while a trace runs on a thread
// (core does not depend on jit). tls().tracer holds the active trace; the hooks receive it.
struct TracerHooks {
  Outs (*dispatch)(void* tracer, OpId id, ArrayRef<Tensor> in, const OpAttrs& a);
  void (*dispatch_into)(void* tracer, OpId id, ArrayRef<Tensor> in, const OpAttrs& a, const Tensor& out);
  void (*materialize)(void* tracer, const TensorImpl* t);  // data access on a placeholder
  // Code that must run eagerly (a custom autograd Function): runs the pending segment first.
  void (*graph_break)(void* tracer, const char* op, const char* reason);
  // nn::Module::is_training() was read (module is the nn::Module): the capture guards its mode.
  void (*module_mode)(void* tracer, const void* module, bool training);
  // Whether t is a traced op result that records autograd history (a non-leaf in eager).
  bool (*traced_nonleaf)(void* tracer, const TensorImpl* t);
};
extern const TracerHooks* g_tracer;

// Thread-local switches read by the door.
struct ThreadState {
  bool grad_enabled = true;
  void* tracer = nullptr;  // the active fw::compile trace on this thread (hooks: g_tracer)
  bool inference_mode = false;  // an InferenceMode(true) guard is the innermost one
  // The API reading tensor values right now (item(), printing), for a tracer's break message.
  const char* data_access = nullptr;
  bool autocast = false;  // CPU autocast to bfloat16 is on (fw/autocast.h)
};
ThreadState& tls();

// Names the API that is about to read tensor values (see ThreadState::data_access).
struct DataAccessScope {
  const char* prev;
  explicit DataAccessScope(const char* what) : prev(tls().data_access) { tls().data_access = what; }
  ~DataAccessScope() { tls().data_access = prev; }
  DataAccessScope(const DataAccessScope&) = delete;
  DataAccessScope& operator=(const DataAccessScope&) = delete;
};

// libtorch's rule: an inference tensor's memory only changes inside InferenceMode.
[[noreturn]] void inference_write_error(const char* op);
inline void check_inference_write(const Tensor& dst, const char* op) {
  if (FW_UNLIKELY(dst.impl()->storage->inference) && !tls().inference_mode) inference_write_error(op);
}

[[noreturn]] void internal_overlap_error(const Tensor& dst, const char* op);

// An in-place write into a tensor whose elements share memory (a dim of size > 1 with stride 0,
// as expand() makes) would apply the op once per alias; like PyTorch, it is an error. Partial
// overlaps between different dims (as_strided) are not detected, as in PyTorch.
inline void check_no_internal_overlap(const Tensor& dst, const char* op) {
  IntArrayRef sz = dst.sizes(), st = dst.strides();
  for (size_t i = 0; i < sz.size(); i++)
    if (FW_UNLIKELY(st[i] == 0 && sz[i] > 1)) internal_overlap_error(dst, op);
}

}  // namespace fw::detail
