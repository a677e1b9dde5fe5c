// libtorch spellings that are not plain names in namespace fw, so that programs written against
// libtorch compile with `namespace torch = fw;` (fw.h includes this header):
//  - the namespaces at:: and c10:: as aliases of fw (at::Tensor, c10::optional, at::parallel_for,
//    c10::Error, c10::irange, ...). Define FW_NO_TORCH_NAMESPACES before including fw.h to leave
//    those two names free;
//  - the macros TORCH_MODULE, TORCH_ARG, TORCH_CHECK (and its typed forms), TORCH_WARN,
//    TORCH_INTERNAL_ASSERT, AT_ERROR, AT_ASSERT and the AT_DISPATCH_* family, each defined only
//    when the name is still free;
//  - c10::str, toString(ScalarType), ScalarTypeToCPPType, irange, the short dtype names (kF32,
//    kI64, ...), and stream output for TensorOptions and MemoryFormat.
#pragma once
#include <cstdint>
#include <iostream>
#include <iterator>
#include <sstream>
#include <string>
#include <type_traits>

#include "fw/dtype.h"
#include "fw/error.h"
#include "fw/nn/module.h"
#include "fw/nn/options.h"
#include "fw/ops.h"
#include "fw/parallel.h"
#include "fw/tensor.h"

namespace fw {

// c10::str: the arguments streamed into one string.
template <class... Args>
std::string str(const Args&... args) {
  std::ostringstream os;
  (os << ... << args);
  return os.str();
}

// torch/types.h's short dtype names.
constexpr ScalarType kU8 = kUInt8, kI8 = kInt8, kI16 = kInt16, kI32 = kInt32, kI64 = kInt64;
constexpr ScalarType kF16 = kHalf, kF32 = kFloat, kF64 = kDouble;

// libtorch's c10::toString(ScalarType): "Float", "Long", ...
inline const char* toString(ScalarType t) { return dtype_name(t); }
// c10's dtype predicates and conversions under their libtorch names.
inline bool isFloatingType(ScalarType t) { return is_floating_point(t); }
inline bool isComplexType(ScalarType t) { return is_complex(t); }
inline bool isIntegralType(ScalarType t, bool include_bool) { return is_integral(t, include_bool); }
inline bool isReducedFloatingType(ScalarType t) { return t == kHalf || t == kBFloat16; }
inline bool isSignedType(ScalarType t) { return t != kBool && t != kUInt8; }
inline ScalarType promoteTypes(ScalarType a, ScalarType b) { return promote_types(a, b); }
inline ScalarType toRealValueType(ScalarType t) { return to_real_value_type(t); }
inline ScalarType toComplexType(ScalarType t) { return to_complex_type(t); }
using IntList = IntArrayRef;  // ATen's old name
// c10's small-buffer vector and ATen's vector of sizes, as fw's SmallVec (the common subset of
// their interface: push_back/emplace_back, append, iteration, indexing, ArrayRef conversion).
template <class T, unsigned N = 4>
using SmallVector = SmallVec<T, N>;
using DimVector = DimVec;

// ATen's argument checks for hand-written ops (at::checkDim, ...): a tensor with its name and
// position, and checks that raise with libtorch's wording.
struct TensorArg {
  const Tensor& tensor;
  const char* name;
  int pos;  // 1-based
  TensorArg(const Tensor& t, const char* n, int p) : tensor(t), name(n), pos(p) {}
  const Tensor* operator->() const { return &tensor; }
  const Tensor& operator*() const { return tensor; }
};
inline std::ostream& operator<<(std::ostream& os, const TensorArg& t) {
  return os << "argument #" << t.pos << " '" << t.name << "'";
}
using CheckedFrom = const char*;
void checkDim(CheckedFrom c, const TensorArg& t, int64_t dim);
void checkDimRange(CheckedFrom c, const TensorArg& t, int64_t dim_start, int64_t dim_end);
void checkSize(CheckedFrom c, const TensorArg& t, IntArrayRef sizes);
void checkSize(CheckedFrom c, const TensorArg& t, int64_t dim, int64_t size);
void checkNumel(CheckedFrom c, const TensorArg& t, int64_t numel);
void checkSameSize(CheckedFrom c, const TensorArg& t1, const TensorArg& t2);
void checkSameType(CheckedFrom c, const TensorArg& t1, const TensorArg& t2);
void checkScalarType(CheckedFrom c, const TensorArg& t, ScalarType s);
void checkContiguous(CheckedFrom c, const TensorArg& t);
void checkDefined(CheckedFrom c, const TensorArg& t);
void checkAllSameType(CheckedFrom c, ArrayRef<TensorArg> tensors);

namespace autograd {
// libtorch's make_variable: a leaf sharing `data`'s memory, with no history.
inline Tensor make_variable(const Tensor& data, bool requires_grad = false) {
  Tensor v = data.detach();
  if (requires_grad) v.requires_grad_(true);
  return v;
}
}  // namespace autograd

namespace detail {
// Times its lifetime as a "user" region of FW_PROFILE's report (RECORD_FUNCTION).
class UserProfileScope {
 public:
  explicit UserProfileScope(const std::string& name);
  ~UserProfileScope();
  UserProfileScope(const UserProfileScope&) = delete;
  UserProfileScope& operator=(const UserProfileScope&) = delete;

