// Pooling modules: MaxPool1d/2d, AvgPool1d/2d, AdaptiveAvgPool1d/2d (options shared with
// fw::nn::functional, as in libtorch).
#pragma once
#include "fw/nn/functional.h"
#include "fw/nn/module.h"

namespace fw::nn {

template <size_t D>
using MaxPoolOptions = functional::MaxPoolFuncOptions<D>;
using MaxPool1dOptions = MaxPoolOptions<1>;
using MaxPool2dOptions = MaxPoolOptions<2>;
template <size_t D>
using AvgPoolOptions = functional::AvgPoolFuncOptions<D>;
using AvgPool1dOptions = AvgPoolOptions<1>;
using AvgPool2dOptions = AvgPoolOptions<2>;
template <size_t D>
using AdaptiveAvgPoolOptions = functional::AdaptiveAvgPoolFuncOptions<D>;
using AdaptiveAvgPool1dOptions = AdaptiveAvgPoolOptions<1>;
using AdaptiveAvgPool2dOptions = AdaptiveAvgPoolOptions<2>;

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

// Max over windows of (N, C, L) / (N, C, H, W) inputs (or unbatched).
FW_POOL_MODULE(MaxPool1d, MaxPool1dOptions, ExpandingArray<1>, max_pool1d);
FW_POOL_MODULE(MaxPool2d, MaxPool2dOptions, ExpandingArray<2>, max_pool2d);
// Mean over windows.
FW_POOL_MODULE(AvgPool1d, AvgPool1dOptions, ExpandingArray<1>, avg_pool1d);
FW_POOL_MODULE(AvgPool2d, AvgPool2dOptions, ExpandingArray<2>, avg_pool2d);
// Mean over adaptive windows giving output_size.
FW_POOL_MODULE(AdaptiveAvgPool1d, AdaptiveAvgPool1dOptions, ExpandingArray<1>, adaptive_avg_pool1d);
FW_POOL_MODULE(AdaptiveAvgPool2d, AdaptiveAvgPool2dOptions, ExpandingArray<2>, adaptive_avg_pool2d);

#undef FW_POOL_MODULE

}  // namespace fw::nn
