// The languages of fw-synth-corpus: the six of the bundled Babel-like corpus (the default --langs)
// and English for the single-language Switchboard-style recipe (examples/swbd). Which espeak-ng
// voice speaks each one and where its words come from (see README.md for why the Tok Pisin and
// Cebuano stand-ins are these).
#pragma once
#include <string>
#include <vector>

#include "tools/fw_synth_corpus/synth.h"

namespace fw_synth {

struct Language {
  std::string id;          // corpus language id (directory names, speaker/utterance prefixes)
  std::string name;        // human-readable
  int babel_id = 0;        // the IARPA Babel language number it stands for (0: not a Babel language)
  std::string voice;       // espeak-ng voice
  std::string dictionary;  // hunspell file stem under the dictionary dir ("" = built-in list)
  std::string package;     // Debian package that provides the dictionary
  Script script = Script::kLatin;
  std::string note;        // how the language is approximated, for the corpus README
  // A further filter on the clean words of the language's word source (nullptr: none).
  bool (*keep_word)(const std::string& word) = nullptr;
};

const std::vector<Language>& known_languages();
// Throws Error for an unknown id.
const Language& find_language(const std::string& id);
// English words worth speaking: a-z only, with a vowel letter (a, e, i, o, u, y; hunspell-en-us
// lists abbreviations such as "bldg", "kg", "mph", which espeak-ng spells out letter by letter),
// not made only of i, v and x (Roman numerals, which espeak-ng reads as "roman fourteen"), and not
// a slur or profanity (a short blocklist in languages.cpp: whole words and a few roots).
bool english_word(const std::string& word);
// The built-in Tok Pisin word list (common words of the Tok Pisin lexicon, written for this tool).
const std::vector<std::string>& tok_pisin_words();

}  // namespace fw_synth