 private:
  void* scope_ = nullptr;
};
}  // namespace detail

// The C++ element type of a ScalarType (what AT_DISPATCH_* names scalar_t). Complex dtypes map to
// std::complex (libtorch: c10::complex, the same layout).
template <ScalarType S> struct ScalarTypeToCPPType;
template <> struct ScalarTypeToCPPType<ScalarType::Bool> { using type = bool; };
template <> struct ScalarTypeToCPPType<ScalarType::UInt8> { using type = uint8_t; };
template <> struct ScalarTypeToCPPType<ScalarType::Int8> { using type = int8_t; };
template <> struct ScalarTypeToCPPType<ScalarType::Int16> { using type = int16_t; };
template <> struct ScalarTypeToCPPType<ScalarType::Int32> { using type = int32_t; };
template <> struct ScalarTypeToCPPType<ScalarType::Int64> { using type = int64_t; };
template <> struct ScalarTypeToCPPType<ScalarType::Half> { using type = Half; };
template <> struct ScalarTypeToCPPType<ScalarType::BFloat16> { using type = BFloat16; };
template <> struct ScalarTypeToCPPType<ScalarType::Float> { using type = float; };
template <> struct ScalarTypeToCPPType<ScalarType::Double> { using type = double; };
template <> struct ScalarTypeToCPPType<ScalarType::ComplexFloat> { using type = complex64; };
template <> struct ScalarTypeToCPPType<ScalarType::ComplexDouble> { using type = complex128; };
template <ScalarType S> using ScalarTypeToCPPTypeT = typename ScalarTypeToCPPType<S>::type;

// c10::irange(end) and irange(begin, end): the integers of [begin, end) for range-for loops (empty
// when end <= begin).
template <class I>
class IntegerRange {
 public:
  struct iterator {
    using iterator_category = std::forward_iterator_tag;
    using value_type = I;
    using difference_type = std::ptrdiff_t;
    using pointer = const I*;
    using reference = I;
    I v;
    I operator*() const { return v; }
    iterator& operator++() { ++v; return *this; }
    iterator operator++(int) { auto old = *this; ++v; return old; }
    bool operator==(const iterator& o) const { return v == o.v; }
    bool operator!=(const iterator& o) const { return v != o.v; }
  };
  IntegerRange(I begin, I end) : begin_(begin), end_(end < begin ? begin : end) {}
  iterator begin() const { return {begin_}; }
  iterator end() const { return {end_}; }

