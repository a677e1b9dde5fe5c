// Program construction: passes, then the backend.
#include "jit/program.h"

#include "jit/log.h"

namespace fw::jit {

namespace {
struct Interpreter : Program {
  Graph g;
  explicit Interpreter(Graph gr) : g(std::move(gr)) {}
  std::vector<Tensor> run(ArrayRef<Tensor> inputs, ArrayRef<Tensor> externals) override {
    return interpret(g, inputs, externals);
  }
  std::string describe() const override { return "interpreter (" + std::to_string(g.nodes.size()) + " ops)"; }
};
}  // namespace

std::shared_ptr<Program> interpreter_program(Graph g) { return std::make_shared<Interpreter>(std::move(g)); }

std::shared_ptr<Program> codegen_program(Graph g, const CompileOptions& o);  // codegen/program.cpp

std::shared_ptr<Program> build_program(Graph g, const CompileOptions& o) {
  g.verify();
  int cse = eliminate_common_subexpressions(g);
  int dce = eliminate_dead_code(g);
  if (cse || dce) log::graphs("passes: CSE merged ", cse, " node(s), DCE removed ", dce);
  if (o.backend() == "inductor") return codegen_program(std::move(g), o);
  return interpreter_program(std::move(g));
}

}  // namespace fw::jit
