// fw::asr graphs and readers: corpus files, errors naming the offending values, disambiguation
// symbols, determinism, path costs equal to the hand-computed lexicon + grammar probabilities,
// OpenFst output.
#include <cstdio>
#include <fstream>
#include <set>

#include <unistd.h>

#include "tests/asr/helpers.h"

using namespace fw::asr;
using asr_test::error_of;

namespace {

// Files written by write_file, removed when the test program exits.
struct TempFiles {
  std::set<std::string> paths;
  ~TempFiles() {
    for (const std::string& p : paths) std::remove(p.c_str());
  }
} temp_files;

std::string write_file(const std::string& name, const std::string& text) {
  std::string path = testing::TempDir() + "/fw_asr_" + std::to_string(getpid()) + "_" + name;
  std::ofstream(path, std::ios::binary) << text;
  temp_files.paths.insert(path);
  return path;
}

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

// Minimum cost of reading `phones` through the graph from the start state to a final state
// (epsilon arcs allowed anywhere), with the words of that path: the graph's weight for a phone
// sequence, without the decoder's HMM.
std::pair<double, std::vector<std::string>> path_cost(const DecodingGraph& g, const std::vector<int32_t>& phones) {
  const double inf = std::numeric_limits<double>::infinity();
  struct Hyp {
    double cost = std::numeric_limits<double>::infinity();
    std::vector<std::string> words;
  };
  std::vector<Hyp> cur(size_t(g.num_states()));
  auto closure = [&](std::vector<Hyp>& h) {
    for (bool changed = true; changed;) {
      changed = false;
      for (int32_t s = 0; s < g.num_states(); ++s) {
        if (h[size_t(s)].cost == inf) continue;
        for (int64_t k = g.eps_begin(s); k < g.eps_begin(s + 1); ++k) {
          const auto& a = g.epsilon_arcs()[size_t(k)];
          double c = h[size_t(s)].cost + a.cost;
          if (c < h[size_t(a.dest)].cost - 1e-9) {
            h[size_t(a.dest)].cost = c;
            h[size_t(a.dest)].words = h[size_t(s)].words;
            if (a.word) h[size_t(a.dest)].words.push_back(g.word(a.word));
            changed = true;
          }
        }
      }
    }
  };
  cur[size_t(g.start())].cost = 0;
  closure(cur);
  for (int32_t p : phones) {
    std::vector<Hyp> next(cur.size());
    for (int32_t s = 0; s < g.num_states(); ++s) {
      if (cur[size_t(s)].cost == inf) continue;
      for (int64_t k = g.emit_begin(s); k < g.emit_begin(s + 1); ++k) {
        const auto& a = g.emitting_arcs()[size_t(k)];
        if (a.phone != p) continue;
        double c = cur[size_t(s)].cost + a.cost;
        if (c < next[size_t(a.dest)].cost) {
          next[size_t(a.dest)].cost = c;
          next[size_t(a.dest)].words = cur[size_t(s)].words;
          if (a.word) next[size_t(a.dest)].words.push_back(g.word(a.word));
        }
      }
    }
    closure(next);
    cur = std::move(next);
  }
  std::pair<double, std::vector<std::string>> best{inf, {}};
  for (int32_t s = 0; s < g.num_states(); ++s) {
    double c = cur[size_t(s)].cost + g.final_cost(s);
    if (c < best.first) best = {c, cur[size_t(s)].words};
  }
  return best;
}

std::vector<int32_t> spell(const PhoneTable& ph, const std::string& letters) {
  std::vector<int32_t> out;
  for (char c : letters) out.push_back(c == '_' ? 0 : ph.id(std::string(1, c)));
  return out;
}

}  // namespace

