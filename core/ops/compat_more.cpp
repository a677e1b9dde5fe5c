// The rest of libtorch's spellings (include/fw/compat_fns.h, and the Tensor methods after "the
// rest of libtorch's method spellings" in include/fw/tensor.h): in-place comparisons and
// in-place forms of existing functions, index_put out of place, alias/set_/is_set_to, and free
// functions that name ATen kernels (padding, resampling, im2col, convolution, grid_sampler, ...).
// Each is a thin layer over an fw op, so autograd and fw::compile see the underlying ops.
#include <cmath>
#include <limits>

#include "core/op.h"
#include "core/ops/composite_util.h"
#include "fw/compat_fns.h"
#include "fw/fw.h"

namespace fw {

// ---- in-place comparisons: 0/1 in this tensor's dtype (a bool result casts to any dtype)
#define FW_CMP_INPLACE(name, fn)                                              \
  Tensor& Tensor::name(const Tensor& o) const { return copy_(fn(o)); }            \
  Tensor& Tensor::name(const Scalar& o) const { return copy_(fn(o)); }
FW_CMP_INPLACE(eq_, eq)
FW_CMP_INPLACE(ne_, ne)
FW_CMP_INPLACE(lt_, lt)
FW_CMP_INPLACE(le_, le)
FW_CMP_INPLACE(gt_, gt)
FW_CMP_INPLACE(ge_, ge)
FW_CMP_INPLACE(greater_, gt)
FW_CMP_INPLACE(greater_equal_, ge)
FW_CMP_INPLACE(less_, lt)
FW_CMP_INPLACE(less_equal_, le)
FW_CMP_INPLACE(not_equal_, ne)
#undef FW_CMP_INPLACE

// ---- in-place forms: the out-of-place result, which must cast to this tensor's dtype
using detail::write_inplace;
Tensor& Tensor::atan2_(const Tensor& o) const { return write_inplace(mut_self(), atan2(o), "atan2_"); }
Tensor& Tensor::copysign_(const Tensor& o) const { return write_inplace(mut_self(), copysign(o), "copysign_"); }
Tensor& Tensor::copysign_(const Scalar& o) const { return write_inplace(mut_self(), copysign(o), "copysign_"); }
Tensor& Tensor::deg2rad_() const { return write_inplace(mut_self(), deg2rad(), "deg2rad_"); }
Tensor& Tensor::rad2deg_() const { return write_inplace(mut_self(), rad2deg(), "rad2deg_"); }
Tensor& Tensor::floor_divide_(const Tensor& o) const { return write_inplace(mut_self(), floor_divide(o), "floor_divide_"); }
Tensor& Tensor::floor_divide_(const Scalar& o) const { return write_inplace(mut_self(), floor_divide(o), "floor_divide_"); }
Tensor& Tensor::float_power_(const Tensor& e) const { return write_inplace(mut_self(), float_power(e), "float_power_"); }
Tensor& Tensor::float_power_(const Scalar& e) const { return write_inplace(mut_self(), float_power(e), "float_power_"); }
Tensor& Tensor::gcd_(const Tensor& o) const { return write_inplace(mut_self(), gcd(o), "gcd_"); }
Tensor& Tensor::lcm_(const Tensor& o) const { return write_inplace(mut_self(), lcm(o), "lcm_"); }
Tensor& Tensor::heaviside_(const Tensor& v) const { return write_inplace(mut_self(), heaviside(v), "heaviside_"); }
Tensor& Tensor::hypot_(const Tensor& o) const { return write_inplace(mut_self(), hypot(o), "hypot_"); }
Tensor& Tensor::igamma_(const Tensor& o) const { return write_inplace(mut_self(), igamma(o), "igamma_"); }
Tensor& Tensor::igammac_(const Tensor& o) const { return write_inplace(mut_self(), igammac(o), "igammac_"); }
Tensor& Tensor::ldexp_(const Tensor& o) const { return write_inplace(mut_self(), ldexp(o), "ldexp_"); }
Tensor& Tensor::logit_(std::optional<double> eps) const { return write_inplace(mut_self(), logit(eps), "logit_"); }
Tensor Tensor::mvlgamma(int64_t p) const { return fw::mvlgamma(*this, p); }
Tensor& Tensor::mvlgamma_(int64_t p) const { return write_inplace(mut_self(), mvlgamma(p), "mvlgamma_"); }
Tensor& Tensor::nextafter_(const Tensor& o) const { return write_inplace(mut_self(), nextafter(o), "nextafter_"); }
Tensor& Tensor::sgn_() const { return write_inplace(mut_self(), sgn(), "sgn_"); }
Tensor& Tensor::sinc_() const { return write_inplace(mut_self(), sinc(), "sinc_"); }
Tensor& Tensor::xlogy_(const Tensor& o) const { return write_inplace(mut_self(), xlogy(o), "xlogy_"); }
Tensor& Tensor::xlogy_(const Scalar& o) const { return write_inplace(mut_self(), special::xlogy(*this, o), "xlogy_"); }

// ---- aliasing and storage
Tensor Tensor::index_put(const std::vector<std::optional<Tensor>>& indices, const Tensor& values,
                         bool accumulate) const {
  return fw::index_put(*this, indices, values, accumulate);
}
Tensor Tensor::alias() const { return as_strided(sizes(), strides(), storage_offset()); }
bool Tensor::is_set_to(const Tensor& o) const {
  FW_CHECK(defined() && o.defined(), "[is_set_to] both tensors must be defined");
  return impl()->storage == o.impl()->storage && storage_offset() == o.storage_offset() &&
         sizes().equals(o.sizes()) && strides().equals(o.strides());
}
Tensor& Tensor::set_(const Tensor& source) const {
  FW_CHECK(defined() && source.defined(), "[set_] both tensors must be defined");
  FW_CHECK(source.dtype() == dtype(), "[set_] Expected source to have the same dtype as self (",
           dtype_name(dtype()), "), got ", dtype_name(source.dtype()));
  FW_CHECK(!requires_grad(), "[set_] not supported for a tensor that requires grad (shape ", sizes(),
           "); use set_data() to swap a parameter's values");
  // As libtorch, self keeps a version counter of its own (continuing its count): source's saved
  // values must not see this write, nor later in-place writes through self.
  const uint32_t v = _version();
  set_data(source);
  impl()->version_counter = make_intrusive<VersionCounter>();
  impl()->version_counter->version.store(v, std::memory_order_relaxed);
  detail::bump_version(*this, "set_");
  return mut_self();
}
std::vector<Tensor> Tensor::nonzero_numpy() const { return fw::where(*this); }
Tensor Tensor::diagflat(int64_t offset) const { return fw::diagflat(*this, offset); }
Tensor Tensor::orgqr(const Tensor& tau) const { return fw::orgqr(*this, tau); }
Tensor Tensor::prelu(const Tensor& weight) const { return fw::prelu(*this, weight); }
MaybeOwned<Tensor> Tensor::expect_contiguous(MemoryFormat format) const {
  return is_contiguous(format) ? MaybeOwned<Tensor>::borrowed(*this) : MaybeOwned<Tensor>::owned(contiguous(format));
}

// ---- free functions
Tensor concatenate(TensorList tensors, int64_t dim) { return cat(tensors, dim); }
std::vector<Tensor> split_with_sizes(const Tensor& t, IntArrayRef split_sizes, int64_t dim) {
  return t.split(split_sizes, dim);
}
std::vector<Tensor> nonzero_numpy(const Tensor& t) { return where(t); }
std::tuple<Tensor, Tensor, Tensor> unique_dim_consecutive(const Tensor& t, int64_t dim, bool return_inverse,
                                                          bool return_counts) {
  return unique_consecutive(t, return_inverse, return_counts, dim);
}
Tensor slice(const Tensor& t, int64_t dim, std::optional<int64_t> start, std::optional<int64_t> end, int64_t step) {
  return t.slice(dim, start, end, step);
}
Tensor fill(const Tensor& t, const Scalar& value) { return full_like(t, value); }

namespace {
Tensor pad_kernel(const char* op, int64_t spatial, const std::string& mode, const Tensor& x, IntArrayRef padding) {
  FW_CHECK(int64_t(padding.size()) == 2 * spatial, "[", op, "] padding must have ", 2 * spatial,
           " elements, got ", padding);
  FW_CHECK(x.dim() == spatial + 1 || x.dim() == spatial + 2, "[", op, "] expected a ", spatial + 1, "-D or ",
           spatial + 2, "-D input, got shape ", x.sizes());
  return pad(x, padding, mode);
}
}  // namespace
Tensor reflection_pad1d(const Tensor& x, IntArrayRef p) { return pad_kernel("reflection_pad1d", 1, "reflect", x, p); }
Tensor reflection_pad2d(const Tensor& x, IntArrayRef p) { return pad_kernel("reflection_pad2d", 2, "reflect", x, p); }
Tensor reflection_pad3d(const Tensor& x, IntArrayRef p) { return pad_kernel("reflection_pad3d", 3, "reflect", x, p); }
Tensor replication_pad1d(const Tensor& x, IntArrayRef p) { return pad_kernel("replication_pad1d", 1, "replicate", x, p); }
Tensor replication_pad2d(const Tensor& x, IntArrayRef p) { return pad_kernel("replication_pad2d", 2, "replicate", x, p); }
Tensor replication_pad3d(const Tensor& x, IntArrayRef p) { return pad_kernel("replication_pad3d", 3, "replicate", x, p); }

namespace {
Tensor upsample(const char* op, const std::string& mode, int64_t spatial, const Tensor& x, IntArrayRef out,
                bool align_corners, std::vector<std::optional<double>> scales) {
  FW_CHECK(x.dim() == spatial + 2, "[", op, "] expected a ", spatial + 2, "-D input, got shape ", x.sizes());
  FW_CHECK(int64_t(out.size()) == spatial, "[", op, "] output_size must have ", spatial, " elements, got ", out);
  return nn::functional::detail::interpolate_separable(x, mode, out, scales, align_corners);
}
}  // namespace
Tensor upsample_bicubic2d(const Tensor& x, IntArrayRef out, bool align_corners, std::optional<double> sh,
                          std::optional<double> sw) {
  return upsample("upsample_bicubic2d", "bicubic", 2, x, out, align_corners, {sh, sw});
}
Tensor upsample_nearest3d(const Tensor& x, IntArrayRef out, std::optional<double> sd, std::optional<double> sh,
                          std::optional<double> sw) {
  return upsample("upsample_nearest3d", "nearest", 3, x, out, false, {sd, sh, sw});
}
Tensor upsample_trilinear3d(const Tensor& x, IntArrayRef out, bool align_corners, std::optional<double> sd,
                            std::optional<double> sh, std::optional<double> sw) {
  return upsample("upsample_trilinear3d", "trilinear", 3, x, out, align_corners, {sd, sh, sw});
}

Tensor im2col(const Tensor& x, IntArrayRef kernel_size, IntArrayRef dilation, IntArrayRef padding, IntArrayRef stride) {
  return nn::functional::unfold(
      x, nn::functional::UnfoldFuncOptions(kernel_size).dilation(dilation).padding(padding).stride(stride));
}
Tensor col2im(const Tensor& x, IntArrayRef output_size, IntArrayRef kernel_size, IntArrayRef dilation,
              IntArrayRef padding, IntArrayRef stride) {
  return nn::functional::fold(x, nn::functional::FoldFuncOptions(output_size, kernel_size)
                                     .dilation(dilation)
                                     .padding(padding)
                                     .stride(stride));
}

Tensor convolution(const Tensor& x, const Tensor& weight, const std::optional<Tensor>& bias, IntArrayRef stride,
                   IntArrayRef padding, IntArrayRef dilation, bool transposed, IntArrayRef output_padding,
                   int64_t groups) {
  const int64_t spatial = weight.dim() - 2;
  FW_CHECK(spatial >= 1 && spatial <= 3, "[convolution] expected a 3-D, 4-D or 5-D weight, got shape ",
           weight.sizes());
  const Tensor b = bias.value_or(Tensor());
  if (!transposed) {
    if (spatial == 1) return conv1d(x, weight, b, stride, padding, dilation, groups);
    if (spatial == 2) return conv2d(x, weight, b, stride, padding, dilation, groups);
    return conv3d(x, weight, b, stride, padding, dilation, groups);
  }
  if (spatial == 1) return conv_transpose1d(x, weight, b, stride, padding, output_padding, groups, dilation);
  if (spatial == 2) return conv_transpose2d(x, weight, b, stride, padding, output_padding, groups, dilation);
  return conv_transpose3d(x, weight, b, stride, padding, output_padding, groups, dilation);
}

Tensor grid_sampler(const Tensor& input, const Tensor& grid, int64_t interpolation_mode, int64_t padding_mode,
                    bool align_corners) {
  namespace F = nn::functional;
  F::GridSampleFuncOptions o;
  switch (interpolation_mode) {
    case 0: o.mode(kBilinear); break;
    case 1: o.mode(kNearest); break;
    case 2: o.mode(kBicubic); break;
    default: FW_CHECK(false, "[grid_sampler] interpolation_mode must be 0 (bilinear), 1 (nearest) or 2 (bicubic), got ",
                      interpolation_mode);
  }
  switch (padding_mode) {
    case 0: o.padding_mode(kZeros); break;
    case 1: o.padding_mode(kBorder); break;
    case 2: o.padding_mode(kReflection); break;
    default: FW_CHECK(false, "[grid_sampler] padding_mode must be 0 (zeros), 1 (border) or 2 (reflection), got ",
                      padding_mode);
  }
  return F::grid_sample(input, grid, o.align_corners(align_corners));
}
Tensor affine_grid_generator(const Tensor& theta, IntArrayRef size, bool align_corners) {
  return nn::functional::affine_grid(theta, size, align_corners);
}

Tensor alpha_dropout(const Tensor& x, double p, bool train) {
  return nn::functional::alpha_dropout(x, nn::functional::AlphaDropoutFuncOptions().p(p).training(train));
}
Tensor feature_alpha_dropout(const Tensor& x, double p, bool train) {
  return nn::functional::feature_alpha_dropout(x,
                                               nn::functional::FeatureAlphaDropoutFuncOptions().p(p).training(train));
}
Tensor feature_dropout(const Tensor& x, double p, bool train) {
  FW_CHECK(x.dim() >= 2, "[feature_dropout] expected an input of at least 2 dims (N, C, *), got shape ", x.sizes());
  FW_CHECK(p >= 0 && p <= 1, "[feature_dropout] dropout probability has to be between 0 and 1, but got ", p);
  if (!train || p == 0) return x;
  return x * detail::feature_dropout_mask(x, 2, p);  // one draw per (N, C)
}

Tensor norm_except_dim(const Tensor& v, int64_t pow, int64_t dim) {
  if (dim == -1) return v.norm(pow);
  const int64_t d = dim < 0 ? dim + v.dim() : dim;
  FW_CHECK(d >= 0 && d < v.dim(), "[norm_except_dim] dim ", dim, " is out of range for shape ", v.sizes());
  std::vector<int64_t> others;
  for (int64_t i = 0; i < v.dim(); i++)
    if (i != d) others.push_back(i);
  if (others.empty()) return v.abs();
  return norm(v, double(pow), others, /*keepdim=*/true);
}

Tensor pad_sequence(TensorList sequences, bool batch_first, double padding_value) {
  return nn::utils::rnn::pad_sequence(sequences, batch_first, padding_value);
}

std::tuple<Tensor, Tensor> symeig(const Tensor& t, bool eigenvectors, bool upper) {
  auto [w, v] = linalg::eigh(t, upper ? "U" : "L");
  if (!eigenvectors) return {w, empty({0}, t.options())};
  return {w, v};
}

Tensor as_strided_scatter(const Tensor& self, const Tensor& src, IntArrayRef size, IntArrayRef stride,
                          std::optional<int64_t> storage_offset) {
  // As ATen: the view is taken on a contiguous clone of self, so offsets count from its start.
  Tensor r = self.clone(MemoryFormat::Contiguous);
  Tensor view = r.as_strided(size, stride, storage_offset);
  FW_CHECK(view.sizes().equals(src.sizes()), "[as_strided_scatter] src has shape ", src.sizes(),
           " but the view has shape ", view.sizes());
  view.copy_(src);
  return r;
}

Tensor flatten_dense_tensors(TensorList tensors) {
  if (tensors.size() == 1) return tensors[0].contiguous().view({-1});
  std::vector<Tensor> flat;
  flat.reserve(tensors.size());
  for (const Tensor& t : tensors) flat.push_back(t.contiguous().view({-1}));
  return cat(flat, 0);
}
std::vector<Tensor> unflatten_dense_tensors(const Tensor& flat, TensorList tensors) {
  std::vector<Tensor> out;
  int64_t offset = 0;
  for (const Tensor& t : tensors) {
    const int64_t n = t.numel();
    FW_CHECK(offset + n <= flat.numel(), "[unflatten_dense_tensors] the flat tensor has ", flat.numel(),
             " elements, fewer than the tensors' total");
    out.push_back(flat.narrow(0, offset, n).view(t.sizes()));
    offset += n;
  }
  return out;
}

Tensor linalg_multi_dot(TensorList tensors) { return linalg::multi_dot(tensors); }
Tensor special_polygamma(int64_t n, const Tensor& t) { return special::polygamma(n, t); }
Tensor special_multigammaln(const Tensor& t, int64_t p) { return special::multigammaln(t, p); }

Tensor nll_loss2d(const Tensor& input, const Tensor& target, const std::optional<Tensor>& weight, int64_t reduction,
                  int64_t ignore_index) {
  FW_CHECK(input.dim() == 4, "[nll_loss2d] expected a 4-D input (N, C, H, W), got shape ", input.sizes());
  return nll_loss(input, target, weight, reduction, ignore_index);
}
Tensor nll_loss_nd(const Tensor& input, const Tensor& target, const std::optional<Tensor>& weight, int64_t reduction,
                   int64_t ignore_index) {
  return nll_loss(input, target, weight, reduction, ignore_index);
}

}  // namespace fw
