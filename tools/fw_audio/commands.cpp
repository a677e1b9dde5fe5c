#include "tools/fw_audio/commands.h"

#include <cmath>

#include "fw/audio.h"
#include "fw/audio/filtering.h"
#include "fw/fft.h"

namespace fwaudio {

namespace T = fw::audio::transforms;
namespace K = fw::audio::kaldi;
using fw::Tensor;

namespace {

// ---- shared option groups
void declare_sample_rate(OptionSet& o) {
  o.add_int("sample-rate", "none", "sample rate in Hz used for the filter banks; none = the file's", true);
}
int64_t sample_rate(const OptionSet& o, int64_t file_rate) {
  int64_t sr = o.get_opt_int("sample-rate").value_or(file_rate);
  if (sr <= 0) throw UsageError("--sample-rate must be positive, got " + std::to_string(sr));
  return sr;
}

// n_fft .. onesided of torchaudio.transforms.Spectrogram (MelSpectrogram's melkwargs, LFCC's
// speckwargs). normalized_words: the strings --normalized takes besides true/false.
void declare_stft(OptionSet& o, std::vector<std::string> normalized_words) {
  o.add_int("n-fft", "400", "size of the FFT; n-fft/2+1 frequency bins");
  o.add_int("win-length", "none", "window size; none = n-fft", true);
  o.add_int("hop-length", "none", "hop between frames; none = win-length / 2", true);
  o.add_int("pad", "0", "two-sided zero padding of the signal");
  o.add_string("window-fn", "hann", "window function (torch.*_window, periodic)",
               {"hann", "hamming", "blackman", "bartlett", "kaiser"});
  o.add_double("power", "2", "exponent of the magnitude (1: magnitude, 2: power)");
  o.add_bool("normalized", false,
             normalized_words.empty() ? "normalise by the window's L2 norm"
                                      : "normalise by the window's L2 norm (true = window) or by frame_length",
             std::move(normalized_words));
  o.add_bool("center", true, "pad both sides so frame t is centred at t * hop-length");
  o.add_string("pad-mode", "reflect", "padding used with --center", {"reflect", "constant", "replicate", "circular"});
  o.add_bool("onesided", true, "keep only the non-negative frequencies");
}

T::WindowFn window_fn(const std::string& name) {
  if (name == "hann") return [](int64_t n) { return fw::hann_window(n); };
  if (name == "hamming") return [](int64_t n) { return fw::hamming_window(n); };
  if (name == "blackman") return [](int64_t n) { return fw::blackman_window(n); };
  if (name == "bartlett") return [](int64_t n) { return fw::bartlett_window(n); };
  return [](int64_t n) { return fw::kaiser_window(n); };
}

double power(const OptionSet& o) {
  double p = o.get_double("power");
  if (!(p > 0)) throw UsageError("--power must be positive, got " + o.text("power"));
  return p;
}

T::SpectrogramOptions spectrogram_options(const OptionSet& o) {
  T::SpectrogramOptions s;
  s.n_fft(o.get_int("n-fft"))
      .win_length(o.get_opt_int("win-length"))
      .hop_length(o.get_opt_int("hop-length"))
      .pad(o.get_int("pad"))
      .window_fn(window_fn(o.get_string("window-fn")))
      .power(power(o))
      .center(o.get_bool("center"))
      .pad_mode(o.get_string("pad-mode"))
      .onesided(o.get_bool("onesided"));
  const std::string& n = o.text("normalized");
  s.normalized(n == "true" ? fw::audio::functional::SpecNormalized(true)
               : n == "false" ? fw::audio::functional::SpecNormalized(false)
                              : fw::audio::functional::SpecNormalized(n));
  return s;
}

// Frequency range and mel layout shared by MelSpectrogram and MFCC's melkwargs.
void declare_mel(OptionSet& o, const std::string& norm_name) {
  o.add_double("f-min", "0", "lowest frequency in Hz");
  o.add_double("f-max", "none", "highest frequency in Hz; none = sample-rate / 2", true);
  o.add_int("n-mels", "128", "number of mel filter banks");
  o.add_string(norm_name, "none", "mel filter normalisation (slaney: area normalisation)", {"slaney"}, true);
  o.add_string("mel-scale", "htk", "mel scale", {"htk", "slaney"});
}

T::MelSpectrogramOptions mel_options(const OptionSet& o, int64_t sr, const std::string& norm_name) {
  T::SpectrogramOptions s = spectrogram_options(o);
  T::MelSpectrogramOptions m;
  m.sample_rate(sr)
      .n_fft(s.n_fft())
      .win_length(s.win_length())
      .hop_length(s.hop_length())
      .f_min(o.get_double("f-min"))
      .f_max(o.get_opt_double("f-max"))
      .pad(s.pad())
      .n_mels(o.get_int("n-mels"))
      .window_fn(s.window_fn())
      .power(*s.power())
      .normalized(o.get_bool("normalized"))
      .center(s.center())
      .pad_mode(s.pad_mode())
      .onesided(s.onesided())
      .norm(o.get_opt_string(norm_name))
      .mel_scale(o.get_string("mel-scale"));
  return m;
}

// Optional conversion of spectrogram / melspectrogram output to decibels.
void declare_db(OptionSet& o) {
  o.add_bool("db", false, "convert to decibels (AmplitudeToDB; stype magnitude when --power=1, else power)");
  o.add_double("top-db", "none", "with --db: floor at the peak minus this many dB (implies --db)", true);
}
Tensor maybe_db(const OptionSet& o, const Tensor& x) {
  auto top = o.get_opt_double("top-db");
  if (!o.get_bool("db") && !top) return x;
  T::AmplitudeToDB db(T::AmplitudeToDBOptions().stype(o.get_double("power") == 1.0 ? "magnitude" : "power").top_db(top));
  return db->forward(x);
}

// DCT options shared by MFCC and LFCC.
void declare_cepstrum(OptionSet& o, const std::string& n_name, const std::string& n_default,
                      const std::string& log_name, const std::string& log_help) {
  o.add_int(n_name, n_default, "number of coefficients to keep");
  o.add_int("dct-type", "2", "DCT type (only 2)");
  o.add_string("norm", "ortho", "DCT normalisation", {"ortho"}, true);
  o.add_bool(log_name, false, log_help);
  o.add_double("top-db", "80", "dynamic range of the dB conversion (torchaudio's fixed 80); none = unlimited", true);
}

// ---- spectrogram
void declare_spectrogram(OptionSet& o) {
  declare_stft(o, {"window", "frame_length"});
  declare_db(o);
}
Tensor compute_spectrogram(const OptionSet& o, const Tensor& w, int64_t) {
  T::Spectrogram m(spectrogram_options(o));
  return maybe_db(o, m->forward(w));
}

// ---- melspectrogram
void declare_melspectrogram(OptionSet& o) {
  declare_sample_rate(o);
  declare_stft(o, {});
  declare_mel(o, "norm");
  declare_db(o);
}
Tensor compute_melspectrogram(const OptionSet& o, const Tensor& w, int64_t sr) {
  T::MelSpectrogram m(mel_options(o, sample_rate(o, sr), "norm"));
  return maybe_db(o, m->forward(w));
}

// ---- mfcc
void declare_mfcc(OptionSet& o) {
  declare_sample_rate(o);
  declare_cepstrum(o, "n-mfcc", "40", "log-mels", "log(mel + 1e-6) instead of decibels");
  declare_stft(o, {});
  declare_mel(o, "mel-norm");
}
Tensor compute_mfcc(const OptionSet& o, const Tensor& w, int64_t sr) {
  int64_t rate = sample_rate(o, sr);
  T::MFCC m(T::MFCCOptions()
                .sample_rate(rate)
                .n_mfcc(o.get_int("n-mfcc"))
                .dct_type(o.get_int("dct-type"))
                .norm(o.get_opt_string("norm"))
                .log_mels(o.get_bool("log-mels"))
                .melkwargs(mel_options(o, rate, "mel-norm")));
  m->amplitude_to_db->options.top_db(o.get_opt_double("top-db"));
  m->amplitude_to_db->reset();
  return m->forward(w);
}

// ---- lfcc
void declare_lfcc(OptionSet& o) {
  declare_sample_rate(o);
  o.add_int("n-filter", "128", "number of linear filters");
  o.add_double("f-min", "0", "lowest frequency in Hz");
  o.add_double("f-max", "none", "highest frequency in Hz; none = sample-rate / 2", true);
  declare_cepstrum(o, "n-lfcc", "40", "log-lf", "log(filtered + 1e-6) instead of decibels");
  declare_stft(o, {"window", "frame_length"});
}
Tensor compute_lfcc(const OptionSet& o, const Tensor& w, int64_t sr) {
  T::LFCC m(T::LFCCOptions()
                .sample_rate(sample_rate(o, sr))
                .n_filter(o.get_int("n-filter"))
                .f_min(o.get_double("f-min"))
                .f_max(o.get_opt_double("f-max"))
                .n_lfcc(o.get_int("n-lfcc"))
                .dct_type(o.get_int("dct-type"))
                .norm(o.get_opt_string("norm"))
                .log_lf(o.get_bool("log-lf"))
                .speckwargs(spectrogram_options(o)));
  m->amplitude_to_db->options.top_db(o.get_opt_double("top-db"));
  m->amplitude_to_db->reset();
  return m->forward(w);
}

// ---- Kaldi features (torchaudio.compliance.kaldi)
void declare_kaldi_frame(OptionSet& o) {
  o.add_double("blackman-coeff", "0.42", "constant of the generalised Blackman window");
  o.add_int("channel", "-1", "channel to use (-1: the first)");
  o.add_double("dither", "0", "dithering constant (0: none)");
  o.add_double("energy-floor", "1", "floor on the energy (absolute, not relative)");
  o.add_double("frame-length", "25", "frame length in milliseconds");
  o.add_double("frame-shift", "10", "frame shift in milliseconds");
  o.add_double("min-duration", "0", "minimum duration of segments to process, in seconds");
  o.add_double("preemphasis-coefficient", "0.97", "coefficient for the pre-emphasis filter");
  o.add_bool("raw-energy", true, "compute the energy before pre-emphasis and windowing");
  o.add_bool("remove-dc-offset", true, "subtract the mean from the waveform of each frame");
  o.add_bool("round-to-power-of-two", true, "round the window size up to a power of two for the FFT");
  o.add_double("sample-frequency", "none", "sample rate in Hz; none = the file's", true);
  o.add_bool("snip-edges", true, "only frames that fit in the signal (false: reflect at the ends)");
  o.add_bool("subtract-mean", false, "subtract the mean of each feature over the utterance");
  o.add_string("window-type", "povey", "window type", {"hamming", "hanning", "povey", "rectangular", "blackman"});
}
template <class Opts>
void kaldi_frame(const OptionSet& o, Opts& k, int64_t sr) {
  k.blackman_coeff(o.get_double("blackman-coeff"))
      .channel(o.get_int("channel"))
      .dither(o.get_double("dither"))
      .energy_floor(o.get_double("energy-floor"))
      .frame_length(o.get_double("frame-length"))
      .frame_shift(o.get_double("frame-shift"))
      .min_duration(o.get_double("min-duration"))
      .preemphasis_coefficient(o.get_double("preemphasis-coefficient"))
      .raw_energy(o.get_bool("raw-energy"))
      .remove_dc_offset(o.get_bool("remove-dc-offset"))
      .round_to_power_of_two(o.get_bool("round-to-power-of-two"))
      .sample_frequency(o.get_opt_double("sample-frequency").value_or(double(sr)))
      .snip_edges(o.get_bool("snip-edges"))
      .subtract_mean(o.get_bool("subtract-mean"))
      .window_type(o.get_string("window-type"));
}
void declare_kaldi_mel(OptionSet& o) {
  o.add_double("high-freq", "0", "high cutoff of the mel bins in Hz (<= 0: offset from Nyquist)");
  o.add_bool("htk-compat", false, "HTK-compatible output (energy last; mfcc: scaled C0)");
  o.add_double("low-freq", "20", "low cutoff of the mel bins in Hz");
  o.add_int("num-mel-bins", "23", "number of triangular mel bins");
  o.add_bool("use-energy", false, "add the (log) energy as an extra coefficient");
  o.add_double("vtln-high", "-500", "high inflection point of the VTLN warping (< 0: offset from high-freq)");
  o.add_double("vtln-low", "100", "low inflection point of the VTLN warping");
  o.add_double("vtln-warp", "1", "VTLN warp factor (1: none)");
}
template <class Opts>
void kaldi_mel(const OptionSet& o, Opts& k) {
  k.high_freq(o.get_double("high-freq"))
      .htk_compat(o.get_bool("htk-compat"))
      .low_freq(o.get_double("low-freq"))
      .num_mel_bins(o.get_int("num-mel-bins"))
      .use_energy(o.get_bool("use-energy"))
      .vtln_high(o.get_double("vtln-high"))
      .vtln_low(o.get_double("vtln-low"))
      .vtln_warp(o.get_double("vtln-warp"));
}
// Kaldi reads samples on the int16 scale.
Tensor int16_scale(const Tensor& w) { return w * 32768.0; }

void declare_fbank(OptionSet& o) {
  declare_kaldi_frame(o);
  declare_kaldi_mel(o);
  o.add_bool("use-log-fbank", true, "log of the filter bank energies");
  o.add_bool("use-power", true, "power spectrum (false: magnitude)");
}
Tensor compute_fbank(const OptionSet& o, const Tensor& w, int64_t sr) {
  K::FbankOptions k;
  kaldi_frame(o, k, sr);
  kaldi_mel(o, k);
  k.use_log_fbank(o.get_bool("use-log-fbank")).use_power(o.get_bool("use-power"));
  return K::fbank(int16_scale(w), k);
}

void declare_kaldi_mfcc(OptionSet& o) {
  declare_kaldi_frame(o);
  declare_kaldi_mel(o);
  o.add_double("cepstral-lifter", "22", "cepstral liftering coefficient (0: none)");
  o.add_int("num-ceps", "13", "number of cepstra");
}
Tensor compute_kaldi_mfcc(const OptionSet& o, const Tensor& w, int64_t sr) {
  K::MfccOptions k;
  kaldi_frame(o, k, sr);
  kaldi_mel(o, k);
  k.cepstral_lifter(o.get_double("cepstral-lifter")).num_ceps(o.get_int("num-ceps"));
  return K::mfcc(int16_scale(w), k);
}

void declare_kaldi_spectrogram(OptionSet& o) { declare_kaldi_frame(o); }
Tensor compute_kaldi_spectrogram(const OptionSet& o, const Tensor& w, int64_t sr) {
  K::SpectrogramOptions k;
  kaldi_frame(o, k, sr);
  return K::spectrogram(int16_scale(w), k);
}

// ---- Kaldi pitch (compute-and-process-kaldi-pitch-feats; --process=false: compute-kaldi-pitch-feats)
void declare_kaldi_pitch(OptionSet& o) {
  o.add_int("channel", "-1", "channel to use (-1: the first)");
  o.add_double("sample-frequency", "none", "sample rate in Hz; none = the file's", true);
  o.add_double("frame-length", "25", "frame length in milliseconds");
  o.add_double("frame-shift", "10", "frame shift in milliseconds");
  o.add_double("min-f0", "50", "minimum F0 to search for (Hz)");
  o.add_double("max-f0", "400", "maximum F0 to search for (Hz)");
  o.add_double("soft-min-f0", "10", "minimum F0, applied in a soft way (Hz)");
  o.add_double("penalty-factor", "0.1", "cost factor for F0 change");
  o.add_double("lowpass-cutoff", "1000", "cutoff of the low-pass filter (Hz)");
  o.add_double("resample-frequency", "4000", "rate the signal is resampled to (Hz)");
  o.add_double("delta-pitch", "0.005", "smallest relative change in pitch measured");
  o.add_double("nccf-ballast", "7000", "increasing it reduces the NCCF of quiet frames");
  o.add_int("lowpass-filter-width", "1", "width of the low-pass filter (zero crossings)");
  o.add_int("upsample-filter-width", "5", "width of the NCCF upsampling filter (zero crossings)");
  o.add_int("max-frames-latency", "0", "first-pass output: most frames of traceback latency");
  o.add_int("frames-per-chunk", "0", "feed the signal in chunks of this many frames (0: at once)");
  o.add_bool("simulate-first-pass-online", false, "output each frame as an online decoder first sees it");
  o.add_int("recompute-frame", "500", "frame at which the early frames are revised (chunked input)");
  o.add_bool("snip-edges", true, "only frames that fit in the signal");
  o.add_bool("process", true, "post-process to Kaldi's pitch features (false: raw (NCCF, pitch) per frame)");
  o.add_double("pitch-scale", "2", "scale of the normalized log-pitch");
  o.add_double("pov-scale", "2", "scale of the POV feature");
  o.add_double("pov-offset", "0", "offset added to the POV feature");
  o.add_double("delta-pitch-scale", "10", "scale of the delta log-pitch");
  o.add_double("delta-pitch-noise-stddev", "0.005", "stddev of the noise added to the delta log-pitch");
  o.add_int("normalization-left-context", "75", "left context (frames) of the log-pitch normalization");
  o.add_int("normalization-right-context", "75", "right context (frames) of the log-pitch normalization");
  o.add_int("delta-window", "2", "frames on each side for the delta");
  o.add_int("delay", "0", "frames by which the features are delayed");
  o.add_bool("add-pov-feature", true, "output the POV feature");
  o.add_bool("add-normalized-log-pitch", true, "output the normalized log-pitch");
  o.add_bool("add-delta-pitch", true, "output the delta log-pitch");
  o.add_bool("add-raw-log-pitch", false, "output the raw log-pitch");
  o.add_int("seed", "0", "seed of the delta-pitch noise");
}
Tensor compute_kaldi_pitch(const OptionSet& o, const Tensor& w, int64_t sr) {
  const int64_t channel = o.get_int("channel") < 0 ? 0 : o.get_int("channel");
  if (channel >= w.size(0))
    throw UsageError("--channel " + std::to_string(channel) + " is out of range for " + std::to_string(w.size(0)) +
                     " channels");
  namespace AF = fw::audio::functional;
  Tensor raw = AF::compute_kaldi_pitch(int16_scale(w[channel]), o.get_opt_double("sample-frequency").value_or(double(sr)),
                                       AF::KaldiPitchOptions()
                                           .frame_length(o.get_double("frame-length"))
                                           .frame_shift(o.get_double("frame-shift"))
                                           .min_f0(o.get_double("min-f0"))
                                           .max_f0(o.get_double("max-f0"))
                                           .soft_min_f0(o.get_double("soft-min-f0"))
                                           .penalty_factor(o.get_double("penalty-factor"))
                                           .lowpass_cutoff(o.get_double("lowpass-cutoff"))
                                           .resample_frequency(o.get_double("resample-frequency"))
                                           .delta_pitch(o.get_double("delta-pitch"))
                                           .nccf_ballast(o.get_double("nccf-ballast"))
                                           .lowpass_filter_width(o.get_int("lowpass-filter-width"))
                                           .upsample_filter_width(o.get_int("upsample-filter-width"))
                                           .max_frames_latency(o.get_int("max-frames-latency"))
                                           .frames_per_chunk(o.get_int("frames-per-chunk"))
                                           .simulate_first_pass_online(o.get_bool("simulate-first-pass-online"))
                                           .recompute_frame(o.get_int("recompute-frame"))
                                           .snip_edges(o.get_bool("snip-edges")));
  if (!o.get_bool("process")) return raw;
  fw::Generator gen = fw::make_generator<fw::CPUGeneratorImpl>(uint64_t(o.get_int("seed")));
  return AF::process_kaldi_pitch(raw,
                                 AF::ProcessPitchOptions()
                                     .pitch_scale(o.get_double("pitch-scale"))
                                     .pov_scale(o.get_double("pov-scale"))
                                     .pov_offset(o.get_double("pov-offset"))
                                     .delta_pitch_scale(o.get_double("delta-pitch-scale"))
                                     .delta_pitch_noise_stddev(o.get_double("delta-pitch-noise-stddev"))
                                     .normalization_left_context(o.get_int("normalization-left-context"))
                                     .normalization_right_context(o.get_int("normalization-right-context"))
                                     .delta_window(o.get_int("delta-window"))
                                     .delay(o.get_int("delay"))
                                     .add_pov_feature(o.get_bool("add-pov-feature"))
                                     .add_normalized_log_pitch(o.get_bool("add-normalized-log-pitch"))
                                     .add_delta_pitch(o.get_bool("add-delta-pitch"))
                                     .add_raw_log_pitch(o.get_bool("add-raw-log-pitch")),
                                 gen);
}

// ---- resample
void declare_resample(OptionSet& o) {
  o.add_int("sample-rate", "none", "original sample rate in Hz; none = the file's", true);
  o.add_int("new-sample-rate", "16000", "target sample rate in Hz");
  o.add_int("lowpass-filter-width", "6", "sharpness of the filter (zero crossings on each side)");
  o.add_double("rolloff", "0.99", "roll-off frequency as a fraction of the Nyquist frequency");
  o.add_string("resampling-method", "sinc_interp_hann",
               "window of the sinc kernel (torchaudio 0.13's names sinc_interpolation / kaiser_window also work)",
               {"sinc_interp_hann", "sinc_interp_kaiser", "sinc_interpolation", "kaiser_window"});
  o.add_double("beta", "none", "Kaiser window shape; none = 14.769656459379492", true);
  o.add_string("encoding", "none", "audio OUT: sample encoding; none = 32-bit float as torchaudio.save",
               {"PCM_S", "PCM_U", "PCM_F", "ULAW", "ALAW"}, true);
  o.add_int("bits-per-sample", "none", "audio OUT: bits per sample; none = the encoding's default", true);
}
Tensor compute_resample(const OptionSet& o, const Tensor& w, int64_t sr) {
  int64_t orig = o.get_opt_int("sample-rate").value_or(sr), target = o.get_int("new-sample-rate");
  if (orig <= 0) throw UsageError("--sample-rate must be positive, got " + std::to_string(orig));
  if (target <= 0) throw UsageError("--new-sample-rate must be positive, got " + std::to_string(target));
  if (o.get_int("lowpass-filter-width") <= 0)
    throw UsageError("--lowpass-filter-width must be positive, got " + o.text("lowpass-filter-width"));
  T::Resample m(T::ResampleOptions()
                    .orig_freq(orig)
                    .new_freq(target)
                    .resampling_method(o.get_string("resampling-method"))
                    .lowpass_filter_width(o.get_int("lowpass-filter-width"))
                    .rolloff(o.get_double("rolloff"))
                    .beta(o.get_opt_double("beta")));
  return m->forward(w);
}

}  // namespace

const std::vector<Command>& commands() {
  using R = Command::Result;
  static const std::vector<Command> cmds = {
      {"spectrogram", "torchaudio.transforms.Spectrogram: (channels, n_fft/2+1, frames)", R::Features,
       declare_spectrogram, compute_spectrogram},
      {"melspectrogram", "torchaudio.transforms.MelSpectrogram: (channels, n_mels, frames)", R::Features,
       declare_melspectrogram, compute_melspectrogram},
      {"mfcc", "torchaudio.transforms.MFCC: (channels, n_mfcc, frames)", R::Features, declare_mfcc, compute_mfcc},
      {"lfcc", "torchaudio.transforms.LFCC: (channels, n_lfcc, frames)", R::Features, declare_lfcc, compute_lfcc},
      {"fbank", "torchaudio.compliance.kaldi.fbank (Kaldi compute-fbank-feats): (frames, num_mel_bins)", R::Frames,
       declare_fbank, compute_fbank},
      {"kaldi-mfcc", "torchaudio.compliance.kaldi.mfcc (Kaldi compute-mfcc-feats): (frames, num_ceps)", R::Frames,
       declare_kaldi_mfcc, compute_kaldi_mfcc},
      {"kaldi-spectrogram",
       "torchaudio.compliance.kaldi.spectrogram (Kaldi compute-spectrogram-feats): (frames, padded_window/2+1)",
       R::Frames, declare_kaldi_spectrogram, compute_kaldi_spectrogram},
      {"kaldi-pitch",
       "Kaldi compute-and-process-kaldi-pitch-feats: (frames, 3) pov / normalized log-pitch / delta-pitch "
       "(--process=false: compute-kaldi-pitch-feats, (frames, 2) NCCF / pitch)",
       R::Frames, declare_kaldi_pitch, compute_kaldi_pitch},
      {"resample", "torchaudio.transforms.Resample: (channels, samples), or an audio file", R::Waveform,
       declare_resample, compute_resample},
  };
  return cmds;
}

const Command* find_command(const std::string& name) {
  for (const auto& c : commands())
    if (c.name == name) return &c;
  return nullptr;
}

// ---- plot
void declare_plot(OptionSet& o) {
  o.add_int("width", "800", "picture width in pixels");
  o.add_int("height", "400", "picture height in pixels");
  o.add_int("channel", "0", "channel to draw");
  declare_sample_rate(o);
  o.add_int("n-fft", "400", "size of the FFT");
  o.add_int("hop-length", "none", "hop between frames; none = n-fft / 2", true);
  o.add_int("n-mels", "128", "number of mel filter banks");
  o.add_double("f-min", "0", "lowest frequency in Hz");
  o.add_double("f-max", "none", "highest frequency in Hz; none = sample-rate / 2", true);
  o.add_string("mel-scale", "htk", "mel scale", {"htk", "slaney"});
  o.add_double("top-db", "80", "dynamic range shown: the colours span [peak - top-db, peak] dB; none = [min, peak]",
               true);
}

PlotData compute_plot(const OptionSet& o, const Tensor& w, int64_t file_rate) {
  const int64_t width = o.get_int("width"), height = o.get_int("height");
  if (width <= 0 || width > 16384 || height <= 0 || height > 16384)
    throw UsageError("--width and --height must be in 1..16384, got " + std::to_string(width) + " and " +
                     std::to_string(height));
  auto top = o.get_opt_double("top-db");
  if (top && !(*top > 0)) throw UsageError("--top-db must be positive, got " + o.text("top-db"));
  const int64_t ch = o.get_int("channel"), channels = w.sizes()[0];
  if (ch < 0 || ch >= channels)
    throw UsageError("--channel " + std::to_string(ch) + " is out of range: the input has " +
                     std::to_string(channels) + " channel(s)");
  const int64_t sr = sample_rate(o, file_rate);
  T::MelSpectrogramOptions m;
  m.sample_rate(sr)
      .n_fft(o.get_int("n-fft"))
      .hop_length(o.get_opt_int("hop-length"))
      .n_mels(o.get_int("n-mels"))
      .f_min(o.get_double("f-min"))
      .f_max(o.get_opt_double("f-max"))
      .mel_scale(o.get_string("mel-scale"));
  T::MelSpectrogram mel(m);
  T::AmplitudeToDB to_db(T::AmplitudeToDBOptions().stype("power"));
  PlotData p;
  p.db = to_db->forward(mel->forward(w.select(0, ch)));
  p.duration = double(w.sizes()[1]) / double(sr);
  p.f_min = m.f_min();
  p.f_max = m.f_max().value_or(double(sr / 2));
  p.mel_scale = m.mel_scale();
  return p;
}

}  // namespace fwaudio
