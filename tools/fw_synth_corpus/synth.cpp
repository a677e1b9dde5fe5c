#include "tools/fw_synth_corpus/synth.h"

#include <iconv.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>

namespace fw_synth {

// ---- random numbers

double Rng::uniform() { return double(next() >> 11) * (1.0 / 9007199254740992.0); }

double Rng::uniform(double lo, double hi) { return lo + (hi - lo) * uniform(); }

int64_t Rng::uniform_int(int64_t lo, int64_t hi) {
  if (hi < lo) throw std::logic_error("Rng::uniform_int: empty range");
  const uint64_t range = uint64_t(hi) - uint64_t(lo) + 1;
  if (range == 0) return int64_t(next());  // the whole 64-bit range
  // Values below 2^64 mod range would make the low residues more likely: reject them.
  const uint64_t threshold = (uint64_t(0) - range) % range;
  for (;;) {
    const uint64_t r = next();
    if (r >= threshold) return int64_t(uint64_t(lo) + r % range);
  }
}

double Rng::normal() {
  if (has_spare_) {
    has_spare_ = false;
    return spare_;
  }
  const double u1 = 1.0 - uniform();  // (0, 1]
  const double u2 = uniform();
  const double r = std::sqrt(-2.0 * std::log(u1));
  const double a = 2.0 * M_PI * u2;
  spare_ = r * std::sin(a);
  has_spare_ = true;
  return r * std::cos(a);
}

namespace {
uint64_t splitmix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}
}  // namespace

uint64_t derive_seed(uint64_t seed, std::string_view stream, uint64_t a, uint64_t b, uint64_t c) {
  uint64_t h = 0xcbf29ce484222325ULL;  // FNV-1a
  for (unsigned char ch : stream) {
    h ^= ch;
    h *= 0x100000001b3ULL;
  }
  uint64_t x = splitmix(seed);
  for (uint64_t v : {h, a, b, c}) x = splitmix(x ^ v);
  return x;
}

Discrete::Discrete(const std::vector<double>& weights) {
  double total = 0.0;
  for (double w : weights) {
    if (!(w >= 0.0) || !std::isfinite(w)) throw std::logic_error("Discrete: weights must be finite and >= 0");
    total += w;
    cdf_.push_back(total);
  }
  if (!(total > 0.0)) throw std::logic_error("Discrete: weights sum to zero");
  for (double& c : cdf_) c /= total;
}

size_t Discrete::sample(Rng& rng) const {
  const double u = rng.uniform();
  size_t i = size_t(std::upper_bound(cdf_.begin(), cdf_.end(), u) - cdf_.begin());
  return std::min(i, cdf_.size() - 1);
}

// ---- text

bool utf8_decode(std::string_view s, std::u32string& out) {
  out.clear();
  size_t i = 0;
  while (i < s.size()) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    char32_t cp;
    size_t n;
    if (c < 0x80) {
      cp = c;
      n = 1;
    } else if ((c & 0xE0) == 0xC0) {
      cp = c & 0x1F;
      n = 2;
    } else if ((c & 0xF0) == 0xE0) {
      cp = c & 0x0F;
      n = 3;
    } else if ((c & 0xF8) == 0xF0) {
      cp = c & 0x07;
      n = 4;
    } else {
      return false;
    }
    if (i + n > s.size()) return false;
    for (size_t k = 1; k < n; k++) {
      const unsigned char d = static_cast<unsigned char>(s[i + k]);
      if ((d & 0xC0) != 0x80) return false;
      cp = (cp << 6) | (d & 0x3F);
    }
    // Overlong forms, surrogates and values past U+10FFFF are malformed.
    if ((n == 2 && cp < 0x80) || (n == 3 && cp < 0x800) || (n == 4 && cp < 0x10000) || cp > 0x10FFFF ||
        (cp >= 0xD800 && cp <= 0xDFFF))
      return false;
    out.push_back(cp);
    i += n;
  }
  return true;
}

