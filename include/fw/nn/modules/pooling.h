// Pooling modules: MaxPool1-3d, AvgPool1-3d, AdaptiveAvgPool1-3d, AdaptiveMaxPool1-3d,
// MaxUnpool1-3d, LPPool1d/2d, FractionalMaxPool2d/3d (options shared with fw::nn::functional, as in libtorch).
#pragma once
#include "fw/nn/functional.h"
#include "fw/nn/module.h"

namespace fw::nn {

template <size_t D>
using MaxPoolOptions = functional::MaxPoolFuncOptions<D>;
using MaxPool1dOptions = MaxPoolOptions<1>;
using MaxPool2dOptions = MaxPoolOptions<2>;
using MaxPool3dOptions = MaxPoolOptions<3>;
template <size_t D>
using AvgPoolOptions = functional::AvgPoolFuncOptions<D>;
using AvgPool1dOptions = AvgPoolOptions<1>;
using AvgPool2dOptions = AvgPoolOptions<2>;
using AvgPool3dOptions = AvgPoolOptions<3>;
template <size_t D>
using AdaptiveAvgPoolOptions = functional::AdaptiveAvgPoolFuncOptions<D>;
using AdaptiveAvgPool1dOptions = AdaptiveAvgPoolOptions<1>;
using AdaptiveAvgPool2dOptions = AdaptiveAvgPoolOptions<2>;
using AdaptiveAvgPool3dOptions = AdaptiveAvgPoolOptions<3>;
template <size_t D>
using AdaptiveMaxPoolOptions = functional::AdaptiveMaxPoolFuncOptions<D>;
using AdaptiveMaxPool1dOptions = AdaptiveMaxPoolOptions<1>;
using AdaptiveMaxPool2dOptions = AdaptiveMaxPoolOptions<2>;
using AdaptiveMaxPool3dOptions = AdaptiveMaxPoolOptions<3>;
// Options of MaxUnpool: kernel_size, stride, padding (output_size is a forward argument).
template <size_t D>
struct MaxUnpoolOptions {
  MaxUnpoolOptions(ExpandingArray<D> kernel_size) : kernel_size_(kernel_size), stride_(kernel_size) {}
  FW_ARG(ExpandingArray<D>, kernel_size);
  FW_ARG(ExpandingArray<D>, stride);
  FW_ARG(ExpandingArray<D>, padding) = 0;
};
using MaxUnpool1dOptions = MaxUnpoolOptions<1>;
using MaxUnpool2dOptions = MaxUnpoolOptions<2>;
using MaxUnpool3dOptions = MaxUnpoolOptions<3>;
template <size_t D>
using LPPoolOptions = functional::LPPoolFuncOptions<D>;
using LPPool1dOptions = LPPoolOptions<1>;
using LPPool2dOptions = LPPoolOptions<2>;

template <size_t D>
using FractionalMaxPoolOptions = functional::FractionalMaxPoolFuncOptions<D>;
using FractionalMaxPool2dOptions = FractionalMaxPoolOptions<2>;
using FractionalMaxPool3dOptions = FractionalMaxPoolOptions<3>;

// Declares NameImpl (a stateless pooling module over Options with forward = functional::fn) and Name.
#define FW_POOL_MODULE(Name, Options, KernelArg, fn)                                     \
  class Name##Impl : public Cloneable<Name##Impl> {                                      \
   public:                                                                               \
    explicit Name##Impl(KernelArg kernel) : Name##Impl(Options(kernel)) {}               \
    explicit Name##Impl(const Options& options_) : options(options_) {}                  \
    void reset() override {}                                                             \
    void pretty_print(std::ostream& stream) const override;                              \
    Tensor forward(const Tensor& input) { return functional::fn(input, options); }       \
    Options options;                                                                     \
  };                                                                                     \
  FW_MODULE(Name)

