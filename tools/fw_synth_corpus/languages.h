// The six languages of the bundled Babel-like corpus: which espeak-ng voice speaks each one and
// where its words come from (see README.md for why the Tok Pisin and Cebuano stand-ins are these).
#pragma once
#include <string>
#include <vector>

#include "tools/fw_synth_corpus/synth.h"

namespace fw_synth {

struct Language {
  std::string id;          // corpus language id (directory names, speaker/utterance prefixes)
  std::string name;        // human-readable
  int babel_id = 0;        // the IARPA Babel language number it stands for
  std::string voice;       // espeak-ng voice
  std::string dictionary;  // hunspell file stem under the dictionary dir ("" = built-in list)
  std::string package;     // Debian package that provides the dictionary
  Script script = Script::kLatin;
  std::string note;        // how the language is approximated, for the corpus README
};

const std::vector<Language>& known_languages();
// Throws Error for an unknown id.
const Language& find_language(const std::string& id);
// The built-in Tok Pisin word list (common words of the Tok Pisin lexicon, written for this tool).
const std::vector<std::string>& tok_pisin_words();

}  // namespace fw_synth
