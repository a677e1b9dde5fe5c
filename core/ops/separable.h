// The adjoint of a separable 2-D resampling, shared by the pooling and upsampling vjps.
//
// Note [Separable resampling vjps]
// avg_pool2d (every option), adaptive_avg_pool2d, upsample_nearest2d and upsample_bilinear2d
// are all y = A_h x A_w^T per (N, C) plane, with A_h (out_h x in_h) and A_w (out_w x in_w)
// built from the same index/weight rules as the forward kernels (an avg pool's divisor is
// the product of a per-row and a per-column count, or a constant). Their vjp is therefore
// gx = A_h^T g A_w: two GEMMs over all planes at once, written with public ops (matmul), so the
// double backward is the same kind of product and needs no backward kernels of its own.
#pragma once
#include <vector>

#include "core/op.h"

namespace fw::detail {

// A rows x cols matrix (row-major weights) in dtype t.
inline Tensor resample_matrix(std::vector<double> w, int64_t rows, int64_t cols, ScalarType t) {
  return fw::tensor(w, kDouble).view({rows, cols}).to(t);
}

// gx = A_h^T g A_w for g of shape (..., out_h, out_w); ah is out_h x in_h, aw is out_w x in_w.
inline Tensor separable_adjoint(const Tensor& g, const Tensor& ah, const Tensor& aw) {
  Tensor t = fw::matmul(g, aw);                                            // (..., out_h, in_w)
  return fw::matmul(t.transpose(-2, -1), ah).transpose(-2, -1);            // (..., in_h, in_w)
}

}  // namespace fw::detail
