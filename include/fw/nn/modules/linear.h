// Linear layers and shape modules: Identity, Linear, Bilinear, Flatten, Unflatten.
#pragma once
#include <functional>
#include <tuple>
#include <vector>

#include "fw/nn/module.h"
#include "fw/nn/options.h"

namespace fw::nn {

// Options of Linear: in_features, out_features, bias (default true).
struct LinearOptions {
  LinearOptions(int64_t in_features, int64_t out_features) : in_features_(in_features), out_features_(out_features) {}
  FW_ARG(int64_t, in_features);
  FW_ARG(int64_t, out_features);
  FW_ARG(bool, bias) = true;
};

// Options of Bilinear: in1_features, in2_features, out_features, bias (default true).
struct BilinearOptions {
  BilinearOptions(int64_t in1_features, int64_t in2_features, int64_t out_features)
      : in1_features_(in1_features), in2_features_(in2_features), out_features_(out_features) {}
  FW_ARG(int64_t, in1_features);
  FW_ARG(int64_t, in2_features);
  FW_ARG(int64_t, out_features);
  FW_ARG(bool, bias) = true;
};

// Options of Flatten: the dims start_dim..end_dim become one.
struct FlattenOptions {
  FW_ARG(int64_t, start_dim) = 1;
  FW_ARG(int64_t, end_dim) = -1;
};

// Options of Unflatten: dim `dim` becomes `sizes`.
struct UnflattenOptions {
  UnflattenOptions(int64_t dim, std::vector<int64_t> sizes) : dim_(dim), sizes_(std::move(sizes)) {}
  FW_ARG(int64_t, dim);
  FW_ARG(std::vector<int64_t>, sizes);
};

// Returns its input; takes (and ignores) any constructor arguments.
class IdentityImpl : public Cloneable<IdentityImpl> {
 public:
  template <class... Args>
  explicit IdentityImpl(const Args&...) {}
  void reset() override {}
  void pretty_print(std::ostream& stream) const override;
  Tensor forward(const Tensor& input) { return input; }
};
FW_MODULE(Identity);

// Wraps a function of one tensor as a module (for Sequential), as libtorch's Functional; extra
// arguments are bound after the input: Functional(fw::softmax, 1, std::nullopt).
class FunctionalImpl : public Cloneable<FunctionalImpl> {
 public:
  using Function = std::function<Tensor(Tensor)>;
  explicit FunctionalImpl(Function function) : function_(std::move(function)) {}
  template <class F, class A, class... Rest>
  FunctionalImpl(F f, A&& arg, Rest&&... rest)
      : function_([f, bound = std::make_tuple(std::forward<A>(arg), std::forward<Rest>(rest)...)](Tensor x) {
          return std::apply([&](const auto&... a) { return Tensor(f(x, a...)); }, bound);
        }) {}
  void reset() override {}
  void pretty_print(std::ostream& stream) const override;
  Tensor forward(Tensor input) { return function_(std::move(input)); }
  Tensor operator()(Tensor input) { return forward(std::move(input)); }
  bool is_serializable() const override { return false; }

 private:
  Function function_;
};
FW_MODULE(Functional);

// y = x W^T + b; W is (out, in), both initialised from U(-1/sqrt(in), 1/sqrt(in)) as in libtorch
// (kaiming_uniform_ with a = sqrt(5) for W).
class LinearImpl : public Cloneable<LinearImpl> {
 public:
  LinearImpl(int64_t in_features, int64_t out_features) : LinearImpl(LinearOptions(in_features, out_features)) {}
  explicit LinearImpl(const LinearOptions& options_);
  void reset() override;
  // Re-samples weight and bias.
  void reset_parameters();
  void pretty_print(std::ostream& stream) const override;
  Tensor forward(const Tensor& input);

  LinearOptions options;
  Tensor weight;
  Tensor bias;  // undefined without bias
};
FW_MODULE(Linear);

// y_k = x1^T W_k x2 + b_k; W is (out, in1, in2); W and b from U(-1/sqrt(in1), 1/sqrt(in1)).
class BilinearImpl : public Cloneable<BilinearImpl> {
 public:
  BilinearImpl(int64_t in1_features, int64_t in2_features, int64_t out_features)
      : BilinearImpl(BilinearOptions(in1_features, in2_features, out_features)) {}
  explicit BilinearImpl(const BilinearOptions& options_);
  void reset() override;
  void reset_parameters();
  void pretty_print(std::ostream& stream) const override;
  // input1 (*, in1) and input2 (*, in2) with the same leading dims -> (*, out).
  Tensor forward(const Tensor& input1, const Tensor& input2);

  BilinearOptions options;
  Tensor weight;
  Tensor bias;
};
FW_MODULE(Bilinear);

// Flattens dims start_dim..end_dim (default 1..-1: everything but the batch dim).
class FlattenImpl : public Cloneable<FlattenImpl> {
 public:
  explicit FlattenImpl(const FlattenOptions& options_ = {}) : options(options_) {}
  void reset() override {}
  void pretty_print(std::ostream& stream) const override;
  Tensor forward(const Tensor& input) { return input.flatten(options.start_dim(), options.end_dim()); }

  FlattenOptions options;
};
FW_MODULE(Flatten);

// Splits one dim into several (the inverse of Flatten).
class UnflattenImpl : public Cloneable<UnflattenImpl> {
 public:
  UnflattenImpl(int64_t dim, std::vector<int64_t> sizes) : UnflattenImpl(UnflattenOptions(dim, std::move(sizes))) {}
  explicit UnflattenImpl(const UnflattenOptions& options_) : options(options_) {}
  void reset() override {}
  void pretty_print(std::ostream& stream) const override;
  Tensor forward(const Tensor& input) { return input.unflatten(options.dim(), options.sizes()); }

  UnflattenOptions options;
};
FW_MODULE(Unflatten);

}  // namespace fw::nn
