// fw::compile: capture a function's op sequence into a graph by tracing, guard it, and replay it
// compiled (DESIGN.md §6-7; the model is torch.compile). Link fw::jit.
//
//   auto f = fw::compile([](const fw::Tensor& x, const fw::Tensor& y) { return (x * y).relu().sum(); });
//   fw::Tensor r = f(a, b);           // first call: trace + compile; later calls: guard check + replay
//   auto m = fw::compile(model);      // a module: same forward signature, parameters stay live
//
// Contract (as torch.jit.trace, with graph breaks on top): the function is a function of its tensor
// arguments, its scalar arguments (guarded by value) and the tensors it captures (parameters and
// buffers, read live at every call). Python-style side effects that do not go through fw ops
// (counters, printing of non-tensor values) happen only while tracing. Reading tensor values
// (item(), data_ptr(), printing, nonzero, boolean masks) is a graph break: the prefix runs, the
// value is real, and the function is re-traced on every call so data-dependent control flow stays
// correct (kernels are cached). Arguments may be Tensor, std::vector<Tensor>, std::optional<Tensor>,
// tuples/pairs of those, arithmetic values, enums and strings; results may be Tensor,
// std::vector<Tensor>, tuples/pairs of those, or void.
#pragma once
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "fw/nn/module.h"
#include "fw/tensor.h"

namespace fw {

class CompileOptions {
 public:
  // "inductor" (fused C++ kernels; default), "aot_eager" (the captured forward and backward graphs
  // run with eager kernels) or "eager" (the captured graph runs with eager kernels).
  CompileOptions& backend(std::string b);
  // "default" | "max-autotune" (the first run of each graph times every fused kernel against its
  // ops' eager kernels and keeps the faster) | "reduce-overhead" (accepted; same as default on
  // the CPU, where replay overhead is already sub-microsecond).
  CompileOptions& mode(std::string m);
  // nullopt: a dimension becomes symbolic after its size changes once; true: every dimension is
  // symbolic from the start; false: every new size is a new specialisation.
  CompileOptions& dynamic(std::optional<bool> d);
  CompileOptions& fullgraph(bool f);    // a graph break becomes an error naming the op
  CompileOptions& cache_limit(int n);   // specialisations kept before falling back to eager

  const std::string& backend() const { return backend_; }
  const std::string& mode() const { return mode_; }
  std::optional<bool> dynamic() const { return dynamic_; }
  bool fullgraph() const { return fullgraph_; }
  int cache_limit() const { return cache_limit_; }

