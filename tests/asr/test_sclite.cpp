// Cross-check of fw::asr::align / score with NIST sclite (Debian sctk): the tricky cases (empty
// hypothesis, empty reference, all insertions, repeated words, UTF-8 words, ties) and 400 random
// sentence pairs are written as trn files, scored by sclite, and sclite's per-utterance
// "Scores: (#C #S #D #I)" lines and its summary counts compared with AlignCosts::sclite().
// Skipped where sclite was not found at configure time (test_score.cpp's hand-computed table
// still runs).
#include <array>
#include <cstdio>
#include <memory>
#include <sstream>

#include <unistd.h>

#include "tests/asr/helpers.h"

using namespace fw::asr;

namespace {

struct ScliteResult {
  std::map<std::string, std::array<int64_t, 4>> utts;  // id -> C S D I
  std::array<int64_t, 8> sum{};                        // Snt Wrd Corr Sub Del Ins Err S.Err
  bool has_sum = false;
  std::string output;
};

ScliteResult run_sclite(const std::map<std::string, std::string>& ref, const std::map<std::string, std::string>& hyp,
                        const std::string& tag) {
  ScliteResult res;
#ifdef FW_SCLITE
  std::string dir = testing::TempDir();
  std::string base = dir + "/fw_asr_" + std::to_string(getpid()) + "_" + tag;
  std::string rf = base + "_ref.trn", hf = base + "_hyp.trn";
  write_trn(rf, ref);
  write_trn(hf, hyp);
  // -i rm: ids "(speaker-utterance)"; -s: case-sensitive; -e utf-8: multi-byte words.
  std::string cmd = std::string(FW_SCLITE) + " -r " + rf + " trn -h " + hf +
                    " trn -i rm -s -e utf-8 -o rsum pralign stdout 2>&1";
  std::unique_ptr<FILE, int (*)(FILE*)> p(popen(cmd.c_str(), "r"), pclose);
  if (!p) return res;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof(buf), p.get())) > 0) res.output.append(buf, n);
  std::istringstream in(res.output);
  std::string line, id;
  while (std::getline(in, line)) {
    if (line.rfind("id: (", 0) == 0) {
      id = line.substr(5, line.find(')') - 5);
    } else if (line.rfind("Scores: (#C #S #D #I)", 0) == 0) {
      std::istringstream f(line.substr(21));
      std::array<int64_t, 4> k{};
      f >> k[0] >> k[1] >> k[2] >> k[3];
      res.utts[id] = k;
    } else {
      // Raw summary row: "| Sum  |    6     17 |    7      2      8      6     16      6 |"
      std::vector<std::string> cells;
      std::string cell;
      std::istringstream f(line);
      while (std::getline(f, cell, '|')) cells.push_back(cell);
      if (cells.size() >= 4 && split_words(cells[1]) == std::vector<std::string>{"Sum"}) {
        std::vector<std::string> nums = split_words(cells[2]), rest = split_words(cells[3]);
        nums.insert(nums.end(), rest.begin(), rest.end());
        if (nums.size() == 8) {
          for (size_t i = 0; i < 8; ++i) res.sum[i] = std::stoll(nums[i]);
          res.has_sum = true;
        }
      }
    }
  }
  std::remove(rf.c_str());
  std::remove(hf.c_str());
#endif
  return res;
}

