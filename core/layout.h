// Result layouts of element-wise ops (Note [Pointwise result layouts] in core/ops/creation.cpp).
#pragma once
#include <vector>

#include "core/op.h"

namespace fw::detail {

// The dim order (outermost first) of an element-wise op's new result over inputs `in`
// broadcast to `shape`; empty when row-major.
std::vector<int64_t> pointwise_order(ArrayRef<Tensor> in, IntArrayRef shape);
// copy's attrs.flags bit: the result is laid out like the input (MemoryFormat::Preserve: clone,
// to(dtype)); without it copy's result is row-major (contiguous()).
constexpr uint32_t kCopyPreserve = 1;
// The dim order dispatch gives op `id`'s results whose sizes are `first` (the first result's):
// pointwise_order for element-wise ops, preserved_order for a copy with kCopyPreserve, row-major
// otherwise. fw::compile's tracer lays its placeholders out by the same rule, so traced values
// carry eager's strides.
std::vector<int64_t> result_order(OpId id, ArrayRef<Tensor> in, const OpAttrs& a, IntArrayRef first);
// Dense strides for `sizes` laid out in `order` (outermost first; empty: row-major).
DimVec strides_in_order(IntArrayRef sizes, const std::vector<int64_t>& order);
// An uninitialised tensor laid out in `order` (outermost first; empty: row-major).
Tensor empty_in_order(IntArrayRef sizes, ScalarType dtype, Device dev, const std::vector<int64_t>& order);

}  // namespace fw::detail
