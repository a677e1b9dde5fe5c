// fw::asr::Decoder: synthetic utterances built from the lexicon are decoded back to their words;
// the search agrees with an unpruned Viterbi; beam, max_active and insertion penalty behave;
// frame alignments, cost split, phone graphs, thread safety, errors and a speed report.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <thread>

#include "tests/asr/helpers.h"

using namespace fw::asr;
using asr_test::error_of;

namespace {

// Unpruned reference Viterbi over the same search space as the decoder (Note [Search space] in
// examples/asr/decoder.cpp), written densely: every emitting arc and every state every frame.
double reference_viterbi(const DecodingGraph& g, const fw::Tensor& ll, const DecodeOptions& o) {
  const double inf = std::numeric_limits<double>::infinity();
  const auto& emit = g.emitting_arcs();
  const auto& eps = g.epsilon_arcs();
  const int32_t S = g.num_states();
  const double loop = -std::log(o.self_loop_prob), exit = -std::log(1 - o.self_loop_prob);
  auto closure = [&](std::vector<double>& st) {
    for (bool changed = true; changed;) {
      changed = false;
      for (int32_t s = 0; s < S; ++s) {
        if (st[size_t(s)] == inf) continue;
        for (int64_t k = g.eps_begin(s); k < g.eps_begin(s + 1); ++k) {
          const auto& a = eps[size_t(k)];
          double c = st[size_t(s)] + a.cost + (a.word ? o.word_insertion_penalty : 0.0);
          if (c < st[size_t(a.dest)] - 1e-12) st[size_t(a.dest)] = c, changed = true;
        }
      }
    }
  };
  std::vector<double> st(size_t(S), inf), em(emit.size(), inf);
  st[size_t(g.start())] = 0;
  closure(st);
  const float* d = ll.data_ptr<float>();
  const int64_t P = ll.size(1);
  for (int64_t t = 0; t < ll.size(0); ++t) {
    std::vector<double> ne(emit.size(), inf);
    for (size_t k = 0; k < emit.size(); ++k) ne[k] = em[k] + loop;
    for (int32_t s = 0; s < S; ++s) {
      if (st[size_t(s)] == inf) continue;
      for (int64_t k = g.emit_begin(s); k < g.emit_begin(s + 1); ++k) {
        const auto& a = emit[size_t(k)];
        ne[size_t(k)] = std::min(ne[size_t(k)], st[size_t(s)] + a.cost + (a.word ? o.word_insertion_penalty : 0.0));
      }
    }
    for (size_t k = 0; k < emit.size(); ++k) ne[k] += -o.acoustic_scale * d[t * P + emit[k].phone];
    em = ne;
    std::fill(st.begin(), st.end(), inf);
    for (size_t k = 0; k < emit.size(); ++k)
      st[size_t(emit[k].dest)] = std::min(st[size_t(emit[k].dest)], em[k] + exit);
    closure(st);
  }
  double best = inf;
  for (int32_t s = 0; s < S; ++s) best = std::min(best, st[size_t(s)] + g.final_cost(s));
  return best;
}

// A lexicon that needs disambiguation: homophones (two/too/to), a pronunciation that is a
// prefix of another (ab / abc), a word with two pronunciations (either).
std::vector<Pronunciation> toy_lexicon(const PhoneTable& ph) {
  auto p = [&](const char* w, const char* l) { return asr_test::pron(ph, w, l); };
  return {p("ab", "ab"),     p("abc", "abc"),   p("cab", "cab"),   p("two", "fg"), p("too", "fg"),
          p("to", "fg"),     p("either", "ije"), p("either", "aje"), p("deed", "did"), p("bead", "bid"),
          p("hello", "hel"), p("lie", "li"),    p("kill", "kil"),  p("lick", "lik")};
}

struct RandomSetup {
  PhoneTable phones;
  std::vector<Pronunciation> lexicon;
  std::vector<std::string> vocab;
  std::map<std::string, std::string> train;
  DecodingGraph graph;
  RandomSetup(int num_words, int train_sentences, uint64_t seed, GraphOptions go = {}) {
    std::vector<std::string> names{"sil"};
    for (int i = 1; i < 40; ++i) names.push_back("p" + std::to_string(i));
    phones = PhoneTable(names);
    lexicon = asr_test::random_lexicon(phones.size(), num_words, 7, seed);
    vocab = lexicon_words(lexicon);
    train = asr_test::random_text(vocab, train_sentences, 3, 10, seed + 1);
    graph = build_word_graph(phones, lexicon, train, go);
  }
};

}  // namespace

