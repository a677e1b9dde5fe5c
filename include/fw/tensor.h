// fw::Tensor: a refcounted handle over TensorImpl, with libtorch's method names.
#pragma once
#include <functional>
#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <vector>

#include "fw/array_ref.h"
#include "fw/device.h"
#include "fw/dtype.h"
#include "fw/error.h"
#include "fw/generator.h"
#include "fw/intrusive_ptr.h"
#include "fw/optional_dims.h"
#include "fw/scalar.h"
#include "fw/storage.h"

namespace fw {

// libtorch programs write torch::optional / torch::nullopt (custom datasets' size()).
using std::nullopt;
using std::optional;

class Tensor;

// libtorch's memory formats. Preserve keeps the input's layout (clone); Contiguous is row-major.
enum class MemoryFormat { Contiguous, Preserve, ChannelsLast, ChannelsLast3d };
using TensorList = ArrayRef<Tensor>;
namespace autograd { struct Node; }
namespace indexing { struct TensorIndex; }

// libtorch's tensor layouts. fw tensors are strided; TensorOptions rejects any other layout.
enum class Layout : int8_t { Strided, Sparse, SparseCsr, Mkldnn, SparseCsc, SparseBsr, SparseBsc };
constexpr Layout kStrided = Layout::Strided;
constexpr Layout kSparse = Layout::Sparse;
constexpr Layout kSparseCsr = Layout::SparseCsr;
constexpr Layout kMkldnn = Layout::Mkldnn;
std::ostream& operator<<(std::ostream& os, Layout l);  // "Strided", "Sparse", ...

// How to create a tensor: dtype, device, requires_grad, memory format. Converts from a ScalarType,
// Device or MemoryFormat. empty/zeros/ones/full (and their _like forms) lay a 4-D (5-D) tensor out
// channels-last when memory_format says so; without one (or with MemoryFormat::Preserve) the _like
// forms lay their result out like the input, as libtorch does: a transposed or channels-last input
// gives a transposed or channels-last result. pinned_memory is accepted and has no effect (fw has
// no page-locked memory: there is no device to copy to).
struct TensorOptions {
  std::optional<ScalarType> dtype_;
  Device device_ = Device(kCPU);
  bool requires_grad_ = false;
  bool pinned_memory_ = false;
  std::optional<MemoryFormat> memory_format_;
  // Which fields were set (libtorch's has_device() etc.; printing marks the others "(default)").
  bool has_device_ = false, has_requires_grad_ = false, has_pinned_memory_ = false, has_layout_ = false;
  TensorOptions() = default;
  TensorOptions(MemoryFormat f) : memory_format_(f) {}
  TensorOptions(ScalarType t) : dtype_(t) {}
  TensorOptions(Device d) : device_(d), has_device_(true) {}
  TensorOptions(DeviceType d) : device_(d), has_device_(true) {}
  TensorOptions(TypeMeta t) : dtype_(t.toScalarType()) {}
  TensorOptions(Layout l) { *this = layout(l); }
  TensorOptions dtype(ScalarType t) const { auto o = *this; o.dtype_ = t; return o; }
  TensorOptions dtype(std::optional<ScalarType> t) const { auto o = *this; o.dtype_ = t; return o; }
  TensorOptions dtype(TypeMeta t) const { return dtype(t.toScalarType()); }
  template <class T> TensorOptions dtype() const { return dtype(CppToType<T>::value); }
  TensorOptions device(Device d) const { auto o = *this; o.device_ = d; o.has_device_ = true; return o; }
  TensorOptions requires_grad(bool r) const { auto o = *this; o.requires_grad_ = r; o.has_requires_grad_ = true; return o; }
  TensorOptions requires_grad(std::optional<bool> r) const {
    auto o = *this;
    o.requires_grad_ = r.value_or(false);
    o.has_requires_grad_ = r.has_value();
    return o;
  }
  // Strided only: any other layout is an error.
  TensorOptions layout(Layout l) const;
  TensorOptions layout(std::optional<Layout> l) const { return l ? layout(*l) : *this; }
  TensorOptions memory_format(std::optional<MemoryFormat> f) const { auto o = *this; o.memory_format_ = f; return o; }
  TensorOptions pinned_memory(std::optional<bool> p) const {
    auto o = *this;
    o.pinned_memory_ = p.value_or(false);
    o.has_pinned_memory_ = p.has_value();
    return o;
  }
  std::optional<MemoryFormat> memory_format_opt() const { return memory_format_; }
  std::optional<TypeMeta> dtype_opt() const { return dtype_ ? std::optional<TypeMeta>(TypeMeta(*dtype_)) : std::nullopt; }
  std::optional<Device> device_opt() const { return device_; }
  std::optional<bool> requires_grad_opt() const { return has_requires_grad_ ? std::optional<bool>(requires_grad_) : std::nullopt; }
  std::optional<bool> pinned_memory_opt() const { return has_pinned_memory_ ? std::optional<bool>(pinned_memory_) : std::nullopt; }
  std::optional<Layout> layout_opt() const { return has_layout_ ? std::optional<Layout>(kStrided) : std::nullopt; }
  bool pinned_memory() const { return pinned_memory_; }
  bool has_device() const { return has_device_; }
  bool has_requires_grad() const { return has_requires_grad_; }
  bool has_pinned_memory() const { return has_pinned_memory_; }
  bool has_layout() const { return has_layout_; }
  bool has_memory_format() const { return memory_format_.has_value(); }
  Layout layout() const { return kStrided; }
  // A TypeMeta, as libtorch's (it converts to ScalarType; .name(), .itemsize()).
  TypeMeta dtype() const { return TypeMeta(dtype_ ? *dtype_ : get_default_dtype()); }
  bool has_dtype() const { return dtype_.has_value(); }
  Device device() const { return device_; }
  bool requires_grad() const { return requires_grad_; }
};
inline TensorOptions dtype(ScalarType t) { return TensorOptions(t); }
template <class T> TensorOptions dtype() { return TensorOptions(CppToType<T>::value); }
inline TensorOptions device(Device d) { return TensorOptions(d); }
inline TensorOptions requires_grad(bool r = true) { return TensorOptions().requires_grad(r); }
inline TensorOptions layout(Layout l) { return TensorOptions().layout(l); }

// libtorch's legacy type object (Tensor::type()): a device type and a dtype.
class DeprecatedTypeProperties {
 public:
  DeprecatedTypeProperties(DeviceType device, ScalarType dtype) : device_(device), dtype_(dtype) {}
  ScalarType scalarType() const { return dtype_; }
  TypeMeta typeMeta() const { return TypeMeta(dtype_); }
  DeviceType device_type() const { return device_; }
  bool is_cuda() const { return device_ == kCUDA; }
  bool is_sparse() const { return false; }
  TensorOptions options() const { return TensorOptions(dtype_).device(Device(device_)); }
  // "CPUFloatType", "CUDALongType".
  std::string toString() const {
    return std::string(device_ == kCUDA ? "CUDA" : "CPU") + dtype_name(dtype_) + "Type";
  }
  bool operator==(const DeprecatedTypeProperties& o) const { return device_ == o.device_ && dtype_ == o.dtype_; }
  bool operator!=(const DeprecatedTypeProperties& o) const { return !(*this == o); }

 private:
  DeviceType device_;
  ScalarType dtype_;
};
inline std::ostream& operator<<(std::ostream& os, const DeprecatedTypeProperties& t) { return os << t.toString(); }

struct TensorImpl;
struct AutogradMeta;  // defined after Tensor (it holds the gradient as a Tensor)

namespace detail {
// Data access on a fw::compile placeholder (a traced value without memory yet): materialises it
// through the active tracer (a graph break), or raises when no trace owns it. While any trace runs,
// also called for real memory: the trace on this thread, if any, decides (StorageImpl::birth).
void placeholder_data_access(const struct TensorImpl* t);
// Whether t is an op result a fw::compile trace on this thread records with autograd history
// (a non-leaf, though it has no grad_fn until the graph runs).
bool traced_nonleaf(const struct TensorImpl* t);
}  // namespace detail

struct TensorImpl : RefCounted {
  intrusive_ptr<StorageImpl> storage;
  // Null: in-place writes count on storage->version (shared by every view of the memory). Set by
  // Tensor::data() to a counter of its own, which views of that tensor inherit (make_view).
  intrusive_ptr<VersionCounter> version_counter;
  DimVec sizes, strides;
  int64_t offset = 0;  // in elements
  int64_t numel = 0;
  ScalarType dtype = kFloat;
  bool contiguous = true;
  std::unique_ptr<AutogradMeta> autograd;
  // Set on outputs of view ops: the tensor whose storage they view (the root of a view chain).
  // Autograd uses it to route in-place writes through a view into the base's history.
  intrusive_ptr<TensorImpl> view_base;
  // Recomputes numel and the contiguity flag after sizes/strides change.
  void refresh();
  std::atomic<uint32_t>& version() const {
    return version_counter ? version_counter->version : storage->version;
  }
  void* data() const {
    if (FW_UNLIKELY(storage->placeholder || detail::g_traces_active.load(std::memory_order_relaxed) != 0))
      detail::placeholder_data_access(this);
    return static_cast<char*>(storage->data) + offset * int64_t(element_size(dtype));
  }
};

// Pointer kinds of the accessors' data, as libtorch's (RestrictPtrTraits marks it __restrict__).
template <class T>
struct DefaultPtrTraits {
  using PtrType = T*;
};
template <class T>
struct RestrictPtrTraits {
  using PtrType = T* __restrict__;
};

// Strided view of a tensor's data for element access, as libtorch's TensorAccessor. It points at
// sizes and strides it does not own (the tensor's, or a packed accessor's), so it lives no longer
// than they do.
template <class T, size_t N, template <class> class PtrTraits = DefaultPtrTraits, class index_t = int64_t>
class TensorAccessor {
  static_assert(N > 0, "TensorAccessor needs at least one dimension");

