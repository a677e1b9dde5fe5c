// fw::data::Example: one (data, target) pair, as libtorch's torch::data::Example, and
// TensorExample = Example<Tensor, example::NoTarget>, a data tensor without a target.
#pragma once
#include "fw/tensor.h"

namespace fw::data {

// A single training example; a collated batch is again an Example with stacked members.
template <class Data = Tensor, class Target = Tensor>
struct Example {
  using DataType = Data;
  using TargetType = Target;
  Example() = default;
  Example(Data d, Target t) : data(std::move(d)), target(std::move(t)) {}
  Data data;
  Target target;
};

namespace example {
// The Target of an Example that has none (libtorch spells it the same way).
using NoTarget = void;
}  // namespace example

// An Example with only data. It converts implicitly from and to its data, so a dataset can
// return a Tensor where a TensorExample is expected and a batch can be used as a Tensor.
template <>
struct Example<Tensor, example::NoTarget> {
  using DataType = Tensor;
  using TargetType = example::NoTarget;
  Example() = default;
  Example(Tensor d) : data(std::move(d)) {}  // NOLINT(google-explicit-constructor)
  operator Tensor&() { return data; }              // NOLINT(google-explicit-constructor)
  operator const Tensor&() const { return data; }  // NOLINT(google-explicit-constructor)
  Tensor data;
};

using TensorExample = Example<Tensor, example::NoTarget>;

}  // namespace fw::data
