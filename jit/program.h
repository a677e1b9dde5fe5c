// An executable form of a Graph: the interpreter (eager kernels) or codegen's fused program.
#pragma once
#include <memory>
#include <string>

#include "fw/jit.h"
#include "jit/ir.h"

namespace fw::jit {

struct Program {
  virtual ~Program() = default;
  // Runs the graph on real tensors: returns g.outputs' values and applies the writebacks.
  virtual std::vector<Tensor> run(ArrayRef<Tensor> inputs, ArrayRef<Tensor> externals) = 0;
  virtual std::string describe() const = 0;
};

// The standard passes: view folding, constant folding, CSE, DCE (returns how many changes).
int run_passes(Graph& g);
// Runs the standard passes and builds the backend's program for g.
std::shared_ptr<Program> build_program(Graph g, const CompileOptions& o);

// The interpreter as a program (backends "eager" and the fallback of the others).
std::shared_ptr<Program> interpreter_program(Graph g);

}  // namespace fw::jit
