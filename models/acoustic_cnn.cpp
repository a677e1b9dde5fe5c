// AcousticCnn: building the trunk and heads from a ModelConfig, multilingual routing, the layer
// table and initialisation.
#include "fw/models/acoustic_cnn.h"

#include <cmath>
#include <iomanip>
#include <sstream>

#include "fw/nn/functional.h"
#include "fw/nn/init.h"
#include "fw/nn/modules/activation.h"
#include "fw/nn/modules/conv.h"
#include "fw/nn/modules/linear.h"
#include "fw/nn/modules/normalization.h"
#include "fw/nn/modules/pooling.h"
#include "fw/ops.h"

namespace fw::models {

namespace {

std::string shape_str(const std::vector<int64_t>& s) {
  std::ostringstream os;
  os << "(";
  for (size_t i = 0; i < s.size(); i++) os << (i ? ", " : "") << s[i];
  os << ")";
  return os.str();
}

int64_t count_parameters(const nn::Module& m) {
  int64_t n = 0;
  for (const auto& p : m.parameters()) n += p.numel();
  return n;
}

nn::SequentialImpl& head_of(const nn::ModuleList& heads, int64_t lang) {
  return *heads->ptr<nn::SequentialImpl>(size_t(lang));
}

// The lang_ids tensor as a checked vector (values in [0, num_languages)).
std::vector<int64_t> checked_ids(const Tensor& ids, int64_t n, int64_t num_languages, const char* fn,
                                 const char* what) {
  FW_CHECK(ids.defined() && ids.dim() == 1 && ids.size(0) == n && !ids.is_floating_point() && !ids.is_complex(), fn,
           " expected ", what, " as a 1-D integer tensor of ", n, " values (one per frame), got ",
           ids.defined() ? ids.sizes() : IntArrayRef{}, ids.defined() ? std::string(" ") + dtype_name(ids.dtype()) : "");
  Tensor c = ids.to(kLong).contiguous();
  const int64_t* p = c.data_ptr<int64_t>();
  std::vector<int64_t> v(p, p + n);
  for (int64_t i = 0; i < n; i++)
    FW_CHECK(v[i] >= 0 && v[i] < num_languages, fn, " ", what, "[", i, "] = ", v[i], " is out of range for ",
             num_languages, " values");
  return v;
}

}  // namespace

// Note [Initialisation schemes]
// kKaiming (the default): He et al. 2015 uniform, bound sqrt(6 / fan_in) = sqrt(2) * sqrt(3 / fan_in)
// for every conv and hidden FC layer (each feeds a ReLU), the linear gain (bound sqrt(3 / fan_in))
// for the output layers, biases zero. It keeps activations at a constant scale through the 14
// layers. kTorch7: what Torch7's nn.SpatialConvolution / nn.Linear reset() did, the framework the
// paper used: weights and biases U(-1 / sqrt(fan_in), 1 / sqrt(fan_in)), fan_in = in * kh * kw.
// (fw::nn's own layer default, libtorch's kaiming_uniform_(a = sqrt 5), has the same weight bound.)
void init_layer_(Tensor weight, Tensor bias, InitScheme scheme, bool before_relu) {
  auto [fan_in, fan_out] = nn::init::_calculate_fan_in_and_fan_out(weight);
  (void)fan_out;
  if (scheme == InitScheme::kTorch7) {
    double bound = fan_in > 0 ? 1.0 / std::sqrt(double(fan_in)) : 0.0;
    nn::init::uniform_(weight, -bound, bound);
    if (bias.defined()) nn::init::uniform_(bias, -bound, bound);
    return;
  }
  if (before_relu)
    nn::init::kaiming_uniform_(weight, 0, fw::kFanIn, fw::kReLU);
  else
    nn::init::kaiming_uniform_(weight, 0, fw::kFanIn, fw::kLinear);
  if (bias.defined()) nn::init::zeros_(bias);
}

AcousticCnnImpl::AcousticCnnImpl(ModelConfig config) : options(std::move(config)) { reset(); }

void AcousticCnnImpl::reset() {
  validate(options);
  clear_registrations();
  stages_ = resolved_stages(options);
  stage_ends_.clear();
  trunk = register_module("trunk", nn::Sequential());
  int64_t channels = options.in_channels();
  for (size_t s = 0; s < stages_.size(); s++) {
    const std::string sn = std::to_string(s + 1);
    for (size_t i = 0; i < stages_[s].convs.size(); i++) {
      const auto& c = stages_[s].convs[i];
      const std::string id = sn + "_" + std::to_string(i + 1);
      trunk->push_back("conv" + id, nn::Conv2d(nn::Conv2dOptions(channels, c.out_channels, c.kernel)
                                                   .padding(ExpandingArray<2>(c.padding))
                                                   .bias(!options.batch_norm())));
      if (options.batch_norm()) trunk->push_back("bn" + id, nn::BatchNorm2d(c.out_channels));
      trunk->push_back("relu" + id, nn::ReLU());
      channels = c.out_channels;
    }
    if (const auto& p = stages_[s].pool)
      trunk->push_back("pool" + sn, nn::MaxPool2d(nn::MaxPool2dOptions(p->kernel).stride(p->stride)));
    stage_ends_.push_back(trunk->size());
  }
  trunk->push_back("flatten", nn::Flatten());
  heads = register_module("heads", nn::ModuleList());
  const int64_t d = trunk_features();
  for (int64_t classes : options.languages()) {
    nn::Sequential head;
    int64_t in = d;
    for (int64_t i = 1; i <= options.num_fc(); i++) {
      head->push_back("fc" + std::to_string(i), nn::Linear(in, options.fc_dim()));
      head->push_back("relu" + std::to_string(i), nn::ReLU());
      in = options.fc_dim();
    }
    head->push_back("out", nn::Linear(in, classes));
    heads->push_back(head);
  }
  reset_parameters();
}

void AcousticCnnImpl::reset_parameters() {
  NoGradGuard no_grad;
  for (const auto& m : trunk->children()) {
    if (auto* conv = m->as<nn::Conv2dImpl>()) init_layer_(conv->weight, conv->bias, options.init(), true);
    if (auto* bn = m->as<nn::BatchNorm2dImpl>()) bn->reset_parameters();
  }
  for (const auto& h : *heads) {
    auto linears = h->children();
    for (size_t i = 0; i < linears.size(); i++)
      if (auto* lin = linears[i]->as<nn::LinearImpl>())
        init_layer_(lin->weight, lin->bias, options.init(), i + 1 < linears.size());
  }
}

void AcousticCnnImpl::pretty_print(std::ostream& stream) const {
  stream << "fw::models::AcousticCnn(kind=" << kind_name(options.kind()) << ", languages=[";
  for (size_t l = 0; l < options.languages().size(); l++) stream << (l ? ", " : "") << options.languages()[l];
  stream << "], num_fc=" << options.num_fc() << ", fc_dim=" << options.fc_dim()
         << ", in_channels=" << options.in_channels() << ", num_freq=" << options.num_freq()
         << ", context=" << context_frames(options) << ", batch_norm=" << (options.batch_norm() ? "true" : "false")
         << ", init=" << init_name(options.init()) << ")";
}

void AcousticCnnImpl::check_input(const Tensor& x, const char* fn) const {
  const int64_t c = options.in_channels(), f = options.num_freq(), t = context_frames(options);
  FW_CHECK(x.defined() && x.dim() == 4 && x.size(1) == c && x.size(2) == f && x.size(3) == t, fn,
           " expected input (N, ", c, ", ", f, ", ", t, ") = (batch, channels, freq, context), got ",
           x.defined() ? x.sizes() : IntArrayRef{});
}

void AcousticCnnImpl::check_lang(int64_t lang, const char* fn) const {
  FW_CHECK(lang >= 0 && lang < num_languages(), fn, " language ", lang, " is out of range: the model has ",
           num_languages(), " language(s)");
}

Tensor AcousticCnnImpl::features(const Tensor& x) {
  check_input(x, "[models::AcousticCnn::features]");
  return trunk->forward(x);
}

std::vector<Tensor> AcousticCnnImpl::feature_maps(const Tensor& x) {
  check_input(x, "[models::AcousticCnn::feature_maps]");
  std::vector<Tensor> maps;
  Tensor h = x;
  size_t i = 0, stage = 0;
  for (const auto& m : *trunk) {
    if (stage == stage_ends_.size()) break;
    h = m.forward(h);
    if (++i == stage_ends_[stage]) maps.push_back(h), stage++;
  }
  return maps;
}

Tensor AcousticCnnImpl::forward(const Tensor& x) {
  FW_CHECK(num_languages() == 1, "[models::AcousticCnn::forward] the model has ", num_languages(),
           " languages: pass a language index or per-frame language ids");
  return forward(x, 0);
}

Tensor AcousticCnnImpl::forward(const Tensor& x, int64_t lang) {
  check_lang(lang, "[models::AcousticCnn::forward]");
  check_input(x, "[models::AcousticCnn::forward]");
  return head_of(heads, lang).forward(trunk->forward(x));
}

// Note [Multilingual routing]
// The batch goes through the shared trunk once; its rows are then split by language with
// index_select, and each language's rows go through that language's head only. A head whose
// language is absent from the batch takes no part in the graph, so backward leaves its
// gradients untouched (undefined, or as they were), and the trunk gets the sum of the gradients
// coming back through every head present.
RoutedLogits AcousticCnnImpl::forward(const Tensor& x, const Tensor& lang_ids) {
  const char* fn = "[models::AcousticCnn::forward]";
  check_input(x, fn);
  const int64_t n = x.size(0), langs = num_languages();
  auto ids = checked_ids(lang_ids, n, langs, fn, "lang_ids");
  std::vector<std::vector<int64_t>> rows(static_cast<size_t>(langs));
  for (int64_t i = 0; i < n; i++) rows[size_t(ids[size_t(i)])].push_back(i);
  Tensor f = trunk->forward(x);
  RoutedLogits out;
  out.logits.resize(size_t(langs));
  out.index.resize(size_t(langs));
  for (int64_t l = 0; l < langs; l++) {
    const auto& r = rows[size_t(l)];
    if (r.empty()) continue;
    Tensor index = fw::tensor(r);
    out.index[size_t(l)] = index;
    out.logits[size_t(l)] = head_of(heads, l).forward(int64_t(r.size()) == n ? f : f.index_select(0, index));
  }
  return out;
}

Tensor AcousticCnnImpl::multilingual_cross_entropy(const Tensor& x, const Tensor& lang_ids, const Tensor& targets) {
  const char* fn = "[models::AcousticCnn::multilingual_cross_entropy]";
  check_input(x, fn);
  const int64_t n = x.size(0);
  FW_CHECK(n > 0, fn, " got an empty batch");
  auto ids = checked_ids(lang_ids, n, num_languages(), fn, "lang_ids");
  int64_t max_classes = 0;
  for (int64_t c : options.languages()) max_classes = std::max(max_classes, c);
  auto tv = checked_ids(targets, n, max_classes, fn, "targets");
  for (int64_t i = 0; i < n; i++) {
    int64_t classes = options.languages()[size_t(ids[size_t(i)])];
    FW_CHECK(tv[size_t(i)] < classes, fn, " targets[", i, "] = ", tv[size_t(i)], " but language ", ids[size_t(i)],
             " has ", classes, " classes");
  }
  RoutedLogits routed = forward(x, lang_ids);
  Tensor t = targets.to(kLong), total;
  auto sum = nn::functional::CrossEntropyFuncOptions().reduction(fw::kSum);
  for (size_t l = 0; l < routed.logits.size(); l++) {
    if (!routed.logits[l].defined()) continue;
    Tensor loss = nn::functional::cross_entropy(routed.logits[l], t.index_select(0, routed.index[l]), sum);
    total = total.defined() ? total + loss : loss;
  }
  return total / double(n);
}

std::vector<LayerInfo> AcousticCnnImpl::layer_table(std::vector<int64_t> input_shape) const {
  if (input_shape.empty()) input_shape = {1, options.in_channels(), options.num_freq(), context_frames(options)};
  FW_CHECK(input_shape.size() == 4 && input_shape[0] >= 0 && input_shape[1] == options.in_channels() &&
               input_shape[2] == options.num_freq() && input_shape[3] == context_frames(options),
           "[models::AcousticCnn::layer_table] expected input shape (N, ", options.in_channels(), ", ",
           options.num_freq(), ", ", context_frames(options), "), got ", IntArrayRef(input_shape));
  std::vector<LayerInfo> rows;
  const auto named = trunk->named_children();
  int64_t n = input_shape[0], c = input_shape[1], h = input_shape[2], w = input_shape[3];
  auto conv_len = [](int64_t in, int64_t k, int64_t pad, int64_t stride) { return (in + 2 * pad - k) / stride + 1; };
  for (const auto& item : named) {
    const std::string& name = item.key();
    const nn::Module& m = *item.value();
    std::ostringstream type;
    std::vector<int64_t> shape{n, c, h, w};
    if (const auto* conv = m.as<nn::Conv2dImpl>()) {
      const auto& o = conv->options;
      auto k = *o.kernel_size();
      auto p = *std::get<ExpandingArray<2>>(o.padding());
      c = o.out_channels(), h = conv_len(h, k[0], p[0], 1), w = conv_len(w, k[1], p[1], 1);
      shape = {n, c, h, w};
      type << "Conv2d " << o.in_channels() << "->" << o.out_channels() << " k" << k[0] << "x" << k[1] << " p" << p[0]
           << "x" << p[1];
    } else if (const auto* pool = m.as<nn::MaxPool2dImpl>()) {
      auto k = *pool->options.kernel_size();
      auto s = *pool->options.stride();
      h = conv_len(h, k[0], 0, s[0]), w = conv_len(w, k[1], 0, s[1]);
      shape = {n, c, h, w};
      type << "MaxPool2d k" << k[0] << "x" << k[1] << " s" << s[0] << "x" << s[1];
    } else if (m.as<nn::BatchNorm2dImpl>()) {
      type << "BatchNorm2d " << c;
    } else if (m.as<nn::ReLUImpl>()) {
      type << "ReLU";
    } else if (m.as<nn::FlattenImpl>()) {
      shape = {n, c * h * w};
      type << "Flatten";
    }
    rows.push_back({name, type.str(), shape, count_parameters(m)});
  }
  for (int64_t l = 0; l < num_languages(); l++) {
    for (const auto& item : head_of(heads, l).named_children()) {
      std::ostringstream type;
      int64_t units = rows.back().output_shape.back();
      if (const auto* lin = item.value()->as<nn::LinearImpl>()) {
        units = lin->options.out_features();
        type << "Linear " << lin->options.in_features() << "->" << units;
      } else {
        type << "ReLU";
      }
      rows.push_back({"lang" + std::to_string(l) + "." + item.key(), type.str(), {n, units},
                      count_parameters(*item.value())});
    }
  }
  return rows;
}

void AcousticCnnImpl::print_summary(std::ostream& stream, std::vector<int64_t> input_shape) const {
  auto rows = layer_table(input_shape);
  if (input_shape.empty()) input_shape = {1, options.in_channels(), options.num_freq(), context_frames(options)};
  stream << "AcousticCnn " << kind_name(options.kind()) << " (" << num_languages() << " language"
         << (num_languages() == 1 ? "" : "s") << ", batch_norm " << (options.batch_norm() ? "on" : "off")
         << ", init " << init_name(options.init()) << "), input " << shape_str(input_shape) << "\n";
  stream << std::left << std::setw(16) << "layer" << std::setw(30) << "type" << std::setw(22) << "output shape"
         << "params\n";
  int64_t trunk_params = 0, head_params = 0;
  for (const auto& r : rows) {
    stream << std::left << std::setw(16) << r.name << std::setw(30) << r.type << std::setw(22)
           << shape_str(r.output_shape) << r.num_parameters << "\n";
    (r.name.rfind("lang", 0) == 0 ? head_params : trunk_params) += r.num_parameters;
  }
  stream << "trunk parameters: " << trunk_params << "\n"
         << "head parameters: " << head_params << " (" << num_languages() << " heads)\n"
         << "total parameters: " << trunk_params + head_params << "\n";
}

int64_t AcousticCnnImpl::num_parameters() const { return count_parameters(*this); }

int64_t AcousticCnnImpl::trunk_features() const {
  int64_t c = options.in_channels(), h = options.num_freq(), w = context_frames(options);
  for (const auto& st : stages_) {
    for (const auto& cv : st.convs)
      c = cv.out_channels, h = h + 2 * cv.padding[0] - cv.kernel[0] + 1, w = w + 2 * cv.padding[1] - cv.kernel[1] + 1;
    if (st.pool) h = (h - st.pool->kernel[0]) / st.pool->stride[0] + 1, w = (w - st.pool->kernel[1]) / st.pool->stride[1] + 1;
  }
  return c * h * w;
}

}  // namespace fw::models
