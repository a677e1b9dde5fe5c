// fw::data::transforms: batch transforms, notably Stack (collate a vector of Examples into one).
#pragma once
#include <vector>

#include "fw/data/example.h"

namespace fw::data::transforms {

template <class E = Example<>>
struct Stack;

// Stacks data (and defined targets) of a batch of Examples along a new dim 0.
template <>
struct Stack<Example<>> {
  using InputBatchType = std::vector<Example<>>;
  using OutputBatchType = Example<>;
  Example<> apply_batch(std::vector<Example<>> examples) const;
};

}  // namespace fw::data::transforms
