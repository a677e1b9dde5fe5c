// fw::asr scoring: the Levenshtein aligner against a hand-computed table (both cost conventions),
// against a brute-force edit distance, printouts, corpus scoring modes and the file readers.
#include <cstdio>
#include <fstream>
#include <functional>

#include <unistd.h>

#include "tests/asr/helpers.h"

using namespace fw::asr;
using asr_test::error_of;

namespace {

struct Row {
  const char* ref;
  const char* hyp;
  int c, s, d, i;          // Levenshtein (Kaldi compute-wer) counts
  int sc, ss, sd, si;      // sclite-cost counts (as sclite 2.10 reports them)
};

// Computed by hand; the sclite columns were also checked with sclite itself (test_sclite.cpp
// runs them through the real program where it is installed).
const Row kTable[] = {
    {"a b c", "a b c", 3, 0, 0, 0, 3, 0, 0, 0},
    {"a b c", "", 0, 0, 3, 0, 0, 0, 3, 0},                 // empty hypothesis
    {"", "a b", 0, 0, 0, 2, 0, 0, 0, 2},                   // empty reference
    {"", "", 0, 0, 0, 0, 0, 0, 0, 0},
    {"a b", "x a y b z", 2, 0, 0, 3, 2, 0, 0, 3},          // all insertions
    {"a b", "b c", 0, 2, 0, 0, 1, 0, 1, 1},                // tie: 2 sub (=2) vs del+ins (=2; sclite 6 < 8)
    {"a b c x y", "x y d e f", 0, 5, 0, 0, 2, 0, 3, 3},    // 5 errors vs sclite's 6
    {"the the the cat", "the cat the", 2, 1, 1, 0, 2, 1, 1, 0},  // repeated words
    {"a a a a", "a a", 2, 0, 2, 0, 2, 0, 2, 0},
    {"čia yra žodis", "čia yra žodžiai", 2, 1, 0, 0, 2, 1, 0, 0},  // UTF-8 words
    {"Hello world", "hello world", 1, 1, 0, 0, 1, 1, 0, 0},          // case-sensitive
    {"a b c d", "d c b a", 0, 4, 0, 0, 1, 2, 1, 1},        // reversal: sclite keeps one match
    {"x", "y", 0, 1, 0, 0, 0, 1, 0, 0},
};

// Minimum weighted edit cost by plain recursion with memoisation (independent of align()).
int64_t brute_cost(const std::vector<int32_t>& r, const std::vector<int32_t>& h, const AlignCosts& c) {
  std::map<std::pair<size_t, size_t>, int64_t> memo;
  std::function<int64_t(size_t, size_t)> f = [&](size_t i, size_t j) -> int64_t {
    if (i == r.size()) return int64_t(h.size() - j) * c.insertion;
    if (j == h.size()) return int64_t(r.size() - i) * c.deletion;
    auto key = std::make_pair(i, j);
    if (auto it = memo.find(key); it != memo.end()) return it->second;
    int64_t v = std::min({f(i + 1, j + 1) + (r[i] == h[j] ? 0 : c.substitution), f(i + 1, j) + c.deletion,
                          f(i, j + 1) + c.insertion});
    return memo[key] = v;
  };
  return f(0, 0);
}

}  // namespace

TEST(AsrScore, HandComputedTable) {
  for (const Row& row : kTable) {
    std::vector<std::string> r = split_words(row.ref), h = split_words(row.hyp);
    EditCounts lev = align(r, h, AlignCosts::levenshtein()).counts;
    EditCounts scl = align(r, h, AlignCosts::sclite()).counts;
    SCOPED_TRACE(std::string("ref '") + row.ref + "' hyp '" + row.hyp + "'");
    EXPECT_EQ(lev.correct, row.c);
    EXPECT_EQ(lev.substitutions, row.s);
    EXPECT_EQ(lev.deletions, row.d);
    EXPECT_EQ(lev.insertions, row.i);
    EXPECT_EQ(scl.correct, row.sc);
    EXPECT_EQ(scl.substitutions, row.ss);
    EXPECT_EQ(scl.deletions, row.sd);
    EXPECT_EQ(scl.insertions, row.si);
    EXPECT_EQ(lev.ref_words, int64_t(r.size()));
    EXPECT_EQ(lev.hyp_words, int64_t(h.size()));
    EXPECT_EQ(lev.sentences, 1);
    EXPECT_EQ(lev.sentence_errors, lev.errors() > 0 ? 1 : 0);
  }
}

