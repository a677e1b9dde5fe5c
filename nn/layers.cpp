// Dropout, pooling, embedding and activation modules.
#include <cmath>

#include "fw/autograd_function.h"
#include "fw/indexing.h"
#include "fw/ops_extra.h"
#include "fw/nn/functional.h"
#include "fw/nn/init.h"
#include "fw/nn/modules/activation.h"
#include "fw/nn/modules/dropout.h"
#include "fw/nn/modules/embedding.h"
#include "fw/nn/modules/pooling.h"
#include "nn/print_util.h"

namespace fw::nn {

// ---- dropout

namespace {

void check_p(double p, const char* name) {
  FW_CHECK(p >= 0 && p <= 1, "[", name, "] dropout probability has to be between 0 and 1, but got ", p);
}

}  // namespace

DropoutImpl::DropoutImpl(const DropoutOptions& options_) : options(options_) { reset(); }
void DropoutImpl::reset() { check_p(options.p(), "Dropout"); }
void DropoutImpl::pretty_print(std::ostream& stream) const {
  stream << std::boolalpha << "fw::nn::Dropout(p=" << options.p() << ", inplace=" << options.inplace() << ")";
}
Tensor DropoutImpl::forward(Tensor input) {
  return functional::dropout(
      input, functional::DropoutFuncOptions().p(options.p()).training(is_training()).inplace(options.inplace()));
}

Dropout2dImpl::Dropout2dImpl(const Dropout2dOptions& options_) : options(options_) { reset(); }
void Dropout2dImpl::reset() { check_p(options.p(), "Dropout2d"); }
void Dropout2dImpl::pretty_print(std::ostream& stream) const {
  stream << std::boolalpha << "fw::nn::Dropout2d(p=" << options.p() << ", inplace=" << options.inplace() << ")";
}
Tensor Dropout2dImpl::forward(Tensor input) {
  return functional::dropout2d(
      input, functional::Dropout2dFuncOptions().p(options.p()).training(is_training()).inplace(options.inplace()));
}

// ---- pooling

namespace {

template <class O>
void print_max_pool(std::ostream& s, int d, const O& o) {
  s << std::boolalpha << "fw::nn::MaxPool" << d << "d(kernel_size=" << detail::list(o.kernel_size())
    << ", stride=" << detail::list(o.stride()) << ", padding=" << detail::list(o.padding())
    << ", dilation=" << detail::list(o.dilation()) << ", ceil_mode=" << o.ceil_mode() << ")";
}

template <class O>
void print_avg_pool(std::ostream& s, int d, const O& o) {
  s << "fw::nn::AvgPool" << d << "d(kernel_size=" << detail::list(o.kernel_size())
    << ", stride=" << detail::list(o.stride()) << ", padding=" << detail::list(o.padding()) << ")";
}

}  // namespace

void MaxPool1dImpl::pretty_print(std::ostream& stream) const { print_max_pool(stream, 1, options); }
void MaxPool2dImpl::pretty_print(std::ostream& stream) const { print_max_pool(stream, 2, options); }
void AvgPool1dImpl::pretty_print(std::ostream& stream) const { print_avg_pool(stream, 1, options); }
void AvgPool2dImpl::pretty_print(std::ostream& stream) const { print_avg_pool(stream, 2, options); }
void AdaptiveAvgPool1dImpl::pretty_print(std::ostream& stream) const {
  stream << "fw::nn::AdaptiveAvgPool1d(output_size=" << detail::list(options.output_size()) << ")";
}
void AdaptiveAvgPool2dImpl::pretty_print(std::ostream& stream) const {
  stream << "fw::nn::AdaptiveAvgPool2d(output_size=" << detail::list(options.output_size()) << ")";
}
void MaxPool3dImpl::pretty_print(std::ostream& stream) const { print_max_pool(stream, 3, options); }
void AvgPool3dImpl::pretty_print(std::ostream& stream) const { print_avg_pool(stream, 3, options); }
void AdaptiveAvgPool3dImpl::pretty_print(std::ostream& stream) const {
  stream << "fw::nn::AdaptiveAvgPool3d(output_size=" << detail::list(options.output_size()) << ")";
}
void AdaptiveMaxPool1dImpl::pretty_print(std::ostream& stream) const {
  stream << "fw::nn::AdaptiveMaxPool1d(output_size=" << detail::list(options.output_size()) << ")";
}
void AdaptiveMaxPool2dImpl::pretty_print(std::ostream& stream) const {
  stream << "fw::nn::AdaptiveMaxPool2d(output_size=" << detail::list(options.output_size()) << ")";
}
void AdaptiveMaxPool3dImpl::pretty_print(std::ostream& stream) const {
  stream << "fw::nn::AdaptiveMaxPool3d(output_size=" << detail::list(options.output_size()) << ")";
}

template <size_t D, class Derived>
void LPPoolImpl<D, Derived>::pretty_print(std::ostream& stream) const {
  stream << std::boolalpha << "fw::nn::LPPool" << D << "d(norm_type=" << options.norm_type()
         << ", kernel_size=" << detail::list(options.kernel_size()) << ", stride=" << detail::list(options.stride())
         << ", ceil_mode=" << options.ceil_mode() << ")";
}
template class LPPoolImpl<1, LPPool1dImpl>;
template class LPPoolImpl<2, LPPool2dImpl>;

template <size_t D, class Derived>
void MaxUnpoolImpl<D, Derived>::pretty_print(std::ostream& stream) const {
  stream << "fw::nn::MaxUnpool" << D << "d(kernel_size=" << detail::list(options.kernel_size())
         << ", stride=" << detail::list(options.stride()) << ", padding=" << detail::list(options.padding()) << ")";
}
template <size_t D, class Derived>
Tensor MaxUnpoolImpl<D, Derived>::forward(const Tensor& input, const Tensor& indices,
                                          const std::optional<std::vector<int64_t>>& output_size) {
  auto fo = functional::MaxUnpoolFuncOptions<D>(options.kernel_size())
                .stride(options.stride())
                .padding(options.padding())
                .output_size(output_size);
  if constexpr (D == 1) return functional::max_unpool1d(input, indices, fo);
  else if constexpr (D == 2) return functional::max_unpool2d(input, indices, fo);
  else return functional::max_unpool3d(input, indices, fo);
}
template <size_t D, class Derived>
void FractionalMaxPoolImpl<D, Derived>::reset() {
  _random_samples = this->register_buffer("_random_samples", options._random_samples());
  FW_CHECK(options.output_size() || options.output_ratio(), "[FractionalMaxPool", D,
           "d] requires specifying either an output size, or a pooling ratio");
  FW_CHECK(!(options.output_size() && options.output_ratio()), "[FractionalMaxPool", D,
           "d] only one of output_size and output_ratio may be specified");
  if (options.output_ratio()) {
    for (double r : **options.output_ratio())
      FW_CHECK(0 < r && r < 1, "[FractionalMaxPool", D, "d] output_ratio must be between 0 and 1 (got ",
               ArrayRef<double>(*options.output_ratio()), ")");
  }
}
template <size_t D, class Derived>
void FractionalMaxPoolImpl<D, Derived>::pretty_print(std::ostream& stream) const {
  stream << "fw::nn::FractionalMaxPool" << D << "d()";
}
template <size_t D, class Derived>
std::tuple<Tensor, Tensor> FractionalMaxPoolImpl<D, Derived>::forward_with_indices(const Tensor& input) {
  auto fo = options;
  fo._random_samples(_random_samples);
  if constexpr (D == 2) return functional::fractional_max_pool2d_with_indices(input, fo);
  else return functional::fractional_max_pool3d_with_indices(input, fo);
}
template class FractionalMaxPoolImpl<2, FractionalMaxPool2dImpl>;
template class FractionalMaxPoolImpl<3, FractionalMaxPool3dImpl>;

template class MaxUnpoolImpl<1, MaxUnpool1dImpl>;
template class MaxUnpoolImpl<2, MaxUnpool2dImpl>;
template class MaxUnpoolImpl<3, MaxUnpool3dImpl>;

namespace functional {

namespace {
// The unpooled spatial sizes: the default (in - 1) * stride + kernel - 2 * padding of the last D
// dims, or output_size (D sizes, or D + 2) when each is within one stride of it (PyTorch's rule).
template <size_t D>
std::vector<int64_t> unpool_size(const char* op, const Tensor& x, const MaxUnpoolFuncOptions<D>& o) {
  FW_CHECK(x.dim() >= int64_t(D), "[", op, "] Expected an input with at least ", D, " dims, got ", x.sizes());
  std::vector<int64_t> def;
  for (size_t d = 0; d < D; d++)
    def.push_back((x.size(x.dim() - int64_t(D) + int64_t(d)) - 1) * (*o.stride())[d] + (*o.kernel_size())[d] -
                  2 * (*o.padding())[d]);
  if (!o.output_size()) return def;
  std::vector<int64_t> want = *o.output_size();
  if (want.size() == D + 2) want.erase(want.begin(), want.begin() + 2);
  FW_CHECK(want.size() == D, "[", op, "] output_size should be a sequence containing ", D, " or ", D + 2,
           " elements, but it has a length of '", o.output_size()->size(), "'");
  for (size_t d = 0; d < D; d++) {
    int64_t lo = def[d] - (*o.stride())[d], hi = def[d] + (*o.stride())[d];
    FW_CHECK(lo < want[d] && want[d] < hi, "[", op, "] invalid output_size ", IntArrayRef(want), " (dim ", d, " must be between ",
             lo, " and ", hi, ")");
  }
  return want;
}
}  // namespace

Tensor max_unpool1d(const Tensor& x, const Tensor& indices, const MaxUnpool1dFuncOptions& o) {
  std::vector<int64_t> size = unpool_size("max_unpool1d", x, o);
  size.push_back(1);
  return fw::max_unpool2d(x.unsqueeze(-1), indices.unsqueeze(-1), size).squeeze(-1);
}
Tensor max_unpool2d(const Tensor& x, const Tensor& indices, const MaxUnpool2dFuncOptions& o) {
  return fw::max_unpool2d(x, indices, unpool_size("max_unpool2d", x, o));
}
Tensor max_unpool3d(const Tensor& x, const Tensor& indices, const MaxUnpool3dFuncOptions& o) {
  return fw::max_unpool3d(x, indices, unpool_size("max_unpool3d", x, o), o.stride(), o.padding());
}

Tensor lp_pool1d(const Tensor& x, const LPPool1dFuncOptions& o) {
  Tensor out = fw::avg_pool1d(x.pow(o.norm_type()), o.kernel_size(), o.stride(), 0, o.ceil_mode());
  return (fw::sign(out) * fw::relu(fw::abs(out))).mul((*o.kernel_size())[0]).pow(1.0 / o.norm_type());
}
Tensor lp_pool2d(const Tensor& x, const LPPool2dFuncOptions& o) {
  Tensor out = fw::avg_pool2d(x.pow(o.norm_type()), o.kernel_size(), o.stride(), 0, o.ceil_mode());
  int64_t area = (*o.kernel_size())[0] * (*o.kernel_size())[1];
  return (fw::sign(out) * fw::relu(fw::abs(out))).mul(area).pow(1.0 / o.norm_type());
}

namespace {
// libtorch's fractional_max_pool{2,3}d_with_indices: the output size from output_ratio when no
// output_size is given, samples drawn when none are given, then the ATen op.
template <size_t D>
std::tuple<Tensor, Tensor> fractional_pool(const char* op, const Tensor& x, const FractionalMaxPoolFuncOptions<D>& o) {
  FW_CHECK(o.output_size() || o.output_ratio(), "[", op,
           "] requires specifying either an output_size or an output_ratio");
  FW_CHECK(x.dim() >= int64_t(D) + 1, "[", op, "] Expected ", D + 1, "D or ", D + 2, "D tensor, but got: ", x.sizes());
  std::vector<int64_t> out;
  for (size_t d = 0; d < D; d++) {
    const int64_t in = x.size(x.dim() - int64_t(D) + int64_t(d));
    out.push_back(o.output_size() ? (**o.output_size())[d] : int64_t(double(in) * (**o.output_ratio())[d]));
  }
  Tensor samples = o._random_samples();
  if (!samples.defined()) {
    const int64_t n = x.dim() == int64_t(D) + 2 ? x.size(0) : 1, c = x.size(x.dim() - int64_t(D) - 1);
    samples = fw::rand({n, c, int64_t(D)}, TensorOptions(x.dtype()).device(x.device()));
  }
  if constexpr (D == 2) return fw::fractional_max_pool2d(x, o.kernel_size(), out, samples);
  else return fw::fractional_max_pool3d(x, o.kernel_size(), out, samples);
}
}  // namespace

std::tuple<Tensor, Tensor> fractional_max_pool2d_with_indices(const Tensor& x, const FractionalMaxPool2dFuncOptions& o) {
  return fractional_pool("fractional_max_pool2d", x, o);
}
std::tuple<Tensor, Tensor> fractional_max_pool3d_with_indices(const Tensor& x, const FractionalMaxPool3dFuncOptions& o) {
  return fractional_pool("fractional_max_pool3d", x, o);
}

}  // namespace functional

// ---- embedding

EmbeddingImpl::EmbeddingImpl(EmbeddingOptions options_) : options(std::move(options_)) { reset(); }

void EmbeddingImpl::reset() {
  const int64_t n = options.num_embeddings(), dim = options.embedding_dim();
  if (auto& pad = options.padding_idx()) {
    FW_CHECK(*pad < n && *pad >= -n, "[Embedding] Padding_idx must be within num_embeddings (got ", *pad, " for ", n,
             " embeddings)");
    if (*pad < 0) *pad += n;
  }
  if (!options._weight().defined()) {
    weight = register_parameter("weight", fw::empty({n, dim}));
    reset_parameters();
  } else {
    FW_CHECK(options._weight().sizes().equals({n, dim}),
             "[Embedding] Shape of _weight does not match num_embeddings and embedding_dim (got ",
             options._weight().sizes(), ", expected [", n, ", ", dim, "])");
    weight = register_parameter("weight", options._weight());
  }
}

void EmbeddingImpl::reset_parameters() {
  init::normal_(weight);
  if (options.padding_idx()) {
    NoGradGuard no_grad;
    weight.select(0, *options.padding_idx()).fill_(0);
  }
}

void EmbeddingImpl::pretty_print(std::ostream& stream) const {
  stream << std::boolalpha << "fw::nn::Embedding(num_embeddings=" << options.num_embeddings()
         << ", embedding_dim=" << options.embedding_dim();
  if (options.padding_idx()) stream << ", padding_idx=" << *options.padding_idx();
  if (options.max_norm()) stream << ", max_norm=" << *options.max_norm();
  if (options.norm_type() != 2) stream << ", norm_type=" << options.norm_type();
  if (options.scale_grad_by_freq()) stream << ", scale_grad_by_freq=true";
  if (options.sparse()) stream << ", sparse=true";
  stream << ")";
}

// Note [Embedding padding_idx]
// fw::embedding has no padding_idx gradient rule, so the functional form cuts the gradient at
// padded positions itself: their output values are the same, taken from a detached lookup.
// scale_grad_by_freq divides each looked-up row's gradient by the row's count in the input: the
// lookup passes through ScaleGrad, whose backward multiplies the gradient by 1 / count.
namespace {
struct ScaleGrad : autograd::Function<ScaleGrad> {
  static Tensor forward(autograd::AutogradContext* ctx, Tensor x, Tensor scale) {
    ctx->save_for_backward({scale});
    return x.clone();
  }
  static autograd::variable_list backward(autograd::AutogradContext* ctx, autograd::variable_list g) {
    return {g[0] * ctx->get_saved_variables()[0], Tensor()};
  }
};
}  // namespace
namespace functional {
Tensor embedding(const Tensor& input, const Tensor& weight, const EmbeddingFuncOptions& o) {
  FW_CHECK(weight.dim() == 2, "[embedding] weight must be 2-D (num_embeddings, embedding_dim), got shape ",
           weight.sizes());
  FW_CHECK(input.dtype() == kLong || input.dtype() == kInt, "[embedding] Expected tensor for argument #1 'indices' "
           "to have one of the following scalar types: Long, Int; but got ", dtype_str(input.dtype()), " instead");
  const int64_t V = weight.size(0);
  std::optional<int64_t> pad = o.padding_idx();
  if (pad) {
    FW_CHECK(*pad >= -V && *pad < V, "[embedding] Padding_idx must be within num_embeddings (", V, "), got ", *pad);
    if (*pad < 0) pad = *pad + V;
  }
  if (o.max_norm()) {
    NoGradGuard no_grad;
    Tensor rows = input.reshape({-1}).to(kLong);
    Tensor w = weight.index_select(0, rows);
    Tensor norms = fw::norm(w, o.norm_type(), {1}, true);
    Tensor scale = fw::where(norms.gt(*o.max_norm()), norms.add(1e-7).reciprocal().mul(*o.max_norm()),
                             fw::ones_like(norms));
    Tensor wt = weight;
    wt.index_put_({indexing::TensorIndex(rows)}, w.mul(scale));
  }
  Tensor out = fw::embedding(weight, input);
  if (!out.requires_grad()) return out;
  if (o.scale_grad_by_freq()) {
    Tensor idx = input.to(kLong);
    Tensor counts = fw::bincount(idx.reshape({-1}), std::nullopt, V).index_select(0, idx.reshape({-1}));
    Tensor s = counts.to(out.dtype()).reciprocal().reshape(idx.sizes()).unsqueeze(-1);
    out = ScaleGrad::apply(out, s);
  }
  if (pad) out = fw::where(input.eq(*pad).unsqueeze(-1), out.detach(), out);
  return out;
}
}  // namespace functional

Tensor EmbeddingImpl::forward(const Tensor& indices) {
  return functional::embedding(indices, weight, functional::EmbeddingFuncOptions()
                                                    .padding_idx(options.padding_idx())
                                                    .max_norm(options.max_norm())
                                                    .norm_type(options.norm_type())
                                                    .scale_grad_by_freq(options.scale_grad_by_freq())
                                                    .sparse(options.sparse()));
}

Embedding Embedding::from_pretrained(const Tensor& embeddings, const EmbeddingFromPretrainedOptions& options) {
  FW_CHECK(embeddings.dim() == 2, "[Embedding::from_pretrained] Embeddings parameter is expected to be 2-dimensional,"
           " got shape ", embeddings.sizes());
  Embedding e(EmbeddingOptions(embeddings.size(0), embeddings.size(1))
                  ._weight(embeddings)
                  .padding_idx(options.padding_idx())
                  .max_norm(options.max_norm())
                  .norm_type(options.norm_type())
                  .scale_grad_by_freq(options.scale_grad_by_freq())
                  .sparse(options.sparse()));
  e->weight.set_requires_grad(!options.freeze());
  return e;
}

// ---- activations

void ReLUImpl::pretty_print(std::ostream& stream) const {
  stream << "fw::nn::ReLU(" << (options.inplace() ? "inplace=true" : "") << ")";
}
void ReLU6Impl::pretty_print(std::ostream& stream) const {
  stream << "fw::nn::ReLU6(" << (options.inplace() ? "inplace=true" : "") << ")";
}
void SELUImpl::pretty_print(std::ostream& stream) const {
  stream << "fw::nn::SELU(" << (options.inplace() ? "inplace=true" : "") << ")";
}
void GELUImpl::pretty_print(std::ostream& stream) const {
  stream << "fw::nn::GELU()";  // libtorch 1.13 prints no options
}
void ELUImpl::pretty_print(std::ostream& stream) const {
  stream << "fw::nn::ELU(alpha=" << options.alpha() << (options.inplace() ? ", inplace=true" : "") << ")";
}
void LeakyReLUImpl::pretty_print(std::ostream& stream) const {
  stream << "fw::nn::LeakyReLU(negative_slope=" << options.negative_slope()
         << (options.inplace() ? ", inplace=true" : "") << ")";
}
void SoftplusImpl::pretty_print(std::ostream& stream) const {
  stream << "fw::nn::Softplus(beta=" << options.beta() << ", threshold=" << options.threshold() << ")";
}
void SiLUImpl::pretty_print(std::ostream& stream) const { stream << "fw::nn::SiLU()"; }
void HardswishImpl::pretty_print(std::ostream& stream) const { stream << "fw::nn::Hardswish()"; }
void HardsigmoidImpl::pretty_print(std::ostream& stream) const { stream << "fw::nn::Hardsigmoid()"; }
void SigmoidImpl::pretty_print(std::ostream& stream) const { stream << "fw::nn::Sigmoid()"; }
void TanhImpl::pretty_print(std::ostream& stream) const { stream << "fw::nn::Tanh()"; }
void MishImpl::pretty_print(std::ostream& stream) const { stream << "fw::nn::Mish()"; }

HardtanhImpl::HardtanhImpl(const HardtanhOptions& options_) : options(options_) { reset(); }
void HardtanhImpl::reset() {
  FW_CHECK(options.max_val() > options.min_val(), "[Hardtanh] max_val must be greater than min_val (got min_val ",
           options.min_val(), ", max_val ", options.max_val(), ")");
}
void HardtanhImpl::pretty_print(std::ostream& stream) const {
  stream << "fw::nn::Hardtanh(min_val=" << options.min_val() << ", max_val=" << options.max_val()
         << (options.inplace() ? ", inplace=true" : "") << ")";
}

void SoftmaxImpl::pretty_print(std::ostream& stream) const { stream << "fw::nn::Softmax(dim=" << options.dim() << ")"; }
void LogSoftmaxImpl::pretty_print(std::ostream& stream) const {
  stream << "fw::nn::LogSoftmax(dim=" << options.dim() << ")";
}

}  // namespace fw::nn
