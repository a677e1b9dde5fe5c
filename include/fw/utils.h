// Training utilities: fw::utils::ProgressBar (a small tqdm) and fw::nn::utils (gradient clipping
// and parameter/vector conversion, libtorch's torch::nn::utils).
#pragma once
#include <chrono>
#include <cstdint>
#include <iosfwd>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "fw/tensor.h"

namespace fw::utils {

// A console progress bar. On a terminal it redraws one line with '\r' (throttled); on any other
// stream it stays silent until close(), which prints a single final line.
class ProgressBar {
 public:
  // `total` <= 0 means unknown (no percentage/ETA). `tty` overrides isatty detection, which is
  // only true for std::cout/std::cerr attached to a terminal.
  explicit ProgressBar(int64_t total, std::string desc = "", std::ostream* out = nullptr,
                       std::optional<bool> tty = std::nullopt);
  ~ProgressBar();
  ProgressBar(const ProgressBar&) = delete;
  ProgressBar& operator=(const ProgressBar&) = delete;
  // Advances by n steps.
  void update(int64_t n = 1);
  // Replaces the key=value suffix, e.g. set_postfix({{"loss", 0.123}}).
  void set_postfix(std::vector<std::pair<std::string, double>> postfix);
  // Prints the final line (once); later calls do nothing.
  void close();
  // The current line without '\r'/'\n'.
  std::string render() const;
  int64_t count() const { return count_; }
  int64_t total() const { return total_; }
  bool is_tty() const { return tty_; }
  // Steps per second since construction.
  double rate() const;
  // Seconds left at the current rate (nullopt if unknown).
  std::optional<double> eta() const;

 private:
  double elapsed() const;
  void draw(bool force);
  int64_t total_, count_ = 0;
  std::string desc_;
  std::ostream* out_;
  bool tty_, closed_ = false;
  std::vector<std::pair<std::string, double>> postfix_;
  std::chrono::steady_clock::time_point start_, last_draw_;
};

// "mm:ss" or "h:mm:ss".
std::string format_duration(double seconds);

}  // namespace fw::utils

namespace fw::nn::utils {

// Scales the gradients so their total norm_type-norm (inf allowed) is at most max_norm, as
// torch.nn.utils.clip_grad_norm_; returns the total norm before clipping (0 if no gradients).
// Throws if the norm is NaN/inf and error_if_nonfinite.
double clip_grad_norm_(const std::vector<Tensor>& parameters, double max_norm,
                       double norm_type = 2.0, bool error_if_nonfinite = false);
double clip_grad_norm_(const Tensor& parameter, double max_norm, double norm_type = 2.0,
                       bool error_if_nonfinite = false);
// Clamps every gradient into [-clip_value, clip_value] in place.
void clip_grad_value_(const std::vector<Tensor>& parameters, double clip_value);
void clip_grad_value_(const Tensor& parameter, double clip_value);
// The parameters flattened and concatenated into one 1-D tensor.
Tensor parameters_to_vector(const std::vector<Tensor>& parameters);
// Copies consecutive slices of `vec` into the parameters (in place, without recording grad).
void vector_to_parameters(const Tensor& vec, const std::vector<Tensor>& parameters);

}  // namespace fw::nn::utils
