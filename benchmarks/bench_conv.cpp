// Convolution kernels on the W5 shapes (the VGG net of bench_api.cpp: ten 3x3 padding-1 convs,
// batch 64, input 3x40x16). Per layer: the forward conv2d and the two backward convolutions as
// conv2d's vjp runs them (grad_input = conv_transpose2d of the grad, grad_weight = conv2d with
// batch and channels swapped), each with the im2col + Eigen path and with the oneDNN path.
// Run with OMP_NUM_THREADS set; the counters give GFLOP/s (2 * MACs of the layer).
#include <benchmark/benchmark.h>
#include <fw/fw.h>

#include <string>

namespace fw::detail {
void set_conv_dnnl_enabled(bool on);  // core/ops/conv_dnnl.h (internal)
bool conv_dnnl_enabled();
}  // namespace fw::detail

namespace {

struct Layer {
  int64_t cin, cout, h, w;
};
// The ten convolutions of W5, with the feature map each one sees.
const Layer kLayers[10] = {{3, 64, 40, 16},   {64, 64, 40, 16},  {64, 128, 20, 16}, {128, 128, 20, 16},
                           {128, 256, 10, 8}, {256, 256, 10, 8}, {256, 256, 10, 8}, {256, 512, 5, 8},
                           {512, 512, 5, 8},  {512, 512, 5, 8}};
constexpr int64_t kBatch = 64;

enum Pass { kForward, kGradInput, kGradWeight };

void BM_conv(benchmark::State& s) {
  const Layer& l = kLayers[s.range(0)];
  auto pass = Pass(s.range(1));
  bool dnnl = s.range(2) != 0;
  fw::detail::set_conv_dnnl_enabled(dnnl);
  if (dnnl && !fw::detail::conv_dnnl_enabled()) {
    s.SkipWithError("built without oneDNN");
    return;
  }
  fw::manual_seed(0);
  auto x = fw::randn({kBatch, l.cin, l.h, l.w}), w = fw::randn({l.cout, l.cin, 3, 3}) * 0.05;
  auto b = fw::randn({l.cout}), g = fw::randn({kBatch, l.cout, l.h, l.w});
  auto xt = x.transpose(0, 1).contiguous(), gt = g.transpose(0, 1).contiguous();
  for (auto _ : s) {
    fw::Tensor r;
    if (pass == kForward) r = fw::conv2d(x, w, b, 1, 1);
    else if (pass == kGradInput) r = fw::conv_transpose2d(g, w, {}, 1, 1);
    else r = fw::conv2d(xt, gt, {}, 1, 1);
    benchmark::DoNotOptimize(r.data_ptr());
  }
  double flops = 2.0 * kBatch * l.cout * l.cin * 9 * l.h * l.w;
  s.counters["GFLOP/s"] = benchmark::Counter(flops * double(s.iterations()) / 1e9, benchmark::Counter::kIsRate);
  fw::detail::set_conv_dnnl_enabled(true);
}

void layer_args(benchmark::internal::Benchmark* b) {
  b->ArgNames({"layer", "pass", "dnnl"});
  for (int64_t pass : {0, 1, 2})
    for (int64_t layer = 0; layer < 10; layer++)
      for (int64_t dnnl : {0, 1}) b->Args({layer, pass, dnnl});
}
BENCHMARK(BM_conv)->Apply(layer_args)->UseRealTime()->Unit(benchmark::kMillisecond)->MinTime(0.2);

}  // namespace

BENCHMARK_MAIN();