TEST(AsrScore, WerConventions) {
  EditCounts k = align(split_words("a b c d"), split_words("a x c d e")).counts;
  EXPECT_EQ(k.errors(), 2);
  EXPECT_DOUBLE_EQ(k.wer(), 0.5);  // (S + D + I) / N with N = reference words
  EXPECT_TRUE(std::isinf(align({}, split_words("a")).counts.wer()));
  EXPECT_EQ(align(std::vector<std::string>{}, std::vector<std::string>{}).counts.wer(), 0.0);
  EXPECT_DOUBLE_EQ(align(split_words("a"), split_words("a b c")).counts.wer(), 2.0);  // WER can exceed 100%
  EditCounts sum = k;
  sum += align(split_words("a b"), split_words("a b")).counts;
  EXPECT_EQ(sum.sentences, 2);
  EXPECT_EQ(sum.sentence_errors, 1);
  EXPECT_DOUBLE_EQ(sum.ser(), 0.5);
  EXPECT_EQ(format_wer(sum), "%WER 33.33 [ 2 / 6, 1 ins, 0 del, 1 sub ]\n%SER 50.00 [ 1 / 2 ]\n");
}

TEST(AsrScore, MatchesBruteForceEditDistance) {
  std::mt19937_64 rng(7);
  for (int trial = 0; trial < 2000; ++trial) {
    std::vector<int32_t> r(rng() % 9), h(rng() % 9);
    for (auto& v : r) v = int32_t(rng() % 4);
    for (auto& v : h) v = int32_t(rng() % 4);
    for (const AlignCosts& c : {AlignCosts::levenshtein(), AlignCosts::sclite(), AlignCosts{2, 1, 3}}) {
      Alignment a = align(r, h, c);
      const EditCounts& k = a.counts;
      EXPECT_EQ(k.substitutions * c.substitution + k.deletions * c.deletion + k.insertions * c.insertion,
                brute_cost(r, h, c));
      EXPECT_EQ(k.correct + k.substitutions + k.deletions, int64_t(r.size()));
      EXPECT_EQ(k.correct + k.substitutions + k.insertions, int64_t(h.size()));
      // The pairs walk both sequences in order and their ops agree with the tokens.
      int64_t i = 0, j = 0;
      for (const AlignedPair& p : a.pairs) {
        if (p.ref >= 0) EXPECT_EQ(p.ref, i++);
        if (p.hyp >= 0) EXPECT_EQ(p.hyp, j++);
        if (p.op == EditOp::kCorrect) EXPECT_EQ(r[size_t(p.ref)], h[size_t(p.hyp)]);
        if (p.op == EditOp::kSubstitution) EXPECT_NE(r[size_t(p.ref)], h[size_t(p.hyp)]);
        EXPECT_EQ(p.ref < 0, p.op == EditOp::kInsertion);
        EXPECT_EQ(p.hyp < 0, p.op == EditOp::kDeletion);
      }
      EXPECT_EQ(i, int64_t(r.size()));
      EXPECT_EQ(j, int64_t(h.size()));
    }
  }
}

TEST(AsrScore, PhoneSequencesAndLongInputs) {
  Alignment a = align(std::vector<int32_t>{3, 1, 4, 1, 5}, std::vector<int32_t>{3, 1, 1, 5, 9});
  EXPECT_EQ(a.counts.correct, 4);
  EXPECT_EQ(a.counts.deletions, 1);
  EXPECT_EQ(a.counts.insertions, 1);
  std::vector<int32_t> r(3000), h(3000);
  for (size_t i = 0; i < r.size(); ++i) r[i] = int32_t(i % 37), h[i] = int32_t((i + (i % 100 == 0)) % 37);
  EXPECT_EQ(align(r, h).counts.substitutions, 30);
}

