#include "tools/fw_synth_corpus/espeak.h"

#include <espeak-ng/speak_lib.h>

#include <cstring>
#include <map>

#include "tools/fw_synth_corpus/synth.h"

namespace fw_synth {

namespace {

// What the callback fills during one espeak_Synth call (synchronous mode: the callback runs
// inside espeak_Synth on this thread).
struct Collector {
  Synthesis* out = nullptr;
  std::map<int, int> word_of_position;  // 1-based code-point position -> word index
  int current_word = -1;
  bool failed = false;
};
Collector* g_collector = nullptr;

int synth_callback(short* wav, int numsamples, espeak_EVENT* events) {
  Collector* c = g_collector;
  if (!c) return 1;
  if (wav && numsamples > 0) c->out->samples.insert(c->out->samples.end(), wav, wav + numsamples);
  for (espeak_EVENT* e = events; e && e->type != espeakEVENT_LIST_TERMINATED; ++e) {
    switch (e->type) {
      case espeakEVENT_WORD: {
        auto it = c->word_of_position.find(e->text_position);
        c->current_word = it == c->word_of_position.end() ? -1 : it->second;
        break;
      }
      case espeakEVENT_PHONEME: {
        // id.string holds up to 8 bytes, zero-terminated unless all 8 are used.
        char name[9] = {0};
        std::memcpy(name, e->id.string, 8);
        PhoneEvent p;
        p.sample = e->sample;
        p.name = name;
        p.word = (p.name.empty() || p.name[0] == '_') ? -1 : c->current_word;
        c->out->phones.push_back(std::move(p));
        break;
      }
      case espeakEVENT_END:
      case espeakEVENT_MSG_TERMINATED:
        c->out->end_sample = std::max<int64_t>(c->out->end_sample, e->sample);
        break;
      default:
        break;
    }
  }
  return 0;
}

}  // namespace

Espeak::Espeak(const std::string& data_path) {
  // espeakINITIALIZE_DONT_EXIT: report missing data instead of exiting the process.
  const int options = espeakINITIALIZE_PHONEME_EVENTS | espeakINITIALIZE_DONT_EXIT;
  sample_rate_ = espeak_Initialize(AUDIO_OUTPUT_SYNCHRONOUS, 0, data_path.empty() ? nullptr : data_path.c_str(),
                                   options);
  if (sample_rate_ <= 0)
    throw Error("espeak-ng failed to initialise (no espeak-ng-data" +
                (data_path.empty() ? std::string() : " under " + data_path) + "; install espeak-ng-data)");
  espeak_SetSynthCallback(synth_callback);
}

Espeak& Espeak::get(const std::string& data_path) {
  static Espeak engine(data_path);
  return engine;
}

std::string Espeak::version() const {
  const char* path = nullptr;
  const char* v = espeak_Info(&path);
  return v ? v : "";
}

bool Espeak::has_voice(const std::string& name) {
  // espeak_SetVoiceByName falls back to a language match and ignores unknown variants; require
  // the voice to be listed under this language (or name), and the variant among the variants.
  const size_t plus = name.find('+');
  const std::string base = name.substr(0, plus);
  if (plus != std::string::npos) {
    const std::string variant = name.substr(plus + 1);
    espeak_VOICE spec;
    std::memset(&spec, 0, sizeof spec);
    spec.languages = "variant";
    bool found = false;
    for (const espeak_VOICE** v = espeak_ListVoices(&spec); v && *v; ++v) {
      const std::string id = (*v)->identifier ? (*v)->identifier : "";
      const size_t slash = id.rfind('/');
      if (id.substr(slash == std::string::npos ? 0 : slash + 1) == variant) found = true;
    }
    if (!found) return false;
  }
  bool listed = false;
  for (const espeak_VOICE** v = espeak_ListVoices(nullptr); v && *v; ++v) {
    if ((*v)->name && base == (*v)->name) listed = true;
    // languages: a sequence of (priority byte, zero-terminated name), ended by a zero byte.
    for (const char* l = (*v)->languages; l && *l;) {
      const char* lang = l + 1;
      if (base == lang) listed = true;
      l = lang + std::strlen(lang) + 1;
    }
  }
  if (!listed) return false;
  return espeak_SetVoiceByName(name.c_str()) == EE_OK;
}

Synthesis Espeak::speak(const VoiceSettings& v, const std::string& text, const std::vector<int>& word_starts) {
  const std::string name = v.variant.empty() ? v.voice : v.voice + "+" + v.variant;
  if (espeak_SetVoiceByName(name.c_str()) != EE_OK) throw Error("espeak-ng has no voice '" + name + "'");
  espeak_SetParameter(espeakRATE, v.rate, 0);
  espeak_SetParameter(espeakPITCH, v.pitch, 0);
  espeak_SetParameter(espeakRANGE, v.range, 0);
  espeak_SetParameter(espeakWORDGAP, v.word_gap, 0);
  espeak_SetParameter(espeakVOLUME, 100, 0);
  espeak_SetParameter(espeakPUNCTUATION, espeakPUNCT_NONE, 0);
  espeak_SetParameter(espeakCAPITALS, 0, 0);

  Synthesis out;
  Collector c;
  c.out = &out;
  for (size_t i = 0; i < word_starts.size(); i++) c.word_of_position[word_starts[i]] = int(i);
  g_collector = &c;
  const espeak_ERROR err =
      espeak_Synth(text.c_str(), text.size() + 1, 0, POS_CHARACTER, 0, espeakCHARS_UTF8, nullptr, nullptr);
  espeak_Synchronize();
  g_collector = nullptr;
  if (err != EE_OK) throw Error("espeak-ng failed to synthesise '" + text + "' with voice " + name);
  if (out.end_sample <= 0) out.end_sample = int64_t(out.samples.size());
  return out;
}

}  // namespace fw_synth
