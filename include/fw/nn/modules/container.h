// Module containers: AnyModule (a type-erased module), Sequential, ModuleList,
// ModuleDict, ParameterList and ParameterDict, as in libtorch.
#pragma once
#include <any>
#include <initializer_list>
#include <memory>
#include <string>
#include <typeinfo>
#include <utility>
#include <vector>

#include "fw/nn/module.h"

namespace fw::nn {

namespace detail {

// A shared_ptr to the module behind a holder, a shared_ptr or a module value (copied).
template <class M>
auto module_ptr(M&& m) {
  using D = std::decay_t<M>;
  if constexpr (is_module_holder_v<D>)
    return m.ptr();
  else if constexpr (is_module_v<D>)
    return std::make_shared<D>(std::forward<M>(m));
  else
    return std::shared_ptr<typename D::element_type>(std::forward<M>(m));
}

// The return and parameter types of a member function pointer (any cv/ref/noexcept form).
template <class Ret, class... P>
struct member_fn_sig {
  using result = Ret;
};
template <class F>
struct member_fn_traits_impl;
#define FW_MEMBER_FN_TRAITS(QUALS)                                  \
  template <class C, class Ret, class... P>                          \
  struct member_fn_traits_impl<Ret (C::*)(P...) QUALS> {             \
    using type = member_fn_sig<Ret, P...>;                           \
  };
FW_MEMBER_FN_TRAITS()
FW_MEMBER_FN_TRAITS(const)
FW_MEMBER_FN_TRAITS(&)
FW_MEMBER_FN_TRAITS(const&)
FW_MEMBER_FN_TRAITS(noexcept)
FW_MEMBER_FN_TRAITS(const noexcept)
FW_MEMBER_FN_TRAITS(& noexcept)
FW_MEMBER_FN_TRAITS(const& noexcept)
#undef FW_MEMBER_FN_TRAITS
template <class F>
using member_fn_traits = typename member_fn_traits_impl<F>::type;

// Detection in C++17 spelling (the public headers compile as C++17, the standard of most libtorch
// programs and g++'s default): whether M has one non-template member forward whose type the
// traits above read, whether forward(const Tensor&) converts to a Tensor.
template <class M, class = void>
struct has_plain_forward : std::false_type {};
template <class M>
struct has_plain_forward<M, std::void_t<typename member_fn_traits<decltype(&M::forward)>::result>> : std::true_type {};
template <class M, class = void>
struct forward_takes_tensor : std::false_type {};
template <class M>
struct forward_takes_tensor<M, std::void_t<decltype(std::declval<M&>().forward(std::declval<const Tensor&>()))>>
    : std::is_convertible<decltype(std::declval<M&>().forward(std::declval<const Tensor&>())), Tensor> {};

}  // namespace detail

// A value of any copyable type for AnyModule's type-erased calls (libtorch's AnyValue); the
// defaults of FORWARD_HAS_DEFAULT_ARGS are AnyValues of their parameters' exact types.
class AnyValue {
 public:
  template <class T, class = std::enable_if_t<!std::is_same_v<std::decay_t<T>, AnyValue>>>
  explicit AnyValue(T&& value) : value_(std::decay_t<T>(std::forward<T>(value))) {}
  // The value as T, or null when it holds another type.
  template <class T>
  const T* try_get() const {
    return std::any_cast<T>(&value_);
  }
  template <class T>
  T get() const {
    const T* p = try_get<T>();
    FW_CHECK(p != nullptr, "Attempted to cast AnyValue to ", detail::demangle(typeid(T).name()),
             ", but its actual type is ", detail::demangle(value_.type().name()));
    return *p;
  }
  const std::type_info& type_info() const noexcept { return value_.type(); }
  const std::any& any() const noexcept { return value_; }

