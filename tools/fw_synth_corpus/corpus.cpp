#include "tools/fw_synth_corpus/corpus.h"

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <exception>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <mutex>
#include <ostream>
#include <set>
#include <sstream>
#include <thread>

#include "fw/audio/filtering.h"
#include "fw/audio/io.h"
#include "fw/fw.h"
#include "tools/fw_synth_corpus/espeak.h"
#include "tools/fw_synth_corpus/languages.h"
#include "tools/fw_synth_corpus/synth.h"

namespace fw_synth {

namespace {

namespace fs = std::filesystem;

// espeak-ng voice variants the speakers are drawn from (male m1-m7, female f1-f5).
const std::vector<std::string> kVariants = {"m1", "m2", "m3", "m4", "m5", "m6", "m7",
                                            "f1", "f2", "f3", "f4", "f5"};
const std::vector<std::string> kSplits = {"train", "dev", "test"};
const std::vector<std::string> kNoiseTypes = {"white", "pink", "babble"};
constexpr int kSil = 0;  // local and final id of the silence phone

std::string format(const char* fmt, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, fmt, v);
  return buf;
}

std::string snr_text(double snr) { return std::isfinite(snr) ? format("%g", snr) : "inf"; }

std::string padded(int v, int width) {
  std::string s = std::to_string(v);
  return std::string(size_t(std::max(0, width - int(s.size()))), '0') + s;
}

int digits(int v) { return int(std::to_string(v).size()); }

struct Speaker {
  std::string id, split;
  char gender = 'm';
  VoiceSettings voice;
  double level_db = -24.0;  // speech RMS level in dBFS
};

struct Utterance {
  std::string id, speaker, split, wav_rel;
  std::vector<std::string> words;
  std::vector<int> ali;  // local phone ids
  int64_t samples = 0;
  std::string noise = "none";
  double snr = std::numeric_limits<double>::infinity();
};

struct LangState {
  const Language* lang = nullptr;
  std::vector<std::string> vocab;
  std::unique_ptr<Discrete> zipf;
  std::map<std::string, int> phone_ids{{"sil", kSil}};
  std::vector<std::string> phone_names{"sil"};
  std::map<std::string, std::set<std::string>> lexicon;  // word -> pronunciations
  std::vector<Speaker> speakers;
  std::vector<Utterance> utts;

