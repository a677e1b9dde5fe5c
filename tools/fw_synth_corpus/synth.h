// The pieces of fw-synth-corpus that do not need espeak-ng: a portable seeded random number
// generator, word lists from hunspell dictionaries, noise generators and SNR mixing, frame-level
// alignments matching fw::audio::kaldi::fbank's framing, and Kaldi text files. Built as the static
// library fw_synth_corpus_lib that the tool and tests/tools_synth link.
#pragma once
#include <cstdint>
#include <random>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace fw_synth {

// Errors the tool reports as one line and exit status 2.
struct Error : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// ---- random numbers
// std::mt19937_64's output sequence is fixed by the C++ standard, but the std:: distributions are
// not (libstdc++, libc++ and MSVC give different values), so the distributions are written here.
class Rng {
 public:
  explicit Rng(uint64_t seed) : engine_(seed) {}
  uint64_t next() { return engine_(); }
  double uniform();                              // [0, 1) with 53 random bits
  double uniform(double lo, double hi);          // [lo, hi)
  int64_t uniform_int(int64_t lo, int64_t hi);   // [lo, hi], unbiased (rejection sampling)
  double normal();                               // standard normal (Box-Muller, pairs cached)
  bool bernoulli(double p) { return uniform() < p; }
  template <class T>
  const T& choice(const std::vector<T>& v) {
    if (v.empty()) throw std::logic_error("Rng::choice on an empty list");
    return v[size_t(uniform_int(0, int64_t(v.size()) - 1))];
  }
  template <class T>
  void shuffle(std::vector<T>& v) {  // Fisher-Yates
    for (size_t i = v.size(); i > 1; i--) std::swap(v[i - 1], v[size_t(uniform_int(0, int64_t(i) - 1))]);
  }

 private:
  std::mt19937_64 engine_;
  bool has_spare_ = false;
  double spare_ = 0.0;
};

// A seed for an independent stream named by (stream, a, b, c), so that e.g. one utterance's
// content does not depend on how many utterances were made before it (splitmix64 finaliser
// over FNV-1a of the name).
uint64_t derive_seed(uint64_t seed, std::string_view stream, uint64_t a = 0, uint64_t b = 0, uint64_t c = 0);

// Sampling from a fixed discrete distribution by inverse CDF (binary search).
class Discrete {
 public:
  explicit Discrete(const std::vector<double>& weights);
  size_t sample(Rng& rng) const;
  size_t size() const { return cdf_.size(); }

 private:
  std::vector<double> cdf_;
};

// ---- text
// UTF-8 <-> code points. decode returns false on malformed input.
bool utf8_decode(std::string_view s, std::u32string& out);
std::string utf8_encode(std::u32string_view s);
size_t utf8_length(std::string_view s);  // code points (espeak-ng's text positions count these)
// Converts bytes in `charset` (as in a hunspell .aff SET line; iconv names) to UTF-8.
std::string to_utf8(const std::string& bytes, const std::string& charset);

enum class Script { kLatin, kCyrillic, kTelugu };
// A "clean" word: min_len..max_len code points, every one a lower-case letter of the script
// (Latin: a-z and the lower-case letters of Latin-1 and Latin Extended-A; Cyrillic: U+0430-U+045F
// and the lower-case letters of U+0460-U+052F, which covers Kazakh's ә ғ қ ң ө ұ ү һ і; Telugu:
// the letters, vowel signs and marks of U+0C00-U+0C7F except digits and fraction signs). Upper case
// (proper nouns, abbreviations), digits, apostrophes and hyphens are rejected.
bool is_clean_word(std::u32string_view w, Script script, size_t min_len = 2, size_t max_len = 16);

// Reads a hunspell dictionary: the charset from the .aff file's SET line (UTF-8 if none), the
// .dic's first line (the entry count) skipped, a BOM skipped, affix flags ("/...") and
// morphological fields (after a tab or space) stripped. Returns the clean words, sorted (bytewise)
// and unique. Throws Error when a file cannot be read.
std::vector<std::string> read_hunspell_words(const std::string& dic_path, const std::string& aff_path,
                                             Script script, size_t min_len = 2, size_t max_len = 16);
// A plain UTF-8 word list (one or more words per line, '#' starts a comment), filtered the same way.
std::vector<std::string> read_word_list(const std::string& path, Script script, size_t min_len = 2,
                                        size_t max_len = 16);
// Filters in-memory words the same way (sorted, unique).
std::vector<std::string> clean_words(const std::vector<std::string>& words, Script script, size_t min_len = 2,
                                     size_t max_len = 16);

// ---- signals
double energy(const std::vector<float>& x);  // sum of squares, in double
double rms(const std::vector<float>& x);
std::vector<float> white_noise(size_t n, Rng& rng);  // Gaussian, unit variance
// Pink (1/f) noise by the Voss-McCartney scheme: 16 random rows, row k redrawn every 2^(k+1) samples,
// plus a white row; normalised to unit RMS.
std::vector<float> pink_noise(size_t n, Rng& rng);
// Babble: `talkers` utterances from `pool`, each at unit RMS, starting at random offsets and
// looped to cover n samples, summed and normalised to unit RMS.
std::vector<float> babble_noise(size_t n, const std::vector<std::vector<float>>& pool, int talkers, Rng& rng);

// Returns speech + g * noise with g chosen so that 10 log10(energy(speech) / energy(g * noise))
// equals snr_db over the whole signal (noise must be at least as long as speech; the first
// speech.size() samples are used). The gain is stored in *noise_gain when given. Throws Error for
// silent speech or noise or a non-finite SNR.
std::vector<float> mix_at_snr(const std::vector<float>& speech, const std::vector<float>& noise, double snr_db,
                              double* noise_gain = nullptr);
// 10 log10(energy(clean) / energy(noisy - clean)), the SNR that mix_at_snr produced.
double measure_snr_db(const std::vector<float>& clean, const std::vector<float>& noisy);

// ---- frames and alignments
// fbank's framing with fw::audio::kaldi defaults: 25 ms windows every 10 ms, snip_edges = true,
// window and shift in samples computed exactly as fw::audio::kaldi does (int(rate * ms * 0.001)).
int64_t window_samples(double sample_rate, double frame_length_ms = 25.0);
int64_t shift_samples(double sample_rate, double frame_shift_ms = 10.0);
int64_t num_frames(int64_t num_samples, double sample_rate);

// A phone label starting at `start` (in samples of the output signal, fractional allowed). Segments
// are sorted by start; each lasts until the next one starts.
struct LabelStart {
  double start = 0.0;
  int label = 0;
};
// One label per frame: the label active at the frame centre, i * shift + (window - 1) / 2;
// `before` for a centre before the first segment.
std::vector<int> frame_labels(const std::vector<LabelStart>& segments, int64_t num_samples, double sample_rate,
                              int before);

// ---- files
// Writes the lines ('\n'-terminated) to path, creating parent directories. Throws Error on failure.
void write_lines(const std::string& path, const std::vector<std::string>& lines);
void make_dirs(const std::string& path);

}  // namespace fw_synth
