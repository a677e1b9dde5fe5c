// Audio file I/O through libsndfile, following torchaudio 0.13's load / save / info
// (sox_io backend): same argument names, defaults, dtypes and sample scaling.
#pragma once
#include <cstdint>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "fw/tensor.h"

namespace fw::audio {

// As torchaudio.backend.common.AudioMetaData. encoding is one of "PCM_S", "PCM_U", "PCM_F",
// "FLAC", "ULAW", "ALAW", "MP3", "VORBIS", "OPUS", "GSM", "UNKNOWN";
// bits_per_sample is 0 for lossy formats.
struct AudioMetaData {
  int64_t sample_rate = 0;
  int64_t num_frames = 0;
  int64_t num_channels = 0;
  int64_t bits_per_sample = 0;
  std::string encoding;
};

// Reads the header only. Any format libsndfile reads (WAV, FLAC, OGG/Vorbis, AIFF, ...).
AudioMetaData info(const std::string& path);

struct LoadOptions {
  int64_t frame_offset = 0;   // frames to skip (seeks; FLAC and Vorbis seek sample-accurately)
  int64_t num_frames = -1;    // at most this many frames (> 0), or -1 for all remaining
  // true: float32 in [-1, 1] (int16 / 32768 etc.). false: integer PCM comes back in its native
  // dtype as in torchaudio (8-bit unsigned -> uint8, 16 -> int16, 24 (left-aligned) and 32 ->
  // int32, 8-bit signed -> int8); float, FLAC, Vorbis, mu/A-law stay float32 either way.
  bool normalize = true;
  bool channels_first = true;  // (channels, frames), else (frames, channels)
};

// Returns (waveform, sample_rate). Integer PCM, FLAC and mu/A-law match torchaudio bit for bit.
// Where torchaudio's sox backend loses precision, fw does not: float WAV and Vorbis samples are
// returned as decoded, not clipped to [-1, 1]; 32-bit integers and 64-bit floats are rounded to
// the nearest float32 (sox goes through a 25-bit grid, up to 2^-25 away). Unlike torchaudio, a
// frame_offset past the end throws instead of returning no frames (an offset equal to the
// length returns zero frames).
std::pair<Tensor, int64_t> load(const std::string& path, const LoadOptions& options = {});

struct SaveOptions {
  // "PCM_S", "PCM_U", "PCM_F", "ULAW", "ALAW" (WAV only). Empty: from bits_per_sample and the
  // dtype as torchaudio does (float -> PCM_F 32, int32 -> PCM_S 32, int16 -> PCM_S 16,
  // uint8 -> PCM_U 8; bits 8 -> PCM_U, other bits -> PCM_S; "PCM_S" alone -> 32 bit).
  std::string encoding;
  int64_t bits_per_sample = -1;  // WAV: 8/16/24/32/64; FLAC: 8/16/24 (default 24); -1 = default
  bool channels_first = true;    // waveform is (channels, frames), else (frames, channels)
  std::string format;            // "wav", "flac", "ogg" / "vorbis"; empty: from the extension
  // FLAC: 0..8 (default 8); Vorbis: quality -1..10 (default 3), as sox's -C. NaN: default.
  double compression = std::numeric_limits<double>::quiet_NaN();
};

// Writes waveform (2-D, or 1-D for mono) of dtype float32/float64 (also half/bfloat16), int32,
// int16 or uint8. Integer files get exactly the samples torchaudio writes: floats are scaled by
// 2^31, clamped (+-inf included) and rounded to the file's depth as sox does; NaN throws unless
// the file stores floats. PCM_F files keep float samples as given (torchaudio clamps them to
// [-1, 1] and truncates them to multiples of 2^-31). The file is replaced atomically: the data
// goes to a temporary file in the same directory, is fsync'ed and renamed over path, so a failed
// save leaves the old file (or none) in place.
void save(const std::string& path, const Tensor& waveform, int64_t sample_rate,
          const SaveOptions& options = {});

// Formats save() writes ("wav", "flac", "ogg", "vorbis"); load() reads these and whatever
// else the installed libsndfile decodes.
std::vector<std::string> supported_formats();

}  // namespace fw::audio
