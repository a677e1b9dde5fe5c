// Levenshtein alignment and WER scoring (fw_asr/score.h).
#include "fw_asr/score.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <limits>
#include <sstream>

#include <fw/error.h>

#include "fw_asr/lexicon.h"

namespace fw::asr {

double EditCounts::wer() const {
  if (ref_words == 0) return errors() == 0 ? 0.0 : std::numeric_limits<double>::infinity();
  return double(errors()) / double(ref_words);
}

double EditCounts::ser() const { return sentences == 0 ? 0.0 : double(sentence_errors) / double(sentences); }

EditCounts& EditCounts::operator+=(const EditCounts& o) {
  ref_words += o.ref_words;
  hyp_words += o.hyp_words;
  correct += o.correct;
  substitutions += o.substitutions;
  deletions += o.deletions;
  insertions += o.insertions;
  sentences += o.sentences;
  sentence_errors += o.sentence_errors;
  return *this;
}

namespace {

// Note [Alignment tie-breaking]
// The total cost of a minimum-cost alignment is unique, but its split into S / D / I is not
// (with unit costs "a b" -> "b c" is 2 substitutions or 1 deletion + 1 insertion). We trace back
// from the end of both sequences and, among the predecessors that achieve the cell's cost, take
// the diagonal (correct or substitution) first, then a deletion, then an insertion. With
// AlignCosts::sclite() this reproduces sclite's per-utterance counts on the tie-heavy cases and
// the random sentences of tests/asr/test_sclite.cpp.
template <class T>
Alignment align_impl(const std::vector<T>& ref, const std::vector<T>& hyp, const AlignCosts& c) {
  FW_CHECK(c.substitution >= 0 && c.deletion > 0 && c.insertion > 0, "[fw::asr::align] costs must be ",
           "substitution >= 0, deletion > 0, insertion > 0; got ", c.substitution, ", ", c.deletion, ", ",
           c.insertion);
  const size_t n = ref.size(), m = hyp.size(), w = m + 1;
  FW_CHECK(n < (size_t(1) << 31) / 16 && m < (size_t(1) << 31) / 16 && (n + 1) * w < (size_t(1) << 32),
           "[fw::asr::align] sequences too long (", n, " x ", m, ")");
  std::vector<int64_t> d((n + 1) * w);
  for (size_t j = 0; j <= m; ++j) d[j] = int64_t(j) * c.insertion;
  for (size_t i = 1; i <= n; ++i) {
    int64_t* row = &d[i * w];
    const int64_t* up = &d[(i - 1) * w];
    row[0] = int64_t(i) * c.deletion;
    for (size_t j = 1; j <= m; ++j) {
      int64_t diag = up[j - 1] + (ref[i - 1] == hyp[j - 1] ? 0 : c.substitution);
      int64_t del = up[j] + c.deletion;
      int64_t ins = row[j - 1] + c.insertion;
      row[j] = std::min(diag, std::min(del, ins));
    }
  }
  Alignment a;
  a.pairs.reserve(n + m);
  size_t i = n, j = m;
  while (i > 0 || j > 0) {
    int64_t here = d[i * w + j];
    if (i > 0 && j > 0) {
      bool same = ref[i - 1] == hyp[j - 1];
      if (d[(i - 1) * w + j - 1] + (same ? 0 : c.substitution) == here) {
        a.pairs.push_back({same ? EditOp::kCorrect : EditOp::kSubstitution, int64_t(i - 1), int64_t(j - 1)});
        --i, --j;
        continue;
      }
    }
    if (i > 0 && d[(i - 1) * w + j] + c.deletion == here) {
      a.pairs.push_back({EditOp::kDeletion, int64_t(i - 1), -1});
      --i;
      continue;
    }
    FW_ASSERT(j > 0 && d[i * w + j - 1] + c.insertion == here);
    a.pairs.push_back({EditOp::kInsertion, -1, int64_t(j - 1)});
    --j;
  }
  std::reverse(a.pairs.begin(), a.pairs.end());
  EditCounts& k = a.counts;
  k.ref_words = int64_t(n);
  k.hyp_words = int64_t(m);
  for (const AlignedPair& p : a.pairs) {
    switch (p.op) {
      case EditOp::kCorrect: ++k.correct; break;
      case EditOp::kSubstitution: ++k.substitutions; break;
      case EditOp::kDeletion: ++k.deletions; break;
      case EditOp::kInsertion: ++k.insertions; break;
    }
  }
  k.sentences = 1;
  k.sentence_errors = k.errors() > 0 ? 1 : 0;
  return a;
}

// Display width of a UTF-8 string: code points (continuation bytes 10xxxxxx not counted).
size_t utf8_width(const std::string& s) {
  size_t n = 0;
  for (unsigned char ch : s) n += (ch & 0xC0) != 0x80;
  return n;
}

void pad_to(std::string& line, const std::string& token, size_t width) {
  line += token;
  line.append(width - utf8_width(token), ' ');
}

std::string fixed2(double v) {
  if (!std::isfinite(v)) return v > 0 ? "inf" : "nan";
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%.2f", v);
  return buf;
}

}  // namespace

Alignment align(const std::vector<std::string>& ref, const std::vector<std::string>& hyp, const AlignCosts& costs) {
  return align_impl(ref, hyp, costs);
}

Alignment align(const std::vector<int32_t>& ref, const std::vector<int32_t>& hyp, const AlignCosts& costs) {
  return align_impl(ref, hyp, costs);
}

std::string format_alignment(const std::vector<std::string>& ref, const std::vector<std::string>& hyp,
                             const Alignment& alignment) {
  std::string r = "REF:  ", h = "HYP:  ", e = "Eval: ";
  for (size_t k = 0; k < alignment.pairs.size(); ++k) {
    const AlignedPair& p = alignment.pairs[k];
    FW_CHECK(p.ref < int64_t(ref.size()) && p.hyp < int64_t(hyp.size()) && (p.ref >= 0 || p.hyp >= 0),
             "[fw::asr::format_alignment] pair ", k, " (ref ", p.ref, ", hyp ", p.hyp,
             ") does not index the given sequences (", ref.size(), " ref, ", hyp.size(), " hyp words)");
    std::string rt = p.ref >= 0 ? ref[size_t(p.ref)] : "";
    std::string ht = p.hyp >= 0 ? hyp[size_t(p.hyp)] : "";
    size_t width = std::max<size_t>(std::max(utf8_width(rt), utf8_width(ht)), 1);
    if (p.ref < 0) rt.assign(width, '*');
    if (p.hyp < 0) ht.assign(width, '*');
    const char* op = p.op == EditOp::kCorrect ? "" : p.op == EditOp::kSubstitution ? "S"
                                                   : p.op == EditOp::kDeletion   ? "D"
                                                                                 : "I";
    if (k) r += ' ', h += ' ', e += ' ';
    pad_to(r, rt, width);
    pad_to(h, ht, width);
    pad_to(e, op, width);
  }
  auto rstrip = [](std::string s) {
    while (!s.empty() && s.back() == ' ') s.pop_back();
    return s;
  };
  return rstrip(r) + "\n" + rstrip(h) + "\n" + rstrip(e) + "\n";
}

std::string format_wer(const EditCounts& k) {
  std::ostringstream os;
  os << "%WER " << fixed2(100.0 * k.wer()) << " [ " << k.errors() << " / " << k.ref_words << ", " << k.insertions
     << " ins, " << k.deletions << " del, " << k.substitutions << " sub ]\n";
  os << "%SER " << fixed2(100.0 * k.ser()) << " [ " << k.sentence_errors << " / " << k.sentences << " ]\n";
  return os.str();
}

std::string CorpusScore::report(bool with_alignments) const {
  std::ostringstream os;
  if (with_alignments) {
    for (const UtteranceScore& u : utterances) {
      const EditCounts& k = u.alignment.counts;
      os << "id: (" << u.utt << ")\n";
      os << "Scores: (#C #S #D #I) " << k.correct << ' ' << k.substitutions << ' ' << k.deletions << ' '
         << k.insertions << '\n';
      os << format_alignment(u.ref, u.hyp, u.alignment) << '\n';
    }
  }
  os << format_wer(total);
  return os.str();
}

CorpusScore score(const std::map<std::string, std::string>& ref, const std::map<std::string, std::string>& hyp,
                  const ScoreOptions& options) {
  for (const auto& [utt, text] : hyp)
    FW_CHECK(ref.count(utt), "[fw::asr::score] hypothesis utterance '", utt, "' has no reference (", ref.size(),
             " reference utterances)");
  if (options.mode == ScoreMode::kStrict) {
    for (const auto& [utt, text] : ref)
      FW_CHECK(hyp.count(utt), "[fw::asr::score] reference utterance '", utt,
               "' has no hypothesis (mode strict; use ScoreMode::kAll to score it as empty or kPresent to skip it)");
  }
  CorpusScore out;
  const bool all = options.mode != ScoreMode::kPresent;
  for (const auto& [utt, ref_text] : ref) {
    auto it = hyp.find(utt);
    if (it == hyp.end() && !all) continue;
    UtteranceScore u;
    u.utt = utt;
    u.ref = split_words(ref_text);
    if (it != hyp.end()) u.hyp = split_words(it->second);
    u.alignment = align(u.ref, u.hyp, options.costs);
    out.total += u.alignment.counts;
    out.utterances.push_back(std::move(u));
  }
  return out;
}

void write_trn(const std::string& path, const std::map<std::string, std::string>& text) {
  std::ofstream out(path, std::ios::binary);
  FW_CHECK(out.good(), "[fw::asr::write_trn] cannot open '", path, "' for writing");
  for (const auto& [utt, line] : text) {
    FW_CHECK(!utt.empty() && utt.find_first_of("() \t\n") == std::string::npos, "[fw::asr::write_trn] utterance id '",
             utt, "' is empty or has parentheses or whitespace, which the trn format cannot hold");
    std::string words = join_words(split_words(line));
    out << words << (words.empty() ? "" : " ") << '(' << utt << ")\n";
  }
  out.flush();
  FW_CHECK(out.good(), "[fw::asr::write_trn] write to '", path, "' failed");
}

}  // namespace fw::asr