 public:
  using PtrType = typename PtrTraits<T>::PtrType;
  TensorAccessor(PtrType d, const index_t* sizes, const index_t* strides) : d_(d), sz_(sizes), st_(strides) {}
  decltype(auto) operator[](index_t i) const {
    if constexpr (N == 1) return static_cast<T&>(d_[i * st_[0]]);
    else return TensorAccessor<T, N - 1, PtrTraits, index_t>(d_ + i * st_[0], sz_ + 1, st_ + 1);
  }
  index_t size(index_t i) const { return sz_[i]; }
  index_t stride(index_t i) const { return st_[i]; }
  ArrayRef<index_t> sizes() const { return ArrayRef<index_t>(sz_, N); }
  ArrayRef<index_t> strides() const { return ArrayRef<index_t>(st_, N); }
  PtrType data() const { return d_; }

 private:
  PtrType d_;
  const index_t* sz_;
  const index_t* st_;
};

// libtorch's packed accessor: the data pointer with its own copy of the sizes and strides in
// index_t (int32_t for packed_accessor32), so it can be passed by value and outlive the Tensor
// handle it came from (not the memory). Indexing yields TensorAccessors into that copy.
template <class T, size_t N, template <class> class PtrTraits = DefaultPtrTraits, class index_t = int64_t>
class GenericPackedTensorAccessor {
  static_assert(N > 0, "GenericPackedTensorAccessor needs at least one dimension");

 public:
  using PtrType = typename PtrTraits<T>::PtrType;
  template <class source_index_t>
  GenericPackedTensorAccessor(PtrType d, const source_index_t* sizes, const source_index_t* strides) : d_(d) {
    for (size_t i = 0; i < N; i++) {
      sz_[i] = index_t(sizes[i]);
      st_[i] = index_t(strides[i]);
    }
  }
  decltype(auto) operator[](index_t i) const {
    if constexpr (N == 1) return static_cast<T&>(d_[i * st_[0]]);
    else return TensorAccessor<T, N - 1, PtrTraits, index_t>(d_ + i * st_[0], sz_ + 1, st_ + 1);
  }
  index_t size(index_t i) const { return sz_[i]; }
  index_t stride(index_t i) const { return st_[i]; }
  PtrType data() const { return d_; }
  // The same data with dims i and j swapped.
  GenericPackedTensorAccessor transpose(index_t i, index_t j) const {
    GenericPackedTensorAccessor r = *this;
    std::swap(r.sz_[i], r.sz_[j]);
    std::swap(r.st_[i], r.st_[j]);
    return r;
  }

 private:
  PtrType d_;
  index_t sz_[N];
  index_t st_[N];
};
template <class T, size_t N, template <class> class PtrTraits = DefaultPtrTraits>
using PackedTensorAccessor32 = GenericPackedTensorAccessor<T, N, PtrTraits, int32_t>;
template <class T, size_t N, template <class> class PtrTraits = DefaultPtrTraits>
using PackedTensorAccessor64 = GenericPackedTensorAccessor<T, N, PtrTraits, int64_t>;

template <class T>
class MaybeOwned;

class Tensor {
 public:
  Tensor() = default;
  explicit Tensor(intrusive_ptr<TensorImpl> impl) : impl_(std::move(impl)) {}
  Tensor(const Tensor&) = default;
  Tensor(Tensor&&) noexcept = default;
  // Assigning to an lvalue rebinds the handle; assigning to an rvalue (t[0] = x) writes data.
  Tensor& operator=(const Tensor& o) & = default;
  Tensor& operator=(Tensor&& o) & noexcept = default;
  Tensor& operator=(const Tensor& o) &&;
  Tensor& operator=(Tensor&& o) &&;
  Tensor& operator=(const Scalar& v) &&;
  // Compound assignment writes in place, on temporaries too (x[0] += 1, x.narrow(0, 1, 2) *= 2).
  Tensor& operator+=(const Tensor& o) { return add_(o); }
  Tensor& operator+=(const Scalar& o) { return add_(o); }
  Tensor& operator-=(const Tensor& o) { return sub_(o); }
  Tensor& operator-=(const Scalar& o) { return sub_(o); }
  Tensor& operator*=(const Tensor& o) { return mul_(o); }
  Tensor& operator*=(const Scalar& o) { return mul_(o); }
  Tensor& operator/=(const Tensor& o) { return div_(o); }
  Tensor& operator/=(const Scalar& o) { return div_(o); }
  Tensor& operator&=(const Tensor& o) { return bitwise_and_(o); }
  Tensor& operator&=(const Scalar& o) { return bitwise_and_(o); }
  Tensor& operator|=(const Tensor& o) { return bitwise_or_(o); }
  Tensor& operator|=(const Scalar& o) { return bitwise_or_(o); }
  Tensor& operator^=(const Tensor& o) { return bitwise_xor_(o); }
  Tensor& operator^=(const Scalar& o) { return bitwise_xor_(o); }

  // ---- metadata
  bool defined() const { return bool(impl_); }
  TensorImpl* unsafeGetTensorImpl() const { return impl_.get(); }
  const intrusive_ptr<TensorImpl>& impl() const { return impl_; }
  int64_t dim() const { return int64_t(impl_->sizes.size()); }
  int64_t ndimension() const { return dim(); }
  IntArrayRef sizes() const { return impl_->sizes.ref(); }
  IntArrayRef strides() const { return impl_->strides.ref(); }
  int64_t size(int64_t d) const;
  int64_t stride(int64_t d) const;
  int64_t numel() const { return impl_->numel; }
  ScalarType scalar_type() const { return impl_->dtype; }
  // A ScalarType with libtorch's TypeMeta interface (x.dtype().name(), .itemsize()).
  TypeMeta dtype() const { return TypeMeta(impl_->dtype); }
  Device device() const { return impl_->storage->device; }
  bool is_cuda() const { return device().is_cuda(); }
  bool is_cpu() const { return device().is_cpu(); }
  // dtype, device and layout set (printed without "(default)", as libtorch's).
  TensorOptions options() const {
    TensorOptions o = TensorOptions(dtype()).device(device());
    o.has_layout_ = true;
    return o;
  }
  bool is_contiguous() const { return impl_->contiguous; }
  bool is_floating_point() const { return fw::is_floating_point(dtype()); }
  bool is_complex() const { return fw::is_complex(dtype()); }
  int64_t element_size() const { return int64_t(fw::element_size(dtype())); }
  int64_t itemsize() const { return element_size(); }
  int64_t nbytes() const { return numel() * element_size(); }
  int64_t storage_offset() const { return impl_->offset; }
  bool is_same(const Tensor& o) const { return impl_ == o.impl_; }
  bool is_alias_of(const Tensor& o) const { return impl_->storage == o.impl_->storage; }
  int use_count() const { return impl_.use_count(); }
  uint32_t _version() const { return impl_->version().load(std::memory_order_relaxed); }
  // libtorch's c10::Storage handle on the memory this tensor views.
  Storage storage() const { return Storage(impl_->storage); }
  bool has_storage() const { return defined(); }
  std::string toString() const;

  // ---- data access
  void* data_ptr() const { return impl_->data(); }
  template <class T> T* data_ptr() const;
  template <class T> T* data() const { return data_ptr<T>(); }  // libtorch's older spelling
  template <class T> T* mutable_data_ptr() const { return data_ptr<T>(); }
  template <class T> const T* const_data_ptr() const { return data_ptr<T>(); }
  template <class T> T item() const;
  Scalar item() const;
  // An accessor points into the tensor's memory (accessor(): also at its sizes and strides), so
  // it is valid while some handle keeps the tensor alive. libtorch deletes these on rvalue
  // tensors; fw allows them, so that every libtorch-valid call compiles even where an fw method
  // returns a handle by value and libtorch's a reference.
  template <class T, size_t N> TensorAccessor<T, N> accessor() const;
  template <class T, size_t N, template <class> class PtrTraits = DefaultPtrTraits, class index_t = int64_t>
  GenericPackedTensorAccessor<T, N, PtrTraits, index_t> generic_packed_accessor() const;
  // packed_accessor32 raises when an offset could overflow 32 bits (numel of 2^31 or more).
  template <class T, size_t N, template <class> class PtrTraits = DefaultPtrTraits>
  PackedTensorAccessor32<T, N, PtrTraits> packed_accessor32() const;
  template <class T, size_t N, template <class> class PtrTraits = DefaultPtrTraits>
  PackedTensorAccessor64<T, N, PtrTraits> packed_accessor64() const {
    return generic_packed_accessor<T, N, PtrTraits, int64_t>();
  }

