// Top-level activation functions with ATen's signatures that fw::nn::functional also offers
// (at::prelu(self, weight), at::celu(self, alpha), ...). They forward to fw::nn::functional, so
// gradients flow as there. relu, gelu, elu, selu, silu, ... are core ops (fw/ops.h).
#pragma once
#include <cstdint>

#include "fw/scalar.h"
#include "fw/tensor.h"

namespace fw {

// y = x where x > threshold, else value.
Tensor threshold(const Tensor& self, const Scalar& threshold, const Scalar& value);
Tensor celu(const Tensor& self, const Scalar& alpha = 1.0);
Tensor hardshrink(const Tensor& self, const Scalar& lambd = 0.5);
Tensor softshrink(const Tensor& self, const Scalar& lambd = 0.5);
// weight holds 1 slope or one per channel (dim 1).
Tensor prelu(const Tensor& self, const Tensor& weight);
// Random negative slopes in U(lower, upper) when training, their mean otherwise.
Tensor rrelu(const Tensor& self, const Scalar& lower = 0.125, const Scalar& upper = 1.0 / 3.0, bool training = false);
// First half of dim times the sigmoid of the second half.
Tensor glu(const Tensor& self, int64_t dim = -1);

}  // namespace fw