 private:
  std::string backend_ = "inductor", mode_ = "default";
  std::optional<bool> dynamic_;
  bool fullgraph_ = false;
  int cache_limit_ = 8;
};

namespace jit {

// What fw::jit::explain (and Compiled::explain) report about the captures made so far.
struct Explanation {
  struct Break {
    std::string op, reason;
  };
  int graph_count = 0;                 // graphs captured (segments count separately)
  std::vector<std::string> graphs;     // each graph's text
  std::vector<int> ops_per_graph;
  // Per graph, how it runs: fused kernels and extern ops; for a training graph also what its
  // forward saves for backward and how many values backward recomputes instead.
  std::vector<std::string> programs;
  std::vector<Break> breaks;
  std::vector<std::string> guards;     // human-readable guard list of the latest capture
  int recompiles = 0;
  std::string str() const;
};

// Drops every in-memory cache (captured graphs of all compiled functions, loaded kernels) and
// what their explain() reports.
void reset();

namespace detail {

struct Flat {
  std::vector<Tensor> tensors;
  std::string key;  // non-tensor arguments by value, plus the arguments' structure
};
void key_bytes(std::string& k, const void* p, size_t n);

template <class T> struct dependent_false : std::false_type {};

template <class T, class = void>
struct Arg {
  static_assert(dependent_false<T>::value,
                "fw::compile: unsupported argument type (use Tensor, std::vector<Tensor>, std::optional<Tensor>, "
                "tuples of those, arithmetic values, enums or strings; capture other objects in the lambda)");
};
// An undefined Tensor (Tensor(), as libtorch code passes for "none") is part of the key and no
// graph input; the function sees an undefined Tensor in its place.
template <> struct Arg<Tensor> {
  static void flatten(Flat& f, const Tensor& t) {
    f.key += t.defined() ? 'T' : 'U';
    if (t.defined()) f.tensors.push_back(t);
  }
  static Tensor rebuild(const Tensor& o, const Tensor*& next) { return o.defined() ? *next++ : Tensor(); }
};
template <> struct Arg<std::vector<Tensor>> {
  static void flatten(Flat& f, const std::vector<Tensor>& v) {
    f.key += 'V' + std::to_string(v.size()) + ':';
    for (auto& t : v) {
      f.key += t.defined() ? 'T' : 'U';
      if (t.defined()) f.tensors.push_back(t);
    }
  }
  static std::vector<Tensor> rebuild(const std::vector<Tensor>& o, const Tensor*& next) {
    std::vector<Tensor> r;
    r.reserve(o.size());
    for (auto& t : o) r.push_back(t.defined() ? *next++ : Tensor());
    return r;
  }
};
template <> struct Arg<std::optional<Tensor>> {
  static void flatten(Flat& f, const std::optional<Tensor>& v) {
    bool has = v && v->defined();
    f.key += has ? "O1" : v ? "Ou" : "O0";  // Note [Argument keys] in jit/compile.cpp
    if (has) f.tensors.push_back(*v);
  }
  static std::optional<Tensor> rebuild(const std::optional<Tensor>& o, const Tensor*& next) {
    if (o && o->defined()) return *next++;
    return o;
  }
};
template <> struct Arg<std::nullopt_t> {  // f(x, std::nullopt) for an optional<Tensor> parameter
  static void flatten(Flat& f, std::nullopt_t) { f.key += "O0"; }
  static std::nullopt_t rebuild(std::nullopt_t, const Tensor*&) { return std::nullopt; }
};
template <class T>
struct Arg<T, std::enable_if_t<std::is_arithmetic_v<T> || std::is_enum_v<T>>> {
  static void flatten(Flat& f, const T& v) {
    f.key += 'S';
    f.key += std::is_same_v<T, bool> ? 'b' : std::is_enum_v<T> ? 'e' : std::is_floating_point_v<T> ? 'f'
           : std::is_unsigned_v<T> ? 'u' : 'i';
    f.key += char('0' + sizeof(T));
    key_bytes(f.key, &v, sizeof(T));
  }
  static T rebuild(const T& o, const Tensor*&) { return o; }
};
template <> struct Arg<std::string> {
  static void flatten(Flat& f, const std::string& v) {
    f.key += 's' + std::to_string(v.size()) + ':' + v;
  }
  static std::string rebuild(const std::string& o, const Tensor*&) { return o; }
};
template <class... T> struct Arg<std::tuple<T...>> {
  static void flatten(Flat& f, const std::tuple<T...>& v) {
    f.key += '(';
    std::apply([&](const auto&... e) { (Arg<std::decay_t<decltype(e)>>::flatten(f, e), ...); }, v);
    f.key += ')';
  }
  static std::tuple<T...> rebuild(const std::tuple<T...>& o, const Tensor*& next) {
    return std::apply([&](const auto&... e) { return std::tuple<T...>{Arg<std::decay_t<decltype(e)>>::rebuild(e, next)...}; }, o);
  }
};
template <class A, class B> struct Arg<std::pair<A, B>> {
  static void flatten(Flat& f, const std::pair<A, B>& v) {
    Arg<A>::flatten(f, v.first);
    Arg<B>::flatten(f, v.second);
  }
  static std::pair<A, B> rebuild(const std::pair<A, B>& o, const Tensor*& next) {
    A a = Arg<A>::rebuild(o.first, next);
    return {std::move(a), Arg<B>::rebuild(o.second, next)};
  }
};

// Results: flattened to tensors; vector lengths are recorded at capture time.
template <class T> struct Out {
  static_assert(dependent_false<T>::value,
                "fw::compile: unsupported result type (return Tensor, std::vector<Tensor>, tuples/pairs of those, "
                "or nothing)");
};
template <> struct Out<Tensor> {
  static void flatten(std::vector<Tensor>& o, std::vector<size_t>&, const Tensor& t) { o.push_back(t); }
  static Tensor build(const std::vector<Tensor>& o, size_t& i, const std::vector<size_t>&, size_t&) { return o[i++]; }
};
template <> struct Out<std::vector<Tensor>> {
  static void flatten(std::vector<Tensor>& o, std::vector<size_t>& lens, const std::vector<Tensor>& v) {
    lens.push_back(v.size());
    o.insert(o.end(), v.begin(), v.end());
  }
  static std::vector<Tensor> build(const std::vector<Tensor>& o, size_t& i, const std::vector<size_t>& lens,
                                   size_t& li) {
    size_t n = lens[li++];
    std::vector<Tensor> r(o.begin() + i, o.begin() + i + n);
    i += n;
    return r;
  }
};
template <class... T> struct Out<std::tuple<T...>> {
  static void flatten(std::vector<Tensor>& o, std::vector<size_t>& lens, const std::tuple<T...>& v) {
    std::apply([&](const auto&... e) { (Out<std::decay_t<decltype(e)>>::flatten(o, lens, e), ...); }, v);
  }
  static std::tuple<T...> build(const std::vector<Tensor>& o, size_t& i, const std::vector<size_t>& lens, size_t& li) {
    return std::tuple<T...>{Out<T>::build(o, i, lens, li)...};
  }
};
template <class A, class B> struct Out<std::pair<A, B>> {
  static void flatten(std::vector<Tensor>& o, std::vector<size_t>& lens, const std::pair<A, B>& v) {
    Out<A>::flatten(o, lens, v.first);
    Out<B>::flatten(o, lens, v.second);
  }
  static std::pair<A, B> build(const std::vector<Tensor>& o, size_t& i, const std::vector<size_t>& lens, size_t& li) {
    A a = Out<A>::build(o, i, lens, li);
    return {std::move(a), Out<B>::build(o, i, lens, li)};
  }
};

// The type-erased engine behind every compiled callable (jit/compile.cpp).
class CompiledFn {
 public:
  using Runner = std::function<std::vector<Tensor>(const std::vector<Tensor>&, std::vector<size_t>& lens)>;
  struct Result {
    std::vector<Tensor> outs;
    std::vector<size_t> lens;
  };
  CompiledFn(CompileOptions o, std::string name);
  ~CompiledFn();
  Result call(const std::vector<Tensor>& inputs, const std::string& key, const Runner& run);
  // Modules: the parameter/buffer list whose identity is guarded on every call.
  void guard_tensors(std::function<std::vector<Tensor>()> list);
  // Modules: state that changes what forward computes (train/eval flags), guarded by value.
  void guard_state(std::function<std::string()> key);
  Explanation explain() const;
  struct State;

