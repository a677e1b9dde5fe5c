// Shared plumbing for reductions over a list of dims.
#pragma once
#include "core/op.h"

namespace fw::detail {

// A reduction viewed as a [outer, inner] problem: out[i] = reduce(in[i, 0..inner)).
struct ReducePlan {
  DimVec out_sizes;     // with or without the kept dims, as requested
  Tensor rows;          // contiguous [outer, inner] view of the (permuted) input
  int64_t outer = 1, inner = 1;
};

// dims empty = all dims. Duplicate dims and out-of-range dims raise with op's name.
DimVec reduce_dims(const Tensor& t, IntArrayRef dims, const char* op);
DimVec reduced_shape(const Tensor& t, IntArrayRef dims, bool keepdim, const char* op);
ReducePlan make_reduce_plan(const Tensor& t, IntArrayRef dims, bool keepdim, const char* op);

}  // namespace fw::detail
