// fw::IValue: a value of one of a few kinds, as libtorch's c10::IValue is used in C++ code.
//   - none, tensor, double, int, bool, string;
//   - typed lists of ints, doubles and tensors (std::vector);
//   - generic lists (fw::List<T>, c10::List), dicts (fw::Dict<K, V>, c10::Dict, insertion-ordered)
//     and tuples (fw::ivalue::Tuple), which nest.
// Custom autograd Functions keep their non-tensor state in ctx->saved_data["k"] = 2.0 and read it
// back with ctx->saved_data["k"].toDouble(); fw::pickle_load (fw/pickle.h) returns the contents of
// a torch.save file as nested dicts, lists and tuples. Reading a value as the wrong kind raises
// fw::Error naming both kinds.
//
// As in libtorch, List and Dict are handles: copies share their elements (copy() makes a new one),
// and a typed List<T>/Dict<K, V> is a view of the generic one that converts elements on access.
#pragma once
#include <cstdint>
#include <initializer_list>
#include <iosfwd>
#include <memory>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

#include "fw/tensor.h"

namespace fw {

class IValue;
template <class T>
class List;
template <class K, class V>
class Dict;
using GenericList = List<IValue>;
using GenericDict = Dict<IValue, IValue>;
namespace ivalue {
struct Tuple;
}
namespace detail {
struct ListImpl;
struct DictImpl;
template <class T>
T ivalue_to(const IValue& v);
}  // namespace detail

class IValue {
 public:
  IValue() = default;  // None
  IValue(Tensor t) : v_(std::move(t)) {}
  IValue(double d) : v_(d) {}
  IValue(float f) : v_(double(f)) {}
  IValue(bool b) : v_(b) {}
  template <class I, std::enable_if_t<std::is_integral_v<I> && !std::is_same_v<I, bool>, int> = 0>
  IValue(I i) : v_(int64_t(i)) {}
  IValue(std::string s) : v_(std::move(s)) {}
  IValue(const char* s) : v_(std::string(s)) {}
  IValue(std::vector<int64_t> v) : v_(std::move(v)) {}
  IValue(IntArrayRef v) : v_(std::vector<int64_t>(v.begin(), v.end())) {}
  IValue(std::vector<double> v) : v_(std::move(v)) {}
  IValue(std::vector<Tensor> v) : v_(std::move(v)) {}
  IValue(Scalar s);
  template <class T>
  IValue(List<T> l) : v_(std::move(l.impl_)) {}
  template <class K, class V>
  IValue(Dict<K, V> d) : v_(std::move(d.impl_)) {}
  IValue(std::shared_ptr<ivalue::Tuple> t);
  template <class... Ts>
  IValue(const std::tuple<Ts...>& t);

  bool isNone() const { return v_.index() == 0; }
  bool isTensor() const { return v_.index() == 1; }
  bool isDouble() const { return v_.index() == 2; }
  bool isInt() const { return v_.index() == 3; }
  bool isBool() const { return v_.index() == 4; }
  bool isString() const { return v_.index() == 5; }
  // A typed list of that kind, or a generic list whose elements all are of that kind.
  bool isIntList() const { return v_.index() == 6 || generic_list_of(3); }
  bool isDoubleList() const { return v_.index() == 7 || generic_list_of(2); }
  bool isTensorList() const { return v_.index() == 8 || generic_list_of(1); }
  // Any list, typed or generic (libtorch's isList).
  bool isList() const { return v_.index() >= 6 && v_.index() <= 9; }
  bool isGenericDict() const { return v_.index() == 10; }
  bool isTuple() const { return v_.index() == 11; }
  bool isScalar() const { return isDouble() || isInt() || isBool(); }

  const Tensor& toTensor() const { return get<Tensor>("Tensor"); }
  double toDouble() const { return get<double>("Double"); }
  int64_t toInt() const { return get<int64_t>("Int"); }
  bool toBool() const { return get<bool>("Bool"); }
  const std::string& toStringRef() const { return get<std::string>("String"); }
  std::string toStdString() const { return toStringRef(); }
  // These accept a typed list or a generic list whose elements are all of the kind.
  std::vector<int64_t> toIntVector() const;
  std::vector<int64_t> toIntList() const { return toIntVector(); }
  std::vector<double> toDoubleVector() const;
  std::vector<Tensor> toTensorVector() const;
  Scalar toScalar() const;
  // A generic list: the list itself (shared), or a new one holding a typed list's elements.
  GenericList toList() const;
  // The elements of a generic list or tuple.
  const std::vector<IValue>& toListRef() const;
  GenericDict toGenericDict() const;
  std::shared_ptr<ivalue::Tuple> toTuple() const;
  const ivalue::Tuple& toTupleRef() const;
  // libtorch's to<T>(): Tensor, double, int64_t (any integral), bool, std::string, IValue,
  // std::vector<int64_t/double/Tensor>, List<T>, Dict<K, V>.
  template <class T>
  T to() const {
    return detail::ivalue_to<T>(*this);
  }
  // The kind's name as libtorch prints it: None, Tensor, Double, Int, Bool, String, IntList...
  std::string tagKind() const;
  // Same object for lists, dicts, tuples and tensors; equal value for the other kinds.
  bool is(const IValue& other) const;

