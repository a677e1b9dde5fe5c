// Context windows: index construction by a loop over the centres, then one index_select.
#include "fw/models/context.h"

#include "fw/ops.h"

namespace fw::models {

ContextSpec ContextSpec::centered(int64_t frames) {
  FW_CHECK(frames > 0, "[models::ContextSpec::centered] frames must be positive, got ", frames);
  return ContextSpec{ContextWindow(frames / 2, frames - 1 - frames / 2, 1)};
}

ContextSpec ContextSpec::multiscale() { return ContextSpec{ContextWindow(5, 1), ContextWindow(10, 2), ContextWindow(20, 4)}; }

int64_t ContextSpec::num_frames() const {
  const char* fn = "[models::ContextSpec] ";
  FW_CHECK(!windows.empty(), fn, "no windows");
  for (size_t i = 0; i < windows.size(); i++) {
    const auto& w = windows[i];
    FW_CHECK(w.stride > 0 && w.left >= 0 && w.right >= 0 && w.left % w.stride == 0 && w.right % w.stride == 0, fn,
             "window ", i, " (left ", w.left, ", right ", w.right, ", stride ", w.stride,
             "): left and right must be non-negative multiples of a positive stride");
    FW_CHECK(w.num_frames() == windows[0].num_frames(), fn, "window ", i, " has ", w.num_frames(),
             " frames but window 0 has ", windows[0].num_frames(), "; windows stack as channels so must match");
  }
  return windows[0].num_frames();
}

Tensor window_frame_indices(int64_t num_utterance_frames, const Tensor& centers, const ContextSpec& spec) {
  const char* fn = "[models::window_frame_indices]";
  const int64_t t = num_utterance_frames, w = spec.num_frames(), s = spec.num_windows();
  FW_CHECK(t > 0, fn, " the utterance has no frames");
  FW_CHECK(centers.defined() && centers.dim() == 1 && !centers.is_floating_point() && !centers.is_complex(), fn,
           " expected centers as a 1-D integer tensor, got ", centers.defined() ? centers.sizes() : IntArrayRef{});
  Tensor c = centers.to(kLong).contiguous();
  const int64_t n = c.size(0);
  const int64_t* cp = c.data_ptr<int64_t>();
  Tensor out = fw::empty({n, s, w}, kLong);
  int64_t* o = out.data_ptr<int64_t>();
  for (int64_t i = 0; i < n; i++) {
    FW_CHECK(cp[i] >= 0 && cp[i] < t, fn, " centers[", i, "] = ", cp[i], " is outside the utterance's ", t, " frames");
    for (const auto& win : spec.windows)
      for (int64_t k = 0; k < w; k++) *o++ = std::clamp(cp[i] - win.left + k * win.stride, int64_t(0), t - 1);
  }
  return out;
}

Tensor extract_windows(const Tensor& features, const Tensor& centers, const ContextSpec& spec) {
  const char* fn = "[models::extract_windows]";
  FW_CHECK(features.defined() && (features.dim() == 2 || features.dim() == 3), fn,
           " expected features (T, C, F) or (T, F), got ", features.defined() ? features.sizes() : IntArrayRef{});
  Tensor f = features.dim() == 2 ? features.unsqueeze(1) : features;
  const int64_t t = f.size(0), ch = f.size(1), freq = f.size(2);
  Tensor idx = window_frame_indices(t, centers, spec);
  const int64_t n = idx.size(0), s = idx.size(1), w = idx.size(2);
  // (N*S*W, C, F) -> (N, S, W, C, F) -> (N, S, C, F, W) -> (N, S*C, F, W)
  return f.index_select(0, idx.view({n * s * w})).view({n, s, w, ch, freq}).permute({0, 1, 3, 4, 2}).reshape(
      {n, s * ch, freq, w});
}

Tensor extract_windows(const Tensor& features, const std::vector<int64_t>& centers, const ContextSpec& spec) {
  return extract_windows(features, fw::tensor(centers), spec);
}

}  // namespace fw::models
