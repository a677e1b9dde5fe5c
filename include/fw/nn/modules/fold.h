// Fold / Unfold: libtorch's col2im and im2col modules over functional::fold / functional::unfold.
#pragma once
#include "fw/nn/functional.h"
#include "fw/nn/module.h"

namespace fw::nn {

using FoldOptions = functional::FoldFuncOptions;
using UnfoldOptions = functional::UnfoldFuncOptions;

// Sums columns (N, C * kh * kw, L) of sliding blocks into (N, C, output_size...).
class FoldImpl : public Cloneable<FoldImpl> {
 public:
  FoldImpl(ExpandingArray<2> output_size, ExpandingArray<2> kernel_size)
      : FoldImpl(FoldOptions(output_size, kernel_size)) {}
  explicit FoldImpl(const FoldOptions& options_) : options(options_) {}
  void reset() override {}
  void pretty_print(std::ostream& stream) const override;
  Tensor forward(const Tensor& input) { return functional::fold(input, options); }

  FoldOptions options;
};
FW_MODULE(Fold);

// Extracts sliding blocks of (N, C, H, W) as columns (N, C * kh * kw, L).
class UnfoldImpl : public Cloneable<UnfoldImpl> {
 public:
  UnfoldImpl(ExpandingArray<2> kernel_size) : UnfoldImpl(UnfoldOptions(kernel_size)) {}
  explicit UnfoldImpl(const UnfoldOptions& options_) : options(options_) {}
  void reset() override {}
  void pretty_print(std::ostream& stream) const override;
  Tensor forward(const Tensor& input) { return functional::unfold(input, options); }

  UnfoldOptions options;
};
FW_MODULE(Unfold);

}  // namespace fw::nn