 private:
  template <class T>
  friend class List;
  template <class K, class V>
  friend class Dict;
  friend struct detail::DictImpl;
  template <class T>
  const T& get(const char* want) const {
    if (const T* p = std::get_if<T>(&v_)) return *p;
    wrong_kind(want);
  }
  [[noreturn]] void wrong_kind(const char* want) const;
  bool generic_list_of(size_t kind) const;

  std::variant<std::monostate, Tensor, double, int64_t, bool, std::string, std::vector<int64_t>, std::vector<double>,
               std::vector<Tensor>, std::shared_ptr<detail::ListImpl>, std::shared_ptr<detail::DictImpl>,
               std::shared_ptr<ivalue::Tuple>>
      v_;
};

// Prints like Python: None, True, 1, 1.5, 'text', [..], (..,), {k: v}; tensors as operator<<.
std::ostream& operator<<(std::ostream& os, const IValue& v);

namespace ivalue {
struct Tuple {
  explicit Tuple(std::vector<IValue> elements) : elements_(std::move(elements)) {}
  static std::shared_ptr<Tuple> create(std::vector<IValue> elements) {
    return std::make_shared<Tuple>(std::move(elements));
  }
  static std::shared_ptr<Tuple> create(std::initializer_list<IValue> elements) {
    return std::make_shared<Tuple>(std::vector<IValue>(elements));
  }
  const std::vector<IValue>& elements() const { return elements_; }
  size_t size() const { return elements_.size(); }

 private:
  std::vector<IValue> elements_;
};
}  // namespace ivalue

template <class... Ts>
IValue::IValue(const std::tuple<Ts...>& t)
    : v_(std::apply([](const auto&... e) { return ivalue::Tuple::create({IValue(e)...}); }, t)) {}

namespace detail {
struct ListImpl {
  std::vector<IValue> elements;
  const IValue& at(size_t i, const char* op) const;
  IValue& at(size_t i, const char* op);
};

// Insertion-ordered entries with a hash index. Keys are None, ints, doubles, bools, strings or
// tensors (by identity), as Python's hashable values; any other kind raises.
struct DictImpl {
  std::vector<std::pair<IValue, IValue>> entries;
  static constexpr size_t npos = size_t(-1);
  size_t find(const IValue& key) const;
  // Returns (index, inserted); an existing key keeps its position and is overwritten if asked.
  std::pair<size_t, bool> insert(IValue key, IValue value, bool overwrite);
  bool erase(const IValue& key);
  void clear();
  void reserve(size_t n);

 private:
  std::vector<std::vector<size_t>> buckets_;  // hash -> entry indices
  void rehash(size_t nbuckets);
  size_t bucket_of(const IValue& key) const;
};

}  // namespace detail

// A list handle (libtorch's c10::List<T>). Elements are stored as IValues and converted to T on
// access; operator[] returns a reference that can be assigned through.
template <class T>
class List {
 public:
  using value_type = T;
  using size_type = size_t;
  struct from_ivalue_tag {};

  class reference {
   public:
    reference(detail::ListImpl* impl, size_t i) : impl_(impl), i_(i) {}
    operator T() const { return detail::ivalue_to<T>(impl_->at(i_, "List[]")); }
    reference& operator=(T v) {
      impl_->at(i_, "List[]") = IValue(std::move(v));
      return *this;
    }
    reference& operator=(const reference& o) { return *this = T(o); }
    T get() const { return *this; }

   private:
    detail::ListImpl* impl_;
    size_t i_;
  };

