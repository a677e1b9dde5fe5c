// oneDNN back end of the float32 convolutions (core/ops/conv.cpp). The interface is plain data
// so that oneDNN headers stay inside conv_dnnl.cpp; without oneDNN at configure time every call
// returns false and conv.cpp keeps its im2col path.
#pragma once
#include <cstdint>

namespace fw::detail {

// One convolution's geometry. For conv2d: input (n, c, h, w), output (n, o, oh, ow), weight
// (o, c/groups, kh, kw). For conv_transpose2d the roles of input and output are as the op's
// own (weight (c, o/groups, kh, kw)). Padding may differ before (ph, pw) and after (ph_end, pw_end).
struct DnnlConvShape {
  int64_t n, c, h, w, o, oh, ow, kh, kw;
  int64_t sh, sw, ph, pw, ph_end, pw_end, dh, dw, groups;
  bool nhwc = false;  // conv2d forward: x and y are NHWC (channels-last) buffers
  bool bf16 = false;  // x, w, y (and gx, gw, gy) hold bfloat16 bits; biases stay float
};

// Whether float32 convolutions run on oneDNN (built with it and not switched off).
bool conv_dnnl_enabled();
// Switches the oneDNN path on or off at run time (benchmarks compare it with im2col).
void set_conv_dnnl_enabled(bool on);
// Winograd for 3x3 stride-1 convolutions (Note [Winograd convolutions] in conv_dnnl.cpp; off
// unless FW_CONV_WINOGRAD=1).
void set_conv_dnnl_winograd(bool on);
bool conv_dnnl_winograd();

// y = conv2d(x, w) + b on contiguous NCHW float buffers (b may be null). False: not handled.
bool dnnl_conv2d(const DnnlConvShape& s, const float* x, const float* w, const float* b, float* y);
// The same on bfloat16 buffers with a float bias (s.bf16 must be set; Note [bfloat16
// convolutions] in conv_dnnl.cpp).
bool dnnl_conv2d_bf16(const DnnlConvShape& s, const uint16_t* x, const uint16_t* w, const float* b, uint16_t* y);
// y = conv_transpose2d(x, w) + b, same conventions. False: not handled.
bool dnnl_conv_transpose2d(const DnnlConvShape& s, const float* x, const float* w, const float* b, float* y);
// Gradients of y = conv2d(x, w) (+ b) from gy, on contiguous NCHW / OIHW float buffers: gx, gw and
// gb are written when non-null (Note [Fused conv2d backward] in conv_dnnl.cpp). False: not
// handled, nothing written.
bool dnnl_conv2d_backward(const DnnlConvShape& s, const float* x, const float* w, const float* gy, float* gx,
                          float* gw, float* gb);
// The same on bfloat16 buffers (s.bf16 set); the bias grad gb is float.
bool dnnl_conv2d_backward_bf16(const DnnlConvShape& s, const uint16_t* x, const uint16_t* w, const uint16_t* gy,
                               uint16_t* gx, uint16_t* gw, float* gb);

}  // namespace fw::detail
