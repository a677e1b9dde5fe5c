// fw::audio::transforms: the Modules of fw/audio/transforms.h over fw::audio::functional.
#include "fw/audio/transforms.h"

#include <cmath>
#include <numeric>

#include "fw/audio/filtering.h"
#include "core/parallel.h"
#include "core/visit.h"
#include "fw/fw.h"

namespace fw::audio::transforms {
namespace F = fw::audio::functional;

namespace {
// torchaudio: win_length defaults to n_fft, hop_length to win_length / 2.
void window_lengths(int64_t n_fft, std::optional<int64_t> win, std::optional<int64_t> hop, int64_t* w, int64_t* h,
                    const char* op) {
  FW_CHECK(n_fft > 0, "[audio::", op, "] n_fft must be positive, got ", n_fft);
  *w = win.value_or(n_fft);
  *h = hop.value_or(*w / 2);
  FW_CHECK(*w > 0 && *w <= n_fft, "[audio::", op, "] expected 0 < win_length <= n_fft, got win_length=", *w,
           ", n_fft=", n_fft);
  FW_CHECK(*h > 0, "[audio::", op, "] expected hop_length > 0, got ", *h);
}
Tensor make_window(const WindowFn& fn, int64_t n, const char* op) {
  FW_CHECK(bool(fn), "[audio::", op, "] window_fn is empty");
  Tensor w = fn(n);
  FW_CHECK(w.dim() == 1 && w.sizes()[0] == n, "[audio::", op, "] window_fn(", n, ") must return a 1-D tensor of ", n,
           " samples, got shape ", w.sizes());
  return w;
}
// (..., freq, time) x (freq, k) -> (..., k, time)
Tensor project(const Tensor& spec, const Tensor& mat) { return fw::matmul(spec.transpose(-1, -2), mat).transpose(-1, -2); }
}  // namespace

// ---- Spectrogram
SpectrogramImpl::SpectrogramImpl(const SpectrogramOptions& options_) : options(options_) { reset(); }
void SpectrogramImpl::reset() {
  window_lengths(options.n_fft(), options.win_length(), options.hop_length(), &win_length, &hop_length, "Spectrogram");
  window = register_buffer("window", make_window(options.window_fn(), win_length, "Spectrogram"));
}
Tensor SpectrogramImpl::forward(const Tensor& waveform) {
  return F::spectrogram(waveform, options.pad(), window, options.n_fft(), hop_length, win_length, options.power(),
                        options.normalized(), options.center(), options.pad_mode(), options.onesided());
}

// ---- InverseSpectrogram
InverseSpectrogramImpl::InverseSpectrogramImpl(const InverseSpectrogramOptions& options_) : options(options_) {
  reset();
}
void InverseSpectrogramImpl::reset() {
  window_lengths(options.n_fft(), options.win_length(), options.hop_length(), &win_length, &hop_length,
                 "InverseSpectrogram");
  window = register_buffer("window", make_window(options.window_fn(), win_length, "InverseSpectrogram"));
}
Tensor InverseSpectrogramImpl::forward(const Tensor& spectrogram, std::optional<int64_t> length) {
  return F::inverse_spectrogram(spectrogram, length, options.pad(), window, options.n_fft(), hop_length, win_length,
                                options.normalized(), options.center(), options.pad_mode(), options.onesided());
}

// ---- GriffinLim
GriffinLimImpl::GriffinLimImpl(const GriffinLimOptions& options_) : options(options_) { reset(); }
void GriffinLimImpl::reset() {
  FW_CHECK(options.momentum() >= 0 && options.momentum() < 1,
           "[audio::GriffinLim] momentum must be in the range [0, 1). Found: ", options.momentum());
  window_lengths(options.n_fft(), options.win_length(), options.hop_length(), &win_length, &hop_length, "GriffinLim");
  window = register_buffer("window", make_window(options.window_fn(), win_length, "GriffinLim"));
}
Tensor GriffinLimImpl::forward(const Tensor& specgram) {
  return F::griffinlim(specgram, window, options.n_fft(), hop_length, win_length, options.power(), options.n_iter(),
                       options.momentum(), options.length(), options.rand_init());
}

// ---- AmplitudeToDB
AmplitudeToDBImpl::AmplitudeToDBImpl(const AmplitudeToDBOptions& options_) : options(options_) { reset(); }
void AmplitudeToDBImpl::reset() {
  FW_CHECK(!options.top_db() || *options.top_db() >= 0, "[audio::AmplitudeToDB] top_db must be positive value, got ",
           *options.top_db());
  FW_CHECK(options.stype() == "power" || options.stype() == "magnitude",
           "[audio::AmplitudeToDB] stype must be \"power\" or \"magnitude\", got \"", options.stype(), "\"");
  multiplier = options.stype() == "power" ? 10.0 : 20.0;
  db_multiplier = std::log10(std::max(amin, ref_value));
}
Tensor AmplitudeToDBImpl::forward(const Tensor& x) {
  return F::amplitude_to_DB(x, multiplier, amin, db_multiplier, options.top_db());
}

// ---- MelScale
MelScaleImpl::MelScaleImpl(const MelScaleOptions& options_) : options(options_) { reset(); }
void MelScaleImpl::reset() {
  double f_max = options.f_max().value_or(double(options.sample_rate() / 2));
  FW_CHECK(options.f_min() <= f_max, "[audio::MelScale] Require f_min: ", options.f_min(), " <= f_max: ", f_max);
  fb = register_buffer("fb", F::melscale_fbanks(options.n_stft(), options.f_min(), f_max, options.n_mels(),
                                                options.sample_rate(), options.norm(), options.mel_scale()));
}
// Note [Banded mel projection]
// A mel filter bank is banded: filter j is nonzero only on a short run of frequency bins, so the
// dense (frames x freq) x (freq x n_mels) product spends nearly all its multiply-adds on zeros
// (201 x 128 weights, ~400 nonzero for torchaudio's defaults). Without autograd, MelScale finds
// each filter's nonzero run in the current fb and takes only those dot products; the dense
// matmul stays for gradients, for complex or odd inputs, and for banks that are not sparse.
namespace {
Tensor banded_projection(const Tensor& spec, const Tensor& fb) {
  const int64_t F = fb.sizes()[0], M = fb.sizes()[1];
  Tensor fbt = fb.to(spec.dtype()).t().contiguous();  // (M, F)
  std::vector<int64_t> lo(static_cast<size_t>(M)), hi(static_cast<size_t>(M));
  int64_t nnz = 0;
  fw::detail::visit_float(spec.dtype(), "MelScale", [&]<class T>() {
    const T* w = fbt.data_ptr<T>();
    for (int64_t j = 0; j < M; j++) {
      int64_t a = 0, b = F;
      while (a < F && w[j * F + a] == T(0)) a++;
      while (b > a && w[j * F + b - 1] == T(0)) b--;
      lo[size_t(j)] = a;
      hi[size_t(j)] = b;
      nnz += b - a;
    }
  });
  if (nnz * 4 > F * M) return project(spec, fb.to(spec.dtype()));
  // spec is (..., F, T); its rows of F bins are contiguous when it is the usual transposed view.
  Tensor rows = spec.transpose(-1, -2).contiguous();  // (..., T, F)
  DimVec osz(rows.sizes());
  osz.back() = M;
  Tensor out = fw::empty(osz, spec.dtype());
  const int64_t R = rows.numel() / std::max<int64_t>(F, 1);
  fw::detail::visit_float(spec.dtype(), "MelScale", [&]<class T>() {
    const T* x = rows.data_ptr<T>();
    const T* w = fbt.data_ptr<T>();
    T* y = out.data_ptr<T>();
    fw::detail::parallel_for(0, R, std::max<int64_t>(1, 16384 / std::max<int64_t>(nnz, 1)), [&](int64_t b, int64_t e) {
      for (int64_t r = b; r < e; r++) {
        const T* xr = x + r * F;
        // A NaN or infinity meets the zero weights outside the bands too (0 * inf = NaN), as in
        // the dense product: such a row is projected over all bins.
        bool finite = true;
        for (int64_t f = 0; f < F; f++) finite &= std::isfinite(xr[f]);
        for (int64_t j = 0; j < M; j++) {
          T acc = 0;
          const int64_t f0 = finite ? lo[size_t(j)] : 0, f1 = finite ? hi[size_t(j)] : F;
          for (int64_t f = f0; f < f1; f++) acc += xr[f] * w[j * F + f];
          y[r * M + j] = acc;
        }
      }
    });
  });
  return out.transpose(-1, -2);
}
}  // namespace

Tensor MelScaleImpl::forward(const Tensor& specgram) {
  FW_CHECK(specgram.dim() >= 2 && specgram.sizes()[specgram.dim() - 2] == fb.sizes()[0],
           "[audio::MelScale] expected (..., ", fb.sizes()[0], ", time), got shape ", specgram.sizes());
  const bool grad = fw::is_grad_enabled() && (specgram.requires_grad() || fb.requires_grad());
  if (!grad && (specgram.dtype() == kFloat || specgram.dtype() == kDouble) && fb.dim() == 2)
    return banded_projection(specgram, fb);
  return project(specgram, fb);
}

// ---- InverseMelScale
InverseMelScaleImpl::InverseMelScaleImpl(const InverseMelScaleOptions& options_) : options(options_) { reset(); }
void InverseMelScaleImpl::reset() {
  double f_max = options.f_max().value_or(double(options.sample_rate() / 2));
  FW_CHECK(options.f_min() <= f_max, "[audio::InverseMelScale] Require f_min: ", options.f_min(), " <= f_max: ", f_max);
  fb = register_buffer("fb", F::melscale_fbanks(options.n_stft(), options.f_min(), f_max, options.n_mels(),
                                                options.sample_rate(), options.norm(), options.mel_scale()));
}
Tensor InverseMelScaleImpl::forward(const Tensor& melspec) {
  FW_CHECK(melspec.dim() >= 2, "[audio::InverseMelScale] expected (..., n_mels, time), got shape ", melspec.sizes());
  DimVec shape(melspec.sizes());
  const int64_t n_mels = shape[shape.size() - 2], T = shape.back(), freq = fb.sizes()[0];
  FW_CHECK(n_mels == options.n_mels(), "[audio::InverseMelScale] Expected an input with ", options.n_mels(),
           " mel bins. Found: ", n_mels);
  Tensor mel = melspec.detach().reshape({-1, n_mels, T}).transpose(-1, -2);  // (B, T, n_mels)
  Tensor spec = fw::rand({mel.sizes()[0], T, freq}, mel.dtype()).requires_grad_(true);
  Tensor fbd = fb.to(mel.dtype());
  // Plain SGD with momentum (torchaudio's defaults lr 0.1, momentum 0.9), projected onto >= 0.
  Tensor buf;
  double loss = INFINITY;
  for (int64_t it = 0; it < options.max_iter(); it++) {
    Tensor l = (mel - fw::matmul(spec, fbd)).pow(2).sum({-1}).mean();
    Tensor g = fw::autograd::grad({l}, {spec})[0];
    {
      NoGradGuard ng;
      buf = buf.defined() ? buf * options.momentum() + g : g.clone();
      spec.sub_(buf * options.lr());
      spec.clamp_(0);
    }
    double nl = l.item<double>();
    if (nl < options.tolerance_loss() || std::abs(loss - nl) < options.tolerance_change()) break;
    loss = nl;
  }
  Tensor out = spec.detach().clamp(0).transpose(-1, -2);
  DimVec os;
  for (size_t i = 0; i + 2 < shape.size(); i++) os.push_back(shape[i]);
  os.push_back(freq);
  os.push_back(T);
  return out.reshape(os);
}

// ---- MelSpectrogram
MelSpectrogramImpl::MelSpectrogramImpl(const MelSpectrogramOptions& options_) : options(options_) { reset(); }
void MelSpectrogramImpl::reset() {
  const auto& o = options;
  spectrogram = register_module("spectrogram", Spectrogram(SpectrogramOptions()
                                                                .n_fft(o.n_fft())
                                                                .win_length(o.win_length())
                                                                .hop_length(o.hop_length())
                                                                .pad(o.pad())
                                                                .window_fn(o.window_fn())
                                                                .power(o.power())
                                                                .normalized(o.normalized())
                                                                .center(o.center())
                                                                .pad_mode(o.pad_mode())
                                                                .onesided(o.onesided())));
  mel_scale = register_module("mel_scale", MelScale(MelScaleOptions()
                                                        .n_mels(o.n_mels())
                                                        .sample_rate(o.sample_rate())
                                                        .f_min(o.f_min())
                                                        .f_max(o.f_max())
                                                        .n_stft(o.n_fft() / 2 + 1)
                                                        .norm(o.norm())
                                                        .mel_scale(o.mel_scale())));
}
Tensor MelSpectrogramImpl::forward(const Tensor& waveform) { return mel_scale->forward(spectrogram->forward(waveform)); }

// ---- MFCC
MFCCImpl::MFCCImpl(const MFCCOptions& options_) : options(options_) { reset(); }
void MFCCImpl::reset() {
  FW_CHECK(options.dct_type() == 2, "[audio::MFCC] DCT type not supported: ", options.dct_type());
  MelSpectrogramOptions mo = options.melkwargs();
  mo.sample_rate(options.sample_rate());
  FW_CHECK(options.n_mfcc() <= mo.n_mels(), "[audio::MFCC] Cannot select more MFCC coefficients (", options.n_mfcc(),
           ") than # mel bins (", mo.n_mels(), ")");
  amplitude_to_db = register_module("amplitude_to_DB", AmplitudeToDB(AmplitudeToDBOptions().stype("power").top_db(80.0)));
  mel_spectrogram = register_module("MelSpectrogram", MelSpectrogram(mo));
  dct_mat = register_buffer("dct_mat", F::create_dct(options.n_mfcc(), mo.n_mels(), options.norm()));
}
Tensor MFCCImpl::forward(const Tensor& waveform) {
  Tensor mel = mel_spectrogram->forward(waveform);
  mel = options.log_mels() ? fw::log(mel + 1e-6) : amplitude_to_db->forward(mel);
  return project(mel, dct_mat);
}

// ---- LFCC
LFCCImpl::LFCCImpl(const LFCCOptions& options_) : options(options_) { reset(); }
void LFCCImpl::reset() {
  FW_CHECK(options.dct_type() == 2, "[audio::LFCC] DCT type not supported: ", options.dct_type());
  const SpectrogramOptions& so = options.speckwargs();
  FW_CHECK(options.n_lfcc() <= so.n_fft(), "[audio::LFCC] Cannot select more LFCC coefficients (", options.n_lfcc(),
           ") than # fft bins (", so.n_fft(), ")");
  amplitude_to_db = register_module("amplitude_to_DB", AmplitudeToDB(AmplitudeToDBOptions().stype("power").top_db(80.0)));
  spectrogram = register_module("Spectrogram", Spectrogram(so));
  double f_max = options.f_max().value_or(double(options.sample_rate() / 2));
  filter_mat = register_buffer("filter_mat", F::linear_fbanks(so.n_fft() / 2 + 1, options.f_min(), f_max,
                                                              options.n_filter(), options.sample_rate()));
  dct_mat = register_buffer("dct_mat", F::create_dct(options.n_lfcc(), options.n_filter(), options.norm()));
}
Tensor LFCCImpl::forward(const Tensor& waveform) {
  Tensor s = project(spectrogram->forward(waveform), filter_mat);
  s = options.log_lf() ? fw::log(s + 1e-6) : amplitude_to_db->forward(s);
  return project(s, dct_mat);
}

// ---- Resample
ResampleImpl::ResampleImpl(const ResampleOptions& options_) : options(options_) { reset(); }
void ResampleImpl::reset() {
  FW_CHECK(options.orig_freq() > 0 && options.new_freq() > 0, "[audio::Resample] orig_freq and new_freq must be ",
           "positive, got ", options.orig_freq(), " and ", options.new_freq());
  gcd = std::gcd(options.orig_freq(), options.new_freq());
  if (options.orig_freq() == options.new_freq()) return;
  auto [k, w] = F::sinc_resample_kernel(options.orig_freq(), options.new_freq(), gcd, options.lowpass_filter_width(),
                                        options.rolloff(), options.resampling_method(), options.beta(), options.dtype());
  kernel = register_buffer("kernel", k);
  width = w;
}
Tensor ResampleImpl::forward(const Tensor& waveform) {
  if (options.orig_freq() == options.new_freq()) return waveform;
  return F::apply_sinc_resample_kernel(waveform, options.orig_freq(), options.new_freq(), gcd, kernel, width);
}

// ---- masking
Tensor FrequencyMaskingImpl::forward(const Tensor& specgram, double mask_value) {
  if (options.iid_masks() && specgram.dim() == 4)
    return F::mask_along_axis_iid(specgram, options.mask_param(), mask_value, 2, options.p());
  return F::mask_along_axis(specgram, options.mask_param(), mask_value, 1, options.p());
}
Tensor TimeMaskingImpl::forward(const Tensor& specgram, double mask_value) {
  if (options.iid_masks() && specgram.dim() == 4)
    return F::mask_along_axis_iid(specgram, options.mask_param(), mask_value, 3, options.p());
  return F::mask_along_axis(specgram, options.mask_param(), mask_value, 2, options.p());
}
Tensor SpecAugmentImpl::forward(const Tensor& specgram) {
  FW_CHECK(specgram.dim() >= 2, "[audio::SpecAugment] expected (..., freq, time), got shape ", specgram.sizes());
  Tensor s = specgram;
  const bool iid = options.iid_masks() && s.dim() == 4;
  const int64_t fa = s.dim() - 2, ta = s.dim() - 1;  // axes of a 4-D input for the iid masks
  // One fill value for every mask: the input's mean (torchaudio), not the mean after earlier masks.
  const double v = options.zero_masking() ? 0.0 : s.mean().item<double>();
  for (int64_t i = 0; i < options.n_time_masks(); i++) {
    s = iid ? F::mask_along_axis_iid(s, options.time_mask_param(), v, ta, options.p())
            : F::mask_along_axis(s, options.time_mask_param(), v, 2, options.p());
  }
  for (int64_t i = 0; i < options.n_freq_masks(); i++) {
    s = iid ? F::mask_along_axis_iid(s, options.freq_mask_param(), v, fa, options.p())
            : F::mask_along_axis(s, options.freq_mask_param(), v, 1, options.p());
  }
  return s;
}

// ---- TimeStretch
TimeStretchImpl::TimeStretchImpl(const TimeStretchOptions& options_) : options(options_) { reset(); }
void TimeStretchImpl::reset() {
  FW_CHECK(options.n_freq() >= 1, "[audio::TimeStretch] n_freq must be positive, got ", options.n_freq());
  int64_t n_fft = (options.n_freq() - 1) * 2;
  int64_t hop = options.hop_length().value_or(n_fft / 2);
  phase_advance = register_buffer("phase_advance", fw::linspace(0, M_PI * double(hop), options.n_freq()).unsqueeze(-1));
}
Tensor TimeStretchImpl::forward(const Tensor& complex_specgrams, std::optional<double> overriding_rate) {
  FW_CHECK(overriding_rate || options.fixed_rate(),
           "[audio::TimeStretch] If no fixed_rate is specified, must pass a valid rate to the forward method.");
  double rate = overriding_rate ? *overriding_rate : *options.fixed_rate();
  return F::phase_vocoder(complex_specgrams, rate, phase_advance);
}

Tensor SlidingWindowCmnImpl::forward(const Tensor& specgram) {
  return F::sliding_window_cmn(specgram, options.cmn_window(), options.min_cmn_window(), options.center(),
                               options.norm_vars());
}

// ---- Vol
VolImpl::VolImpl(double gain, std::string gain_type) : gain(gain), gain_type(std::move(gain_type)) {
  FW_CHECK(this->gain_type == "amplitude" || this->gain_type == "power" || this->gain_type == "db",
           "[audio::Vol] gain_type must be amplitude, power or db, got \"", this->gain_type, "\"");
  FW_CHECK(this->gain_type == "db" || gain >= 0,
           "[audio::Vol] If gain_type = amplitude or power, gain must be positive, got ", gain);
}
Tensor VolImpl::forward(const Tensor& waveform) {
  Tensor w = waveform;
  if (gain_type == "amplitude") w = w * gain;
  else if (gain_type == "db") w = F::gain(w, gain);
  else w = F::gain(w, 10 * std::log10(gain));
  return fw::clamp(w, -1.0, 1.0);
}

// ---- Fade
FadeImpl::FadeImpl(int64_t fade_in_len, int64_t fade_out_len, std::string fade_shape)
    : fade_in_len(fade_in_len), fade_out_len(fade_out_len), fade_shape(std::move(fade_shape)) {
  const std::string& s = this->fade_shape;
  FW_CHECK(s == "linear" || s == "exponential" || s == "logarithmic" || s == "quarter_sine" || s == "half_sine",
           "[audio::Fade] fade_shape must be linear, exponential, logarithmic, quarter_sine or half_sine, got \"", s,
           "\"");
  FW_CHECK(fade_in_len >= 0 && fade_out_len >= 0, "[audio::Fade] fade lengths must be non-negative, got ", fade_in_len,
           " and ", fade_out_len);
}
Tensor FadeImpl::forward(const Tensor& waveform) {
  FW_CHECK(waveform.dim() >= 1, "[audio::Fade] expected (..., time), got a 0-dim tensor");
  const int64_t L = waveform.sizes()[waveform.dim() - 1];
  FW_CHECK(fade_in_len <= L && fade_out_len <= L, "[audio::Fade] fade lengths (", fade_in_len, ", ", fade_out_len,
           ") exceed the waveform length ", L);
  const std::string& s = fade_shape;
  Tensor fi = fw::linspace(0, 1, fade_in_len), fo = fw::linspace(0, 1, fade_out_len);
  if (s == "linear") {
    fo = 1 - fo;
  } else if (s == "exponential") {
    fi = fw::pow(2.0, fi - 1) * fi;
    fo = fw::pow(2.0, -fo) * (1 - fo);
  } else if (s == "logarithmic") {
    fi = fw::log10(fi + 0.1) + 1;
    fo = fw::log10(1.1 - fo) + 1;
  } else if (s == "quarter_sine") {
    fi = fw::sin(fi * (M_PI / 2));
    fo = fw::sin(fo * (M_PI / 2) + M_PI / 2);
  } else {
    fi = fw::sin(fi * M_PI - M_PI / 2) / 2 + 0.5;
    fo = fw::sin(fo * M_PI + M_PI / 2) / 2 + 0.5;
  }
  Tensor in = fw::cat({fi, fw::ones({L - fade_in_len})}).clamp(0, 1);
  Tensor out = fw::cat({fw::ones({L - fade_out_len}), fo}).clamp(0, 1);
  return in * out * waveform;
}

// ---- SpectralCentroid
SpectralCentroidImpl::SpectralCentroidImpl(const SpectralCentroidOptions& options_) : options(options_) { reset(); }
void SpectralCentroidImpl::reset() {
  window_lengths(options.n_fft(), options.win_length(), options.hop_length(), &win_length, &hop_length,
                 "SpectralCentroid");
  window = register_buffer("window", make_window(options.window_fn(), win_length, "SpectralCentroid"));
}
Tensor SpectralCentroidImpl::forward(const Tensor& waveform) {
  return F::spectral_centroid(waveform, options.sample_rate(), options.pad(), window, options.n_fft(), hop_length,
                              win_length);
}

}  // namespace fw::audio::transforms