  // ---- autograd fields (the engine comes with the autograd work)
  bool requires_grad() const;
  Tensor& requires_grad_(bool r = true) const;
  Tensor& set_requires_grad(bool r) const { return requires_grad_(r); }
  // The accumulated gradient (undefined until a backward pass reaches this leaf). A reference, as
  // libtorch's, so `auto& g = p.grad();` binds and `p.grad().zero_()` works (fw's in-place
  // methods are not const, hence not const Tensor&). A tensor without autograd state gets a
  // per-thread undefined tensor, reset on each call.
  Tensor& grad() const;
  // Replaces the gradient (undefined clears it); its shape must match.
  void set_grad(const Tensor& g) const;
  // Assignable handle to the gradient, as libtorch's mutable_grad(): p.mutable_grad() = g
  // (unchecked, as in libtorch) or p.mutable_grad().zero_().
  Tensor& mutable_grad() const;
  bool is_leaf() const;
  const std::shared_ptr<autograd::Node>& grad_fn() const;
  uint32_t output_nr() const;
  // Reverse-mode gradient of this tensor (a scalar unless `gradient` is given) into the leaves.
  void backward(const Tensor& gradient = {}, std::optional<bool> retain_graph = std::nullopt,
                bool create_graph = false, const std::vector<Tensor>& inputs = {}) const;
  // hook(grad) runs when this tensor's gradient is computed; a defined result replaces it.
  template <class F>
  unsigned register_hook(F&& hook) const {
    if constexpr (std::is_void_v<std::invoke_result_t<F, const Tensor&>>)
      return register_hook_fn([hook](const Tensor& g) { hook(g); return Tensor(); });
    else
      return register_hook_fn(std::function<Tensor(const Tensor&)>(hook));
  }
  unsigned register_hook_fn(std::function<Tensor(const Tensor&)> hook) const;
  // Unregisters the hook register_hook returned `pos` for (the others keep their positions).
  void remove_hook(unsigned pos) const;
  // Non-leaf tensors keep their .grad() after backward.
  void retain_grad() const;
  bool retains_grad() const;
  Tensor detach() const;
  Tensor& detach_() const;

  // ---- conversion and copy
  Tensor to(ScalarType t, bool non_blocking = false, bool copy = false) const;
  Tensor to(Device d, ScalarType t, bool non_blocking = false, bool copy = false) const;
  Tensor to(Device d, bool non_blocking = false, bool copy = false) const;
  Tensor to(const TensorOptions& o, bool non_blocking = false, bool copy = false) const;
  Tensor to(const Tensor& other, bool non_blocking = false, bool copy = false) const;
  Tensor to(TypeMeta t, bool non_blocking = false, bool copy = false) const { return to(t.toScalarType(), non_blocking, copy); }
  Tensor to(Device d, TypeMeta t, bool non_blocking = false, bool copy = false) const {
    return to(d, t.toScalarType(), non_blocking, copy);
  }
  Tensor to(DeviceType d, bool non_blocking = false, bool copy = false) const { return to(Device(d), non_blocking, copy); }
  Tensor cpu() const { return to(Device(kCPU)); }
  Tensor cuda() const { return to(Device(kCUDA)); }  // raises: this build has no CUDA device
  Tensor toType(ScalarType t) const { return to(t); }
  Tensor type_as(const Tensor& o) const { return to(o.dtype()); }
  Tensor contiguous() const;
  // A copy laid out like this tensor (MemoryFormat::Preserve): a transposed or channels-last
  // tensor's clone is transposed or channels-last too. clone(MemoryFormat::Contiguous) is row-major.
  Tensor clone() const;
  Tensor& copy_(const Tensor& src, bool non_blocking = false) const;
  Tensor& fill_(const Scalar& v) const;
  Tensor& fill_(const Tensor& v) const;
  Tensor& zero_() const;
  Tensor& uniform_(double from = 0, double to = 1) const;
  Tensor& normal_(double mean = 0, double std = 1) const;
  Tensor& bernoulli_(double p = 0.5) const;
  Tensor& random_(int64_t from, int64_t to) const;
  // More in-place samplers (core/ops/extra.cpp): Exp(lambd), Geometric(p) on {1, 2, ...},
  // Cauchy(median, sigma), exp(Normal(mean, std)).
  Tensor& exponential_(double lambd = 1) const;
  Tensor& geometric_(double p) const;
  Tensor& cauchy_(double median = 0, double sigma = 1) const;
  Tensor& log_normal_(double mean = 1, double std = 2) const;
  // The same samplers drawing from `gen` (Note [Generators] in fw/generator.h; nullopt or an
  // undefined generator is the default one), and libtorch's other random_ forms: random_(to)
  // draws from [0, to), random_() from [0, 2^mantissa] for floating dtypes (2^24 for float32) and
  // from the dtype's non-negative range for integral ones.
  Tensor& uniform_(double from, double to, std::optional<Generator> gen) const;
  Tensor& normal_(double mean, double std, std::optional<Generator> gen) const;
  Tensor& bernoulli_(double p, std::optional<Generator> gen) const;
  Tensor& bernoulli_(const Tensor& p, std::optional<Generator> gen = std::nullopt) const;
  Tensor& random_(int64_t from, int64_t to, std::optional<Generator> gen) const;
  Tensor& random_(int64_t to, std::optional<Generator> gen = std::nullopt) const;
  Tensor& random_(std::optional<Generator> gen = std::nullopt) const;
  Tensor& exponential_(double lambd, std::optional<Generator> gen) const;
  Tensor& geometric_(double p, std::optional<Generator> gen) const;
  Tensor& cauchy_(double median, double sigma, std::optional<Generator> gen) const;
  Tensor& log_normal_(double mean, double std, std::optional<Generator> gen) const;
  // Samples of Bernoulli(this) (values in [0, 1]), or Bernoulli(p) in this tensor's shape.
  Tensor bernoulli(std::optional<Generator> gen = std::nullopt) const;
  Tensor bernoulli(double p, std::optional<Generator> gen = std::nullopt) const;
  Tensor multinomial(int64_t num_samples, bool replacement = false, std::optional<Generator> gen = std::nullopt) const;
  Tensor view_as_real() const;
  Tensor real() const;
  Tensor imag() const;

  // ---- views and shape
  Tensor view(IntArrayRef size) const;
  Tensor view(ScalarType t) const;
  Tensor view_as(const Tensor& o) const { return view(o.sizes()); }
  Tensor reshape(IntArrayRef size) const;
  Tensor reshape_as(const Tensor& o) const { return reshape(o.sizes()); }
  Tensor flatten(int64_t start_dim = 0, int64_t end_dim = -1) const;
  Tensor unflatten(int64_t dim, IntArrayRef sizes) const;
  Tensor permute(IntArrayRef dims) const;
  Tensor transpose(int64_t d0, int64_t d1) const;
  Tensor swapaxes(int64_t d0, int64_t d1) const { return transpose(d0, d1); }
  Tensor t() const;
  Tensor mT() const { return transpose(-2, -1); }
  Tensor squeeze() const;
  Tensor squeeze(int64_t dim) const;
  Tensor unsqueeze(int64_t dim) const;
  Tensor expand(IntArrayRef size, bool implicit = false) const;
  Tensor expand_as(const Tensor& o) const { return expand(o.sizes()); }
  Tensor broadcast_to(IntArrayRef size) const;
  Tensor absolute() const;
  Tensor& absolute_() const;
  Tensor narrow(int64_t dim, int64_t start, int64_t length) const;
  Tensor select(int64_t dim, int64_t index) const;
  Tensor slice(int64_t dim = 0, std::optional<int64_t> start = std::nullopt,
               std::optional<int64_t> end = std::nullopt, int64_t step = 1) const;
  Tensor unfold(int64_t dim, int64_t size, int64_t step) const;
  Tensor as_strided(IntArrayRef size, IntArrayRef stride, std::optional<int64_t> offset = std::nullopt) const;
  std::vector<Tensor> chunk(int64_t chunks, int64_t dim = 0) const;
  std::vector<Tensor> split(int64_t split_size, int64_t dim = 0) const;
  std::vector<Tensor> split(IntArrayRef split_sizes, int64_t dim = 0) const;
  std::vector<Tensor> split_with_sizes(IntArrayRef split_sizes, int64_t dim = 0) const;
  std::vector<Tensor> unbind(int64_t dim = 0) const;
  Tensor flip(IntArrayRef dims) const;
  Tensor roll(IntArrayRef shifts, IntArrayRef dims = {}) const;
  Tensor repeat(IntArrayRef repeats) const;
  Tensor tile(IntArrayRef reps) const;

  // ---- indexing
  Tensor operator[](int64_t i) const { return select(0, i); }
  Tensor operator[](const Tensor& idx) const;
  Tensor index(ArrayRef<indexing::TensorIndex> idx) const;
  Tensor index(std::initializer_list<indexing::TensorIndex> idx) const;
  Tensor& index_put_(ArrayRef<indexing::TensorIndex> idx, const Tensor& v) const;
  Tensor& index_put_(ArrayRef<indexing::TensorIndex> idx, const Scalar& v) const;
  Tensor& index_put_(std::initializer_list<indexing::TensorIndex> idx, const Tensor& v) const;
  Tensor& index_put_(std::initializer_list<indexing::TensorIndex> idx, const Scalar& v) const;
  // libtorch's index list form with accumulate (nullopt: a full slice); accumulate adds repeated
  // indices' values, as fw::index_put.
  Tensor& index_put_(const std::vector<std::optional<Tensor>>& indices, const Tensor& v, bool accumulate) const;
  Tensor index_select(int64_t dim, const Tensor& index) const;
  Tensor gather(int64_t dim, const Tensor& index) const;
  Tensor scatter(int64_t dim, const Tensor& index, const Tensor& src) const;
  Tensor scatter(int64_t dim, const Tensor& index, const Scalar& value) const;
  Tensor& scatter_(int64_t dim, const Tensor& index, const Tensor& src) const;
  Tensor& scatter_(int64_t dim, const Tensor& index, const Scalar& value) const;
  Tensor scatter_add(int64_t dim, const Tensor& index, const Tensor& src) const;
  Tensor& scatter_add_(int64_t dim, const Tensor& index, const Tensor& src) const;
  Tensor index_add(int64_t dim, const Tensor& index, const Tensor& src, const Scalar& alpha = 1) const;
  Tensor& index_add_(int64_t dim, const Tensor& index, const Tensor& src, const Scalar& alpha = 1) const;
  Tensor masked_select(const Tensor& mask) const;
  Tensor masked_fill(const Tensor& mask, const Scalar& v) const;
  Tensor masked_fill(const Tensor& mask, const Tensor& v) const;
  Tensor& masked_fill_(const Tensor& mask, const Scalar& v) const;
  Tensor& masked_fill_(const Tensor& mask, const Tensor& v) const;
  Tensor nonzero() const;
  Tensor take(const Tensor& index) const;