  int phone_id(const std::string& name) {
    auto it = phone_ids.find(name);
    if (it != phone_ids.end()) return it->second;
    const int id = int(phone_names.size());
    phone_ids.emplace(name, id);
    phone_names.push_back(name);
    return id;
  }
};

bool is_pause(const std::string& name) { return name.empty() || name[0] == '_'; }

int auto_heldout(int speakers) { return std::max(1, speakers / 8); }

std::string dictionary_path(const CorpusConfig& c, const Language& l, const char* ext) {
  return (fs::path(c.dict_dir) / (l.dictionary + ext)).string();
}

std::string word_source(const CorpusConfig& c, const Language& l) {
  auto it = c.word_lists.find(l.id);
  if (it != c.word_lists.end()) return "word list " + it->second;
  if (l.dictionary.empty()) return "built-in Tok Pisin word list";
  return "hunspell " + l.dictionary + ".dic (" + l.package + ")";
}

std::vector<std::string> load_words(const CorpusConfig& c, const Language& l) {
  std::vector<std::string> words;
  auto it = c.word_lists.find(l.id);
  if (it != c.word_lists.end())
    words = read_word_list(it->second, l.script);
  else if (l.dictionary.empty())
    words = tok_pisin_words();
  else
    words = read_hunspell_words(dictionary_path(c, l, ".dic"), dictionary_path(c, l, ".aff"), l.script);
  if (l.keep_word)
    words.erase(std::remove_if(words.begin(), words.end(), [&](const std::string& w) { return !l.keep_word(w); }),
                words.end());
  if (words.empty()) throw Error("no usable words for " + l.name + " in the " + word_source(c, l));
  return words;
}

// Picks the vocabulary (vocab_size words, or all) and gives the words Zipf-like frequencies
// (weight 1 / rank over a random ranking).
void make_vocabulary(const CorpusConfig& c, LangState& L, std::vector<std::string> words) {
  Rng rng(derive_seed(c.seed, "vocab:" + L.lang->id));
  if (int64_t(words.size()) > c.vocab_size) {
    for (size_t i = 0; i < size_t(c.vocab_size); i++)  // partial Fisher-Yates
      std::swap(words[i], words[size_t(rng.uniform_int(int64_t(i), int64_t(words.size()) - 1))]);
    words.resize(size_t(c.vocab_size));
    std::sort(words.begin(), words.end());
  }
  std::vector<size_t> rank(words.size());
  for (size_t i = 0; i < rank.size(); i++) rank[i] = i;
  rng.shuffle(rank);
  std::vector<double> weight(words.size());
  for (size_t r = 0; r < rank.size(); r++) weight[rank[r]] = 1.0 / double(r + 1);
  L.vocab = std::move(words);
  L.zipf = std::make_unique<Discrete>(weight);
}

VoiceSettings random_voice(const Language& l, const std::string& variant, Rng& rng) {
  VoiceSettings v;
  v.voice = l.voice;
  v.variant = variant;
  v.rate = int(rng.uniform_int(135, 195));
  v.pitch = variant[0] == 'f' ? int(rng.uniform_int(45, 80)) : int(rng.uniform_int(20, 60));
  v.range = int(rng.uniform_int(25, 80));
  v.word_gap = int(rng.uniform_int(0, 1));
  return v;
}

struct Spoken {
  std::vector<std::string> words;
  std::vector<float> speech;  // at the output rate, no padding, espeak's level
  std::vector<PhoneEvent> phones;
  int64_t espeak_samples = 0;
};

std::vector<float> resample_to(const std::vector<int16_t>& s, int in_rate, int out_rate) {
  std::vector<float> x(s.size());
  for (size_t i = 0; i < s.size(); i++) x[i] = float(s[i]) / 32768.0f;
  if (in_rate == out_rate || x.empty()) return x;
  fw::Tensor y = fw::audio::functional::resample(fw::tensor(x), in_rate, out_rate).contiguous();
  const float* p = y.data_ptr<float>();
  return std::vector<float>(p, p + y.numel());
}

// A random sentence from the vocabulary, spoken. Retried (with new words) if espeak-ng leaves a
// word without phonemes, so that every transcript word has a pronunciation.
Spoken speak_sentence(const CorpusConfig& c, const LangState& L, const VoiceSettings& v, Rng& rng, int min_words,
                      int max_words) {
  Espeak& es = Espeak::get(c.espeak_data);
  for (int attempt = 0; attempt < 8; attempt++) {
    const int n = int(rng.uniform_int(min_words, max_words));
    Spoken out;
    std::string text;
    std::vector<int> starts;
    for (int i = 0; i < n; i++) {
      const std::string& w = L.vocab[L.zipf->sample(rng)];
      starts.push_back(int(utf8_length(text)) + 1);
      out.words.push_back(w);
      text += w;
      if (i + 1 < n) {
        if (rng.bernoulli(c.pause_prob)) text += ",";
        text += " ";
      }
    }
    text += ".";
    Synthesis syn = es.speak(v, text, starts);
    std::vector<int> count(size_t(n), 0);
    for (const auto& p : syn.phones)
      if (p.word >= 0 && p.word < n) count[size_t(p.word)]++;
    if (syn.samples.empty() || std::find(count.begin(), count.end(), 0) != count.end()) continue;
    out.speech = resample_to(syn.samples, es.sample_rate(), c.sample_rate);
    out.phones = std::move(syn.phones);
    out.espeak_samples = int64_t(syn.samples.size());
    return out;
  }
  throw Error("espeak-ng voice '" + v.voice + "' left words of " + L.lang->name +
              " unpronounced in 8 tries (check the word list)");
}

void save_wav(const std::string& path, const std::vector<float>& x, int rate) {
  make_dirs(fs::path(path).parent_path().string());
  fw::audio::SaveOptions o;
  o.encoding = "PCM_S";
  o.bits_per_sample = 16;
  fw::audio::save(path, fw::tensor(x).reshape({1, int64_t(x.size())}), rate, o);
}

// Saves wavs on two background threads: fw::audio::save fsyncs every file, which on a busy disk
// costs more than synthesising it. The files do not depend on the order they are written in.
class WavWriter {
 public:
  WavWriter() {
    for (int i = 0; i < 2; i++) threads_.emplace_back([this] { work(); });
  }
  ~WavWriter() { finish(false); }
  void add(std::string path, std::vector<float> x, int rate) {
    std::unique_lock<std::mutex> lock(mu_);
    room_.wait(lock, [this] { return queue_.size() < 16 || error_; });
    if (error_) rethrow(lock);
    queue_.push_back({std::move(path), std::move(x), rate});
    ready_.notify_one();
  }
  // Waits for the queue to drain; rethrows the first failure.
  void finish(bool rethrow_error = true) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      done_ = true;
    }
    ready_.notify_all();
    for (auto& t : threads_)
      if (t.joinable()) t.join();
    std::unique_lock<std::mutex> lock(mu_);
    if (rethrow_error && error_) rethrow(lock);
  }

 private:
  struct Job {
    std::string path;
    std::vector<float> x;
    int rate;
  };
  void work() {
    for (;;) {
      Job job;
      {
        std::unique_lock<std::mutex> lock(mu_);
        ready_.wait(lock, [this] { return !queue_.empty() || done_; });
        if (queue_.empty()) return;
        job = std::move(queue_.front());
        queue_.pop_front();
        room_.notify_one();
      }
      try {
        save_wav(job.path, job.x, job.rate);
      } catch (...) {
        std::lock_guard<std::mutex> lock(mu_);
        if (!error_) error_ = std::current_exception();
        room_.notify_all();
      }
    }
  }
  void rethrow(std::unique_lock<std::mutex>& lock) {
    std::exception_ptr e = error_;
    lock.unlock();
    std::rethrow_exception(e);
  }
  std::mutex mu_;
  std::condition_variable ready_, room_;
  std::deque<Job> queue_;
  std::vector<std::thread> threads_;
  std::exception_ptr error_;
  bool done_ = false;
};

