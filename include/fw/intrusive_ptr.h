// A minimal intrusive refcounted pointer: one allocation per object, one atomic per copy.
#pragma once
#include <atomic>
#include <utility>

namespace fw {

// Base for refcounted objects held by intrusive_ptr.
struct RefCounted {
  mutable std::atomic<int> refcount_{0};
  virtual ~RefCounted() = default;
};

template <class T>
class intrusive_ptr {
 public:
  intrusive_ptr() = default;
  explicit intrusive_ptr(T* p) : p_(p) { if (p_) p_->refcount_.fetch_add(1, std::memory_order_relaxed); }
  intrusive_ptr(const intrusive_ptr& o) : p_(o.p_) { if (p_) p_->refcount_.fetch_add(1, std::memory_order_relaxed); }
  intrusive_ptr(intrusive_ptr&& o) noexcept : p_(o.p_) { o.p_ = nullptr; }
  ~intrusive_ptr() { release(); }
  intrusive_ptr& operator=(const intrusive_ptr& o) {
    intrusive_ptr(o).swap(*this);
    return *this;
  }
  intrusive_ptr& operator=(intrusive_ptr&& o) noexcept {
    intrusive_ptr(std::move(o)).swap(*this);
    return *this;
  }
  void swap(intrusive_ptr& o) noexcept { std::swap(p_, o.p_); }
  T* get() const { return p_; }
  T* operator->() const { return p_; }
  T& operator*() const { return *p_; }
  explicit operator bool() const { return p_ != nullptr; }
  int use_count() const { return p_ ? p_->refcount_.load() : 0; }
  void reset() { release(); }
  bool operator==(const intrusive_ptr& o) const { return p_ == o.p_; }
  bool operator!=(const intrusive_ptr& o) const { return p_ != o.p_; }

 private:
  void release() {
    if (p_ && p_->refcount_.fetch_sub(1, std::memory_order_acq_rel) == 1) delete p_;
    p_ = nullptr;
  }
  T* p_ = nullptr;
};

template <class T, class... Args>
intrusive_ptr<T> make_intrusive(Args&&... args) {
  return intrusive_ptr<T>(new T(std::forward<Args>(args)...));
}

}  // namespace fw
