// bfloat16 and CPU autocast, one source for both frameworks (as ../shared/bench/bench_api.cpp):
// compiled with -DPEER_TORCH against libtorch, or against fw. Prints "name value unit" lines; run
// through `COMPARE_SRC=benchmarks/bench_autocast_api.cpp COMPARE_EAGER_ONLY=1 benchmarks/compare.sh`.
// The W4 rows repeat WORKLOADS.md's MLP step, in float32 and with each step's forward under
// autocast (at::autocast, as libtorch's C++ API spells it; the backward and the optimizer step
// run outside it, as torch.autocast's documentation asks).
#include "one_source.h"
#ifdef PEER_TORCH
#include <ATen/autocast_mode.h>  // fw.h declares fw::autocast (at::autocast)
#endif

namespace {
// One autocast region, as Python's `with torch.autocast("cpu", dtype=torch.bfloat16)`.
struct Region {
  Region() {
    at::autocast::set_autocast_cpu_dtype(T::kBFloat16);
    at::autocast::set_cpu_enabled(true);
    at::autocast::increment_nesting();
  }
  ~Region() {
    if (at::autocast::decrement_nesting() == 0) at::autocast::clear_cache();
    at::autocast::set_cpu_enabled(false);
  }
};
// WORKLOADS.md's W5 network (the same layers as ../shared/bench/bench_api.cpp's).
struct Vgg : T::nn::Module {
  T::nn::Sequential body;
  Vgg() {
    int cin = 3;
    struct B {
      int cout, n, ph, pw;
    };
    for (B b : {B{64, 2, 2, 1}, B{128, 2, 2, 2}, B{256, 3, 2, 1}, B{512, 3, 2, 2}}) {
      for (int i = 0; i < b.n; i++) {
        body->push_back(T::nn::Conv2d(T::nn::Conv2dOptions(cin, b.cout, 3).padding(1)));
        body->push_back(T::nn::ReLU());
        cin = b.cout;
      }
      body->push_back(T::nn::MaxPool2d(T::nn::MaxPool2dOptions({b.ph, b.pw})));
    }
    body->push_back(T::nn::Flatten());
    body->push_back(T::nn::Linear(512 * 2 * 4, 2048));
    body->push_back(T::nn::ReLU());
    body->push_back(T::nn::Linear(2048, 2048));
    body->push_back(T::nn::ReLU());
    body->push_back(T::nn::Linear(2048, 1000));
    register_module("body", body);
  }
  T::Tensor forward(T::Tensor x) { return body->forward(x); }
};
}  // namespace

int main() {
  T::manual_seed(0);
  {
    auto a = T::randn({1024, 1024}).to(T::kBFloat16), b = T::randn({1024, 1024}).to(T::kBFloat16);
    double t = med([&] { auto c = T::matmul(a, b); });
    printf("B1_bf16_gemm1024 %.1f GFLOP/s\n", 2.0 * 1024 * 1024 * 1024 / t / 1e9);
  }
  T::nn::Sequential mlp(T::nn::Linear(784, 1024), T::nn::ReLU(), T::nn::Linear(1024, 1024), T::nn::ReLU(),
                        T::nn::Linear(1024, 10));
  T::optim::SGD opt(mlp->parameters(), T::optim::SGDOptions(0.01).momentum(0.9));
  auto x = T::randn({256, 784});
  auto y = T::randint(0, 10, {256});
  {
    double t = med([&] {
      opt.zero_grad();
      auto loss = T::nn::functional::cross_entropy(mlp->forward(x), y);
      loss.backward();
      opt.step();
    }, 15, 3);
    printf("W4_mlp_train_step %.2f ms\n", t * 1e3);
  }
  {
    double t = med([&] {
      opt.zero_grad();
      T::Tensor loss;
      {
        Region r;
        loss = T::nn::functional::cross_entropy(mlp->forward(x), y);
      }
      loss.backward();
      opt.step();
    }, 15, 3);
    printf("W4_mlp_train_step_autocast %.2f ms\n", t * 1e3);
  }
  {
    T::NoGradGuard ng;
    double t = med([&] {
      Region r;
      auto out = mlp->forward(x);
    }, 15, 3);
    printf("W4_mlp_forward_autocast %.2f ms\n", t * 1e3);
  }
  {
    auto net = std::make_shared<Vgg>();
    T::optim::SGD vopt(net->parameters(), T::optim::SGDOptions(0.01).momentum(0.9));
    auto vx = T::randn({64, 3, 40, 16});
    auto vy = T::randint(0, 1000, {64});
    for (bool ac : {false, true}) {
      double t = med([&] {
        vopt.zero_grad();
        T::Tensor loss;
        if (ac) {
          Region r;
          loss = T::nn::functional::cross_entropy(net->forward(vx), vy);
        } else {
          loss = T::nn::functional::cross_entropy(net->forward(vx), vy);
        }
        loss.backward();
        vopt.step();
      }, 5);
      printf("W5_vgg_train_step%s %.1f ms\n", ac ? "_autocast" : "", t * 1e3);
      T::NoGradGuard ng;
      t = med([&] {
        if (ac) {
          Region r;
          auto o = net->forward(vx);
        } else {
          auto o = net->forward(vx);
        }
      }, 5);
      printf("W5i_vgg_infer%s %.1f ms\n", ac ? "_autocast" : "", t * 1e3);
    }
  }
}