void scale(std::vector<float>& x, double g) {
  for (auto& v : x) v = float(double(v) * g);
}

bool uses_noise(const CorpusConfig& c) {
  return std::any_of(c.snr_db.begin(), c.snr_db.end(), [](double s) { return std::isfinite(s); });
}
bool uses_babble(const CorpusConfig& c) {
  return uses_noise(c) && std::find(c.noise_types.begin(), c.noise_types.end(), "babble") != c.noise_types.end();
}

// Removes what an earlier run wrote into out_dir (only the tool's own names).
void prepare_out_dir(const CorpusConfig& c) {
  const fs::path out(c.out_dir);
  std::error_code ec;
  if (fs::exists(out, ec)) {
    if (!fs::is_directory(out, ec)) throw Error("--out " + c.out_dir + " exists and is not a directory");
    if (!fs::is_empty(out, ec)) {
      if (!c.force) throw Error("output directory " + c.out_dir + " is not empty (--force replaces its corpus)");
      for (const char* name : {"wav", "wav_clean", "data", "README.md", "summary.tsv"}) {
        fs::remove_all(out / name, ec);
        if (ec) throw Error("cannot remove " + (out / name).string() + ": " + ec.message());
      }
    }
  }
  make_dirs(c.out_dir);
}

void write_language(const CorpusConfig& c, const fs::path& root, LangState& L, CorpusSummary& summary) {
  const std::string& id = L.lang->id;
  // Final phone table: sil = 0, then the other phones in byte order.
  std::vector<std::string> names(L.phone_names.begin() + 1, L.phone_names.end());
  std::sort(names.begin(), names.end());
  std::vector<int> remap(L.phone_names.size(), kSil);
  std::vector<std::string> phones_txt = {"sil 0"};
  for (size_t i = 0; i < names.size(); i++) {
    remap[size_t(L.phone_ids.at(names[i]))] = int(i) + 1;
    phones_txt.push_back(names[i] + " " + std::to_string(i + 1));
  }
  const fs::path lang_dir = root / "data" / id;
  write_lines((lang_dir / "phones.txt").string(), phones_txt);
  std::vector<std::string> lex;
  for (const auto& [word, prons] : L.lexicon)
    for (const auto& p : prons) lex.push_back(word + " " + p);
  write_lines((lang_dir / "lexicon.txt").string(), lex);
  summary.phones[id] = int(phones_txt.size());
  summary.lexicon[id] = int(L.lexicon.size());

  const fs::path abs_root = fs::absolute(root).lexically_normal();
  for (const auto& split : kSplits) {
    std::vector<const Utterance*> utts;
    for (const auto& u : L.utts)
      if (u.split == split) utts.push_back(&u);
    std::vector<const Speaker*> spks;
    for (const auto& s : L.speakers)
      if (s.split == split) spks.push_back(&s);
    if (spks.empty()) continue;
    std::sort(utts.begin(), utts.end(), [](auto* a, auto* b) { return a->id < b->id; });
    std::sort(spks.begin(), spks.end(), [](auto* a, auto* b) { return a->id < b->id; });
    std::vector<std::string> wav_scp, text, utt2spk, spk2utt, spk2gender, utt2dur, utt2noise, ali;
    SplitStats& st = summary.stats[id][split];
    st.speakers = int(spks.size());
    for (const Utterance* u : utts) {
      const std::string path = c.relative_paths ? u->wav_rel : (abs_root / u->wav_rel).string();
      wav_scp.push_back(u->id + " " + path);
      std::string t = u->id;
      for (const auto& w : u->words) t += " " + w;
      text.push_back(t);
      utt2spk.push_back(u->id + " " + u->speaker);
      const double dur = double(u->samples) / double(c.sample_rate);
      utt2dur.push_back(u->id + " " + format("%.4f", dur));
      utt2noise.push_back(u->id + " " + u->noise + " " + snr_text(u->snr));
      std::string a = u->id;
      for (int p : u->ali) {
        a += ' ';
        a += std::to_string(remap[size_t(p)]);
      }
      ali.push_back(a);
      st.utterances++;
      st.frames += int64_t(u->ali.size());
      st.seconds += dur;
    }
    for (const Speaker* s : spks) {
      std::string line = s->id;
      for (const Utterance* u : utts)
        if (u->speaker == s->id) line += " " + u->id;
      spk2utt.push_back(line);
      spk2gender.push_back(s->id + " " + std::string(1, s->gender));
    }
    const fs::path d = lang_dir / split;
    write_lines((d / "wav.scp").string(), wav_scp);
    write_lines((d / "text").string(), text);
    write_lines((d / "utt2spk").string(), utt2spk);
    write_lines((d / "spk2utt").string(), spk2utt);
    write_lines((d / "spk2gender").string(), spk2gender);
    write_lines((d / "utt2dur").string(), utt2dur);
    write_lines((d / "utt2noise").string(), utt2noise);
    write_lines((d / "ali.txt").string(), ali);
    summary.total_seconds += st.seconds;
    summary.total_utterances += st.utterances;
  }
}