// A pooling module that also returns the indices of its maxima (forward_with_indices).
#define FW_MAX_POOL_MODULE(Name, Options, KernelArg, fn)                                  \
  class Name##Impl : public Cloneable<Name##Impl> {                                      \
   public:                                                                               \
    explicit Name##Impl(KernelArg kernel) : Name##Impl(Options(kernel)) {}               \
    explicit Name##Impl(const Options& options_) : options(options_) {}                  \
    void reset() override {}                                                             \
    void pretty_print(std::ostream& stream) const override;                              \
    Tensor forward(const Tensor& input) { return functional::fn(input, options); }       \
    std::tuple<Tensor, Tensor> forward_with_indices(const Tensor& input) {               \
      return functional::fn##_with_indices(input, options);                              \
    }                                                                                    \
    Options options;                                                                     \
  };                                                                                     \
  FW_MODULE(Name)

// Max over windows of (N, C, L) / (N, C, H, W) / (N, C, D, H, W) inputs (or unbatched).
FW_MAX_POOL_MODULE(MaxPool1d, MaxPool1dOptions, ExpandingArray<1>, max_pool1d);
FW_MAX_POOL_MODULE(MaxPool2d, MaxPool2dOptions, ExpandingArray<2>, max_pool2d);
FW_MAX_POOL_MODULE(MaxPool3d, MaxPool3dOptions, ExpandingArray<3>, max_pool3d);
// Mean over windows.
FW_POOL_MODULE(AvgPool1d, AvgPool1dOptions, ExpandingArray<1>, avg_pool1d);
FW_POOL_MODULE(AvgPool2d, AvgPool2dOptions, ExpandingArray<2>, avg_pool2d);
FW_POOL_MODULE(AvgPool3d, AvgPool3dOptions, ExpandingArray<3>, avg_pool3d);
// Mean over adaptive windows giving output_size.
FW_POOL_MODULE(AdaptiveAvgPool1d, AdaptiveAvgPool1dOptions, ExpandingArray<1>, adaptive_avg_pool1d);
FW_POOL_MODULE(AdaptiveAvgPool2d, AdaptiveAvgPool2dOptions, ExpandingArrayWithOptionalElem<2>, adaptive_avg_pool2d);
FW_POOL_MODULE(AdaptiveAvgPool3d, AdaptiveAvgPool3dOptions, ExpandingArrayWithOptionalElem<3>, adaptive_avg_pool3d);
// Max over adaptive windows giving output_size.
FW_MAX_POOL_MODULE(AdaptiveMaxPool1d, AdaptiveMaxPool1dOptions, ExpandingArray<1>, adaptive_max_pool1d);
FW_MAX_POOL_MODULE(AdaptiveMaxPool2d, AdaptiveMaxPool2dOptions, ExpandingArrayWithOptionalElem<2>, adaptive_max_pool2d);
FW_MAX_POOL_MODULE(AdaptiveMaxPool3d, AdaptiveMaxPool3dOptions, ExpandingArrayWithOptionalElem<3>, adaptive_max_pool3d);
// Power-average pooling over (N, C, L) (LPPool1d) or (N, C, H, W) (LPPool2d) inputs.
template <size_t D, class Derived>
class LPPoolImpl : public Cloneable<Derived> {
 public:
  LPPoolImpl(double norm_type, ExpandingArray<D> kernel) : LPPoolImpl(LPPoolOptions<D>(norm_type, kernel)) {}
  explicit LPPoolImpl(const LPPoolOptions<D>& options_) : options(options_) {}
  void reset() override {}
  void pretty_print(std::ostream& stream) const override;
  Tensor forward(const Tensor& input) {
    if constexpr (D == 1) return functional::lp_pool1d(input, options);
    else return functional::lp_pool2d(input, options);
  }
  LPPoolOptions<D> options;
};
class LPPool1dImpl : public LPPoolImpl<1, LPPool1dImpl> {
 public:
  using LPPoolImpl::LPPoolImpl;
};
FW_MODULE(LPPool1d);
class LPPool2dImpl : public LPPoolImpl<2, LPPool2dImpl> {
 public:
  using LPPoolImpl::LPPoolImpl;
};
FW_MODULE(LPPool2d);
extern template class LPPoolImpl<1, LPPool1dImpl>;
extern template class LPPoolImpl<2, LPPool2dImpl>;

