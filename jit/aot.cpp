// Compiled training graphs (DESIGN.md §6 "Training"): the backward graph is traced from the ops'
// vjps and both graphs go through the backend.
//
// Note [Joint forward/backward graphs]
// For a captured graph whose inputs or captured tensors require grad, the backward is built
// ahead of time the way AOTAutograd does it: every forward value gets a placeholder (with the
// recorded sizes, strides and offset), the tracer is switched on, and the nodes' vjps run in
// reverse order on the placeholders, accumulating gradients per value. The vjps are written with
// public fw ops (Note [One definition per op]), so this records an ordinary graph: inputs are the
// output gradients plus whichever forward values the vjps read; outputs are the gradients of the
// forward inputs and captured tensors. Those forward values become extra outputs of the forward
// graph: the saved activations, after cheap pointwise values are traded for recomputation
// (Note [Recompute partition]). Both graphs are compiled by the backend; at run time the forward runs without autograd recording and
// one CompiledBackward node is attached to the results, holding the saved values with their
// version counters (an in-place write to one before backward raises, as in eager).
// Graphs this cannot handle (an op without a vjp, a vjp that reads values, gradients flowing into
// an argument that is written in place) run through the interpreter, whose eager ops record
// autograd as usual; so results are always differentiable. Double backward (create_graph)
// through a compiled function is rejected with a clear message.
#include <algorithm>
#include <functional>
#include <limits>
#include <mutex>
#include <map>
#include <future>
#include <unordered_map>

#include "autograd/node.h"
#include "jit/log.h"
#include "jit/program.h"
#include "jit/tracer.h"

