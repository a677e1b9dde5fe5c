// fw_asr_demo: fw::asr end to end on one language of an fw-synth-corpus directory, with
// simulated acoustic scores instead of a trained model. It builds the word graph from
// data/<lang>/{phones.txt,lexicon.txt} and train/text, turns each <split>/ali.txt alignment into
// noisy scores, decodes, scores against <split>/text and prints WER, PER and speed. The scores
// follow Bayes' rule like a network's: log posterior = log-softmax(`peak` on the aligned phone +
// Gaussian noise of stddev `noise` + log prior), log-likelihood = log posterior - log prior.
//
//   fw_asr_demo --data corpus/data/lt [--split dev] [--lm bigram|unigram|loop] [--beam 16]
//               [--acoustic-scale 0.1] [--wip 0] [--silence-prob 0.5] [--peak 8] [--noise 2]
//               [--max-active 0] [--seed 1] [--alignments] [--write-graph PATH]
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>

#include <fw/audio/kaldi_io.h>
#include <fw/ops.h>
#include <fw_asr/asr.h>

namespace {

struct Args {
  std::string data, split = "dev", lm = "bigram", write_graph;
  double beam = 16, acoustic_scale = 0.1, wip = 0, silence_prob = 0.5, peak = 8, noise = 2;
  int64_t max_active = 0;
  uint64_t seed = 1;
  bool alignments = false;
};

[[noreturn]] void usage(const char* msg) {
  std::fprintf(stderr, "fw_asr_demo: error: %s\n(see the comment at the top of examples/asr/asr_demo.cpp)\n", msg);
  std::exit(2);
}

Args parse(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; ++i) {
    std::string k = argv[i];
    if (k == "--alignments") {
      a.alignments = true;
      continue;
    }
    if (i + 1 >= argc) usage(("missing value after " + k).c_str());
    std::string v = argv[++i];
    if (k == "--data") a.data = v;
    else if (k == "--split") a.split = v;
    else if (k == "--lm") a.lm = v;
    else if (k == "--write-graph") a.write_graph = v;
    else if (k == "--beam") a.beam = std::stod(v);
    else if (k == "--acoustic-scale") a.acoustic_scale = std::stod(v);
    else if (k == "--wip") a.wip = std::stod(v);
    else if (k == "--silence-prob") a.silence_prob = std::stod(v);
    else if (k == "--peak") a.peak = std::stod(v);
    else if (k == "--noise") a.noise = std::stod(v);
    else if (k == "--max-active") a.max_active = std::stoll(v);
    else if (k == "--seed") a.seed = std::stoull(v);
    else usage(("unknown option " + k).c_str());
  }
  if (a.data.empty()) usage("--data DIR (an fw-synth-corpus data/<lang> directory) is required");
  if (a.lm != "bigram" && a.lm != "unigram" && a.lm != "loop") usage("--lm must be bigram, unigram or loop");
  return a;
}