TEST(AsrDecoder, RecoversWordsFromPeakedPosteriors) {
  RandomSetup r(300, 400, 7);
  std::map<std::string, std::string> test = asr_test::random_text(r.vocab, 12, 2, 9, 99, "test");
  std::mt19937_64 rng(5);
  Decoder dec(r.graph, asr_test::test_options());
  std::map<std::string, std::string> hyp;
  for (const auto& [utt, text] : test) {
    std::vector<int32_t> frames = asr_test::frames_for(split_words(text), r.lexicon, rng);
    fw::Tensor ll = asr_test::loglikes_for(frames, r.phones.size(), 5.0, 1.0, rng);
    DecodeResult res = dec.decode(ll);
    EXPECT_TRUE(res.reached_final);
    EXPECT_EQ(res.frames, int64_t(frames.size()));
    hyp[utt] = res.text();
  }
  CorpusScore sc = score(test, hyp);
  EXPECT_EQ(sc.total.errors(), 0) << sc.report();
  EXPECT_GT(sc.total.ref_words, 40);
}

TEST(AsrDecoder, ToyLexiconWithHomophonesAndPrefixes) {
  PhoneTable ph = asr_test::letter_phones();
  std::vector<Pronunciation> lex = toy_lexicon(ph);
  std::map<std::string, std::string> train{{"a", "ab two abc"}, {"b", "cab too deed"}, {"c", "either to bead"},
                                           {"d", "hello lie kill lick"}};
  DecodingGraph g = build_word_graph(ph, lex, train);
  EXPECT_GE(g.info().disambig_symbols, 3);  // fg three times; ab is a prefix of abc
  Decoder dec(g, asr_test::test_options());
  std::mt19937_64 rng(3);
  for (const std::string& s : std::vector<std::string>{"ab two abc", "cab too deed", "either to bead",
                                                       "hello lie kill lick", "abc ab", "either either"}) {
    std::vector<int32_t> frames = asr_test::frames_for(split_words(s), lex, rng, 0.5);
    DecodeResult res = dec.decode(asr_test::loglikes_for(frames, ph.size(), 6.0, 0.5, rng));
    EXPECT_EQ(res.text(), s);
  }
}

TEST(AsrDecoder, GrammarPicksAmongHomophones) {
  PhoneTable ph = asr_test::letter_phones();
  std::vector<Pronunciation> lex = toy_lexicon(ph);
  std::mt19937_64 rng(11);
  std::vector<int32_t> frames = asr_test::frames_for({"ab", "two"}, lex, rng, 0.0);
  fw::Tensor ll = asr_test::loglikes_for(frames, ph.size(), 6.0, 0.3, rng);
  for (const char* w : {"two", "too", "to"}) {
    std::map<std::string, std::string> train{{"u1", std::string("ab ") + w}, {"u2", std::string("ab ") + w}};
    DecodingGraph g = build_word_graph(ph, lex, train);
    EXPECT_EQ(Decoder(g, asr_test::test_options()).decode(ll).text(), std::string("ab ") + w);
  }
}

TEST(AsrDecoder, UnprunedSearchMatchesReferenceViterbi) {
  PhoneTable ph = asr_test::letter_phones();
  std::vector<Pronunciation> lex = toy_lexicon(ph);
  std::map<std::string, std::string> train{{"a", "ab two abc"}, {"b", "cab too deed lie"}};
  std::mt19937_64 rng(17);
  using T = LmOptions::Type;
  for (auto [type, push] : std::vector<std::pair<T, bool>>{
           {T::kWordLoop, true}, {T::kUnigram, false}, {T::kBigram, true}, {T::kBigram, false}}) {
    GraphOptions go;
    go.lm.type = type;
    go.push_weights = push;
    DecodingGraph g = build_word_graph(ph, lex, train, go);
    for (int trial = 0; trial < 3; ++trial) {
      std::vector<int32_t> frames = asr_test::frames_for({"cab", "lie", "abc"}, lex, rng);
      fw::Tensor ll = asr_test::loglikes_for(frames, ph.size(), 2.0, 1.5, rng);  // ambiguous
      DecodeOptions o = asr_test::test_options();
      o.beam = 1e9;
      o.word_insertion_penalty = 0.5 * trial;
      DecodeResult res = Decoder(g, o).decode(ll);
      EXPECT_NEAR(res.cost, reference_viterbi(g, ll, o), 1e-6 * std::max(1.0, std::abs(res.cost)));
    }
  }
}