 private:
  std::unique_ptr<State> s_;
};

}  // namespace detail
}  // namespace jit

template <class F>
class Compiled {
 public:
  Compiled(F fn, CompileOptions o, std::string name = "fn")
      : fn_(std::make_shared<F>(std::move(fn))), engine_(std::make_shared<jit::detail::CompiledFn>(std::move(o), std::move(name))) {}

  template <class... A>
  auto operator()(A&&... args) const {
    using R = std::invoke_result_t<F&, std::decay_t<A>&...>;
    jit::detail::Flat flat;
    (jit::detail::Arg<std::decay_t<A>>::flatten(flat, args), ...);
    F& fn = *fn_;
    auto run = [&](const std::vector<Tensor>& ts, std::vector<size_t>& lens) -> std::vector<Tensor> {
      const Tensor* next = ts.data();
      std::tuple<std::decay_t<A>...> rebuilt{jit::detail::Arg<std::decay_t<A>>::rebuild(args, next)...};
      std::vector<Tensor> out;
      if constexpr (std::is_void_v<R>) {
        std::apply(fn, rebuilt);
      } else {
        jit::detail::Out<std::decay_t<R>>::flatten(out, lens, std::apply(fn, rebuilt));
      }
      return out;
    };
    auto res = engine_->call(flat.tensors, flat.key, run);
    if constexpr (!std::is_void_v<R>) {
      size_t i = 0, li = 0;
      return jit::detail::Out<std::decay_t<R>>::build(res.outs, i, res.lens, li);
    }
  }
  jit::Explanation explain() const { return engine_->explain(); }
  jit::detail::CompiledFn& engine() const { return *engine_; }