TEST(AsrGraph, ReadsCorpusFiles) {
  // fw-synth-corpus style: sil = 0, eSpeak mnemonics with punctuation, ids in any order.
  std::string phones = write_file("phones.txt", "sil 0\n; 1\n@- 3\na 2\n\nn; 4\n");
  std::string lexicon = write_file("lexicon.txt", "aguona a ; @- n; a\naguona a ; @- n; a\naguona a n;\nčia ; a\n");
  PhoneTable ph = PhoneTable::read(phones);
  EXPECT_EQ(ph.size(), 5);
  EXPECT_EQ(ph.id("@-"), 3);
  EXPECT_EQ(ph.name(4), "n;");
  std::vector<Pronunciation> lex = read_lexicon(lexicon, ph);
  ASSERT_EQ(lex.size(), 3u);  // the duplicate line is dropped, the second pronunciation kept
  EXPECT_EQ(lex[0], (Pronunciation{"aguona", {2, 1, 3, 4, 2}}));
  EXPECT_EQ(lex[2].word, "čia");
  EXPECT_EQ(lexicon_words(lex), (std::vector<std::string>{"aguona", "čia"}));
}

TEST(AsrGraph, ReaderErrorsNameTheLine) {
  auto phone_error = [](const std::string& text) {
    return error_of([&] { PhoneTable::read(write_file("bad_phones.txt", text)); });
  };
  EXPECT_TRUE(contains(phone_error("sil 0\na 2\n"), "ids must be 0..2 without gaps, but id 1 is missing"));
  EXPECT_TRUE(contains(phone_error("<eps> 0\nsil 1\n"), ":1: '<eps>' found; fw::asr expects dense 0-based"));
  EXPECT_TRUE(contains(phone_error("sil 0\na 0\n"), ":2: id 0 used twice ('sil' and 'a')"));
  EXPECT_TRUE(contains(phone_error("sil 0\nsil 1\n"), "phone 'sil' appears twice (ids 0 and 1)"));
  EXPECT_TRUE(contains(phone_error("sil x\n"), ":1: bad phone id 'x'"));
  EXPECT_TRUE(contains(phone_error("sil 0 1\n"), ":1: expected '<phone> <id>', got 'sil 0 1'"));
  EXPECT_TRUE(contains(phone_error(""), "has no phones"));
  EXPECT_TRUE(contains(error_of([] { PhoneTable::read("/nonexistent/phones.txt"); }),
                       "[fw::asr::PhoneTable::read] cannot open '/nonexistent/phones.txt'"));
  PhoneTable ph = asr_test::letter_phones();
  EXPECT_TRUE(contains(error_of([&] { read_lexicon(write_file("bad_lex.txt", "ab a b\ncd c x\n"), ph); }),
                       ":2: phone 'x' of word 'cd' is not in the phone table (13 phones)"));
  EXPECT_TRUE(contains(error_of([&] { read_lexicon(write_file("bad_lex.txt", "ab a b\nlonely\n"), ph); }),
                       ":2: word 'lonely' has no phones"));
  EXPECT_TRUE(contains(error_of([&] { ph.id("zz"); }), "unknown phone 'zz'"));
  EXPECT_TRUE(contains(error_of([&] { ph.name(13); }), "id 13 out of range [0, 13)"));
}

TEST(AsrGraph, TrainingWordMissingFromLexiconIsNamed) {
  PhoneTable ph = asr_test::letter_phones();
  std::vector<Pronunciation> lex{asr_test::pron(ph, "ab", "ab"), asr_test::pron(ph, "cab", "cab")};
  std::map<std::string, std::string> text{{"u1", "ab cab"}, {"u2", "ab zzz cab yyy"}, {"u3", "zzz"}};
  std::string e = error_of([&] { build_word_graph(ph, lex, text); });
  EXPECT_TRUE(contains(e, "[fw::asr::build_word_graph] word 'zzz' of training utterance 'u2' is not in the lexicon "
                          "(2 distinct missing words: 'zzz', 'yyy')"))
      << e;
}

