// Audio file I/O through libsndfile, following torchaudio 0.13's load / save / info
// (sox_io backend): same argument names, defaults, dtypes and sample scaling.
#pragma once
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "fw/fw.h"

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
  int64_t frame_offset = 0;   // frames to skip; an offset past the end throws
  int64_t num_frames = -1;    // at most this many frames (> 0), or -1 for all remaining
  // true: float32 in [-1, 1] (int16 / 32768 etc.). false: integer PCM comes back in its native
  // dtype as in torchaudio (8-bit unsigned -> uint8, 16 -> int16, 24 (left-aligned) and 32 ->
  // int32, 8-bit signed -> int8); float, FLAC, Vorbis, mu/A-law stay float32 either way.
  bool normalize = true;
  bool channels_first = true;  // (channels, frames), else (frames, channels)
};

// Returns (waveform, sample_rate). Float WAV samples are returned as stored, not clipped to
// [-1, 1] (torchaudio's sox backend clips them, its soundfile backend does not).
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
  double compression = __builtin_nan("");
};

// Writes waveform (2-D, or 1-D for mono) of dtype float32/float64 (also half/bfloat16), int32,
// int16 or uint8. Float samples are scaled by 2^31, clamped and rounded to the file's bit depth
// as sox does; NaN throws unless the file stores floats. The file is replaced atomically: the
// data goes to a temporary file in the same directory, is fsync'ed and renamed over path.
void save(const std::string& path, const Tensor& waveform, int64_t sample_rate,
          const SaveOptions& options = {});

// Formats save() writes ("wav", "flac", "ogg", "vorbis"); load() reads these and whatever
// else the installed libsndfile decodes.
std::vector<std::string> supported_formats();

}  // namespace fw::audio
