// fw::asr scoring: a Levenshtein aligner for word (or phone) sequences with substitution /
// deletion / insertion / correct counts, WER = (S + D + I) / N, sclite-style alignment
// printouts and Kaldi compute-wer-style summary lines. See examples/asr/README.md for the
// conventions (and for where Kaldi's compute-wer and NIST sclite can disagree).
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace fw::asr {

enum class EditOp : uint8_t { kCorrect, kSubstitution, kDeletion, kInsertion };

// Error counts of one or more aligned sentences.
struct EditCounts {
  int64_t ref_words = 0;  // N
  int64_t hyp_words = 0;
  int64_t correct = 0;
  int64_t substitutions = 0;
  int64_t deletions = 0;
  int64_t insertions = 0;
  int64_t sentences = 0;
  int64_t sentence_errors = 0;  // sentences with at least one error

  int64_t errors() const { return substitutions + deletions + insertions; }
  // (S + D + I) / N as a fraction; 0 when N == 0 and there are no errors, +inf when N == 0 < errors.
  double wer() const;
  // sentence_errors / sentences (0 for no sentences).
  double ser() const;
  EditCounts& operator+=(const EditCounts& o);
  bool operator==(const EditCounts&) const = default;
};

// Integer edit costs (a correct pair costs 0). levenshtein() is Kaldi compute-wer's unit cost;
// sclite() is NIST sclite's (substitution 4, insertion 3, deletion 3), which prefers
// "3 deletions + 3 insertions + 2 correct" to "5 substitutions" and can therefore report more
// errors than the minimum edit distance.
struct AlignCosts {
  int32_t substitution = 1;
  int32_t deletion = 1;
  int32_t insertion = 1;
  static AlignCosts levenshtein() { return {1, 1, 1}; }
  static AlignCosts sclite() { return {4, 3, 3}; }
};

// One column of an alignment: indices into ref / hyp, -1 where the op has none.
struct AlignedPair {
  EditOp op;
  int64_t ref = -1;
  int64_t hyp = -1;
  bool operator==(const AlignedPair&) const = default;
};

struct Alignment {
  std::vector<AlignedPair> pairs;  // in sequence order
  EditCounts counts;               // sentences = 1
};

// A minimum-cost alignment of hyp to ref. Among equal-cost alignments the one chosen is the
// first in this order when tracing back from the end: correct/substitution, deletion, insertion
// (the order that reproduces sclite's counts; see the README).
Alignment align(const std::vector<std::string>& ref, const std::vector<std::string>& hyp,
                const AlignCosts& costs = {});
Alignment align(const std::vector<int32_t>& ref, const std::vector<int32_t>& hyp, const AlignCosts& costs = {});

// sclite-style printout, columns padded to the wider token (widths in UTF-8 code points):
//   REF:  a b c *
//   HYP:  a x * d
//   Eval:   S D I
std::string format_alignment(const std::vector<std::string>& ref, const std::vector<std::string>& hyp,
                             const Alignment& alignment);

// Kaldi compute-wer's summary lines:
//   %WER 12.50 [ 2 / 16, 1 ins, 0 del, 1 sub ]
//   %SER 50.00 [ 1 / 2 ]
std::string format_wer(const EditCounts& counts);

// Which utterances score() uses (Kaldi compute-wer --mode): kStrict: ref and hyp must have the
// same utterances; kPresent: only the hypothesis' utterances (each must be in ref); kAll: every
// reference utterance, a missing hypothesis counting as empty.
enum class ScoreMode { kStrict, kPresent, kAll };

struct ScoreOptions {
  AlignCosts costs;
  ScoreMode mode = ScoreMode::kStrict;
};

struct UtteranceScore {
  std::string utt;
  std::vector<std::string> ref, hyp;
  Alignment alignment;
};

struct CorpusScore {
  std::vector<UtteranceScore> utterances;  // in utterance-id order
  EditCounts total;
  // Per-utterance "id / Scores: (#C #S #D #I) c s d i / alignment" blocks (optional), then
  // format_wer(total).
  std::string report(bool with_alignments = true) const;
};

// Scores hypotheses against references, both utt -> "word word ..." (as read_text returns).
CorpusScore score(const std::map<std::string, std::string>& ref, const std::map<std::string, std::string>& hyp,
                  const ScoreOptions& options = {});

// Writes sclite's trn format: one "word word ... (utt)" line per utterance, in id order.
void write_trn(const std::string& path, const std::map<std::string, std::string>& text);

}  // namespace fw::asr
