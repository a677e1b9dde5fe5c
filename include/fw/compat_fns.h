// Free functions libtorch programs call as torch::name that are aliases or thin wrappers of fw's
// own (core/ops/compat_more.cpp): comparison spellings, ATen's padding and resampling kernels by
// name, im2col/col2im, the generic convolution entry, grid_sampler with integer modes, dropout
// variants, and small helpers (is_same_size, flatten_dense_tensors, ...). fw.h includes it.
#pragma once
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "fw/tensor.h"

namespace fw {

inline Tensor greater(const Tensor& a, const Tensor& b) { return a.gt(b); }
inline Tensor greater(const Tensor& a, const Scalar& b) { return a.gt(b); }
inline Tensor greater_equal(const Tensor& a, const Tensor& b) { return a.ge(b); }
inline Tensor greater_equal(const Tensor& a, const Scalar& b) { return a.ge(b); }
inline Tensor less(const Tensor& a, const Tensor& b) { return a.lt(b); }
inline Tensor less(const Tensor& a, const Scalar& b) { return a.lt(b); }
inline Tensor less_equal(const Tensor& a, const Tensor& b) { return a.le(b); }
inline Tensor less_equal(const Tensor& a, const Scalar& b) { return a.le(b); }
inline Tensor not_equal(const Tensor& a, const Tensor& b) { return a.ne(b); }
inline Tensor not_equal(const Tensor& a, const Scalar& b) { return a.ne(b); }

// numpy's name for cat.
Tensor concatenate(TensorList tensors, int64_t dim = 0);
std::vector<Tensor> split_with_sizes(const Tensor& t, IntArrayRef split_sizes, int64_t dim = 0);
std::vector<Tensor> nonzero_numpy(const Tensor& t);
std::tuple<Tensor, Tensor, Tensor> unique_dim_consecutive(const Tensor& t, int64_t dim, bool return_inverse = false,
                                                          bool return_counts = false);

// Function forms of tensor queries and aliases.
inline bool is_same_size(const Tensor& a, const Tensor& b) { return a.sizes() == b.sizes(); }
inline bool is_conj(const Tensor& t) { return t.is_conj(); }
inline bool is_neg(const Tensor& t) { return t.is_neg(); }
inline bool is_inference(const Tensor& t) { return t.is_inference(); }
inline Tensor resolve_conj(const Tensor& t) { return t.resolve_conj(); }
inline Tensor resolve_neg(const Tensor& t) { return t.resolve_neg(); }
inline Tensor detach(const Tensor& t) { return t.detach(); }
inline Tensor alias(const Tensor& t) { return t.alias(); }
inline int64_t size(const Tensor& t, int64_t dim) { return t.size(dim); }
inline int64_t stride(const Tensor& t, int64_t dim) { return t.stride(dim); }
Tensor slice(const Tensor& t, int64_t dim = 0, std::optional<int64_t> start = std::nullopt,
             std::optional<int64_t> end = std::nullopt, int64_t step = 1);
// ATen's functional fill: a new tensor like t filled with value.
Tensor fill(const Tensor& t, const Scalar& value);

// ATen's padding kernels (padding as F::pad takes it: last dim first).
Tensor reflection_pad1d(const Tensor& x, IntArrayRef padding);
Tensor reflection_pad2d(const Tensor& x, IntArrayRef padding);
Tensor reflection_pad3d(const Tensor& x, IntArrayRef padding);
Tensor replication_pad1d(const Tensor& x, IntArrayRef padding);
Tensor replication_pad2d(const Tensor& x, IntArrayRef padding);
Tensor replication_pad3d(const Tensor& x, IntArrayRef padding);
// ATen's resampling kernels not in ops.h (interpolate's bicubic, 3-d nearest and trilinear).
Tensor upsample_bicubic2d(const Tensor& x, IntArrayRef output_size, bool align_corners,
                          std::optional<double> scales_h = std::nullopt, std::optional<double> scales_w = std::nullopt);
Tensor upsample_nearest3d(const Tensor& x, IntArrayRef output_size, std::optional<double> scales_d = std::nullopt,
                          std::optional<double> scales_h = std::nullopt, std::optional<double> scales_w = std::nullopt);
Tensor upsample_trilinear3d(const Tensor& x, IntArrayRef output_size, bool align_corners,
                            std::optional<double> scales_d = std::nullopt, std::optional<double> scales_h = std::nullopt,
                            std::optional<double> scales_w = std::nullopt);
// Sliding blocks of (N, C, H, W) as columns and back (nn::functional::unfold / fold).
Tensor im2col(const Tensor& x, IntArrayRef kernel_size, IntArrayRef dilation, IntArrayRef padding, IntArrayRef stride);
Tensor col2im(const Tensor& x, IntArrayRef output_size, IntArrayRef kernel_size, IntArrayRef dilation,
              IntArrayRef padding, IntArrayRef stride);
// ATen's generic convolution: 1-3 spatial dims from the weight's rank, transposed or not.
Tensor convolution(const Tensor& x, const Tensor& weight, const std::optional<Tensor>& bias, IntArrayRef stride,
                   IntArrayRef padding, IntArrayRef dilation, bool transposed, IntArrayRef output_padding,
                   int64_t groups);
// grid_sample with ATen's integer modes: interpolation 0 bilinear, 1 nearest, 2 bicubic; padding
// 0 zeros, 1 border, 2 reflection.
Tensor grid_sampler(const Tensor& input, const Tensor& grid, int64_t interpolation_mode, int64_t padding_mode,
                    bool align_corners);
Tensor affine_grid_generator(const Tensor& theta, IntArrayRef size, bool align_corners);
Tensor alpha_dropout(const Tensor& x, double p, bool train);
Tensor feature_alpha_dropout(const Tensor& x, double p, bool train);
// Dropout of whole channels of (N, C, *) inputs (ATen's feature_dropout).
Tensor feature_dropout(const Tensor& x, double p, bool train);
// The norm of v over every dim except dim (weight normalisation's g); dim -1: the whole tensor.
Tensor norm_except_dim(const Tensor& v, int64_t pow = 2, int64_t dim = 0);
Tensor pad_sequence(TensorList sequences, bool batch_first = false, double padding_value = 0);
// The deprecated symmetric eigensolver: (eigenvalues ascending, eigenvectors or an empty tensor).
std::tuple<Tensor, Tensor> symeig(const Tensor& t, bool eigenvectors = false, bool upper = true);
// A copy of self with src written over the as_strided view (size, stride, offset) of it.
Tensor as_strided_scatter(const Tensor& self, const Tensor& src, IntArrayRef size, IntArrayRef stride,
                          std::optional<int64_t> storage_offset = std::nullopt);
// The tensors flattened into one contiguous 1-d tensor, and views of such a tensor shaped like them.
Tensor flatten_dense_tensors(TensorList tensors);
std::vector<Tensor> unflatten_dense_tensors(const Tensor& flat, TensorList tensors);
Tensor linalg_multi_dot(TensorList tensors);
Tensor special_polygamma(int64_t n, const Tensor& t);
Tensor special_multigammaln(const Tensor& t, int64_t p);
Tensor nll_loss2d(const Tensor& input, const Tensor& target, const std::optional<Tensor>& weight = std::nullopt,
                  int64_t reduction = 1, int64_t ignore_index = -100);
Tensor nll_loss_nd(const Tensor& input, const Tensor& target, const std::optional<Tensor>& weight = std::nullopt,
                   int64_t reduction = 1, int64_t ignore_index = -100);

}  // namespace fw
