// fw::nn::Module (libtorch's torch::nn::Module): parameters, buffers and submodules registered
// by name, recursive traversal, train/eval, dtype conversion, cloning and printing; plus
// ModuleHolder, FW_MODULE (libtorch's TORCH_MODULE) and Cloneable.
#pragma once
#include <functional>
#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "fw/nn/ordered_dict.h"
#include "fw/ops.h"
#include "fw/tensor.h"

namespace fw::serialize {
class OutputArchive;
class InputArchive;
}  // namespace fw::serialize

namespace fw::nn {

class Module;
template <class Contained>
class ModuleHolder;

namespace detail {
// Base of every ModuleHolder, so templates can tell holders from modules.
struct ModuleHolderIndicator {};
template <class T>
inline constexpr bool is_module_holder_v = std::is_base_of_v<ModuleHolderIndicator, std::decay_t<T>>;
template <class T>
inline constexpr bool is_module_v = std::is_base_of_v<Module, std::decay_t<T>>;

// The demangled name of a type ("fw::nn::LinearImpl").
std::string demangle(const char* mangled);
}  // namespace detail

// Note [Module ownership]
// Modules live in std::shared_ptr (submodules are registered as shared_ptr, holders wrap one).
// modules()/named_modules() with include_self need the module itself to be owned by a
// shared_ptr (std::make_shared<Net>()), as in libtorch. Parameters are Tensor handles: a layer's
// `weight` member and its registry entry are the same tensor, so to()/clone() update data in place.

// Base class of all neural network modules.
class Module : public std::enable_shared_from_this<Module> {
 public:
  using ModuleApplyFunction = std::function<void(Module&)>;
  using ConstModuleApplyFunction = std::function<void(const Module&)>;
  using NamedModuleApplyFunction = std::function<void(const std::string&, Module&)>;
  using ConstNamedModuleApplyFunction = std::function<void(const std::string&, const Module&)>;
  using ModulePointerApplyFunction = std::function<void(const std::shared_ptr<Module>&)>;
  using NamedModulePointerApplyFunction = std::function<void(const std::string&, const std::shared_ptr<Module>&)>;

  // A module named `name` (default: its demangled C++ type name).
  explicit Module(std::string name);
  Module();
  Module(const Module&) = default;
  Module& operator=(const Module&) = default;
  virtual ~Module() = default;

  // The module's name (the demangled type name unless given).
  const std::string& name() const noexcept;
  // A deep copy (parameters and buffers copied); modules deriving from Cloneable<T> support it.
  virtual std::shared_ptr<Module> clone(const std::optional<Device>& device = std::nullopt) const;

  // Calls fn on this module, then on every descendant (pre-order).
  void apply(const ModuleApplyFunction& fn);
  void apply(const ConstModuleApplyFunction& fn) const;
  // Same with dotted names ("" for this module unless name_prefix is given).
  void apply(const NamedModuleApplyFunction& fn, const std::string& name_prefix = std::string());
  void apply(const ConstNamedModuleApplyFunction& fn, const std::string& name_prefix = std::string()) const;
  // Same with shared pointers (this module must be owned by a shared_ptr).
  void apply(const ModulePointerApplyFunction& fn) const;
  void apply(const NamedModulePointerApplyFunction& fn, const std::string& name_prefix = std::string()) const;

  // Parameters of this module (and of all descendants when recurse), in registration order.
  std::vector<Tensor> parameters(bool recurse = true) const;
  // Same keyed by dotted names ("body.0.weight").
  OrderedDict<std::string, Tensor> named_parameters(bool recurse = true) const;
  // Buffers (running statistics and other non-trained state).
  std::vector<Tensor> buffers(bool recurse = true) const;
  OrderedDict<std::string, Tensor> named_buffers(bool recurse = true) const;
  // This module (if include_self) and all descendants, pre-order.
  std::vector<std::shared_ptr<Module>> modules(bool include_self = true) const;
  OrderedDict<std::string, std::shared_ptr<Module>> named_modules(const std::string& name_prefix = std::string(),
                                                                 bool include_self = true) const;
  // Direct submodules.
  std::vector<std::shared_ptr<Module>> children() const;
  OrderedDict<std::string, std::shared_ptr<Module>> named_children() const;

  // Training mode (dropout active, batch norm uses batch statistics) for this module and descendants.
  virtual void train(bool on = true);
  // train(false).
  void eval();
  virtual bool is_training() const noexcept;

  // Converts floating-point parameters and buffers (recursively) in place; see Note [Module::to].
  virtual void to(Device device, ScalarType dtype, bool non_blocking = false);
  virtual void to(ScalarType dtype, bool non_blocking = false);
  virtual void to(Device device, bool non_blocking = false);