  class iterator {
   public:
    using iterator_category = std::random_access_iterator_tag;
    using value_type = T;
    using difference_type = std::ptrdiff_t;
    using pointer = void;
    using reference = typename List::reference;
    iterator(detail::ListImpl* impl, size_t i) : impl_(impl), i_(i) {}
    reference operator*() const { return reference(impl_, i_); }
    iterator& operator++() {
      ++i_;
      return *this;
    }
    iterator operator++(int) {
      iterator r = *this;
      ++i_;
      return r;
    }
    iterator& operator--() {
      --i_;
      return *this;
    }
    iterator& operator+=(difference_type n) {
      i_ = size_t(difference_type(i_) + n);
      return *this;
    }
    iterator operator+(difference_type n) const { return iterator(impl_, size_t(difference_type(i_) + n)); }
    difference_type operator-(const iterator& o) const { return difference_type(i_) - difference_type(o.i_); }
    bool operator==(const iterator& o) const { return impl_ == o.impl_ && i_ == o.i_; }
    bool operator!=(const iterator& o) const { return !(*this == o); }

   private:
    detail::ListImpl* impl_;
    size_t i_;
  };

  List() : impl_(std::make_shared<detail::ListImpl>()) {}
  List(std::initializer_list<T> init) : List() {
    reserve(init.size());
    for (const T& x : init) push_back(x);
  }
  explicit List(const std::vector<T>& v) : List() {
    reserve(v.size());
    for (const T& x : v) push_back(x);
  }
  // A typed view of a generic list (IValue::to<List<T>>()).
  List(const GenericList& g, from_ivalue_tag) : impl_(g.impl_) {}

  size_t size() const { return impl_->elements.size(); }
  bool empty() const { return impl_->elements.empty(); }
  T get(size_t i) const { return detail::ivalue_to<T>(impl_->at(i, "List::get")); }
  void set(size_t i, T v) const { impl_->at(i, "List::set") = IValue(std::move(v)); }
  reference operator[](size_t i) const { return reference(impl_.get(), i); }
  reference at(size_t i) const {
    impl_->at(i, "List::at");
    return reference(impl_.get(), i);
  }
  T extract(size_t i) const { return get(i); }
  iterator begin() const { return iterator(impl_.get(), 0); }
  iterator end() const { return iterator(impl_.get(), size()); }
  void push_back(T v) const { impl_->elements.emplace_back(std::move(v)); }
  template <class... Args>
  void emplace_back(Args&&... args) const {
    impl_->elements.emplace_back(T(std::forward<Args>(args)...));
  }
  void append(List other) const {
    impl_->elements.insert(impl_->elements.end(), other.impl_->elements.begin(), other.impl_->elements.end());
  }
  void pop_back() const {
    impl_->at(size() - 1, "List::pop_back");
    impl_->elements.pop_back();
  }
  void clear() const { impl_->elements.clear(); }
  void reserve(size_t n) const { impl_->elements.reserve(n); }
  void resize(size_t n) const { impl_->elements.resize(n, IValue(T())); }
  std::vector<T> vec() const {
    std::vector<T> out;
    out.reserve(size());
    for (const IValue& e : impl_->elements) out.push_back(detail::ivalue_to<T>(e));
    return out;
  }
  // A new list with the same elements.
  List copy() const {
    List out;
    out.impl_->elements = impl_->elements;
    return out;
  }
  bool is(const List& other) const { return impl_ == other.impl_; }
  size_t use_count() const { return size_t(impl_.use_count()); }

 private:
  template <class U>
  friend class List;
  friend class IValue;
  std::shared_ptr<detail::ListImpl> impl_;
};

// A dict handle (libtorch's c10::Dict<K, V>), insertion-ordered. Iteration yields entries with
// key() and value(); insert keeps an existing key's value, insert_or_assign replaces it.
template <class K, class V>
class Dict {
 public:
  using key_type = K;
  using mapped_type = V;
  using size_type = size_t;
  struct from_ivalue_tag {};

  class entry {
   public:
    entry(detail::DictImpl* impl, size_t i) : impl_(impl), i_(i) {}
    // A reference into the dict for IValue keys and values (so e.key().toStringRef() stays
    // valid), a converted copy otherwise.
    decltype(auto) key() const {
      if constexpr (std::is_same_v<K, IValue>) return static_cast<const IValue&>(impl_->entries[i_].first);
      else return detail::ivalue_to<K>(impl_->entries[i_].first);
    }
    decltype(auto) value() const {
      if constexpr (std::is_same_v<V, IValue>) return static_cast<const IValue&>(impl_->entries[i_].second);
      else return detail::ivalue_to<V>(impl_->entries[i_].second);
    }
    void setValue(V v) const { impl_->entries[i_].second = IValue(std::move(v)); }

   private:
    detail::DictImpl* impl_;
    size_t i_;
  };

