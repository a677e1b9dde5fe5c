// Readers for phone tables, lexicons and Kaldi text files (fw_asr/lexicon.h).
#include "fw_asr/lexicon.h"

#include <algorithm>
#include <fstream>
#include <set>

#include <fw/error.h>

namespace fw::asr {
namespace {

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '\f' || c == '\v'; }

std::ifstream open_input(const char* fn, const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  FW_CHECK(in.good(), "[fw::asr::", fn, "] cannot open '", path, "'");
  return in;
}

}  // namespace

std::vector<std::string> split_words(const std::string& text) {
  std::vector<std::string> out;
  size_t i = 0;
  while (i < text.size()) {
    while (i < text.size() && is_space(text[i])) ++i;
    size_t j = i;
    while (j < text.size() && !is_space(text[j])) ++j;
    if (j > i) out.emplace_back(text, i, j - i);
    i = j;
  }
  return out;
}

std::string join_words(const std::vector<std::string>& words) {
  std::string out;
  for (size_t i = 0; i < words.size(); ++i) {
    if (i) out += ' ';
    out += words[i];
  }
  return out;
}

PhoneTable::PhoneTable(std::vector<std::string> names) : names_(std::move(names)) {
  for (size_t i = 0; i < names_.size(); ++i) {
    const std::string& n = names_[i];
    FW_CHECK(!n.empty() && split_words(n).size() == 1 && split_words(n)[0] == n,
             "[fw::asr::PhoneTable] phone ", i, " has an empty name or one with whitespace: '", n, "'");
    bool fresh = ids_.emplace(n, int32_t(i)).second;
    FW_CHECK(fresh, "[fw::asr::PhoneTable] phone '", n, "' appears twice (ids ", ids_.at(n), " and ", i, ")");
  }
}

PhoneTable PhoneTable::read(const std::string& path) {
  std::ifstream in = open_input("PhoneTable::read", path);
  std::vector<std::string> names;
  std::vector<bool> seen;
  std::string line;
  int64_t lineno = 0;
  while (std::getline(in, line)) {
    ++lineno;
    std::vector<std::string> f = split_words(line);
    if (f.empty()) continue;
    FW_CHECK(f.size() == 2, "[fw::asr::PhoneTable::read] ", path, ":", lineno, ": expected '<phone> <id>', got '",
             line, "'");
    FW_CHECK(f[0] != "<eps>", "[fw::asr::PhoneTable::read] ", path, ":", lineno,
             ": '<eps>' found; fw::asr expects dense 0-based acoustic class ids (fw-synth-corpus's phones.txt, "
             "sil = 0), not a Kaldi lang/phones.txt");
    size_t used = 0;
    long long id = -1;
    try {
      id = std::stoll(f[1], &used);
    } catch (const std::exception&) {
      used = 0;
    }
    FW_CHECK(used == f[1].size() && id >= 0 && id < (1 << 24), "[fw::asr::PhoneTable::read] ", path, ":", lineno,
             ": bad phone id '", f[1], "'");
    if (size_t(id) >= names.size()) {
      names.resize(size_t(id) + 1);
      seen.resize(size_t(id) + 1, false);
    }
    FW_CHECK(!seen[size_t(id)], "[fw::asr::PhoneTable::read] ", path, ":", lineno, ": id ", id,
             " used twice ('", names[size_t(id)], "' and '", f[0], "')");
    seen[size_t(id)] = true;
    names[size_t(id)] = f[0];
  }
  FW_CHECK(!names.empty(), "[fw::asr::PhoneTable::read] ", path, " has no phones");
  for (size_t i = 0; i < names.size(); ++i)
    FW_CHECK(seen[i], "[fw::asr::PhoneTable::read] ", path, ": ids must be 0..", names.size() - 1,
             " without gaps, but id ", i, " is missing");
  try {
    return PhoneTable(std::move(names));
  } catch (const fw::Error& e) {
    throw fw::Error(std::string(e.what()) + " (in " + path + ")");
  }
}

const std::string& PhoneTable::name(int32_t id) const {
  FW_CHECK(id >= 0 && id < size(), "[fw::asr::PhoneTable::name] id ", id, " out of range [0, ", size(), ")");
  return names_[size_t(id)];
}

int32_t PhoneTable::id(const std::string& name) const {
  auto it = ids_.find(name);
  FW_CHECK(it != ids_.end(), "[fw::asr::PhoneTable::id] unknown phone '", name, "'");
  return it->second;
}

std::optional<int32_t> PhoneTable::find(const std::string& name) const {
  auto it = ids_.find(name);
  if (it == ids_.end()) return std::nullopt;
  return it->second;
}

std::vector<Pronunciation> read_lexicon(const std::string& path, const PhoneTable& phones) {
  std::ifstream in = open_input("read_lexicon", path);
  std::vector<Pronunciation> out;
  std::set<std::pair<std::string, std::vector<int32_t>>> seen;
  std::string line;
  int64_t lineno = 0;
  while (std::getline(in, line)) {
    ++lineno;
    std::vector<std::string> f = split_words(line);
    if (f.empty()) continue;
    FW_CHECK(f.size() >= 2, "[fw::asr::read_lexicon] ", path, ":", lineno, ": word '", f[0],
             "' has no phones");
    Pronunciation p{f[0], {}};
    for (size_t i = 1; i < f.size(); ++i) {
      std::optional<int32_t> id = phones.find(f[i]);
      FW_CHECK(id.has_value(), "[fw::asr::read_lexicon] ", path, ":", lineno, ": phone '", f[i], "' of word '",
               f[0], "' is not in the phone table (", phones.size(), " phones)");
      p.phones.push_back(*id);
    }
    if (seen.emplace(p.word, p.phones).second) out.push_back(std::move(p));
  }
  FW_CHECK(!out.empty(), "[fw::asr::read_lexicon] ", path, " has no entries");
  return out;
}

std::vector<std::string> lexicon_words(const std::vector<Pronunciation>& lexicon) {
  std::vector<std::string> words;
  words.reserve(lexicon.size());
  for (const Pronunciation& p : lexicon) words.push_back(p.word);
  std::sort(words.begin(), words.end());
  words.erase(std::unique(words.begin(), words.end()), words.end());
  return words;
}

std::map<std::string, std::string> read_text(const std::string& path) {
  std::ifstream in = open_input("read_text", path);
  std::map<std::string, std::string> out;
  std::string line;
  int64_t lineno = 0;
  while (std::getline(in, line)) {
    ++lineno;
    std::vector<std::string> f = split_words(line);
    if (f.empty()) continue;
    std::vector<std::string> words(f.begin() + 1, f.end());
    bool fresh = out.emplace(f[0], join_words(words)).second;
    FW_CHECK(fresh, "[fw::asr::read_text] ", path, ":", lineno, ": utterance '", f[0], "' appears twice");
  }
  return out;
}

std::vector<int32_t> collapse_alignment(const std::vector<int32_t>& frames, int32_t drop) {
  std::vector<int32_t> out;
  for (size_t i = 0; i < frames.size(); ++i) {
    if (i > 0 && frames[i] == frames[i - 1]) continue;
    if (frames[i] != drop) out.push_back(frames[i]);
  }
  return out;
}

}  // namespace fw::asr
