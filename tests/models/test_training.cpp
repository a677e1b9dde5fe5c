// Training sanity: a small vgg6-layout model with two language heads learns a synthetic,
// separable frame labelling (a spectral bump whose position gives the HMM state) from context
// windows drawn by FrameSampler, to > 90% frame accuracy on a held-out utterance.
#include <gtest/gtest.h>

#include <random>

#include "tests/models/helpers.h"

namespace fm = fw::models;

namespace {

constexpr int64_t kStates = 4;

// States of an utterance: segments of 4..15 frames of one state each.
std::vector<int64_t> make_states(int64_t frames, uint32_t seed) {
  std::mt19937 gen(seed);
  std::vector<int64_t> states;
  while (int64_t(states.size()) < frames) {
    int64_t s = int64_t(gen() % kStates), len = 4 + int64_t(gen() % 12);
    for (int64_t i = 0; i < len && int64_t(states.size()) < frames; i++) states.push_back(s);
  }
  return states;
}

// (T, 3, 40) log-mel-like features: a Gaussian bump at bin 5 + 10 * state plus noise, with
// delta and delta-delta channels.
fw::Tensor make_features(const std::vector<int64_t>& states) {
  const int64_t t = int64_t(states.size());
  fw::Tensor mu = fw::tensor(states).to(fw::kFloat).mul(10.0).add(5.0);
  fw::Tensor bins = fw::arange(40, fw::kFloat);
  fw::Tensor mel = (bins.unsqueeze(0) - mu.unsqueeze(1)).square().div(-8.0).exp() + 0.5 * fw::randn({t, 40});
  fw::Tensor delta = (mel.roll({-1}, {0}) - mel.roll({1}, {0})) / 2.0;
  fw::Tensor ddelta = (delta.roll({-1}, {0}) - delta.roll({1}, {0})) / 2.0;
  return fw::stack({mel, delta, ddelta}, 1);
}

}  // namespace

// One thread for the run: its ~3000 small conv/GEMM calls each open an OpenMP region (oneDNN,
// Eigen), and with other processes busy on a 2-core machine a region costs a scheduler slice
// whenever a team member is descheduled. Measured under load ~4: 13-64 s on two threads, 2.9 s
// on one (3 s on two threads when the machine is quiet).
struct OneThread {
  int before = fw::get_num_threads();
  OneThread() { fw::set_num_threads(1); }
  ~OneThread() { fw::set_num_threads(before); }
};

TEST(ModelsTraining, SmallVggLearnsSeparableFramesInTwoLanguages) {
  OneThread one_thread;
  fw::manual_seed(0);
  auto train_states = make_states(1500, 1), test_states = make_states(600, 2);
  fw::Tensor train = make_features(train_states), test = make_features(test_states);
  // Language 0 labels the four bump positions; language 1 only low (0, 1) versus high (2, 3).
  fw::Tensor train_y = fw::tensor(train_states), test_y = fw::tensor(test_states);
  auto label = [](const fw::Tensor& y, int64_t lang) { return lang == 0 ? y : fw::div(y, 2, "floor"); };

  fm::AcousticCnn model(fm::ModelConfig()
                            .stages(models_test::tiny_stages(8, 16, 16))
                            .languages({kStates, 2})
                            .num_fc(1)
                            .fc_dim(32));
  const auto spec = fm::ContextSpec::centered(16);
  fm::FrameSampler sampler(train_states, kStates, 0.5, /*seed=*/3);
  fw::optim::SGD opt(model->parameters(), fw::optim::SGDOptions(0.02).momentum(0.9));
  const int64_t batch = 32;
  fw::Tensor lang = fw::cat({fw::zeros({batch / 2}, fw::kLong), fw::ones({batch / 2}, fw::kLong)});
  double first_loss = 0, last_loss = 0;
  for (int step = 0; step < 250; step++) {
    fw::Tensor frames = sampler.sample(batch);
    fw::Tensor x = fm::extract_windows(train, frames, spec);
    fw::Tensor y = fw::where(lang.eq(0), train_y.index_select(0, frames), fw::div(train_y.index_select(0, frames), 2, "floor"));
    opt.zero_grad();
    fw::Tensor loss = model->multilingual_cross_entropy(x, lang, y);
    loss.backward();
    opt.step();
    (step == 0 ? first_loss : last_loss) = loss.item<double>();
  }
  EXPECT_LT(last_loss, first_loss);

  model->eval();
  fw::NoGradGuard ng;
  std::vector<int64_t> all(test_states.size());
  for (size_t i = 0; i < all.size(); i++) all[i] = int64_t(i);
  fw::Tensor x = fm::extract_windows(test, all, spec);
  for (int64_t l = 0; l < 2; l++) {
    fw::Tensor pred = model->forward(x, l).argmax(1);
    double acc = pred.eq(label(test_y, l)).to(fw::kDouble).mean().item<double>();
    EXPECT_GT(acc, 0.9) << "language " << l;
  }
}
