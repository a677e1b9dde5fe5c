// Kaldi's pitch tracker (Ghahremani et al., ICASSP 2014) and its feature post-processing:
//   namespace F = fw::audio::functional;
//   Tensor raw = F::compute_kaldi_pitch(wave, 16000);        // (..., frames, 2): (NCCF, pitch in Hz)
//   Tensor feats = F::process_kaldi_pitch(raw);              // (..., frames, 3): Kaldi's pitch features
//
// compute_kaldi_pitch is Kaldi's ComputeKaldiPitch (compute-kaldi-pitch-feats) with the argument
// names and defaults of torchaudio.functional.compute_kaldi_pitch: the signal is low-passed and
// resampled to resample_frequency, the normalized cross-correlation (NCCF) of each frame is
// measured at every integer lag between 1/max_f0 and 1/min_f0 (widened by the upsampling filter),
// upsampled to log-spaced lags that differ by delta_pitch, and a Viterbi search over those lags
// (local cost 1 - NCCF (1 - soft_min_f0 lag), transition cost penalty_factor (log-lag change)^2)
// picks the pitch track. Each output frame holds the NCCF without the energy ballast at the chosen
// lag (a voicing measure in [-1, 1]) and the pitch 1/lag. frames_per_chunk > 0 feeds the signal in
// chunks as an online decoder would (the energy estimate behind the ballast term grows chunk by
// chunk; recompute_frame is where Kaldi revises the early frames); simulate_first_pass_online
// additionally returns each frame as soon as the traceback lets it out (at most
// max_frames_latency frames late) instead of the final path.
//
// The arithmetic follows Kaldi's single-precision code, so the track matches Kaldi's frame for
// frame and the NCCF to float rounding. Inputs: float32 or float64 (..., time) on any device
// (computed on the host, in float); the result has the input's dtype and device and does not
// require grad (the track is a discrete search). A signal too short for one frame gives
// (..., 0, 2). Scale does not matter: the NCCF and its ballast both scale with the signal's
// energy. Memory: 8 bytes per frame and candidate lag (about 3.3 kB per 10 ms frame by default),
// as in Kaldi. Errors read "[audio::compute_kaldi_pitch] ..." and name the offending value.
//
// torchaudio: its builds with Kaldi (0.13 - 2.0) run Kaldi's code on a tensor-backed Vector whose
// Swap() exchanges the tensors but not the cached data pointers, so its Viterbi search reads stale
// costs from the second frame on (a 150 Hz sine comes out at 74.9 Hz). fw matches Kaldi, not that.
// Other differences: sample_rate and resample_frequency must be whole numbers (Kaldi's resampler
// silently truncates them); an empty result has shape (..., 0, 2), not (..., 0, 0); with
// snip_edges = false and chunks of about a frame, Kaldi fails an assertion (the part of the
// previous chunk it keeps is too short for the frames that straddle two chunks), while fw reads
// those frames from the signal.
#pragma once
#include <optional>

#include "fw/fw.h"
#include "fw/nn/options.h"

namespace fw::audio::functional {

// torchaudio's compute_kaldi_pitch keyword arguments (Kaldi's PitchExtractionOptions), same
// defaults. Times are in milliseconds, frequencies in Hz.
struct KaldiPitchOptions {
  FW_ARG(double, frame_length) = 25.0;
  FW_ARG(double, frame_shift) = 10.0;
  FW_ARG(double, min_f0) = 50.0;
  FW_ARG(double, max_f0) = 400.0;
  FW_ARG(double, soft_min_f0) = 10.0;
  FW_ARG(double, penalty_factor) = 0.1;
  FW_ARG(double, lowpass_cutoff) = 1000.0;
  FW_ARG(double, resample_frequency) = 4000.0;
  FW_ARG(double, delta_pitch) = 0.005;
  FW_ARG(double, nccf_ballast) = 7000.0;
  FW_ARG(int64_t, lowpass_filter_width) = 1;
  FW_ARG(int64_t, upsample_filter_width) = 5;
  FW_ARG(int64_t, max_frames_latency) = 0;
  FW_ARG(int64_t, frames_per_chunk) = 0;
  FW_ARG(bool, simulate_first_pass_online) = false;
  FW_ARG(int64_t, recompute_frame) = 500;
  FW_ARG(bool, snip_edges) = true;
};

// (..., time) -> (..., frames, 2) holding (NCCF, pitch in Hz) per frame.
Tensor compute_kaldi_pitch(const Tensor& waveform, double sample_rate, const KaldiPitchOptions& options = {});

// Kaldi's ProcessPitchOptions (process-kaldi-pitch-feats), same defaults.
struct ProcessPitchOptions {
  FW_ARG(double, pitch_scale) = 2.0;
  FW_ARG(double, pov_scale) = 2.0;
  FW_ARG(double, pov_offset) = 0.0;
  FW_ARG(double, delta_pitch_scale) = 10.0;
  FW_ARG(double, delta_pitch_noise_stddev) = 0.005;
  FW_ARG(int64_t, normalization_left_context) = 75;
  FW_ARG(int64_t, normalization_right_context) = 75;
  FW_ARG(int64_t, delta_window) = 2;
  FW_ARG(int64_t, delay) = 0;
  FW_ARG(bool, add_pov_feature) = true;
  FW_ARG(bool, add_normalized_log_pitch) = true;
  FW_ARG(bool, add_delta_pitch) = true;
  FW_ARG(bool, add_raw_log_pitch) = false;
};

// Kaldi's offline ProcessPitch on the output of compute_kaldi_pitch, (..., frames, 2) ->
// (..., frames + delay, dim), the chosen columns in this order:
//   pov feature        pov_scale ((1.0001 - nccf)^0.15 - 1) + pov_offset, nccf clamped to [-1, 1];
//   normalized log pitch  pitch_scale (log pitch - its mean over the frames within the left/right
//                      contexts, weighted by the probability of voicing p(nccf));
//   delta pitch        delta_pitch_scale (the delta of log pitch over +-delta_window frames, edge
//                      frames repeated, + N(0, delta_pitch_noise_stddev^2) noise drawn from fw's
//                      default generator, or `generator` when given);
//   raw log pitch      log pitch.
// Frame t of the output describes input frame max(0, t - delay). Computed in double on the host;
// the result has the input's dtype and device. Pitches must be positive.
Tensor process_kaldi_pitch(const Tensor& pitch, const ProcessPitchOptions& options = {},
                           std::optional<Generator> generator = std::nullopt);

}  // namespace fw::audio::functional
