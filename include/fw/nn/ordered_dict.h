// fw::OrderedDict: an insertion-ordered map with libtorch's interface (items have key() and
// value()); Module's named_parameters()/named_children() return one.
#pragma once
#include <cstddef>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "fw/error.h"

namespace fw {

template <class Key, class Value>
class OrderedDict {
 public:
  // One key-value pair; `item->` and `*item` reach the value, as in libtorch.
  class Item {
   public:
    Item(Key key, Value value) : pair_(std::move(key), std::move(value)) {}
    const Key& key() const noexcept { return pair_.first; }
    Value& value() noexcept { return pair_.second; }
    const Value& value() const noexcept { return pair_.second; }
    Value& operator*() noexcept { return value(); }
    const Value& operator*() const noexcept { return value(); }
    Value* operator->() noexcept { return &value(); }
    const Value* operator->() const noexcept { return &value(); }
    const std::pair<Key, Value>& pair() const noexcept { return pair_; }

   private:
    std::pair<Key, Value> pair_;
  };
  using Iterator = typename std::vector<Item>::iterator;
  using ConstIterator = typename std::vector<Item>::const_iterator;

  // key_description names the keys in error messages ("Parameter", "Submodule", ...).
  explicit OrderedDict(std::string key_description = "Key") : key_description_(std::move(key_description)) {}
  OrderedDict(std::initializer_list<Item> items) : OrderedDict() {
    for (const auto& it : items) insert(it.key(), it.value());
  }

  const std::string& key_description() const noexcept { return key_description_; }

  // Appends a new pair; raises if the key exists.
  template <class K, class... Args>
  Value& insert(K&& key, Args&&... args) {
    FW_CHECK(index_.count(key) == 0, key_description_, " '", key, "' already defined");
    Key k(std::forward<K>(key));
    index_.emplace(k, items_.size());
    items_.emplace_back(k, Value(std::forward<Args>(args)...));
    return items_.back().value();
  }
  // Inserts or overwrites (keeping the old position).
  Value& insert_or_assign(const Key& key, Value value) {
    if (auto* v = find(key)) return *v = std::move(value);
    return insert(key, std::move(value));
  }
  // Inserts every pair of `other` (raises on a duplicate key).
  void update(const OrderedDict& other) {
    for (const auto& it : other) insert(it.key(), it.value());
  }

  Value* find(const Key& key) noexcept {
    auto it = index_.find(key);
    return it == index_.end() ? nullptr : &items_[it->second].value();
  }
  const Value* find(const Key& key) const noexcept {
    auto it = index_.find(key);
    return it == index_.end() ? nullptr : &items_[it->second].value();
  }
  bool contains(const Key& key) const noexcept { return find(key) != nullptr; }

  Value& operator[](const Key& key) {
    auto* v = find(key);
    FW_CHECK(v != nullptr, key_description_, " '", key, "' is not defined");
    return *v;
  }
  const Value& operator[](const Key& key) const {
    auto* v = find(key);
    FW_CHECK(v != nullptr, key_description_, " '", key, "' is not defined");
    return *v;
  }
  Item& operator[](size_t i) {
    FW_CHECK(i < items_.size(), "Index ", i, " is out of bounds (size ", items_.size(), ")");
    return items_[i];
  }
  const Item& operator[](size_t i) const {
    FW_CHECK(i < items_.size(), "Index ", i, " is out of bounds (size ", items_.size(), ")");
    return items_[i];
  }

  // Removes the pair with this key; raises if absent.
  void erase(const Key& key) {
    auto it = index_.find(key);
    FW_CHECK(it != index_.end(), key_description_, " '", key, "' is not defined");
    size_t pos = it->second;
    index_.erase(it);
    items_.erase(items_.begin() + pos);
    for (auto& [k, p] : index_)
      if (p > pos) p--;
  }
  void clear() {
    index_.clear();
    items_.clear();
  }

  Item& front() { return items_.front(); }
  const Item& front() const { return items_.front(); }
  Item& back() { return items_.back(); }
  const Item& back() const { return items_.back(); }
  Iterator begin() { return items_.begin(); }
  ConstIterator begin() const { return items_.begin(); }
  Iterator end() { return items_.end(); }
  ConstIterator end() const { return items_.end(); }
  size_t size() const noexcept { return items_.size(); }
  bool is_empty() const noexcept { return items_.empty(); }
  void reserve(size_t n) { items_.reserve(n); }

  const std::vector<Item>& items() const noexcept { return items_; }
  std::vector<Key> keys() const {
    std::vector<Key> r;
    r.reserve(items_.size());
    for (const auto& it : items_) r.push_back(it.key());
    return r;
  }
  std::vector<Value> values() const {
    std::vector<Value> r;
    r.reserve(items_.size());
    for (const auto& it : items_) r.push_back(it.value());
    return r;
  }
  std::vector<std::pair<Key, Value>> pairs() const {
    std::vector<std::pair<Key, Value>> r;
    for (const auto& it : items_) r.push_back(it.pair());
    return r;
  }

 private:
  std::string key_description_;
  std::vector<Item> items_;
  std::unordered_map<Key, size_t> index_;
};

}  // namespace fw