std::string join(const std::vector<std::string>& v, const std::string& sep) {
  std::string s;
  for (const auto& x : v) s += (s.empty() ? "" : sep) + x;
  return s;
}

void write_readme(const CorpusConfig& c, const fs::path& root, const std::vector<LangState>& langs,
                  const CorpusSummary& s) {
  std::vector<std::string> snrs;
  for (double v : c.snr_db) snrs.push_back(snr_text(v));
  std::vector<std::string> r;
  r.push_back("# Synthetic Babel-like corpus (fw-synth-corpus)");
  r.push_back("");
  r.push_back("Synthesised with libespeak-ng " + Espeak::get(c.espeak_data).version() +
              "; deterministic given the options below. Not real speech: numbers obtained on it are "
              "not comparable with results on IARPA Babel.");
  r.push_back("");
  r.push_back("Options: `--seed " + std::to_string(c.seed) + " --langs " + join(c.langs, ",") +
              " --speakers-per-lang " + std::to_string(c.speakers_per_lang) + " --utts-per-speaker " +
              std::to_string(c.utts_per_speaker) + " --words-per-utt " + std::to_string(c.min_words) + "-" +
              std::to_string(c.max_words) + " --vocab-size " + std::to_string(c.vocab_size) +
              " --sample-rate " + std::to_string(c.sample_rate) + " --snr-db " + join(snrs, ",") +
              " --noise-types " + join(c.noise_types, ",") + " --pause-prob " + format("%g", c.pause_prob) +
              "`");
  r.push_back("");
  r.push_back("| language | id | Babel | voice | words from | phones | lexicon words |");
  r.push_back("|---|---|---|---|---|---|---|");
  for (const auto& L : langs) {
    const Language& l = *L.lang;
    r.push_back("| " + l.name + " | " + l.id + " | " + (l.babel_id ? std::to_string(l.babel_id) : "-") + " | " +
                l.voice + " | " +
                word_source(c, l) + " | " + std::to_string(s.phones.at(l.id)) + " | " +
                std::to_string(s.lexicon.at(l.id)) + " |");
  }
  r.push_back("");
  r.push_back("| language | split | speakers | utterances | frames | hours |");
  r.push_back("|---|---|---|---|---|---|");
  for (const auto& L : langs) {
    const auto& per = s.stats.at(L.lang->id);
    for (const auto& split : kSplits) {
      auto it = per.find(split);
      if (it == per.end()) continue;
      const SplitStats& st = it->second;
      r.push_back("| " + L.lang->id + " | " + split + " | " + std::to_string(st.speakers) + " | " +
                  std::to_string(st.utterances) + " | " + std::to_string(st.frames) + " | " +
                  format("%.4f", st.seconds / 3600.0) + " |");
    }
  }
  r.push_back("");
  r.push_back("Total: " + std::to_string(s.total_utterances) + " utterances, " +
              format("%.4f", s.total_seconds / 3600.0) + " hours.");
  r.push_back("");
  r.push_back("Layout: `data/<lang>/<split>/{wav.scp,text,utt2spk,spk2utt,spk2gender,utt2dur,utt2noise,ali.txt}`, "
              "`data/<lang>/{phones.txt,lexicon.txt}`, `wav/<lang>/<speaker>/<utt>.wav` (16-bit PCM, " +
              std::to_string(c.sample_rate) + " Hz" + (c.write_clean ? "; clean speech under `wav_clean/`" : "") +
              "). `ali.txt`: one phone id (phones.txt, `sil` = 0) per 10 ms frame of 25 ms windows with "
              "snip_edges, the phone at the frame centre; `utt2noise`: noise type and SNR in dB over the "
              "whole file (`none inf` = clean).");
  write_lines((root / "README.md").string(), r);

  std::vector<std::string> tsv = {"language\tsplit\tspeakers\tutterances\tframes\tseconds"};
  for (const auto& L : langs)
    for (const auto& [split, st] : s.stats.at(L.lang->id))
      tsv.push_back(L.lang->id + "\t" + split + "\t" + std::to_string(st.speakers) + "\t" +
                    std::to_string(st.utterances) + "\t" + std::to_string(st.frames) + "\t" +
                    format("%.4f", st.seconds));
  write_lines((root / "summary.tsv").string(), tsv);
}

}  // namespace