 private:
  I begin_, end_;
};
template <class I, class = std::enable_if_t<std::is_integral_v<I>>>
IntegerRange<I> irange(I end) { return IntegerRange<I>(I(0), end); }
template <class I1, class I2, class = std::enable_if_t<std::is_integral_v<I1> && std::is_integral_v<I2>>>
IntegerRange<std::common_type_t<I1, I2>> irange(I1 begin, I2 end) {
  using I = std::common_type_t<I1, I2>;
  return IntegerRange<I>(I(begin), I(end));
}

inline std::ostream& operator<<(std::ostream& os, MemoryFormat f) {
  switch (f) {
    case MemoryFormat::Contiguous: return os << "Contiguous";
    case MemoryFormat::Preserve: return os << "Preserve";
    case MemoryFormat::ChannelsLast: return os << "ChannelsLast";
    case MemoryFormat::ChannelsLast3d: return os << "ChannelsLast3d";
  }
  return os << "MemoryFormat(" << int(f) << ")";
}

// libtorch's form: each field, "(default)" after those not set.
inline std::ostream& operator<<(std::ostream& os, const TensorOptions& o) {
  auto d = [](bool set) { return set ? "" : " (default)"; };
  os << std::boolalpha << "TensorOptions(dtype=" << o.dtype() << d(o.has_dtype()) << ", device=" << o.device()
     << d(o.has_device()) << ", layout=" << o.layout() << d(o.has_layout()) << ", requires_grad=" << o.requires_grad()
     << d(o.has_requires_grad()) << ", pinned_memory=" << o.pinned_memory() << d(o.has_pinned_memory())
     << ", memory_format=";
  if (o.has_memory_format()) os << *o.memory_format_opt();
  else os << "(nullopt)";
  return os << ")";
}

// libtorch's process-wide context (at::globalContext()): the switches programs set at start-up.
// fw's CPU kernels are deterministic for a given thread count (fixed reduction orders), and there
// is no cuDNN/cuBLAS in a CPU build, so these flags are stored and read back and change no
// result. defaultGenerator is the generator fw::manual_seed seeds.
class Context {
 public:
  bool deterministicAlgorithms() const { return deterministic_; }
  bool deterministicAlgorithmsWarnOnly() const { return deterministic_warn_only_; }
  void setDeterministicAlgorithms(bool on, bool warn_only = false) {
    deterministic_ = on;
    deterministic_warn_only_ = warn_only;
  }
  bool deterministicCuDNN() const { return deterministic_cudnn_; }
  void setDeterministicCuDNN(bool on) { deterministic_cudnn_ = on; }
  bool benchmarkCuDNN() const { return benchmark_cudnn_; }
  void setBenchmarkCuDNN(bool on) { benchmark_cudnn_ = on; }
  bool userEnabledCuDNN() const { return enabled_cudnn_; }
  void setUserEnabledCuDNN(bool on) { enabled_cudnn_ = on; }
  bool allowTF32CuBLAS() const { return tf32_cublas_; }
  void setAllowTF32CuBLAS(bool on) { tf32_cublas_ = on; }
  bool allowTF32CuDNN() const { return tf32_cudnn_; }
  void setAllowTF32CuDNN(bool on) { tf32_cudnn_ = on; }
  static bool hasCUDA() { return false; }
  static bool hasCuDNN() { return false; }
  static bool hasMKL() { return false; }
  static bool hasMKLDNN() { return false; }
  static bool hasOpenMP() { return true; }
  static bool hasLAPACK() { return true; }
  const Generator& defaultGenerator(Device device) const {
    FW_CHECK(device.is_cpu(), "[defaultGenerator] no ", device, " generator in this build");
    return detail::getDefaultCPUGenerator();
  }