 private:
  std::shared_ptr<F> fn_;
  std::shared_ptr<jit::detail::CompiledFn> engine_;
};

// A compiled module: forward(...) has the module's signature; parameters and buffers are read live
// and guarded by identity (replacing one recompiles).
template <class M>
class CompiledModule {
 public:
  CompiledModule(std::shared_ptr<M> m, CompileOptions o)
      : module_(m), fwd_(Fwd{m}, std::move(o), "forward") {
    fwd_.engine().guard_tensors([w = std::weak_ptr<M>(m)] {
      std::vector<Tensor> ts;
      if (auto p = w.lock()) {
        ts = p->parameters();
        auto b = p->buffers();
        ts.insert(ts.end(), b.begin(), b.end());
      }
      return ts;
    });
    fwd_.engine().guard_state([w = std::weak_ptr<M>(m)] {
      std::string k;
      if (auto p = w.lock())
        for (auto& sub : p->modules()) k += sub->is_training() ? 'T' : 'E';
      return k;
    });
  }
  template <class... A> auto forward(A&&... a) const { return fwd_(std::forward<A>(a)...); }
  template <class... A> auto operator()(A&&... a) const { return fwd_(std::forward<A>(a)...); }
  const std::shared_ptr<M>& module() const { return module_; }
  M* operator->() const { return module_.get(); }
  jit::Explanation explain() const { return fwd_.explain(); }

 private:
  struct Fwd {
    std::shared_ptr<M> m;
    template <class... A> auto operator()(A&&... a) const { return m->forward(std::forward<A>(a)...); }
  };
  std::shared_ptr<M> module_;
  Compiled<Fwd> fwd_;
};

template <class F, std::enable_if_t<!std::is_base_of_v<nn::Module, std::decay_t<F>> &&
                                        !std::is_base_of_v<nn::detail::ModuleHolderIndicator, std::decay_t<F>>,
                                    int> = 0>
Compiled<std::decay_t<F>> compile(F&& fn, CompileOptions o = CompileOptions()) {
  return Compiled<std::decay_t<F>>(std::forward<F>(fn), std::move(o));
}
template <class M, std::enable_if_t<std::is_base_of_v<nn::Module, M>, int> = 0>
CompiledModule<M> compile(std::shared_ptr<M> m, CompileOptions o = CompileOptions()) {
  return CompiledModule<M>(std::move(m), std::move(o));
}
template <class H, std::enable_if_t<std::is_base_of_v<nn::detail::ModuleHolderIndicator, std::decay_t<H>>, int> = 0>
auto compile(const H& holder, CompileOptions o = CompileOptions()) {
  return compile(holder.ptr(), std::move(o));
}

namespace jit {
// Captures fn on args (without keeping the capture) and reports graphs, breaks and guards.
template <class F, class... A>
Explanation explain(F&& fn, A&&... args) {
  auto c = fw::compile(std::forward<F>(fn), CompileOptions().backend("eager"));
  c(std::forward<A>(args)...);
  return c.explain();
}
}  // namespace jit

}  // namespace fw