 private:
  std::any value_;
};

namespace detail {
// Reads the defaults a module declared with FORWARD_HAS_DEFAULT_ARGS (a friend of the module).
struct ForwardDefaults {
  // A nested probe, so that it shares the friendship (the defaults are usually declared protected).
  template <class M, class = void>
  struct probe : std::false_type {};
  template <class M>
  struct probe<M, std::void_t<decltype(M::_fw_forward_default_args())>> : std::true_type {};
  template <class M>
  static constexpr bool has() {
    return probe<M>::value;
  }
  template <class M>
  static std::vector<std::pair<unsigned, AnyValue>> get() {
    return M::_fw_forward_default_args();
  }
};
}  // namespace detail

// In a module class: the default values of forward's trailing parameters, for calls through
// AnyModule / Sequential with fewer arguments (libtorch's macro), e.g.
//   Tensor forward(Tensor x, int64_t k = 2, Tensor mask = {});
//   FORWARD_HAS_DEFAULT_ARGS({1, fw::nn::AnyValue(int64_t(2))}, {2, fw::nn::AnyValue(Tensor())})
// Each value must have its parameter's type after decay.
#define FORWARD_HAS_DEFAULT_ARGS(...)                                                     \
  friend struct ::fw::nn::detail::ForwardDefaults;                                        \
  static std::vector<std::pair<unsigned, ::fw::nn::AnyValue>> _fw_forward_default_args() { \
    return {__VA_ARGS__};                                                                 \
  }

// Any module behind one type (Sequential's elements, Transformer's custom encoder). forward(x)
// calls a one-Tensor forward; forward<R>(args...) calls any other forward (libtorch's
// AnyModule::forward): each argument must have its parameter's type after decay (pass Tensor()
// for an absent tensor), and the module's forward must be a single non-template function.
class AnyModule {
 public:
  AnyModule() = default;
  template <class M, class = std::enable_if_t<detail::is_module_v<M>>>
  explicit AnyModule(std::shared_ptr<M> module) : content_(std::make_shared<Holder<M>>(std::move(module))) {}
  template <class M, class = std::enable_if_t<detail::is_module_v<M>>>
  explicit AnyModule(M&& module) : AnyModule(std::make_shared<std::decay_t<M>>(std::forward<M>(module))) {}
  template <class M>
  explicit AnyModule(const ModuleHolder<M>& holder) : AnyModule(holder.ptr()) {}

  // The module's forward(x).
  Tensor forward(const Tensor& x) const {
    FW_CHECK(content_ != nullptr, "Cannot call forward() on an empty AnyModule");
    return content_->forward(x);
  }
  template <class R = Tensor, class... Args>
  R forward(Args&&... args) const {
    FW_CHECK(content_ != nullptr, "Cannot call forward() on an empty AnyModule");
    if constexpr (sizeof...(Args) == 1 && std::is_same_v<R, Tensor> && (std::is_same_v<std::decay_t<Args>, Tensor> && ...)) {
      return content_->forward(args...);
    } else {
      std::vector<std::any> v;
      v.reserve(sizeof...(Args));
      (v.emplace_back(std::decay_t<Args>(std::forward<Args>(args))), ...);
      std::any r = content_->forward_any(v);
      if constexpr (std::is_void_v<R>) {
        return;
      } else {
        R* p = std::any_cast<R>(&r);
        FW_CHECK(p != nullptr, "[AnyModule] ", type_name(), "'s forward() returned ", detail::demangle(r.type().name()),
                 ", not the requested ", detail::demangle(typeid(R).name()));
        return std::move(*p);
      }
    }
  }
  // The stored module as T (raises if it is another type).
  template <class T, class = std::enable_if_t<!detail::is_module_holder_v<T>>>
  T& get() const {
    return *ptr<T>();
  }
  // The stored module wrapped in its holder type.
  template <class T, class C = typename T::ContainedType>
  T get() const {
    return T(ptr<C>());
  }
  std::shared_ptr<Module> ptr() const {
    FW_CHECK(content_ != nullptr, "Cannot call ptr() on an empty AnyModule");
    return content_->module;
  }
  template <class T, class = std::enable_if_t<!detail::is_module_holder_v<T>>>
  std::shared_ptr<T> ptr() const {
    auto p = std::dynamic_pointer_cast<T>(ptr());
    FW_CHECK(p != nullptr, "Attempted to cast module of type ", type_name(), " to type ",
             detail::demangle(typeid(T).name()));
    return p;
  }
  // A deep copy of the module (see Module::clone).
  AnyModule clone(const std::optional<Device>& device = std::nullopt) const {
    AnyModule r;
    if (content_) r.content_ = content_->clone_module(device);
    return r;
  }
  const std::type_info& type_info() const {
    FW_CHECK(content_ != nullptr, "Cannot call type_info() on an empty AnyModule");
    return content_->type;
  }
  bool is_empty() const noexcept { return content_ == nullptr; }

