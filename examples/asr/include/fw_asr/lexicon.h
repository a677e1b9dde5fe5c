// fw::asr inputs: phone tables, pronunciation lexicons, Kaldi `text` transcripts, alignments.
// File formats are those of tools/fw_synth_corpus (data/<lang>/{phones.txt,lexicon.txt},
// data/<lang>/<split>/{text,ali.txt}); every reader throws fw::Error naming the file, the line
// and the offending value.
#pragma once
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

namespace fw::asr {

// Acoustic classes: dense ids 0..size()-1 (the frame classes of ali.txt and of the acoustic
// model's output), one name each. fw-synth-corpus writes "sil 0" first.
class PhoneTable {
 public:
  PhoneTable() = default;
  // Id i is names[i]; names must be unique, non-empty and free of whitespace.
  explicit PhoneTable(std::vector<std::string> names);
  // Reads "<phone> <id>" lines; the ids must be exactly 0..n-1 (any order). A Kaldi-style table
  // with "<eps> 0" is rejected (its ids are not frame classes).
  static PhoneTable read(const std::string& path);

  int32_t size() const { return int32_t(names_.size()); }
  const std::string& name(int32_t id) const;        // throws for an id out of range
  int32_t id(const std::string& name) const;        // throws for an unknown name
  std::optional<int32_t> find(const std::string& name) const;
  const std::vector<std::string>& names() const { return names_; }

 private:
  std::vector<std::string> names_;
  std::unordered_map<std::string, int32_t> ids_;
};

// One lexicon line: a word and its phone ids. A word may have several pronunciations.
struct Pronunciation {
  std::string word;
  std::vector<int32_t> phones;
  bool operator==(const Pronunciation& o) const { return word == o.word && phones == o.phones; }
};

// Reads "<word> <phone> <phone> ..." lines (lexicon.txt). Exact duplicate lines are dropped;
// a word without phones or with a phone missing from `phones` is an error naming both.
std::vector<Pronunciation> read_lexicon(const std::string& path, const PhoneTable& phones);

// The distinct words of a lexicon, sorted in byte order (C locale, as Kaldi sorts).
std::vector<std::string> lexicon_words(const std::vector<Pronunciation>& lexicon);

// Reads a Kaldi `text` file: "<utt> <word> <word> ..." -> utt -> "word word ..." (the type of
// fw::audio::kaldi::DataDir::text). Duplicate utterance ids are an error.
std::map<std::string, std::string> read_text(const std::string& path);

// Splits a transcript on ASCII whitespace.
std::vector<std::string> split_words(const std::string& text);

// Joins words with single spaces.
std::string join_words(const std::vector<std::string>& words);

// A frame alignment collapsed to its phone sequence: runs of one id become one phone, and
// `drop` (e.g. the silence id 0; -1 for none) is removed. For phone error rates.
std::vector<int32_t> collapse_alignment(const std::vector<int32_t>& frames, int32_t drop = 0);

}  // namespace fw::asr