void validate(const CorpusConfig& c) {
  if (c.out_dir.empty()) throw Error("--out DIR is required");
  if (c.langs.empty()) throw Error("--langs is empty");
  std::set<std::string> seen;
  for (const auto& id : c.langs) {
    find_language(id);
    if (!seen.insert(id).second) throw Error("language '" + id + "' is given twice in --langs");
  }
  for (const auto& [id, path] : c.word_lists) {
    if (!seen.count(id)) throw Error("--word-list for '" + id + "', which is not in --langs");
    if (!fs::is_regular_file(path)) throw Error("word list " + path + " for '" + id + "' not found");
  }
  const int S = c.speakers_per_lang;
  if (S < 1) throw Error("--speakers-per-lang must be at least 1");
  const int dev = c.dev_speakers >= 0 ? c.dev_speakers : auto_heldout(S);
  const int test = c.test_speakers >= 0 ? c.test_speakers : auto_heldout(S);
  if (dev + test >= S)
    throw Error("--speakers-per-lang " + std::to_string(S) + " leaves no training speaker (" + std::to_string(dev) +
                " dev + " + std::to_string(test) + " test speakers)");
  if (c.utts_per_speaker < 1) throw Error("--utts-per-speaker must be at least 1");
  if (c.min_words < 1 || c.max_words < c.min_words || c.max_words > 200)
    throw Error("--words-per-utt must be N or MIN-MAX with 1 <= MIN <= MAX <= 200");
  if (c.vocab_size < 1) throw Error("--vocab-size must be at least 1");
  if (c.sample_rate < 8000 || c.sample_rate > 48000) throw Error("--sample-rate must be within 8000..48000 Hz");
  if (c.snr_db.empty()) throw Error("--snr-db is empty");
  for (double v : c.snr_db)
    if (std::isnan(v) || (std::isfinite(v) && (v < -30 || v > 100)) || v == -std::numeric_limits<double>::infinity())
      throw Error("--snr-db values must be within -30..100 dB or 'inf'/'clean'");
  std::set<std::string> types;
  for (const auto& t : c.noise_types) {
    if (std::find(kNoiseTypes.begin(), kNoiseTypes.end(), t) == kNoiseTypes.end())
      throw Error("unknown noise type '" + t + "' (known: white,pink,babble)");
    if (!types.insert(t).second) throw Error("noise type '" + t + "' is given twice");
  }
  if (uses_noise(c) && c.noise_types.empty()) throw Error("--noise-types is empty but --snr-db asks for noise");
  if (!(c.pause_prob >= 0.0 && c.pause_prob <= 1.0)) throw Error("--pause-prob must be within 0..1");
  if (uses_babble(c) && c.babble_pool < 1) throw Error("--babble-pool must be at least 1");
  for (const auto& id : c.langs) {
    const Language& l = find_language(id);
    if (l.dictionary.empty() || c.word_lists.count(id)) continue;
    for (const char* ext : {".dic", ".aff"}) {
      const std::string p = dictionary_path(c, l, ext);
      if (!fs::is_regular_file(p))
        throw Error("hunspell dictionary " + p + " for " + l.name + " not found (install Debian package " +
                    l.package + ", or pass --word-list " + id + "=FILE)");
    }
  }
  // libespeak-ng falls back to its default data when the given path has none: check it here.
  if (!c.espeak_data.empty() && !fs::is_regular_file(fs::path(c.espeak_data) / "espeak-ng-data" / "phontab") &&
      !fs::is_regular_file(fs::path(c.espeak_data) / "phontab"))
    throw Error("--espeak-data " + c.espeak_data + " holds no espeak-ng-data (no phontab)");
  Espeak& es = Espeak::get(c.espeak_data);
  for (const auto& id : c.langs) {
    const Language& l = find_language(id);
    if (!es.has_voice(l.voice))
      throw Error("espeak-ng has no voice '" + l.voice + "' for " + l.name +
                  " (install espeak-ng-data; `espeak-ng --voices` lists the voices)");
  }
  for (const auto& v : kVariants)
    if (!es.has_voice(find_language(c.langs[0]).voice + "+" + v))
      throw Error("espeak-ng has no voice variant '" + v + "' (install espeak-ng-data)");
}