 private:
  struct Placeholder {
    Placeholder(std::shared_ptr<Module> m, const std::type_info& t) : module(std::move(m)), type(t) {}
    virtual ~Placeholder() = default;
    virtual Tensor forward(const Tensor& x) const = 0;
    virtual std::any forward_any(std::vector<std::any>& args) const = 0;
    virtual std::shared_ptr<Placeholder> clone_module(const std::optional<Device>& device) const = 0;
    std::shared_ptr<Module> module;
    const std::type_info& type;
  };
  template <class M>
  struct Holder : Placeholder {
    explicit Holder(std::shared_ptr<M> m) : Placeholder(m, typeid(M)), typed(std::move(m)) {
      FW_CHECK(typed != nullptr, "Cannot store an empty (nullptr) module in an AnyModule");
    }
    Tensor forward(const Tensor& x) const override {
      if constexpr (detail::forward_takes_tensor<M>::value) {
        return typed->forward(x);
      } else if constexpr (detail::ForwardDefaults::has<M>() && callable_through_any()) {
        std::vector<std::any> args{std::any(x)};  // the declared defaults fill the rest
        std::any r = forward_any(args);
        const Tensor* t = std::any_cast<Tensor>(&r);
        FW_CHECK(t != nullptr, "[AnyModule] ", typed->name(), "'s forward() returned ",
                 detail::demangle(r.type().name()), ", not a Tensor");
        return *t;
      } else {
        FW_CHECK(false, "[AnyModule] ", typed->name(), "'s forward() does not take one Tensor and return a Tensor; "
                 "call forward<R>(args...) with all its arguments");
        return Tensor();
      }
    }
    std::any forward_any(std::vector<std::any>& args) const override {
      // Only a single, non-static member forward with a copyable (or void) result can be called
      // with type-erased arguments; other modules still store and run through forward(x).
      if constexpr (callable_through_any()) {
        return call(&M::forward, args);
      } else {
        FW_CHECK(false, "[AnyModule] ", typed->name(), "'s forward() is overloaded, a template, static or returns a "
                 "non-copyable value; call it through the module's own type");
        return {};
      }
    }
    static constexpr bool callable_through_any() {
      if constexpr (detail::has_plain_forward<M>::value) {
        using R = typename detail::member_fn_traits<decltype(&M::forward)>::result;
        return std::is_void_v<R> || std::is_copy_constructible_v<std::decay_t<R>>;
      } else {
        return false;
      }
    }
    template <class F>
    std::any call(F f, std::vector<std::any>& args) const {
      return unpack(f, args, detail::member_fn_traits<F>{});
    }
    template <class F, class Ret, class... P>
    std::any unpack(F f, std::vector<std::any>& args, detail::member_fn_sig<Ret, P...>) const {
      if constexpr (detail::ForwardDefaults::has<M>()) fill_defaults(args, sizeof...(P));
      FW_CHECK(args.size() == sizeof...(P), "[AnyModule] ", typed->name(), "'s forward() takes ", sizeof...(P),
               " arguments, got ", args.size());
      return invoke<Ret, P...>(f, args, std::index_sequence_for<P...>{});
    }
    // Appends the declared defaults of the parameters after the given arguments; every missing
    // parameter needs one (libtorch's "requires at least N arguments").
    void fill_defaults(std::vector<std::any>& args, size_t params) const {
      if (args.size() >= params) return;
      auto defaults = detail::ForwardDefaults::get<M>();
      size_t required = params;
      for (size_t i = params; i-- > 0;) {
        bool has = false;
        for (const auto& [idx, v] : defaults) has = has || idx == i;
        if (!has) break;
        required = i;
      }
      FW_CHECK(args.size() >= required, "[AnyModule] ", typed->name(), "'s forward() requires at least ", required,
               " argument(s), but received ", args.size());
      for (size_t i = args.size(); i < params; i++)
        for (const auto& [idx, v] : defaults)
          if (idx == i) {
            args.push_back(v.any());
            break;
          }
    }
    template <class Ret, class... P, class F, size_t... I>
    std::any invoke(F f, std::vector<std::any>& args, std::index_sequence<I...>) const {
      if constexpr (std::is_void_v<Ret>) {
        ((*typed).*f)(std::forward<P>(arg<P>(args[I], I))...);
        return {};
      } else {
        return std::any(((*typed).*f)(std::forward<P>(arg<P>(args[I], I))...));
      }
    }
    template <class P>
    std::decay_t<P>& arg(std::any& a, size_t i) const {
      auto* p = std::any_cast<std::decay_t<P>>(&a);
      FW_CHECK(p != nullptr, "[AnyModule] argument ", i, " of ", typed->name(), "'s forward() is a ",
               detail::demangle(a.type().name()), " but the parameter is a ", detail::demangle(typeid(std::decay_t<P>).name()));
      return *p;
    }
    std::shared_ptr<Placeholder> clone_module(const std::optional<Device>& device) const override {
      auto c = std::dynamic_pointer_cast<M>(typed->clone(device));
      FW_CHECK(c != nullptr, "[AnyModule] clone() of ", typed->name(), " returned a module of another type");
      return std::make_shared<Holder<M>>(std::move(c));
    }
    std::shared_ptr<M> typed;
  };
  std::string type_name() const { return detail::demangle(type_info().name()); }

