// torchaudio.models.HDemucs (see fw/audio/hdemucs.h). Layer construction follows torchaudio's
// HDemucs.__init__ rule by rule, so the module tree (and with it every state_dict name and shape)
// is torchaudio's; tests/audio/test_hdemucs.cpp checks names and outputs against torchaudio.
#include "fw/audio/hdemucs.h"

#include <algorithm>
#include <cmath>

#include "fw/fw.h"

namespace fw::audio::models {

namespace detail {

namespace {

nn::AnyModule norm_or_identity(const std::string& norm_type, int64_t groups, int64_t channels) {
  if (norm_type == "group_norm") return nn::AnyModule(nn::GroupNorm(nn::GroupNormOptions(groups, channels)));
  return nn::AnyModule(nn::Identity());
}

// Conv2d with kernel (k, 1) over (frequency, time) when `freq`, else Conv1d.
nn::AnyModule conv_fk(bool freq, int64_t in, int64_t out, int64_t k, int64_t stride, int64_t pad) {
  if (freq)
    return nn::AnyModule(nn::Conv2d(nn::Conv2dOptions(in, out, {k, 1}).stride({stride, 1}).padding({pad, 0})));
  return nn::AnyModule(nn::Conv1d(nn::Conv1dOptions(in, out, k).stride(stride).padding(pad)));
}

// The "rewrite" conv: kernel 1 + 2 context in every dim (square for Conv2d, as torchaudio's).
nn::AnyModule rewrite_conv(bool freq, int64_t in, int64_t out, int64_t context) {
  const int64_t k = 1 + 2 * context;
  if (freq) return nn::AnyModule(nn::Conv2d(nn::Conv2dOptions(in, out, k).padding(context)));
  return nn::AnyModule(nn::Conv1d(nn::Conv1dOptions(in, out, k).padding(context)));
}

}  // namespace

// ---- _ScaledEmbedding

HDemucsScaledEmbeddingImpl::HDemucsScaledEmbeddingImpl(int64_t num_embeddings, int64_t embedding_dim, double scale,
                                                       bool smooth)
    : num_embeddings(num_embeddings), embedding_dim(embedding_dim), scale(scale), smooth(smooth) {
  FW_CHECK(scale != 0, "[HDemucs] the frequency embedding's scale must be nonzero");
  reset();
}

void HDemucsScaledEmbeddingImpl::reset() {
  embedding = register_module("embedding", nn::Embedding(num_embeddings, embedding_dim));
  NoGradGuard no_grad;
  Tensor w = embedding->weight;
  if (smooth) {
    // A sum of n Gaussians grows as sqrt(n): normalise the running sum by that.
    Tensor c = w.cumsum(0) / fw::arange(1, num_embeddings + 1, w.options()).sqrt().unsqueeze(1);
    w.copy_(c);
  }
  w.div_(scale);
}

Tensor HDemucsScaledEmbeddingImpl::forward(const Tensor& indices) { return embedding->forward(indices) * scale; }

// ---- _LayerScale

HDemucsLayerScaleImpl::HDemucsLayerScaleImpl(int64_t channels, double init) : channels(channels), init(init) {
  reset();
}

void HDemucsLayerScaleImpl::reset() { scale = register_parameter("scale", fw::full({channels}, init)); }

Tensor HDemucsLayerScaleImpl::forward(const Tensor& x) {
  FW_CHECK(x.dim() == 3 && x.size(1) == channels, "[HDemucs] LayerScale of ", channels,
           " channels expected (batch, channels, time), got ", x.sizes());
  return scale.unsqueeze(1) * x;
}

// ---- _BLSTM

HDemucsBLSTMImpl::HDemucsBLSTMImpl(int64_t dim, int64_t layers, bool skip) : dim(dim), layers(layers), skip(skip) {
  reset();
}

void HDemucsBLSTMImpl::reset() {
  lstm = register_module("lstm", nn::LSTM(nn::LSTMOptions(dim, dim).num_layers(layers).bidirectional(true)));
  linear = register_module("linear", nn::Linear(2 * dim, dim));
}

Tensor HDemucsBLSTMImpl::forward(const Tensor& input) {
  FW_CHECK(input.dim() == 3 && input.size(1) == dim, "[HDemucs] BLSTM of dim ", dim,
           " expected (batch, ", dim, ", time), got ", input.sizes());
  FW_CHECK(max_steps >= 4, "[HDemucs] BLSTM max_steps must be at least 4, got ", max_steps);
  const int64_t B = input.size(0), C = input.size(1), T = input.size(2);
  Tensor x = input;
  const bool framed = T > max_steps;
  const int64_t width = max_steps, hop = max_steps / 2;
  int64_t nframes = 0;
  if (framed) {
    // Overlapping chunks of `width` steps every `hop`, the last zero-padded.
    nframes = (T + hop - 1) / hop;
    const int64_t target = (nframes - 1) * hop + width;
    Tensor frames = fw::pad(x, {0, target - T}).unfold(2, width, hop);  // (B, C, nframes, width)
    x = frames.permute({0, 2, 1, 3}).reshape({-1, C, width});
  }
  x = std::get<0>(lstm->forward(x.permute({2, 0, 1})));
  x = linear->forward(x).permute({1, 2, 0});
  if (framed) {
    // Keep each chunk's centre: all but the last hop/2 steps of the first chunk, all but the
    // first hop/2 of the last, the middle of the others.
    Tensor frames = x.reshape({B, -1, C, width});
    const int64_t limit = hop / 2;
    std::vector<Tensor> parts;
    for (int64_t k = 0; k < nframes; k++) {
      const int64_t lo = k == 0 ? 0 : limit, hi = k == nframes - 1 ? width : width - limit;
      parts.push_back(frames.select(1, k).narrow(2, lo, hi - lo));
    }
    x = fw::cat(parts, -1).narrow(-1, 0, T);
  }
  return skip ? x + input : x;
}

// ---- _LocalState

HDemucsLocalStateImpl::HDemucsLocalStateImpl(int64_t channels, int64_t heads, int64_t ndecay)
    : channels(channels), heads(heads), ndecay(ndecay) {
  FW_CHECK(heads > 0 && channels % heads == 0, "[HDemucs] local attention: channels (", channels,
           ") must be divisible by heads (", heads, ")");
  reset();
}

void HDemucsLocalStateImpl::reset() {
  auto c1 = [&](int64_t out) { return nn::Conv1d(nn::Conv1dOptions(channels, out, 1)); };
  content = register_module("content", c1(channels));
  query = register_module("query", c1(channels));
  key = register_module("key", c1(channels));
  query_decay = register_module("query_decay", c1(heads * ndecay));
  if (ndecay) {
    // Decays start near zero (behind a sigmoid): the widest initial window.
    NoGradGuard no_grad;
    query_decay->weight.mul_(0.01);
    query_decay->bias.fill_(-2);
  }
  proj = register_module("proj", c1(channels));
}

Tensor HDemucsLocalStateImpl::forward(const Tensor& x) {
  FW_CHECK(x.dim() == 3 && x.size(1) == channels, "[HDemucs] local attention of ", channels,
           " channels expected (batch, channels, time), got ", x.sizes());
  const int64_t B = x.size(0), T = x.size(2);
  Tensor queries = query->forward(x).view({B, heads, -1, T});
  Tensor keys = key->forward(x).view({B, heads, -1, T});
  // dots[b, h, t, s]: key step t against query step s.
  Tensor dots = fw::matmul(keys.transpose(2, 3), queries) / std::sqrt(double(keys.size(2)));
  if (ndecay) {
    // torchaudio's einsum over decays f of -f |t - s| / sqrt(ndecay) * sigmoid(q_f(s)) / 2,
    // summed over f first: one weight per (b, h, s) times the distance |t - s|.
    Tensor decays = fw::arange(1, ndecay + 1, x.options()).view({1, 1, -1, 1});
    Tensor decay_q = fw::sigmoid(query_decay->forward(x).view({B, heads, -1, T})) / 2;
    Tensor w = (decays * decay_q).sum(2, /*keepdim=*/true) / std::sqrt(double(ndecay));  // (B, h, 1, T)
    Tensor idx = fw::arange(T, x.options());
    Tensor dist = (idx.unsqueeze(1) - idx.unsqueeze(0)).abs();  // (T, T)
    dots = dots - dist * w;
  }
  dots = dots.masked_fill(fw::eye(T, fw::TensorOptions(fw::kBool).device(x.device())), -100);
  Tensor weights = fw::softmax(dots, 2);
  Tensor cont = content->forward(x).view({B, heads, -1, T});
  Tensor result = fw::matmul(cont, weights).reshape({B, -1, T});  // (b, h, c, s)
  return x + proj->forward(result);
}

// ---- _DConv

HDemucsDConvImpl::HDemucsDConvImpl(int64_t channels, double compress, int64_t depth, double init,
                                   std::string norm_type, bool attn, int64_t heads, int64_t ndecay, bool lstm,
                                   int64_t kernel_size)
    : channels(channels),
      compress(compress),
      depth(depth),
      init(init),
      norm_type(std::move(norm_type)),
      attn(attn),
      heads(heads),
      ndecay(ndecay),
      lstm(lstm),
      kernel_size(kernel_size) {
  FW_CHECK(kernel_size % 2 == 1, "[HDemucs] DConv kernel_size must be odd, got ", kernel_size);
  FW_CHECK(compress > 0, "[HDemucs] DConv compression must be positive, got ", compress);
  reset();
}

void HDemucsDConvImpl::reset() {
  layers = register_module("layers", nn::ModuleList());
  const bool dilate = depth > 0;
  const int64_t hidden = int64_t(double(channels) / compress);
  FW_CHECK(hidden > 0, "[HDemucs] DConv of ", channels, " channels compressed by ", compress, " has no channels");
  const std::string nt = norm_type == "group_norm" ? norm_type : "none";
  for (int64_t d = 0; d < std::abs(depth); d++) {
    const int64_t dilation = dilate ? int64_t(1) << d : 1;
    nn::Sequential seq;
    seq->push_back(nn::Conv1d(
        nn::Conv1dOptions(channels, hidden, kernel_size).dilation(dilation).padding(dilation * (kernel_size / 2))));
    seq->push_back(norm_or_identity(nt, 1, hidden));
    seq->push_back(nn::GELU());
    if (lstm) seq->push_back(HDemucsBLSTM(hidden, 2, true));
    if (attn) seq->push_back(HDemucsLocalState(hidden, heads, ndecay));
    seq->push_back(nn::Conv1d(nn::Conv1dOptions(hidden, 2 * channels, 1)));
    seq->push_back(norm_or_identity(nt, 1, 2 * channels));
    seq->push_back(nn::GLU(nn::GLUOptions(1)));
    seq->push_back(HDemucsLayerScale(channels, init));
    layers->push_back(seq);
  }
}

Tensor HDemucsDConvImpl::forward(const Tensor& input) {
  Tensor x = input;
  for (const auto& layer : *layers) x = x + layer->as<nn::SequentialImpl>()->forward(x);
  return x;
}

// ---- _HEncLayer

HDemucsEncoderLayerImpl::HDemucsEncoderLayerImpl(int64_t chin, int64_t chout, int64_t kernel_size, int64_t stride,
                                                 int64_t norm_groups, bool empty, bool freq, std::string norm_type,
                                                 int64_t context, bool dconv_lstm, bool dconv_attn,
                                                 int64_t dconv_depth, double dconv_compress, double dconv_init,
                                                 bool pad)
    : chin(chin),
      chout(chout),
      kernel_size(kernel_size),
      stride(stride),
      norm_groups(norm_groups),
      empty(empty),
      freq(freq),
      norm_type(std::move(norm_type)),
      context(context),
      dconv_lstm(dconv_lstm),
      dconv_attn(dconv_attn),
      dconv_depth(dconv_depth),
      dconv_compress(dconv_compress),
      dconv_init(dconv_init),
      pad(pad) {
  reset();
}

void HDemucsEncoderLayerImpl::reset() {
  conv = conv_fk(freq, chin, chout, kernel_size, stride, pad ? kernel_size / 4 : 0);
  register_module("conv", conv.ptr());
  norm1 = norm_or_identity(norm_type, norm_groups, chout);
  register_module("norm1", norm1.ptr());
  if (empty) {
    rewrite = nn::AnyModule(nn::Identity());
    norm2 = nn::AnyModule(nn::Identity());
    register_module("rewrite", rewrite.ptr());
    register_module("norm2", norm2.ptr());
    dconv = nullptr;
    register_module("dconv", nn::Identity());
  } else {
    rewrite = rewrite_conv(freq, chout, 2 * chout, context);
    register_module("rewrite", rewrite.ptr());
    norm2 = norm_or_identity(norm_type, norm_groups, 2 * chout);
    register_module("norm2", norm2.ptr());
    dconv = register_module("dconv", HDemucsDConv(chout, dconv_compress, dconv_depth, dconv_init, "group_norm",
                                                  dconv_attn, 4, 4, dconv_lstm));
  }
}

Tensor HDemucsEncoderLayerImpl::forward(const Tensor& input, const Tensor& inject) {
  Tensor x = input;
  FW_CHECK(x.dim() == (freq ? 4 : 3) || (!freq && x.dim() == 4), "[HDemucs] encoder layer expected ",
           freq ? "(batch, channels, freqs, time)" : "(batch, channels, time)", " input, got ", x.sizes());
  if (!freq) {
    if (x.dim() == 4) x = x.reshape({x.size(0), -1, x.size(3)});
    const int64_t le = x.size(-1);
    if (le % stride != 0) x = fw::pad(x, {0, stride - le % stride});
  }
  Tensor y = conv.forward(x);
  if (empty) return y;
  if (inject.defined()) {
    FW_CHECK(inject.size(-1) == y.size(-1), "[HDemucs] injection shapes do not align: the time branch has ",
             inject.size(-1), " steps, the frequency branch ", y.size(-1));
    y = y + (inject.dim() == 3 && y.dim() == 4 ? inject.unsqueeze(2) : inject);
  }
  y = fw::gelu(norm1.forward(y));
  if (freq) {
    const int64_t B = y.size(0), C = y.size(1), Fr = y.size(2), T = y.size(3);
    y = y.permute({0, 2, 1, 3}).reshape({-1, C, T});
    y = dconv->forward(y);
    y = y.reshape({B, Fr, C, T}).permute({0, 2, 1, 3});
  } else {
    y = dconv->forward(y);
  }
  return fw::glu(norm2.forward(rewrite.forward(y)), 1);
}

// ---- _HDecLayer

HDemucsDecoderLayerImpl::HDemucsDecoderLayerImpl(int64_t chin, int64_t chout, bool last, int64_t kernel_size,
                                                 int64_t stride, int64_t norm_groups, bool empty, bool freq,
                                                 std::string norm_type, int64_t context, bool pad)
    : chin(chin),
      chout(chout),
      last(last),
      kernel_size(kernel_size),
      stride(stride),
      norm_groups(norm_groups),
      empty(empty),
      freq(freq),
      norm_type(std::move(norm_type)),
      context(context),
      pad(pad) {
  FW_CHECK(!pad || ((kernel_size - stride) % 2 == 0 && kernel_size >= stride), "[HDemucs] decoder layer: kernel_size (",
           kernel_size, ") and stride (", stride, ") do not align: the kernel must exceed the stride by an even number");
  padding = pad ? (kernel_size - stride) / 2 : 0;
  reset();
}

void HDemucsDecoderLayerImpl::reset() {
  if (freq)
    conv_tr = nn::AnyModule(
        nn::ConvTranspose2d(nn::ConvTranspose2dOptions(chin, chout, {kernel_size, 1}).stride({stride, 1})));
  else
    conv_tr = nn::AnyModule(nn::ConvTranspose1d(nn::ConvTranspose1dOptions(chin, chout, kernel_size).stride(stride)));
  register_module("conv_tr", conv_tr.ptr());
  norm2 = norm_or_identity(norm_type, norm_groups, chout);
  register_module("norm2", norm2.ptr());
  if (empty) {
    rewrite = nn::AnyModule(nn::Identity());
    norm1 = nn::AnyModule(nn::Identity());
  } else {
    rewrite = rewrite_conv(freq, chin, 2 * chin, context);
    norm1 = norm_or_identity(norm_type, norm_groups, 2 * chin);
  }
  register_module("rewrite", rewrite.ptr());
  register_module("norm1", norm1.ptr());
}

std::tuple<Tensor, Tensor> HDemucsDecoderLayerImpl::forward(const Tensor& input, const Tensor& skip, int64_t length) {
  Tensor x = input;
  if (freq && x.dim() == 3) x = x.reshape({x.size(0), chin, -1, x.size(2)});
  Tensor y;
  if (!empty) {
    FW_CHECK(skip.defined() && skip.sizes() == x.sizes(), "[HDemucs] decoder layer: skip of shape ",
             skip.defined() ? skip.sizes() : IntArrayRef{}, " does not match the input's ", x.sizes());
    y = fw::glu(norm1.forward(rewrite.forward(x + skip)), 1);
  } else {
    FW_CHECK(!skip.defined(), "[HDemucs] decoder layer: an empty layer takes no skip");
    y = x;
  }
  Tensor z = norm2.forward(conv_tr.forward(y));
  if (freq) {
    if (padding) z = z.narrow(-2, padding, z.size(-2) - 2 * padding);
  } else {
    FW_CHECK(z.size(-1) >= padding + length, "[HDemucs] decoder layer: output of ", z.size(-1),
             " steps is shorter than the requested ", length, " after padding ", padding);
    z = z.narrow(-1, padding, length);
  }
  if (!last) z = fw::gelu(z);
  return {z, y};
}

}  // namespace detail

// ---- HDemucs

HDemucsImpl::HDemucsImpl(std::vector<std::string> sources, const HDemucsOptions& options)
    : sources(std::move(sources)), options(options) {
  FW_CHECK(!this->sources.empty(), "[HDemucs] needs at least one source name");
  FW_CHECK(options.audio_channels() > 0 && options.channels() > 0 && options.depth() > 0 && options.growth() > 0,
           "[HDemucs] audio_channels (", options.audio_channels(), "), channels (", options.channels(), "), depth (",
           options.depth(), ") and growth (", options.growth(), ") must be positive");
  FW_CHECK(options.nfft() >= 8 && options.nfft() % 8 == 0, "[HDemucs] nfft must be a positive multiple of 8, got ",
           options.nfft());
  FW_CHECK(options.context() >= 0 && options.context_enc() >= 0, "[HDemucs] context (", options.context(),
           ") and context_enc (", options.context_enc(), ") must be non-negative");
  FW_CHECK(options.stride() > 0 && options.time_stride() > 0 && options.kernel_size() > 0,
           "[HDemucs] kernel_size (", options.kernel_size(), "), stride (", options.stride(), ") and time_stride (",
           options.time_stride(), ") must be positive");
  reset();
}

void HDemucsImpl::reset() {
  const HDemucsOptions& o = options;
  hop_length = o.nfft() / 4;
  freq_encoder = register_module("freq_encoder", nn::ModuleList());
  freq_decoder = register_module("freq_decoder", nn::ModuleList());
  time_encoder = register_module("time_encoder", nn::ModuleList());
  time_decoder = register_module("time_decoder", nn::ModuleList());
  fenc_.clear();
  tenc_.clear();
  fdec_.clear();
  tdec_.clear();
  freq_emb = nullptr;

  int64_t chin = o.audio_channels(), chin_z = 2 * chin, chout = o.channels(), chout_z = o.channels();
  int64_t freqs = o.nfft() / 2;
  for (int64_t index = 0; index < o.depth(); index++) {
    const bool lstm = index >= o.dconv_lstm(), attn = index >= o.dconv_attn();
    const std::string norm_type = index >= o.norm_starts() ? "group_norm" : "none";
    const bool freq = freqs > 1;
    int64_t stri = o.stride(), ker = o.kernel_size();
    if (!freq) {
      FW_CHECK(freqs == 1, "[HDemucs] frequency rows must reach 1 before the time-only layers, got ", freqs);
      ker = o.time_stride() * 2;
      stri = o.time_stride();
    }
    bool pad = true, last_freq = false;
    if (freq && freqs <= o.kernel_size()) {
      ker = freqs;
      pad = false;
      last_freq = true;
    }
    // The time layer next to a frequency layer: the model's kernel and stride, padded, except
    // that nfft 2048's merging layer uses kernel 4, stride 2 (torchaudio's rule).
    int64_t tker = o.kernel_size(), tstri = o.stride();
    if (last_freq && o.nfft() == 2048) {
      tker = 4;
      tstri = 2;
    }
    if (last_freq) {
      chout_z = std::max(chout, chout_z);
      chout = chout_z;
    }
    fenc_.emplace_back(chin_z, chout_z, ker, stri, o.norm_groups(), false, freq, norm_type, o.context_enc(), lstm,
                       attn, o.dconv_depth(), o.dconv_comp(), o.dconv_init(), pad);
    if (freq)
      tenc_.emplace_back(chin, chout, tker, tstri, o.norm_groups(), last_freq, false, norm_type, o.context_enc(),
                         lstm, attn, o.dconv_depth(), o.dconv_comp(), o.dconv_init(), true);
    if (index == 0) {
      chin = o.audio_channels() * int64_t(sources.size());
      chin_z = 2 * chin;
    }
    fdec_.insert(fdec_.begin(), detail::HDemucsDecoderLayer(chout_z, chin_z, index == 0, ker, stri, o.norm_groups(),
                                                            false, freq, norm_type, o.context(), pad));
    if (freq)
      tdec_.insert(tdec_.begin(), detail::HDemucsDecoderLayer(chout, chin, index == 0, tker, tstri, o.norm_groups(),
                                                              last_freq, false, norm_type, o.context(), true));
    chin = chout;
    chin_z = chout_z;
    chout = int64_t(o.growth() * double(chout));
    chout_z = int64_t(o.growth() * double(chout_z));
    FW_CHECK(chout > 0 && chout_z > 0, "[HDemucs] growth ", o.growth(), " leaves layer ", index + 1, " no channels");
    if (freq) freqs = freqs <= o.kernel_size() ? 1 : freqs / o.stride();
    if (index == 0 && o.freq_emb() != 0)
      freq_emb = register_module("freq_emb",
                                 detail::HDemucsScaledEmbedding(freqs, chin_z, o.emb_scale(), o.emb_smooth()));
  }
  for (auto& m : fenc_) freq_encoder->push_back(m);
  for (auto& m : fdec_) freq_decoder->push_back(m);
  for (auto& m : tenc_) time_encoder->push_back(m);
  for (auto& m : tdec_) time_decoder->push_back(m);

  // torchaudio's _rescale_module: every (transposed) convolution's weight and bias divided by
  // sqrt(std(weight) / 0.1).
  NoGradGuard no_grad;
  for (const auto& m : modules(/*include_self=*/false)) {
    Tensor w, b;
    if (auto* c = dynamic_cast<nn::Conv1dImpl*>(m.get())) w = c->weight, b = c->bias;
    else if (auto* c2 = dynamic_cast<nn::Conv2dImpl*>(m.get())) w = c2->weight, b = c2->bias;
    else if (auto* t1 = dynamic_cast<nn::ConvTranspose1dImpl*>(m.get())) w = t1->weight, b = t1->bias;
    else if (auto* t2 = dynamic_cast<nn::ConvTranspose2dImpl*>(m.get())) w = t2->weight, b = t2->bias;
    if (!w.defined()) continue;
    const double scale = std::sqrt(w.std().item<double>() / 0.1);
    w.div_(scale);
    if (b.defined()) b.div_(scale);
  }
}

// Reflect-pads the signal by 1.5 hops on the left and to a whole number of hops plus 1.5 on the
// right (zero-padding first where the signal is too short to reflect), then takes the STFT frames
// that line up with the hops: (B, C, nfft/2, ceil(length / hop)) complex.
Tensor HDemucsImpl::spec(const Tensor& x) const {
  const int64_t hl = hop_length, L = x.size(-1);
  const int64_t le = (L + hl - 1) / hl, pad = hl / 2 * 3;
  const int64_t right = pad + le * hl - L;
  Tensor xp = x;
  const int64_t max_pad = std::max(pad, right);
  if (L <= max_pad) xp = fw::pad(xp, {0, max_pad - L + 1});
  xp = fw::pad(xp, {pad, right}, "reflect");
  const int64_t B = x.size(0), C = x.size(1);
  Tensor z = fw::stft(xp.reshape({-1, xp.size(-1)}), options.nfft(), hl, options.nfft(),
                      fw::hann_window(options.nfft(), x.options()), /*center=*/true, "reflect",
                      /*normalized=*/true, /*onesided=*/true, /*return_complex=*/true);
  FW_CHECK(z.size(-1) >= le + 4, "[HDemucs] internal: ", z.size(-1), " STFT frames for ", le, " hops");
  return z.narrow(-2, 0, options.nfft() / 2).narrow(-1, 2, le).reshape({B, C, options.nfft() / 2, le});
}

// m: (B, S, 2 C, F, T) real (complex parts as channels) -> (B, S, C, length) signals.
Tensor HDemucsImpl::ispec(const Tensor& m, int64_t length) const {
  const int64_t B = m.size(0), S = m.size(1), Fr = m.size(3), T = m.size(4);
  const int64_t hl = hop_length, pad = hl / 2 * 3;
  // The dropped top bin back as zeros, two zero frames on each side, then complex.
  Tensor r = fw::pad(m.reshape({B, S, -1, 2, Fr, T}), {2, 2, 0, 1});
  Tensor z = fw::view_as_complex(r.permute({0, 1, 2, 4, 5, 3}).contiguous());  // (B, S, C, F + 1, T + 4)
  const int64_t le = hl * ((length + hl - 1) / hl) + 2 * pad;
  Tensor x = fw::istft(z.reshape({-1, Fr + 1, T + 4}), options.nfft(), hl, options.nfft(),
                       fw::hann_window(options.nfft(), m.options()), /*center=*/true,
                       /*normalized=*/true, std::nullopt, le);
  return x.reshape({B, S, -1, le}).narrow(-1, pad, length);
}

Tensor HDemucsImpl::forward(const Tensor& input) {
  FW_CHECK(input.dim() == 3, "[HDemucs] expected a (batch, channels, frames) input, got shape ", input.sizes());
  FW_CHECK(input.size(1) == options.audio_channels(), "[HDemucs] the input has ", input.size(1),
           " channels, the model audio_channels = ", options.audio_channels());
  FW_CHECK(input.size(0) > 0 && input.size(2) > 0, "[HDemucs] the input is empty: shape ", input.sizes());
  FW_CHECK(input.is_floating_point(), "[HDemucs] expected a floating-point input, got ", input.dtype());
  const int64_t length = input.size(-1);

  // Frequency branch input: complex STFT bins as channels, normalised per example.
  Tensor z = spec(input);
  const int64_t B = z.size(0), Fq = z.size(2), T = z.size(3);
  Tensor mag = fw::view_as_real(z).permute({0, 1, 4, 2, 3}).reshape({B, -1, Fq, T});
  Tensor mean = mag.mean({1, 2, 3}, true), stdev = mag.std({1, 2, 3}, true, true);
  Tensor x = (mag - mean) / (stdev + 1e-5);
  // Time branch input: the waveform, normalised per example.
  Tensor meant = input.mean({1, 2}, true), stdt = input.std({1, 2}, true, true);
  Tensor xt = (input - meant) / (stdt + 1e-5);

  std::vector<Tensor> saved, saved_t;
  std::vector<int64_t> lengths, lengths_t;
  for (size_t idx = 0; idx < fenc_.size(); idx++) {
    lengths.push_back(x.size(-1));
    Tensor inject;
    if (idx < tenc_.size()) {
      lengths_t.push_back(xt.size(-1));
      xt = tenc_[idx]->forward(xt);
      if (!tenc_[idx]->empty) saved_t.push_back(xt);
      else inject = xt;  // the time branch merges into the frequency branch here
    }
    x = fenc_[idx]->forward(x, inject);
    if (idx == 0 && freq_emb) {
      // A learned embedding of the frequency row breaks the convolutions' frequency equivariance.
      Tensor frs = fw::arange(x.size(-2), fw::TensorOptions(fw::kLong).device(x.device()));
      Tensor emb = freq_emb->forward(frs).t().unsqueeze(0).unsqueeze(-1).expand_as(x);
      x = x + options.freq_emb() * emb;
    }
    saved.push_back(x);
  }

  x = fw::zeros_like(x);
  const size_t offset = fdec_.size() - tdec_.size();
  for (size_t idx = 0; idx < fdec_.size(); idx++) {
    Tensor skip = saved.back();
    saved.pop_back();
    const int64_t len = lengths.back();
    lengths.pop_back();
    auto [xo, pre] = fdec_[idx]->forward(x, skip, len);
    x = xo;
    if (idx >= offset) {
      auto& tdec = tdec_[idx - offset];
      const int64_t length_t = lengths_t.back();
      lengths_t.pop_back();
      if (tdec->empty) {
        FW_CHECK(pre.size(2) == 1, "[HDemucs] internal: the merged layer has ", pre.size(2), " frequency rows");
        xt = std::get<0>(tdec->forward(pre.select(2, 0), Tensor(), length_t));
      } else {
        Tensor st = saved_t.back();
        saved_t.pop_back();
        xt = std::get<0>(tdec->forward(xt, st, length_t));
      }
    }
  }

  const int64_t S = int64_t(sources.size());
  x = x.reshape({B, S, -1, Fq, T}) * stdev.unsqueeze(1) + mean.unsqueeze(1);
  Tensor wav = ispec(x, length);
  xt = xt.reshape({B, S, -1, length}) * stdt.unsqueeze(1) + meant.unsqueeze(1);
  return xt + wav;
}

HDemucs hdemucs_low(std::vector<std::string> sources) {
  return HDemucs(std::move(sources), HDemucsOptions().nfft(1024).depth(5));
}
HDemucs hdemucs_medium(std::vector<std::string> sources) {
  return HDemucs(std::move(sources), HDemucsOptions().nfft(2048).depth(6));
}
HDemucs hdemucs_high(std::vector<std::string> sources) {
  return HDemucs(std::move(sources), HDemucsOptions().nfft(4096).depth(6));
}

}  // namespace fw::audio::models
