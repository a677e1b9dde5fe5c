// fw::compile on the canonical workloads (../shared/WORKLOADS.md), printed in compare.sh's
// "name value unit" form: compiled W2/W3/W4 (named like bench_api's workloads with a
// "[compiled]" suffix, so compare.sh divides them by the same libtorch figures), compile latency
// (W7: first call cold, with an empty kernel cache, and warm, with the disk cache filled by the cold
// run in a fresh process), and the replay overhead of a compiled function with one small kernel.
//
//   fw_bench_compile            # everything except W7 (needs a fresh process per measurement)
//   fw_bench_compile w7         # first-call measurements of the compiled W4 step (and its GELU twin)
//   fw_bench_compile reductions # fused reductions (Note [Reduction kernels]): fw eager vs compiled
#include <fw/fw.h>
#include <fw/jit.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <vector>

namespace {

template <class F>
double med(F&& f, int reps = 11) {
  f();
  std::vector<double> t;
  for (int i = 0; i < reps; i++) {
    auto a = std::chrono::steady_clock::now();
    f();
    t.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - a).count());
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

double now() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

fw::nn::Sequential make_mlp() {
  return fw::nn::Sequential(fw::nn::Linear(784, 1024), fw::nn::ReLU(), fw::nn::Linear(1024, 1024), fw::nn::ReLU(),
                            fw::nn::Linear(1024, 10));
}

// The first compiled step of an MLP: W4's (its ReLUs and their backward masks go into the GEMMs'
// epilogues, so nothing is compiled since 2026-12-06) and, to keep timing the compiler, the same
// network with GELU, whose forward and backward make fused kernels (W7_gelu).
void w7() {
  for (bool gelu : {false, true}) {
    double t0 = now();
    fw::manual_seed(0);
    auto mlp = gelu ? fw::nn::Sequential(fw::nn::Linear(784, 1024), fw::nn::GELU(), fw::nn::Linear(1024, 1024),
                                         fw::nn::GELU(), fw::nn::Linear(1024, 10))
                    : make_mlp();
    auto cm = fw::compile(mlp);
    fw::optim::SGD opt(mlp->parameters(), fw::optim::SGDOptions(0.01).momentum(0.9));
    auto x = fw::randn({256, 784});
    auto y = fw::randint(0, 10, {256});
    double t1 = now();
    opt.zero_grad();
    auto loss = fw::nn::functional::cross_entropy(cm(x), y);
    loss.backward();
    opt.step();
    double t2 = now();
    std::printf("%s %.3f s (setup %.3f s)\n", gelu ? "W7_gelu_first_call" : "W7_first_call", t2 - t1, t1 - t0);
  }
}

// Reductions with their pointwise prologues, eager against compiled (fw only: the graphs are
// fw::compile's fusion cases, not canonical workloads; min of 30 per side).
void reductions() {
  using fw::Tensor;
  auto best = [](auto&& f) {
    f();
    double b = 1e30;
    for (int i = 0; i < 30; i++) {
      double a = now();
      f();
      b = std::min(b, now() - a);
    }
    return b * 1e3;
  };
  auto row = [&](const char* name, auto fn, auto... args) {
    auto c = fw::compile(fn);
    double e = best([&] { fn(args...); }), k = best([&] { c(args...); });
    std::printf("%-44s eager %8.3f ms  compiled %8.3f ms  %5.2fx\n", name, e, k, e / k);
  };
  fw::manual_seed(0);
  auto bias_grad = [](const Tensor& g, const Tensor& h) {
    Tensor m = g * (h > 0);
    return std::make_tuple(m, m.sum({0}));
  };
  row("bias gradient g*(h>0), sum(0), 256x1024", bias_grad, fw::randn({256, 1024}), fw::randn({256, 1024}));
  row("bias gradient, 4096x1024", bias_grad, fw::randn({4096, 1024}), fw::randn({4096, 1024}));
  auto bn = [](const Tensor& g, const Tensor& x) { return std::make_tuple(g.sum({0, 2, 3}), (g * x).sum({0, 2, 3})); };
  Tensor g = fw::randn({64, 64, 40, 16}), x = fw::randn({64, 64, 40, 16});
  row("sum(g), sum(g*x) over N,H,W, 64x64x40x16", bn, g, x);
  row("same, channels-last", bn, g.contiguous(fw::MemoryFormat::ChannelsLast),
      x.contiguous(fw::MemoryFormat::ChannelsLast));
  row("(x*y).sum(), 4M vector", [](const Tensor& a, const Tensor& b) { return (a * b).sum(); }, fw::randn({4 << 20}),
      fw::randn({4 << 20}));
  row("(exp(x)-1).sum(1), 8x512x1024", [](const Tensor& a) { return (a.exp() - 1).sum({1}); },
      fw::randn({8, 512, 1024}));
}

}  // namespace

int main(int argc, char** argv) {
  if (argc > 1 && std::strcmp(argv[1], "w7") == 0) {
    w7();
    return 0;
  }
  if (argc > 1 && std::strcmp(argv[1], "reductions") == 0) {
    reductions();
    return 0;
  }
  fw::manual_seed(0);
  {
    auto x = fw::randn({16 << 20}), w = fw::randn({16 << 20}), b = fw::randn({16 << 20});
    auto f = fw::compile([](const fw::Tensor& x, const fw::Tensor& w, const fw::Tensor& b) { return fw::gelu(x * w + b); });
    double t = med([&] { auto y = f(x, w, b); });
    std::printf("W2_gelu_chain_16M[compiled] %.2f ms\n", t * 1e3);
  }
  {
    auto x = fw::randn({4096, 1024}), g = fw::randn({1024}), be = fw::randn({1024});
    auto f = fw::compile([](const fw::Tensor& x, const fw::Tensor& g, const fw::Tensor& be) {
      return fw::softmax(fw::layer_norm(x, {1024}, g, be), -1);
    });
    double t = med([&] { auto y = f(x, g, be); });
    std::printf("W3_softmax_layernorm[compiled] %.2f ms\n", t * 1e3);
  }
  for (bool autocast : {false, true}) {  // W4, and its forward under CPU autocast (bench_autocast_api.cpp's peer)
    auto mlp = make_mlp();
    auto cm = fw::compile(mlp);
    fw::optim::SGD opt(mlp->parameters(), fw::optim::SGDOptions(0.01).momentum(0.9));
    auto x = fw::randn({256, 784});
    auto y = fw::randint(0, 10, {256});
    double t = med([&] {
      opt.zero_grad();
      fw::Tensor loss;
      {
        fw::AutocastGuard guard(autocast);
        loss = fw::nn::functional::cross_entropy(cm(x), y);
      }
      loss.backward();
      opt.step();
    });
    std::printf("W4_mlp_train_step%s[compiled] %.2f ms\n", autocast ? "_autocast" : "", t * 1e3);
  }
  {
    // Replay overhead: guard check + one fused kernel on 100 elements, per call.
    auto a = fw::randn({100}), b = fw::randn({100});
    auto f = fw::compile([](const fw::Tensor& a, const fw::Tensor& b) { return (a + b).relu() * 2; });
    f(a, b);
    const int n = 20000;
    double t = med([&] {
      for (int i = 0; i < n; i++) f(a, b);
    }, 5);
    std::printf("replay_small_kernel %.3f us\n", t / n * 1e6);
    auto e = [&] {
      for (int i = 0; i < n; i++) ((a + b).relu() * 2);
    };
    std::printf("eager_same_3_ops %.3f us\n", med(e, 5) / n * 1e6);
  }
  return 0;
}