  std::shared_ptr<const Placeholder> content_;
};

// A name and a module, to build a Sequential with named children.
class NamedAnyModule {
 public:
  template <class M>
  NamedAnyModule(std::string name, std::shared_ptr<M> module) : NamedAnyModule(std::move(name), AnyModule(module)) {}
  template <class M, class = std::enable_if_t<detail::is_module_v<M>>>
  NamedAnyModule(std::string name, M&& module) : NamedAnyModule(std::move(name), AnyModule(std::forward<M>(module))) {}
  template <class M>
  NamedAnyModule(std::string name, const ModuleHolder<M>& holder) : NamedAnyModule(std::move(name), AnyModule(holder)) {}
  NamedAnyModule(std::string name, AnyModule module) : name_(std::move(name)), module_(std::move(module)) {}
  const std::string& name() const noexcept { return name_; }
  AnyModule& module() noexcept { return module_; }
  const AnyModule& module() const noexcept { return module_; }

 private:
  std::string name_;
  AnyModule module_;
};

// Modules applied one after another: forward(x) = m_n(...m_1(x)). Children are named "0", "1", ...
// unless names are given.
class SequentialImpl : public Cloneable<SequentialImpl> {
 public:
  using Iterator = std::vector<AnyModule>::iterator;
  using ConstIterator = std::vector<AnyModule>::const_iterator;

  SequentialImpl() = default;
  // One child per argument (holders, shared_ptrs, module values or AnyModules).
  template <class First, class... Rest,
            class = std::enable_if_t<!(sizeof...(Rest) == 0 && std::is_same_v<std::decay_t<First>, SequentialImpl>)>>
  explicit SequentialImpl(First&& first, Rest&&... rest) {
    modules_.reserve(1 + sizeof...(Rest));
    push_back(std::forward<First>(first));
    (push_back(std::forward<Rest>(rest)), ...);
  }
  // Named children, in order.
  explicit SequentialImpl(OrderedDict<std::string, AnyModule>&& ordered_dict);
  explicit SequentialImpl(std::initializer_list<NamedAnyModule> named_modules);

  // Clones every child (the copy has the same names).
  std::shared_ptr<Module> clone(const std::optional<Device>& device = std::nullopt) const override;
  void reset() override {}
  void pretty_print(std::ostream& stream) const override;

  // Appends a module under its index as name.
  template <class M>
  void push_back(M&& module) {
    push_back(std::to_string(modules_.size()), std::forward<M>(module));
  }
  // Appends a module under `name`.
  template <class M>
  void push_back(std::string name, M&& module) {
    if constexpr (std::is_same_v<std::decay_t<M>, AnyModule>)
      push_back_any(std::move(name), std::forward<M>(module));
    else
      push_back_any(std::move(name), AnyModule(detail::module_ptr(std::forward<M>(module))));
  }
  // Appends every module of another container (a Sequential's AnyModules or holders/pointers).
  template <class Container>
  void extend(const Container& container) {
    for (const auto& m : container) push_back(m);
  }