std::string utf8_encode(std::u32string_view s) {
  std::string out;
  for (char32_t cp : s) {
    if (cp < 0x80) {
      out.push_back(char(cp));
    } else if (cp < 0x800) {
      out.push_back(char(0xC0 | (cp >> 6)));
      out.push_back(char(0x80 | (cp & 0x3F)));
    } else if (cp < 0x10000) {
      out.push_back(char(0xE0 | (cp >> 12)));
      out.push_back(char(0x80 | ((cp >> 6) & 0x3F)));
      out.push_back(char(0x80 | (cp & 0x3F)));
    } else {
      out.push_back(char(0xF0 | (cp >> 18)));
      out.push_back(char(0x80 | ((cp >> 12) & 0x3F)));
      out.push_back(char(0x80 | ((cp >> 6) & 0x3F)));
      out.push_back(char(0x80 | (cp & 0x3F)));
    }
  }
  return out;
}

size_t utf8_length(std::string_view s) {
  size_t n = 0;
  for (char c : s)
    if ((static_cast<unsigned char>(c) & 0xC0) != 0x80) n++;
  return n;
}

std::string to_utf8(const std::string& bytes, const std::string& charset) {
  std::string cs = charset;
  for (char& c : cs) c = char(std::toupper(static_cast<unsigned char>(c)));
  if (cs.empty() || cs == "UTF-8" || cs == "UTF8") return bytes;
  iconv_t cd = iconv_open("UTF-8", cs.c_str());
  if (cd == (iconv_t)-1 && cs.rfind("ISO8859", 0) == 0) {
    cs = "ISO-8859" + cs.substr(7);  // hunspell writes ISO8859-13, iconv knows ISO-8859-13
    cd = iconv_open("UTF-8", cs.c_str());
  }
  if (cd == (iconv_t)-1) throw Error("unsupported dictionary charset '" + charset + "'");
  std::string out(bytes.size() * 4 + 16, '\0');
  char* in_ptr = const_cast<char*>(bytes.data());
  size_t in_left = bytes.size();
  char* out_ptr = out.data();
  size_t out_left = out.size();
  const size_t r = iconv(cd, &in_ptr, &in_left, &out_ptr, &out_left);
  iconv_close(cd);
  if (r == size_t(-1)) throw Error("cannot convert dictionary text from " + charset + " to UTF-8");
  out.resize(out.size() - out_left);
  return out;
}

namespace {

bool latin_lower(char32_t c) {
  if (c >= 'a' && c <= 'z') return true;
  if ((c >= 0xDF && c <= 0xF6) || (c >= 0xF8 && c <= 0xFF)) return true;
  if (c >= 0x100 && c <= 0x137) return c % 2 == 1;
  if (c == 0x138) return true;
  if (c >= 0x139 && c <= 0x148) return c % 2 == 0;
  if (c >= 0x14A && c <= 0x177) return c % 2 == 1;
  if (c >= 0x179 && c <= 0x17E) return c % 2 == 0;
  return false;
}

bool cyrillic_lower(char32_t c) {
  if (c >= 0x430 && c <= 0x45F) return true;
  if (c >= 0x460 && c <= 0x481) return c % 2 == 1;
  if (c >= 0x48A && c <= 0x4BF) return c % 2 == 1;
  if (c >= 0x4C1 && c <= 0x4CE) return c % 2 == 0;
  if (c == 0x4CF) return true;
  if (c >= 0x4D0 && c <= 0x52F) return c % 2 == 1;
  return false;
}

bool telugu_letter(char32_t c) {
  if (c < 0x0C00 || c > 0x0C7F) return false;
  if (c >= 0x0C66 && c <= 0x0C6F) return false;  // digits
  if (c >= 0x0C77) return false;                  // signs and fractions
  return true;
}

// Telugu words start with a letter, not a vowel sign or mark.
bool telugu_initial(char32_t c) {
  return (c >= 0x0C05 && c <= 0x0C39) || c == 0x0C3D || (c >= 0x0C58 && c <= 0x0C61);
}

std::string read_file(const std::string& path, const std::string& what) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw Error("cannot read " + what + " " + path);
  std::ostringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

std::vector<std::string> sorted_unique(std::vector<std::string> v) {
  std::sort(v.begin(), v.end());
  v.erase(std::unique(v.begin(), v.end()), v.end());
  return v;
}

}  // namespace

bool is_clean_word(std::u32string_view w, Script script, size_t min_len, size_t max_len) {
  if (w.size() < min_len || w.size() > max_len) return false;
  for (char32_t c : w) {
    const bool ok = script == Script::kLatin      ? latin_lower(c)
                    : script == Script::kCyrillic ? cyrillic_lower(c)
                                                  : telugu_letter(c);
    if (!ok) return false;
  }
  if (script == Script::kTelugu && !telugu_initial(w[0])) return false;
  return true;
}