// Simulated log-likelihoods of one utterance (see the file comment).
fw::Tensor simulate(const std::vector<int32_t>& ali, const fw::Tensor& log_prior, double peak, double noise,
                    std::mt19937_64& rng) {
  const int64_t P = log_prior.size(0);
  fw::Tensor out = fw::empty({int64_t(ali.size()), P}, fw::kFloat);
  float* d = out.data_ptr<float>();
  const float* lp = log_prior.data_ptr<float>();
  std::normal_distribution<double> gauss(0.0, noise);
  std::vector<double> z(static_cast<size_t>(P));
  for (size_t t = 0; t < ali.size(); ++t) {
    double mx = -1e300, s = 0;
    for (int64_t p = 0; p < P; ++p)
      mx = std::max(mx, z[size_t(p)] = (p == ali[t] ? peak : 0.0) + gauss(rng) + lp[p]);
    for (double v : z) s += std::exp(v - mx);
    for (int64_t p = 0; p < P; ++p) d[t * size_t(P) + size_t(p)] = float(z[size_t(p)] - mx - std::log(s) - lp[p]);
  }
  return out;
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

int main(int argc, char** argv) {
  Args a = parse(argc, argv);
  try {
    using namespace fw::asr;
    PhoneTable phones = PhoneTable::read(a.data + "/phones.txt");
    std::vector<Pronunciation> lexicon = read_lexicon(a.data + "/lexicon.txt", phones);
    std::map<std::string, std::string> train = read_text(a.data + "/train/text");
    std::map<std::string, std::string> ref = read_text(a.data + "/" + a.split + "/text");
    auto train_ali = fw::audio::kaldi_io::read_alignments(a.data + "/train/ali.txt");
    auto ali = fw::audio::kaldi_io::read_alignments(a.data + "/" + a.split + "/ali.txt");

    GraphOptions go;
    go.silence_prob = a.silence_prob;
    go.lm.type = a.lm == "bigram" ? LmOptions::Type::kBigram
                 : a.lm == "unigram" ? LmOptions::Type::kUnigram
                                     : LmOptions::Type::kWordLoop;
    DecodingGraph graph = build_word_graph(phones, lexicon, train, go);
    DecodingGraph phone_graph = build_phone_graph(phones, train_ali, go);
    std::printf("word graph:  %s\nphone graph: %s\n", graph.summary().c_str(), phone_graph.summary().c_str());
    if (!a.write_graph.empty()) graph.write_fst(a.write_graph, phones);

    DecodeOptions o;
    o.beam = a.beam;
    o.acoustic_scale = a.acoustic_scale;
    o.word_insertion_penalty = a.wip;
    o.max_active = a.max_active;
    Decoder words(graph, o), phone_loop(phone_graph, o);
    fw::Tensor log_prior = log_priors_from_alignments(train_ali, phones.size());
    std::mt19937_64 rng(a.seed);
    std::map<std::string, std::string> hyp, phone_ref, phone_hyp;
    int64_t frames = 0, tokens = 0, correct_frames = 0, partial = 0;
    double decode_s = 0, phone_s = 0;
    for (const auto& [utt, text] : ref) {
      auto it = ali.find(utt);
      if (it == ali.end()) usage(("no alignment for utterance " + utt).c_str());
      fw::Tensor ll = simulate(it->second, log_prior, a.peak, a.noise, rng);
      const float* d = ll.data_ptr<float>();
      const float* lp = log_prior.data_ptr<float>();
      for (size_t t = 0; t < it->second.size(); ++t) {  // accuracy of the posterior's argmax
        int32_t best = 0;
        for (int32_t p = 1; p < phones.size(); ++p)
          if (d[t * size_t(phones.size()) + size_t(p)] + lp[p] > d[t * size_t(phones.size()) + size_t(best)] + lp[best])
            best = p;
        correct_frames += best == it->second[t];
      }
      auto t0 = std::chrono::steady_clock::now();
      DecodeResult r = words.decode(ll);
      decode_s += seconds_since(t0);
      t0 = std::chrono::steady_clock::now();
      DecodeResult pr = phone_loop.decode(ll);
      phone_s += seconds_since(t0);
      frames += r.frames, tokens += r.tokens, partial += !r.reached_final;
      hyp[utt] = r.text();
      std::vector<std::string> names;
      for (int32_t p : collapse_alignment(it->second, phones.id(go.silence_phone))) names.push_back(phones.name(p));
      phone_ref[utt] = join_words(names);
      phone_hyp[utt] = pr.text();
    }
    CorpusScore wer = score(ref, hyp), per = score(phone_ref, phone_hyp);
    if (a.alignments) std::printf("%s", wer.report(true).c_str());
    std::printf("%s: %zu utterances, %lld frames, simulated frame accuracy %.1f%%\n", a.split.c_str(), ref.size(),
                (long long)frames, 100.0 * double(correct_frames) / double(std::max<int64_t>(frames, 1)));
    std::printf("words:  %s", format_wer(wer.total).c_str());
    std::printf("phones: %s", format_wer(per.total).c_str());
    std::printf("word decoding: %.3f s, %.0f frames/s (real-time factor %.4f at 100 frames/s), %.0f tokens/frame, "
                "%lld utterances without a final state\n",
                decode_s, double(frames) / decode_s, decode_s * 100.0 / double(frames),
                double(tokens) / double(std::max<int64_t>(frames, 1)), (long long)partial);
    std::printf("phone decoding: %.3f s, %.0f frames/s\n", phone_s, double(frames) / phone_s);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "fw_asr_demo: error: %s\n", e.what());
    return 1;
  }
  return 0;
}