 private:
  bool deterministic_ = false, deterministic_warn_only_ = false, deterministic_cudnn_ = false;
  bool benchmark_cudnn_ = false, enabled_cudnn_ = true, tf32_cublas_ = false, tf32_cudnn_ = true;
};
inline Context& globalContext() {
  static Context ctx;
  return ctx;
}

// Dispatch below autograd (libtorch's guards for kernels that call other ops without recording
// them): ops inside run without autograd recording.
struct AutoDispatchBelowADInplaceOrView {
  NoGradGuard guard;
};
using AutoDispatchBelowAutograd = AutoDispatchBelowADInplaceOrView;
using AutoNonVariableTypeMode = AutoDispatchBelowADInplaceOrView;

namespace detail {
// Builds the message of a failed TORCH_CHECK: the caller's message, or libtorch's default.
template <class... Args>
std::string check_message(const char* cond, const Args&... args) {
  std::string m = str(args...);
  return m.empty() ? str("Expected ", cond, " to be true, but got false.") : m;
}
template <class E, class... Args>
[[noreturn]] __attribute__((noinline, cold)) void torch_check_fail(const char* cond, const Args&... args) {
  throw E(check_message(cond, args...));
}
template <class... Args>
[[noreturn]] __attribute__((noinline, cold)) void internal_assert_fail(const char* cond, const char* file, int line,
                                                                        const Args&... args) {
  throw Error(str("INTERNAL ASSERT FAILED at \"", file, "\":", line, ": ", cond, ". ", str(args...)));
}
inline void torch_warn(const std::string& msg, const char* file, int line) {
  std::cerr << "[W " << file << ":" << line << "] Warning: " << msg << std::endl;
}
[[noreturn]] inline void dispatch_fail(const char* name, ScalarType t) {
  throw NotImplementedError(str("\"", name, "\" not implemented for '", dtype_name(t), "'"));
}
}  // namespace detail

}  // namespace fw

#ifndef FW_NO_TORCH_NAMESPACES
namespace at = fw;
namespace c10 = fw;
namespace caffe2 {
using fw::TypeMeta;
}
#endif

#ifndef TORCH_MODULE
#define TORCH_MODULE(Name) FW_MODULE(Name)
#endif
#ifndef TORCH_MODULE_IMPL
#define TORCH_MODULE_IMPL(Name, Impl) FW_MODULE_IMPL(Name, Impl)
#endif
#ifndef TORCH_ARG
#define TORCH_ARG(T, name) FW_ARG(T, name)
#endif

// ATen's profiler hook for hand-written ops: the region shows in FW_PROFILE's report; the inputs
// are not evaluated.
#ifndef RECORD_FUNCTION
#define FW_RECORD_CAT_(a, b) a##b
#define FW_RECORD_NAME_(line) FW_RECORD_CAT_(fw_record_function_, line)
#define RECORD_FUNCTION(fn, inputs, ...) ::fw::detail::UserProfileScope FW_RECORD_NAME_(__LINE__)(fn)
#endif

#ifndef C10_LIKELY
#define C10_LIKELY(x) FW_LIKELY(x)
#define C10_UNLIKELY(x) FW_UNLIKELY(x)
#endif

