// A classifier written the libtorch way: fw::nn::Sequential, Adam, cross_entropy, a shuffling
// DataLoader and a progress bar, trained on generated Gaussian blobs (8 classes in 16 dims).
// Prints per-epoch loss and accuracy; exits non-zero if test accuracy misses the stated target.
#include <fw/fw.h>

#include <cstdio>
#include <cstdlib>

namespace {

struct Split {
  fw::Tensor x, y;
};

// n points per class around the given centres, with isotropic noise.
Split sample(const fw::Tensor& centres, int64_t n, double spread) {
  fw::Tensor y = fw::arange(centres.size(0)).repeat({n});
  fw::Tensor x = centres.index_select(0, y) + fw::randn({y.size(0), centres.size(1)}) * spread;
  return {x, y};
}

double accuracy(fw::nn::Sequential& net, const Split& s) {
  fw::NoGradGuard no_grad;
  net->eval();
  double acc = fw::eq(net->forward(s.x).argmax(1), s.y).to(fw::kFloat).mean().item<double>();
  net->train();
  return acc;
}

}  // namespace

int main(int argc, char** argv) {
  const int epochs = argc > 1 ? std::atoi(argv[1]) : 8;
  const int64_t classes = 8, dim = 16;
  const double target = 0.95;
  fw::manual_seed(0);
  fw::Tensor centres = fw::randn({classes, dim}) * 1.2;
  Split train = sample(centres, 600, 1.0), test = sample(centres, 150, 1.0);

  fw::nn::Sequential net(fw::nn::Linear(dim, 128), fw::nn::ReLU(), fw::nn::Dropout(0.1), fw::nn::Linear(128, 128),
                         fw::nn::ReLU(), fw::nn::Linear(128, classes));
  fw::optim::Adam opt(net->parameters(), fw::optim::AdamOptions(1e-3));
  fw::data::DataLoader loader(fw::data::datasets::LabeledTensorDataset(train.x, train.y).map(fw::data::transforms::Stack<>()),
                              fw::data::DataLoaderOptions().batch_size(64).shuffle(true).num_workers(1));
  for (int epoch = 1; epoch <= epochs; epoch++) {
    fw::utils::ProgressBar bar(int64_t((train.y.size(0) + 63) / 64), "epoch " + std::to_string(epoch));
    double loss_sum = 0;
    int64_t steps = 0;
    for (auto& batch : loader) {
      opt.zero_grad();
      fw::Tensor loss = fw::nn::functional::cross_entropy(net->forward(batch.data), batch.target);
      loss.backward();
      opt.step();
      loss_sum += loss.item<double>();
      steps++;
      bar.set_postfix({{"loss", loss_sum / double(steps)}});
      bar.update();
    }
    bar.close();
    std::printf("epoch %d  loss %.4f  train acc %.3f  test acc %.3f\n", epoch, loss_sum / double(steps),
                accuracy(net, train), accuracy(net, test));
  }
  double acc = accuracy(net, test);
  std::printf("final test accuracy %.3f (target >= %.2f)\n", acc, target);
  return acc >= target ? 0 : 1;
}