std::vector<std::string> clean_words(const std::vector<std::string>& words, Script script, size_t min_len,
                                     size_t max_len) {
  std::vector<std::string> out;
  std::u32string cps;
  for (const auto& w : words)
    if (utf8_decode(w, cps) && is_clean_word(cps, script, min_len, max_len)) out.push_back(w);
  return sorted_unique(std::move(out));
}

std::vector<std::string> read_hunspell_words(const std::string& dic_path, const std::string& aff_path,
                                             Script script, size_t min_len, size_t max_len) {
  std::string charset = "UTF-8";
  {
    std::istringstream aff(read_file(aff_path, "hunspell affix file"));
    std::string line;
    while (std::getline(aff, line)) {
      if (line.rfind("SET", 0) == 0 && line.size() > 3 && (line[3] == ' ' || line[3] == '\t')) {
        std::istringstream ls(line.substr(3));
        ls >> charset;
        break;
      }
    }
  }
  std::string text = to_utf8(read_file(dic_path, "hunspell dictionary"), charset);
  if (text.rfind("\xEF\xBB\xBF", 0) == 0) text.erase(0, 3);
  std::istringstream in(text);
  std::string line;
  std::vector<std::string> words;
  bool first = true;
  while (std::getline(in, line)) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (first) {
      first = false;
      if (!line.empty() && std::all_of(line.begin(), line.end(), [](char c) { return c >= '0' && c <= '9'; }))
        continue;  // the entry count
    }
    size_t end = line.find_first_of("/\t ");
    words.push_back(line.substr(0, end));
  }
  return clean_words(words, script, min_len, max_len);
}

std::vector<std::string> read_word_list(const std::string& path, Script script, size_t min_len, size_t max_len) {
  std::istringstream in(read_file(path, "word list"));
  std::string line, w;
  std::vector<std::string> words;
  while (std::getline(in, line)) {
    line = line.substr(0, line.find('#'));
    std::istringstream ls(line);
    while (ls >> w) words.push_back(w);
  }
  return clean_words(words, script, min_len, max_len);
}

// ---- signals

double energy(const std::vector<float>& x) {
  double e = 0.0;
  for (float v : x) e += double(v) * double(v);
  return e;
}

double rms(const std::vector<float>& x) { return x.empty() ? 0.0 : std::sqrt(energy(x) / double(x.size())); }

namespace {
void normalise_rms(std::vector<double>& x) {
  double e = 0.0;
  for (double v : x) e += v * v;
  if (x.empty() || !(e > 0.0)) return;
  const double g = 1.0 / std::sqrt(e / double(x.size()));
  for (double& v : x) v *= g;
}
std::vector<float> to_float(const std::vector<double>& x) { return std::vector<float>(x.begin(), x.end()); }
}  // namespace

std::vector<float> white_noise(size_t n, Rng& rng) {
  std::vector<float> out(n);
  for (auto& v : out) v = float(rng.normal());
  return out;
}

std::vector<float> pink_noise(size_t n, Rng& rng) {
  constexpr int kRows = 16;
  double rows[kRows];
  double sum = 0.0;
  for (double& r : rows) {
    r = rng.normal();
    sum += r;
  }
  std::vector<double> x(n);
  for (size_t i = 0; i < n; i++) {
    // Row k changes when bit k is the lowest set bit of the counter: every 2^(k+1) samples.
    const uint64_t counter = uint64_t(i) + 1;
    const int k = __builtin_ctzll(counter);
    if (k < kRows) {
      const double v = rng.normal();
      sum += v - rows[k];
      rows[k] = v;
    }
    x[i] = sum + rng.normal();
  }
  // Remove the mean (the slow rows wander) before normalising.
  double mean = 0.0;
  for (double v : x) mean += v;
  if (n) mean /= double(n);
  for (double& v : x) v -= mean;
  normalise_rms(x);
  return to_float(x);
}