void expect_agreement(const std::map<std::string, std::string>& ref, const std::map<std::string, std::string>& hyp,
                      const std::string& tag) {
  ScliteResult s = run_sclite(ref, hyp, tag);
  ASSERT_EQ(s.utts.size(), ref.size()) << "sclite output:\n" << s.output;
  ASSERT_TRUE(s.has_sum) << "sclite output:\n" << s.output;
  CorpusScore fw_score = score(ref, hyp, {AlignCosts::sclite(), ScoreMode::kStrict});
  int mismatches = 0;
  for (const UtteranceScore& u : fw_score.utterances) {
    const EditCounts& k = u.alignment.counts;
    std::array<int64_t, 4> mine{k.correct, k.substitutions, k.deletions, k.insertions};
    ASSERT_TRUE(s.utts.count(u.utt)) << u.utt;
    EXPECT_EQ(mine, s.utts[u.utt]) << "utterance " << u.utt << "\nref: " << ref.at(u.utt) << "\nhyp: "
                                   << hyp.at(u.utt) << "\nfw:\n"
                                   << format_alignment(u.ref, u.hyp, u.alignment);
    mismatches += mine != s.utts[u.utt];
  }
  const EditCounts& t = fw_score.total;
  std::array<int64_t, 8> mine{t.sentences,  t.ref_words,  t.correct, t.substitutions,
                              t.deletions, t.insertions, t.errors(), t.sentence_errors};
  EXPECT_EQ(mine, s.sum) << "sclite output:\n" << s.output;
  std::printf("[sclite] %s: %zu utterances, %d per-utterance mismatches; fw %s", tag.c_str(), ref.size(), mismatches,
              format_wer(t).c_str());
}

}  // namespace

TEST(AsrSclite, TrickyCases) {
#ifndef FW_SCLITE
  GTEST_SKIP() << "sclite (Debian sctk) was not found at configure time";
#endif
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"a b c", "a b c"},
      {"a b c", ""},                  // empty hypothesis
      {"", "foo bar"},                // empty reference
      {"", ""},                       // both empty
      {"a b", "x a y b z"},           // all insertions around the reference
      {"a", "a a a a a"},             // repeated insertions
      {"the the the cat", "the cat the"},  // repeated words
      {"a a a a", "a a"},
      {"a b", "b c"},                 // tie between 2 sub and del + ins
      {"a b c x y", "x y d e f"},     // sclite: 6 errors, Levenshtein: 5
      {"a b c d", "d c b a"},         // reversal
      {"čia yra žodis", "čia yra žodžiai"},  // UTF-8
      {"ąžuolas ėjo į mišką", "ąžuolas ėjo mišką į"},
      {"қазақ тілі", "қазақ тілі тілі"},  // Cyrillic (Kazakh)
      {"తెలుగు భాష", "భాష"},              // Telugu
      {"Hello world", "hello world"},      // case-sensitive (-s)
  };
  std::map<std::string, std::string> ref, hyp;
  for (size_t i = 0; i < cases.size(); ++i) {
    char id[32];
    std::snprintf(id, sizeof(id), "spk%zu-u%02zu", i % 3, i);
    ref[id] = cases[i].first;
    hyp[id] = cases[i].second;
  }
  expect_agreement(ref, hyp, "tricky");
}

TEST(AsrSclite, RandomSentences) {
#ifndef FW_SCLITE
  GTEST_SKIP() << "sclite (Debian sctk) was not found at configure time";
#endif
  // A small vocabulary makes repeated words and equal-cost alignments (ties) common.
  const std::vector<std::string> vocab = {"a", "b", "c", "the", "čia", "žodis"};
  std::mt19937_64 rng(2024);
  std::map<std::string, std::string> ref, hyp;
  for (int i = 0; i < 400; ++i) {
    auto sentence = [&] {
      std::vector<std::string> w(rng() % 9);
      for (auto& x : w) x = vocab[rng() % vocab.size()];
      return join_words(w);
    };
    char id[32];
    std::snprintf(id, sizeof(id), "spk%d-u%04d", i % 7, i);
    ref[id] = sentence();
    // Half the hypotheses are edited copies of the reference, like a recogniser's output.
    if (i % 2) {
      std::vector<std::string> w = split_words(ref[id]);
      for (int e = 0, ne = int(rng() % 4); e < ne; ++e) {
        size_t pos = w.empty() ? 0 : rng() % (w.size() + 1);
        switch (rng() % 3) {
          case 0: w.insert(w.begin() + long(pos), vocab[rng() % vocab.size()]); break;
          case 1: if (pos < w.size()) w.erase(w.begin() + long(pos)); break;
          default: if (pos < w.size()) w[pos] = vocab[rng() % vocab.size()]; break;
        }
      }
      hyp[id] = join_words(w);
    } else {
      hyp[id] = sentence();
    }
  }
  expect_agreement(ref, hyp, "random");
}
