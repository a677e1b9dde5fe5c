// Shared helpers of the fw_asr tests: error capture, small lexicons, synthetic utterances.
#pragma once
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <map>
#include <random>
#include <string>
#include <vector>

#include <fw/ops.h>
#include <fw_asr/asr.h>

namespace asr_test {

// The message of the fw::Error that fn throws ("" if it throws nothing).
inline std::string error_of(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const fw::Error& e) {
    return e.what();
  }
  return "";
}

// A tiny phone set: sil = 0, then the letters a..l.
inline fw::asr::PhoneTable letter_phones(int n = 12) {
  std::vector<std::string> names{"sil"};
  for (int i = 0; i < n; ++i) names.push_back(std::string(1, char('a' + i)));
  return fw::asr::PhoneTable(names);
}

// Pronunciation from a string of letter phones ("abc" -> a b c).
inline fw::asr::Pronunciation pron(const fw::asr::PhoneTable& phones, const std::string& word,
                                   const std::string& letters) {
  fw::asr::Pronunciation p{word, {}};
  for (char c : letters) p.phones.push_back(phones.id(std::string(1, c)));
  return p;
}

// A random lexicon: `words` words named w0000.., 2..max_len phones drawn from 1..num_phones-1.
inline std::vector<fw::asr::Pronunciation> random_lexicon(int32_t num_phones, int words, int max_len,
                                                          uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<fw::asr::Pronunciation> lex;
  for (int w = 0; w < words; ++w) {
    char name[16];
    std::snprintf(name, sizeof(name), "w%04d", w);
    fw::asr::Pronunciation p{name, {}};
    int len = 2 + int(rng() % uint64_t(max_len - 1));
    for (int k = 0; k < len; ++k) p.phones.push_back(1 + int32_t(rng() % uint64_t(num_phones - 1)));
    lex.push_back(p);
  }
  return lex;
}

// Frame labels for a word sequence: leading/trailing silence, each phone 3..8 frames, a pause
// between words with probability pause_prob. Uses the first pronunciation of each word.
inline std::vector<int32_t> frames_for(const std::vector<std::string>& words,
                                       const std::vector<fw::asr::Pronunciation>& lexicon, std::mt19937_64& rng,
                                       double pause_prob = 0.3) {
  std::map<std::string, const fw::asr::Pronunciation*> first;
  for (const auto& p : lexicon) first.emplace(p.word, &p);
  std::vector<int32_t> f;
  auto run = [&](int32_t phone, int lo, int hi) {
    int n = lo + int(rng() % uint64_t(hi - lo + 1));
    f.insert(f.end(), size_t(n), phone);
  };
  run(0, 5, 15);
  for (size_t i = 0; i < words.size(); ++i) {
    for (int32_t p : first.at(words[i])->phones) run(p, 3, 8);
    if (i + 1 < words.size() && std::uniform_real_distribution<double>(0, 1)(rng) < pause_prob) run(0, 5, 20);
  }
  run(0, 5, 15);
  return f;
}

// (T, P) log-likelihoods for frame labels: log-softmax of (peak on the true class + Gaussian
// noise of stddev `noise`) minus a uniform prior.
inline fw::Tensor loglikes_for(const std::vector<int32_t>& frames, int32_t num_phones, double peak, double noise,
                               std::mt19937_64& rng) {
  fw::Tensor t = fw::empty({int64_t(frames.size()), num_phones}, fw::kFloat);
  float* d = t.data_ptr<float>();
  std::normal_distribution<double> gauss(0.0, 1.0);
  std::vector<double> z(static_cast<size_t>(num_phones));
  for (size_t i = 0; i < frames.size(); ++i) {
    double mx = -1e30;
    for (int32_t p = 0; p < num_phones; ++p) {
      z[size_t(p)] = (p == frames[i] ? peak : 0.0) + noise * gauss(rng);
      mx = std::max(mx, z[size_t(p)]);
    }
    double s = 0;
    for (double v : z) s += std::exp(v - mx);
    for (int32_t p = 0; p < num_phones; ++p)
      d[i * size_t(num_phones) + size_t(p)] = float(z[size_t(p)] - mx - std::log(s) + std::log(double(num_phones)));
  }
  return t;
}

// Decoder options for the synthetic log-likelihoods above: their peak (a few nats per frame) is
// smaller than a trained network's, so the acoustic scale is 1 instead of Kaldi's usual 0.1.
inline fw::asr::DecodeOptions test_options() {
  fw::asr::DecodeOptions o;
  o.acoustic_scale = 1.0;
  return o;
}

// Random sentences over the lexicon's words (Zipf-like: weight 1 / (rank + 1)).
inline std::map<std::string, std::string> random_text(const std::vector<std::string>& vocab, int sentences,
                                                      int min_words, int max_words, uint64_t seed,
                                                      const std::string& prefix = "utt") {
  std::mt19937_64 rng(seed);
  std::vector<double> w;
  for (size_t i = 0; i < vocab.size(); ++i) w.push_back(1.0 / double(i + 1));
  std::discrete_distribution<size_t> pick(w.begin(), w.end());
  std::map<std::string, std::string> out;
  for (int s = 0; s < sentences; ++s) {
    int n = min_words + int(rng() % uint64_t(max_words - min_words + 1));
    std::vector<std::string> words;
    for (int k = 0; k < n; ++k) words.push_back(vocab[pick(rng)]);
    char id[32];
    std::snprintf(id, sizeof(id), "%s%05d", prefix.c_str(), s);
    out[id] = fw::asr::join_words(words);
  }
  return out;
}

}  // namespace asr_test
