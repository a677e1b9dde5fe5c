// Result layouts of element-wise ops (Note [Pointwise result layouts] in core/ops/creation.cpp).
#pragma once
#include <vector>

#include "core/op.h"

namespace fw::detail {

// Channels-last as a dim order, outermost to innermost in memory: N, the spatial dims, then C.
inline std::vector<int64_t> channels_last_order(int64_t nd) {
  std::vector<int64_t> o{0};
  for (int64_t i = 2; i < nd; i++) o.push_back(i);
  o.push_back(1);
  return o;
}
// libtorch's MemoryFormat::Preserve (Note [Preserved layouts]): t's dims ordered from the outermost
// in memory to the innermost; empty when that order is row-major.
std::vector<int64_t> preserved_order(const Tensor& t);
// The dim order (outermost first) of an element-wise op's new result over inputs `in`
// broadcast to `shape`; empty when row-major.
std::vector<int64_t> pointwise_order(ArrayRef<Tensor> in, IntArrayRef shape);
// copy's attrs.flags bits: the result is laid out like the input (MemoryFormat::Preserve: clone,
// to(dtype)), or channels-last (contiguous(ChannelsLast/ChannelsLast3d)); with neither, copy's
// result is row-major (contiguous()). One op either way, so a traced copy is a value of its own,
// not a view.
constexpr uint32_t kCopyPreserve = 1;
constexpr uint32_t kCopyChannelsLast = 2;
// ... or laid out in the dim order attrs.ints (outermost first): fw::compile's tracer gives the
// value of an in-place write the target's layout with it.
constexpr uint32_t kCopyOrder = 4;
// The dim order dispatch gives op `id`'s results whose sizes are the first result's (m[0]):
// pointwise_order for element-wise ops; for copy, preserved_order, channels_last_order or
// attrs.ints with kCopyPreserve, kCopyChannelsLast or kCopyOrder (row-major without flags);
// channels-last for conv2d, native_batch_norm and max_pool2d_with_indices after a channels-last
// input (conv2d: or weight), whose kernels write such results directly (Note [Channels-last
// results]); row-major otherwise. fw::compile's tracer lays its placeholders out by the same
// rule, so traced values carry eager's strides.
// Empty too when the op has no results.
std::vector<int64_t> result_order(OpId id, ArrayRef<Tensor> in, const OpAttrs& a, const Metas& m);
// Dense strides for `sizes` laid out in `order` (outermost first; empty: row-major).
DimVec strides_in_order(IntArrayRef sizes, const std::vector<int64_t>& order);
// An uninitialised tensor laid out in `order` (outermost first; empty: row-major).
Tensor empty_in_order(IntArrayRef sizes, ScalarType dtype, Device dev, const std::vector<int64_t>& order);

// Note [Channels-last results]
// As in libtorch, a convolution, batch/group norm, 2-d pool, 2-d upsampling or constant pad of a
// channels-last input (or a convolution with a channels-last weight), and a cat of channels-last
// inputs, return channels-last results; the element-wise ops already follow their inputs.
// conv2d (oneDNN, NHWC memory), batch norm (rows of channels) and max pooling (C-long runs)
// compute channels-last inputs where they lie, their results laid out by dispatch
// (result_order); the other ops compute row-major and return one channels-last copy of it (a
// single copy op, which fw::compile traces as a value of its own).
inline bool is_channels_last(const Tensor& t) {
  return (t.dim() == 4 || t.dim() == 5) && t.suggest_memory_format() != MemoryFormat::Contiguous;
}
// y laid out channels-last when cl says so (and y is 4-d or 5-d); y itself otherwise.
inline Tensor channels_last_if(const Tensor& y, bool cl) {
  if (!cl || (y.dim() != 4 && y.dim() != 5)) return y;
  return y.contiguous(y.dim() == 4 ? MemoryFormat::ChannelsLast : MemoryFormat::ChannelsLast3d);
}

}  // namespace fw::detail