TEST(AsrDecoder, BeamTradesAccuracyForWork) {
  RandomSetup r(300, 400, 21);
  std::mt19937_64 rng(8);
  std::vector<std::string> words = split_words(r.train.begin()->second);
  std::vector<int32_t> frames = asr_test::frames_for(words, r.lexicon, rng);
  fw::Tensor ll = asr_test::loglikes_for(frames, r.phones.size(), 2.5, 1.5, rng);
  double prev_cost = std::numeric_limits<double>::infinity();
  int64_t prev_tokens = 0;
  for (double beam : {2.0, 5.0, 10.0, 20.0, 1e9}) {
    DecodeOptions o = asr_test::test_options();
    o.beam = beam;
    DecodeResult res = Decoder(r.graph, o).decode(ll);
    EXPECT_LE(res.cost, prev_cost + 1e-6) << "beam " << beam;  // a wider beam never finds a worse path
    EXPECT_GE(res.tokens, prev_tokens) << "beam " << beam;
    prev_cost = res.cost, prev_tokens = res.tokens;
  }
  DecodeOptions wide = asr_test::test_options();
  wide.beam = 1e9;
  EXPECT_NEAR(prev_cost, reference_viterbi(r.graph, ll, wide), 1e-6 * std::abs(prev_cost));
  DecodeOptions capped = asr_test::test_options();
  capped.beam = 1e9;
  capped.max_active = 50;
  DecodeResult c = Decoder(r.graph, capped).decode(ll);
  EXPECT_LE(c.tokens, 50 * c.frames + c.frames);  // ties at the cutoff may keep a few more
}

TEST(AsrDecoder, WordInsertionPenaltyControlsWordCount) {
  PhoneTable ph = asr_test::letter_phones();
  std::vector<Pronunciation> lex = toy_lexicon(ph);
  GraphOptions go;
  go.lm.type = LmOptions::Type::kWordLoop;
  DecodingGraph g = build_word_graph(ph, lex, {}, go);
  std::mt19937_64 rng(4);
  std::vector<int32_t> frames = asr_test::frames_for({"hello", "lie", "kill", "abc", "deed"}, lex, rng, 0.0);
  fw::Tensor ll = asr_test::loglikes_for(frames, ph.size(), 1.0, 1.0, rng);  // weak acoustics
  size_t prev = size_t(-1);
  std::vector<size_t> counts;
  for (double wip : {-20.0, -2.0, 0.0, 2.0, 20.0}) {
    DecodeOptions o = asr_test::test_options();
    o.word_insertion_penalty = wip;
    o.acoustic_scale = 1.0;
    size_t n = Decoder(g, o).decode(ll).words.size();
    EXPECT_LE(n, prev) << "penalty " << wip;
    counts.push_back(n);
    prev = n;
  }
  EXPECT_GT(counts.front(), counts.back());
  EXPECT_GT(counts.front(), 5u);  // a large bonus inserts words
  EXPECT_LE(counts.back(), 2u);   // a large penalty keeps as few as the frames allow
}

TEST(AsrDecoder, SilenceProbabilityShapesPauses) {
  PhoneTable ph = asr_test::letter_phones();
  std::vector<Pronunciation> lex = toy_lexicon(ph);
  std::map<std::string, std::string> train{{"a", "ab cab"}};
  std::mt19937_64 rng(9);
  std::vector<int32_t> frames = asr_test::frames_for({"ab", "cab"}, lex, rng, 1.0);  // a pause between
  fw::Tensor ll = asr_test::loglikes_for(frames, ph.size(), 6.0, 0.3, rng);
  GraphOptions with, without;
  with.silence_prob = 0.5;
  without.silence_prob = 0.0;
  DecodeResult a = Decoder(build_word_graph(ph, lex, train, with), asr_test::test_options()).decode(ll);
  EXPECT_EQ(a.text(), "ab cab");
  // Without optional silence the sil frames must be explained by word phones: a worse path.
  DecodeResult b = Decoder(build_word_graph(ph, lex, train, without), asr_test::test_options()).decode(ll);
  EXPECT_GT(b.cost, a.cost + 5);
}