TEST(AsrGraph, BadInputsAreErrors) {
  PhoneTable ph = asr_test::letter_phones();
  std::vector<Pronunciation> lex{asr_test::pron(ph, "ab", "ab")};
  auto with = [&](auto set) {
    GraphOptions o;
    set(o);
    return error_of([&] { build_word_graph(ph, lex, {{"u", "ab"}}, o); });
  };
  EXPECT_TRUE(contains(with([](GraphOptions& o) { o.silence_prob = 1; }), "silence_prob must be in [0, 1), got 1"));
  EXPECT_TRUE(contains(with([](GraphOptions& o) { o.lm.discount = 0; }), "lm.discount must be in (0, 1), got 0"));
  EXPECT_TRUE(contains(with([](GraphOptions& o) { o.lm.add_k = -1; }), "lm.add_k must be >= 0, got -1"));
  EXPECT_TRUE(contains(with([](GraphOptions& o) { o.silence_phone = "SIL"; }),
                       "silence phone 'SIL' is not in the phone table"));
  EXPECT_EQ(with([](GraphOptions& o) { o.silence_phone = "SIL", o.silence_prob = 0; }), "");
  EXPECT_EQ(with([](GraphOptions& o) { o.lm.add_k = 0; }), "");  // the bigram has its training text
  EXPECT_TRUE(contains(error_of([&] { build_word_graph(ph, {}, {}); }), "the lexicon is empty"));
  EXPECT_TRUE(contains(error_of([&] { build_word_graph(ph, {{"#0", {1}}}, {}); }),
                       "lexicon word '#0' is a reserved symbol"));
  EXPECT_TRUE(contains(error_of([&] { build_word_graph(ph, {{"x", {}}}, {}); }), "lexicon word 'x' has no phones"));
  EXPECT_TRUE(contains(error_of([&] { build_word_graph(ph, {{"x", {1, 40}}}, {}); }),
                       "lexicon word 'x' has phone id 40, outside the phone table [0, 13)"));
  GraphOptions uni;
  uni.lm.type = LmOptions::Type::kUnigram;
  uni.lm.add_k = 0;
  EXPECT_TRUE(contains(error_of([&] { build_word_graph(ph, lex, {}, uni); }),
                       "a unigram or bigram grammar needs training text or add_k > 0"));
  EXPECT_TRUE(contains(error_of([&] { build_phone_graph(ph, {{"u1", {0, 1, 99}}}); }),
                       "alignment of utterance 'u1' has phone id 99, outside the phone table [0, 13)"));
  EXPECT_TRUE(contains(error_of([&] { build_phone_graph(PhoneTable({"sil"}), {}); }),
                       "the phone table has no phone besides silence"));
}

TEST(AsrGraph, DecodingGraphValidatesArcs) {
  using A = DecodingGraph::Arc;
  std::vector<std::string> words{"<eps>", "w"};
  EXPECT_TRUE(contains(error_of([&] { DecodingGraph(2, words, 0, {0.f, 0.f}, {{0, A{1, -1, 0, 0.f}}, {1, A{0, -1, 0, 0.f}}}); }),
                       "cycle of epsilon arcs (2 states on or after it)"));
  EXPECT_TRUE(contains(error_of([&] { DecodingGraph(2, words, 0, {0.f}, {{0, A{3, 0, 0, 0.f}}}); }),
                       "arc 0 (0 -> 3) has a state out of range [0, 1)"));
  EXPECT_TRUE(contains(error_of([&] { DecodingGraph(2, words, 0, {0.f}, {{0, A{0, 2, 0, 0.f}}}); }),
                       "arc 0 has phone 2, outside [-1, 2)"));
  EXPECT_TRUE(contains(error_of([&] { DecodingGraph(2, words, 0, {0.f}, {{0, A{0, 1, 5, 0.f}}}); }),
                       "arc 0 has word 5, outside [0, 2)"));
  EXPECT_TRUE(contains(error_of([&] { DecodingGraph(2, words, 4, {0.f}, {}); }), "start state 4 out of range [0, 1)"));
  // A hand-made graph: a phone loop with a self-loop on phone 1 is fine.
  DecodingGraph g(2, words, 0, {0.f}, {{0, A{0, 1, 1, 0.5f}}});
  EXPECT_EQ(g.num_arcs(), 1);
  EXPECT_EQ(g.word(1), "w");
}

