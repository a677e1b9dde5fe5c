// Program construction: passes, then the backend.
#include "jit/program.h"

#include "jit/log.h"

namespace fw::jit {

namespace {
struct Interpreter : Program {
  Graph g;
  ReleasePlan plan;  // Note [Buffer release]
  explicit Interpreter(Graph gr) : g(std::move(gr)), plan(node_release_plan(g)) {}
  std::vector<Tensor> run(ArrayRef<Tensor> inputs, ArrayRef<Tensor> externals) override {
    return interpret(g, inputs, externals, &plan);
  }
  std::string describe() const override {
    return "interpreter (" + std::to_string(g.nodes.size()) + " ops" + product_epilogues_note(g) + ")";
  }
};
}  // namespace

std::shared_ptr<Program> interpreter_program(Graph g) { return std::make_shared<Interpreter>(std::move(g)); }

std::shared_ptr<Program> codegen_program(Graph g, const CompileOptions& o);  // codegen/cpp_backend.cpp
std::shared_ptr<Program> aot_program(Graph g, const CompileOptions& o,
                                     std::shared_ptr<Program> (*backend)(Graph, const CompileOptions&));  // aot.cpp

static std::shared_ptr<Program> interpreter_backend(Graph g, const CompileOptions&) {
  return interpreter_program(std::move(g));
}

int run_passes(Graph& g) {
  int views = fold_views(g);
  int consts = fold_constants(g);
  int cse = eliminate_common_subexpressions(g);
  int dce = eliminate_dead_code(g);
  if (views || consts || cse || dce)
    log::graphs("passes: folded ", views, " view chain(s) and ", consts, " constant node(s), CSE merged ", cse,
                ", DCE removed ", dce);
  return views + consts + cse + dce;
}

std::shared_ptr<Program> build_program(Graph g, const CompileOptions& o) {
  g.verify();
  int cse = run_passes(g);
  (void)cse;
  auto backend = o.backend() == "inductor" ? &codegen_program : &interpreter_backend;
  bool train = false;
  if (fw::detail::tls().grad_enabled)
    for (const ValueInfo& v : g.values) train = train || v.requires_grad;
  if (train) {
    // backend "eager": the interpreter's eager ops record autograd per op. The others build a
    // joint forward/backward pair (Note [Joint forward/backward graphs]) or, when that is not
    // possible, fall back to the interpreter.
    if (o.backend() != "eager")
      if (auto p = aot_program(g, o, backend)) return p;
    return interpreter_program(std::move(g));
  }
  return backend(std::move(g), o);
}

}  // namespace fw::jit
