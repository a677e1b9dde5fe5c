// Storage: a refcounted block of device memory shared by a tensor and its views.
#pragma once
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>

#include "fw/device.h"
#include "fw/intrusive_ptr.h"

namespace fw {

struct StorageImpl : RefCounted {
  void* data = nullptr;
  size_t nbytes = 0;
  Device device;
  // Bumped by every in-place write to any view of this storage (autograd's version check).
  std::atomic<uint32_t> version{0};
  // Name of the last in-place op that wrote here (for autograd's error message).
  const char* last_writer = nullptr;
  // A value traced by fw::compile: no memory until the trace materialises it (DESIGN.md §6).
  bool placeholder = false;
  // Allocated under InferenceMode: tensors over it are inference tensors (Tensor::is_inference).
  bool inference = false;
  // Creation stamp while any fw::compile trace is active (0 otherwise): a trace reading the values
  // of a storage older than itself is a graph break (Note [Reading real values while tracing] in
  // jit/tracer.cpp).
  uint64_t birth = 0;
  // Empty for memory from fw's caching allocator; otherwise called with data on release.
  std::function<void(void*)> deleter;
  StorageImpl(size_t n, Device d);                          // allocates from the caching allocator
  StorageImpl(void* p, size_t n, Device d, std::function<void(void*)> del);  // wraps memory
  ~StorageImpl() override;
};

// An autograd version counter of its own, for tensors that share memory but not history checks
// with their source (Tensor::data(), as libtorch's variable_data()); views inherit it. Tensors
// without one count on their storage's.
struct VersionCounter : RefCounted {
  std::atomic<uint32_t> version{0};
};

// libtorch's c10::Storage, as Tensor::storage() returns it: a handle on the memory a tensor and its
// views share. data_ptr() gives an object with get() and device(), as at::DataPtr.
class Storage {
 public:
  struct DataPtr {
    void* ptr;
    Device dev;
    void* get() const { return ptr; }
    Device device() const { return dev; }
    explicit operator bool() const { return ptr != nullptr; }
  };
  Storage() = default;
  explicit Storage(intrusive_ptr<StorageImpl> impl) : impl_(std::move(impl)) {}
  size_t nbytes() const { return impl_ ? impl_->nbytes : 0; }
  void* data() const { return impl_ ? impl_->data : nullptr; }
  void* mutable_data() const { return data(); }
  template <class T>
  T* data() const { return static_cast<T*>(data()); }
  DataPtr data_ptr() const { return DataPtr{data(), device()}; }
  Device device() const { return impl_ ? impl_->device : Device(); }
  DeviceType device_type() const { return device().type(); }
  bool resizable() const { return false; }
  // Handles on the storage, counting each tensor and view that holds it.
  size_t use_count() const { return size_t(impl_.use_count()); }
  bool unique() const { return use_count() == 1; }
  bool is_alias_of(const Storage& o) const { return impl_ && impl_ == o.impl_; }
  StorageImpl* unsafeGetStorageImpl() const { return impl_.get(); }
  explicit operator bool() const { return bool(impl_); }

 private:
  intrusive_ptr<StorageImpl> impl_;
};

namespace detail {
// Number of fw::compile traces running in the process, and the clock that stamps StorageImpl::birth
// while there are any.
extern std::atomic<int> g_traces_active;
extern std::atomic<uint64_t> g_storage_clock;
// 64-byte aligned CPU memory, recycled by size class so big buffers do not page-fault again.
void* cpu_alloc(size_t nbytes);
void cpu_free(void* p, size_t nbytes);
// Releases every cached block back to the system.
void cpu_allocator_empty_cache();
// Bytes currently held in the cache (not in use).
size_t cpu_allocator_cached_bytes();
}  // namespace detail

}  // namespace fw