std::vector<float> babble_noise(size_t n, const std::vector<std::vector<float>>& pool, int talkers, Rng& rng) {
  if (pool.empty()) throw Error("babble noise needs a non-empty pool of utterances");
  std::vector<size_t> order(pool.size());
  for (size_t i = 0; i < order.size(); i++) order[i] = i;
  rng.shuffle(order);
  std::vector<double> x(n, 0.0);
  for (int t = 0; t < talkers; t++) {
    const auto& u = pool[order[size_t(t) % order.size()]];
    const double r = rms(u);
    if (u.empty() || !(r > 0.0)) continue;
    const size_t offset = size_t(rng.uniform_int(0, int64_t(u.size()) - 1));
    for (size_t i = 0; i < n; i++) x[i] += double(u[(offset + i) % u.size()]) / r;
  }
  normalise_rms(x);
  return to_float(x);
}

std::vector<float> mix_at_snr(const std::vector<float>& speech, const std::vector<float>& noise, double snr_db,
                              double* noise_gain) {
  if (!std::isfinite(snr_db)) throw Error("mix_at_snr: the SNR must be finite");
  if (noise.size() < speech.size()) throw Error("mix_at_snr: the noise is shorter than the speech");
  const double es = energy(speech);
  double en = 0.0;
  for (size_t i = 0; i < speech.size(); i++) en += double(noise[i]) * double(noise[i]);
  if (!(es > 0.0)) throw Error("mix_at_snr: the speech is silent");
  if (!(en > 0.0)) throw Error("mix_at_snr: the noise is silent");
  // energy(g * noise) = es / 10^(snr / 10)  =>  g = sqrt(es / (en * 10^(snr / 10)))
  const double g = std::sqrt(es / (en * std::pow(10.0, snr_db / 10.0)));
  if (noise_gain) *noise_gain = g;
  std::vector<float> out(speech.size());
  for (size_t i = 0; i < speech.size(); i++) out[i] = float(double(speech[i]) + g * double(noise[i]));
  return out;
}

double measure_snr_db(const std::vector<float>& clean, const std::vector<float>& noisy) {
  if (clean.size() != noisy.size()) throw Error("measure_snr_db: length mismatch");
  double es = 0.0, en = 0.0;
  for (size_t i = 0; i < clean.size(); i++) {
    const double d = double(noisy[i]) - double(clean[i]);
    es += double(clean[i]) * double(clean[i]);
    en += d * d;
  }
  if (!(en > 0.0)) return std::numeric_limits<double>::infinity();
  return 10.0 * std::log10(es / en);
}

// ---- frames and alignments

int64_t window_samples(double sample_rate, double frame_length_ms) {
  return int64_t(sample_rate * frame_length_ms * 0.001);
}
int64_t shift_samples(double sample_rate, double frame_shift_ms) {
  return int64_t(sample_rate * frame_shift_ms * 0.001);
}

int64_t num_frames(int64_t num_samples, double sample_rate) {
  const int64_t w = window_samples(sample_rate), s = shift_samples(sample_rate);
  if (num_samples < w) return 0;
  return 1 + (num_samples - w) / s;
}

std::vector<int> frame_labels(const std::vector<LabelStart>& segments, int64_t num_samples, double sample_rate,
                              int before) {
  const int64_t n = num_frames(num_samples, sample_rate);
  const double w = double(window_samples(sample_rate)), s = double(shift_samples(sample_rate));
  std::vector<int> out(size_t(std::max<int64_t>(n, 0)), before);
  size_t j = 0;  // segments[j - 1] is the last segment starting at or before the centre
  for (int64_t i = 0; i < n; i++) {
    const double centre = double(i) * s + (w - 1.0) / 2.0;
    while (j < segments.size() && segments[j].start <= centre) j++;
    out[size_t(i)] = j == 0 ? before : segments[j - 1].label;
  }
  return out;
}

// ---- files

void make_dirs(const std::string& path) {
  std::error_code ec;
  std::filesystem::create_directories(path, ec);
  if (ec) throw Error("cannot create directory " + path + ": " + ec.message());
}

void write_lines(const std::string& path, const std::vector<std::string>& lines) {
  const auto parent = std::filesystem::path(path).parent_path();
  if (!parent.empty()) make_dirs(parent.string());
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  if (!f) throw Error("cannot write " + path);
  for (const auto& l : lines) f << l << '\n';
  f.flush();
  if (!f) throw Error("error writing " + path);
}

}  // namespace fw_synth