// Fractional max pooling over (N, C, H, W) / (N, C, D, H, W) inputs (or unbatched).
// options._random_samples() becomes the buffer _random_samples; undefined, each call draws samples.
template <size_t D, class Derived>
class FractionalMaxPoolImpl : public Cloneable<Derived> {
 public:
  FractionalMaxPoolImpl(ExpandingArray<D> kernel) : FractionalMaxPoolImpl(FractionalMaxPoolOptions<D>(kernel)) {}
  explicit FractionalMaxPoolImpl(const FractionalMaxPoolOptions<D>& options_) : options(options_) { reset(); }
  void reset() override;
  void pretty_print(std::ostream& stream) const override;
  Tensor forward(const Tensor& input) { return std::get<0>(forward_with_indices(input)); }
  std::tuple<Tensor, Tensor> forward_with_indices(const Tensor& input);
  FractionalMaxPoolOptions<D> options;
  Tensor _random_samples;
};
class FractionalMaxPool2dImpl : public FractionalMaxPoolImpl<2, FractionalMaxPool2dImpl> {
 public:
  using FractionalMaxPoolImpl::FractionalMaxPoolImpl;
};
FW_MODULE(FractionalMaxPool2d);
class FractionalMaxPool3dImpl : public FractionalMaxPoolImpl<3, FractionalMaxPool3dImpl> {
 public:
  using FractionalMaxPoolImpl::FractionalMaxPoolImpl;
};
FW_MODULE(FractionalMaxPool3d);
extern template class FractionalMaxPoolImpl<2, FractionalMaxPool2dImpl>;
extern template class FractionalMaxPoolImpl<3, FractionalMaxPool3dImpl>;

#undef FW_POOL_MODULE
#undef FW_MAX_POOL_MODULE

// Partial inverse of MaxPoolNd: forward(input, indices, output_size) puts each value at its index
// in zeros of the pool's input size (output_size picks among the sizes that pool to input's).
template <size_t D, class Derived>
class MaxUnpoolImpl : public Cloneable<Derived> {
 public:
  explicit MaxUnpoolImpl(const MaxUnpoolOptions<D>& options_) : options(options_) {}
  void reset() override {}
  void pretty_print(std::ostream& stream) const override;
  Tensor forward(const Tensor& input, const Tensor& indices,
                 const std::optional<std::vector<int64_t>>& output_size = std::nullopt);
  MaxUnpoolOptions<D> options;
};
#define FW_MAX_UNPOOL_MODULE(D)                                                                      \
  class MaxUnpool##D##dImpl : public MaxUnpoolImpl<D, MaxUnpool##D##dImpl> {                         \
   public:                                                                                           \
    explicit MaxUnpool##D##dImpl(ExpandingArray<D> kernel) : MaxUnpoolImpl(MaxUnpoolOptions<D>(kernel)) {} \
    explicit MaxUnpool##D##dImpl(const MaxUnpoolOptions<D>& o) : MaxUnpoolImpl(o) {}                 \
  };                                                                                                 \
  FW_MODULE(MaxUnpool##D##d)
FW_MAX_UNPOOL_MODULE(1);
FW_MAX_UNPOOL_MODULE(2);
FW_MAX_UNPOOL_MODULE(3);
#undef FW_MAX_UNPOOL_MODULE
extern template class MaxUnpoolImpl<1, MaxUnpool1dImpl>;
extern template class MaxUnpoolImpl<2, MaxUnpool2dImpl>;
extern template class MaxUnpoolImpl<3, MaxUnpool3dImpl>;

}  // namespace fw::nn