  // Runs the modules in order on x. seq->forward<Tensor>(x) is accepted as in libtorch (each
  // element maps a Tensor to a Tensor, so Tensor is the only return type).
  template <class ReturnType = Tensor>
  ReturnType forward(const Tensor& x) {
    static_assert(std::is_same_v<ReturnType, Tensor>, "fw::nn::Sequential::forward returns a Tensor");
    return run(x);
  }

  Iterator begin() { return modules_.begin(); }
  ConstIterator begin() const { return modules_.begin(); }
  Iterator end() { return modules_.end(); }
  ConstIterator end() const { return modules_.end(); }

  // The module at `index` as T (raises if it is another type).
  template <class T>
  T& at(size_t index) {
    return *ptr<T>(index);
  }
  template <class T>
  const T& at(size_t index) const {
    return *ptr<T>(index);
  }
  std::shared_ptr<Module> ptr(size_t index) const { return checked(index).ptr(); }
  template <class T>
  std::shared_ptr<T> ptr(size_t index) const {
    return checked(index).template ptr<T>();
  }
  std::shared_ptr<Module> operator[](size_t index) const { return ptr(index); }
  size_t size() const noexcept { return modules_.size(); }
  bool is_empty() const noexcept { return modules_.empty(); }

 private:
  void push_back_any(std::string name, AnyModule module);
  const AnyModule& checked(size_t index) const;
  Tensor run(const Tensor& x);

  std::vector<AnyModule> modules_;
};

// Holder of SequentialImpl; also takes a braced list of {name, module} pairs.
class Sequential : public ModuleHolder<SequentialImpl> {
 public:
  using ModuleHolder<SequentialImpl>::ModuleHolder;
  using Impl [[maybe_unused]] = SequentialImpl;
  Sequential() : ModuleHolder() {}
  Sequential(std::initializer_list<NamedAnyModule> named_modules)
      : ModuleHolder(std::make_shared<SequentialImpl>(named_modules)) {}
};

// An indexable list of submodules (named "0", "1", ...) with no forward of its own.
class ModuleListImpl : public Cloneable<ModuleListImpl> {
 public:
  using Iterator = std::vector<std::shared_ptr<Module>>::iterator;
  using ConstIterator = std::vector<std::shared_ptr<Module>>::const_iterator;

  ModuleListImpl() = default;
  template <class First, class... Rest,
            class = std::enable_if_t<!(sizeof...(Rest) == 0 && std::is_same_v<std::decay_t<First>, ModuleListImpl>)>>
  explicit ModuleListImpl(First&& first, Rest&&... rest) {
    push_back(std::forward<First>(first));
    (push_back(std::forward<Rest>(rest)), ...);
  }

  std::shared_ptr<Module> clone(const std::optional<Device>& device = std::nullopt) const override;
  void reset() override {}
  void pretty_print(std::ostream& stream) const override;

  // Appends a module (holder, shared_ptr or value).
  template <class M>
  void push_back(M&& module) {
    if constexpr (std::is_same_v<std::decay_t<M>, AnyModule>)
      push_back_ptr(module.ptr());
    else
      push_back_ptr(detail::module_ptr(std::forward<M>(module)));
  }
  template <class Container>
  void extend(const Container& container) {
    for (const auto& m : container) push_back(m);
  }
  // Inserts a module before position `index` (0 <= index <= size()); later ones are renumbered.
  template <class M>
  void insert(size_t index, M&& module) {
    insert_ptr(index, detail::module_ptr(std::forward<M>(module)));
  }

  Iterator begin() { return modules_.begin(); }
  ConstIterator begin() const { return modules_.begin(); }
  Iterator end() { return modules_.end(); }
  ConstIterator end() const { return modules_.end(); }

