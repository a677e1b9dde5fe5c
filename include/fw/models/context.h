// fw::models context windows: the frames around each centre frame that form a CNN input, in one
// or several scales (Sercu et al.'s multi-scale input: ±5 at stride 1, ±10 at stride 2, ±20 at
// stride 4, stacked as channels).
#pragma once
#include <cstdint>
#include <vector>

#include "fw/tensor.h"

namespace fw::models {

// Frames centre - left, centre - left + stride, ..., centre + right.
struct ContextWindow {
  // Symmetric: half_width frames on each side (half_width a multiple of stride).
  ContextWindow(int64_t half_width, int64_t stride = 1) : left(half_width), right(half_width), stride(stride) {}
  ContextWindow(int64_t left, int64_t right, int64_t stride) : left(left), right(right), stride(stride) {}
  int64_t num_frames() const { return (left + right) / stride + 1; }
  int64_t left, right, stride;
};

// One or more windows of equal length; each becomes its own group of input channels.
struct ContextSpec {
  ContextSpec(std::vector<ContextWindow> windows) : windows(std::move(windows)) {}
  ContextSpec(std::initializer_list<ContextWindow> windows) : windows(windows) {}
  // One stride-1 window of `frames` frames: frames / 2 before the centre, the rest after it.
  static ContextSpec centered(int64_t frames);
  // The paper's multi-scale input: ±5 stride 1, ±10 stride 2, ±20 stride 4 (11 frames each).
  static ContextSpec multiscale();
  // Frames per window (checks the spec).
  int64_t num_frames() const;
  int64_t num_windows() const { return int64_t(windows.size()); }
  std::vector<ContextWindow> windows;
};

// (N, num_windows, num_frames) Long: the utterance frame behind each window position for an
// utterance of num_utterance_frames frames, clamped to [0, T - 1] (edge frames repeat).
Tensor window_frame_indices(int64_t num_utterance_frames, const Tensor& centers, const ContextSpec& spec);
// Windows of one utterance's features (T, C, F) or (T, F) (C = 1) around centers (N,) integer:
// (N, num_windows * C, F, num_frames), channel w * C + c holding feature channel c of window w.
// Positions before the first or after the last frame repeat the edge frame. Differentiable.
Tensor extract_windows(const Tensor& features, const Tensor& centers, const ContextSpec& spec);
Tensor extract_windows(const Tensor& features, const std::vector<int64_t>& centers, const ContextSpec& spec);

}  // namespace fw::models
