// A small wrapper over libespeak-ng's C API (speak_lib.h) in synchronous mode: the synth callback
// collects the 16-bit samples and the espeakEVENT_WORD / espeakEVENT_PHONEME events with their
// sample positions (espeak_EVENT::sample, counted from the start of the message). Phoneme names
// are eSpeak's ASCII mnemonics (espeakINITIALIZE_PHONEME_IPA is not set): IPA names lose the pause
// phonemes (they come back as empty strings) and can exceed the 8-byte event field.
// espeak-ng keeps global state, so there is one engine per process and it is not thread-safe.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace fw_synth {

struct VoiceSettings {
  std::string voice;    // espeak-ng voice name, e.g. "kk"
  std::string variant;  // "" or a variant name such as "m3" or "f2" (voice+variant)
  int rate = 175;       // words per minute, 80..450
  int pitch = 50;       // base pitch, 0..100
  int range = 50;       // pitch range, 0..100
  int word_gap = 0;     // extra pause between words, units of 10 ms
};

struct PhoneEvent {
  int64_t sample = 0;  // position in the synthesised signal (espeak's sample rate)
  std::string name;    // eSpeak mnemonic; names starting with '_' are pauses
  int word = -1;       // index of the word (in the order of `word_starts`) or -1
};

struct Synthesis {
  std::vector<int16_t> samples;
  std::vector<PhoneEvent> phones;
  int64_t end_sample = 0;  // position of the end-of-message event
};

class Espeak {
 public:
  // Initialises espeak-ng (data_path empty: the library's default). Throws Error when the data is
  // missing. Only the first call's data_path counts.
  static Espeak& get(const std::string& data_path = "");
  int sample_rate() const { return sample_rate_; }
  std::string version() const;
  // Whether espeak-ng accepts the voice (and variant, "name+variant").
  bool has_voice(const std::string& name);
  // Speaks UTF-8 text. word_starts: the 1-based code-point positions of the words in `text`, as
  // espeakEVENT_WORD reports them; phonemes are attributed to the word whose event came last.
  // Throws Error if espeak-ng fails.
  Synthesis speak(const VoiceSettings& v, const std::string& text, const std::vector<int>& word_starts);

 private:
  explicit Espeak(const std::string& data_path);
  int sample_rate_ = 0;
};

}  // namespace fw_synth
