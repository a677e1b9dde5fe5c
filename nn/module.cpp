// fw::nn::Module: registration, traversal, modes, conversion, cloning and printing.
#include "fw/nn/module.h"

#include <cxxabi.h>

#include <cstdlib>

#include "core/op.h"

namespace fw::nn {

namespace detail {

std::string demangle(const char* mangled) {
  int status = 0;
  char* out = abi::__cxa_demangle(mangled, nullptr, nullptr, &status);
  if (status != 0 || out == nullptr) return mangled;
  std::string r(out);
  std::free(out);
  return r;
}

}  // namespace detail

Module::Module(std::string name) : name_(std::move(name)) {}
Module::Module() = default;

const std::string& Module::name() const noexcept {
  if (!name_) name_ = detail::demangle(typeid(*this).name());
  return *name_;
}

std::shared_ptr<Module> Module::clone(const std::optional<Device>&) const {
  FW_CHECK(false, "clone() has not been implemented for ", name(), ". Subclass fw::nn::Cloneable<", name(),
           "> instead of fw::nn::Module to inherit the ability to clone.");
  return nullptr;
}

void Module::walk(const std::string& prefix, const ConstNamedModuleApplyFunction& fn) const {
  fn(prefix, *this);
  for (const auto& child : children_)
    child.value()->walk(prefix.empty() ? child.key() : prefix + "." + child.key(), fn);
}

void Module::apply(const ModuleApplyFunction& fn) {
  walk("", [&](const std::string&, const Module& m) { fn(const_cast<Module&>(m)); });
}

void Module::apply(const ConstModuleApplyFunction& fn) const {
  walk("", [&](const std::string&, const Module& m) { fn(m); });
}

void Module::apply(const NamedModuleApplyFunction& fn, const std::string& name_prefix) {
  walk(name_prefix, [&](const std::string& n, const Module& m) { fn(n, const_cast<Module&>(m)); });
}

void Module::apply(const ConstNamedModuleApplyFunction& fn, const std::string& name_prefix) const {
  walk(name_prefix, fn);
}

void Module::apply(const ModulePointerApplyFunction& fn) const {
  fn(shared_from_this_checked());
  for (const auto& m : modules(false)) fn(m);
}

void Module::apply(const NamedModulePointerApplyFunction& fn, const std::string& name_prefix) const {
  for (const auto& item : named_modules(name_prefix, true)) fn(item.key(), item.value());
}

std::shared_ptr<Module> Module::shared_from_this_checked() const {
  std::shared_ptr<const Module> p = weak_from_this().lock();
  FW_CHECK(p != nullptr, "It looks like you attempted to retrieve your top-level module as a shared_ptr, but it is "
           "not stored in a shared_ptr. Use std::make_shared<", name(), "> instead of creating your module on the "
           "stack, or alternatively do not try to access your top-level module at all by passing "
           "/*include_self=*/false to modules() or named_modules()");
  return std::const_pointer_cast<Module>(p);
}

namespace {

std::string join(const std::string& prefix, const std::string& name) {
  return prefix.empty() ? name : prefix + "." + name;
}

}  // namespace

OrderedDict<std::string, Tensor> Module::named_parameters(bool recurse) const {
  OrderedDict<std::string, Tensor> r("Parameter");
  auto add = [&](const std::string& prefix, const Module& m) {
    for (const auto& p : m.parameters_)
      if (p.value().defined()) r.insert(join(prefix, p.key()), p.value());
  };
  if (recurse)
    walk("", add);
  else
    add("", *this);
  return r;
}

std::vector<Tensor> Module::parameters(bool recurse) const { return named_parameters(recurse).values(); }

OrderedDict<std::string, Tensor> Module::named_buffers(bool recurse) const {
  OrderedDict<std::string, Tensor> r("Buffer");
  auto add = [&](const std::string& prefix, const Module& m) {
    for (const auto& b : m.buffers_)
      if (b.value().defined()) r.insert(join(prefix, b.key()), b.value());
  };
  if (recurse)
    walk("", add);
  else
    add("", *this);
  return r;
}

std::vector<Tensor> Module::buffers(bool recurse) const { return named_buffers(recurse).values(); }

OrderedDict<std::string, std::shared_ptr<Module>> Module::named_modules(const std::string& name_prefix,
                                                                        bool include_self) const {
  OrderedDict<std::string, std::shared_ptr<Module>> r("Module");
  if (include_self) r.insert(name_prefix, shared_from_this_checked());
  for (const auto& child : children_) {
    std::string prefix = join(name_prefix, child.key());
    for (const auto& item : child.value()->named_modules(prefix, true)) r.insert(item.key(), item.value());
  }
  return r;
}

std::vector<std::shared_ptr<Module>> Module::modules(bool include_self) const {
  return named_modules("", include_self).values();
}

OrderedDict<std::string, std::shared_ptr<Module>> Module::named_children() const { return children_; }

std::vector<std::shared_ptr<Module>> Module::children() const { return children_.values(); }

void Module::train(bool on) {
  for (const auto& child : children_) child.value()->train(on);
  is_training_ = on;
}

void Module::eval() { train(false); }

bool Module::is_training() const noexcept {
  // Under fw::compile the captured graph depends on this flag: the capture guards it.
  if (void* tr = fw::detail::tls().tracer; tr != nullptr && fw::detail::g_tracer != nullptr)
    fw::detail::g_tracer->module_mode(tr, this, is_training_);
  return is_training_;
}

// Note [Module::to]
// Only floating-point tensors change dtype (PyTorch's nn.Module.to); integer buffers such as
// BatchNorm's num_batches_tracked keep theirs. Tensors are converted in place (Tensor::set_data),
// so layer members, registry entries and optimizers holding the parameters all see the result.
// A defined gradient is converted with its parameter.
void Module::to_impl(std::optional<Device> device, std::optional<ScalarType> dtype) {
  NoGradGuard no_grad;
  for (const auto& child : children_) child.value()->to_impl(device, dtype);
  auto convert = [&](const Tensor& t) {
    if (!t.defined()) return;
    ScalarType target = dtype && t.is_floating_point() ? *dtype : t.dtype();
    Device dev = device ? *device : t.device();
    if (target == t.dtype() && dev == t.device()) return;
    t.set_data(t.to(dev, target));
    Tensor g = t.grad();
    if (g.defined()) t.set_grad(g.to(dev, target));
  };
  for (auto& p : parameters_) convert(p.value());
  for (auto& b : buffers_) convert(b.value());
}

void Module::to(Device device, ScalarType dtype, bool) { to_impl(device, dtype); }
void Module::to(ScalarType dtype, bool) { to_impl(std::nullopt, dtype); }
void Module::to(Device device, bool) { to_impl(device, std::nullopt); }

void Module::zero_grad(bool set_to_none) {
  for (auto& p : parameters(true)) {
    Tensor g = p.grad();
    if (!g.defined()) continue;
    if (set_to_none) {
      p.set_grad(Tensor());
    } else {
      NoGradGuard no_grad;
      if (g.requires_grad()) p.set_grad(g.detach());  // a grad with history (create_graph): drop it
      p.grad().zero_();
    }
  }
}

void Module::pretty_print(std::ostream& stream) const { stream << name(); }

void Module::pretty_print_recursive(std::ostream& stream, const std::string& indentation) const {
  pretty_print(stream);
  if (children_.is_empty()) return;
  stream << "(\n";
  const std::string inner = indentation + "  ";
  for (const auto& child : children_) {
    stream << inner << "(" << child.key() << "): ";
    child.value()->pretty_print_recursive(stream, inner);
    stream << '\n';
  }
  stream << indentation << ")";
}

std::ostream& operator<<(std::ostream& stream, const Module& module) {
  module.pretty_print_recursive(stream, "");
  return stream;
}

namespace {

void check_name(const std::string& what, const std::string& name) {
  FW_CHECK(!name.empty(), what, " name must not be empty");
  FW_CHECK(name.find('.') == std::string::npos, what, " name must not contain a dot (got \"", name, "\")");
}

}  // namespace

Tensor& Module::register_parameter(std::string name, Tensor tensor, bool requires_grad) {
  check_name("Parameter", name);
  if (tensor.defined()) tensor.set_requires_grad(requires_grad);
  return parameters_.insert(std::move(name), std::move(tensor));
}

Tensor& Module::register_buffer(std::string name, Tensor tensor) {
  check_name("Buffer", name);
  return buffers_.insert(std::move(name), std::move(tensor));
}

void Module::check_submodule(const std::string& name, const Module* module) const {
  check_name("Submodule", name);
  FW_CHECK(module != nullptr, "Submodule '", name, "' is an empty module (nullptr)");
}

void Module::unregister_module(const std::string& name) {
  FW_CHECK(children_.contains(name), "No Module with name `", name, "` is registered");
  children_.erase(name);
}

void Module::clone_(Module&, const std::optional<Device>&) {
  FW_CHECK(false, "clone() has not been implemented for ", name(), ". Subclass fw::nn::Cloneable<", name(),
           "> instead of fw::nn::Module to inherit the ability to clone.");
}

void Module::clear_registrations() {
  parameters_.clear();
  buffers_.clear();
  children_.clear();
}

void Module::copy_state_into(Module& copy, const std::optional<Device>& device) const {
  auto copy_tensors = [&](const OrderedDict<std::string, Tensor>& from, OrderedDict<std::string, Tensor>& to,
                          const char* what) {
    FW_CHECK(from.size() == to.size(), "The cloned module does not have the same number of ", what,
             " as the original module. Did you forget to register some ", what, " in reset()?");
    for (const auto& item : from) {
      const Tensor& t = item.value();
      Tensor* dst = to.find(item.key());
      FW_CHECK(dst != nullptr, "The cloned module has no ", what, " named '", item.key(), "'");
      if (!t.defined() || !dst->defined()) {
        FW_CHECK(t.defined() == dst->defined(), "The cloned module's ", what, " '", item.key(),
                 "' is defined in only one of the two modules");
        continue;
      }
      Tensor data = device && t.device() != *device ? t.to(*device, t.dtype(), false, true) : t.clone();
      dst->set_data(data);
    }
  };
  copy_tensors(parameters_, copy.parameters_, "parameters");
  copy_tensors(buffers_, copy.buffers_, "buffers");
  FW_CHECK(copy.children_.size() == children_.size(), "The cloned module does not have the same number of child "
           "modules as the original module. Did you forget to register some submodules in reset()?");
  for (const auto& child : children_) {
    auto* dst = copy.children_.find(child.key());
    FW_CHECK(dst != nullptr && *dst != nullptr, "The cloned module has no submodule named '", child.key(), "'");
    (*dst)->clone_(*child.value(), device);
  }
}

}  // namespace fw::nn