  // ---- pointwise (binary)
  Tensor add(const Tensor& o, const Scalar& alpha = 1) const;
  Tensor add(const Scalar& o, const Scalar& alpha = 1) const;
  Tensor& add_(const Tensor& o, const Scalar& alpha = 1) const;
  Tensor& add_(const Scalar& o, const Scalar& alpha = 1) const;
  Tensor sub(const Tensor& o, const Scalar& alpha = 1) const;
  Tensor sub(const Scalar& o, const Scalar& alpha = 1) const;
  Tensor& sub_(const Tensor& o, const Scalar& alpha = 1) const;
  Tensor& sub_(const Scalar& o, const Scalar& alpha = 1) const;
  Tensor mul(const Tensor& o) const;
  Tensor mul(const Scalar& o) const;
  Tensor& mul_(const Tensor& o) const;
  Tensor& mul_(const Scalar& o) const;
  Tensor div(const Tensor& o) const;
  Tensor div(const Scalar& o) const;
  Tensor div(const Tensor& o, std::optional<std::string> rounding_mode) const;
  Tensor& div_(const Tensor& o) const;
  Tensor& div_(const Scalar& o) const;
  Tensor remainder(const Tensor& o) const;
  Tensor remainder(const Scalar& o) const;
  Tensor fmod(const Tensor& o) const;
  Tensor fmod(const Scalar& o) const;
  Tensor pow(const Tensor& e) const;
  Tensor pow(const Scalar& e) const;
  Tensor& pow_(const Scalar& e) const;
  Tensor atan2(const Tensor& o) const;
  Tensor maximum(const Tensor& o) const;
  Tensor minimum(const Tensor& o) const;
  Tensor lerp(const Tensor& end, const Scalar& w) const;
  Tensor lerp(const Tensor& end, const Tensor& w) const;
  Tensor eq(const Tensor& o) const;
  Tensor eq(const Scalar& o) const;
  Tensor ne(const Tensor& o) const;
  Tensor ne(const Scalar& o) const;
  Tensor lt(const Tensor& o) const;
  Tensor lt(const Scalar& o) const;
  Tensor le(const Tensor& o) const;
  Tensor le(const Scalar& o) const;
  Tensor gt(const Tensor& o) const;
  Tensor gt(const Scalar& o) const;
  Tensor ge(const Tensor& o) const;
  Tensor ge(const Scalar& o) const;
  Tensor logical_and(const Tensor& o) const;
  Tensor logical_or(const Tensor& o) const;
  Tensor logical_xor(const Tensor& o) const;
  Tensor logical_not() const;
  Tensor bitwise_and(const Tensor& o) const;
  Tensor bitwise_or(const Tensor& o) const;
  Tensor bitwise_xor(const Tensor& o) const;
  Tensor bitwise_and(const Scalar& o) const;
  Tensor bitwise_or(const Scalar& o) const;
  Tensor bitwise_xor(const Scalar& o) const;
  Tensor bitwise_not() const;
  Tensor clamp(std::optional<Scalar> min, std::optional<Scalar> max = std::nullopt) const;
  Tensor clamp(const std::optional<Tensor>& min, const std::optional<Tensor>& max = std::nullopt) const;
  Tensor& clamp_(std::optional<Scalar> min, std::optional<Scalar> max = std::nullopt) const;
  Tensor clamp_min(const Scalar& m) const;
  Tensor clamp_max(const Scalar& m) const;
  Tensor& clamp_min_(const Scalar& m) const;
  Tensor& clamp_max_(const Scalar& m) const;
  // Tensor bounds (broadcast against self).
  Tensor& clamp_(const std::optional<Tensor>& min, const std::optional<Tensor>& max = std::nullopt) const;
  Tensor clamp_min(const Tensor& m) const;
  Tensor clamp_max(const Tensor& m) const;
  Tensor& clamp_min_(const Tensor& m) const;
  Tensor& clamp_max_(const Tensor& m) const;
  // self + value * a * b and self + value * a / b, in place (hand-written optimizers use them).
  Tensor addcmul(const Tensor& a, const Tensor& b, const Scalar& value = 1) const;
  Tensor& addcmul_(const Tensor& a, const Tensor& b, const Scalar& value = 1) const;
  Tensor addcdiv(const Tensor& a, const Tensor& b, const Scalar& value = 1) const;
  Tensor& addcdiv_(const Tensor& a, const Tensor& b, const Scalar& value = 1) const;
  // New tensors with this tensor's dtype unless the options give one (libtorch's new_*).
  Tensor new_empty(IntArrayRef size, const TensorOptions& o = {}) const;
  Tensor new_zeros(IntArrayRef size, const TensorOptions& o = {}) const;
  Tensor new_ones(IntArrayRef size, const TensorOptions& o = {}) const;
  Tensor new_full(IntArrayRef size, const Scalar& value, const TensorOptions& o = {}) const;
  bool is_same_size(const Tensor& other) const;
  // Triangles and diagonals of the last two dims (tril/triu) or of a matrix (diagonal, diag, trace).
  Tensor tril(int64_t diagonal = 0) const;
  Tensor triu(int64_t diagonal = 0) const;
  Tensor diagonal(int64_t offset = 0, int64_t dim1 = 0, int64_t dim2 = 1) const;
  Tensor diag(int64_t diagonal = 0) const;
  Tensor trace() const;
  Tensor repeat_interleave(int64_t repeats, std::optional<int64_t> dim = std::nullopt) const;
  Tensor clip(std::optional<Scalar> min, std::optional<Scalar> max = std::nullopt) const { return clamp(min, max); }
  Tensor where(const Tensor& cond, const Tensor& other) const;

  // ---- pointwise (unary); each has an in-place twin
#define FW_UNARY_METHOD(name) Tensor name() const; Tensor& name##_() const;
  FW_UNARY_METHOD(exp) FW_UNARY_METHOD(exp2) FW_UNARY_METHOD(expm1) FW_UNARY_METHOD(log)
  FW_UNARY_METHOD(log2) FW_UNARY_METHOD(log10) FW_UNARY_METHOD(log1p) FW_UNARY_METHOD(sqrt)
  FW_UNARY_METHOD(rsqrt) FW_UNARY_METHOD(abs) FW_UNARY_METHOD(neg) FW_UNARY_METHOD(sign)
  FW_UNARY_METHOD(floor) FW_UNARY_METHOD(ceil) FW_UNARY_METHOD(round) FW_UNARY_METHOD(trunc)
  FW_UNARY_METHOD(frac) FW_UNARY_METHOD(reciprocal) FW_UNARY_METHOD(square)
  FW_UNARY_METHOD(sin) FW_UNARY_METHOD(cos) FW_UNARY_METHOD(tan) FW_UNARY_METHOD(asin)
  FW_UNARY_METHOD(acos) FW_UNARY_METHOD(atan) FW_UNARY_METHOD(sinh) FW_UNARY_METHOD(cosh)
  FW_UNARY_METHOD(tanh) FW_UNARY_METHOD(sigmoid) FW_UNARY_METHOD(erf) FW_UNARY_METHOD(erfc)
  FW_UNARY_METHOD(relu) FW_UNARY_METHOD(lgamma) FW_UNARY_METHOD(digamma) FW_UNARY_METHOD(erfinv)
  FW_UNARY_METHOD(asinh) FW_UNARY_METHOD(acosh) FW_UNARY_METHOD(atanh)
#undef FW_UNARY_METHOD
  Tensor polygamma(int64_t n) const;
  Tensor& polygamma_(int64_t n) const;
  Tensor logit(std::optional<double> eps = std::nullopt) const;
  Tensor isnan() const;
  Tensor isinf() const;
  Tensor isfinite() const;
  Tensor nan_to_num(std::optional<double> nan = std::nullopt, std::optional<double> posinf = std::nullopt,
                    std::optional<double> neginf = std::nullopt) const;
  Tensor conj() const;
  Tensor angle() const;

