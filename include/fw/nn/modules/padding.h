// Padding modules (libtorch's torch/nn/modules/padding.h): ReflectionPad1d/2d/3d,
// ReplicationPad1d/2d/3d, ZeroPad1d/2d/3d and ConstantPad1d/2d/3d over functional::pad.
#pragma once
#include "fw/nn/functional.h"
#include "fw/nn/module.h"

namespace fw::nn {

// Padding of D spatial dims: one value for every side, or (left, right, top, bottom, front, back)
// up to 2 * D values.
#define FW_PAD_OPTIONS(Name)                                                      \
  template <size_t D>                                                             \
  struct Name##Options {                                                          \
    Name##Options(ExpandingArray<D * 2> padding) : padding_(padding) {}           \
    FW_ARG(ExpandingArray<D * 2>, padding);                                       \
  };                                                                              \
  using Name##1dOptions = Name##Options<1>;                                       \
  using Name##2dOptions = Name##Options<2>;                                       \
  using Name##3dOptions = Name##Options<3>

FW_PAD_OPTIONS(ReflectionPad);
FW_PAD_OPTIONS(ReplicationPad);
FW_PAD_OPTIONS(ZeroPad);
#undef FW_PAD_OPTIONS

// Options of ConstantPad: padding (as above) and the fill value.
template <size_t D>
struct ConstantPadOptions {
  ConstantPadOptions(ExpandingArray<D * 2> padding, double value) : padding_(padding), value_(value) {}
  FW_ARG(ExpandingArray<D * 2>, padding);
  FW_ARG(double, value);
};
using ConstantPad1dOptions = ConstantPadOptions<1>;
using ConstantPad2dOptions = ConstantPadOptions<2>;
using ConstantPad3dOptions = ConstantPadOptions<3>;

namespace detail {
// Shared body of the padding modules: functional::pad with `Options`' padding in `Mode`.
template <size_t D, class Derived, class Options, class Mode>
class PadImplBase : public Cloneable<Derived> {
 public:
  explicit PadImplBase(const Options& options_) : options(options_) {}
  void reset() override {}
  void pretty_print(std::ostream& stream) const override;
  Tensor forward(const Tensor& input);

  Options options;
};
}  // namespace detail

// Reflection (mirror without the edge) padding of the last D dims.
template <size_t D, class Derived>
class ReflectionPadImpl : public detail::PadImplBase<D, Derived, ReflectionPadOptions<D>, enumtype::kReflect> {
 public:
  ReflectionPadImpl(ExpandingArray<D * 2> padding) : ReflectionPadImpl(ReflectionPadOptions<D>(padding)) {}
  explicit ReflectionPadImpl(const ReflectionPadOptions<D>& options_)
      : detail::PadImplBase<D, Derived, ReflectionPadOptions<D>, enumtype::kReflect>(options_) {}
};
// Edge-replicating padding of the last D dims.
template <size_t D, class Derived>
class ReplicationPadImpl : public detail::PadImplBase<D, Derived, ReplicationPadOptions<D>, enumtype::kReplicate> {
 public:
  ReplicationPadImpl(ExpandingArray<D * 2> padding) : ReplicationPadImpl(ReplicationPadOptions<D>(padding)) {}
  explicit ReplicationPadImpl(const ReplicationPadOptions<D>& options_)
      : detail::PadImplBase<D, Derived, ReplicationPadOptions<D>, enumtype::kReplicate>(options_) {}
};
// Zero padding of the last D dims (negative values crop).
template <size_t D, class Derived>
class ZeroPadImpl : public detail::PadImplBase<D, Derived, ZeroPadOptions<D>, enumtype::kConstant> {
 public:
  ZeroPadImpl(ExpandingArray<D * 2> padding) : ZeroPadImpl(ZeroPadOptions<D>(padding)) {}
  explicit ZeroPadImpl(const ZeroPadOptions<D>& options_)
      : detail::PadImplBase<D, Derived, ZeroPadOptions<D>, enumtype::kConstant>(options_) {}
};
// Padding of the last D dims with a constant value.
template <size_t D, class Derived>
class ConstantPadImpl : public detail::PadImplBase<D, Derived, ConstantPadOptions<D>, enumtype::kConstant> {
 public:
  ConstantPadImpl(ExpandingArray<D * 2> padding, double value)
      : ConstantPadImpl(ConstantPadOptions<D>(padding, value)) {}
  explicit ConstantPadImpl(const ConstantPadOptions<D>& options_)
      : detail::PadImplBase<D, Derived, ConstantPadOptions<D>, enumtype::kConstant>(options_) {}
};

// Declares NameNdImpl (a FamilyImpl<N, NameNdImpl>) and its holder NameNd.
#define FW_PAD_MODULE(Family, N)                                               \
  class Family##N##dImpl : public Family##Impl<N, Family##N##dImpl> {         \
   public:                                                                     \
    using Family##Impl<N, Family##N##dImpl>::Family##Impl;                     \
  };                                                                           \
  FW_MODULE(Family##N##d)

FW_PAD_MODULE(ReflectionPad, 1);
FW_PAD_MODULE(ReflectionPad, 2);
FW_PAD_MODULE(ReflectionPad, 3);
FW_PAD_MODULE(ReplicationPad, 1);
FW_PAD_MODULE(ReplicationPad, 2);
FW_PAD_MODULE(ReplicationPad, 3);
FW_PAD_MODULE(ZeroPad, 1);
FW_PAD_MODULE(ZeroPad, 2);
FW_PAD_MODULE(ZeroPad, 3);
FW_PAD_MODULE(ConstantPad, 1);
FW_PAD_MODULE(ConstantPad, 2);
FW_PAD_MODULE(ConstantPad, 3);
#undef FW_PAD_MODULE

}  // namespace fw::nn