  class iterator {
   public:
    using iterator_category = std::forward_iterator_tag;
    using value_type = entry;
    using difference_type = std::ptrdiff_t;
    using reference = entry;
    struct pointer {
      entry e;
      const entry* operator->() const { return &e; }
    };
    iterator(detail::DictImpl* impl, size_t i) : impl_(impl), i_(i) {}
    entry operator*() const { return entry(impl_, i_); }
    pointer operator->() const { return pointer{entry(impl_, i_)}; }
    iterator& operator++() {
      ++i_;
      return *this;
    }
    iterator operator++(int) {
      iterator r = *this;
      ++i_;
      return r;
    }
    bool operator==(const iterator& o) const { return impl_ == o.impl_ && i_ == o.i_; }
    bool operator!=(const iterator& o) const { return !(*this == o); }

   private:
    detail::DictImpl* impl_;
    size_t i_;
  };

  Dict() : impl_(std::make_shared<detail::DictImpl>()) {}
  // A typed view of a generic dict (IValue::to<Dict<K, V>>()).
  Dict(const GenericDict& g, from_ivalue_tag) : impl_(g.impl_) {}

  size_t size() const { return impl_->entries.size(); }
  bool empty() const { return impl_->entries.empty(); }
  void clear() const { impl_->clear(); }
  void reserve(size_t n) const { impl_->reserve(n); }
  iterator begin() const { return iterator(impl_.get(), 0); }
  iterator end() const { return iterator(impl_.get(), size()); }
  std::pair<iterator, bool> insert(K key, V value) const {
    auto [i, inserted] = impl_->insert(IValue(std::move(key)), IValue(std::move(value)), false);
    return {iterator(impl_.get(), i), inserted};
  }
  std::pair<iterator, bool> insert_or_assign(K key, V value) const {
    auto [i, inserted] = impl_->insert(IValue(std::move(key)), IValue(std::move(value)), true);
    return {iterator(impl_.get(), i), inserted};
  }
  iterator find(const K& key) const {
    size_t i = impl_->find(IValue(key));
    return i == detail::DictImpl::npos ? end() : iterator(impl_.get(), i);
  }
  bool contains(const K& key) const { return impl_->find(IValue(key)) != detail::DictImpl::npos; }
  // The value under `key`; a missing key raises fw::Error.
  V at(const K& key) const { return detail::ivalue_to<V>(impl_->entries[checked_find(IValue(key))].second); }
  size_t erase(const K& key) const { return impl_->erase(IValue(key)) ? 1 : 0; }
  Dict copy() const {
    Dict out;
    out.reserve(size());
    for (const auto& [k, v] : impl_->entries) out.impl_->insert(k, v, true);
    return out;
  }
  bool is(const Dict& other) const { return impl_ == other.impl_; }

 private:
  template <class K2, class V2>
  friend class Dict;
  friend class IValue;
  size_t checked_find(const IValue& key) const;
  std::shared_ptr<detail::DictImpl> impl_;
};

namespace detail {
[[noreturn]] void dict_missing_key(const IValue& key);

template <class T>
struct is_list : std::false_type {};
template <class U>
struct is_list<List<U>> : std::true_type {};
template <class T>
struct is_dict : std::false_type {};
template <class K, class V>
struct is_dict<Dict<K, V>> : std::true_type {};

template <class T>
T ivalue_to(const IValue& v) {
  if constexpr (std::is_same_v<T, IValue>) return v;
  else if constexpr (std::is_same_v<T, Tensor>) return v.toTensor();
  else if constexpr (std::is_same_v<T, bool>) return v.toBool();
  else if constexpr (std::is_integral_v<T>) return T(v.toInt());
  else if constexpr (std::is_floating_point_v<T>) return T(v.toDouble());
  else if constexpr (std::is_same_v<T, std::string>) return v.toStringRef();
  else if constexpr (std::is_same_v<T, std::vector<int64_t>>) return v.toIntVector();
  else if constexpr (std::is_same_v<T, std::vector<double>>) return v.toDoubleVector();
  else if constexpr (std::is_same_v<T, std::vector<Tensor>>) return v.toTensorVector();
  else if constexpr (std::is_same_v<T, Scalar>) return v.toScalar();
  else if constexpr (std::is_same_v<T, std::shared_ptr<ivalue::Tuple>>) return v.toTuple();
  else if constexpr (is_list<T>::value) return T(v.toList(), typename T::from_ivalue_tag{});
  else if constexpr (is_dict<T>::value) return T(v.toGenericDict(), typename T::from_ivalue_tag{});
  else static_assert(!sizeof(T*), "IValue::to<T>: unsupported type");
}
}  // namespace detail

template <class K, class V>
size_t Dict<K, V>::checked_find(const IValue& key) const {
  size_t i = impl_->find(key);
  if (i == detail::DictImpl::npos) detail::dict_missing_key(key);
  return i;
}

}  // namespace fw