  // ---- reductions
  Tensor sum(std::optional<ScalarType> dtype = std::nullopt) const;
  Tensor sum(IntArrayRef dim, bool keepdim = false, std::optional<ScalarType> dtype = std::nullopt) const;
  Tensor mean(std::optional<ScalarType> dtype = std::nullopt) const;
  Tensor mean(IntArrayRef dim, bool keepdim = false, std::optional<ScalarType> dtype = std::nullopt) const;
  Tensor prod(std::optional<ScalarType> dtype = std::nullopt) const;
  Tensor prod(int64_t dim, bool keepdim = false, std::optional<ScalarType> dtype = std::nullopt) const;
  Tensor max() const;
  std::tuple<Tensor, Tensor> max(int64_t dim, bool keepdim = false) const;
  Tensor min() const;
  std::tuple<Tensor, Tensor> min(int64_t dim, bool keepdim = false) const;
  // Elementwise max/min with another tensor (libtorch's overloads of max/min; core/ops/compat.cpp).
  Tensor max(const Tensor& other) const;
  Tensor min(const Tensor& other) const;
  Tensor amax(IntArrayRef dim = {}, bool keepdim = false) const;
  Tensor amin(IntArrayRef dim = {}, bool keepdim = false) const;
  Tensor argmax(std::optional<int64_t> dim = std::nullopt, bool keepdim = false) const;
  Tensor argmin(std::optional<int64_t> dim = std::nullopt, bool keepdim = false) const;
  Tensor var(bool unbiased = true) const;
  Tensor var(IntArrayRef dim, bool unbiased = true, bool keepdim = false) const;
  Tensor std(bool unbiased = true) const;
  Tensor std(IntArrayRef dim, bool unbiased = true, bool keepdim = false) const;
  // var(1) / std(0) reduce along that dim, as in libtorch (not var(bool unbiased), which an int
  // would otherwise convert to).
  template <class I, std::enable_if_t<std::is_integral_v<I> && !std::is_same_v<I, bool>, int> = 0>
  Tensor var(I dim, bool unbiased = true, bool keepdim = false) const {
    const int64_t d = dim;
    return var(IntArrayRef(&d, 1), unbiased, keepdim);
  }
  template <class I, std::enable_if_t<std::is_integral_v<I> && !std::is_same_v<I, bool>, int> = 0>
  Tensor std(I dim, bool unbiased = true, bool keepdim = false) const {
    const int64_t d = dim;
    return std(IntArrayRef(&d, 1), unbiased, keepdim);
  }
  Tensor logsumexp(IntArrayRef dim, bool keepdim = false) const;
  Tensor norm(const Scalar& p = 2) const;
  Tensor norm(std::optional<Scalar> p, IntArrayRef dim, bool keepdim = false) const;
  Tensor all() const;
  Tensor all(int64_t dim, bool keepdim = false) const;
  Tensor any() const;
  Tensor any(int64_t dim, bool keepdim = false) const;
  Tensor cumsum(int64_t dim, std::optional<ScalarType> dtype = std::nullopt) const;
  Tensor cumprod(int64_t dim, std::optional<ScalarType> dtype = std::nullopt) const;
  std::tuple<Tensor, Tensor> sort(int64_t dim = -1, bool descending = false) const;
  std::tuple<Tensor, Tensor> sort(std::optional<bool> stable, int64_t dim = -1, bool descending = false) const;
  Tensor argsort(int64_t dim = -1, bool descending = false) const;
  Tensor argsort(bool stable, int64_t dim = -1, bool descending = false) const;
  std::tuple<Tensor, Tensor> topk(int64_t k, int64_t dim = -1, bool largest = true, bool sorted = true) const;
  Tensor median() const;
  std::tuple<Tensor, Tensor> median(int64_t dim, bool keepdim = false) const;

  // ---- short-time Fourier transforms (libtorch's methods; the same as fw::stft / fw::istft of
  // fw/fft.h, with the same two stft overloads)
  Tensor stft(int64_t n_fft, std::optional<int64_t> hop_length = std::nullopt,
              std::optional<int64_t> win_length = std::nullopt, const std::optional<Tensor>& window = {},
              bool center = true, std::string_view pad_mode = "reflect", bool normalized = false,
              std::optional<bool> onesided = std::nullopt, std::optional<bool> return_complex = std::nullopt) const;
  Tensor stft(int64_t n_fft, std::optional<int64_t> hop_length, std::optional<int64_t> win_length,
              const std::optional<Tensor>& window, bool normalized, std::optional<bool> onesided = std::nullopt,
              std::optional<bool> return_complex = std::nullopt) const;
  Tensor istft(int64_t n_fft, std::optional<int64_t> hop_length = std::nullopt,
               std::optional<int64_t> win_length = std::nullopt, const std::optional<Tensor>& window = {},
               bool center = true, bool normalized = false, std::optional<bool> onesided = std::nullopt,
               std::optional<int64_t> length = std::nullopt, bool return_complex = false) const;

  // ---- linear algebra and nn
  Tensor matmul(const Tensor& o) const;
  Tensor mm(const Tensor& o) const;
  Tensor bmm(const Tensor& o) const;
  Tensor dot(const Tensor& o) const;
  Tensor outer(const Tensor& o) const;
  Tensor softmax(int64_t dim, std::optional<ScalarType> dtype = std::nullopt) const;
  Tensor log_softmax(int64_t dim, std::optional<ScalarType> dtype = std::nullopt) const;

  // ---- more of libtorch's methods: the functions of fw/ops_extra.h and fw/linalg.h
  // (defined in core/ops/extra.cpp)
  Tensor nansum(std::optional<ScalarType> dtype = std::nullopt) const;
  Tensor nansum(IntArrayRef dim, bool keepdim = false, std::optional<ScalarType> dtype = std::nullopt) const;
  Tensor nanmean(std::optional<ScalarType> dtype = std::nullopt) const;
  Tensor nanmean(IntArrayRef dim, bool keepdim = false, std::optional<ScalarType> dtype = std::nullopt) const;
  std::tuple<Tensor, Tensor> aminmax(std::optional<int64_t> dim = std::nullopt, bool keepdim = false) const;
  std::tuple<Tensor, Tensor> kthvalue(int64_t k, int64_t dim = -1, bool keepdim = false) const;
  std::tuple<Tensor, Tensor> cummax(int64_t dim) const;
  std::tuple<Tensor, Tensor> cummin(int64_t dim) const;
  Tensor logcumsumexp(int64_t dim) const;
  Tensor quantile(double q, std::optional<int64_t> dim = std::nullopt, bool keepdim = false,
                  const std::string& interpolation = "linear") const;
  Tensor quantile(const Tensor& q, std::optional<int64_t> dim = std::nullopt, bool keepdim = false,
                  const std::string& interpolation = "linear") const;
  Tensor nanquantile(double q, std::optional<int64_t> dim = std::nullopt, bool keepdim = false,
                     const std::string& interpolation = "linear") const;
  Tensor nanquantile(const Tensor& q, std::optional<int64_t> dim = std::nullopt, bool keepdim = false,
                     const std::string& interpolation = "linear") const;
  Tensor bincount(const std::optional<Tensor>& weights = std::nullopt, int64_t minlength = 0) const;
  Tensor histc(int64_t bins = 100, const Scalar& min = 0, const Scalar& max = 0) const;
  std::tuple<Tensor, Tensor, Tensor> unique_consecutive(bool return_inverse = false, bool return_counts = false,
                                                        std::optional<int64_t> dim = std::nullopt) const;
  Tensor argwhere() const;
  Tensor kron(const Tensor& other) const;
  Tensor rot90(int64_t k = 1, IntArrayRef dims = {0, 1}) const;
  Tensor fliplr() const;
  Tensor flipud() const;
  Tensor diag_embed(int64_t offset = 0, int64_t dim1 = -2, int64_t dim2 = -1) const;
  Tensor take_along_dim(const Tensor& indices, std::optional<int64_t> dim = std::nullopt) const;
  Tensor masked_scatter(const Tensor& mask, const Tensor& source) const;
  Tensor sgn() const;
  Tensor cov(int64_t correction = 1, const std::optional<Tensor>& fweights = std::nullopt,
             const std::optional<Tensor>& aweights = std::nullopt) const;
  Tensor corrcoef() const;
  Tensor xlogy(const Tensor& other) const;
  Tensor logaddexp(const Tensor& other) const;
  Tensor logaddexp2(const Tensor& other) const;
  Tensor index_fill(int64_t dim, const Tensor& index, const Scalar& value) const;
  Tensor scatter_reduce(int64_t dim, const Tensor& index, const Tensor& src, const std::string& reduce,
                        bool include_self = true) const;
  Tensor inverse() const;
  Tensor det() const;
  Tensor logdet() const;
  std::tuple<Tensor, Tensor> slogdet() const;
  Tensor cholesky(bool upper = false) const;
  std::tuple<Tensor, Tensor, Tensor> svd(bool some = true, bool compute_uv = true) const;
  Tensor pinverse(double rcond = 1e-15) const;
  Tensor matrix_power(int64_t n) const;
  // Memory formats: channels-last is NHWC (NDHWC) storage of an NCHW (NCDHW) tensor.
  bool is_contiguous(MemoryFormat format) const;
  Tensor contiguous(MemoryFormat format) const;
  Tensor clone(std::optional<MemoryFormat> format) const;
  MemoryFormat suggest_memory_format() const;
  // The elements fill a block of memory without gaps or overlaps, in some dim order.
  bool is_non_overlapping_and_dense() const;

