// Sequential, ModuleList, ModuleDict, ParameterList and ParameterDict.
#include "fw/nn/modules/container.h"

#include <ostream>

namespace fw::nn {

// ---- Sequential

SequentialImpl::SequentialImpl(OrderedDict<std::string, AnyModule>&& ordered_dict) {
  modules_.reserve(ordered_dict.size());
  for (auto& item : ordered_dict) push_back_any(item.key(), std::move(item.value()));
}

SequentialImpl::SequentialImpl(std::initializer_list<NamedAnyModule> named_modules) {
  modules_.reserve(named_modules.size());
  for (const auto& m : named_modules) push_back_any(m.name(), m.module());
}

std::shared_ptr<Module> SequentialImpl::clone(const std::optional<Device>& device) const {
  auto copy = std::make_shared<SequentialImpl>();
  for (size_t i = 0; i < modules_.size(); i++) copy->push_back_any(children_[i].key(), modules_[i].clone(device));
  copy->train(is_training());
  return copy;
}

void SequentialImpl::pretty_print(std::ostream& stream) const { stream << "fw::nn::Sequential"; }

void SequentialImpl::push_back_any(std::string name, AnyModule module) {
  FW_CHECK(!module.is_empty(), "[Sequential] cannot add an empty module ('", name, "')");
  register_module(std::move(name), module.ptr());
  modules_.push_back(std::move(module));
}

const AnyModule& SequentialImpl::checked(size_t index) const {
  FW_CHECK(index < modules_.size(), "Index ", index, " is out of range (Sequential has ", modules_.size(),
           " modules)");
  return modules_[index];
}

Tensor SequentialImpl::run(const Tensor& x) {
  FW_CHECK(!modules_.empty(), "Cannot call forward() on an empty Sequential");
  Tensor y = modules_[0].forward(x);
  for (size_t i = 1; i < modules_.size(); i++) y = modules_[i].forward(y);
  return y;
}

// ---- ModuleList

std::shared_ptr<Module> ModuleListImpl::clone(const std::optional<Device>& device) const {
  auto copy = std::make_shared<ModuleListImpl>();
  for (const auto& m : modules_) copy->push_back_ptr(m->clone(device));
  copy->train(is_training());
  return copy;
}

void ModuleListImpl::pretty_print(std::ostream& stream) const { stream << "fw::nn::ModuleList"; }

void ModuleListImpl::push_back_ptr(std::shared_ptr<Module> module) {
  FW_CHECK(module != nullptr, "[ModuleList] cannot add an empty module");
  register_module(std::to_string(modules_.size()), module);
  modules_.push_back(std::move(module));
}

void ModuleListImpl::insert_ptr(size_t index, std::shared_ptr<Module> module) {
  FW_CHECK(index <= modules_.size(), "Index ", index, " is out of range (ModuleList has ", modules_.size(),
           " modules)");
  FW_CHECK(module != nullptr, "[ModuleList] cannot insert an empty module");
  modules_.insert(modules_.begin() + int64_t(index), std::move(module));
  children_.clear();
  for (size_t i = 0; i < modules_.size(); i++) register_module(std::to_string(i), modules_[i]);
}

std::shared_ptr<Module> ModuleListImpl::ptr(size_t index) const {
  FW_CHECK(index < modules_.size(), "Index ", index, " is out of range (ModuleList has ", modules_.size(),
           " modules)");
  return modules_[index];
}

// ---- ModuleDict

ModuleDictImpl::ModuleDictImpl(const std::vector<std::pair<std::string, std::shared_ptr<Module>>>& modules) {
  update(modules);
}

ModuleDictImpl::ModuleDictImpl(const Dict& modules) { update(modules); }

std::shared_ptr<Module> ModuleDictImpl::clone(const std::optional<Device>& device) const {
  auto copy = std::make_shared<ModuleDictImpl>();
  for (const auto& item : modules_) copy->insert_ptr(item.key(), item.value()->clone(device));
  copy->train(is_training());
  return copy;
}

void ModuleDictImpl::pretty_print(std::ostream& stream) const { stream << "fw::nn::ModuleDict"; }

void ModuleDictImpl::clear() {
  modules_.clear();
  children_.clear();
}

std::shared_ptr<Module> ModuleDictImpl::pop(const std::string& key) {
  std::shared_ptr<Module> m = (*this)[key];
  modules_.erase(key);
  children_.erase(key);
  return m;
}

void ModuleDictImpl::update(const std::vector<std::pair<std::string, std::shared_ptr<Module>>>& modules) {
  for (const auto& [key, m] : modules) insert_ptr(key, m);
}

std::shared_ptr<Module> ModuleDictImpl::operator[](const std::string& key) const {
  const auto* m = modules_.find(key);
  FW_CHECK(m != nullptr, "[ModuleDict] no module named '", key, "' (keys: ", modules_.size(), ")");
  return *m;
}

std::shared_ptr<Module> ModuleDictImpl::insert_ptr(const std::string& key, std::shared_ptr<Module> module) {
  FW_CHECK(module != nullptr, "[ModuleDict] cannot insert an empty module under '", key, "'");
  if (modules_.contains(key)) {
    modules_[key] = module;
    replace_module(key, module);
  } else {
    modules_.insert(key, module);
    register_module(key, module);
  }
  return module;
}

// ---- ParameterList and ParameterDict

namespace {

// A copy of `t` (on `device` when given) with t's requires_grad.
Tensor copy_parameter(const Tensor& t, const std::optional<Device>& device) {
  NoGradGuard no_grad;
  Tensor c = device && t.device() != *device ? t.to(*device, t.dtype(), false, true) : t.clone();
  return c.set_requires_grad(t.requires_grad());
}

// libtorch's listing: "(key): Parameter containing: [Float of size [2, 3]]" per line.
void print_parameters(std::ostream& stream, const char* name, const OrderedDict<std::string, Tensor>& params) {
  stream << "fw::nn::" << name << "(\n";
  for (const auto& item : params)
    stream << '(' << item.key() << "): Parameter containing: [" << item.value().scalar_type() << " of size "
           << item.value().sizes() << "]\n";
  stream << ')';
}

}  // namespace

std::shared_ptr<Module> ParameterListImpl::clone(const std::optional<Device>& device) const {
  auto copy = std::make_shared<ParameterListImpl>();
  for (const auto& item : parameters_) copy->append(copy_parameter(item.value(), device));
  copy->train(is_training());
  return copy;
}

void ParameterListImpl::pretty_print(std::ostream& stream) const {
  print_parameters(stream, "ParameterList", parameters_);
}

void ParameterListImpl::append(const Tensor& param) {
  FW_CHECK(param.defined(), "[ParameterList] cannot append an undefined tensor (at index ", parameters_.size(), ")");
  register_parameter(std::to_string(parameters_.size()), param, param.requires_grad());
}

Tensor& ParameterListImpl::at(size_t idx) {
  FW_CHECK(idx < size(), "[ParameterList] Index ", idx, " is out of range (ParameterList has ", size(),
           " parameters)");
  return parameters_[std::to_string(idx)];
}

const Tensor& ParameterListImpl::at(size_t idx) const {
  FW_CHECK(idx < size(), "[ParameterList] Index ", idx, " is out of range (ParameterList has ", size(),
           " parameters)");
  return parameters_[std::to_string(idx)];
}

std::shared_ptr<Module> ParameterDictImpl::clone(const std::optional<Device>& device) const {
  auto copy = std::make_shared<ParameterDictImpl>();
  for (const auto& item : parameters_) copy->insert(item.key(), copy_parameter(item.value(), device));
  copy->train(is_training());
  return copy;
}

void ParameterDictImpl::pretty_print(std::ostream& stream) const {
  print_parameters(stream, "ParameterDict", parameters_);
}

Tensor& ParameterDictImpl::insert(std::string key, Tensor param) {
  FW_CHECK(param.defined(), "[ParameterDict] cannot insert an undefined tensor under '", key, "'");
  bool requires_grad = param.requires_grad();
  return register_parameter(std::move(key), std::move(param), requires_grad);
}

Tensor ParameterDictImpl::pop(const std::string& key) {
  Tensor v = get(key);
  parameters_.erase(key);
  return v;
}

const Tensor& ParameterDictImpl::get(const std::string& key) const {
  const Tensor* t = parameters_.find(key);
  FW_CHECK(t != nullptr, "[ParameterDict] no parameter named '", key, "' (", size(), " parameters)");
  return *t;
}

Tensor& ParameterDictImpl::get(const std::string& key) {
  Tensor* t = parameters_.find(key);
  FW_CHECK(t != nullptr, "[ParameterDict] no parameter named '", key, "' (", size(), " parameters)");
  return *t;
}

void ParameterDictImpl::insert_or_assign(const std::string& key, const Tensor& param) {
  if (Tensor* t = parameters_.find(key)) {
    FW_CHECK(param.defined(), "[ParameterDict] cannot assign an undefined tensor to '", key, "'");
    *t = param;
  } else {
    insert(key, param);
  }
}

}  // namespace fw::nn
