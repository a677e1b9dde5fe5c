// Graph IR: dump, verifier, interpreter, DCE and CSE (Note [Graph IR] in ir.h).
#include "jit/ir.h"

#include <algorithm>
#include <map>
#include <sstream>

#include "core/ops/gemm.h"


namespace fw::jit {

using fw::detail::op_def;
using fw::detail::OpKind;

const char* dtype_short(ScalarType t) {
  switch (t) {
    case kFloat: return "f32";
    case kDouble: return "f64";
    case kHalf: return "f16";
    case kBFloat16: return "bf16";
    case kLong: return "i64";
    case kInt: return "i32";
    case kShort: return "i16";
    case kChar: return "i8";
    case kByte: return "u8";
    case kBool: return "b8";
    case kComplexFloat: return "c64";
    case kComplexDouble: return "c128";
    default: return "?";
  }
}

static void list(std::ostream& os, IntArrayRef v) {
  os << '[';
  for (size_t i = 0; i < v.size(); i++) os << (i ? "," : "") << v[i];
  os << ']';
}

bool is_matrix_product(OpId op) {
  return op == OpId::mm || op == OpId::addmm || op == OpId::bmm || op == OpId::baddbmm;
}

int product_epilogues(const Graph& g, uint32_t flag) {
  int n = 0;
  for (const Node& x : g.nodes) n += is_matrix_product(x.op) && (x.attrs.flags & flag);
  return n;
}

std::string product_epilogues_note(const Graph& g) {
  std::string s;
  for (auto [flag, what] : {std::pair<uint32_t, const char*>{fw::detail::kProductRelu, "relu"},
                            std::pair<uint32_t, const char*>{fw::detail::kProductGate, "relu-mask"}})
    if (const int n = product_epilogues(g, flag)) {
      s += ", ";
      s += std::to_string(n);
      s += " product(s) with a ";
      s += what;
      s += " epilogue";
    }
  return s;
}

std::string op_attrs_str(OpId op, const OpAttrs& a) {
  std::ostringstream os;
  os.precision(17);  // every scalar exactly: a graph's text keys the cache of segment programs
  auto sep = [&, first = true]() mutable -> std::ostream& {
    os << (first ? "" : ", ");
    first = false;
    return os;
  };
  if (!a.ints.empty()) list(sep() << "ints=", a.ints);
  if (!a.ints2.empty()) list(sep() << "ints2=", a.ints2);
  if (!a.ints3.empty()) list(sep() << "ints3=", a.ints3);
  if (a.s0.type() != kLong || a.s0.toLong() != 0) sep() << "s0=" << a.s0;
  if (a.s1.type() != kLong || a.s1.toLong() != 0) sep() << "s1=" << a.s1;
  if (a.i0) sep() << "i0=" << a.i0;
  if (a.i1) sep() << "i1=" << a.i1;
  if (a.i2) sep() << "i2=" << a.i2;
  if (a.f0 != 0) sep() << "f0=" << a.f0;
  if (a.f1 != 0) sep() << "f1=" << a.f1;
  if (a.f2 != 0) sep() << "f2=" << a.f2;
  const bool product = is_matrix_product(op);
  const uint32_t epilogue = fw::detail::kProductRelu | fw::detail::kProductGate;
  if (product && (a.flags & fw::detail::kProductRelu)) sep() << "epilogue=relu";
  if (product && (a.flags & fw::detail::kProductGate)) sep() << "epilogue=gate(last input > 0)";
  if (uint32_t f = product ? a.flags & ~epilogue : a.flags) sep() << "flags=" << f;
  if (a.has_dtype()) sep() << "dtype=" << dtype_short(a.dtype);
  return os.str();
}

std::string Graph::dump() const {
  std::ostringstream os;
  auto meta = [&](int v) {
    const ValueInfo& x = values[v];
    os << dtype_short(x.dtype);
    list(os, x.sizes);
    bool contiguous = x.strides == fw::detail::contiguous_strides(x.sizes);
    if (!contiguous || x.offset) {
      os << "{strides=";
      list(os, x.strides);
      if (x.offset) os << ",offset=" << x.offset;
      os << '}';
    }
    if (x.requires_grad) os << " grad";
  };
  for (size_t i = 0; i < inputs.size(); i++) {
    os << "%" << inputs[i] << " = input(" << i << ") : ";
    meta(inputs[i]);
    os << "\n";
  }
  for (size_t i = 0; i < externals.size(); i++) {
    os << "%" << externals[i] << " = external(" << i << ") : ";
    meta(externals[i]);
    os << "\n";
  }
  for (const Node& n : nodes) {
    for (size_t k = 0; k < n.out.size(); k++) os << (k ? ", %" : "%") << n.out[k];
    os << " = " << op_def(n.op).name << "(";
    for (size_t k = 0; k < n.in.size(); k++) os << (k ? ", %" : "%") << n.in[k];
    std::string at = op_attrs_str(n.op, n.attrs);
    if (!at.empty()) os << (n.in.empty() ? "" : "; ") << at;
    os << ") : ";
    for (size_t k = 0; k < n.out.size(); k++) {
      if (k) os << ", ";
      meta(n.out[k]);
    }
    os << (n.grad ? "" : " [no_grad]") << "\n";
  }
  for (const Writeback& w : writebacks)
    os << (w.target_kind == ValueKind::Input ? "input(" : "external(") << w.target << ") <- %" << w.value << "\n";
  os << "return (";
  for (size_t i = 0; i < outputs.size(); i++) os << (i ? ", %" : "%") << outputs[i];
  os << ")\n";
  return os.str();
}

void Graph::verify() const {
  std::vector<char> defined(values.size(), 0);
  auto def = [&](int v, const char* what) {
    FW_CHECK(v >= 0 && size_t(v) < values.size(), "[jit::verify] ", what, " refers to value %", v,
             " outside the graph's ", values.size(), " values");
    FW_CHECK(!defined[v], "[jit::verify] value %", v, " is defined twice (", what, ")");
    defined[v] = 1;
  };
  auto use = [&](int v, const char* what) {
    FW_CHECK(v >= 0 && size_t(v) < values.size() && defined[v], "[jit::verify] ", what, " uses %", v,
             " before it is defined");
  };
  FW_CHECK(external_tensors.size() == externals.size(), "[jit::verify] ", externals.size(),
           " external values but ", external_tensors.size(), " captured tensors");
  for (size_t i = 0; i < inputs.size(); i++)
    if (std::find(inputs.begin(), inputs.begin() + i, inputs[i]) == inputs.begin() + i) def(inputs[i], "input");
  for (int v : externals) def(v, "external");
  for (size_t i = 0; i < nodes.size(); i++) {
    const Node& n = nodes[i];
    const char* name = op_def(n.op).name;
    for (int v : n.in) use(v, name);
    for (size_t k = 0; k < n.out.size(); k++) {
      def(n.out[k], name);
      const ValueInfo& x = values[n.out[k]];
      FW_CHECK(x.kind == ValueKind::Node && x.index == int(i) && x.out_nr == int(k), "[jit::verify] %", n.out[k],
               " does not record node ", i, " (", name, ") as its producer");
    }
  }
  for (int v : outputs) use(v, "return");
  for (const Writeback& w : writebacks) use(w.value, "writeback");
}

ReleasePlan release_plan(const Graph& g, const std::vector<std::vector<int>>& touched) {
  std::vector<int> last(g.values.size(), -1);
  for (size_t s = 0; s < touched.size(); s++)
    for (int v : touched[s]) last[v] = int(s);
  for (int v : g.outputs) last[v] = -1;
  for (const Writeback& w : g.writebacks) last[w.value] = -1;
  ReleasePlan plan(touched.size());
  for (size_t v = 0; v < last.size(); v++)
    if (last[v] >= 0) plan[size_t(last[v])].push_back(int(v));
  return plan;
}

ReleasePlan node_release_plan(const Graph& g) {
  std::vector<std::vector<int>> touched;
  for (const Node& n : g.nodes) {
    touched.emplace_back(n.in);
    touched.back().insert(touched.back().end(), n.out.begin(), n.out.end());
  }
  return release_plan(g, touched);
}

std::vector<Tensor> interpret(const Graph& g, ArrayRef<Tensor> inputs, ArrayRef<Tensor> externals,
                              const ReleasePlan* plan) {
  FW_CHECK(inputs.size() == g.inputs.size(), "[jit::interpret] the graph takes ", g.inputs.size(),
           " tensor inputs, got ", inputs.size());
  std::vector<Tensor> env(g.values.size());
  for (size_t i = 0; i < g.inputs.size(); i++) env[g.inputs[i]] = inputs[i];
  std::vector<Tensor> fresh;
  bind_externals(g, env, externals, fresh);
  std::vector<Tensor> in;
  for (const Node& n : g.nodes) {
    in.clear();
    for (int v : n.in) in.push_back(env[v]);
    AutoGradMode mode(n.grad && fw::is_grad_enabled());
    fw::detail::Outs o = fw::detail::dispatch(n.op, in, n.attrs);
    for (size_t k = 0; k < n.out.size(); k++) env[n.out[k]] = std::move(o[k]);
    if (plan)
      for (int v : (*plan)[size_t(&n - g.nodes.data())]) env[v] = Tensor();
  }
  return finish_run(g, env, inputs, externals);
}

// Note [Tensors the function made]
// A tensor the traced function made without an fw op that the tracer records (fw::zeros and
// fw::full are an allocation plus fill_, fw::tensor({...}) copies host values) reaches the graph
// as a captured tensor, and a constant fold_constants computes becomes one. A capture holds one
// such tensor for all its replays, while eager makes a new one per call: returning it, or writing
// into it (zeros() then add_(), the usual accumulator), handed every call the same tensor, so a
// caller's earlier results changed under it. The tracer marks these externals as owned
// (Graph::owned: storages born during a trace without breaks, StorageImpl::birth) and so does
// fold_constants; a run writes into a copy of an owned tensor made at the start of the run
// (bind_externals) and returns copies of owned tensors it returns unwritten (finish_run), so each
// call's results are its own, as in eager. A graph owning nothing pays a scan of its writebacks
// (usually none) per run.
void bind_externals(const Graph& g, std::vector<Tensor>& env, ArrayRef<Tensor>& externals,
                    std::vector<Tensor>& fresh) {
  FW_CHECK(externals.size() <= g.externals.size(), "[jit] the graph captures ", g.externals.size(),
           " tensors, got ", externals.size());
  bool writes_owned = false;
  for (const Writeback& w : g.writebacks)
    writes_owned = writes_owned || (w.target_kind == ValueKind::External && g.owns(size_t(w.target)));
  if (writes_owned) {
    fresh.assign(externals.begin(), externals.end());
    for (size_t i = fresh.size(); i < g.externals.size(); i++) fresh.push_back(g.external_tensors[i]);
    NoGradGuard ng;
    for (const Writeback& w : g.writebacks)
      if (w.target_kind == ValueKind::External && g.owns(size_t(w.target)) &&
          fresh[size_t(w.target)].is_same(w.target < int(externals.size()) ? externals[size_t(w.target)]
                                                                         : g.external_tensors[size_t(w.target)]))
        fresh[size_t(w.target)] = fresh[size_t(w.target)].clone();
    externals = fresh;
  }
  for (size_t i = 0; i < g.externals.size(); i++)
    env[g.externals[i]] = i < externals.size() ? externals[i] : g.external_tensors[i];
}

std::vector<Tensor> finish_run(const Graph& g, const std::vector<Tensor>& env, ArrayRef<Tensor> inputs,
                               ArrayRef<Tensor> externals) {
  std::vector<Tensor> out;
  for (int v : g.outputs) out.push_back(env[v]);
  for (const Writeback& w : g.writebacks) {
    const Tensor& dst = w.target_kind == ValueKind::Input ? inputs[w.target] : externals[w.target];
    const Tensor& src = env[w.value];
    if (!src.is_same(dst)) {
      // The write runs in the grad mode it was traced in: under no_grad (running statistics,
      // parameter updates) a plain copy; otherwise autograd's in-place rules apply, as in eager.
      AutoGradMode mode(w.grad);
      dst.copy_(src);
    }
    for (size_t i = 0; i < out.size(); i++)
      if (g.outputs[i] == w.value && !out[i].requires_grad()) out[i] = dst;
  }
  if (!g.owned.empty()) {
    NoGradGuard ng;
    for (size_t i = 0; i < out.size(); i++) {
      const ValueInfo& x = g.values[size_t(g.outputs[i])];
      if (x.kind == ValueKind::External && g.owns(size_t(x.index)) && !out[i].requires_grad()) out[i] = out[i].clone();
    }
  }
  return out;
}

// ---- passes

static bool impure(OpId op) {
  switch (op) {
    case OpId::uniform:
    case OpId::normal:
    case OpId::randint:
    case OpId::bernoulli:
    case OpId::randperm: return true;  // draw from the generator: keep them, in order
    default: return false;
  }
}

// Renumbers nothing: removes nodes whose outputs nobody uses (keeping random ops, whose draws
// keep the generator's stream identical to eager) and fixes the producer indices.
int eliminate_dead_code(Graph& g) {
  std::vector<char> live(g.values.size(), 0);
  for (int v : g.outputs) live[v] = 1;
  for (const Writeback& w : g.writebacks) live[w.value] = 1;
  std::vector<char> keep(g.nodes.size(), 0);
  for (size_t i = g.nodes.size(); i-- > 0;) {
    const Node& n = g.nodes[i];
    bool used = impure(n.op);
    for (int v : n.out) used = used || live[v];
    if (!used) continue;
    keep[i] = 1;
    for (int v : n.in) live[v] = 1;
  }
  std::vector<Node> nodes;
  for (size_t i = 0; i < g.nodes.size(); i++)
    if (keep[i]) {
      for (size_t k = 0; k < g.nodes[i].out.size(); k++) {
        ValueInfo& x = g.values[g.nodes[i].out[k]];
        x.index = int(nodes.size());
      }
      nodes.push_back(std::move(g.nodes[i]));
    }
  int removed = int(g.nodes.size() - nodes.size());
  g.nodes = std::move(nodes);
  return removed;
}

static bool same_attrs(const OpAttrs& a, const OpAttrs& b) {
  auto same_scalar = [](const Scalar& x, const Scalar& y) {
    if (x.type() != y.type()) return false;
    if (x.isComplex()) return x.toComplexDouble() == y.toComplexDouble();
    if (x.isFloatingPoint()) {
      double p = x.toDouble(), q = y.toDouble();
      return p == q || (p != p && q != q);
    }
    return x.toLong() == y.toLong();
  };
  return a.ints == b.ints && a.ints2 == b.ints2 && a.ints3 == b.ints3 && same_scalar(a.s0, b.s0) &&
         same_scalar(a.s1, b.s1) && a.i0 == b.i0 && a.i1 == b.i1 && a.i2 == b.i2 && a.f0 == b.f0 &&
         a.f1 == b.f1 && a.f2 == b.f2 && a.flags == b.flags && a.dtype == b.dtype;
}

// Two calls of the same pure op on the same values with equal attrs compute the same thing:
// later uses read the first one. Views are included (same view of the same value); node outputs
// that are returned or written back keep their identity.
int eliminate_common_subexpressions(Graph& g) {
  std::vector<int> repl(g.values.size());
  for (size_t v = 0; v < repl.size(); v++) repl[v] = int(v);
  std::multimap<std::pair<int, std::vector<int>>, size_t> seen;
  int merged = 0;
  for (size_t i = 0; i < g.nodes.size(); i++) {
    Node& n = g.nodes[i];
    for (int& v : n.in) v = repl[v];
    if (impure(n.op)) continue;
    auto key = std::make_pair(int(n.op) * 2 + int(n.grad), n.in);
    auto [lo, hi] = seen.equal_range(key);
    bool done = false;
    for (auto it = lo; it != hi && !done; ++it) {
      const Node& m = g.nodes[it->second];
      if (m.out.size() != n.out.size() || !same_attrs(m.attrs, n.attrs)) continue;
      for (size_t k = 0; k < n.out.size(); k++) repl[n.out[k]] = m.out[k];
      done = true;
      merged++;
    }
    if (!done) seen.emplace(std::move(key), i);
  }
  for (int& v : g.outputs) v = repl[v];
  for (Writeback& w : g.writebacks) w.value = repl[w.value];
  if (merged) eliminate_dead_code(g);
  return merged;
}

int fold_constants(Graph& g, int64_t max_numel) {
  std::vector<char> is_const(g.values.size(), 0);
  std::vector<Tensor> val(g.values.size());
  std::vector<char> fold(g.nodes.size(), 0);
  int folded = 0;
  for (size_t i = 0; i < g.nodes.size(); i++) {
    const Node& n = g.nodes[i];
    if (impure(n.op)) continue;
    bool all = true;
    for (int v : n.in) all = all && is_const[v];
    if (!all) continue;
    int64_t numel = 0;
    for (int v : n.out) numel += fw::detail::shape_numel(g.values[v].sizes, "fold_constants");
    if (numel > max_numel) continue;
    std::vector<Tensor> in;
    for (int v : n.in) in.push_back(val[v]);
    fw::detail::Outs o;
    try {
      NoGradGuard ng;
      o = fw::detail::dispatch(n.op, in, n.attrs);
    } catch (const fw::Error&) {
      continue;  // leave it to run (and raise) at run time
    }
    for (size_t k = 0; k < n.out.size(); k++) {
      val[n.out[k]] = o[k];
      is_const[n.out[k]] = 1;
    }
    fold[i] = 1;
    folded++;
  }
  if (!folded) return 0;
  // Constants read by the rest of the graph become externals (captured tensors).
  std::vector<char> needed(g.values.size(), 0);
  for (size_t i = 0; i < g.nodes.size(); i++)
    if (!fold[i])
      for (int v : g.nodes[i].in) needed[v] = 1;
  for (int v : g.outputs) needed[v] = 1;
  for (const Writeback& w : g.writebacks) needed[w.value] = 1;
  std::vector<Node> nodes;
  for (size_t i = 0; i < g.nodes.size(); i++) {
    if (fold[i]) {
      for (int v : g.nodes[i].out) {
        if (!needed[v]) continue;
        ValueInfo& x = g.values[v];
        x.kind = ValueKind::External;
        x.index = int(g.externals.size());
        x.out_nr = 0;
        x.requires_grad = false;
        g.owned.resize(g.externals.size(), 0);
        g.owned.push_back(1);  // a constant computed here (Note [Tensors the function made])
        g.externals.push_back(v);
        g.external_tensors.push_back(val[v]);
      }
      continue;
    }
    for (int v : g.nodes[i].out) g.values[v].index = int(nodes.size());
    nodes.push_back(std::move(g.nodes[i]));
  }
  g.nodes = std::move(nodes);
  return folded;
}

int fold_views(Graph& g) {
  std::vector<int> producer(g.values.size(), -1);
  for (size_t i = 0; i < g.nodes.size(); i++)
    for (int v : g.nodes[i].out) producer[v] = int(i);
  auto is_view = [&](int i) { return op_def(g.nodes[i].op).kind == OpKind::View && g.nodes[i].out.size() == 1; };
  int folded = 0;
  for (size_t i = 0; i < g.nodes.size(); i++) {
    Node& n = g.nodes[i];
    if (!is_view(int(i)) || n.in.empty()) continue;
    int p = producer[n.in[0]];
    if (p < 0 || !is_view(p)) continue;
    const Node& pn = g.nodes[p];
    if (g.values[pn.in[0]].dtype != g.values[n.out[0]].dtype) continue;  // dtype views stay
    const ValueInfo& o = g.values[n.out[0]];
    // Only chains that keep the root's storage offset: the root's own offset is not guarded
    // (an argument may be a slice elsewhere in its storage), and as_strided without an explicit
    // offset keeps its input's.
    if (o.offset != g.values[pn.in[0]].offset) continue;
    OpAttrs a;
    a.ints = o.sizes;
    a.ints2 = o.strides;
    n.op = OpId::as_strided;
    n.attrs = a;
    n.in = {pn.in[0]};
    folded++;
  }
  if (folded) eliminate_dead_code(g);
  return folded;
}

}  // namespace fw::jit
