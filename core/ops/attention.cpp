// Composite products: torch.bilinear and scaled dot-product attention, written with matmul,
// softmax and masking so autograd and fw::compile see ordinary ops.
#include <cmath>
#include <limits>

#include "core/autocast.h"
#include "fw/fw.h"

namespace fw {

Tensor bilinear(const Tensor& input1, const Tensor& input2, const Tensor& weight, const Tensor& bias) {
  FW_CHECK(input1.defined() && input2.defined() && weight.defined(), "[bilinear] inputs and weight must be defined");
  FW_CHECK(weight.dim() == 3, "[bilinear] expected a 3-D weight (out, in1, in2), got shape ", weight.sizes());
  const int64_t out = weight.size(0), in1 = weight.size(1), in2 = weight.size(2);
  FW_CHECK(input1.dim() >= 1 && input1.size(-1) == in1, "[bilinear] input1 must end in ", in1,
           " features (weight ", weight.sizes(), "), got shape ", input1.sizes());
  FW_CHECK(input2.dim() >= 1 && input2.size(-1) == in2, "[bilinear] input2 must end in ", in2,
           " features (weight ", weight.sizes(), "), got shape ", input2.sizes());
  FW_CHECK(input1.sizes().slice(0, input1.dim() - 1).equals(input2.sizes().slice(0, input2.dim() - 1)),
           "[bilinear] input1 and input2 must have the same leading dims, got ", input1.sizes(), " and ",
           input2.sizes());
  FW_CHECK(!bias.defined() || (bias.dim() == 1 && bias.size(0) == out), "[bilinear] expected a bias of shape [",
           out, "], got ", bias.sizes());
  detail::AutocastOff no_autocast;  // libtorch's bilinear (_trilinear) is not autocast (Note [Autocast])
  std::vector<int64_t> lead(input1.sizes().begin(), input1.sizes().end() - 1);
  Tensor x1 = input1.reshape({-1, in1}), x2 = input2.reshape({-1, in2});
  // (B, in1) @ (in1, out * in2) -> (B, out, in2), then contract in2 with x2.
  Tensor t = x1.matmul(weight.permute({1, 0, 2}).reshape({in1, out * in2})).view({-1, out, in2});
  Tensor y = t.mul(x2.unsqueeze(1)).sum({2});
  if (bias.defined()) y = y.add(bias);
  lead.push_back(out);
  return y.reshape(lead);
}

Tensor scaled_dot_product_attention(const Tensor& query, const Tensor& key, const Tensor& value,
                                    const Tensor& attn_mask, double dropout_p, bool is_causal,
                                    std::optional<double> scale) {
  const char* op = "[scaled_dot_product_attention] ";
  FW_CHECK(query.defined() && key.defined() && value.defined(), op, "query, key and value must be defined");
  FW_CHECK(query.dim() >= 2 && key.dim() >= 2 && value.dim() >= 2, op,
           "expected query, key and value of at least 2 dims, got shapes ", query.sizes(), ", ", key.sizes(), " and ",
           value.sizes());
  FW_CHECK(query.is_floating_point() && query.dtype() == key.dtype() && query.dtype() == value.dtype(), op,
           "expected query, key and value of one floating dtype, got ", dtype_str(query.dtype()), ", ",
           dtype_str(key.dtype()), " and ", dtype_str(value.dtype()));
  FW_CHECK(query.size(-1) == key.size(-1), op, "query and key must share their last dim, got shapes ", query.sizes(),
           " and ", key.sizes());
  FW_CHECK(key.size(-2) == value.size(-2), op, "key and value must have the same sequence length, got shapes ",
           key.sizes(), " and ", value.sizes());
  FW_CHECK(!(is_causal && attn_mask.defined()), op, "Explicit attn_mask should not be set when is_causal=True");
  FW_CHECK(dropout_p >= 0 && dropout_p <= 1, op, "dropout probability has to be between 0 and 1, but got ", dropout_p);
  const int64_t L = query.size(-2), S = key.size(-2);
  const double s = scale ? *scale : 1.0 / std::sqrt(double(query.size(-1)));
  Tensor scores = query.matmul(key.transpose(-2, -1)).mul(s);
  const double ninf = -std::numeric_limits<double>::infinity();
  if (is_causal) {
    scores = scores.masked_fill(ones({L, S}, TensorOptions(kBool)).tril().logical_not(), ninf);
  } else if (attn_mask.defined()) {
    if (attn_mask.dtype() == kBool) scores = scores.masked_fill(attn_mask.logical_not(), ninf);
    else scores = scores.add(attn_mask);
  }
  Tensor w = scores.softmax(-1);
  if (dropout_p > 0) w = dropout(w, dropout_p, true);
  return w.matmul(value);
}

}  // namespace fw
