// Fourier transforms and signal windows with libtorch's names and signatures: fw::fft::{fft, ifft, rfft, irfft, hfft,
// ihfft, fftfreq, rfftfreq, fftshift, ifftshift}, fw::stft and fw::istft. All are differentiable
// and batched over the dims they do not transform. CPU transforms run on FFTW3 (float32 and float64;
// plans are cached per size).
#pragma once
#include <optional>
#include <string_view>

#include "fw/optional_dims.h"
#include "fw/tensor.h"

namespace fw {

namespace fft {

// norm: "backward" (default: forward unscaled, inverse by 1/n), "forward" (the reverse), "ortho"
// (1/sqrt(n) both ways). n: signal length along dim (input zero-padded or trimmed to it).
Tensor fft(const Tensor& self, std::optional<int64_t> n = std::nullopt, int64_t dim = -1,
           std::optional<std::string_view> norm = std::nullopt);
Tensor ifft(const Tensor& self, std::optional<int64_t> n = std::nullopt, int64_t dim = -1,
            std::optional<std::string_view> norm = std::nullopt);
// Real input, the n/2+1 non-negative frequency bins.
Tensor rfft(const Tensor& self, std::optional<int64_t> n = std::nullopt, int64_t dim = -1,
            std::optional<std::string_view> norm = std::nullopt);
// Inverse of rfft: n output samples (default 2*(bins-1)) from the first n/2+1 bins.
Tensor irfft(const Tensor& self, std::optional<int64_t> n = std::nullopt, int64_t dim = -1,
             std::optional<std::string_view> norm = std::nullopt);
// Hermitian-symmetric signal in the time domain (hfft) and its inverse (ihfft).
Tensor hfft(const Tensor& self, std::optional<int64_t> n = std::nullopt, int64_t dim = -1,
            std::optional<std::string_view> norm = std::nullopt);
Tensor ihfft(const Tensor& self, std::optional<int64_t> n = std::nullopt, int64_t dim = -1,
             std::optional<std::string_view> norm = std::nullopt);
// Transforms over several dims. s: the signal size per transformed dim (-1 keeps the input's;
// default: the input's sizes, or for the c2r forms 2 * (bins - 1) in the last dim); dim: the
// dims (default: the last len(s) dims when s is given, else all dims; the 2-D forms take the
// last two).
Tensor fftn(const Tensor& self, OptionalIntArrayRef s = std::nullopt, OptionalIntArrayRef dim = std::nullopt,
            std::optional<std::string_view> norm = std::nullopt);
Tensor ifftn(const Tensor& self, OptionalIntArrayRef s = std::nullopt, OptionalIntArrayRef dim = std::nullopt,
             std::optional<std::string_view> norm = std::nullopt);
Tensor rfftn(const Tensor& self, OptionalIntArrayRef s = std::nullopt, OptionalIntArrayRef dim = std::nullopt,
             std::optional<std::string_view> norm = std::nullopt);
Tensor irfftn(const Tensor& self, OptionalIntArrayRef s = std::nullopt, OptionalIntArrayRef dim = std::nullopt,
              std::optional<std::string_view> norm = std::nullopt);
Tensor hfftn(const Tensor& self, OptionalIntArrayRef s = std::nullopt, OptionalIntArrayRef dim = std::nullopt,
             std::optional<std::string_view> norm = std::nullopt);
Tensor ihfftn(const Tensor& self, OptionalIntArrayRef s = std::nullopt, OptionalIntArrayRef dim = std::nullopt,
              std::optional<std::string_view> norm = std::nullopt);
Tensor fft2(const Tensor& self, OptionalIntArrayRef s = std::nullopt, IntArrayRef dim = {-2, -1},
            std::optional<std::string_view> norm = std::nullopt);
Tensor ifft2(const Tensor& self, OptionalIntArrayRef s = std::nullopt, IntArrayRef dim = {-2, -1},
             std::optional<std::string_view> norm = std::nullopt);
Tensor rfft2(const Tensor& self, OptionalIntArrayRef s = std::nullopt, IntArrayRef dim = {-2, -1},
             std::optional<std::string_view> norm = std::nullopt);
Tensor irfft2(const Tensor& self, OptionalIntArrayRef s = std::nullopt, IntArrayRef dim = {-2, -1},
              std::optional<std::string_view> norm = std::nullopt);
Tensor hfft2(const Tensor& self, OptionalIntArrayRef s = std::nullopt, IntArrayRef dim = {-2, -1},
             std::optional<std::string_view> norm = std::nullopt);
Tensor ihfft2(const Tensor& self, OptionalIntArrayRef s = std::nullopt, IntArrayRef dim = {-2, -1},
              std::optional<std::string_view> norm = std::nullopt);
// Sample frequencies for window length n and sample spacing d.
Tensor fftfreq(int64_t n, double d = 1.0, const TensorOptions& options = {});
Tensor rfftfreq(int64_t n, double d = 1.0, const TensorOptions& options = {});
// Moves the zero-frequency bin to the centre (all dims when dims is empty) and back.
Tensor fftshift(const Tensor& self, IntArrayRef dims = {});
Tensor ifftshift(const Tensor& self, IntArrayRef dims = {});

}  // namespace fft

// The primitives the transforms lower to (PyTorch's _fft_* ops). normalization: 0 none,
// 1 by 1/sqrt(n), 2 by 1/n. dims are transformed in the order given.
Tensor _fft_r2c(const Tensor& self, IntArrayRef dim, int64_t normalization, bool onesided);
Tensor _fft_c2r(const Tensor& self, IntArrayRef dim, int64_t normalization, int64_t last_dim_size);
Tensor _fft_c2c(const Tensor& self, IntArrayRef dim, int64_t normalization, bool forward);

// Signal windows (torch.hann_window & co.): periodic windows are the first window_length points
// of the symmetric window of window_length + 1 points.
Tensor hann_window(int64_t window_length, const TensorOptions& options = {});
Tensor hann_window(int64_t window_length, bool periodic, const TensorOptions& options = {});
Tensor hamming_window(int64_t window_length, const TensorOptions& options = {});
Tensor hamming_window(int64_t window_length, bool periodic, const TensorOptions& options = {});
Tensor hamming_window(int64_t window_length, bool periodic, double alpha, const TensorOptions& options = {});
Tensor hamming_window(int64_t window_length, bool periodic, double alpha, double beta,
                      const TensorOptions& options = {});
Tensor blackman_window(int64_t window_length, const TensorOptions& options = {});
Tensor blackman_window(int64_t window_length, bool periodic, const TensorOptions& options = {});
Tensor bartlett_window(int64_t window_length, const TensorOptions& options = {});
Tensor bartlett_window(int64_t window_length, bool periodic, const TensorOptions& options = {});
Tensor kaiser_window(int64_t window_length, const TensorOptions& options = {});
Tensor kaiser_window(int64_t window_length, bool periodic, double beta = 12.0, const TensorOptions& options = {});

// Short-time Fourier transform of a (time) or (batch, time) signal, as torch.stft: frames of
// n_fft samples every hop_length (default n_fft/4), multiplied by window (win_length samples,
// default rectangular, zero-padded on both sides to n_fft), transformed. center pads the signal
// by n_fft/2 on both sides with pad_mode ("reflect", "constant", "replicate", "circular").
// Returns (batch?, n_fft/2+1 or n_fft, frames) complex; real inputs must pass return_complex
// (false gives the view_as_real layout, (..., 2)).
Tensor stft(const Tensor& self, int64_t n_fft, std::optional<int64_t> hop_length = std::nullopt,
            std::optional<int64_t> win_length = std::nullopt, const std::optional<Tensor>& window = {},
            bool center = true, std::string_view pad_mode = "reflect", bool normalized = false,
            std::optional<bool> onesided = std::nullopt, std::optional<bool> return_complex = std::nullopt);
// libtorch's overload without centering (center=false).
Tensor stft(const Tensor& self, int64_t n_fft, std::optional<int64_t> hop_length, std::optional<int64_t> win_length,
            const std::optional<Tensor>& window, bool normalized, std::optional<bool> onesided = std::nullopt,
            std::optional<bool> return_complex = std::nullopt);
// Inverse by windowed overlap-add, as torch.istft; length trims or zero-pads the result.
Tensor istft(const Tensor& self, int64_t n_fft, std::optional<int64_t> hop_length = std::nullopt,
             std::optional<int64_t> win_length = std::nullopt, const std::optional<Tensor>& window = {},
             bool center = true, bool normalized = false, std::optional<bool> onesided = std::nullopt,
             std::optional<int64_t> length = std::nullopt, bool return_complex = false);

}  // namespace fw