TEST(AsrGraph, DisambiguationSymbolsAndDeterminism) {
  PhoneTable ph = asr_test::letter_phones();
  auto P = [&](const char* w, const char* l) { return asr_test::pron(ph, w, l); };
  // Three homophones need #1 #2 #3; "ab" is a prefix of "abc" and gets #1.
  std::vector<Pronunciation> lex{P("two", "fg"), P("too", "fg"), P("to", "fg"), P("ab", "ab"), P("abc", "abc"),
                                 P("cab", "cab")};
  DecodingGraph g = build_word_graph(ph, lex, {{"u", "ab two"}});
  EXPECT_EQ(g.info().disambig_symbols, 3);
  EXPECT_EQ(build_word_graph(ph, {P("ab", "ab"), P("cd", "cd")}, {}).info().disambig_symbols, 0);
  EXPECT_EQ(build_word_graph(ph, {P("ab", "ab"), P("abc", "abc")}, {}).info().disambig_symbols, 1);
  for (const DecodingGraph* graph : {&g}) {
    for (int32_t s = 0; s < graph->num_states(); ++s) {
      std::set<int32_t> seen;
      for (int64_t k = graph->emit_begin(s); k < graph->emit_begin(s + 1); ++k)
        EXPECT_TRUE(seen.insert(graph->emitting_arcs()[size_t(k)].phone).second) << "state " << s;
    }
  }
  EXPECT_LE(g.info().min_states, g.info().det_states);
  EXPECT_GT(g.epsilon_arcs().size(), 0u);  // backoff and homophone-disambiguation arcs
  // Each homophone stays reachable: after "ab" the grammar prefers the trained "two", but the
  // others have their own paths.
  EXPECT_EQ(path_cost(g, spell(ph, "abfg")).second, (std::vector<std::string>{"ab", "two"}));
  EXPECT_TRUE(contains(g.summary(), "6 prons, 3 disambig"));
}

// Path weights of the graph equal the lexicon + grammar probabilities worked out by hand, up to
// OpenFst's determinization, which quantizes subset weights to kDelta = 1/1024.
TEST(AsrGraph, PathCostsMatchHandComputedGrammar) {
  const double tol = 4e-3;
  PhoneTable ph = asr_test::letter_phones();
  auto P = [&](const char* w, const char* l) { return asr_test::pron(ph, w, l); };
  std::vector<Pronunciation> lex{P("a", "ab"), P("b", "cd"), P("c", "ef"), P("d", "gh")};
  std::map<std::string, std::string> text{{"u1", "a b"}, {"u2", "a c"}};
  GraphOptions o;
  o.silence_prob = 0.2;
  o.lm.add_k = 0.5;
  o.lm.discount = 0.5;
  // Unigram: counts a 2, b 1, c 1, d 0, </s> 2 over 6 events; add 0.5 to each of 5 -> / 8.5.
  const double pa = 2.5 / 8.5, pb = 1.5 / 8.5, pd = 0.5 / 8.5, pend = 2.5 / 8.5;
  const double nosil = -std::log(0.8), sil = -std::log(0.2);
  DecodingGraph g = build_word_graph(ph, lex, text, o);
  // Bigram: p(a|<s>) = (2 - 0.5) / 2, p(b|a) = (1 - 0.5) / 2, p(</s>|b) = (1 - 0.5) / 1.
  auto [c1, w1] = path_cost(g, spell(ph, "abcd"));
  EXPECT_NEAR(c1, -std::log(0.75 * 0.25 * 0.5) + 3 * nosil, tol);
  EXPECT_EQ(w1, (std::vector<std::string>{"a", "b"}));
  // Silence before, between and after: each optional-silence slot pays sil instead of nosil.
  auto [c2, w2] = path_cost(g, spell(ph, "_ab_cd_"));
  EXPECT_NEAR(c2, -std::log(0.75 * 0.25 * 0.5) + 3 * sil, tol);
  EXPECT_EQ(w2, (std::vector<std::string>{"a", "b"}));
  // "d" was never seen: back off from <s> (alpha = 0.25 / (1 - p(a))), unigram d, then </s>
  // from the unigram state.
  const double alpha_s = 0.25 / (1 - pa);
  auto [c3, w3] = path_cost(g, spell(ph, "gh"));
  EXPECT_NEAR(c3, -std::log(alpha_s * pd * pend) + 2 * nosil, tol);
  EXPECT_EQ(w3, (std::vector<std::string>{"d"}));
  // "b a": b is not seen after <s>: backoff, unigram b; then "a" after b: backoff from b
  // (alpha_b = 0.5 / (1 - p(</s>))), unigram a; then </s> after a: backoff from a
  // (alpha_a = 0.5 * 2 / 2 / (1 - p(b) - p(c))), unigram </s>.
  const double alpha_b = 0.5 / (1 - pend), alpha_a = 0.5 / (1 - 2 * pb);
  auto [c4, w4] = path_cost(g, spell(ph, "cdab"));
  EXPECT_NEAR(c4, -std::log(alpha_s * pb * alpha_b * pa * alpha_a * pend) + 3 * nosil, tol);
  // Word loop and unigram grammars.
  o.lm.type = LmOptions::Type::kWordLoop;
  EXPECT_NEAR(path_cost(build_word_graph(ph, lex, {}, o), spell(ph, "cdab")).first, 3 * std::log(5.0) + 3 * nosil,
              tol);
  o.lm.type = LmOptions::Type::kUnigram;
  EXPECT_NEAR(path_cost(build_word_graph(ph, lex, text, o), spell(ph, "cdab")).first,
              -std::log(pb * pa * pend) + 3 * nosil, tol);
  // A phone sequence that spells no word sequence has no path.
  EXPECT_TRUE(std::isinf(path_cost(g, spell(ph, "abc")).first));
  // Weight pushing moves costs towards the start but keeps every path's total.
  o.lm.type = LmOptions::Type::kBigram;
  o.push_weights = false;
  DecodingGraph unpushed = build_word_graph(ph, lex, text, o);
  for (const char* s : {"abcd", "_ab_cd_", "gh", "cdab", "abgh_ef"})
    EXPECT_NEAR(path_cost(unpushed, spell(ph, s)).first, path_cost(g, spell(ph, s)).first, tol) << s;
  bool negative = false;
  for (const auto& a : g.emitting_arcs()) negative |= a.cost < -1e-3f;
  EXPECT_FALSE(negative);  // pushed tropical weights are differences to the best completion
}