  template <class T>
  T& at(size_t index) {
    return *ptr<T>(index);
  }
  template <class T>
  const T& at(size_t index) const {
    return *ptr<T>(index);
  }
  std::shared_ptr<Module> ptr(size_t index) const;
  template <class T>
  std::shared_ptr<T> ptr(size_t index) const {
    auto p = std::dynamic_pointer_cast<T>(ptr(index));
    FW_CHECK(p != nullptr, "[ModuleList] module at index ", index, " is not a ", detail::demangle(typeid(T).name()));
    return p;
  }
  std::shared_ptr<Module> operator[](size_t index) const { return ptr(index); }
  size_t size() const noexcept { return modules_.size(); }
  bool is_empty() const noexcept { return modules_.empty(); }

 private:
  void push_back_ptr(std::shared_ptr<Module> module);
  void insert_ptr(size_t index, std::shared_ptr<Module> module);

  std::vector<std::shared_ptr<Module>> modules_;
};
FW_MODULE(ModuleList);

// Submodules keyed by name, in insertion order, with no forward of its own.
class ModuleDictImpl : public Cloneable<ModuleDictImpl> {
 public:
  using Dict = OrderedDict<std::string, std::shared_ptr<Module>>;
  using Iterator = Dict::Iterator;
  using ConstIterator = Dict::ConstIterator;

  ModuleDictImpl() = default;
  explicit ModuleDictImpl(const std::vector<std::pair<std::string, std::shared_ptr<Module>>>& modules);
  explicit ModuleDictImpl(const Dict& modules);

  std::shared_ptr<Module> clone(const std::optional<Device>& device = std::nullopt) const override;
  void reset() override {}
  void pretty_print(std::ostream& stream) const override;

  std::vector<std::pair<std::string, std::shared_ptr<Module>>> items() const { return modules_.pairs(); }
  std::vector<std::string> keys() const { return modules_.keys(); }
  std::vector<std::shared_ptr<Module>> values() const { return modules_.values(); }
  Iterator begin() { return modules_.begin(); }
  ConstIterator begin() const { return modules_.begin(); }
  Iterator end() { return modules_.end(); }
  ConstIterator end() const { return modules_.end(); }
  size_t size() const noexcept { return modules_.size(); }
  bool empty() const noexcept { return modules_.is_empty(); }
  bool contains(const std::string& key) const noexcept { return modules_.contains(key); }
  // Removes every module.
  void clear();
  // Removes the module under `key` and returns it.
  std::shared_ptr<Module> pop(const std::string& key);
  // Inserts or replaces each pair.
  // A braced list picks this overload: md->update({{"fc", std::make_shared<LinearImpl>(2, 3)}}).
  void update(const std::vector<std::pair<std::string, std::shared_ptr<Module>>>& modules);
  // Any OrderedDict of modules or module holders (a template, as libtorch's, so that braced lists
  // are not ambiguous).
  template <class Container>
  void update(const Container& modules) {
    for (const auto& item : modules) insert_ptr(item.key(), detail::module_ptr(item.value()));
  }

  std::shared_ptr<Module> operator[](const std::string& key) const;
  template <class T>
  T& at(const std::string& key) {
    auto p = std::dynamic_pointer_cast<T>((*this)[key]);
    FW_CHECK(p != nullptr, "[ModuleDict] module '", key, "' is not a ", detail::demangle(typeid(T).name()));
    return *p;
  }
  // Inserts (or replaces) the module under `key`; returns it.
  template <class M>
  std::shared_ptr<Module> insert(const std::string& key, M&& module) {
    return insert_ptr(key, detail::module_ptr(std::forward<M>(module)));
  }

 private:
  std::shared_ptr<Module> insert_ptr(const std::string& key, std::shared_ptr<Module> module);

  Dict modules_{"Module"};
};

// Holder of ModuleDictImpl; also takes a braced list of {name, shared_ptr} pairs.
class ModuleDict : public ModuleHolder<ModuleDictImpl> {
 public:
  using ModuleHolder<ModuleDictImpl>::ModuleHolder;
  using Impl [[maybe_unused]] = ModuleDictImpl;
  ModuleDict() : ModuleHolder() {}
  ModuleDict(std::initializer_list<std::pair<std::string, std::shared_ptr<Module>>> modules)
      : ModuleHolder(std::make_shared<ModuleDictImpl>(
            std::vector<std::pair<std::string, std::shared_ptr<Module>>>(modules))) {}
};

// Parameters in a list, registered as "0", "1", ... so that parameters() and optimizers see them.
// Each keeps the requires_grad it had when appended (as libtorch).
class ParameterListImpl : public Cloneable<ParameterListImpl> {
 public:
  using Item = OrderedDict<std::string, Tensor>::Item;
  using Iterator = OrderedDict<std::string, Tensor>::Iterator;
  using ConstIterator = OrderedDict<std::string, Tensor>::ConstIterator;