  // ---- and still more (core/ops/extra_more.cpp)
  // A detached alias sharing storage but not the version counter (libtorch's .data() and
  // variable_data()): in-place writes through it are invisible to autograd's saved-tensor checks,
  // and its own _version() starts at 0. detach() shares the counter.
  Tensor data() const;
  Tensor variable_data() const { return data(); }
  Layout layout() const { return kStrided; }
  bool is_sparse() const { return false; }
  bool is_pinned() const { return false; }
  // fw's conj() writes the conjugate (no lazy conjugate bit), so nothing is left to resolve.
  bool is_conj() const { return false; }
  bool is_neg() const { return false; }
  Tensor resolve_conj() const { return *this; }
  Tensor resolve_neg() const { return *this; }
  Tensor conj_physical() const { return conj(); }
  Tensor& conj_physical_() const;
  // libtorch's device index: -1 for CPU tensors.
  int64_t get_device() const { return device().is_cpu() ? -1 : device().index(); }
  // Makes this handle undefined (libtorch's reset()).
  void reset() { impl_.reset(); }
  // fw has no page-locked host memory yet (no CUDA device to copy to): pin_memory() returns the
  // tensor itself, as libtorch's does for a tensor that is already pinned.
  Tensor pin_memory(std::optional<Device> device = std::nullopt) const;
  // True for tensors whose memory was allocated under InferenceMode (and views of them); an
  // in-place write to one outside InferenceMode raises, as in libtorch.
  bool is_inference() const;
  // Every fw::Tensor is a libtorch "Variable" (autograd is built in).
  bool is_variable() const { return true; }
  // libtorch's legacy type object: x.type().scalarType(), x.type().toString() ("CPUFloatType").
  DeprecatedTypeProperties type() const;
  // ATen's underscore forms (half_to_float: a float16 input gives a float32 result).
  Tensor _log_softmax(int64_t dim, bool half_to_float) const;
  Tensor _softmax(int64_t dim, bool half_to_float) const;
  bool has_names() const { return false; }
  bool is_signed() const;
  // The value of a one-element tensor as a bool (raises for any other size).
  bool is_nonzero() const;
  bool allclose(const Tensor& other, double rtol = 1e-5, double atol = 1e-8, bool equal_nan = false) const;
  Tensor isclose(const Tensor& other, double rtol = 1e-5, double atol = 1e-8, bool equal_nan = false) const;
  bool equal(const Tensor& other) const;
  Tensor T() const;
  Tensor H() const;
  Tensor mH() const;
  Tensor adjoint() const { return mH(); }
  Tensor mv(const Tensor& vec) const;
  Tensor addmm(const Tensor& m1, const Tensor& m2, const Scalar& beta = 1, const Scalar& alpha = 1) const;
  Tensor& addmm_(const Tensor& m1, const Tensor& m2, const Scalar& beta = 1, const Scalar& alpha = 1) const;
  Tensor baddbmm(const Tensor& b1, const Tensor& b2, const Scalar& beta = 1, const Scalar& alpha = 1) const;
  Tensor addmv(const Tensor& mat, const Tensor& vec, const Scalar& beta = 1, const Scalar& alpha = 1) const;
  Tensor addr(const Tensor& v1, const Tensor& v2, const Scalar& beta = 1, const Scalar& alpha = 1) const;
  Tensor addbmm(const Tensor& b1, const Tensor& b2, const Scalar& beta = 1, const Scalar& alpha = 1) const;
  Tensor& baddbmm_(const Tensor& b1, const Tensor& b2, const Scalar& beta = 1, const Scalar& alpha = 1) const;
  Tensor& addbmm_(const Tensor& b1, const Tensor& b2, const Scalar& beta = 1, const Scalar& alpha = 1) const;
  Tensor& addmv_(const Tensor& mat, const Tensor& vec, const Scalar& beta = 1, const Scalar& alpha = 1) const;
  Tensor& addr_(const Tensor& v1, const Tensor& v2, const Scalar& beta = 1, const Scalar& alpha = 1) const;
  // fw::histogram (include/fw/ops_extra.h).
  std::tuple<Tensor, Tensor> histogram(int64_t bins = 100, std::optional<ArrayRef<double>> range = std::nullopt,
                                       const std::optional<Tensor>& weight = std::nullopt, bool density = false) const;
  std::tuple<Tensor, Tensor> histogram(const Tensor& bins, const std::optional<Tensor>& weight = std::nullopt,
                                       bool density = false) const;
  Tensor count_nonzero(std::optional<int64_t> dim = std::nullopt) const;
  Tensor count_nonzero(int64_t dim) const { return count_nonzero(std::optional<int64_t>(dim)); }
  Tensor count_nonzero(IntArrayRef dims) const;
  Tensor& cumsum_(int64_t dim, std::optional<ScalarType> dtype = std::nullopt) const;
  Tensor& cumprod_(int64_t dim, std::optional<ScalarType> dtype = std::nullopt) const;
  // Fills the main diagonal (of a 2-D tensor, or of an all-equal-sizes one); wrap continues
  // below a tall matrix's first square block every ncols + 1 rows, as NumPy.
  Tensor& fill_diagonal_(const Scalar& value, bool wrap = false) const;
  Tensor& fmod_(const Tensor& o) const;
  Tensor& fmod_(const Scalar& o) const;
  Tensor& remainder_(const Tensor& o) const;
  Tensor& remainder_(const Scalar& o) const;
  Tensor& div_(const Tensor& o, std::optional<std::string> rounding_mode) const;
  Tensor& div_(const Scalar& o, std::optional<std::string> rounding_mode) const;
  Tensor div(const Scalar& o, std::optional<std::string> rounding_mode) const;
  Tensor divide(const Tensor& o) const { return div(o); }
  Tensor divide(const Scalar& o) const { return div(o); }
  Tensor multiply(const Tensor& o) const { return mul(o); }
  Tensor multiply(const Scalar& o) const { return mul(o); }
  Tensor subtract(const Tensor& o, const Scalar& alpha = 1) const { return sub(o, alpha); }
  Tensor round(int64_t decimals) const;
  Tensor& round_(int64_t decimals) const;
  Tensor index_copy(int64_t dim, const Tensor& index, const Tensor& source) const;
  Tensor& index_copy_(int64_t dim, const Tensor& index, const Tensor& source) const;
  Tensor& index_fill_(int64_t dim, const Tensor& index, const Scalar& value) const;
  Tensor put(const Tensor& index, const Tensor& source, bool accumulate = false) const;
  Tensor& put_(const Tensor& index, const Tensor& source, bool accumulate = false) const;
  Tensor& lerp_(const Tensor& end, const Scalar& w) const;
  Tensor& lerp_(const Tensor& end, const Tensor& w) const;
  Tensor& logical_not_() const;
  Tensor& logical_and_(const Tensor& o) const;
  Tensor& logical_or_(const Tensor& o) const;
  Tensor& logical_xor_(const Tensor& o) const;
  Tensor& masked_scatter_(const Tensor& mask, const Tensor& source) const;
  Tensor& nan_to_num_(std::optional<double> nan = std::nullopt, std::optional<double> posinf = std::nullopt,
                      std::optional<double> neginf = std::nullopt) const;
  Tensor& tril_(int64_t diagonal = 0) const;
  Tensor& triu_(int64_t diagonal = 0) const;
  Tensor& renorm_(const Scalar& p, int64_t dim, const Scalar& maxnorm) const;
  Tensor renorm(const Scalar& p, int64_t dim, const Scalar& maxnorm) const;
  Tensor where(const Tensor& cond, const Scalar& other) const;
  std::tuple<Tensor, Tensor> mode(int64_t dim = -1, bool keepdim = false) const;
  Tensor nanmedian() const;
  std::tuple<Tensor, Tensor> nanmedian(int64_t dim, bool keepdim = false) const;
  Tensor dist(const Tensor& other, const Scalar& p = 2) const;
  std::tuple<Tensor, Tensor> frexp() const;
  Tensor isreal() const;
  Tensor positive() const;
  Tensor negative() const { return neg(); }
  Tensor fix() const { return trunc(); }
  Tensor arccos() const { return acos(); }
  Tensor arcsin() const { return asin(); }
  Tensor arctan() const { return atan(); }
  Tensor arccosh() const { return acosh(); }
  Tensor arcsinh() const { return asinh(); }
  Tensor arctanh() const { return atanh(); }
  Tensor arctan2(const Tensor& o) const { return atan2(o); }
  Tensor bitwise_left_shift(const Tensor& o) const;
  Tensor bitwise_right_shift(const Tensor& o) const;
  Tensor bitwise_left_shift(const Scalar& o) const;
  Tensor bitwise_right_shift(const Scalar& o) const;
  // In-place bitwise ops: the result type must be castable to this tensor's dtype.
  Tensor& bitwise_and_(const Tensor& o) const;
  Tensor& bitwise_and_(const Scalar& o) const;
  Tensor& bitwise_or_(const Tensor& o) const;
  Tensor& bitwise_or_(const Scalar& o) const;
  Tensor& bitwise_xor_(const Tensor& o) const;
  Tensor& bitwise_xor_(const Scalar& o) const;
  Tensor& bitwise_not_() const;
  Tensor& bitwise_left_shift_(const Tensor& o) const;
  Tensor& bitwise_left_shift_(const Scalar& o) const;
  Tensor& bitwise_right_shift_(const Tensor& o) const;
  Tensor& bitwise_right_shift_(const Scalar& o) const;
  // Python's operator methods as libtorch's C++ API spells them (x.__lshift__(2) is x << 2).
  Tensor __and__(const Tensor& o) const { return bitwise_and(o); }
  Tensor __and__(const Scalar& o) const { return bitwise_and(o); }
  Tensor __or__(const Tensor& o) const { return bitwise_or(o); }
  Tensor __or__(const Scalar& o) const { return bitwise_or(o); }
  Tensor __xor__(const Tensor& o) const { return bitwise_xor(o); }
  Tensor __xor__(const Scalar& o) const { return bitwise_xor(o); }
  Tensor& __iand__(const Tensor& o) const { return bitwise_and_(o); }
  Tensor& __iand__(const Scalar& o) const { return bitwise_and_(o); }
  Tensor& __ior__(const Tensor& o) const { return bitwise_or_(o); }
  Tensor& __ior__(const Scalar& o) const { return bitwise_or_(o); }
  Tensor& __ixor__(const Tensor& o) const { return bitwise_xor_(o); }
  Tensor& __ixor__(const Scalar& o) const { return bitwise_xor_(o); }
  Tensor __lshift__(const Tensor& o) const;
  Tensor __lshift__(const Scalar& o) const;
  Tensor __rshift__(const Tensor& o) const;
  Tensor __rshift__(const Scalar& o) const;
  Tensor& __ilshift__(const Tensor& o) const;
  Tensor& __ilshift__(const Scalar& o) const;
  Tensor& __irshift__(const Tensor& o) const;
  Tensor& __irshift__(const Scalar& o) const;
  Tensor movedim(IntArrayRef source, IntArrayRef destination) const;
  Tensor movedim(int64_t source, int64_t destination) const;
  Tensor moveaxis(IntArrayRef source, IntArrayRef destination) const { return movedim(source, destination); }
  Tensor moveaxis(int64_t source, int64_t destination) const { return movedim(source, destination); }
  Tensor swapdims(int64_t d0, int64_t d1) const { return transpose(d0, d1); }
  std::vector<Tensor> tensor_split(int64_t sections, int64_t dim = 0) const;
  std::vector<Tensor> tensor_split(IntArrayRef indices, int64_t dim = 0) const;
  std::vector<Tensor> hsplit(int64_t sections) const;
  std::vector<Tensor> hsplit(IntArrayRef indices) const;
  std::vector<Tensor> vsplit(int64_t sections) const;
  std::vector<Tensor> vsplit(IntArrayRef indices) const;
  std::vector<Tensor> dsplit(int64_t sections) const;
  std::vector<Tensor> dsplit(IntArrayRef indices) const;
  // In-place metadata changes of this handle (and every handle sharing it). Not for tensors that
  // take part in autograd, where libtorch records them as views; use the out-of-place forms.
  Tensor& squeeze_() const;
  Tensor& squeeze_(int64_t dim) const;
  Tensor& unsqueeze_(int64_t dim) const;
  Tensor& t_() const;
  Tensor& transpose_(int64_t d0, int64_t d1) const;
  Tensor& as_strided_(IntArrayRef size, IntArrayRef stride, std::optional<int64_t> offset = std::nullopt) const;
  // Contiguous sizes `size`; the storage grows (keeping its bytes) when it is too small.
  Tensor& resize_(IntArrayRef size) const;
  Tensor& resize_as_(const Tensor& other) const { return resize_(other.sizes()); }
  // This tensor (and every handle sharing it) takes new_data's storage, sizes, strides and dtype;
  // its autograd identity (leaf, requires_grad, hooks) stays, as libtorch's set_data.
  void set_data(const Tensor& new_data) const;
  // Prints the type and sizes to stdout ("[CPUFloatType [2, 3]]"), as libtorch's print().
  void print() const;
  // Methods for more of the functions (core/ops/extra_more.cpp).
  Tensor i0() const;
  Tensor& i0_() const;
  Tensor igamma(const Tensor& other) const;
  Tensor igammac(const Tensor& other) const;
  Tensor copysign(const Tensor& o) const;
  Tensor copysign(const Scalar& o) const;
  Tensor hypot(const Tensor& o) const;
  Tensor fmax(const Tensor& o) const;
  Tensor fmin(const Tensor& o) const;
  Tensor signbit() const;
  Tensor isposinf() const;
  Tensor isneginf() const;
  Tensor deg2rad() const;
  Tensor rad2deg() const;
  Tensor sinc() const;
  Tensor ldexp(const Tensor& o) const;
  Tensor float_power(const Tensor& e) const;
  Tensor float_power(const Scalar& e) const;
  Tensor floor_divide(const Tensor& o) const;
  Tensor floor_divide(const Scalar& o) const;
  Tensor true_divide(const Tensor& o) const { return div(o); }
  Tensor true_divide(const Scalar& o) const { return div(o); }
  Tensor heaviside(const Tensor& values) const;
  Tensor gcd(const Tensor& o) const;
  Tensor lcm(const Tensor& o) const;
  Tensor nextafter(const Tensor& o) const;
  Tensor inner(const Tensor& o) const;
  Tensor ger(const Tensor& o) const { return outer(o); }
  Tensor diff(int64_t n = 1, int64_t dim = -1, const std::optional<Tensor>& prepend = std::nullopt,
              const std::optional<Tensor>& append = std::nullopt) const;
  Tensor msort() const;
  Tensor ravel() const { return reshape({-1}); }
  Tensor narrow_copy(int64_t dim, int64_t start, int64_t length) const { return narrow(dim, start, length).clone(); }
  Tensor sum_to_size(IntArrayRef size) const;
  std::tuple<Tensor, Tensor> qr(bool some = true) const;
  Tensor hardshrink(const Scalar& lambd = 0.5) const;
  Tensor& scatter_reduce_(int64_t dim, const Tensor& index, const Tensor& src, const std::string& reduce,
                          bool include_self = true) const;
  Tensor select_scatter(const Tensor& src, int64_t dim, int64_t index) const;
  Tensor slice_scatter(const Tensor& src, int64_t dim = 0, std::optional<int64_t> start = std::nullopt,
                       std::optional<int64_t> end = std::nullopt, int64_t step = 1) const;
  Tensor diagonal_scatter(const Tensor& src, int64_t offset = 0, int64_t dim1 = 0, int64_t dim2 = 1) const;
  Tensor repeat_interleave(const Tensor& repeats, std::optional<int64_t> dim = std::nullopt) const;
  // Linear algebra of fw/linalg_more.h.
  Tensor matrix_exp() const;
  Tensor cross(const Tensor& other, std::optional<int64_t> dim = std::nullopt) const;
  Tensor vdot(const Tensor& other) const;
  Tensor cholesky_solve(const Tensor& L, bool upper = false) const;
  Tensor cholesky_inverse(bool upper = false) const;
  std::tuple<Tensor, Tensor> triangular_solve(const Tensor& A, bool upper = true, bool transpose = false,
                                              bool unitriangular = false) const;
  Tensor lu_solve(const Tensor& LU_data, const Tensor& LU_pivots) const;
  // More libtorch forms (core/ops/compat_ops.cpp): scatter with reduce "add" / "multiply",
  // index_reduce, the unsafe_ split spellings, var/std with a correction.
  Tensor scatter(int64_t dim, const Tensor& index, const Tensor& src, const std::string& reduce) const;
  Tensor scatter(int64_t dim, const Tensor& index, const Scalar& value, const std::string& reduce) const;
  Tensor& scatter_(int64_t dim, const Tensor& index, const Tensor& src, const std::string& reduce) const;
  Tensor& scatter_(int64_t dim, const Tensor& index, const Scalar& value, const std::string& reduce) const;
  Tensor index_reduce(int64_t dim, const Tensor& index, const Tensor& source, const std::string& reduce,
                      bool include_self = true) const;
  Tensor& index_reduce_(int64_t dim, const Tensor& index, const Tensor& source, const std::string& reduce,
                        bool include_self = true) const;
  std::vector<Tensor> unsafe_split(int64_t split_size, int64_t dim = 0) const { return split(split_size, dim); }
  std::vector<Tensor> unsafe_split_with_sizes(IntArrayRef sizes, int64_t dim = 0) const { return split(sizes, dim); }
  std::vector<Tensor> unsafe_chunk(int64_t chunks, int64_t dim = 0) const { return chunk(chunks, dim); }
  Tensor var(OptionalIntArrayRef dim, std::optional<int64_t> correction, bool keepdim = false) const;
  Tensor std(OptionalIntArrayRef dim, std::optional<int64_t> correction, bool keepdim = false) const;