  // Zeroes the gradients of all parameters, or clears them (set_to_none; libtorch 1.13's default
  // is to zero them).
  virtual void zero_grad(bool set_to_none = false);

  // This module as a `ModuleType` (a holder type or an Impl type); nullptr if it is not one.
  template <class ModuleType>
  typename ModuleType::ContainedType* as() noexcept {
    return dynamic_cast<typename ModuleType::ContainedType*>(this);
  }
  template <class ModuleType>
  const typename ModuleType::ContainedType* as() const noexcept {
    return dynamic_cast<const typename ModuleType::ContainedType*>(this);
  }
  template <class ModuleType, class = std::enable_if_t<!detail::is_module_holder_v<ModuleType>>>
  ModuleType* as() noexcept {
    return dynamic_cast<ModuleType*>(this);
  }
  template <class ModuleType, class = std::enable_if_t<!detail::is_module_holder_v<ModuleType>>>
  const ModuleType* as() const noexcept {
    return dynamic_cast<const ModuleType*>(this);
  }

  // Writes a one-line description (layers print their options: "fw::nn::Linear(in_features=...)").
  virtual void pretty_print(std::ostream& stream) const;
  virtual bool is_serializable() const { return true; }
  // libtorch's archive forms: parameters and buffers under their dotted names (load copies into
  // the existing tensors; a missing key or a shape mismatch is an error naming the key).
  virtual void save(serialize::OutputArchive& archive) const;
  virtual void load(serialize::InputArchive& archive);

  // Registers a parameter (requires_grad set as given); returns the registered handle.
  Tensor& register_parameter(std::string name, Tensor tensor, bool requires_grad = true);
  // Registers a buffer: saved state that is not trained.
  Tensor& register_buffer(std::string name, Tensor tensor);
  // Registers a submodule; returns it.
  template <class ModuleType>
  std::shared_ptr<ModuleType> register_module(std::string name, std::shared_ptr<ModuleType> module) {
    check_submodule(name, module.get());
    children_.insert(std::move(name), module);
    return module;
  }
  template <class ModuleType>
  std::shared_ptr<ModuleType> register_module(std::string name, ModuleHolder<ModuleType> holder) {
    return register_module(std::move(name), holder.ptr());
  }
  // Swaps the submodule registered as `name` for another one.
  template <class ModuleType>
  std::shared_ptr<ModuleType> replace_module(const std::string& name, std::shared_ptr<ModuleType> module) {
    children_[name] = module;
    return module;
  }
  template <class ModuleType>
  std::shared_ptr<ModuleType> replace_module(const std::string& name, ModuleHolder<ModuleType> holder) {
    return replace_module(name, holder.ptr());
  }
  // Removes the submodule registered as `name`.
  void unregister_module(const std::string& name);

 protected:
  // Makes this module (of the same dynamic type as `other`) a deep copy of it; Cloneable's hook.
  virtual void clone_(Module& other, const std::optional<Device>& device);
  // After `copy` was reset(): copies this module's parameters and buffers into it and clones
  // the submodules into the copy's fresh ones.
  void copy_state_into(Module& copy, const std::optional<Device>& device) const;
  // Forgets every registered parameter, buffer and submodule (the members keep their handles).
  void clear_registrations();

  OrderedDict<std::string, Tensor> parameters_{"Parameter"};
  OrderedDict<std::string, Tensor> buffers_{"Buffer"};
  OrderedDict<std::string, std::shared_ptr<Module>> children_{"Submodule"};

 private:
  friend std::ostream& operator<<(std::ostream& stream, const Module& module);
  void check_submodule(const std::string& name, const Module* module) const;
  void pretty_print_recursive(std::ostream& stream, const std::string& indentation) const;
  void walk(const std::string& prefix, const ConstNamedModuleApplyFunction& fn) const;
  std::shared_ptr<Module> shared_from_this_checked() const;
  void to_impl(std::optional<Device> device, std::optional<ScalarType> dtype);

  mutable std::optional<std::string> name_;
  bool is_training_ = true;
};

// Prints the module tree: each module's pretty_print with its children indented below it.
std::ostream& operator<<(std::ostream& stream, const Module& module);

// Base of modules that can be deep-copied: reset() must (re)create all parameters, buffers and
// submodules; clone() copy-constructs, calls reset() and copies the original's data over.
template <class Derived>
class Cloneable : public Module {
 public:
  using Module::Module;
  // (Re)creates the module's parameters, buffers and submodules from its options.
  virtual void reset() = 0;

