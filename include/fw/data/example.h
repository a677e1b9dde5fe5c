// fw::data::Example: one (data, target) pair, as libtorch's torch::data::Example.
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

}  // namespace fw::data