  // The rest of libtorch's method spellings (core/ops/compat_more.cpp). Comparison aliases, and
  // in-place comparisons writing 0/1 in this tensor's dtype:
  Tensor greater(const Tensor& o) const { return gt(o); }
  Tensor greater(const Scalar& o) const { return gt(o); }
  Tensor greater_equal(const Tensor& o) const { return ge(o); }
  Tensor greater_equal(const Scalar& o) const { return ge(o); }
  Tensor less(const Tensor& o) const { return lt(o); }
  Tensor less(const Scalar& o) const { return lt(o); }
  Tensor less_equal(const Tensor& o) const { return le(o); }
  Tensor less_equal(const Scalar& o) const { return le(o); }
  Tensor not_equal(const Tensor& o) const { return ne(o); }
  Tensor not_equal(const Scalar& o) const { return ne(o); }
#define FW_CMP_INPLACE(name)             \
  Tensor& name(const Tensor& o) const; \
  Tensor& name(const Scalar& o) const;
  FW_CMP_INPLACE(eq_) FW_CMP_INPLACE(ne_) FW_CMP_INPLACE(lt_) FW_CMP_INPLACE(le_) FW_CMP_INPLACE(gt_)
  FW_CMP_INPLACE(ge_) FW_CMP_INPLACE(greater_) FW_CMP_INPLACE(greater_equal_) FW_CMP_INPLACE(less_)
  FW_CMP_INPLACE(less_equal_) FW_CMP_INPLACE(not_equal_)
#undef FW_CMP_INPLACE
  // In-place forms of functions above (the result must cast to this tensor's dtype).
  Tensor& arccos_() const { return acos_(); }
  Tensor& arccosh_() const { return acosh_(); }
  Tensor& arcsin_() const { return asin_(); }
  Tensor& arcsinh_() const { return asinh_(); }
  Tensor& arctan_() const { return atan_(); }
  Tensor& arctanh_() const { return atanh_(); }
  Tensor& atan2_(const Tensor& o) const;
  Tensor& arctan2_(const Tensor& o) const { return atan2_(o); }
  Tensor& clip_(std::optional<Scalar> min, std::optional<Scalar> max = std::nullopt) const { return clamp_(min, max); }
  Tensor& clip_(const std::optional<Tensor>& min, const std::optional<Tensor>& max = std::nullopt) const {
    return clamp_(min, max);
  }
  Tensor& copysign_(const Tensor& o) const;
  Tensor& copysign_(const Scalar& o) const;
  Tensor& deg2rad_() const;
  Tensor& rad2deg_() const;
  Tensor& divide_(const Tensor& o) const { return div_(o); }
  Tensor& divide_(const Scalar& o) const { return div_(o); }
  Tensor& divide_(const Tensor& o, std::optional<std::string> mode) const { return div_(o, std::move(mode)); }
  Tensor& true_divide_(const Tensor& o) const { return div_(o); }
  Tensor& true_divide_(const Scalar& o) const { return div_(o); }
  Tensor& multiply_(const Tensor& o) const { return mul_(o); }
  Tensor& multiply_(const Scalar& o) const { return mul_(o); }
  Tensor& subtract_(const Tensor& o, const Scalar& alpha = 1) const { return sub_(o, alpha); }
  Tensor& subtract_(const Scalar& o, const Scalar& alpha = 1) const { return sub_(o, alpha); }
  Tensor& negative_() const { return neg_(); }
  Tensor& fix_() const { return trunc_(); }
  Tensor& floor_divide_(const Tensor& o) const;
  Tensor& floor_divide_(const Scalar& o) const;
  Tensor& float_power_(const Tensor& e) const;
  Tensor& float_power_(const Scalar& e) const;
  Tensor& gcd_(const Tensor& o) const;
  Tensor& lcm_(const Tensor& o) const;
  Tensor& heaviside_(const Tensor& values) const;
  Tensor& hypot_(const Tensor& o) const;
  Tensor& igamma_(const Tensor& o) const;
  Tensor& igammac_(const Tensor& o) const;
  Tensor& ldexp_(const Tensor& o) const;
  Tensor& logit_(std::optional<double> eps = std::nullopt) const;
  Tensor mvlgamma(int64_t p) const;
  Tensor& mvlgamma_(int64_t p) const;
  Tensor& nextafter_(const Tensor& o) const;
  Tensor& sgn_() const;
  Tensor& sinc_() const;
  Tensor& xlogy_(const Tensor& o) const;
  Tensor& xlogy_(const Scalar& o) const;
  Tensor& swapaxes_(int64_t d0, int64_t d1) const { return transpose_(d0, d1); }
  Tensor& swapdims_(int64_t d0, int64_t d1) const { return transpose_(d0, d1); }
  // Out of place index_put (libtorch's List<optional<Tensor>> form; nullopt is a full slice).
  Tensor index_put(const std::vector<std::optional<Tensor>>& indices, const Tensor& values,
                   bool accumulate = false) const;
  // A differentiable view with this tensor's geometry.
  Tensor alias() const;
  // A detached alias that shares the version counter (libtorch's tensor_data(), unlike data()).
  Tensor tensor_data() const { return detach(); }
  // Same storage, offset, sizes and strides.
  bool is_set_to(const Tensor& o) const;
  // This tensor (and every handle sharing it) becomes a view of source's memory with source's
  // geometry and dtype; an in-place write for autograd's version checks.
  Tensor& set_(const Tensor& source) const;
  // where(*this): one index tensor per dim (libtorch's nonzero_numpy).
  std::vector<Tensor> nonzero_numpy() const;
  Tensor diagflat(int64_t offset = 0) const;
  Tensor orgqr(const Tensor& tau) const;
  Tensor prelu(const Tensor& weight) const;
  Tensor new_empty_strided(IntArrayRef size, IntArrayRef stride, const TensorOptions& options = {}) const;
  // This tensor itself when contiguous in `format`, else a copy that is (libtorch's MaybeOwned).
  MaybeOwned<Tensor> expect_contiguous(MemoryFormat format = MemoryFormat::Contiguous) const;
  // libtorch's deprecated spelling of generic_packed_accessor.
  template <class T, size_t N, template <class> class PtrTraits = DefaultPtrTraits, class index_t = int64_t>
  GenericPackedTensorAccessor<T, N, PtrTraits, index_t> packed_accessor() const {
    return generic_packed_accessor<T, N, PtrTraits, index_t>();
  }

