// The tracer behind fw::compile: while active on a thread, every op call that reaches the dispatch
// door is recorded into a Graph and answered with placeholder tensors (metadata, no memory).
//
// Note [Tracing and graph breaks]
// Capture runs the user's function once with the tensor arguments replaced by aliases the tracer
// knows, and the door hooks (core/op.h, TracerHooks) take every op: meta runs as in eager (same
// checks, same messages), the call becomes a node, and the outputs are placeholders whose storage
// has no memory (StorageImpl::placeholder). Views run their (metadata-only) kernels on the
// placeholders, so view chains keep real strides. Tensors the function reaches that the tracer
// did not make (parameters, buffers, constants) become externals, captured by identity.
//
// Anything that needs a value — item(), data_ptr(), printing, an op whose meta reads data (nonzero,
// masked_select, boolean indexing) — touches a placeholder's memory, which calls back into the
// tracer: a graph break. Reading the values of an argument or a captured tensor is one too (Note
// [Reading real values while tracing] in tracer.cpp). The segment recorded so far is built and run on the real inputs, every
// placeholder that is still referenced outside the tracer gets its memory (the result buffer is
// adopted by the placeholder's own StorageImpl, so user handles and their views become real in
// place), the data-dependent op runs eagerly, and tracing goes on in a new segment where the
// now-real tensors are externals. A function that broke, or leaked a traced tensor into outside
// state, is re-traced on every call; its segments' programs are cached by graph text, so later
// calls pay for tracing (meta only) but not for compilation.
//
// In-place ops are functionalised: the out-of-place op is recorded and the destination handle is
// rebound to the new value; a write into an argument or a captured tensor becomes a writeback that
// the runner applies at the end (until then the real storage is flagged, so reading it breaks the
// graph first). Writes through views of traced values, and writes into values that other traced
// views share, break the graph and run eagerly, which keeps eager's aliasing semantics exactly.
#pragma once
#include <functional>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "jit/ir.h"

namespace fw::nn {
class Module;
}

namespace fw::jit {

struct BreakInfo {
  std::string op;      // the op or API that needed data
  std::string reason;
};

class Tracer {
 public:
  // Runs a finished segment on real tensors: returns the values of g.outputs (and applies
  // g.writebacks). Segments after the first take no inputs (everything real is an external).
  using SegmentRunner = std::function<std::vector<Tensor>(Graph& g, ArrayRef<Tensor> inputs)>;

  // symbolic: the inputs are themselves placeholders (tracing a backward graph from vjps).
  Tracer(std::vector<Tensor> real_inputs, bool fullgraph, SegmentRunner run, bool symbolic = false);
  ~Tracer();
  Tracer(const Tracer&) = delete;
  Tracer& operator=(const Tracer&) = delete;

  // The tensors to hand to the traced function in place of the real arguments.
  const std::vector<Tensor>& inputs() const { return real_inputs_; }
  // Record composite ops with their own eager kernels (softmax, log_softmax, layer_norm,
  // batch_norm) as their primitive decomposition, so codegen can fuse them with their neighbours
  // (Note [Decompositions] in decompose.cpp).
  void set_decompose(bool on) { decompose_ = on; }

  // Activates the tracer on this thread for the lifetime of the guard.
  struct Scope {
    explicit Scope(Tracer& t);
    ~Scope();
    void* prev;
  };

  // After the function returned `outs`: records them as the graph's outputs. When nothing broke
  // and nothing escaped, returns true and leaves the graph in graph() for the caller to build and
  // run (a replayable capture). Otherwise runs the last segment itself, stores the real results in
  // results(), and returns false (the function must be re-traced on every call).
  bool finish(const std::vector<Tensor>& outs);
  // After the traced function threw: runs the segment traced so far when it writes into arguments
  // or captured tensors, since eager made those writes before the throw. Its results are dropped.
  void flush_after_throw();
  Graph& graph() { return g_; }
  std::vector<Tensor>& results() { return results_; }
  const std::vector<BreakInfo>& breaks() const { return breaks_; }
  int segments() const { return segments_; }
  std::vector<std::string> escape_notes;

  // Door hooks (called through core's TracerHooks).
  fw::detail::Outs on_dispatch(OpId id, ArrayRef<Tensor> in, const OpAttrs& a);
  void on_dispatch_into(OpId id, ArrayRef<Tensor> in, const OpAttrs& a, const Tensor& out);
  void on_materialize(const TensorImpl* t);
  void on_graph_break(const char* op, const char* reason) { graph_break(op, reason); }
  void on_module_mode(const nn::Module* m, bool training) noexcept;
  bool traced_nonleaf(const TensorImpl* t) const;

  // Modules whose train/eval flag the trace read, with the value read.
  struct ModuleMode {
    const nn::Module* module;
    std::weak_ptr<const nn::Module> weak;
    bool training;
  };
  const std::vector<ModuleMode>& module_modes() const { return module_modes_; }

 private:
  // Records op `id` as primitives when it has a decomposition for these inputs (decompose.cpp).
  bool decompose(OpId id, ArrayRef<Tensor> in, const OpAttrs& a, fw::detail::Outs& o);
  int resolve(const Tensor& t);
  bool shares_real_storage(const TensorImpl* t) const;
  int add_external(const Tensor& t);
  int add_real(const Tensor& t, ValueKind kind, int index);
  Tensor placeholder(IntArrayRef sizes, ScalarType dtype, const std::vector<int64_t>& order);
  // A traced copy of t as `dtype` laid out in `order` (kCopyOrder; row-major when empty).
  Tensor copy_in_order(const Tensor& t, ScalarType dtype, const std::vector<int64_t>& order);
  void graph_break(const std::string& op, const std::string& reason);
  fw::detail::Outs run_eagerly(OpId id, ArrayRef<Tensor> in, const OpAttrs& a, const Tensor* out);
  void new_segment();
  struct Live {
    std::vector<StorageImpl*> stores;  // placeholder buffers to fill...
    std::vector<int> store_values;     // ...with these values
    std::vector<TensorImpl*> handles;  // handles that get their value's autograd history
    std::vector<int> handle_values;
  };
  Live live();

  std::vector<Tensor> run_segment(const std::vector<int>& outs, const Live& L);
  void adopt(StorageImpl* st, const Tensor& result, const DimVec& strides);

  Graph g_;
  std::vector<Tensor> real_inputs_;
  std::unordered_map<const TensorImpl*, int> value_of_;
  std::vector<intrusive_ptr<TensorImpl>> held_;   // per value id: the impl it was recorded with
  std::vector<intrusive_ptr<TensorImpl>> extra_;  // handles made without the door (detach, ...)
  std::unordered_map<const StorageImpl*, int> root_of_;  // our placeholder storages -> filling value
  std::unordered_map<const StorageImpl*, const TensorImpl*> real_of_;  // argument/capture storages
  std::vector<intrusive_ptr<StorageImpl>> pending_;      // real storages with writebacks pending
  uint64_t born_ = 0;         // g_storage_clock when the trace began (storages born later are its own)
  bool reads_free_ = false;   // after the first break, reading real values needs no break
  std::vector<BreakInfo> breaks_;
  std::vector<ModuleMode> module_modes_;
  std::vector<Tensor> results_;
  SegmentRunner run_;
  bool fullgraph_;
  bool decompose_ = false;
  bool symbolic_ = false;
  int segments_ = 0;
  int in_op_ = 0;  // > 0 while the tracer runs an op's meta or view kernel
  const char* current_op_ = nullptr;
};

}  // namespace fw::jit
