// fw-synth-corpus: synthesises the bundled Babel-like six-language corpus (or English, for the
// Switchboard-style recipe) with libespeak-ng (see README.md in this directory). Errors: one line on stderr, exit status 2.
#include <charconv>
#include <cmath>
#include <cstring>
#include <exception>
#include <iostream>
#include <limits>
#include <string>
#include <vector>

#include "tools/fw_synth_corpus/corpus.h"
#include "tools/fw_synth_corpus/languages.h"
#include "tools/fw_synth_corpus/synth.h"

namespace {

using fw_synth::Error;

const char* kUsage =
    "usage: fw-synth-corpus --out DIR [options]\n"
    "\n"
    "Synthesises a Babel-like multilingual corpus with libespeak-ng: random sentences from\n"
    "hunspell word lists, several speakers per language, background noise at chosen SNRs, Kaldi\n"
    "data directories per language and split, 16-bit wavs, frame-level phone alignments (ali.txt),\n"
    "phones.txt, lexicon.txt and a README with the corpus summary. Deterministic given the options.\n"
    "\n"
    "options:\n"
    "  --out DIR                  output directory (created; must be empty unless --force)\n"
    "  --seed N                   random seed (default 1)\n"
    "  --langs LIST               comma-separated ids from ku,kk,te,lt,tpi,ceb,en (default: the six\n"
    "                             Babel stand-ins ku,kk,te,lt,tpi,ceb; en = English)\n"
    "  --speakers-per-lang N      speakers per language (default 4)\n"
    "  --utts-per-speaker N       utterances per speaker (default 10)\n"
    "  --words-per-utt N|MIN-MAX  words per utterance, uniform (default 4-10)\n"
    "  --vocab-size N             words drawn per language from its word list (default 2000)\n"
    "  --sample-rate HZ           output sample rate; espeak-ng's 22050 Hz is resampled (default 16000)\n"
    "  --snr-db LIST              SNRs in dB drawn per utterance; 'inf' or 'clean' = no noise\n"
    "                             (default 5,10,15,20,inf)\n"
    "  --noise-types LIST         from white,pink,babble (default: all three)\n"
    "  --dev-speakers N           dev speakers per language (default max(1, speakers/8))\n"
    "  --test-speakers N          test speakers per language (default max(1, speakers/8))\n"
    "  --pause-prob P             probability of a clause pause after a word (default 0.15)\n"
    "  --babble-pool N            utterances babble noise is mixed from (default 12)\n"
    "  --write-clean              also write the clean speech under DIR/wav_clean/\n"
    "  --relative-paths           wav.scp paths relative to DIR (default: absolute paths)\n"
    "  --force                    replace the corpus in a non-empty DIR\n"
    "  --dict-dir DIR             hunspell dictionaries (default /usr/share/hunspell)\n"
    "  --word-list LANG=FILE      UTF-8 word list replacing LANG's word source (repeatable)\n"
    "  --espeak-data DIR          directory holding espeak-ng-data (default: the library's)\n"
    "  --list-langs               print the languages, voices and word sources, and exit\n"
    "  --quiet                    no progress lines\n"
    "  --help                     this text\n"
    "\n"
    "Exit status: 0 success, 2 bad options or missing voices/dictionaries (one line on stderr),\n"
    "1 other failures.\n";

std::vector<std::string> split_list(const std::string& s, const std::string& opt) {
  std::vector<std::string> out;
  size_t start = 0;
  while (true) {
    const size_t comma = s.find(',', start);
    const std::string item = s.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    if (item.empty()) throw Error(opt + ": empty item in '" + s + "'");
    out.push_back(item);
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return out;
}

int64_t parse_int(const std::string& s, const std::string& opt, int64_t lo, int64_t hi) {
  int64_t v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size() || s.empty())
    throw Error(opt + " expects an integer, got '" + s + "'");
  if (v < lo || v > hi) throw Error(opt + " must be within " + std::to_string(lo) + ".." + std::to_string(hi));
  return v;
}

double parse_double(const std::string& s, const std::string& opt) {
  if (s == "inf" || s == "clean") return std::numeric_limits<double>::infinity();
  size_t pos = 0;
  double v = 0.0;
  try {
    v = std::stod(s, &pos);
  } catch (const std::exception&) {
    pos = 0;
  }
  if (s.empty() || pos != s.size() || std::isnan(v)) throw Error(opt + " expects a number, got '" + s + "'");
  return v;
}

void list_langs() {
  for (const auto& l : fw_synth::known_languages())
    std::cout << l.id << "\t" << l.name << "\tvoice " << l.voice << "\t"
              << (l.dictionary.empty() ? std::string("built-in word list")
                                       : "hunspell " + l.dictionary + " (" + l.package + ")")
              << "\t" << l.note << "\n";
}

}  // namespace