 private:
  // In-place methods are const, as libtorch's: a Tensor is a handle, and they write the data and
  // metadata it points at, never the handle itself. This is the handle they pass on and return.
  Tensor& mut_self() const noexcept { return const_cast<Tensor&>(*this); }
  intrusive_ptr<TensorImpl> impl_;
};

// c10::MaybeOwned<T>: a borrowed or owned value behind * and ->. Tensor handles are refcounted,
// so both kinds hold a handle here.
template <class T>
class MaybeOwned {
 public:
  static MaybeOwned borrowed(const T& v) { return MaybeOwned(v); }
  static MaybeOwned owned(T&& v) { return MaybeOwned(std::move(v)); }
  template <class... Args>
  static MaybeOwned owned(std::in_place_t, Args&&... args) { return MaybeOwned(T(std::forward<Args>(args)...)); }
  const T& operator*() const& { return v_; }
  const T* operator->() const { return &v_; }

 private:
  explicit MaybeOwned(T v) : v_(std::move(v)) {}
  T v_;
};

// Autograd fields, allocated only for tensors that take part in autograd.
struct AutogradMeta {
  bool requires_grad = false;
  bool retains_grad = false;
  Tensor grad;  // the accumulated gradient (Tensor::grad(), mutable_grad())
  std::shared_ptr<autograd::Node> grad_fn;
  std::weak_ptr<autograd::Node> grad_accumulator;  // leaves: where their gradient is summed
  std::vector<std::function<Tensor(const Tensor&)>> leaf_hooks;
  std::shared_ptr<void> alive;  // retain_grad's hook holds a weak_ptr to it (no ownership cycle)
  uint32_t output_nr = 0;
  uint32_t rebase_gen = 0;  // bases: how many writes through views their history has taken
  uint32_t view_gen = 0;    // views: the base's rebase_gen their grad_fn was derived at
};

inline bool Tensor::requires_grad() const { return impl_->autograd && impl_->autograd->requires_grad; }
inline bool Tensor::is_leaf() const {
  return !impl_->autograd ||
         (!impl_->autograd->grad_fn && !(impl_->autograd->requires_grad && detail::traced_nonleaf(impl_.get())));
}
inline uint32_t Tensor::output_nr() const { return impl_->autograd ? impl_->autograd->output_nr : 0; }
inline bool Tensor::retains_grad() const { return impl_->autograd && impl_->autograd->retains_grad; }

template <class T>
T* Tensor::data_ptr() const {
  FW_CHECK(CppToType<T>::value == dtype(), "[data_ptr] expected scalar type ",
           dtype_name(CppToType<T>::value), " but found ", dtype_name(dtype()));
  return static_cast<T*>(data_ptr());
}

template <class T>
T Tensor::item() const { return item().to_checked<T>("item"); }

template <class T, size_t N>
TensorAccessor<T, N> Tensor::accessor() const {
  FW_CHECK(dim() == int64_t(N), "[accessor] TensorAccessor expected ", N, " dims but tensor has ", dim());
  return TensorAccessor<T, N>(data_ptr<T>(), sizes().data(), strides().data());
}
template <class T, size_t N, template <class> class PtrTraits, class index_t>
GenericPackedTensorAccessor<T, N, PtrTraits, index_t> Tensor::generic_packed_accessor() const {
  FW_CHECK(dim() == int64_t(N), "[packed_accessor] TensorAccessor expected ", N, " dims but tensor has ", dim());
  return GenericPackedTensorAccessor<T, N, PtrTraits, index_t>(data_ptr<T>(), sizes().data(), strides().data());
}
template <class T, size_t N, template <class> class PtrTraits>
PackedTensorAccessor32<T, N, PtrTraits> Tensor::packed_accessor32() const {
  FW_CHECK(numel() <= int64_t(INT32_MAX), "[packed_accessor32] numel needs to be smaller than 2^31 for 32-bit "
           "indexing (shape ", sizes(), ", numel ", numel(), "); use packed_accessor64");
  return generic_packed_accessor<T, N, PtrTraits, int32_t>();
}

std::ostream& operator<<(std::ostream& os, const Tensor& t);
// libtorch's print: the tensor as operator<< writes it, matrices wrapped at linesize columns; the
// second form writes to std::cout and ends the line.
std::ostream& print(std::ostream& os, const Tensor& t, int64_t linesize);
void print(const Tensor& t, int64_t linesize = 80);

// ---- operators (libtorch's set)
Tensor operator-(const Tensor& a);
Tensor operator~(const Tensor& a);
#define FW_BINARY_OPERATOR(op)                             \
  Tensor operator op(const Tensor& a, const Tensor& b);     \
  Tensor operator op(const Tensor& a, const Scalar& b);     \
  Tensor operator op(const Scalar& a, const Tensor& b);
FW_BINARY_OPERATOR(+) FW_BINARY_OPERATOR(-) FW_BINARY_OPERATOR(*) FW_BINARY_OPERATOR(/)
FW_BINARY_OPERATOR(%) FW_BINARY_OPERATOR(==) FW_BINARY_OPERATOR(!=) FW_BINARY_OPERATOR(<)
FW_BINARY_OPERATOR(<=) FW_BINARY_OPERATOR(>) FW_BINARY_OPERATOR(>=) FW_BINARY_OPERATOR(&)
FW_BINARY_OPERATOR(|) FW_BINARY_OPERATOR(^)
#undef FW_BINARY_OPERATOR

}  // namespace fw
