// fw-audio: audio features on files (DESIGN.md §8).
//   fw-audio info FILE
//   fw-audio SUBCOMMAND [options] IN OUT     (spectrogram melspectrogram mfcc lfcc fbank kaldi-mfcc
//                                            kaldi-spectrogram kaldi-pitch resample)
//   fw-audio plot [options] IN OUT.png
// IN: an audio file or scp:wav.scp; OUT: FILE.npy, ark:FILE.ark, ark,scp:FILE.ark,FILE.scp (and an
// audio file for resample). Errors print one line "fw-audio: <subcommand>: ..." and exit 1
// (failures) or 2 (wrong command line).
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "fw/audio/io.h"
#include "fw/audio/kaldi_io.h"
#include "fw/fw.h"
#include "tools/fw_audio/args.h"
#include "tools/fw_audio/commands.h"
#include "tools/fw_audio/output.h"
#include "tools/fw_audio/plot.h"

namespace fs = std::filesystem;
using fw::Tensor;

namespace fwaudio {
namespace {

constexpr const char* kInOut =
    "IN:  an audio file (WAV, FLAC, OGG/Vorbis, ... through libsndfile), or scp:wav.scp (Kaldi list:\n"
    "     \"utt-id path\" per line)\n"
    "OUT: FILE.npy (float32; one input only), ark:FILE.ark or ark,scp:FILE.ark,FILE.scp (Kaldi binary\n"
    "     float matrices, one per utterance; the utterance id of a plain IN file is its name without\n"
    "     directory and extension)\n";

void top_usage(std::ostream& os) {
  os << "usage: fw-audio info FILE\n"
        "       fw-audio SUBCOMMAND [options] IN OUT\n"
        "       fw-audio plot [options] IN OUT.png\n"
        "       fw-audio SUBCOMMAND --help\n\n"
        "Audio features with torchaudio's numerics and defaults, written as NumPy or Kaldi files.\n\n"
        "subcommands:\n";
  os << "  info               sample rate, frames, channels, duration, bits per sample, encoding of FILE\n";
  for (const auto& c : commands()) {
    std::string n = c.name;
    os << "  " << n << std::string(19 - n.size(), ' ') << c.summary << "\n";
  }
  os << "  plot               log-mel spectrogram picture (PNG) with time and frequency axes\n\n"
     << kInOut
     << "\nOptions are torchaudio's argument names in kebab case, written --name=value or --name value;\n"
        "booleans also take --name (true), --no-name, --name=true|false. Each subcommand's --help lists\n"
        "its options and defaults.\n";
}

void command_usage(std::ostream& os, const Command& c, const OptionSet& opts) {
  os << "usage: fw-audio " << c.name << " [options] IN OUT\n\n" << c.summary << "\n";
  switch (c.result) {
    case Command::Result::Features:
      os << "OUT.npy holds the transform of the (channels, time) waveform as torchaudio.load returns it;\n"
            "ark: output holds (frames, bins) of the first channel per utterance.\n";
      break;
    case Command::Result::Frames:
      os << "Samples are taken on the int16 scale (waveform * 32768) as Kaldi reads them; --channel picks\n"
            "the channel (-1: the first). OUT holds (frames, bins) per utterance.\n";
      break;
    case Command::Result::Waveform:
      os << "OUT may also be an audio file (.wav, .flac, .ogg) written with fw::audio::save at the new\n"
            "rate; .npy and ark: outputs hold (channels, samples) on the [-1, 1] scale.\n";
      break;
  }
  os << "\n" << kInOut << "\noptions:\n" << opts.describe() << "  --help" << std::string(24, ' ')
     << "print this help\n";
}

void plot_usage(std::ostream& os, const OptionSet& opts) {
  os << "usage: fw-audio plot [options] IN OUT.png\n\n"
        "Draws the log-mel spectrogram (MelSpectrogram, then AmplitudeToDB) of one channel of IN (an audio\n"
        "file) with a time axis in seconds and a frequency axis in Hz, as an RGB PNG of --width x --height\n"
        "pixels.\n\noptions:\n"
     << opts.describe() << "  --help" << std::string(24, ' ') << "print this help\n";
}

// The error text as one line.
std::string one_line(std::string s) {
  for (char& c : s)
    if (c == '\n' || c == '\r') c = ' ';
  while (!s.empty() && s.back() == ' ') s.pop_back();
  return s;
}

struct Utterance {
  std::string utt, path;
};

std::vector<Utterance> inputs(const std::string& in) {
  std::vector<Utterance> out;
  if (in.rfind("scp:", 0) == 0) {
    for (auto& e : read_wav_scp(in.substr(4))) out.push_back({e.utt, e.path});
    return out;
  }
  if (in.rfind("ark:", 0) == 0 || in.rfind("ark,", 0) == 0)
    throw UsageError("archive input (" + in + ") is not supported; give an audio file or scp:wav.scp");
  std::string stem = fs::path(in).stem().string();
  out.push_back({stem.empty() ? "utt" : stem, in});
  return out;
}

std::pair<Tensor, int64_t> load_audio(const Utterance& u, bool from_scp) {
  const std::string who = from_scp ? u.utt + ": " : std::string();
  Tensor w;
  int64_t sr = 0;
  try {
    std::tie(w, sr) = fw::audio::load(u.path);
  } catch (const std::exception& e) {
    throw Failure(who + "cannot read " + u.path + ": " + one_line(e.what()));
  }
  if (w.dim() == 1) w = w.unsqueeze(0);
  if (w.sizes()[1] == 0) throw Failure(who + u.path + " has no samples");
  return {w, sr};
}

bool ends_with(const std::string& s, const std::string& suffix) {
  if (s.size() < suffix.size()) return false;
  std::string tail = s.substr(s.size() - suffix.size());
  for (char& c : tail) c = char(std::tolower(static_cast<unsigned char>(c)));
  return tail == suffix;
}

// An output directory that cannot take the file fails before any work.
void check_writable_dir(const std::string& path) {
  fs::path dir = fs::path(path).parent_path();
  if (dir.empty()) dir = ".";
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) throw Failure("cannot write " + path + ": no directory " + dir.string());
  if (::access(dir.c_str(), W_OK) != 0) throw Failure("cannot write " + path + ": directory " + dir.string() + " is not writable");
}

int run_info(const std::vector<std::string>& args) {
  OptionSet opts;
  auto pos = opts.parse(args);
  if (opts.help_requested()) {
    std::cout << "usage: fw-audio info FILE\n\nPrints the sample rate, frames, channels, duration, bits per sample "
                 "and encoding of FILE\n(torchaudio.info).\n";
    return 0;
  }
  if (pos.size() != 1)
    throw UsageError(pos.empty() ? std::string("missing FILE")
                                 : "expected one FILE, got " + std::to_string(pos.size()) + " arguments");
  fw::audio::AudioMetaData m;
  try {
    m = fw::audio::info(pos[0]);
  } catch (const std::exception& e) {
    throw Failure("cannot read " + pos[0] + ": " + one_line(e.what()));
  }
  char dur[64];
  std::snprintf(dur, sizeof dur, "%.6f", m.sample_rate > 0 ? double(m.num_frames) / double(m.sample_rate) : 0.0);
  std::cout << "File:            " << pos[0] << "\n"
            << "Sample rate:     " << m.sample_rate << "\n"
            << "Frames:          " << m.num_frames << "\n"
            << "Channels:        " << m.num_channels << "\n"
            << "Duration:        " << dur << " s\n"
            << "Bits per sample: " << m.bits_per_sample << "\n"
            << "Encoding:        " << m.encoding << "\n";
  return 0;
}

int run_plot(const std::vector<std::string>& args) {
  OptionSet opts;
  declare_plot(opts);
  auto pos = opts.parse(args);
  if (opts.help_requested()) {
    plot_usage(std::cout, opts);
    return 0;
  }
  if (pos.size() != 2)
    throw UsageError((pos.size() < 2 ? std::string("missing IN or OUT.png")
                                     : "expected IN OUT.png, got " + std::to_string(pos.size()) + " arguments") +
                     " (usage: fw-audio plot [options] IN OUT.png)");
  if (!ends_with(pos[1], ".png")) throw UsageError("OUT must be a .png file, got " + pos[1]);
  if (pos[0].rfind("scp:", 0) == 0) throw UsageError("plot takes one audio file, not " + pos[0]);
  AtomicFile out(pos[1]);
  auto [w, sr] = load_audio({"", pos[0]}, false);
  PlotData p = compute_plot(opts, w, sr);
  // Colours span [peak - top_db, peak] dB (or [min, peak]).
  double peak = p.db.numel() ? p.db.max().item<double>() : 0.0;
  auto top = opts.get_opt_double("top-db");
  double floor = top ? peak - *top : (p.db.numel() ? p.db.min().item<double>() : 0.0);
  Tensor v = peak > floor ? ((p.db - floor) / (peak - floor)).clamp(0.0, 1.0) : fw::zeros_like(p.db);
  SpectrogramAxes axes{p.duration, p.f_min, p.f_max, p.mel_scale};
  Image img = render_spectrogram(v, axes, int(opts.get_int("width")), int(opts.get_int("height")));
  out.write(png_bytes(img));
  out.commit();
  return 0;
}

int run_command(const Command& c, const std::vector<std::string>& args) {
  OptionSet opts;
  c.declare(opts);
  auto pos = opts.parse(args);
  if (opts.help_requested()) {
    command_usage(std::cout, c, opts);
    return 0;
  }
  if (pos.size() != 2)
    throw UsageError((pos.empty() ? std::string("missing IN and OUT")
                      : pos.size() == 1 ? "missing IN or OUT: got only '" + pos[0] + "'"
                                        : "expected IN OUT, got " + std::to_string(pos.size()) + " arguments") +
                     " (usage: fw-audio " + c.name + " [options] IN OUT)");
  const std::string &in = pos[0], &out = pos[1];

  // The output kind first, so a wrong OUT fails before any work.
  WSpecifier ws;
  const bool ark = parse_wspecifier(out, &ws);
  const bool audio_out = !ark && c.result == Command::Result::Waveform &&
                         (ends_with(out, ".wav") || ends_with(out, ".flac") || ends_with(out, ".ogg"));
  if (!ark && !audio_out && !ends_with(out, ".npy"))
    throw UsageError("OUT must be FILE.npy, ark:FILE.ark or ark,scp:FILE.ark,FILE.scp" +
                     std::string(c.result == Command::Result::Waveform ? " or an audio file (.wav, .flac, .ogg)" : "") +
                     ", got " + out);
  std::vector<Utterance> utts = inputs(in);
  const bool from_scp = in.rfind("scp:", 0) == 0;
  if (!ark && utts.size() > 1)
    throw UsageError(in + " lists " + std::to_string(utts.size()) + " utterances; " + out +
                     " takes one (write ark:FILE.ark or ark,scp:FILE.ark,FILE.scp)");

  std::unique_ptr<fw::audio::kaldi_io::MatrixWriter> ark_writer;
  std::unique_ptr<AtomicFile> npy;
  if (ark) {
    try {
      ark_writer = std::make_unique<fw::audio::kaldi_io::MatrixWriter>(ws.spec);
    } catch (const fw::Error& e) {
      throw Failure("cannot write " + ws.ark + ": " + one_line(e.what()));
    }
  } else if (audio_out) {
    check_writable_dir(out);
  } else {
    npy = std::make_unique<AtomicFile>(out);
  }

  for (const auto& u : utts) {
    auto [w, sr] = load_audio(u, from_scp);
    Tensor y;
    try {
      y = c.compute(opts, w, sr);
    } catch (const fw::Error& e) {
      throw Failure((from_scp ? u.utt + ": " : std::string()) + one_line(e.what()));
    }
    if (npy) {
      npy->write(npy_bytes(y));
    } else if (audio_out) {
      fw::audio::SaveOptions so;
      so.encoding = opts.get_opt_string("encoding").value_or("");
      so.bits_per_sample = opts.get_opt_int("bits-per-sample").value_or(-1);
      try {
        fw::audio::save(out, y, opts.get_int("new-sample-rate"), so);
      } catch (const fw::Error& e) {
        throw Failure("cannot write " + out + ": " + one_line(e.what()));
      }
    } else {
      // Kaldi matrices: (frames, bins) of the first channel for transforms.
      Tensor m = c.result == Command::Result::Features ? y.select(0, 0).transpose(0, 1) : y;
      ark_writer->write(u.utt, m);
    }
  }
  if (npy) npy->commit();
  if (ark_writer) ark_writer->close();
  return 0;
}

int main_impl(const std::vector<std::string>& args, std::string* sub) {
  if (args.empty()) throw UsageError("missing subcommand (try fw-audio --help)");
  const std::string& name = args[0];
  if (name == "--help" || name == "-h" || name == "help") {
    top_usage(std::cout);
    return 0;
  }
  std::vector<std::string> rest(args.begin() + 1, args.end());
  if (name == "info") {
    *sub = name;
    return run_info(rest);
  }
  if (name == "plot") {
    *sub = name;
    return run_plot(rest);
  }
  if (const Command* c = find_command(name)) {
    *sub = name;
    return run_command(*c, rest);
  }
  throw UsageError("unknown subcommand '" + name + "' (try fw-audio --help)");
}

}  // namespace
}  // namespace fwaudio

int main(int argc, char** argv) {
  // One process per command: FFTW's measured plans (hundreds of ms for the first few sizes) cost
  // more than they save here. FW_FFTW_ESTIMATE=0 in the environment brings them back.
  ::setenv("FW_FFTW_ESTIMATE", "1", /*overwrite=*/0);
  std::vector<std::string> args(argv + 1, argv + argc);
  std::string sub;
  auto fail = [&](const std::string& msg, int code) {
    std::cerr << "fw-audio: " << (sub.empty() ? "" : sub + ": ") << fwaudio::one_line(msg) << std::endl;
    return code;
  };
  try {
    return fwaudio::main_impl(args, &sub);
  } catch (const fwaudio::UsageError& e) {
    return fail(e.what(), 2);
  } catch (const fwaudio::Failure& e) {
    return fail(e.what(), 1);
  } catch (const fw::Error& e) {
    return fail(e.what(), 1);
  } catch (const std::bad_alloc&) {
    return fail("out of memory", 1);
  } catch (const std::exception& e) {
    return fail(std::string("internal error: ") + e.what(), 1);
  } catch (...) {
    return fail("internal error", 1);
  }
}