CorpusSummary build_corpus(const CorpusConfig& c, std::ostream& log) {
  validate(c);
  using clock = std::chrono::steady_clock;
  const auto t0 = clock::now();
  Espeak& es = Espeak::get(c.espeak_data);
  prepare_out_dir(c);
  const fs::path root(c.out_dir);

  // Vocabularies and speakers.
  std::vector<LangState> langs(c.langs.size());
  const int S = c.speakers_per_lang;
  const int n_dev = c.dev_speakers >= 0 ? c.dev_speakers : auto_heldout(S);
  const int n_test = c.test_speakers >= 0 ? c.test_speakers : auto_heldout(S);
  const int n_train = S - n_dev - n_test;
  for (size_t li = 0; li < langs.size(); li++) {
    LangState& L = langs[li];
    L.lang = &find_language(c.langs[li]);
    make_vocabulary(c, L, load_words(c, *L.lang));
    std::vector<std::string> variants = kVariants;
    Rng vr(derive_seed(c.seed, "variants:" + L.lang->id));
    vr.shuffle(variants);
    for (int s = 0; s < S; s++) {
      Rng r(derive_seed(c.seed, "speaker:" + L.lang->id, uint64_t(s)));
      Speaker spk;
      spk.id = L.lang->id + "-s" + padded(s + 1, std::max(2, digits(S)));
      spk.split = s < n_train ? "train" : s < n_train + n_dev ? "dev" : "test";
      const std::string& variant = variants[size_t(s) % variants.size()];
      spk.gender = variant[0];
      spk.voice = random_voice(*L.lang, variant, r);
      spk.level_db = r.uniform(-28.0, -20.0);
      L.speakers.push_back(spk);
    }
  }

  // The babble pool: utterances by extra random speakers (not corpus speakers) of the languages.
  std::vector<std::vector<float>> pool;
  if (uses_babble(c)) {
    for (int k = 0; k < c.babble_pool; k++) {
      Rng r(derive_seed(c.seed, "babble", uint64_t(k)));
      const LangState& L = langs[size_t(k) % langs.size()];
      const VoiceSettings v = random_voice(*L.lang, r.choice(kVariants), r);
      Spoken sp = speak_sentence(c, L, v, r, 8, 14);
      pool.push_back(std::move(sp.speech));
    }
  }

  WavWriter writer;
  const double ratio = double(c.sample_rate) / double(es.sample_rate());
  const int utt_width = std::max(3, digits(c.utts_per_speaker));
  for (auto& L : langs) {
    const auto tl = clock::now();
    const std::string& id = L.lang->id;
    for (size_t s = 0; s < L.speakers.size(); s++) {
      const Speaker& spk = L.speakers[s];
      for (int u = 0; u < c.utts_per_speaker; u++) {
        Rng rng(derive_seed(c.seed, "utt:" + id, s, uint64_t(u)));
        Spoken sp = speak_sentence(c, L, spk.voice, rng, c.min_words, c.max_words);
        Utterance utt;
        utt.id = spk.id + "-u" + padded(u + 1, utt_width);
        utt.speaker = spk.id;
        utt.split = spk.split;
        utt.words = sp.words;
        utt.wav_rel = "wav/" + id + "/" + spk.id + "/" + utt.id + ".wav";

        // Leading and trailing silence, level.
        const int64_t lead = int64_t(std::llround(rng.uniform(0.15, 0.35) * c.sample_rate));
        const int64_t trail = int64_t(std::llround(rng.uniform(0.15, 0.35) * c.sample_rate));
        const double level_db = spk.level_db + rng.uniform(-2.0, 2.0);
        const double speech_rms = rms(sp.speech);
        std::vector<float> clean(size_t(lead) + sp.speech.size() + size_t(trail), 0.0f);
        const double g = speech_rms > 0.0 ? std::pow(10.0, level_db / 20.0) / speech_rms : 1.0;
        for (size_t i = 0; i < sp.speech.size(); i++) clean[size_t(lead) + i] = float(double(sp.speech[i]) * g);

        // Noise.
        utt.snr = c.snr_db[size_t(rng.uniform_int(0, int64_t(c.snr_db.size()) - 1))];
        std::vector<float> noisy = clean;
        if (std::isfinite(utt.snr)) {
          utt.noise = c.noise_types[size_t(rng.uniform_int(0, int64_t(c.noise_types.size()) - 1))];
          Rng nr(derive_seed(c.seed, "noise:" + id, s, uint64_t(u)));
          std::vector<float> noise = utt.noise == "white"  ? white_noise(clean.size(), nr)
                                     : utt.noise == "pink" ? pink_noise(clean.size(), nr)
                                                           : babble_noise(clean.size(), pool, int(nr.uniform_int(3, 6)), nr);
          noisy = mix_at_snr(clean, noise, utt.snr);
        }
        // Keep the peak below full scale (the same gain on both keeps the SNR).
        float peak = 0.0f;
        for (size_t i = 0; i < clean.size(); i++) peak = std::max({peak, std::fabs(clean[i]), std::fabs(noisy[i])});
        if (peak > 0.95f) {
          scale(clean, 0.95 / peak);
          scale(noisy, 0.95 / peak);
        }
        utt.samples = int64_t(noisy.size());
        writer.add((root / utt.wav_rel).string(), std::move(noisy), c.sample_rate);
        if (c.write_clean)
          writer.add((root / ("wav_clean/" + id + "/" + spk.id + "/" + utt.id + ".wav")).string(), std::move(clean),
                     c.sample_rate);

        // Alignment: silence, then each phoneme from its event's position, silence after the speech.
        std::vector<LabelStart> segs = {{0.0, kSil}};
        std::vector<std::vector<std::string>> prons(sp.words.size());
        for (const auto& p : sp.phones) {
          const double start = std::max(segs.back().start, double(lead) + double(p.sample) * ratio);
          segs.push_back({start, is_pause(p.name) ? kSil : L.phone_id(p.name)});
          if (!is_pause(p.name) && p.word >= 0 && size_t(p.word) < prons.size()) prons[size_t(p.word)].push_back(p.name);
        }
        segs.push_back({std::max(segs.back().start, double(lead) + double(sp.espeak_samples) * ratio), kSil});
        utt.ali = frame_labels(segs, utt.samples, double(c.sample_rate), kSil);
        for (size_t w = 0; w < sp.words.size(); w++) L.lexicon[sp.words[w]].insert(join(prons[w], " "));
        L.utts.push_back(std::move(utt));
      }
    }
    if (!c.quiet) {
      const double secs = std::chrono::duration<double>(clock::now() - tl).count();
      log << id << ": " << L.utts.size() << " utterances (" << L.speakers.size() << " speakers, voice " << L.lang->voice
          << ", " << L.vocab.size() << " vocabulary words) in " << format("%.1f", secs) << " s\n";
    }
  }

  writer.finish();
  CorpusSummary summary;
  for (auto& L : langs) write_language(c, root, L, summary);
  write_readme(c, root, langs, summary);
  if (!c.quiet) {
    const double secs = std::chrono::duration<double>(clock::now() - t0).count();
    log << "wrote " << summary.total_utterances << " utterances, " << format("%.3f", summary.total_seconds / 3600.0)
        << " h of audio to " << c.out_dir << " in " << format("%.1f", secs) << " s\n";
  }
  return summary;
}

}  // namespace fw_synth
