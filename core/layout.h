// Result layouts of element-wise ops (Note [Pointwise result layouts] in core/ops/creation.cpp).
#pragma once
#include <vector>

#include "core/op.h"

namespace fw::detail {

// The dim order (outermost first) of an element-wise op's new result over inputs `in`
// broadcast to `shape`; empty when row-major, and always empty while a RowMajorResults is alive
// on this thread.
std::vector<int64_t> pointwise_order(ArrayRef<Tensor> in, IntArrayRef shape);
// An uninitialised tensor laid out in `order` (outermost first; empty: row-major).
Tensor empty_in_order(IntArrayRef sizes, ScalarType dtype, Device dev, const std::vector<int64_t>& order);

// While alive, element-wise ops on this thread return row-major results. fw::compile's programs
// hold one around the eager ops they run: the traced values those ops stand for, and the fused
// kernels that read them, are row-major.
struct RowMajorResults {
  RowMajorResults();
  ~RowMajorResults();
  RowMajorResults(const RowMajorResults&) = delete;
  RowMajorResults& operator=(const RowMajorResults&) = delete;
};

}  // namespace fw::detail