// TORCH_CHECK(cond, message parts...): throws fw::Error (c10::Error) when cond is false; the typed
// forms throw the matching subclass. The message is only built on failure.
#ifndef TORCH_CHECK
#define FW_TORCH_CHECK_AS_(E, cond, ...) \
  do {                                   \
    if (FW_UNLIKELY(!(cond))) ::fw::detail::torch_check_fail<E>(#cond, ##__VA_ARGS__); \
  } while (0)
#define TORCH_CHECK(cond, ...) FW_TORCH_CHECK_AS_(::fw::Error, cond, ##__VA_ARGS__)
#define TORCH_CHECK_INDEX(cond, ...) FW_TORCH_CHECK_AS_(::fw::IndexError, cond, ##__VA_ARGS__)
#define TORCH_CHECK_VALUE(cond, ...) FW_TORCH_CHECK_AS_(::fw::ValueError, cond, ##__VA_ARGS__)
#define TORCH_CHECK_TYPE(cond, ...) FW_TORCH_CHECK_AS_(::fw::TypeError, cond, ##__VA_ARGS__)
#define TORCH_CHECK_NOT_IMPLEMENTED(cond, ...) FW_TORCH_CHECK_AS_(::fw::NotImplementedError, cond, ##__VA_ARGS__)
#define TORCH_CHECK_LINALG(cond, ...) FW_TORCH_CHECK_AS_(::fw::LinAlgError, cond, ##__VA_ARGS__)
#endif
#ifndef TORCH_INTERNAL_ASSERT
#define TORCH_INTERNAL_ASSERT(cond, ...) \
  do {                                   \
    if (FW_UNLIKELY(!(cond))) ::fw::detail::internal_assert_fail(#cond, __FILE__, __LINE__, ##__VA_ARGS__); \
  } while (0)
#endif
#ifndef TORCH_INTERNAL_ASSERT_DEBUG_ONLY
#ifdef NDEBUG
// As in libtorch: compiled (so it must stay valid) but never evaluated in release builds.
#define TORCH_INTERNAL_ASSERT_DEBUG_ONLY(...) \
  while (false) TORCH_INTERNAL_ASSERT(__VA_ARGS__)
#else
#define TORCH_INTERNAL_ASSERT_DEBUG_ONLY(...) TORCH_INTERNAL_ASSERT(__VA_ARGS__)
#endif
#endif
#ifndef TORCH_WARN
#define TORCH_WARN(...) ::fw::detail::torch_warn(::fw::str(__VA_ARGS__), __FILE__, __LINE__)
#endif
#ifndef TORCH_WARN_ONCE
#define TORCH_WARN_ONCE(...)                                                           \
  do {                                                                                 \
    static const bool fw_warned_once_ [[maybe_unused]] = (TORCH_WARN(__VA_ARGS__), true); \
  } while (0)
#endif
#ifndef AT_ERROR
#define AT_ERROR(...) throw ::fw::Error(::fw::str(__VA_ARGS__))
#endif
#ifndef AT_ASSERT
#define AT_ASSERT(...) TORCH_INTERNAL_ASSERT(__VA_ARGS__)
#endif

// AT_DISPATCH_*(type, "name", [&] { ... scalar_t ... }): runs the lambda with scalar_t bound to
// the C++ type of `type` and returns its result; a dtype outside the list throws
// fw::NotImplementedError ("name" not implemented for 'Half'). AT_DISPATCH_SWITCH with
// AT_DISPATCH_CASE* builds other lists.
#ifndef AT_DISPATCH_SWITCH
#define AT_DISPATCH_CASE(enum_type, ...)                                           \
  case enum_type: {                                                                \
    using scalar_t [[maybe_unused]] = ::fw::ScalarTypeToCPPTypeT<enum_type>;       \
    return __VA_ARGS__();                                                          \
  }
#define AT_DISPATCH_SWITCH(TYPE, NAME, ...)                     \
  [&] {                                                          \
    const ::fw::ScalarType fw_dispatch_type_ = TYPE;             \
    switch (fw_dispatch_type_) {                                 \
      __VA_ARGS__                                                \
      default:                                                   \
        ::fw::detail::dispatch_fail(NAME, fw_dispatch_type_);    \
    }                                                            \
  }()

#define AT_DISPATCH_CASE_FLOATING_TYPES(...)                 \
  AT_DISPATCH_CASE(::fw::ScalarType::Double, __VA_ARGS__)    \
  AT_DISPATCH_CASE(::fw::ScalarType::Float, __VA_ARGS__)
#define AT_DISPATCH_CASE_FLOATING_TYPES_AND_HALF(...)     \
  AT_DISPATCH_CASE_FLOATING_TYPES(__VA_ARGS__)            \
  AT_DISPATCH_CASE(::fw::ScalarType::Half, __VA_ARGS__)
#define AT_DISPATCH_CASE_REDUCED_FLOATING_TYPES(...)       \
  AT_DISPATCH_CASE(::fw::ScalarType::Half, __VA_ARGS__)    \
  AT_DISPATCH_CASE(::fw::ScalarType::BFloat16, __VA_ARGS__)
#define AT_DISPATCH_CASE_INTEGRAL_TYPES(...)               \
  AT_DISPATCH_CASE(::fw::ScalarType::UInt8, __VA_ARGS__)   \
  AT_DISPATCH_CASE(::fw::ScalarType::Int8, __VA_ARGS__)    \
  AT_DISPATCH_CASE(::fw::ScalarType::Int32, __VA_ARGS__)   \
  AT_DISPATCH_CASE(::fw::ScalarType::Int64, __VA_ARGS__)   \
  AT_DISPATCH_CASE(::fw::ScalarType::Int16, __VA_ARGS__)
#define AT_DISPATCH_CASE_COMPLEX_TYPES(...)                     \
  AT_DISPATCH_CASE(::fw::ScalarType::ComplexFloat, __VA_ARGS__) \
  AT_DISPATCH_CASE(::fw::ScalarType::ComplexDouble, __VA_ARGS__)
#define AT_DISPATCH_CASE_ALL_TYPES(...)           \
  AT_DISPATCH_CASE_INTEGRAL_TYPES(__VA_ARGS__)    \
  AT_DISPATCH_CASE_FLOATING_TYPES(__VA_ARGS__)
#define AT_DISPATCH_CASE_FLOATING_AND_COMPLEX_TYPES(...) \
  AT_DISPATCH_CASE_FLOATING_TYPES(__VA_ARGS__)           \
  AT_DISPATCH_CASE_COMPLEX_TYPES(__VA_ARGS__)
#define AT_DISPATCH_CASE_ALL_TYPES_AND_COMPLEX(...) \
  AT_DISPATCH_CASE_ALL_TYPES(__VA_ARGS__)           \
  AT_DISPATCH_CASE_COMPLEX_TYPES(__VA_ARGS__)

#define AT_DISPATCH_FLOATING_TYPES(TYPE, NAME, ...) \
  AT_DISPATCH_SWITCH(TYPE, NAME, AT_DISPATCH_CASE_FLOATING_TYPES(__VA_ARGS__))
#define AT_DISPATCH_FLOATING_TYPES_AND_HALF(TYPE, NAME, ...) \
  AT_DISPATCH_SWITCH(TYPE, NAME, AT_DISPATCH_CASE_FLOATING_TYPES_AND_HALF(__VA_ARGS__))
#define AT_DISPATCH_REDUCED_FLOATING_TYPES(TYPE, NAME, ...) \
  AT_DISPATCH_SWITCH(TYPE, NAME, AT_DISPATCH_CASE_REDUCED_FLOATING_TYPES(__VA_ARGS__))
#define AT_DISPATCH_FLOATING_TYPES_AND(T1, TYPE, NAME, ...) \
  AT_DISPATCH_SWITCH(TYPE, NAME, AT_DISPATCH_CASE_FLOATING_TYPES(__VA_ARGS__) AT_DISPATCH_CASE(T1, __VA_ARGS__))
#define AT_DISPATCH_FLOATING_TYPES_AND2(T1, T2, TYPE, NAME, ...)                                           \
  AT_DISPATCH_SWITCH(TYPE, NAME, AT_DISPATCH_CASE_FLOATING_TYPES(__VA_ARGS__) AT_DISPATCH_CASE(T1, __VA_ARGS__) \
                                     AT_DISPATCH_CASE(T2, __VA_ARGS__))
#define AT_DISPATCH_FLOATING_TYPES_AND3(T1, T2, T3, TYPE, NAME, ...)                                        \
  AT_DISPATCH_SWITCH(TYPE, NAME, AT_DISPATCH_CASE_FLOATING_TYPES(__VA_ARGS__) AT_DISPATCH_CASE(T1, __VA_ARGS__) \
                                     AT_DISPATCH_CASE(T2, __VA_ARGS__) AT_DISPATCH_CASE(T3, __VA_ARGS__))
#define AT_DISPATCH_INTEGRAL_TYPES(TYPE, NAME, ...) \
  AT_DISPATCH_SWITCH(TYPE, NAME, AT_DISPATCH_CASE_INTEGRAL_TYPES(__VA_ARGS__))
#define AT_DISPATCH_INTEGRAL_TYPES_AND(T1, TYPE, NAME, ...) \
  AT_DISPATCH_SWITCH(TYPE, NAME, AT_DISPATCH_CASE_INTEGRAL_TYPES(__VA_ARGS__) AT_DISPATCH_CASE(T1, __VA_ARGS__))
#define AT_DISPATCH_COMPLEX_TYPES(TYPE, NAME, ...) \
  AT_DISPATCH_SWITCH(TYPE, NAME, AT_DISPATCH_CASE_COMPLEX_TYPES(__VA_ARGS__))
#define AT_DISPATCH_FLOATING_AND_COMPLEX_TYPES(TYPE, NAME, ...) \
  AT_DISPATCH_SWITCH(TYPE, NAME, AT_DISPATCH_CASE_FLOATING_AND_COMPLEX_TYPES(__VA_ARGS__))
#define AT_DISPATCH_FLOATING_AND_COMPLEX_TYPES_AND1(T1, TYPE, NAME, ...) \
  AT_DISPATCH_SWITCH(TYPE, NAME,                                         \
                     AT_DISPATCH_CASE_FLOATING_AND_COMPLEX_TYPES(__VA_ARGS__) AT_DISPATCH_CASE(T1, __VA_ARGS__))
#define AT_DISPATCH_FLOATING_AND_COMPLEX_TYPES_AND2(T1, T2, TYPE, NAME, ...)                                   \
  AT_DISPATCH_SWITCH(TYPE, NAME, AT_DISPATCH_CASE_FLOATING_AND_COMPLEX_TYPES(__VA_ARGS__)                      \
                                     AT_DISPATCH_CASE(T1, __VA_ARGS__) AT_DISPATCH_CASE(T2, __VA_ARGS__))
#define AT_DISPATCH_ALL_TYPES(TYPE, NAME, ...) \
  AT_DISPATCH_SWITCH(TYPE, NAME, AT_DISPATCH_CASE_ALL_TYPES(__VA_ARGS__))
#define AT_DISPATCH_ALL_TYPES_AND(T1, TYPE, NAME, ...) \
  AT_DISPATCH_SWITCH(TYPE, NAME, AT_DISPATCH_CASE_ALL_TYPES(__VA_ARGS__) AT_DISPATCH_CASE(T1, __VA_ARGS__))
#define AT_DISPATCH_ALL_TYPES_AND2(T1, T2, TYPE, NAME, ...)                                           \
  AT_DISPATCH_SWITCH(TYPE, NAME, AT_DISPATCH_CASE_ALL_TYPES(__VA_ARGS__) AT_DISPATCH_CASE(T1, __VA_ARGS__) \
                                     AT_DISPATCH_CASE(T2, __VA_ARGS__))
#define AT_DISPATCH_ALL_TYPES_AND3(T1, T2, T3, TYPE, NAME, ...)                                        \
  AT_DISPATCH_SWITCH(TYPE, NAME, AT_DISPATCH_CASE_ALL_TYPES(__VA_ARGS__) AT_DISPATCH_CASE(T1, __VA_ARGS__) \
                                     AT_DISPATCH_CASE(T2, __VA_ARGS__) AT_DISPATCH_CASE(T3, __VA_ARGS__))
#define AT_DISPATCH_ALL_TYPES_AND_COMPLEX(TYPE, NAME, ...) \
  AT_DISPATCH_SWITCH(TYPE, NAME, AT_DISPATCH_CASE_ALL_TYPES_AND_COMPLEX(__VA_ARGS__))
#define AT_DISPATCH_ALL_TYPES_AND_COMPLEX_AND(T1, TYPE, NAME, ...) \
  AT_DISPATCH_SWITCH(TYPE, NAME, AT_DISPATCH_CASE_ALL_TYPES_AND_COMPLEX(__VA_ARGS__) AT_DISPATCH_CASE(T1, __VA_ARGS__))
#define AT_DISPATCH_ALL_TYPES_AND_COMPLEX_AND2(T1, T2, TYPE, NAME, ...)                                   \
  AT_DISPATCH_SWITCH(TYPE, NAME, AT_DISPATCH_CASE_ALL_TYPES_AND_COMPLEX(__VA_ARGS__)                      \
                                     AT_DISPATCH_CASE(T1, __VA_ARGS__) AT_DISPATCH_CASE(T2, __VA_ARGS__))
#define AT_DISPATCH_ALL_TYPES_AND_COMPLEX_AND3(T1, T2, T3, TYPE, NAME, ...)                               \
  AT_DISPATCH_SWITCH(TYPE, NAME, AT_DISPATCH_CASE_ALL_TYPES_AND_COMPLEX(__VA_ARGS__)                      \
                                     AT_DISPATCH_CASE(T1, __VA_ARGS__) AT_DISPATCH_CASE(T2, __VA_ARGS__)  \
                                         AT_DISPATCH_CASE(T3, __VA_ARGS__))
#endif