TEST(AsrDecoder, FrameAlignmentAndCostSplit) {
  RandomSetup r(100, 200, 31);
  std::mt19937_64 rng(2);
  std::vector<int32_t> frames = asr_test::frames_for(split_words(r.train.begin()->second), r.lexicon, rng);
  fw::Tensor ll = asr_test::loglikes_for(frames, r.phones.size(), 6.0, 0.5, rng);
  DecodeOptions o = asr_test::test_options();
  o.frame_alignment = true;
  DecodeResult res = Decoder(r.graph, o).decode(ll);
  EXPECT_EQ(res.text(), r.train.begin()->second);
  ASSERT_EQ(res.alignment.size(), frames.size());
  EXPECT_EQ(res.alignment, frames);
  double ac = 0;
  for (size_t t = 0; t < frames.size(); ++t)
    ac += -o.acoustic_scale * ll.data_ptr<float>()[t * size_t(r.phones.size()) + size_t(res.alignment[t])];
  EXPECT_NEAR(res.acoustic_cost, ac, 1e-4);
  EXPECT_NEAR(res.cost, res.acoustic_cost + res.graph_cost, 1e-9);
  EXPECT_GT(res.graph_cost, 0);
}

TEST(AsrDecoder, EmptyAndSilentUtterances) {
  PhoneTable ph = asr_test::letter_phones();
  std::vector<Pronunciation> lex = toy_lexicon(ph);
  DecodingGraph g = build_word_graph(ph, lex, {{"a", "ab two"}});
  Decoder dec(g, asr_test::test_options());
  DecodeResult none = dec.decode(fw::empty({0, ph.size()}, fw::kFloat));
  EXPECT_TRUE(none.words.empty());
  EXPECT_TRUE(none.reached_final);
  std::mt19937_64 rng(1);
  DecodeResult quiet = dec.decode(asr_test::loglikes_for(std::vector<int32_t>(40, 0), ph.size(), 6.0, 0.3, rng));
  EXPECT_TRUE(quiet.words.empty());
  EXPECT_TRUE(quiet.reached_final);
  // One frame cannot hold a word of two phones: only silence fits.
  DecodeResult one = dec.decode(asr_test::loglikes_for({ph.id("a")}, ph.size(), 6.0, 0.3, rng));
  EXPECT_TRUE(one.words.empty());
}

TEST(AsrDecoder, PartialPathWhenNoFinalStateIsReached) {
  PhoneTable ph = asr_test::letter_phones();
  GraphOptions go;
  go.silence_prob = 0;
  // The only word has four phones; three frames cannot end it.
  DecodingGraph g = build_word_graph(ph, {asr_test::pron(ph, "abcd", "abcd")}, {}, go);
  std::mt19937_64 rng(1);
  fw::Tensor ll = asr_test::loglikes_for({1, 2, 3}, ph.size(), 6.0, 0.1, rng);
  DecodeResult part = Decoder(g, asr_test::test_options()).decode(ll);
  EXPECT_FALSE(part.reached_final);
  EXPECT_EQ(part.text(), "abcd");  // the word was entered, so it is on the partial path
  DecodeOptions strict = asr_test::test_options();
  strict.allow_partial = false;
  EXPECT_NE(error_of([&] { Decoder(g, strict).decode(ll); }).find("no final state reached after 3 frames"),
            std::string::npos);
}

TEST(AsrDecoder, PhoneGraphGivesPhoneSequences) {
  RandomSetup r(100, 10, 41);
  std::mt19937_64 rng(6);
  std::map<std::string, std::vector<int32_t>> train_ali;
  for (const auto& [utt, text] : r.train) train_ali[utt] = asr_test::frames_for(split_words(text), r.lexicon, rng);
  DecodingGraph g = build_phone_graph(r.phones, train_ali);
  EXPECT_EQ(g.num_words(), r.phones.size() - 1);
  EXPECT_EQ(g.word(1), "p1");
  Decoder dec(g, asr_test::test_options());
  std::map<std::string, std::string> ref, hyp;
  for (const auto& [utt, text] : asr_test::random_text(r.vocab, 5, 3, 8, 77, "t")) {
    std::vector<int32_t> frames = asr_test::frames_for(split_words(text), r.lexicon, rng);
    DecodeResult res = dec.decode(asr_test::loglikes_for(frames, r.phones.size(), 5.0, 0.8, rng));
    std::vector<std::string> names;
    for (int32_t p : collapse_alignment(frames, 0)) names.push_back(r.phones.name(p));
    ref[utt] = join_words(names);
    hyp[utt] = res.text();
  }
  CorpusScore sc = score(ref, hyp);
  EXPECT_EQ(sc.total.errors(), 0) << sc.report();
  // A plain phone loop needs no alignments.
  GraphOptions loop;
  loop.lm.type = LmOptions::Type::kWordLoop;
  EXPECT_EQ(build_phone_graph(r.phones, {}, loop).num_words(), r.phones.size() - 1);
}

