// apply_codec (fw/audio/effects.h): a save/load round trip through a private temporary file, so
// the result is exactly what fw::audio::save writes and fw::audio::load reads back.
#include <stdlib.h>
#include <unistd.h>

#include <cctype>
#include <filesystem>
#include <string>
#include <tuple>
#include <vector>

#include "fw/audio/effects.h"
#include "fw/audio/io.h"

namespace fw::audio::functional {

namespace {

// A directory only this call uses, removed with its contents.
struct PrivateDir {
  std::filesystem::path path;
  PrivateDir() {
    std::string t = (std::filesystem::temp_directory_path() / "fw_codec_XXXXXX").string();
    FW_CHECK(::mkdtemp(t.data()) != nullptr, "[audio::apply_codec] cannot create a temporary directory under ",
             std::filesystem::temp_directory_path().string());
    path = t;
  }
  ~PrivateDir() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
};

}  // namespace

Tensor apply_codec(const Tensor& waveform, int64_t sample_rate, const std::string& format, bool channels_first,
                   std::optional<double> compression, std::optional<std::string> encoding,
                   std::optional<int64_t> bits_per_sample) {
  const char* op = "[audio::apply_codec]";
  FW_CHECK(waveform.defined(), op, " waveform is undefined");
  FW_CHECK(waveform.dim() >= 1, op, " waveform must be (time), (channels, time) or (time, channels) with optional "
           "batch dims, got a 0-d tensor");
  std::string fmt = format;
  for (char& c : fmt) c = char(std::tolower(static_cast<unsigned char>(c)));
  FW_CHECK(fmt == "wav" || fmt == "flac" || fmt == "ogg" || fmt == "vorbis", op, " format ", format,
           " is not supported (wav, flac, ogg or vorbis; sox-only formats such as mp3, amr-nb and gsm are not)");
  FW_CHECK(sample_rate > 0, op, " sample_rate must be positive, got ", sample_rate);
  // (batch, channels, time) or (batch, time, channels) items, each saved as one file.
  const bool mono = waveform.dim() == 1;
  Tensor w = mono ? waveform.reshape({1, 1, waveform.size(0)}) : waveform;
  if (!mono) {
    std::vector<int64_t> shape = {-1, waveform.size(-2), waveform.size(-1)};
    int64_t batch = 1;
    for (int64_t d = 0; d + 2 < waveform.dim(); d++) batch *= waveform.size(d);
    shape[0] = batch;
    w = waveform.reshape(shape);
  }
  const bool cf = mono || channels_first;
  SaveOptions so;
  so.format = fmt;
  so.channels_first = cf;
  if (encoding) so.encoding = *encoding;
  if (bits_per_sample) so.bits_per_sample = *bits_per_sample;
  if (compression) so.compression = *compression;
  LoadOptions lo;
  lo.channels_first = cf;
  PrivateDir dir;
  const std::string path = (dir.path / ("x." + std::string(fmt == "vorbis" ? "ogg" : fmt))).string();
  std::vector<Tensor> out;
  Tensor host = w.detach().cpu();
  for (int64_t b = 0; b < host.size(0); b++) {
    Tensor y;
    int64_t sr = 0;
    try {
      save(path, host[b], sample_rate, so);
      std::tie(y, sr) = load(path, lo);
    } catch (const fw::Error& e) {
      FW_CHECK(false, op, " the ", fmt, " round trip failed: ", e.what());
    }
    FW_CHECK(sr == sample_rate, op, " the ", fmt, " round trip changed the sample rate from ", sample_rate, " to ", sr);
    FW_CHECK(y.sizes() == host[b].sizes(), op, " the ", fmt, " round trip returned shape ", y.sizes(), " for ",
             host[b].sizes());
    out.push_back(y);
  }
  Tensor r = out.empty() ? fw::empty(w.sizes(), TensorOptions(kFloat)) : fw::stack(out);
  return r.reshape(waveform.sizes()).to(waveform.device());
}

}  // namespace fw::audio::functional
