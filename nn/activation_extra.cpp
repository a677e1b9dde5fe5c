// The rest of libtorch's activations: hardshrink, softshrink, softsign, tanhshrink, celu, rrelu,
// glu, prelu, threshold (functional) and their modules, plus LogSigmoid, Softmin, Softmax2d.
// Each is composed from differentiable fw ops, so autograd (including higher order) needs no
// rule of its own.
#include <limits>

#include "fw/nn/functional.h"
#include "fw/activations.h"
#include "fw/nn/modules/activation.h"

namespace fw::nn {

namespace functional {

// Note [Shrink masks]
// Masks compare so that NaN falls into the "keep x" branch (|NaN| <= lambda is false), and the
// boundary |x| == lambda gives 0 with a zero gradient, as ATen's kernels and backward do.
Tensor hardshrink(const Tensor& x, const HardshrinkFuncOptions& o) {
  return fw::where(x.abs().le(o.lambda()), fw::zeros_like(x), x);
}

Tensor softshrink(const Tensor& x, const SoftshrinkFuncOptions& o) {
  FW_CHECK(o.lambda() >= 0, "[softshrink] lambda must be greater or equal to 0, but found to be ", o.lambda());
  return x - x.clamp(-o.lambda(), o.lambda());
}

Tensor softsign(const Tensor& x) { return x / (x.abs() + 1); }

Tensor tanhshrink(const Tensor& x) { return x - x.tanh(); }

Tensor celu(Tensor x, const CELUFuncOptions& o) {
  FW_CHECK(o.alpha() != 0, "[celu] alpha cannot be 0 (it divides the input)");
  return detail::maybe_inplace(x, fw::elu(x, o.alpha(), 1.0, 1.0 / o.alpha()), o.inplace());
}

// Note [RReLU noise]
// In training each element with x <= 0 gets its own slope from U(lower, upper) (ATen draws for
// x <= 0 as well); the slopes are sampled without grad, so d y / d x is the slope itself.
Tensor rrelu(Tensor x, const RReLUFuncOptions& o) {
  FW_CHECK(o.lower() <= o.upper(), "[rrelu] lower bound should be less than or equal to the upper bound (got lower ",
           o.lower(), ", upper ", o.upper(), ")");
  if (!o.training()) return detail::maybe_inplace(x, fw::leaky_relu(x, (o.lower() + o.upper()) / 2), o.inplace());
  FW_CHECK(x.is_floating_point(), "[rrelu] expected a floating-point input, got ", x.dtype());
  Tensor slope;
  {
    NoGradGuard no_grad;
    Tensor r = fw::rand_like(x) * (o.upper() - o.lower()) + o.lower();
    slope = fw::where(x.le(0), r, fw::ones_like(x));
  }
  return detail::maybe_inplace(x, x * slope, o.inplace());
}

Tensor glu(const Tensor& x, const GLUFuncOptions& o) {
  FW_CHECK(x.dim() > 0, "[glu] glu does not support scalars because halving size must be even");
  const int64_t d = o.dim() < 0 ? o.dim() + x.dim() : o.dim();
  FW_CHECK_INDEX(d >= 0 && d < x.dim(), "[glu] dim ", o.dim(), " is out of range for an input of shape ", x.sizes());
  const int64_t n = x.size(d);
  FW_CHECK(n % 2 == 0, "[glu] Halving dimension must be even, but dimension ", o.dim(), " is size ", n,
           " (input shape ", x.sizes(), ")");
  return x.narrow(d, 0, n / 2) * x.narrow(d, n / 2, n / 2).sigmoid();
}

Tensor prelu(const Tensor& x, const Tensor& weight) {
  FW_CHECK(x.defined() && weight.defined(), "[prelu] input and weight must be defined");
  FW_CHECK(weight.dim() <= 1, "[prelu] Expected weight to be a scalar or 1D tensor, but got shape ", weight.sizes());
  const int64_t channels = x.dim() >= 2 ? x.size(1) : 1;
  const int64_t n = weight.numel();
  FW_CHECK(n == 1 || n == channels, "[prelu] Mismatch of parameter numbers and input channel size. Found parameter "
           "numbers = ", n, " and channel size = ", channels, " (input shape ", x.sizes(), ")");
  Tensor w = weight.reshape({-1});
  if (n > 1) {
    std::vector<int64_t> shape(size_t(x.dim() - 1), 1);
    shape[0] = n;
    w = w.reshape(shape);
  } else {
    w = w.reshape({});
  }
  return fw::where(x.gt(0), x, x * w);
}

Tensor threshold(Tensor x, const ThresholdFuncOptions& o) {
  Tensor y = fw::where(x.le(o.threshold()), fw::full_like(x, o.value()), x);
  return detail::maybe_inplace(x, y, o.inplace());
}

}  // namespace functional

// ---- modules

namespace {

const char* inplace_suffix(bool inplace) { return inplace ? ", inplace=true" : ""; }

}  // namespace

void HardshrinkImpl::pretty_print(std::ostream& stream) const {
  stream << "fw::nn::Hardshrink(" << options.lambda() << ")";
}
void SoftshrinkImpl::pretty_print(std::ostream& stream) const {
  stream << "fw::nn::Softshrink(" << options.lambda() << ")";
}
void CELUImpl::pretty_print(std::ostream& stream) const {
  stream << "fw::nn::CELU(alpha=" << options.alpha() << inplace_suffix(options.inplace()) << ")";
}
void GLUImpl::pretty_print(std::ostream& stream) const { stream << "fw::nn::GLU(dim=" << options.dim() << ")"; }
void SoftsignImpl::pretty_print(std::ostream& stream) const { stream << "fw::nn::Softsign()"; }
void TanhshrinkImpl::pretty_print(std::ostream& stream) const { stream << "fw::nn::Tanhshrink()"; }
void LogSigmoidImpl::pretty_print(std::ostream& stream) const { stream << "fw::nn::LogSigmoid()"; }
void SoftminImpl::pretty_print(std::ostream& stream) const { stream << "fw::nn::Softmin(dim=" << options.dim() << ")"; }
void Softmax2dImpl::pretty_print(std::ostream& stream) const { stream << "fw::nn::Softmax2d()"; }
void ThresholdImpl::pretty_print(std::ostream& stream) const {
  stream << "fw::nn::Threshold(threshold=" << options.threshold() << ", value=" << options.value()
         << inplace_suffix(options.inplace()) << ")";
}
void RReLUImpl::pretty_print(std::ostream& stream) const {
  stream << "fw::nn::RReLU(lower=" << options.lower() << ", upper=" << options.upper()
         << inplace_suffix(options.inplace()) << ")";
}
void PReLUImpl::pretty_print(std::ostream& stream) const {
  stream << "fw::nn::PReLU(num_parameters=" << options.num_parameters() << ")";
}

Tensor Softmax2dImpl::forward(const Tensor& input) {
  FW_CHECK(input.dim() == 3 || input.dim() == 4, "[Softmax2d] requires a 3D or 4D tensor as input, got shape ",
           input.sizes());
  return fw::softmax(input, -3);
}

Tensor RReLUImpl::forward(Tensor input) {
  return functional::rrelu(input, functional::RReLUFuncOptions()
                                      .lower(options.lower())
                                      .upper(options.upper())
                                      .training(is_training())
                                      .inplace(options.inplace()));
}

PReLUImpl::PReLUImpl(const PReLUOptions& options_) : options(options_) { reset(); }

void PReLUImpl::reset() {
  FW_CHECK(options.num_parameters() > 0, "[PReLU] num_parameters must be positive, got ", options.num_parameters());
  weight = register_parameter("weight", fw::full({options.num_parameters()}, options.init()));
}

}  // namespace fw::nn

namespace fw {

namespace F = nn::functional;

Tensor threshold(const Tensor& self, const Scalar& threshold, const Scalar& value) {
  return F::threshold(self, F::ThresholdFuncOptions(threshold.to<double>(), value.to<double>()));
}
Tensor celu(const Tensor& self, const Scalar& alpha) { return F::celu(self, F::CELUFuncOptions().alpha(alpha.to<double>())); }
Tensor hardshrink(const Tensor& self, const Scalar& lambd) { return F::hardshrink(self, lambd.to<double>()); }
Tensor softshrink(const Tensor& self, const Scalar& lambd) { return F::softshrink(self, lambd.to<double>()); }
Tensor prelu(const Tensor& self, const Tensor& weight) { return F::prelu(self, weight); }
Tensor rrelu(const Tensor& self, const Scalar& lower, const Scalar& upper, bool training) {
  return F::rrelu(self, F::RReLUFuncOptions().lower(lower.to<double>()).upper(upper.to<double>()).training(training));
}
Tensor glu(const Tensor& self, int64_t dim) { return F::glu(self, dim); }

}  // namespace fw