  std::shared_ptr<Module> clone(const std::optional<Device>& device = std::nullopt) const override {
    NoGradGuard no_grad;
    auto copy = std::make_shared<Derived>(static_cast<const Derived&>(*this));
    copy->clear_registrations();
    copy->reset();
    copy_state_into(*copy, device);
    return copy;
  }

 private:
  void clone_(Module& other, const std::optional<Device>& device) final {
    auto copy = std::dynamic_pointer_cast<Derived>(other.clone(device));
    FW_CHECK(copy != nullptr, "[Module::clone] Attempted to clone submodule, but it is of a different type than "
             "the submodule it was to be cloned into");
    static_cast<Derived&>(*this) = *copy;
  }
};

// A shared handle to a module implementation (libtorch's ModuleHolder): copies share the module;
// `->` reaches it; calling the holder calls forward(). FW_MODULE(Name) derives one for NameImpl.
template <class Contained>
class ModuleHolder : detail::ModuleHolderIndicator {
 protected:
  std::shared_ptr<Contained> impl_;

 public:
  using ContainedType = Contained;

  // A default-constructed module (Contained must be default constructible; else use = nullptr).
  ModuleHolder() : impl_(default_construct()) {
    static_assert(std::is_default_constructible_v<Contained>,
                  "You are trying to default construct a module which has no default constructor. Use = nullptr "
                  "to give it the empty state (e.g. `Linear linear = nullptr;` instead of `Linear linear;`).");
  }
  // The empty state (no module).
  ModuleHolder(std::nullptr_t) : impl_(nullptr) {}
  // Constructs the module from these arguments (its constructor's).
  template <class Head, class... Tail,
            class = std::enable_if_t<!(sizeof...(Tail) == 0 &&
                                       (std::is_base_of_v<ModuleHolder, std::decay_t<Head>> ||
                                        std::is_convertible_v<Head&&, std::shared_ptr<Contained>> ||
                                        std::is_same_v<std::decay_t<Head>, std::nullptr_t>))>>
  explicit ModuleHolder(Head&& head, Tail&&... tail)
      : impl_(std::make_shared<Contained>(std::forward<Head>(head), std::forward<Tail>(tail)...)) {}
  // Wraps an existing module.
  ModuleHolder(std::shared_ptr<Contained> module) : impl_(std::move(module)) {}

  explicit operator bool() const noexcept { return !is_empty(); }
  Contained* operator->() { return get(); }
  const Contained* operator->() const { return get(); }
  Contained& operator*() { return *get(); }
  const Contained& operator*() const { return *get(); }
  const std::shared_ptr<Contained>& ptr() const noexcept { return impl_; }
  Contained* get() {
    FW_CHECK(!is_empty(), "Accessing empty ModuleHolder");
    return impl_.get();
  }
  const Contained* get() const {
    FW_CHECK(!is_empty(), "Accessing empty ModuleHolder");
    return impl_.get();
  }
  // Calls the module's forward().
  template <class... Args, class C = Contained>
  auto operator()(Args&&... args) -> decltype(std::declval<C&>().forward(std::forward<Args>(args)...)) {
    return get()->forward(std::forward<Args>(args)...);
  }
  // Forwards indexing (Sequential/ModuleList/ModuleDict elements).
  template <class Arg>
  decltype(auto) operator[](Arg&& arg) {
    return (*get())[std::forward<Arg>(arg)];
  }
  bool is_empty() const noexcept { return impl_ == nullptr; }

 private:
  static std::shared_ptr<Contained> default_construct() {
    if constexpr (std::is_default_constructible_v<Contained>)
      return std::make_shared<Contained>();
    else
      return nullptr;
  }
};

// Prints the held module (see operator<< for Module).
template <class Contained>
std::ostream& operator<<(std::ostream& stream, const ModuleHolder<Contained>& holder) {
  return stream << *holder;
}

}  // namespace fw::nn

// Defines `Name`, a ModuleHolder of ImplType whose constructors forward to ImplType's.
#define FW_MODULE_IMPL(Name, ImplType)                                 \
  class Name : public ::fw::nn::ModuleHolder<ImplType> {               \
   public:                                                             \
    using ::fw::nn::ModuleHolder<ImplType>::ModuleHolder;              \
    using Impl [[maybe_unused]] = ImplType;                            \
  }
// Defines `Name` holding a std::shared_ptr<NameImpl>, as libtorch's TORCH_MODULE.
#define FW_MODULE(Name) FW_MODULE_IMPL(Name, Name##Impl)
