// The graph IR of fw::compile (DESIGN.md §6): an SSA list of op calls over values with concrete
// metadata, recorded by the tracer (jit/tracer.cpp) and run by the interpreter (the oracle) or by
// a program built by codegen/.
//
// Note [Graph IR]
// A value is produced once: by a graph input (a tensor argument of the call), an external (a
// tensor the function captured: a parameter, a buffer, a constant made outside the trace), or a
// node output. Nodes are primitive op calls (the op table's OpId + OpAttrs), so every pass and
// backend sees the same ops eager runs. In-place ops are functionalised by the tracer: they become
// out-of-place nodes, and a write into an input or external becomes a `writeback` that the runner
// copies into the real tensor at the end (torch.func's functionalisation does the same job).
// Views are ordinary nodes whose outputs record (sizes, strides, offset) relative to their root
// buffer, so codegen folds them into indexing.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "core/op.h"

namespace fw::jit {

using fw::detail::OpAttrs;
using fw::detail::OpId;

enum class ValueKind : uint8_t { Input, External, Node };

struct ValueInfo {
  ValueKind kind = ValueKind::Node;
  int index = 0;       // Input/External: position in inputs/externals; Node: node index
  int out_nr = 0;      // Node: which output
  DimVec sizes, strides;
  int64_t offset = 0;  // storage offset, in elements
  ScalarType dtype = kFloat;
  bool requires_grad = false;
  bool is_view = false;  // produced by a View op (shares its input's buffer)
};

struct Node {
  OpId op;
  OpAttrs attrs;
  std::vector<int> in, out;
  bool grad = true;  // grad mode when traced: replays of ops traced under no_grad record nothing
};

// (target, value): after the graph runs, `value` is copied into input/external `target`.
struct Writeback {
  ValueKind target_kind;  // Input or External
  int target;             // index into the call's inputs / the graph's externals
  int value;
  bool grad = false;  // the write happened with grad mode on (it keeps autograd's in-place rules)
};

// A composite op recorded as its primitive decomposition (Note [Decompositions]): the values it
// produced, so a backend that fuses nothing around it can run the original op instead.
struct Decomposition {
  OpId op;
  OpAttrs attrs;
  std::vector<int> inputs, outputs;
  std::vector<int> values;
};

struct Graph {
  std::vector<ValueInfo> values;
  std::vector<Decomposition> decomps;
  std::vector<Node> nodes;
  std::vector<int> inputs;     // value ids of the tensor arguments, in call order (an argument
                               // passed twice appears twice with one value id)
  std::vector<int> externals;  // value ids of captured tensors
  std::vector<Tensor> external_tensors;  // the captured tensors themselves (identity)
  // Per external (missing entries: 0): 1 for a tensor the function itself made while it was
  // traced (zeros(), fw::tensor({...})) or a constant a pass folded (Note [Tensors the function
  // made]); a run writes into a fresh copy of it and returns copies of it, never it.
  std::vector<char> owned;
  std::vector<int> outputs;
  std::vector<Writeback> writebacks;
  bool owns(size_t external) const { return external < owned.size() && owned[external]; }

  int add_value(ValueInfo v) {
    values.push_back(std::move(v));
    return int(values.size()) - 1;
  }
  // Readable text: one line per value/node with shapes and dtypes ("%3 = mul(%1, %2) : f32[4,8]").
  std::string dump() const;
  // Checks SSA form, index ranges and that every node's meta reproduces its recorded outputs.
  void verify() const;
};

// Note [Buffer release]
// A runner holds every value of a run in an environment indexed by value id. Left alone it would
// keep each intermediate alive until the run ends, so a graph's peak memory would be the sum of
// its intermediates and no later op could reuse an earlier buffer. A release plan lists, for each
// step, the values whose last use that step is (outputs and writeback sources are never
// released); the runner drops its handles to them after the step, and the caching allocator hands
// the freed blocks to the next allocations of their size. Views keep their storage alive through
// their own handles, so releasing a base is always safe.
using ReleasePlan = std::vector<std::vector<int>>;
// touched[s]: every value step s reads or writes (including values made and used inside it).
ReleasePlan release_plan(const Graph& g, const std::vector<std::vector<int>>& touched);
// One step per node, in order.
ReleasePlan node_release_plan(const Graph& g);

// Runs g with eager kernels (the reference every compiled result is tested against). Under grad
// mode the eager ops record autograd history as usual, so results are differentiable. With a
// plan (node_release_plan), intermediates are released after their last use.
std::vector<Tensor> interpret(const Graph& g, ArrayRef<Tensor> inputs, ArrayRef<Tensor> externals,
                              const ReleasePlan* plan = nullptr);

// Binds the captured tensors: the caller passes those of the capture (read live); constants that
// passes appended after them (fold_constants) come from the graph itself. When the graph writes
// into tensors it owns, `fresh` receives the externals of this run (each such tensor replaced by
// a copy made now) and `externals` is pointed at it, so that finish_run writes into the copies.
void bind_externals(const Graph& g, std::vector<Tensor>& env, ArrayRef<Tensor>& externals,
                    std::vector<Tensor>& fresh);
// Copies the writebacks' values into their targets and returns the values of g.outputs (shared
// by every runner). An output that is the value written into an argument or a captured tensor is
// that tensor itself, as in eager (x.mul_(2); return x; returns x); an output that is a tensor the
// graph owns is a copy of it (Note [Tensors the function made]).
std::vector<Tensor> finish_run(const Graph& g, const std::vector<Tensor>& env, ArrayRef<Tensor> inputs,
                               ArrayRef<Tensor> externals);

// Passes (jit/passes.cpp). Each keeps the graph's interface (inputs, externals, outputs) intact.
int eliminate_dead_code(Graph& g);        // returns the number of nodes removed
int eliminate_common_subexpressions(Graph& g);
// Evaluates nodes that depend on no input, external or random draw (a fill, an arange, a
// constant reshaped or cast...) once, at build time; their values become captured constants.
int fold_constants(Graph& g, int64_t max_numel = 1 << 16);
// Replaces a view of a view by one as_strided view of the first view's input (the recorded
// strides and offsets are exact for the concrete graph a program is built from).
int fold_views(Graph& g);

std::string op_attrs_str(OpId op, const OpAttrs& a);
// mm, addmm, bmm, baddbmm: the products whose attrs may carry epilogue flags.
bool is_matrix_product(OpId op);
// Matrix products whose attrs carry epilogue flag `flag` (Note [Epilogues in extern products]).
int product_epilogues(const Graph& g, uint32_t flag);
// ", n product(s) with a relu epilogue, m product(s) with a relu-mask epilogue", the parts with
// n, m > 0 (for the programs' describe()).
std::string product_epilogues_note(const Graph& g);
const char* dtype_short(ScalarType t);

}  // namespace fw::jit
