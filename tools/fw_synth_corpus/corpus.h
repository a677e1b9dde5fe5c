// The corpus builder behind fw-synth-corpus: options, their validation, and the run that writes
// the Kaldi data directories, wavs, alignments, phone tables, lexicons and the corpus README.
#pragma once
#include <cstdint>
#include <iosfwd>
#include <limits>
#include <map>
#include <string>
#include <vector>

namespace fw_synth {

struct CorpusConfig {
  std::string out_dir;
  uint64_t seed = 1;
  std::vector<std::string> langs = {"ku", "kk", "te", "lt", "tpi", "ceb"};
  int speakers_per_lang = 4;
  int utts_per_speaker = 10;
  int min_words = 4, max_words = 10;  // words per utterance, uniform in [min, max]
  int vocab_size = 2000;              // words drawn per language from its word list
  int sample_rate = 16000;
  // SNRs in dB to draw from per utterance; +inf = no noise ("clean").
  std::vector<double> snr_db = {5, 10, 15, 20, std::numeric_limits<double>::infinity()};
  std::vector<std::string> noise_types = {"white", "pink", "babble"};
  int dev_speakers = -1, test_speakers = -1;  // per language; -1: max(1, speakers / 8)
  double pause_prob = 0.15;                   // a comma (clause pause) after a word
  bool write_clean = false;                   // also write the clean speech under wav_clean/
  bool relative_paths = false;                // wav.scp paths relative to out_dir, else absolute
  bool force = false;                         // replace the tool's outputs in a non-empty out_dir
  std::string dict_dir = "/usr/share/hunspell";
  std::string espeak_data;                    // "" = libespeak-ng's default
  std::map<std::string, std::string> word_lists;  // language -> UTF-8 word list replacing its source
  int babble_pool = 12;                       // utterances the babble noise is made from
  bool quiet = false;
};

struct SplitStats {
  int speakers = 0, utterances = 0;
  int64_t frames = 0;
  double seconds = 0.0;
};

struct CorpusSummary {
  // language -> split ("train", "dev", "test") -> counts
  std::map<std::string, std::map<std::string, SplitStats>> stats;
  std::map<std::string, int> phones;   // language -> phones in phones.txt (sil included)
  std::map<std::string, int> lexicon;  // language -> words in lexicon.txt
  double total_seconds = 0.0;
  int total_utterances = 0;
};

// Checks the options, the languages' voices and word sources; throws Error naming the problem.
void validate(const CorpusConfig& config);
// Builds the corpus (validating first). Progress lines go to `log` unless config.quiet.
CorpusSummary build_corpus(const CorpusConfig& config, std::ostream& log);

}  // namespace fw_synth
