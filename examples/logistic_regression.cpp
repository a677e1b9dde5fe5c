// Trains a two-layer MLP classifier on generated Gaussian blobs with hand-written gradients,
// using only fw's tensor ops (autograd arrives with its own issue). Prints loss and accuracy
// per epoch and exits non-zero if the final accuracy misses the stated target.
#include <fw/fw.h>

#include <cstdio>
#include <cstdlib>
#include <string>

namespace {

struct Blobs {
  fw::Tensor x, y;
};

// n points per class around the given centres.
Blobs make_blobs(const fw::Tensor& centres, int64_t n, double spread) {
  int64_t classes = centres.size(0), dim = centres.size(1);
  fw::Tensor labels = fw::arange(classes).repeat({n});
  fw::Tensor x = centres.index_select(0, labels) + fw::randn({classes * n, dim}) * spread;
  return {x, labels};
}

double accuracy(const fw::Tensor& logits, const fw::Tensor& y) {
  return fw::eq(logits.argmax(1), y).to(fw::kFloat).mean().item<double>();
}

}  // namespace

int main(int argc, char** argv) {
  int epochs = argc > 1 ? std::atoi(argv[1]) : 30;
  const int64_t classes = 4, dim = 8, hidden = 32, batch = 64;
  fw::manual_seed(7);
  fw::Tensor centres = fw::randn({classes, dim}) * 1.5;
  Blobs train = make_blobs(centres, 512, 1.2), test = make_blobs(centres, 128, 1.2);

  fw::Tensor w1 = fw::randn({dim, hidden}) * (1.0 / std::sqrt(double(dim)));
  fw::Tensor b1 = fw::zeros({hidden});
  fw::Tensor w2 = fw::randn({hidden, classes}) * (1.0 / std::sqrt(double(hidden)));
  fw::Tensor b2 = fw::zeros({classes});
  const double lr = 0.1;
  int64_t n = train.x.size(0);
  for (int epoch = 1; epoch <= epochs; epoch++) {
    fw::Tensor perm = fw::randperm(n);
    double loss_sum = 0;
    int64_t steps = 0;
    for (int64_t s = 0; s + batch <= n; s += batch) {
      fw::Tensor idx = perm.narrow(0, s, batch);
      fw::Tensor xb = train.x.index_select(0, idx), yb = train.y.index_select(0, idx);
      fw::Tensor h_pre = fw::addmm(b1, xb, w1);
      fw::Tensor h = fw::relu(h_pre);
      fw::Tensor logits = fw::addmm(b2, h, w2);
      fw::Tensor logp = fw::log_softmax(logits, 1);
      fw::Tensor onehot = fw::one_hot(yb, classes).to(fw::kFloat);
      loss_sum += -(logp * onehot).sum().item<double>() / double(batch);
      steps++;
      // Backward by hand: d loss / d logits = softmax - onehot, averaged over the batch.
      fw::Tensor g_logits = (logp.exp() - onehot) / double(batch);
      fw::Tensor g_w2 = fw::mm(h.t(), g_logits), g_b2 = g_logits.sum({0});
      fw::Tensor g_h = fw::mm(g_logits, w2.t()) * (h_pre > 0).to(fw::kFloat);
      fw::Tensor g_w1 = fw::mm(xb.t(), g_h), g_b1 = g_h.sum({0});
      w1.sub_(g_w1, lr);
      b1.sub_(g_b1, lr);
      w2.sub_(g_w2, lr);
      b2.sub_(g_b2, lr);
    }
    auto forward = [&](const fw::Tensor& x) { return fw::addmm(b2, fw::relu(fw::addmm(b1, x, w1)), w2); };
    std::printf("epoch %2d  loss %.4f  train acc %.3f  test acc %.3f\n", epoch, loss_sum / double(steps),
                accuracy(forward(train.x), train.y), accuracy(forward(test.x), test.y));
  }
  auto final_logits = fw::addmm(b2, fw::relu(fw::addmm(b1, test.x, w1)), w2);
  double acc = accuracy(final_logits, test.y);
  const double target = 0.9;
  std::printf("final test accuracy %.3f (target >= %.2f)\n", acc, target);
  return acc >= target ? 0 : 1;
}
