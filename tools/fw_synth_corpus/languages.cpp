#include "tools/fw_synth_corpus/languages.h"

#include <algorithm>
#include <sstream>

namespace fw_synth {

const std::vector<Language>& known_languages() {
  static const std::vector<Language> langs = {
      {"ku", "Kurmanji Kurdish", 205, "ku", "kmr_Latn", "hunspell-kmr", Script::kLatin,
       "espeak-ng's Kurdish voice (Kurmanji, Latin script); words from hunspell-kmr"},
      {"kk", "Kazakh", 302, "kk", "kk_KZ", "hunspell-kk", Script::kCyrillic,
       "espeak-ng's Kazakh voice; words from hunspell-kk (Cyrillic)"},
      {"te", "Telugu", 303, "te", "te_IN", "hunspell-te", Script::kTelugu,
       "espeak-ng's Telugu voice; words from hunspell-te (Telugu script)"},
      {"lt", "Lithuanian", 304, "lt", "lt_LT", "hunspell-lt", Script::kLatin,
       "espeak-ng's Lithuanian voice; words from hunspell-lt"},
      {"tpi", "Tok Pisin (stand-in)", 207, "ms", "", "", Script::kLatin,
       "no Tok Pisin voice or dictionary exists: a built-in list of common Tok Pisin words read by "
       "espeak-ng's Malay voice, whose letter-to-sound rules fit Tok Pisin's phonemic Latin spelling"},
      {"ceb", "Cebuano (stand-in)", 301, "id", "tl", "myspell-tl", Script::kLatin,
       "no Cebuano voice or dictionary exists: Tagalog words (myspell-tl; Tagalog and Cebuano are "
       "closely related Central Philippine languages) read by espeak-ng's Indonesian voice"},
      // Not one of the Babel languages (not in the default --langs): the bundled corpus of the
      // Switchboard-style recipe.
      {"en", "English", 0, "en-us", "en_US", "hunspell-en-us", Script::kLatin,
       "espeak-ng's American English voice; words from hunspell-en-us (a-z only, no vowel-less "
       "abbreviations, Roman numerals, slurs or profanity)",
       english_word},
  };
  return langs;
}

const Language& find_language(const std::string& id) {
  for (const auto& l : known_languages())
    if (l.id == id) return l;
  std::string all;
  for (const auto& l : known_languages()) all += (all.empty() ? "" : ",") + l.id;
  throw Error("unknown language '" + id + "' (known: " + all + ")");
}

namespace {

// hunspell-en-us lists slurs and profanity, and the corpus's sentences are shown to people
// (transcripts in logs, READMEs, decoding output), so English never picks them. Two lists, kept
// short and explicit: roots after which every en_US.dic word is offensive or reads as such
// ("nigg" also takes "niggard" and "niggle", which read as the slur in a random sentence), and
// whole words, for offensive words whose letters also begin innocent ones ("cock" / "cockpit",
// "dick" / "dickens", "spic" / "spice") or that are compounds of a root. Only stems matter:
// the tool does not expand hunspell's affix flags, so "fucking" never occurs, "fuck" does.
constexpr const char* kOffensiveRoots[] = {"fuck", "shit", "cunt", "nigg", "fagg", "whore",
                                           "slut", "bitch", "bastard", "wank", "piss"};
constexpr const char* kOffensiveWords[] = {
    // profanity and vulgar sexual words
    "ass", "asshole", "jackass", "bullshit", "bullshitted", "bullshitter", "bullshitting",
    "horseshit", "chickenshit", "motherfucker", "motherfucking", "sonsofbitches", "cock",
    "cocksucker", "dick", "dickhead", "prick", "pussy", "twat", "tit", "titty", "turd", "bugger",
    "buggery", "bollocks", "bollocking", "arsed", "goddamn", "crap", "crapped", "crapper",
    "crapping", "crappy", "blowjob", "clit", "nookie", "nooky",
    // ethnic, racial and religious slurs
    "negro", "negroid", "coon", "darkie", "darky", "blackamoor", "jigaboo", "sambo", "pickaninny",
    "piccaninny", "golliwog", "kike", "yid", "sheeny", "shylock", "jew", "papist", "papism",
    "papistry", "popish", "spic", "wetback", "greaseball", "chink", "gook", "wop", "dago", "dagoes",
    "kraut", "bohunk", "wog", "mick", "coolie", "redskin", "squaw", "halfbreed", "mulatto",
    "quadroon", "octoroon", "boong", "lubra", "binghi", "honky", "ofay", "whitey", "paleface",
    "gyp", "gypped", "gypper", "gypping", "gypster",
    // sexual-orientation and disability slurs, and a lookalike
    "fag", "faggot", "fagot", "dyke", "homo", "nance", "poof", "pouf", "poofter", "retard",
    "mongoloid", "mong", "midget", "spastic", "schizo"};

bool offensive_english_word(const std::string& word) {
  for (const char* root : kOffensiveRoots)
    if (word.rfind(root, 0) == 0) return true;
  return std::any_of(std::begin(kOffensiveWords), std::end(kOffensiveWords),
                     [&](const char* w) { return word == w; });
}

}  // namespace

bool english_word(const std::string& word) {
  if (word.empty() || offensive_english_word(word)) return false;
  bool vowel = false, numeral = true;
  for (char c : word) {
    if (c < 'a' || c > 'z') return false;
    if (c == 'a' || c == 'e' || c == 'i' || c == 'o' || c == 'u' || c == 'y') vowel = true;
    if (c != 'i' && c != 'v' && c != 'x') numeral = false;
  }
  return vowel && !numeral;
}

const std::vector<std::string>& tok_pisin_words() {
  // Everyday Tok Pisin vocabulary: pronouns and particles, people, body, home, nature, food,
  // animals, numbers, time, adjectives (-pela), verbs (transitive -im) and a few more.
  static const char* kText =
      "mi yu em mipela yumi yupela ol emi bilong long na tasol bai bin save laik ken mas no nogat "
      "yes olsem wanem husat we hamas taim nau bihain pastaim asde tumora tude nait moning apinun de "
      "wik mun yia oltaim sampela olgeta planti moa inap tru giaman gen yet ating maski pinis "
      "man meri pikinini papa mama brata susa tambu wantok lapun yangpela bikman pasindia tisa dokta "
      "polis kuskus draiva sutman "
      "het gras ai nus maus tit tang yau nek han pinga lek bel bun skin blut bros baksait "
      "haus ples taun rot bris dua windo rum bet tebol sia banis gaden stua maket skul ofis sios "
      "diwai wara solwara riva ston graun maunten san sta ren win klaut paia smok bus kunai nambis "
      "ailand wel hul "
      "kaikai pik dok pusi kakaruk pisin pis snek binatang muruk kapul kumu kaukau taro banana "
      "kokonas rais tin abus suga sol kopi bret mit sup sospen plet naip spun kap botol bokis bilum "
      "klos trausis siot laplap hat "
      "wan tu tri foa faiv sikis seven et nain ten handet tausen "
      "bikpela liklik gutpela nogut nupela olpela longpela sotpela strongpela hatpela kolpela "
      "waitpela blakpela retpela grinpela yelopela hevi isi klia hariap orait "
      "kam go wokabaut ron sindaun sanap slip kirap stap kamap godaun kambek raun wok toktok tok "
      "singsing lotu pilai krai lap dai sik "
      "lukim harim tingim painim kisim givim putim kukim wasim katim holim pulim pusim brukim "
      "stretim redim lainim skulim raitim ritim tokim askim bekim helpim kilim lusim pinisim "
      "statim opim pasim kolim baim salim mekim wokim dringim kaikaim laikim save "
      "stori mani wok singaut amamas belhat pret sori tingting bel hevi "
      "balus kanu sip ka trak baisikel rot bris "
      "antap aninit insait ausait namel klostu longwe hia hap arasait narapela wanpela tupela "
      "tripela olgeta ";
  static const std::vector<std::string> words = [] {
    std::vector<std::string> v;
    std::istringstream in(kText);
    std::string w;
    while (in >> w) v.push_back(w);
    return clean_words(v, Script::kLatin);
  }();
  return words;
}

}  // namespace fw_synth
