// ArrayRef (a non-owning view like libtorch's IntArrayRef) and SmallVec (inline storage).
#pragma once
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <ostream>
#include <type_traits>
#include <utility>
#include <vector>

#include "fw/error.h"

namespace fw {

// Non-owning view of a contiguous array. Binds to {1, 2}, std::vector, a single value.
template <class T>
class ArrayRef {
 public:
  ArrayRef() = default;
  ArrayRef(const T& one) : data_(&one), size_(1) {}
  ArrayRef(const T* d, size_t n) : data_(d), size_(n) {}
  ArrayRef(const std::vector<T>& v) : data_(v.data()), size_(v.size()) {}
  // Like libtorch's IntArrayRef, valid for the full-expression that built the braces.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Winit-list-lifetime"
  ArrayRef(std::initializer_list<T> l) : data_(l.begin()), size_(l.size()) {}
#pragma GCC diagnostic pop
  template <class C, class = decltype(std::declval<const C&>().data())>
  ArrayRef(const C& c) : data_(c.data()), size_(c.size()) {}
  const T* data() const { return data_; }
  const T* begin() const { return data_; }
  const T* end() const { return data_ + size_; }
  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  const T& operator[](size_t i) const { return data_[i]; }
  const T& front() const { return data_[0]; }
  const T& back() const { return data_[size_ - 1]; }
  std::vector<T> vec() const { return std::vector<T>(begin(), end()); }
  bool equals(ArrayRef o) const { return size_ == o.size_ && std::equal(begin(), end(), o.begin()); }
  // Hidden friends, so that a std::vector or braced shape converts on either side and != exists in
  // C++17 too (C++20 would rewrite it from ==).
  friend bool operator==(ArrayRef a, ArrayRef b) { return a.equals(b); }
  friend bool operator!=(ArrayRef a, ArrayRef b) { return !a.equals(b); }
  ArrayRef slice(size_t start, size_t n) const { return ArrayRef(data_ + start, n); }

 private:
  const T* data_ = nullptr;
  size_t size_ = 0;
};
using IntArrayRef = ArrayRef<int64_t>;

// Vector with N elements stored inline; sizes/strides live here so tensors of rank <= N
// never touch the heap for their shape.
template <class T, unsigned N>
class SmallVec {
 public:
  using value_type = T;
  using size_type = size_t;
  using iterator = T*;
  using const_iterator = const T*;
  SmallVec() = default;
  template <class It, class = std::enable_if_t<!std::is_integral_v<It>>>
  SmallVec(It b, It e) {
    for (; b != e; ++b) push_back(T(*b));
  }
  SmallVec(size_t n, T v = T()) { resize(n, v); }
  SmallVec(ArrayRef<T> a) { assign(a.begin(), a.end()); }
  SmallVec(std::initializer_list<T> l) { assign(l.begin(), l.end()); }
  SmallVec(const SmallVec& o) { assign(o.begin(), o.end()); }
  SmallVec& operator=(const SmallVec& o) {
    if (this != &o) assign(o.begin(), o.end());
    return *this;
  }
  ~SmallVec() { if (data_ != inline_) delete[] data_; }
  void assign(const T* b, const T* e) {
    size_ = 0;
    reserve(size_t(e - b));
    std::copy(b, e, data_);
    size_ = unsigned(e - b);
  }
  void reserve(size_t n) {
    if (n <= cap_) return;
    T* d = new T[n];
    std::copy(data_, data_ + size_, d);
    if (data_ != inline_) delete[] data_;
    data_ = d;
    cap_ = unsigned(n);
  }
  void resize(size_t n, T v = T()) {
    reserve(n);
    for (size_t i = size_; i < n; i++) data_[i] = v;
    size_ = unsigned(n);
  }
  void push_back(T v) {
    if (size_ == cap_) reserve(cap_ * 2);
    data_[size_++] = v;
  }
  template <class... Args>
  T& emplace_back(Args&&... args) {
    push_back(T(std::forward<Args>(args)...));
    return back();
  }
  template <class It>
  void append(It b, It e) {
    for (; b != e; ++b) push_back(T(*b));
  }
  void insert(size_t pos, T v) {
    push_back(v);
    for (size_t i = size_ - 1; i > pos; i--) data_[i] = data_[i - 1];
    data_[pos] = v;
  }
  void erase(size_t pos) {
    for (size_t i = pos; i + 1 < size_; i++) data_[i] = data_[i + 1];
    size_--;
  }
  void pop_back() { size_--; }
  void clear() { size_ = 0; }
  T* data() { return data_; }
  const T* data() const { return data_; }
  T* begin() { return data_; }
  T* end() { return data_ + size_; }
  const T* begin() const { return data_; }
  const T* end() const { return data_ + size_; }
  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  T& operator[](size_t i) { return data_[i]; }
  const T& operator[](size_t i) const { return data_[i]; }
  T& front() { return data_[0]; }
  const T& front() const { return data_[0]; }
  T& back() { return data_[size_ - 1]; }
  const T& back() const { return data_[size_ - 1]; }
  operator ArrayRef<T>() const { return ArrayRef<T>(data_, size_); }
  ArrayRef<T> ref() const { return ArrayRef<T>(data_, size_); }
  std::vector<T> vec() const { return std::vector<T>(begin(), end()); }
  bool operator==(const SmallVec& o) const {
    return size_ == o.size_ && std::equal(begin(), end(), o.begin());
  }
  bool operator!=(const SmallVec& o) const { return !(*this == o); }

 private:
  T inline_[N];
  T* data_ = inline_;
  unsigned size_ = 0, cap_ = N;
};
using DimVec = SmallVec<int64_t, 6>;

template <class T>
std::ostream& operator<<(std::ostream& os, ArrayRef<T> a) {
  os << "[";
  for (size_t i = 0; i < a.size(); i++) os << (i ? ", " : "") << a[i];
  return os << "]";
}
template <class T, unsigned N>
std::ostream& operator<<(std::ostream& os, const SmallVec<T, N>& a) { return os << a.ref(); }

}  // namespace fw
