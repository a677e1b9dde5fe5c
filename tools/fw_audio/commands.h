// fw-audio's feature subcommands: the options each declares (torchaudio's argument names in
// kebab case, torchaudio's defaults) and how it turns one waveform into its result.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "fw/tensor.h"
#include "tools/fw_audio/args.h"

namespace fwaudio {

struct Command {
  enum class Result {
    Features,  // (channels, bins, frames), as torchaudio.transforms on a (channels, time) waveform
    Frames,    // (frames, bins), as torchaudio.compliance.kaldi
    Waveform,  // (channels, samples)
  };
  std::string name, summary;
  Result result;
  void (*declare)(OptionSet& opts);
  // waveform: float32 (channels, time) in [-1, 1] as fw::audio::load returns it.
  fw::Tensor (*compute)(const OptionSet& opts, const fw::Tensor& waveform, int64_t sample_rate);
};

const std::vector<Command>& commands();
const Command* find_command(const std::string& name);

// What `plot` draws: MelSpectrogram of one channel in dB (AmplitudeToDB, power), (n_mels, frames).
void declare_plot(OptionSet& opts);
struct PlotData {
  fw::Tensor db;  // (n_mels, frames)
  double duration = 0, f_min = 0, f_max = 0;
  std::string mel_scale;
};
PlotData compute_plot(const OptionSet& opts, const fw::Tensor& waveform, int64_t sample_rate);

}  // namespace fwaudio
