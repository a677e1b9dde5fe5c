// fw::compile's engine: guards, the per-function cache of captures, recompiles, automatic dynamic
// shapes and the eager fallback past the cache limit.
//
// Note [Guards and dynamic shapes]
// A capture is valid for calls whose tensor arguments have the dtypes, ranks, sizes, strides and
// requires_grad flags seen when it was traced, the same non-tensor arguments (by value), the same
// grad mode, the same default dtype (fw::set_default_dtype: factories such as ones() read it) and
// the same autocast state (its casts are graph ops);
// captured tensors (parameters) must keep their dtype, sizes, strides and requires_grad, and a
// compiled module's parameter list must keep its identity. Strides matter because traced values
// are laid out as eager lays them out (Note [Traced layouts]). A miss
// traces again. When a miss differs from an earlier capture only in some sizes, those dimensions
// become dynamic (dynamic=nullopt) and the new capture is a family: a call with new sizes in
// dynamic dimensions re-runs the tracer (meta only: microseconds per op) and reuses the family's
// kernels, whose source takes every size as an argument, so no compiler runs; the family keeps a
// small map from concrete sizes to built programs so repeated sizes replay directly. This gives
// what symbolic sizes give (no recompilation per size) without symbolic shape arithmetic in every
// op's meta; its cost is one trace per new size. Past cache_limit captures the function runs
// eagerly, with one warning naming the guard that kept failing.
//
// Three guards come from what the trace saw rather than from the arguments' metadata: the
// train/eval flag of every module whose is_training() the trace read (Tracer::module_modes), the
// sharing of buffers between tensor arguments (part of the key: '=' one tensor, '~' one buffer),
// and, for a capture that writes into its arguments or captured tensors, which arguments share a
// buffer with a captured tensor (aliases_match).
#include <algorithm>
#include <chrono>
#include <cstring>
#include <map>
#include <mutex>
#include <set>
#include <sstream>

#include "codegen/compiler.h"
#include "core/op.h"
#include "jit/log.h"
#include "jit/program.h"
#include "jit/tracer.h"