  ParameterListImpl() = default;
  // One parameter per argument.
  template <class... Tensors, class = std::enable_if_t<(std::is_convertible_v<Tensors, Tensor> && ...)>>
  explicit ParameterListImpl(const Tensors&... params) {
    (append(params), ...);
  }

  // Copies every parameter (same requires_grad).
  std::shared_ptr<Module> clone(const std::optional<Device>& device = std::nullopt) const override;
  void reset() override {}
  void pretty_print(std::ostream& stream) const override;

  // Appends a parameter under the next index.
  void append(const Tensor& param);
  // Appends the value of a (name, parameter) item; the name is dropped.
  void append(const Item& pair) { append(pair.value()); }
  // Appends every element of a container of tensors or items.
  template <class Container>
  void extend(const Container& container) {
    for (const auto& param : container) append(param);
  }
  template <class Container>
  ParameterListImpl& operator+=(const Container& other) {
    extend(other);
    return *this;
  }

  Iterator begin() { return parameters_.begin(); }
  ConstIterator begin() const { return parameters_.begin(); }
  Iterator end() { return parameters_.end(); }
  ConstIterator end() const { return parameters_.end(); }

  // The parameter at `idx` (raises when idx >= size()).
  Tensor& at(size_t idx);
  const Tensor& at(size_t idx) const;
  Tensor& operator[](size_t idx) { return at(idx); }
  const Tensor& operator[](size_t idx) const { return at(idx); }
  size_t size() const noexcept { return parameters_.size(); }
  bool is_empty() const noexcept { return parameters_.is_empty(); }
};
FW_MODULE(ParameterList);

// Parameters keyed by name, in insertion order, registered under their keys. Each keeps the
// requires_grad it had when inserted (as libtorch).
class ParameterDictImpl : public Cloneable<ParameterDictImpl> {
 public:
  using Iterator = OrderedDict<std::string, Tensor>::Iterator;
  using ConstIterator = OrderedDict<std::string, Tensor>::ConstIterator;

  ParameterDictImpl() = default;
  explicit ParameterDictImpl(const OrderedDict<std::string, Tensor>& params) { update(params); }

  std::shared_ptr<Module> clone(const std::optional<Device>& device = std::nullopt) const override;
  void reset() override {}
  void pretty_print(std::ostream& stream) const override;

  // Registers `param` under `key` (raises if the key exists); returns the registered handle.
  Tensor& insert(std::string key, Tensor param);
  // Removes the parameter under `key` and returns it (raises if there is none).
  Tensor pop(const std::string& key);
  std::vector<std::string> keys() const { return parameters_.keys(); }
  std::vector<Tensor> values() const { return parameters_.values(); }
  std::vector<std::pair<std::string, Tensor>> items() const { return parameters_.pairs(); }
  Iterator begin() { return parameters_.begin(); }
  ConstIterator begin() const { return parameters_.begin(); }
  Iterator end() { return parameters_.end(); }
  ConstIterator end() const { return parameters_.end(); }
  size_t size() const noexcept { return parameters_.size(); }
  bool empty() const noexcept { return parameters_.is_empty(); }
  // Inserts each (key, parameter) item of `container`, replacing parameters with the same key.
  template <class Container>
  void update(const Container& container) {
    for (const auto& item : container) insert_or_assign(item.key(), item.value());
  }
  // Removes every parameter.
  void clear() { parameters_.clear(); }
  bool contains(const std::string& key) const noexcept { return parameters_.contains(key); }
  // The parameter under `key` (raises if there is none).
  const Tensor& get(const std::string& key) const;
  Tensor& get(const std::string& key);
  Tensor& operator[](const std::string& key) { return get(key); }
  const Tensor& operator[](const std::string& key) const { return get(key); }

 private:
  void insert_or_assign(const std::string& key, const Tensor& param);
};
FW_MODULE(ParameterDict);

}  // namespace fw::nn
