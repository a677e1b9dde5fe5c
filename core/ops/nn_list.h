#pragma once
// Neural-network primitives. softmax/log_softmax: i0 = dim, dtype = optional result dtype.
// native_*_norm return (y, mean, rstd) as PyTorch's native_* ops, so backward can reuse the
// statistics. conv1d, conv3d, pooling 1d and 3d, instance_norm, dropout and interpolate are
// composites.
#define FW_OPS_NN(X)                                                                         \
  X(softmax, Opaque) X(log_softmax, Opaque) X(native_layer_norm, Opaque)                     \
  X(native_group_norm, Opaque) X(native_batch_norm, Opaque) X(conv2d, Opaque)                \
  X(conv_transpose2d, Opaque) X(max_pool2d_with_indices, Opaque) X(avg_pool2d, Opaque)       \
  X(adaptive_avg_pool2d, Opaque) X(adaptive_max_pool2d, Opaque) X(upsample_nearest2d, Opaque) \
  X(upsample_bilinear2d, Opaque)
