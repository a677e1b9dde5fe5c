// A small convolutional classifier written the libtorch way: Conv2d + BatchNorm2d + ReLU + MaxPool2d
// blocks, a Linear head, Adam, cross_entropy, a shuffling DataLoader and a progress bar, trained on
// generated 16x16 grey images of three shapes (circle outlines, square outlines, plus-shaped crosses)
// at random positions, sizes, stroke widths and brightness, on a random background level with
// Gaussian pixel noise. Prints per-epoch loss and accuracy; exits non-zero if the test accuracy
// misses the stated target.
//
//   cnn_classifier [epochs=5] [seed=0]
#include <fw/fw.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <vector>

namespace {

constexpr int64_t kSide = 16, kClasses = 3;
const char* const kNames[kClasses] = {"circle", "square", "cross"};

struct Split {
  fw::Tensor x, y;  // (N, 1, 16, 16) float, (N) int64
};

// Ink of one pixel (0..1) for a shape of class `cls` centred at (cx, cy) with size r and stroke
// half-width w; edges are soft over about one pixel.
double ink(int cls, double px, double py, double cx, double cy, double r, double w) {
  const double dx = px - cx, dy = py - cy;
  double d;  // distance from the stroke's centre line
  switch (cls) {
    case 0:  // circle outline
      d = std::abs(std::hypot(dx, dy) - r);
      break;
    case 1:  // square outline
      d = std::abs(std::max(std::abs(dx), std::abs(dy)) - r);
      break;
    default: {  // plus: a horizontal and a vertical bar of length 2r
      const double h = std::max(std::abs(dy), std::abs(dx) - r);
      const double v = std::max(std::abs(dx), std::abs(dy) - r);
      d = std::max(0.0, std::min(h, v));
      break;
    }
  }
  return std::clamp(w + 0.5 - d, 0.0, 1.0);
}

// n images per class, shuffled, from a seeded generator.
Split generate(int64_t n_per_class, uint32_t seed) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  std::normal_distribution<double> noise(0.0, 1.0);
  const int64_t n = n_per_class * kClasses;
  std::vector<float> pixels(size_t(n * kSide * kSide));
  std::vector<int64_t> labels(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; i++) {
    const int cls = int(i % kClasses);
    const double r = 2.5 + 3.5 * u(gen);                // 2.5 .. 6 pixels
    const double w = 0.35 + 0.5 * u(gen);               // stroke half-width
    const double lo = r + w, hi = kSide - 1 - r - w;    // keep the shape inside the image
    const double cx = lo + (hi - lo) * u(gen), cy = lo + (hi - lo) * u(gen);
    const double bright = 0.6 + 0.8 * u(gen), background = 0.3 * u(gen), sigma = 0.1 + 0.15 * u(gen);
    float* img = pixels.data() + i * kSide * kSide;
    for (int64_t yy = 0; yy < kSide; yy++)
      for (int64_t xx = 0; xx < kSide; xx++)
        img[yy * kSide + xx] =
            float(background + bright * ink(cls, double(xx), double(yy), cx, cy, r, w) + sigma * noise(gen));
    labels[size_t(i)] = cls;
  }
  fw::Tensor x = fw::tensor(pixels).reshape({n, 1, kSide, kSide});
  fw::Tensor y = fw::tensor(labels);
  std::vector<int64_t> perm(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; i++) perm[size_t(i)] = i;
  std::shuffle(perm.begin(), perm.end(), gen);
  fw::Tensor p = fw::tensor(perm);
  return {x.index_select(0, p), y.index_select(0, p)};
}

// Two conv blocks (16 -> 8 -> 4 pixels) and a two-layer head.
fw::nn::Sequential make_net() {
  namespace nn = fw::nn;
  return nn::Sequential(nn::Conv2d(nn::Conv2dOptions(1, 16, 3).padding(1).bias(false)), nn::BatchNorm2d(16),
                        nn::ReLU(), nn::MaxPool2d(2),                                       // 16 x 8 x 8
                        nn::Conv2d(nn::Conv2dOptions(16, 32, 3).padding(1).bias(false)), nn::BatchNorm2d(32),
                        nn::ReLU(), nn::MaxPool2d(2),                                       // 32 x 4 x 4
                        nn::Flatten(), nn::Linear(32 * 4 * 4, 64), nn::ReLU(), nn::Dropout(0.2),
                        nn::Linear(64, kClasses));
}