int main(int argc, char** argv) {
  fw_synth::CorpusConfig c;
  try {
    std::vector<std::string> args(argv + 1, argv + argc);
    for (size_t i = 0; i < args.size(); i++) {
      std::string opt = args[i], value;
      bool has_value = false;
      if (opt.rfind("--", 0) == 0 && opt.find('=') != std::string::npos) {
        value = opt.substr(opt.find('=') + 1);
        opt = opt.substr(0, opt.find('='));
        has_value = true;
      }
      auto flag = [&] {
        if (has_value) throw Error(opt + " takes no value");
      };
      auto need = [&]() -> std::string {
        if (has_value) return value;
        if (i + 1 >= args.size()) throw Error(opt + " needs a value");
        return args[++i];
      };
      if (opt == "--help" || opt == "-h") {
        std::cout << kUsage;
        return 0;
      } else if (opt == "--list-langs") {
        flag();
        list_langs();
        return 0;
      } else if (opt == "--out") {
        c.out_dir = need();
      } else if (opt == "--seed") {
        const std::string v = need();
        uint64_t seed = 0;
        auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), seed);
        if (v.empty() || ec != std::errc() || p != v.data() + v.size())
          throw Error("--seed expects a non-negative integer, got '" + v + "'");
        c.seed = seed;
      } else if (opt == "--langs") {
        c.langs = split_list(need(), opt);
      } else if (opt == "--speakers-per-lang") {
        c.speakers_per_lang = int(parse_int(need(), opt, 1, 100000));
      } else if (opt == "--utts-per-speaker") {
        c.utts_per_speaker = int(parse_int(need(), opt, 1, 1000000));
      } else if (opt == "--words-per-utt") {
        const std::string v = need();
        const size_t dash = v.find('-');
        if (dash == std::string::npos) {
          c.min_words = c.max_words = int(parse_int(v, opt, 1, 200));
        } else {
          c.min_words = int(parse_int(v.substr(0, dash), opt, 1, 200));
          c.max_words = int(parse_int(v.substr(dash + 1), opt, 1, 200));
        }
      } else if (opt == "--vocab-size") {
        c.vocab_size = int(parse_int(need(), opt, 1, 10000000));
      } else if (opt == "--sample-rate") {
        c.sample_rate = int(parse_int(need(), opt, 8000, 48000));
      } else if (opt == "--snr-db") {
        c.snr_db.clear();
        for (const auto& s : split_list(need(), opt)) c.snr_db.push_back(parse_double(s, opt));
      } else if (opt == "--noise-types") {
        c.noise_types = split_list(need(), opt);
      } else if (opt == "--dev-speakers") {
        c.dev_speakers = int(parse_int(need(), opt, 0, 100000));
      } else if (opt == "--test-speakers") {
        c.test_speakers = int(parse_int(need(), opt, 0, 100000));
      } else if (opt == "--pause-prob") {
        c.pause_prob = parse_double(need(), opt);
      } else if (opt == "--babble-pool") {
        c.babble_pool = int(parse_int(need(), opt, 1, 100000));
      } else if (opt == "--write-clean") {
        flag();
        c.write_clean = true;
      } else if (opt == "--relative-paths") {
        flag();
        c.relative_paths = true;
      } else if (opt == "--force") {
        flag();
        c.force = true;
      } else if (opt == "--quiet") {
        flag();
        c.quiet = true;
      } else if (opt == "--dict-dir") {
        c.dict_dir = need();
      } else if (opt == "--espeak-data") {
        c.espeak_data = need();
      } else if (opt == "--word-list") {
        const std::string v = need();
        const size_t eq = v.find('=');
        if (eq == std::string::npos || eq == 0 || eq + 1 == v.size())
          throw Error("--word-list expects LANG=FILE, got '" + v + "'");
        c.word_lists[v.substr(0, eq)] = v.substr(eq + 1);
      } else {
        throw Error("unknown option '" + args[i] + "' (see --help)");
      }
    }
    fw_synth::build_corpus(c, std::cerr);
    return 0;
  } catch (const fw_synth::Error& e) {
    std::cerr << "fw-synth-corpus: error: " << e.what() << "\n";
    return 2;
  } catch (const std::exception& e) {
    std::string msg = e.what();
    for (char& ch : msg)
      if (ch == '\n') ch = ' ';
    std::cerr << "fw-synth-corpus: error: " << msg << "\n";
    return 1;
  }
}