namespace fw {

CompileOptions& CompileOptions::backend(std::string b) {
  FW_CHECK(b == "inductor" || b == "aot_eager" || b == "eager", "[fw::compile] unknown backend '", b,
           "' (expected inductor, aot_eager or eager)");
  backend_ = std::move(b);
  return *this;
}
CompileOptions& CompileOptions::mode(std::string m) {
  FW_CHECK(m == "default" || m == "max-autotune" || m == "reduce-overhead", "[fw::compile] unknown mode '", m,
           "' (expected default, max-autotune or reduce-overhead)");
  mode_ = std::move(m);
  return *this;
}
CompileOptions& CompileOptions::dynamic(std::optional<bool> d) {
  dynamic_ = d;
  return *this;
}
CompileOptions& CompileOptions::fullgraph(bool f) {
  fullgraph_ = f;
  return *this;
}
CompileOptions& CompileOptions::cache_limit(int n) {
  FW_CHECK(n >= 1, "[fw::compile] cache_limit must be at least 1, got ", n);
  cache_limit_ = n;
  return *this;
}

namespace jit {

std::string Explanation::str() const {
  std::ostringstream os;
  os << "graphs: " << graph_count << ", graph breaks: " << breaks.size() << ", recompiles: " << recompiles << "\n";
  for (size_t i = 0; i < graphs.size(); i++)
    os << "--- graph " << i << " (" << ops_per_graph[i] << " ops" << (i < programs.size() ? "; " + programs[i] : "")
       << ")\n" << graphs[i];
  for (auto& b : breaks) os << "break at " << b.op << ": " << b.reason << "\n";
  os << "guards:\n";
  for (auto& g : guards) os << "  " << g << "\n";
  return os.str();
}

namespace log {
unsigned enabled() {
  static const unsigned mask = [] {
    const char* e = std::getenv("FW_LOGS");
    if (!e) return 0u;
    std::string s(e);
    unsigned m = 0;
    std::stringstream ss(s);
    for (std::string t; std::getline(ss, t, ',');) {
      if (t == "all") m = ~0u;
      else if (t == "graphs") m |= kGraphs;
      else if (t == "guards") m |= kGuards;
      else if (t == "recompiles") m |= kRecompiles;
      else if (t == "breaks") m |= kBreaks;
      else if (t == "fusion") m |= kFusion;
      else if (t == "kernels") m |= kKernels;
      else if (t == "perf") m |= kPerf;
    }
    return m;
  }();
  return mask;
}
void emit(const char* topic, const std::string& text) {
  static std::mutex mu;
  std::lock_guard<std::mutex> l(mu);
  std::cerr << "[fw:" << topic << "] " << text;
  if (text.empty() || text.back() != '\n') std::cerr << '\n';
}
}  // namespace log

namespace detail {

void key_bytes(std::string& k, const void* p, size_t n) { k.append(static_cast<const char*>(p), n); }

namespace {

struct TensorGuard {
  ScalarType dtype;
  DimVec sizes, strides;
  bool requires_grad;
  bool contiguous;
  static TensorGuard of(const Tensor& t) {
    return {t.dtype(), DimVec(t.sizes()), DimVec(t.strides()), t.requires_grad(), t.is_contiguous()};
  }
};

std::string guard_str(const char* what, size_t i, const TensorGuard& g, const std::vector<char>* dyn) {
  std::ostringstream os;
  os << what << " " << i << ": dtype " << dtype_short(g.dtype) << ", sizes [";
  for (size_t d = 0; d < g.sizes.size(); d++)
    os << (d ? "," : "") << ((dyn && (*dyn)[d]) ? std::string("s") + std::to_string(d) : std::to_string(g.sizes[d]));
  os << "], " << (dyn ? (g.contiguous ? "contiguous" : "non-contiguous") : "strides " + fw::detail::shape_str(g.strides))
     << ", requires_grad " << (g.requires_grad ? "true" : "false");
  return os.str();
}

// One built capture: its program, graph (externals hold the captured tensors) and the guards that
// come from what its trace saw.
struct Built {
  std::shared_ptr<Program> program;
  Graph graph;
  std::vector<TensorGuard> ext;                    // the captured tensors' metadata
  std::vector<size_t> lens;                        // lengths of vector results
  std::vector<std::pair<size_t, size_t>> aliases;  // input_capture_aliases at capture
  std::vector<jit::Tracer::ModuleMode> modes;      // train/eval flags the trace read
};

struct Entry {
  std::string key;
  bool grad = true;
  ScalarType default_dtype = kFloat;  // fw::get_default_dtype() when traced (factories read it)
  bool autocast = false;              // CPU autocast was on (its casts are in the graph)
  std::vector<TensorGuard> in;
  std::vector<std::vector<char>> dyn;  // per input, per dim: size not guarded
  bool dynamic = false;
  bool retrace = false;  // broke or leaked: traced on every call
  Built built;  // a static capture (empty for families and entries re-traced per call)
  // A dynamic family's captures by concrete input sizes and strides (vector lengths, captured
  // tensors and module modes may differ between sizes).
  std::map<std::vector<int64_t>, Built> by_shape;
};

}  // namespace

struct CompiledFn::State {
  CompileOptions opts;
  std::string name;
  std::mutex mu;
  std::vector<std::unique_ptr<Entry>> entries;
  std::vector<std::vector<char>> dyn;  // learned dynamic dims per input
  std::function<std::vector<Tensor>()> tensor_list;
  std::function<std::string()> state_key;
  std::vector<const TensorImpl*> tensor_ids;
  std::map<std::string, std::shared_ptr<Program>> segment_cache;  // graph text -> program
  bool warned = false;
  std::string last_miss;
  Explanation expl;
};

namespace {
std::mutex g_registry_mu;
std::set<CompiledFn::State*>& registry() {
  static std::set<CompiledFn::State*> r;
  return r;
}

// Note [Argument keys]
// The key of a call spells its non-tensor arguments and its arguments' structure, one leaf per
// argument in order (jit.h, Arg<>::flatten): 'T' a tensor, 'U' an undefined one; 'V<n>:' and one
// 'T' or 'U' per element a vector of n tensors; 'O0' an empty optional, 'Ou' one holding an
// undefined tensor, 'O1' one holding a tensor; 'S<t><w>' and
// w bytes a number (t: i integer, u unsigned, f floating, b bool, e enum); 's<n>:' and n bytes a
// string; '(' and ')' around a tuple's leaves. CompiledFn::call appends the aliasing between
// tensor arguments ('=i:j' one tensor, '~i:j' one buffer) and the module's flags ('|M...').
// Decoding two keys names the argument that differs in a recompile or cache-limit message;
// "argument #k" counts leaves, so the members of a tuple or pair are numbered one by one.
namespace {
struct KeyLeaf {
  char kind;
  std::string text;  // printable value
};

bool decode_key(const std::string& k, std::vector<KeyLeaf>& leaves, std::string& tail) {
  size_t i = 0;
  auto number = [&](size_t& n) {
    size_t j = i;
    while (i < k.size() && k[i] >= '0' && k[i] <= '9') i++;
    if (i == j || i >= k.size() || k[i] != ':') return false;
    n = std::stoul(k.substr(j, i - j));
    i++;
    return true;
  };
  while (i < k.size()) {
    char c = k[i++];
    size_t n = 0;
    switch (c) {
      case 'T': leaves.push_back({'T', "a tensor"}); break;
      case 'U': leaves.push_back({'T', "an undefined tensor"}); break;
      case '(': case ')': break;
      case 'V': {
        if (!number(n) || i + n > k.size()) return false;
        const size_t undefined = size_t(std::count(k.begin() + long(i), k.begin() + long(i + n), 'U'));
        i += n;  // one 'T' or 'U' per element
        leaves.push_back({'V', "a vector of " + std::to_string(n) + " tensors" +
                                   (undefined ? " (" + std::to_string(undefined) + " undefined)" : "")});
        break;
      }
      case 'O':
        if (i >= k.size()) return false;
        c = k[i++];
        leaves.push_back({'O', c == '1' ? "a tensor" : c == 'u' ? "an undefined tensor" : "nullopt"});
        break;
      case 's':
        if (!number(n) || i + n > k.size()) return false;
        leaves.push_back({'s', "\"" + k.substr(i, n) + "\""});
        i += n;
        break;
      case 'S': {
        if (i + 2 > k.size()) return false;
        char t = k[i], w = char(k[i + 1] - '0');
        i += 2;
        if (w < 1 || w > 8 || i + size_t(w) > k.size()) return false;
        unsigned char b[8] = {0};
        std::memcpy(b, k.data() + i, size_t(w));
        i += size_t(w);
        std::ostringstream os;
        if (t == 'f' && w == 8) { double v; std::memcpy(&v, b, 8); os << v; }
        else if (t == 'f' && w == 4) { float v; std::memcpy(&v, b, 4); os << v; }
        else if (t == 'b') os << (b[0] ? "true" : "false");
        else {
          uint64_t u = 0;
          std::memcpy(&u, b, size_t(w));
          if (t == 'u') os << u;
          else os << (w < 8 && (u >> (8 * w - 1)) ? int64_t(u | (~uint64_t(0) << (8 * w))) : int64_t(u));
        }
        leaves.push_back({'S', os.str()});
        break;
      }
      default:
        tail = k.substr(i - 1);
        return true;
    }
  }
  return true;
}
}  // namespace

std::string describe_key_change(const std::string& was, const std::string& now) {
  std::vector<KeyLeaf> a, b;
  std::string ta, tb;
  if (decode_key(was, a, ta) && decode_key(now, b, tb)) {
    if (a.size() != b.size())
      return "the number of arguments changed from " + std::to_string(a.size()) + " to " + std::to_string(b.size());
    for (size_t i = 0; i < a.size(); i++)
      if (a[i].kind != b[i].kind || a[i].text != b[i].text)
        return "argument #" + std::to_string(i) + " was " + a[i].text + ", now " + b[i].text;
    auto part = [](const std::string& t, char c) {
      std::string r;
      for (size_t p = 0; p < t.size();) {
        size_t q = t.find_first_of("=~|", p + 1);
        if (q == std::string::npos) q = t.size();
        if (t[p] == c || (c == '=' && t[p] == '~')) r += t.substr(p, q - p);
        p = q;
      }
      return r;
    };
    if (part(ta, '=') != part(tb, '='))
      return "which tensor arguments are the same tensor or share memory changed";
    if (part(ta, '|') != part(tb, '|')) return "the train/eval mode of the compiled module or one of its submodules changed";
  }
  return "a non-tensor argument, the arguments' structure or aliasing, or the module's train/eval state changed";
}

// Pairs (input, captured tensor) that share a storage.
std::vector<std::pair<size_t, size_t>> input_capture_aliases(const std::vector<Tensor>& in, const Graph& g) {
  std::vector<std::pair<size_t, size_t>> r;
  for (size_t i = 0; i < in.size(); i++)
    for (size_t j = 0; j < g.external_tensors.size(); j++)
      if (in[i].impl()->storage == g.external_tensors[j].impl()->storage) r.push_back({i, j});
  return r;
}

// A capture that writes into its arguments or captured tensors assumed the sharing it saw between
// them (an argument that is a view of a captured buffer sees that buffer's writes): the call must
// share the same way. Captures that write nothing read the same values either way.
bool aliases_match(const std::vector<Tensor>& in, const Graph& g, const std::vector<std::pair<size_t, size_t>>& seen) {
  if (g.writebacks.empty()) return true;
  if (seen.empty()) {  // the common case, without allocating
    for (const Tensor& t : in)
      for (const Tensor& x : g.external_tensors)
        if (t.impl()->storage == x.impl()->storage) return false;
    return true;
  }
  return input_capture_aliases(in, g) == seen;
}

// The module whose train/eval flag the capture read and that now has the other flag, or null. A
// module destroyed since (one the function built for itself) cannot be reached by a replay.
std::shared_ptr<const nn::Module> changed_mode(const std::vector<jit::Tracer::ModuleMode>& modes) {
  for (const auto& mm : modes)
    if (auto m = mm.weak.lock(); m && m->is_training() != mm.training) return m;
  return nullptr;
}

std::string miss_reason(const Entry& e, const std::vector<Tensor>& in, const std::string& key, bool grad) {
  if (e.key != key) return describe_key_change(e.key, key);
  if (auto m = changed_mode(e.built.modes)) return "module " + m->name() + " switched to " + (m->is_training() ? "train" : "eval") + " mode";
  if (e.grad != grad) return std::string("grad mode changed to ") + (grad ? "enabled" : "disabled");
  if (e.default_dtype != get_default_dtype())
    return std::string("default dtype changed from ") + dtype_str(e.default_dtype) + " to " +
           dtype_str(get_default_dtype());
  if (e.autocast != fw::detail::tls().autocast)
    return std::string("autocast ") + (e.autocast ? "disabled" : "enabled") + " since the capture";
  for (size_t i = 0; i < in.size(); i++) {
    const TensorGuard& g = e.in[i];
    const Tensor& t = in[i];
    std::ostringstream os;
    os << "input " << i << ": ";
    if (t.dtype() != g.dtype) return os.str() + "dtype was " + dtype_short(g.dtype) + ", now " + dtype_short(t.dtype());
    if (size_t(t.dim()) != g.sizes.size())
      return os.str() + "rank was " + std::to_string(g.sizes.size()) + ", now " + std::to_string(t.dim());
    for (int64_t d = 0; d < t.dim(); d++)
      if (!e.dyn[i][d] && t.sizes()[d] != g.sizes[d])
        return os.str() + "size of dim " + std::to_string(d) + " was " + std::to_string(g.sizes[d]) + ", now " +
               std::to_string(t.sizes()[d]);
    if (t.requires_grad() != g.requires_grad) return os.str() + "requires_grad changed";
    if (!e.dynamic && !t.strides().equals(g.strides))
      return os.str() + "strides were " + fw::detail::shape_str(g.strides) + ", now " + fw::detail::shape_str(t.strides());
    if (e.dynamic && t.is_contiguous() != g.contiguous) return os.str() + "contiguity changed";
  }
  for (size_t j = 0; j < e.built.ext.size(); j++) {
    const Tensor& t = e.built.graph.external_tensors[j];
    const TensorGuard& g = e.built.ext[j];
    if (t.dtype() != g.dtype || !t.sizes().equals(g.sizes) || !t.strides().equals(g.strides) ||
        t.requires_grad() != g.requires_grad)
      return "captured tensor " + std::to_string(j) + " changed dtype, sizes, strides or requires_grad";
  }
  if (!aliases_match(in, e.built.graph, e.built.aliases))
    return "which arguments share memory with a captured tensor the function writes changed";
  return "";
}

// The captured tensors still have the dtype, sizes, strides and requires_grad of the capture.
bool externals_match(const Graph& g, const std::vector<TensorGuard>& ext) {
  for (size_t j = 0; j < ext.size(); j++) {
    const TensorImpl* t = g.external_tensors[j].impl().get();
    const TensorGuard& x = ext[j];
    bool rg = t->autograd && t->autograd->requires_grad;
    if (t->dtype != x.dtype || !(t->sizes == x.sizes) || !(t->strides == x.strides) || rg != x.requires_grad)
      return false;
  }
  return true;
}

// The guards a capture's trace contributed still hold for a call with these inputs (trivially so
// for an empty Built).
bool still_valid(const Built& b, const std::vector<Tensor>& in) {
  return externals_match(b.graph, b.ext) && aliases_match(in, b.graph, b.aliases) && !changed_mode(b.modes);
}

bool matches(const Entry& e, const std::vector<Tensor>& in, const std::string& key, bool grad) {
  if (e.key != key || e.grad != grad || e.in.size() != in.size() || e.default_dtype != get_default_dtype() ||
      e.autocast != fw::detail::tls().autocast)
    return false;
  for (size_t i = 0; i < in.size(); i++) {
    const TensorGuard& g = e.in[i];
    const TensorImpl* t = in[i].impl().get();
    if (t->dtype != g.dtype || t->sizes.size() != g.sizes.size()) return false;
    bool rg = t->autograd && t->autograd->requires_grad;
    if (rg != g.requires_grad) return false;
    if (e.dynamic) {
      for (size_t d = 0; d < g.sizes.size(); d++)
        if (!e.dyn[i][d] && t->sizes[d] != g.sizes[d]) return false;
      if (t->contiguous != g.contiguous) return false;
    } else {
      if (!(t->sizes == g.sizes) || !(t->strides == g.strides)) return false;
    }
  }
  return still_valid(e.built, in);
}

}  // namespace

CompiledFn::CompiledFn(CompileOptions o, std::string name) : s_(std::make_unique<State>()) {
  s_->opts = std::move(o);
  s_->name = std::move(name);
  std::lock_guard<std::mutex> l(g_registry_mu);
  registry().insert(s_.get());
}

CompiledFn::~CompiledFn() {
  std::lock_guard<std::mutex> l(g_registry_mu);
  registry().erase(s_.get());
}

void CompiledFn::guard_tensors(std::function<std::vector<Tensor>()> list) {
  s_->tensor_list = std::move(list);
  for (auto& t : s_->tensor_list()) s_->tensor_ids.push_back(t.impl().get());
}

void CompiledFn::guard_state(std::function<std::string()> key) { s_->state_key = std::move(key); }

Explanation CompiledFn::explain() const {
  std::lock_guard<std::mutex> l(s_->mu);
  return s_->expl;
}

namespace {

struct Captured {
  bool replayable = false;
  Graph graph;
  std::vector<Tensor> results;  // when not replayable: the real results of this call
  std::vector<size_t> lens;
  std::vector<jit::Tracer::ModuleMode> modes;
};

// Traces run(inputs). Segments that run during the trace (graph breaks) are built through the
// function's segment cache.
Captured capture(CompiledFn::State& s, const std::vector<Tensor>& inputs, const CompiledFn::Runner& run) {
  auto seg_runner = [&s](Graph& g, ArrayRef<Tensor> ins) {
    std::string text = g.dump();
    std::shared_ptr<Program> p;
    {
      auto it = s.segment_cache.find(text);
      if (it != s.segment_cache.end()) p = it->second;
    }
    if (!p) {
      log::graphs(s.name, ": segment graph\n", text);
      s.expl.graphs.push_back(text);
      s.expl.ops_per_graph.push_back(int(g.nodes.size()));
      s.expl.graph_count++;
      p = build_program(g, s.opts);
      s.expl.programs.push_back(p->describe());
      if (s.segment_cache.size() > 256) s.segment_cache.clear();
      s.segment_cache[text] = p;
    }
    return p->run(ins, g.external_tensors);
  };
  Tracer T(inputs, s.opts.fullgraph(), seg_runner);
  T.set_decompose(s.opts.backend() == "inductor");
  Captured c;
  std::vector<Tensor> outs;
  try {
    Tracer::Scope scope(T);
    outs = run(T.inputs(), c.lens);
  } catch (...) {
    // In-place writes into arguments made before the throw happened in eager too. If running
    // them fails as well, the function's own exception is the one to report.
    try {
      T.flush_after_throw();
    } catch (...) {
    }
    throw;
  }
  c.replayable = T.finish(outs);
  outs.clear();
  // Each distinct break once: a function that breaks is traced on every call.
  auto note = [&s](const std::string& op, const std::string& reason) {
    for (const auto& b : s.expl.breaks)
      if (b.op == op && b.reason == reason) return false;
    s.expl.breaks.push_back({op, reason});
    return true;
  };
  for (auto& b : T.breaks()) note(b.op, b.reason);
  for (auto& n : T.escape_notes)
    if (note("escape", n)) log::breaks(s.name, ": ", n);
  c.modes = T.module_modes();
  if (c.replayable) c.graph = std::move(T.graph());
  else c.results = std::move(T.results());
  return c;
}

std::vector<int64_t> shape_key(const std::vector<Tensor>& in) {
  std::vector<int64_t> k;
  for (auto& t : in) {
    k.push_back(t.dim());
    for (int64_t s : t.sizes()) k.push_back(s);
    for (int64_t s : t.strides()) k.push_back(s);
  }
  return k;
}

}  // namespace

CompiledFn::Result CompiledFn::call(const std::vector<Tensor>& inputs, const std::string& key_in, const Runner& run) {
  Result r;
  // Arguments that are the same tensor are one graph value: the aliasing pattern is guarded too.
  const std::string* keyp = &key_in;
  std::string aliased;
  // Arguments that are distinct tensors over one buffer (views of each other) see each other's
  // writes: the pattern is part of the key too, and the tracer breaks the graph on such writes.
  for (size_t i = 1; i < inputs.size(); i++) {
    size_t j = 0;
    while (j < i && inputs[i].impl() != inputs[j].impl()) j++;  // the same tensor first: one value
    const char* how = "=";
    if (j == i) {
      j = 0;
      while (j < i && inputs[i].impl()->storage != inputs[j].impl()->storage) j++;
      how = "~";
    }
    if (j == i) continue;
    if (aliased.empty()) aliased = key_in;
    aliased += how + std::to_string(i) + ":" + std::to_string(j);
  }
  if (!aliased.empty()) keyp = &aliased;
  if (s_->state_key) {  // module train/eval flags
    if (aliased.empty()) aliased = key_in;
    aliased += "|M" + s_->state_key();
    keyp = &aliased;
  }
  const std::string& key = *keyp;
  if (fw::detail::tls().tracer) {  // called inside another capture: trace through it
    r.outs = run(inputs, r.lens);
    return r;
  }
  State& s = *s_;
  std::unique_lock<std::mutex> lock(s.mu);
  bool grad = fw::detail::tls().grad_enabled;
  if (s.tensor_list) {
    std::vector<Tensor> ts = s.tensor_list();
    bool same = ts.size() == s.tensor_ids.size();
    for (size_t i = 0; same && i < ts.size(); i++) same = ts[i].impl().get() == s.tensor_ids[i];
    if (!same) {
      log::recompiles(s.name, ": the module's parameters or buffers were replaced; dropping ", s.entries.size(),
                      " capture(s)");
      s.entries.clear();
      s.tensor_ids.clear();
      for (auto& t : ts) s.tensor_ids.push_back(t.impl().get());
    }
  }
  Entry* hit = nullptr;
  bool fresh = false;  // hit was made for this call
  for (auto& e : s.entries)
    if (matches(*e, inputs, key, grad)) {
      hit = e.get();
      break;
    }
  if (hit && !hit->retrace && !hit->dynamic) {
    // What the run needs is copied out under the lock: another thread may drop the entry
    // (reset(), a module whose parameters were replaced) while this run goes on.
    std::shared_ptr<Program> p = hit->built.program;
    r.lens = hit->built.lens;
    std::vector<Tensor> ext = hit->built.graph.external_tensors;
    lock.unlock();
    r.outs = p->run(inputs, ext);
    return r;
  }
  if (!hit) {
    std::string why = s.entries.empty() ? "first call" : miss_reason(*s.entries.back(), inputs, key, grad);
    if (int(s.entries.size()) >= s.opts.cache_limit()) {
      if (!s.warned) {
        s.warned = true;
        std::cerr << "[fw::compile] warning: " << s.name << " hit cache_limit (" << s.opts.cache_limit()
                  << "); running it eagerly from now on. The guard that kept failing: " << why << "\n";
      }
      lock.unlock();
      r.outs = run(inputs, r.lens);
      return r;
    }
    if (!s.entries.empty()) {
      s.expl.recompiles++;
      log::recompiles(s.name, ": recompiling (", why, ")");
    }
    // Automatic dynamic shapes: dims whose size changed against a capture of the same signature.
    if (s.dyn.size() != inputs.size()) {
      s.dyn.assign(inputs.size(), {});
      for (size_t i = 0; i < inputs.size(); i++) s.dyn[i].assign(inputs[i].dim(), 0);
    }
    bool dynamic = false;
    if (s.opts.dynamic() == true) {
      for (size_t i = 0; i < inputs.size(); i++) s.dyn[i].assign(inputs[i].dim(), 1);
      dynamic = true;
    } else if (!s.opts.dynamic().has_value()) {
      for (auto& e : s.entries) {
        if (e->key != key || e->grad != grad || e->in.size() != inputs.size()) continue;
        bool same_sig = true;
        for (size_t i = 0; i < inputs.size() && same_sig; i++)
          same_sig = e->in[i].dtype == inputs[i].dtype() && int64_t(e->in[i].sizes.size()) == inputs[i].dim() &&
                     e->in[i].requires_grad == inputs[i].requires_grad();
        if (!same_sig) continue;
        for (size_t i = 0; i < inputs.size(); i++) {
          if (s.dyn[i].size() != size_t(inputs[i].dim())) s.dyn[i].assign(inputs[i].dim(), 0);
          for (int64_t d = 0; d < inputs[i].dim(); d++)
            if (e->in[i].sizes[d] != inputs[i].sizes()[d]) {
              if (!s.dyn[i][d]) log::recompiles(s.name, ": input ", i, " dim ", d, " is dynamic from now on");
              s.dyn[i][d] = 1;
              dynamic = true;
            }
        }
      }
    }
    auto e = std::make_unique<Entry>();
    e->key = key;
    e->grad = grad;
    e->default_dtype = get_default_dtype();
    e->autocast = fw::detail::tls().autocast;
    for (size_t i = 0; i < inputs.size(); i++) {
      e->in.push_back(TensorGuard::of(inputs[i]));
      std::vector<char> d(inputs[i].dim(), 0);
      if (dynamic && s.dyn[i].size() == d.size()) d = s.dyn[i];
      e->dyn.push_back(d);
    }
    e->dynamic = dynamic;
    hit = e.get();
    s.entries.push_back(std::move(e));
    fresh = true;
  }
  Entry& e = *hit;
  std::vector<int64_t> skey;
  if (e.dynamic && !e.retrace) {
    skey = shape_key(inputs);
    auto it = e.by_shape.find(skey);
    if (it != e.by_shape.end() && still_valid(it->second, inputs))
      return {it->second.program->run(inputs, it->second.graph.external_tensors), it->second.lens};
  }
  size_t nbreaks = s.expl.breaks.size();
  auto t0 = std::chrono::steady_clock::now();
  // If tracing or building throws (the function, an op's checks, the host compiler), an entry made
  // for this call has nothing to replay: drop it, or the next call would match it and run nothing.
  struct DropUnfinished {
    State& s;
    Entry* e;
    bool armed;
    ~DropUnfinished() {
      if (armed && !s.entries.empty() && s.entries.back().get() == e) s.entries.pop_back();
    }
  } drop{s, hit, fresh};
  Captured c = capture(s, inputs, run);
  auto ms_since = [](std::chrono::steady_clock::time_point t) {
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t).count();
  };
  log::perf(s.name, ": traced in ", ms_since(t0), " ms (", c.replayable ? "replayable" : "re-traced per call", ")");
  r.lens = c.lens;
  // The guard list of this capture (for explain and FW_LOGS=guards).
  s.expl.guards.clear();
  s.expl.guards.push_back(std::string("grad mode ") + (grad ? "enabled" : "disabled"));
  s.expl.guards.push_back(std::string("default dtype ") + dtype_str(e.default_dtype));
  if (e.autocast) s.expl.guards.push_back("CPU autocast to bfloat16 enabled");
  if (!key.empty()) s.expl.guards.push_back("non-tensor arguments equal to those of the capture (by value)");
  for (size_t i = 0; i < inputs.size(); i++)
    s.expl.guards.push_back(guard_str("input", i, e.in[i], e.dynamic ? &e.dyn[i] : nullptr));
  if (!c.replayable) {
    drop.armed = false;
    e.retrace = true;
    if (s.expl.breaks.size() != nbreaks)
      log::guards(s.name, ": re-traced on every call (graph breaks); kernels are cached");
    return {std::move(c.results), c.lens};
  }
  for (const auto& mm : c.modes)
    if (auto m = mm.weak.lock())
      s.expl.guards.push_back("module " + m->name() + " in " + (mm.training ? "train" : "eval") + " mode");
  for (size_t j = 0; j < c.graph.external_tensors.size(); j++)
    s.expl.guards.push_back(guard_str("captured tensor", j, TensorGuard::of(c.graph.external_tensors[j]), nullptr) +
                            " (identity)");
  if (log::enabled() & log::kGuards)
    for (auto& g : s.expl.guards) log::guards(s.name, ": ", g);
  std::string text = c.graph.dump();
  log::graphs(s.name, ": captured graph\n", text);
  s.expl.graphs.push_back(text);
  s.expl.ops_per_graph.push_back(int(c.graph.nodes.size()));
  s.expl.graph_count++;
  std::vector<TensorGuard> ext;
  for (auto& t : c.graph.external_tensors) ext.push_back(TensorGuard::of(t));
  auto t1 = std::chrono::steady_clock::now();
  std::shared_ptr<Program> p = build_program(c.graph, s.opts);
  s.expl.programs.push_back(p->describe());
  log::perf(s.name, ": built in ", ms_since(t1), " ms: ", s.expl.programs.back());
  std::vector<std::pair<size_t, size_t>> aliases = input_capture_aliases(inputs, c.graph);
  if (e.dynamic && e.by_shape.size() >= 64) e.by_shape.clear();
  Built& slot = e.dynamic ? e.by_shape[skey] : e.built;
  slot = {p, std::move(c.graph), std::move(ext), c.lens, std::move(aliases), c.modes};
  drop.armed = false;
  std::vector<Tensor> ext_now = slot.graph.external_tensors;  // the slot may be dropped once unlocked
  lock.unlock();
  r.outs = p->run(inputs, ext_now);
  return r;
}

}  // namespace detail

void reset() {
  std::lock_guard<std::mutex> l(detail::g_registry_mu);
  for (auto* s : detail::registry()) {
    std::lock_guard<std::mutex> l2(s->mu);
    s->entries.clear();
    s->dyn.clear();
    s->segment_cache.clear();
    s->warned = false;
    s->expl = Explanation{};
  }
  codegen::clear_memory_cache();
}

}  // namespace jit
}  // namespace fw