// Accuracy in eval mode (batch norm running statistics, no dropout), batched to bound memory;
// per-class accuracies into per_class if given.
double accuracy(fw::nn::Sequential& net, const Split& s, std::vector<double>* per_class = nullptr) {
  fw::NoGradGuard no_grad;
  net->eval();
  std::vector<fw::Tensor> preds;
  for (int64_t i = 0; i < s.x.size(0); i += 500)
    preds.push_back(net->forward(s.x.narrow(0, i, std::min<int64_t>(500, s.x.size(0) - i))).argmax(1));
  fw::Tensor correct = fw::eq(fw::cat(preds, 0), s.y);
  net->train();
  if (per_class) {
    per_class->clear();
    for (int64_t c = 0; c < kClasses; c++) {
      fw::Tensor mask = fw::eq(s.y, c);
      per_class->push_back(correct.masked_select(mask).to(fw::kFloat).mean().item<double>());
    }
  }
  return correct.to(fw::kFloat).mean().item<double>();
}

}  // namespace

int main(int argc, char** argv) {
  const int epochs = argc > 1 ? std::atoi(argv[1]) : 5;
  const uint32_t seed = argc > 2 ? uint32_t(std::atoi(argv[2])) : 0;
  const int64_t batch = 64;
  const double target = 0.95;
  const auto t0 = std::chrono::steady_clock::now();
  fw::manual_seed(seed);
  Split train = generate(1200, 2 * seed + 1), test = generate(300, 2 * seed + 2);
  std::printf("data: %lld training and %lld test images (16x16, classes circle/square/cross)\n",
              (long long)train.y.size(0), (long long)test.y.size(0));

  fw::nn::Sequential net = make_net();
  int64_t n_params = 0;
  for (auto& p : net->parameters()) n_params += p.numel();
  std::printf("model: %lld parameters\n", (long long)n_params);
  const int64_t steps_per_epoch = (train.y.size(0) + batch - 1) / batch;
  fw::optim::Adam opt(net->parameters(), fw::optim::AdamOptions(3e-3));
  // Cosine decay over the whole run, stepped per batch.
  fw::optim::CosineAnnealingLR schedule(opt, epochs * steps_per_epoch, 1e-5);
  fw::data::DataLoader loader(fw::data::datasets::LabeledTensorDataset(train.x, train.y).map(fw::data::transforms::Stack<>()),
                              fw::data::DataLoaderOptions().batch_size(batch).shuffle(true).num_workers(1));
  for (int epoch = 1; epoch <= epochs; epoch++) {
    fw::utils::ProgressBar bar(steps_per_epoch, "epoch " + std::to_string(epoch));
    double loss_sum = 0;
    int64_t steps = 0, seen = 0, correct = 0;
    for (auto& b : loader) {
      opt.zero_grad();
      fw::Tensor logits = net->forward(b.data);
      fw::Tensor loss = fw::nn::functional::cross_entropy(logits, b.target);
      loss.backward();
      opt.step();
      schedule.step();
      loss_sum += loss.item<double>();
      correct += fw::eq(logits.argmax(1), b.target).sum().item<int64_t>();
      seen += b.target.size(0);
      steps++;
      bar.set_postfix({{"loss", loss_sum / double(steps)}, {"acc", double(correct) / double(seen)}});
      bar.update();
    }
    bar.close();
    // Training accuracy: running, over the epoch's batches in training mode.
    std::printf("epoch %d  loss %.4f  train acc %.3f  test acc %.3f  lr %.2g\n", epoch, loss_sum / double(steps),
                double(correct) / double(seen), accuracy(net, test), schedule.get_last_lr()[0]);
  }
  std::vector<double> per_class;
  const double acc = accuracy(net, test, &per_class);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  for (int64_t c = 0; c < kClasses; c++) std::printf("  %-7s %.3f\n", kNames[c], per_class[size_t(c)]);
  std::printf("final test accuracy %.3f (target >= %.2f) in %.1f s\n", acc, target, seconds);
  return acc >= target ? 0 : 1;
}