TEST(AsrDecoder, ConcurrentDecodesAgree) {
  RandomSetup r(200, 300, 51);
  std::mt19937_64 rng(12);
  std::vector<fw::Tensor> utts;
  for (const auto& [utt, text] : asr_test::random_text(r.vocab, 8, 3, 8, 5, "c"))
    utts.push_back(asr_test::loglikes_for(asr_test::frames_for(split_words(text), r.lexicon, rng),
                                          r.phones.size(), 3.0, 1.0, rng));
  Decoder dec(r.graph, asr_test::test_options());
  std::vector<std::string> serial, a(utts.size()), b(utts.size());
  for (const auto& u : utts) serial.push_back(dec.decode(u).text());
  std::thread t1([&] { for (size_t i = 0; i < utts.size(); ++i) a[i] = dec.decode(utts[i]).text(); });
  std::thread t2([&] { for (size_t i = utts.size(); i-- > 0;) b[i] = dec.decode(utts[i]).text(); });
  t1.join();
  t2.join();
  EXPECT_EQ(a, serial);
  EXPECT_EQ(b, serial);
}

TEST(AsrDecoder, AcceptsDoubleTensorsAndRawArrays) {
  PhoneTable ph = asr_test::letter_phones();
  std::vector<Pronunciation> lex = toy_lexicon(ph);
  DecodingGraph g = build_word_graph(ph, lex, {{"a", "cab lie"}});
  std::mt19937_64 rng(1);
  fw::Tensor ll = asr_test::loglikes_for(asr_test::frames_for({"cab", "lie"}, lex, rng), ph.size(), 6.0, 0.3, rng);
  Decoder dec(g, asr_test::test_options());
  EXPECT_EQ(dec.decode(ll.to(fw::kDouble)).text(), "cab lie");
  EXPECT_EQ(dec.decode(ll.data_ptr<float>(), ll.size(0), ll.size(1)).text(), "cab lie");
}

TEST(AsrDecoder, ErrorsNameTheValues) {
  PhoneTable ph = asr_test::letter_phones();
  DecodingGraph g = build_word_graph(ph, toy_lexicon(ph), {{"a", "ab"}});
  Decoder dec(g, asr_test::test_options());
  EXPECT_NE(error_of([&] { dec.decode(fw::zeros({5, 7})); }).find("loglikes has 7 columns but the graph has 13 phones"),
            std::string::npos);
  EXPECT_NE(error_of([&] { dec.decode(fw::zeros({13})); }).find("must be (frames, num_phones), got 1 dims"),
            std::string::npos);
  fw::Tensor bad = fw::zeros({4, 13});
  bad.data_ptr<float>()[2 * 13 + 5] = std::nanf("");
  EXPECT_NE(error_of([&] { dec.decode(bad); }).find("loglikes[2, 5] is nan"), std::string::npos);
  bad.data_ptr<float>()[2 * 13 + 5] = std::numeric_limits<float>::infinity();
  EXPECT_NE(error_of([&] { dec.decode(bad); }).find("loglikes[2, 5] is inf"), std::string::npos);
  fw::Tensor dead = fw::full({3, 13}, -std::numeric_limits<float>::infinity());
  EXPECT_NE(error_of([&] { dec.decode(dead); }).find("no path survives frame 0"), std::string::npos);
  auto opt_error = [&](auto set) {
    DecodeOptions o = asr_test::test_options();
    set(o);
    return error_of([&] { Decoder d(g, o); });
  };
  EXPECT_NE(opt_error([](DecodeOptions& o) { o.beam = 0; }).find("beam must be > 0, got 0"), std::string::npos);
  EXPECT_NE(opt_error([](DecodeOptions& o) { o.self_loop_prob = 1; }).find("self_loop_prob must be in (0, 1), got 1"),
            std::string::npos);
  EXPECT_NE(opt_error([](DecodeOptions& o) { o.acoustic_scale = -1; }).find("acoustic_scale must be finite and > 0"),
            std::string::npos);
  EXPECT_NE(opt_error([](DecodeOptions& o) { o.max_active = -3; }).find("max_active must be >= 0"), std::string::npos);
}