TEST(AsrGraph, PhoneGraphWords) {
  PhoneTable ph({"sil", "a", "b", "c"});
  GraphOptions o;
  o.lm.type = LmOptions::Type::kBigram;
  DecodingGraph g = build_phone_graph(ph, {{"u1", {0, 0, 1, 1, 2, 0, 2, 3, 0}}}, o);
  EXPECT_EQ(g.words(), (std::vector<std::string>{"<eps>", "a", "b", "c"}));
  auto [cost, words] = path_cost(g, {0, 1, 2, 0, 2, 3, 0});
  EXPECT_EQ(words, (std::vector<std::string>{"a", "b", "b", "c"}));
  EXPECT_TRUE(std::isfinite(cost));
}

TEST(AsrGraph, WritesOpenFstFiles) {
  PhoneTable ph = asr_test::letter_phones();
  DecodingGraph g = build_word_graph(ph, {asr_test::pron(ph, "ab", "ab"), asr_test::pron(ph, "čia", "ci")},
                                     {{"u", "ab čia"}});
  std::string path = testing::TempDir() + "/fw_asr_" + std::to_string(getpid()) + "_LG.fst";
  g.write_fst(path, ph);
  std::ifstream f(path, std::ios::binary);
  unsigned char magic[4] = {};
  f.read(reinterpret_cast<char*>(magic), 4);
  EXPECT_EQ(magic[0] | magic[1] << 8 | magic[2] << 16 | unsigned(magic[3]) << 24, 2125659606u);  // OpenFst's kFstMagicNumber
  std::ifstream w(path + ".words.txt"), p(path + ".phones.txt");
  std::string wt((std::istreambuf_iterator<char>(w)), {}), pt((std::istreambuf_iterator<char>(p)), {});
  EXPECT_EQ(wt, "<eps> 0\nab 1\nčia 2\n");
  EXPECT_EQ(pt.substr(0, 20), "<eps> 0\nsil 1\na 2\nb ");
  EXPECT_TRUE(contains(error_of([&] { g.write_fst(path, PhoneTable({"sil"})); }), "phone table has 1 phones, the graph 13"));
  for (const std::string& s : {path, path + ".words.txt", path + ".phones.txt"}) std::remove(s.c_str());
}
