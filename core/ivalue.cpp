// fw::IValue and its containers: generic lists, insertion-ordered dicts and tuples.
#include "fw/ivalue.h"

#include <charconv>
#include <functional>
#include <ostream>
#include <sstream>

#include "fw/error.h"

namespace fw {

IValue::IValue(Scalar s) {
  if (s.isBoolean()) v_ = s.to<bool>();
  else if (s.isIntegral()) v_ = s.to<int64_t>();
  else if (s.isFloatingPoint()) v_ = s.to<double>();
  else
    fw::detail::throw_error("[IValue] complex scalars are not supported (got ", s.to<std::complex<double>>().real(),
                            "+", s.to<std::complex<double>>().imag(), "j)");
}

IValue::IValue(std::shared_ptr<ivalue::Tuple> t) {
  FW_CHECK(t != nullptr, "[IValue] the tuple pointer is null");
  v_ = std::move(t);
}

Scalar IValue::toScalar() const {
  if (isDouble()) return Scalar(toDouble());
  if (isInt()) return Scalar(toInt());
  if (isBool()) return Scalar(toBool());
  wrong_kind("Scalar");
}

std::string IValue::tagKind() const {
  static const char* kinds[] = {"None",       "Tensor",     "Double",      "Int",         "Bool",  "String",
                                "IntList",    "DoubleList", "TensorList",  "GenericList", "GenericDict",
                                "Tuple"};
  return kinds[v_.index()];
}

void IValue::wrong_kind(const char* want) const {
  fw::detail::throw_error("[IValue] expected ", want, " but got ", tagKind());
}

bool IValue::generic_list_of(size_t kind) const {
  const auto* l = std::get_if<std::shared_ptr<detail::ListImpl>>(&v_);
  if (!l) return false;
  for (const IValue& e : (*l)->elements)
    if (e.v_.index() != kind) return false;
  return true;
}

namespace {
// A typed list's copy, or the elements of a generic list that all satisfy is_kind.
template <class T>
std::vector<T> elements_as(const std::vector<T>* typed, const std::shared_ptr<detail::ListImpl>* generic,
                           bool (IValue::*is_kind)() const, const char* want, const IValue& self) {
  if (typed) return *typed;
  FW_CHECK(generic, "[IValue] expected ", want, " but got ", self.tagKind());
  const std::vector<IValue>& xs = (*generic)->elements;
  std::vector<T> out;
  out.reserve(xs.size());
  for (size_t i = 0; i < xs.size(); ++i) {
    FW_CHECK((xs[i].*is_kind)(), "[IValue] expected ", want, " but element ", i, " of the GenericList is ",
             xs[i].tagKind());
    out.push_back(xs[i].to<T>());
  }
  return out;
}
}  // namespace

std::vector<int64_t> IValue::toIntVector() const {
  return elements_as<int64_t>(std::get_if<std::vector<int64_t>>(&v_),
                              std::get_if<std::shared_ptr<detail::ListImpl>>(&v_), &IValue::isInt, "IntList", *this);
}

std::vector<double> IValue::toDoubleVector() const {
  return elements_as<double>(std::get_if<std::vector<double>>(&v_),
                             std::get_if<std::shared_ptr<detail::ListImpl>>(&v_), &IValue::isDouble, "DoubleList",
                             *this);
}

std::vector<Tensor> IValue::toTensorVector() const {
  return elements_as<Tensor>(std::get_if<std::vector<Tensor>>(&v_),
                             std::get_if<std::shared_ptr<detail::ListImpl>>(&v_), &IValue::isTensor, "TensorList",
                             *this);
}

GenericList IValue::toList() const {
  if (const auto* l = std::get_if<std::shared_ptr<detail::ListImpl>>(&v_)) {
    GenericList out;
    out.impl_ = *l;
    return out;
  }
  GenericList out;
  if (const auto* p = std::get_if<std::vector<int64_t>>(&v_)) out.impl_->elements.assign(p->begin(), p->end());
  else if (const auto* p = std::get_if<std::vector<double>>(&v_)) out.impl_->elements.assign(p->begin(), p->end());
  else if (const auto* p = std::get_if<std::vector<Tensor>>(&v_)) out.impl_->elements.assign(p->begin(), p->end());
  else wrong_kind("GenericList");
  return out;
}

const std::vector<IValue>& IValue::toListRef() const {
  if (const auto* l = std::get_if<std::shared_ptr<detail::ListImpl>>(&v_)) return (*l)->elements;
  if (const auto* t = std::get_if<std::shared_ptr<ivalue::Tuple>>(&v_)) return (*t)->elements();
  wrong_kind("GenericList");
}

GenericDict IValue::toGenericDict() const {
  GenericDict out;
  out.impl_ = get<std::shared_ptr<detail::DictImpl>>("GenericDict");
  return out;
}

std::shared_ptr<ivalue::Tuple> IValue::toTuple() const { return get<std::shared_ptr<ivalue::Tuple>>("Tuple"); }
const ivalue::Tuple& IValue::toTupleRef() const { return *toTuple(); }

bool IValue::is(const IValue& o) const {
  if (v_.index() != o.v_.index()) return false;
  switch (v_.index()) {
    case 0: return true;
    case 1: return toTensor().is_same(o.toTensor());
    case 2: return toDouble() == o.toDouble();
    case 3: return toInt() == o.toInt();
    case 4: return toBool() == o.toBool();
    case 5: return toStringRef() == o.toStringRef();
    case 6: return std::get<6>(v_) == std::get<6>(o.v_);
    case 7: return std::get<7>(v_) == std::get<7>(o.v_);
    case 8: {
      const auto &a = std::get<8>(v_), &b = std::get<8>(o.v_);
      if (a.size() != b.size()) return false;
      for (size_t i = 0; i < a.size(); ++i)
        if (!a[i].is_same(b[i])) return false;
      return true;
    }
    case 9: return std::get<9>(v_) == std::get<9>(o.v_);
    case 10: return std::get<10>(v_) == std::get<10>(o.v_);
    default: return std::get<11>(v_) == std::get<11>(o.v_);
  }
}

// ---- printing

namespace {
void print(std::ostream& os, const IValue& v, int depth);

void print_double(std::ostream& os, double d) {
  char buf[64];
  auto r = std::to_chars(buf, buf + sizeof buf, d);
  std::string s(buf, r.ptr);
  if (s.find_first_of(".eEn") == std::string::npos) s += ".0";  // 2 -> 2.0; inf and nan stay
  os << s;
}

void print_seq(std::ostream& os, const std::vector<IValue>& xs, const char* open, const char* close, bool tuple,
               int depth) {
  os << open;
  for (size_t i = 0; i < xs.size(); ++i) {
    if (i) os << ", ";
    print(os, xs[i], depth + 1);
  }
  if (tuple && xs.size() == 1) os << ",";
  os << close;
}

void print(std::ostream& os, const IValue& v, int depth) {
  FW_CHECK(depth < 1000, "[IValue] printing: nesting deeper than 1000 levels (a list that contains itself?)");
  if (v.isNone()) os << "None";
  else if (v.isTensor()) os << v.toTensor();
  else if (v.isDouble()) print_double(os, v.toDouble());
  else if (v.isInt()) os << v.toInt();
  else if (v.isBool()) os << (v.toBool() ? "True" : "False");
  else if (v.isString()) os << "'" << v.toStringRef() << "'";
  else if (v.isTuple()) print_seq(os, v.toTupleRef().elements(), "(", ")", true, depth);
  else if (v.isGenericDict()) {
    os << "{";
    bool first = true;
    for (const auto& e : v.toGenericDict()) {
      if (!first) os << ", ";
      first = false;
      print(os, e.key(), depth + 1);
      os << ": ";
      print(os, e.value(), depth + 1);
    }
    os << "}";
  } else print_seq(os, v.toList().vec(), "[", "]", false, depth);
}
}  // namespace

std::ostream& operator<<(std::ostream& os, const IValue& v) {
  print(os, v, 0);
  return os;
}

// ---- containers

namespace detail {

const IValue& ListImpl::at(size_t i, const char* op) const {
  FW_CHECK(i < elements.size(), "[", op, "] index ", i, " is out of range for a list of size ", elements.size());
  return elements[i];
}
IValue& ListImpl::at(size_t i, const char* op) {
  FW_CHECK(i < elements.size(), "[", op, "] index ", i, " is out of range for a list of size ", elements.size());
  return elements[i];
}

namespace {
size_t key_hash(const IValue& k) {
  if (k.isNone()) return 0x9e3779b9u;
  if (k.isInt()) return std::hash<int64_t>()(k.toInt());
  if (k.isDouble()) return std::hash<double>()(k.toDouble());
  if (k.isBool()) return std::hash<bool>()(k.toBool()) ^ 0x51ed27u;
  if (k.isString()) return std::hash<std::string>()(k.toStringRef());
  if (k.isTensor()) return std::hash<const void*>()(k.toTensor().unsafeGetTensorImpl());
  fw::detail::throw_error("[Dict] a key must be None, an int, a double, a bool, a string or a tensor; got ",
                          k.tagKind());
}
}  // namespace

size_t DictImpl::bucket_of(const IValue& key) const { return key_hash(key) % buckets_.size(); }

void DictImpl::rehash(size_t nbuckets) {
  buckets_.assign(nbuckets, {});
  for (size_t i = 0; i < entries.size(); ++i) buckets_[bucket_of(entries[i].first)].push_back(i);
}

size_t DictImpl::find(const IValue& key) const {
  if (buckets_.empty()) {
    key_hash(key);  // rejects unhashable kinds even when empty
    return npos;
  }
  for (size_t i : buckets_[bucket_of(key)])
    if (entries[i].first.is(key)) return i;
  return npos;
}

std::pair<size_t, bool> DictImpl::insert(IValue key, IValue value, bool overwrite) {
  size_t i = find(key);
  if (i != npos) {
    if (overwrite) entries[i].second = std::move(value);
    return {i, false};
  }
  entries.emplace_back(std::move(key), std::move(value));
  if (entries.size() > buckets_.size()) rehash(std::max<size_t>(8, 2 * entries.size()));
  else buckets_[bucket_of(entries.back().first)].push_back(entries.size() - 1);
  return {entries.size() - 1, true};
}

bool DictImpl::erase(const IValue& key) {
  size_t i = find(key);
  if (i == npos) return false;
  entries.erase(entries.begin() + std::ptrdiff_t(i));
  rehash(buckets_.size());
  return true;
}

void DictImpl::clear() {
  entries.clear();
  buckets_.clear();
}

void DictImpl::reserve(size_t n) {
  entries.reserve(n);
  if (n > buckets_.size()) rehash(2 * n);
}

void dict_missing_key(const IValue& key) {
  std::ostringstream os;
  os << key;
  fw::detail::throw_error("[Dict::at] key ", os.str(), " is not in the dict");
}

}  // namespace detail
}  // namespace fw