TEST(AsrDecoder, LogPriorsFromAlignments) {
  fw::Tensor lp = log_priors_from_alignments({{"a", {0, 0, 1}}, {"b", {0, 2}}}, 4, 1.0);
  ASSERT_EQ(lp.size(0), 4);
  const float* p = lp.data_ptr<float>();
  EXPECT_NEAR(p[0], std::log(4.0 / 9.0), 1e-6);
  EXPECT_NEAR(p[3], std::log(1.0 / 9.0), 1e-6);
  EXPECT_NE(error_of([] { log_priors_from_alignments({{"u7", {0, 9}}}, 4); })
                .find("utterance 'u7' frame 1 has class 9, outside [0, 4)"),
            std::string::npos);
}

// Speed on a corpus-sized task: 2000 words (fw-synth-corpus's default --vocab-size), bigram from
// 2000 sentences, 40 phones; printed for the README, loosely checked against real time.
TEST(AsrDecoder, SpeedReport) {
  auto t0 = std::chrono::steady_clock::now();
  RandomSetup r(2000, 2000, 61);
  double build_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf("[speed] graph: %s (%.2f s with LM estimation)\n", r.graph.summary().c_str(), build_s);
  std::mt19937_64 rng(13);
  std::map<std::string, std::string> test = asr_test::random_text(r.vocab, 10, 4, 10, 1234, "s");
  std::vector<fw::Tensor> lls;
  int64_t frames = 0;
  for (const auto& [utt, text] : test) {
    std::vector<int32_t> f = asr_test::frames_for(split_words(text), r.lexicon, rng);
    frames += int64_t(f.size());
    lls.push_back(asr_test::loglikes_for(f, r.phones.size(), 3.0, 1.0, rng));
  }
  for (double beam : {8.0, 12.0, 16.0}) {
    DecodeOptions o = asr_test::test_options();
    o.beam = beam;
    Decoder dec(r.graph, o);
    std::map<std::string, std::string> hyp;
    int64_t tokens = 0;
    auto t1 = std::chrono::steady_clock::now();
    size_t i = 0;
    for (const auto& [utt, text] : test) {
      DecodeResult res = dec.decode(lls[i++]);
      hyp[utt] = res.text();
      tokens += res.tokens;
    }
    double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t1).count();
    CorpusScore sc = score(test, hyp);
    std::printf("[speed] beam %4.1f: %lld frames in %.3f s = %.0f frames/s (RTF %.4f at 100 frames/s), "
                "%.0f tokens/frame, WER %.2f%%\n",
                beam, (long long)frames, s, double(frames) / s, s / (double(frames) / 100.0),
                double(tokens) / double(frames), 100 * sc.total.wer());
    EXPECT_LT(s / (double(frames) / 100.0), 1.0);  // faster than real time
  }
}

// A long utterance with a wide beam creates ~1.2M word links; the arena is compacted ~18 times
// (Note [Word link garbage collection]) and the words must come out intact.
TEST(AsrDecoder, LongUtteranceWithWideBeam) {
  RandomSetup r(300, 400, 71);
  std::mt19937_64 rng(15);
  std::vector<std::string> words;
  for (const auto& [utt, text] : asr_test::random_text(r.vocab, 30, 5, 10, 3, "l")) {
    std::vector<std::string> w = split_words(text);
    words.insert(words.end(), w.begin(), w.end());
  }
  std::vector<int32_t> frames = asr_test::frames_for(words, r.lexicon, rng);
  fw::Tensor ll = asr_test::loglikes_for(frames, r.phones.size(), 6.0, 1.0, rng);
  DecodeOptions o = asr_test::test_options();
  o.beam = 40;
  DecodeResult res = Decoder(r.graph, o).decode(ll);
  EXPECT_GT(res.frames, 5000);
  EXPECT_GT(res.tokens / res.frames, 1000);
  EXPECT_EQ(res.text(), join_words(words));
  EXPECT_NEAR(res.cost, reference_viterbi(r.graph, ll, o), 1e-6 * std::abs(res.cost));
}