namespace fw::jit {

using namespace fw::detail;
namespace ad = fw::autograd::detail;
using fw::autograd::variable_list;

namespace {

bool wants_grad(ScalarType t) { return is_floating_point(t) || is_complex(t); }

// A placeholder with the recorded geometry of value v.
Tensor symbolic(const ValueInfo& v) {
  int64_t span = 1;
  for (size_t d = 0; d < v.sizes.size(); d++)
    if (v.sizes[d] == 0) span = 0;
  if (span) {
    span = v.offset + 1;
    for (size_t d = 0; d < v.sizes.size(); d++) span += (v.sizes[d] - 1) * v.strides[d];
  }
  auto st = make_intrusive<StorageImpl>(nullptr, size_t(std::max<int64_t>(span, 0)) * element_size(v.dtype), Device(kCPU),
                                        [](void*) {});
  st->placeholder = true;
  auto impl = make_intrusive<TensorImpl>();
  impl->storage = std::move(st);
  impl->sizes = v.sizes;
  impl->strides = v.strides;
  impl->offset = v.offset;
  impl->dtype = v.dtype;
  impl->refresh();
  return Tensor(std::move(impl));
}

struct BwInput {
  bool grad;  // true: gradient of forward output slot `index`; false: saved value `index`
  int index;
};

}  // namespace

struct AotShared;

struct CompiledBackward : ad::EngineNode {
  std::shared_ptr<const AotShared> plan;
  std::vector<Tensor> saved;
  std::vector<uint32_t> versions;
  bool saves = false;  // saved values for backward (freed by release)
  std::string name() const override { return "CompiledFunctionBackward"; }
  variable_list apply(variable_list&& grads, bool create_graph) override;
  void release() override {
    released = true;
    saved.clear();
    pre_hooks.clear();
  }
};

// One compiled backward graph: its program, the tensors it captures, what feeds each of its
// inputs, and which argument each of its results is the gradient of.
struct BwVariant {
  std::shared_ptr<Program> prog;
  std::vector<Tensor> externals;
  bool reads_captured = false;  // some external is the caller's tensor, not a constant the trace made
  std::vector<BwInput> inputs;
  std::vector<int> out_edge;
};

struct AotShared {
  std::shared_ptr<Program> fwd;
  std::shared_ptr<const BwVariant> bwd;  // every output gradient present
  size_t n_out = 0;
  size_t n_saved = 0, n_recomputed = 0;  // Note [Recompute partition]
  std::vector<int> grad_values;          // forward value ids that get grad_fn, in output_nr order
  std::vector<std::vector<int>> grad_positions;  // their positions among the forward outputs
  std::vector<ad::OutputMeta> grad_meta;
  std::vector<std::pair<bool, int>> edges;  // (external?, index)
  std::vector<ScalarType> edge_dtype;
  // What building another backward variant needs (Note [Unused gradients]).
  Graph graph;                      // the forward graph as traced
  std::vector<Tensor> placeholders;  // backward tracer inputs: output gradients, then forward values
  std::vector<char> recompute;
  std::vector<int> saved_values;    // forward value ids, in saved order
  CompileOptions options;
  std::shared_ptr<Program> (*backend)(Graph, const CompileOptions&) = nullptr;
  mutable std::mutex mu;
  mutable std::map<std::vector<char>, std::shared_ptr<const BwVariant>> variants;  // by present gradients
  std::shared_ptr<const BwVariant> variant(const std::vector<char>& present) const;
};

variable_list CompiledBackward::apply(variable_list&& grads, bool create_graph) {
  // A node that saved nothing runs again after release, as eager nodes that read no values do.
  FW_CHECK(!released || !saves, "[autograd] Trying to backward through the graph a second time (or directly access saved "
           "tensors after they have already been freed). Specify retain_graph=true if you need to backward through "
           "the graph a second time (CompiledFunctionBackward)");
  FW_CHECK(!create_graph, "[fw::compile] double backward (create_graph=true) through a compiled function is not "
           "supported; compile with CompileOptions().backend(\"eager\") for higher-order gradients");
  const AotShared& p = *plan;
  for (size_t i = 0; i < saved.size(); i++)
    FW_CHECK(saved[i].impl()->version().load() == versions[i],
             "[autograd] one of the variables needed for gradient computation has been modified by an inplace "
             "operation: a value saved by a compiled function (CompiledFunctionBackward) is at version ",
             saved[i].impl()->version().load(), "; expected version ", versions[i], " instead");
  std::vector<char> present(grads.size());
  bool any = false, all = true;
  for (size_t k = 0; k < grads.size(); k++) {
    present[k] = grads[k].defined();
    any = any || present[k];
    all = all && present[k];
  }
  variable_list result(p.edges.size());
  if (!any) return result;
  std::shared_ptr<const BwVariant> bv = all ? p.bwd : p.variant(present);
  std::vector<Tensor> in;
  for (const BwInput& b : bv->inputs) {
    if (!b.grad) {
      in.push_back(saved[b.index]);
      continue;
    }
    const Tensor& g = grads[b.index];
    const ad::OutputMeta& m = p.grad_meta[b.index];
    // The backward was traced (and its view chains folded into as_strided) for contiguous output
    // gradients; autograd can hand over others, such as sum's expanded one (stride 0).
    if (g.defined()) in.push_back((g.dtype() == m.dtype ? g : g.to(m.dtype)).contiguous());
    else in.push_back(fw::zeros(m.sizes, m.dtype));  // only when no variant could be built
  }
  if (!bv->prog) return result;
  std::vector<Tensor> out;
  {
    NoGradGuard ng;
    out = bv->prog->run(in, bv->externals);
  }
  for (size_t k = 0; k < out.size(); k++) {
    int e = bv->out_edge[k];
    Tensor g = out[k];
    if (g.dtype() != p.edge_dtype[e]) g = g.to(p.edge_dtype[e]);
    result[e] = g;
  }
  return result;
}

namespace {

struct AotProgram : Program {
  std::shared_ptr<AotShared> s;
  std::string describe() const override {
    return "forward: " + s->fwd->describe() + ", saves " + std::to_string(s->n_saved) + " value(s) for backward (" +
           std::to_string(s->n_recomputed) + " recomputed there instead); backward: " + s->bwd->prog->describe();
  }
  std::vector<Tensor> run(ArrayRef<Tensor> inputs, ArrayRef<Tensor> externals) override {
    std::vector<Tensor> all;
    {
      NoGradGuard ng;
      all = s->fwd->run(inputs, externals);
    }
    std::vector<Tensor> outs(all.begin(), all.begin() + s->n_out);
    if (!fw::is_grad_enabled()) return outs;
    auto node = std::make_shared<CompiledBackward>();
    node->plan = s;
    node->seq_ = ad::next_sequence_number();
    for (size_t i = s->n_out; i < all.size(); i++) {
      Tensor t = all[i].detach();  // no grad_fn: no reference cycle through the node
      node->versions.push_back(t.impl()->version().load());
      node->saved.push_back(std::move(t));
    }
    // Captured tensors the backward reads count too (eager saves a weight it multiplies by);
    // constants the backward trace made do not.
    node->saves = !node->saved.empty() || s->bwd->reads_captured;
    for (auto& [ext, idx] : s->edges) node->next_edges_.push_back(ad::gradient_edge(ext ? externals[idx] : inputs[idx]));
    node->pre_hooks.resize(s->grad_values.size());
    for (size_t k = 0; k < s->grad_values.size(); k++) {
      node->outputs.push_back(s->grad_meta[k]);
      // Several result positions may hold the same value: they share one tensor (as in eager).
      Tensor& t = outs[s->grad_positions[k][0]];
      auto& m = t.impl()->autograd;
      m = std::make_unique<AutogradMeta>();
      m->requires_grad = true;
      m->grad_fn = node;
      m->output_nr = uint32_t(k);
      for (size_t j = 1; j < s->grad_positions[k].size(); j++) outs[s->grad_positions[k][j]] = t;
    }
    return outs;
  }
};

std::string why_not(const Graph& g) {
  for (const Writeback& w : g.writebacks) {
    if (!w.grad) continue;  // written under no_grad (running statistics): no autograd history
    int tv = w.target_kind == ValueKind::Input ? g.inputs[w.target] : g.externals[w.target];
    if (g.values[tv].requires_grad) return "an input that requires grad is written in place";
  }
  for (const Node& n : g.nodes) {
    const OpDef& d = op_def(n.op);
    bool needs = false;
    for (int v : n.in) needs = needs || (n.grad && g.values[v].requires_grad);
    if (needs && d.differentiable && !d.vjp) return std::string("op ") + d.name + " has no vjp";
  }
  return "";
}

// Note [Recompute partition]
// The first backward trace reads some forward values; saving all of them is the simplest
// partition but not the cheapest: a pointwise value such as h = x * w + b, read by gelu's vjp,
// costs the forward a full store and the backward a full load, while its inputs are alive anyway.
// Which values to save is a minimum cut (the formulation of AOTAutograd's partitioner): every
// forward value v becomes an edge v_in -> v_out whose capacity is what saving v costs (its bytes;
// zero for arguments, captured tensors and forward results, which exist regardless), each
// elementwise node gets infinite edges u_out -> v_in from its inputs, the source feeds every
// value that cannot be recomputed (arguments, captures, reductions, views, GEMMs, random draws,
// multi-output ops), and every value the backward reads feeds the sink. A cut separates the
// backward from the source: the cut edges are the values to save, and the values left on the
// sink's side are recomputed in the backward graph from them, where the recomputation fuses into
// the backward's kernels. So relu(x * w + b) saves only x, w and b, and three pointwise values
// made from the same two GEMM results save the two results instead of the three values (a greedy
// rule walking the nodes one at a time cannot see that). Capacities carry a +1 per tensor so that
// among cuts of equal bytes the one with fewer tensors wins, and of the minimum cuts the one
// nearest the sink is taken, which recomputes as little as possible. Inputs of amax/amin/norm are
// never recomputed: their vjps compare the input with the saved result bit for bit.
namespace mincut {

constexpr int64_t kInf = std::numeric_limits<int64_t>::max() / 4;

// Dinic's maximum flow on a small graph (two vertices per forward value).
struct Flow {
  struct Edge {
    int to, rev;
    int64_t cap;
  };
  std::vector<std::vector<Edge>> adj;
  std::vector<int> level, it;
  explicit Flow(int n) : adj(size_t(n)), level(size_t(n)), it(size_t(n)) {}
  void add(int a, int b, int64_t cap) {
    adj[size_t(a)].push_back({b, int(adj[size_t(b)].size()), cap});
    adj[size_t(b)].push_back({a, int(adj[size_t(a)].size()) - 1, 0});
  }
  bool bfs(int s, int t) {
    std::fill(level.begin(), level.end(), -1);
    std::vector<int> q{s};
    level[size_t(s)] = 0;
    for (size_t i = 0; i < q.size(); i++)
      for (const Edge& e : adj[size_t(q[i])])
        if (e.cap > 0 && level[size_t(e.to)] < 0) {
          level[size_t(e.to)] = level[size_t(q[i])] + 1;
          q.push_back(e.to);
        }
    return level[size_t(t)] >= 0;
  }
  int64_t push(int a, int t, int64_t f) {
    if (a == t) return f;
    for (int& i = it[size_t(a)]; i < int(adj[size_t(a)].size()); i++) {
      Edge& e = adj[size_t(a)][size_t(i)];
      if (e.cap <= 0 || level[size_t(e.to)] != level[size_t(a)] + 1) continue;
      if (int64_t d = push(e.to, t, std::min(f, e.cap))) {
        e.cap -= d;
        adj[size_t(e.to)][size_t(e.rev)].cap += d;
        return d;
      }
    }
    return 0;
  }
  int64_t run(int s, int t) {
    int64_t total = 0;
    while (bfs(s, t)) {
      std::fill(it.begin(), it.end(), 0);
      while (int64_t f = push(s, t, kInf)) total += f;
    }
    return total;
  }
  // The vertices that still reach t through edges with capacity left (after run()).
  std::vector<char> reaching(int t) const {
    std::vector<char> r(adj.size(), 0);
    std::vector<int> q{t};
    r[size_t(t)] = 1;
    for (size_t i = 0; i < q.size(); i++)
      for (const Edge& back : adj[size_t(q[i])]) {
        const Edge& fwd = adj[size_t(back.to)][size_t(back.rev)];  // back.to -> q[i]
        if (fwd.cap > 0 && !r[size_t(back.to)]) {
          r[size_t(back.to)] = 1;
          q.push_back(back.to);
        }
      }
    return r;
  }
};

}  // namespace mincut

// Values of the forward graph to recompute in backward, given the ones the backward reads
// (`saved`); the rest of what it reads is saved. Also returns the bytes the cut saves.
std::vector<char> recompute_set(const Graph& g, const std::vector<int>& saved, int64_t* saved_bytes) {
  const int V = int(g.values.size());
  std::vector<char> free(size_t(V), 0), movable(size_t(V), 0);
  for (int v : g.inputs) free[size_t(v)] = 1;
  for (int v : g.externals) free[size_t(v)] = 1;
  for (int v : g.outputs) free[size_t(v)] = 1;
  auto bytes = [&](int v) {
    int64_t n = 1;
    for (int64_t d : g.values[size_t(v)].sizes) n *= d;
    return n * int64_t(element_size(g.values[size_t(v)].dtype));
  };
  // The node making each value (passes may leave dead values behind, so not ValueInfo::index).
  std::vector<int> producer(size_t(V), -1);
  for (size_t i = 0; i < g.nodes.size(); i++)
    for (int v : g.nodes[i].out) producer[size_t(v)] = int(i);
  // amax/amin (and norm's inf case) find the elements their vjps route gradient to by comparing the
  // input with the saved result: an input recomputed by another fused kernel can differ in the last
  // bit, match nothing, and divide by a zero count (NaN). Their inputs are saved as computed.
  std::vector<char> pinned(size_t(V), 0);
  for (const Node& n : g.nodes)
    if (n.op == OpId::amax || n.op == OpId::amin || n.op == OpId::norm)
      for (int u : n.in) pinned[size_t(u)] = 1;
  const int src = 2 * V, sink = 2 * V + 1;
  mincut::Flow f(2 * V + 2);
  for (int v = 0; v < V; v++) {
    const int p = producer[size_t(v)];
    if (p >= 0 && !free[size_t(v)]) {
      const Node& n = g.nodes[size_t(p)];
      movable[size_t(v)] = n.out.size() == 1 && op_def(n.op).kind == OpKind::Elementwise && !pinned[size_t(v)];
    }
    f.add(2 * v, 2 * v + 1, free[size_t(v)] ? 0 : std::max<int64_t>(bytes(v), 0) * 2 + 1);
    if (!movable[size_t(v)]) {
      f.add(src, 2 * v, mincut::kInf);
      continue;
    }
    for (int u : g.nodes[size_t(p)].in) f.add(2 * u + 1, 2 * v, mincut::kInf);
  }
  for (int v : saved) f.add(2 * v + 1, sink, mincut::kInf);
  const int64_t cut = f.run(src, sink);
  *saved_bytes = cut / 2;
  std::vector<char> near_sink = f.reaching(sink), rec(size_t(V), 0);
  for (int v = 0; v < V; v++) rec[size_t(v)] = movable[size_t(v)] && near_sink[size_t(2 * v)];
  return rec;
}

// The values a graph's nodes and outputs read.
std::vector<char> used_values(const Graph& bw) {
  std::vector<char> used(bw.values.size(), 0);
  for (const Node& n : bw.nodes)
    for (int v : n.in) used[size_t(v)] = 1;
  for (int v : bw.outputs) used[size_t(v)] = 1;
  return used;
}

// Traces the backward of s.graph into `bw` from the output gradients marked in `present` (the
// others are absent, as autograd leaves them); forward values marked in `rec` are recomputed in
// it from their inputs (Note [Recompute partition]) instead of being read from saved
// placeholders. `out_edges` gets the argument each result is the gradient of (none: no argument
// is reached). False when a vjp cannot be traced.
bool trace_backward(const AotShared& s, const std::vector<char>& rec, const std::vector<char>& present, Graph& bw,
                    std::vector<int>& out_edges) {
  const Graph& g = s.graph;
  const size_t V = g.values.size(), G = s.grad_values.size();
  bw = Graph();
  out_edges.clear();
  try {
    Tracer T(s.placeholders, /*fullgraph=*/true, [](Graph&, ArrayRef<Tensor>) -> std::vector<Tensor> {
      FW_CHECK(false, "[fw::compile] internal: a backward trace tried to run a segment");
      return {};
    }, /*symbolic=*/true);
    std::vector<Tensor> outs;
    {
      Tracer::Scope scope(T);
      NoGradGuard ng;
      const std::vector<Tensor>& in = T.inputs();
      std::vector<Tensor> recomputed(V);
      std::function<Tensor(int)> value = [&](int v) -> Tensor {
        if (!rec[size_t(v)]) return in[G + size_t(v)];
        if (!recomputed[size_t(v)].defined()) {
          const Node& n = g.nodes[size_t(g.values[size_t(v)].index)];
          std::vector<Tensor> args;
          for (int u : n.in) args.push_back(value(u));
          recomputed[size_t(v)] = dispatch(n.op, args, n.attrs)[0];
        }
        return recomputed[size_t(v)];
      };
      std::vector<Tensor> grad(V);
      for (size_t k = 0; k < G; k++)
        if (present[k]) grad[size_t(s.grad_values[k])] = in[k];
      for (size_t i = g.nodes.size(); i-- > 0;) {
        const Node& n = g.nodes[i];
        std::vector<Tensor> gy(n.out.size());
        bool any = false;
        for (size_t k = 0; k < n.out.size(); k++) {
          gy[k] = grad[size_t(n.out[k])];
          any = any || gy[k].defined();
        }
        if (!any) continue;
        bool needs_any = false;
        std::unique_ptr<bool[]> needs(new bool[n.in.size()]);
        for (size_t j = 0; j < n.in.size(); j++) {
          needs[j] = g.values[size_t(n.in[j])].requires_grad;
          needs_any = needs_any || needs[j];
        }
        const OpDef& d = op_def(n.op);
        if (!needs_any || !d.differentiable || !n.grad) continue;
        std::vector<Tensor> ins, outs_n;
        for (int v : n.in) ins.push_back(value(v));
        for (int v : n.out) outs_n.push_back(value(v));
        VjpCtx ctx{n.attrs, ins, outs_n, needs.get()};
        Outs gin;
        gin.resize(n.in.size());
        d.vjp(ctx, gy, gin);
        for (size_t j = 0; j < n.in.size(); j++) {
          if (!needs[j] || !gin[j].defined()) continue;
          Tensor gj = gin[j];
          if (gj.dtype() != ins[j].dtype()) gj = gj.to(ins[j].dtype());
          Tensor& acc = grad[size_t(n.in[j])];
          acc = acc.defined() ? acc + gj : gj;
        }
      }
      for (size_t e = 0; e < s.edges.size(); e++) {
        auto [ext, idx] = s.edges[e];
        const Tensor& gv = grad[size_t(ext ? g.externals[size_t(idx)] : g.inputs[size_t(idx)])];
        if (!gv.defined()) continue;
        outs.push_back(gv);
        out_edges.push_back(int(e));
      }
    }
    if (outs.empty()) return true;
    if (!T.finish(outs)) return false;
    bw = std::move(T.graph());
  } catch (const fw::Error& e) {
    log::graphs("training graph runs through the interpreter: tracing the backward failed: ", e.what());
    return false;
  }
  eliminate_dead_code(bw);
  return true;
}

// Prunes a traced backward graph's unused inputs, maps the rest to output gradients and saved
// values, and runs the graph passes; the caller compiles `bw` into the result's prog. Null when
// the graph reads a forward value that is not saved.
std::shared_ptr<BwVariant> prepare_backward(const AotShared& s, Graph& bw, const std::vector<int>& out_edges) {
  const size_t G = s.grad_values.size();
  auto r = std::make_shared<BwVariant>();
  std::vector<char> used = used_values(bw);
  std::vector<int> kept;
  for (size_t i = 0; i < bw.inputs.size(); i++) {
    int v = bw.inputs[i];
    if (!used[size_t(v)]) continue;
    bw.values[size_t(v)].index = int(kept.size());
    kept.push_back(v);
    if (i < G) {
      r->inputs.push_back({true, int(i)});
      continue;
    }
    auto it = std::find(s.saved_values.begin(), s.saved_values.end(), int(i - G));
    if (it == s.saved_values.end()) return nullptr;
    r->inputs.push_back({false, int(it - s.saved_values.begin())});
  }
  bw.inputs = kept;
  r->out_edge = out_edges;
  r->externals = bw.external_tensors;
  for (size_t i = 0; i < bw.externals.size(); i++) r->reads_captured = r->reads_captured || !bw.owns(i);
  run_passes(bw);
  return r;
}

}  // namespace

// Note [Unused gradients]
// Autograd gives a compiled function's backward no gradient for outputs the loss does not use
// (after a graph break every live value is an output, so this is common). Feeding zeros there
// would differ from eager twice over: an argument reached only through such outputs would get a
// zero gradient instead of none (and grad() without allow_unused would not raise), and a zero
// gradient times a non-finite local derivative (log of 0 in an unused side computation) would
// make every gradient it meets NaN. So the backward is traced again for each set of present
// gradients it meets, without the absent ones, and kept per set; only if that trace fails does
// the full backward run with zeros.
std::shared_ptr<const BwVariant> AotShared::variant(const std::vector<char>& present) const {
  std::lock_guard<std::mutex> lock(mu);
  auto it = variants.find(present);
  if (it != variants.end()) return it->second;
  std::shared_ptr<const BwVariant> v;
  Graph bw;
  std::vector<int> out_edges;
  if (trace_backward(*this, recompute, present, bw, out_edges)) {
    if (out_edges.empty()) {
      v = std::make_shared<BwVariant>();  // no argument is reached: no gradients at all
    } else if (auto pv = prepare_backward(*this, bw, out_edges)) {
      NoGradGuard ng;
      pv->prog = backend(std::move(bw), options);
      v = pv;
    }
  }
  if (!v) v = bwd;
  log::graphs("backward for ", std::count(present.begin(), present.end(), 1), " of ", present.size(),
              " output gradient(s): ", v == bwd ? "the full graph with zeros" : "its own graph");
  variants[present] = v;
  return v;
}

std::shared_ptr<Program> aot_program(Graph g, const CompileOptions& o,
                                     std::shared_ptr<Program> (*backend)(Graph, const CompileOptions&)) {
  if (std::string w = why_not(g); !w.empty()) {
    log::graphs("training graph runs through the interpreter: ", w);
    return nullptr;
  }
  const size_t V = g.values.size();
  // Which forward outputs get a grad_fn: node-produced values that require grad.
  auto s = std::make_shared<AotShared>();
  s->n_out = g.outputs.size();
  std::unordered_map<int, int> slot_of;  // value -> output_nr
  for (size_t i = 0; i < g.outputs.size(); i++) {
    int v = g.outputs[i];
    const ValueInfo& x = g.values[v];
    if (x.kind != ValueKind::Node || !x.requires_grad || !wants_grad(x.dtype)) continue;
    auto it = slot_of.find(v);
    if (it == slot_of.end()) {
      slot_of[v] = int(s->grad_values.size());
      s->grad_values.push_back(v);
      s->grad_positions.push_back({int(i)});
      s->grad_meta.push_back({x.sizes, x.dtype});
    } else {
      s->grad_positions[it->second].push_back(int(i));
    }
  }
  std::vector<char> seen_input(V, 0);
  for (size_t i = 0; i < g.inputs.size(); i++)
    if (g.values[g.inputs[i]].requires_grad && !seen_input[g.inputs[i]]++) {
      s->edges.push_back({false, int(i)});
      s->edge_dtype.push_back(g.values[g.inputs[i]].dtype);
    }
  for (size_t i = 0; i < g.externals.size(); i++)
    if (g.values[g.externals[i]].requires_grad) {
      s->edges.push_back({true, int(i)});
      s->edge_dtype.push_back(g.values[g.externals[i]].dtype);
    }
  if (s->edges.empty() || s->grad_values.empty()) return nullptr;

  // Trace the vjps. Inputs of the tracer: one placeholder per output gradient, then one per
  // forward value (most go unused and are pruned).
  for (int v : s->grad_values) {
    ValueInfo gi = g.values[v];
    gi.strides = contiguous_strides(gi.sizes);
    gi.offset = 0;
    s->placeholders.push_back(symbolic(gi));
  }
  for (size_t v = 0; v < V; v++) s->placeholders.push_back(symbolic(g.values[v]));
  s->graph = g;
  s->options = o;
  s->backend = backend;
  const size_t G = s->grad_values.size();
  const std::vector<char> all_present(G, 1);
  Graph bw;
  std::vector<int> out_edges;
  // The forward values a backward graph reads (its inputs after the G gradients).
  auto read_values = [&] {
    std::vector<char> used = used_values(bw);
    std::vector<int> r;
    for (size_t i = G; i < bw.inputs.size(); i++)
      if (used[size_t(bw.inputs[i])]) r.push_back(int(i - G));
    return r;
  };
  std::vector<char> rec(V, 0);
  if (!trace_backward(*s, rec, all_present, bw, out_edges) || out_edges.empty()) return nullptr;
  s->saved_values = read_values();
  int64_t saved_bytes = 0;
  rec = recompute_set(g, s->saved_values, &saved_bytes);
  if (size_t nrec = size_t(std::count(rec.begin(), rec.end(), 1))) {
    s->n_recomputed = nrec;
    const size_t before = s->saved_values.size();
    if (!trace_backward(*s, rec, all_present, bw, out_edges) || out_edges.empty()) return nullptr;
    s->saved_values = read_values();
    log::graphs("partition: ", nrec, " pointwise forward value(s) recomputed in backward; ", s->saved_values.size(),
                " value(s) saved instead of ", before, " (", saved_bytes, " bytes beyond the arguments and results)");
  }
  s->recompute = rec;
  s->n_saved = s->saved_values.size();
  log::graphs("joint graph: backward has ", bw.nodes.size(), " ops and reads ", s->saved_values.size(),
              " saved forward value(s)\n", bw.dump());
  auto full = prepare_backward(*s, bw, out_edges);
  if (!full) return nullptr;
  Graph fwd = std::move(g);
  for (int v : s->saved_values) fwd.outputs.push_back(v);
  for (auto& v : fwd.values) v.requires_grad = false;  // the compiled forward records no autograd
  eliminate_common_subexpressions(fwd);
  {
    // The two graphs compile at the same time (each is one compiler process).
    auto bwd = std::async(std::launch::async, [&bw, &o, backend] {
      NoGradGuard ng;
      return backend(std::move(bw), o);
    });
    NoGradGuard ng;
    s->fwd = backend(std::move(fwd), o);
    full->prog = bwd.get();
  }
  s->bwd = full;
  auto p = std::make_shared<AotProgram>();
  p->s = s;
  return p;
}

}  // namespace fw::jit