TEST(AsrScore, AlignmentPrintout) {
  std::vector<std::string> r = split_words("a bb c čia"), h = split_words("a x c žodžiai dd");
  Alignment a = align(r, h);
  EXPECT_EQ(format_alignment(r, h, a),
            "REF:  a bb c ******* čia\n"
            "HYP:  a x  c žodžiai dd\n"
            "Eval:   S    I       S\n");  // ties go to the diagonal, traced from the end
  std::vector<std::string> e;
  EXPECT_EQ(format_alignment(r, e, align(r, e)), "REF:  a bb c čia\nHYP:  * ** * ***\nEval: D D  D D\n");
  EXPECT_EQ(format_alignment(e, e, align(e, e)), "REF:\nHYP:\nEval:\n");
  Alignment bad = a;
  bad.pairs[0].ref = 9;
  EXPECT_NE(error_of([&] { format_alignment(r, h, bad); }).find("pair 0 (ref 9, hyp 0) does not index"),
            std::string::npos);
}

TEST(AsrScore, CorpusScoringModes) {
  std::map<std::string, std::string> ref{{"u1", "a b c"}, {"u2", "d e"}, {"u3", "f"}};
  std::map<std::string, std::string> hyp{{"u1", "a b c"}, {"u2", "d x"}};
  EXPECT_NE(error_of([&] { score(ref, hyp); }).find("reference utterance 'u3' has no hypothesis"), std::string::npos);
  CorpusScore present = score(ref, hyp, {AlignCosts{}, ScoreMode::kPresent});
  EXPECT_EQ(present.utterances.size(), 2u);
  EXPECT_EQ(present.total.ref_words, 5);
  EXPECT_EQ(present.total.substitutions, 1);
  CorpusScore all = score(ref, hyp, {AlignCosts{}, ScoreMode::kAll});
  EXPECT_EQ(all.utterances.size(), 3u);
  EXPECT_EQ(all.total.ref_words, 6);
  EXPECT_EQ(all.total.deletions, 1);
  EXPECT_EQ(all.report(false), "%WER 33.33 [ 2 / 6, 0 ins, 1 del, 1 sub ]\n%SER 66.67 [ 2 / 3 ]\n");
  std::string rep = all.report();
  EXPECT_NE(rep.find("id: (u2)\nScores: (#C #S #D #I) 1 1 0 0\nREF:  d e\nHYP:  d x\nEval:   S\n"), std::string::npos)
      << rep;
  hyp["u9"] = "z";
  EXPECT_NE(error_of([&] { score(ref, hyp, {AlignCosts{}, ScoreMode::kAll}); })
                .find("hypothesis utterance 'u9' has no reference"),
            std::string::npos);
  EXPECT_NE(error_of([&] { align(split_words("a"), split_words("b"), AlignCosts{1, 0, 1}); })
                .find("costs must be substitution >= 0, deletion > 0, insertion > 0; got 1, 0, 1"),
            std::string::npos);
}

TEST(AsrScore, TrnAndTextFiles) {
  std::string dir = testing::TempDir(), pid = std::to_string(getpid());
  std::string trn = dir + "/fw_asr_" + pid + ".trn", text = dir + "/fw_asr_" + pid + ".text";
  write_trn(trn, {{"s1-u2", ""}, {"s1-u1", "  a   b "}});
  std::ifstream in(trn);
  std::string all((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(all, "a b (s1-u1)\n(s1-u2)\n");
  EXPECT_NE(error_of([&] { write_trn(trn, {{"bad(id)", "a"}}); }).find("utterance id 'bad(id)'"), std::string::npos);
  {
    std::ofstream out(text);
    out << "u1 a  b\tc\nu2\n\nu3 čia\n";
  }
  std::map<std::string, std::string> t = read_text(text);
  EXPECT_EQ(t, (std::map<std::string, std::string>{{"u1", "a b c"}, {"u2", ""}, {"u3", "čia"}}));
  {
    std::ofstream out(text);
    out << "u1 a\nu1 b\n";
  }
  EXPECT_NE(error_of([&] { read_text(text); }).find(":2: utterance 'u1' appears twice"), std::string::npos);
  EXPECT_NE(error_of([&] { read_text(dir + "/missing.text"); }).find("cannot open"), std::string::npos);
  std::remove(trn.c_str());
  std::remove(text.c_str());
}

TEST(AsrScore, CollapseAlignment) {
  EXPECT_EQ(collapse_alignment({0, 0, 3, 3, 0, 3, 5, 5, 0}), (std::vector<int32_t>{3, 3, 5}));
  EXPECT_EQ(collapse_alignment({0, 0, 3, 3, 0, 3}, -1), (std::vector<int32_t>{0, 3, 0, 3}));
  EXPECT_TRUE(collapse_alignment({}).empty());
}
