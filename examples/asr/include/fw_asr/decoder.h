// fw::asr::Decoder: token-passing Viterbi beam search over a DecodingGraph with per-frame phone
// log-likelihoods. Each emitting graph arc is an HMM state of its phone (a one-state phone HMM:
// self-loop probability self_loop_prob, exit 1 - self_loop_prob), epsilon arcs are followed
// between frames. See examples/asr/README.md.
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <fw/tensor.h>

#include "fw_asr/graph.h"

namespace fw::asr {

struct DecodeOptions {
  double beam = 16.0;                   // keep tokens within best + beam (scaled cost units)
  int64_t max_active = 0;               // > 0: at most this many phone tokens per frame
  double acoustic_scale = 0.1;          // cost of a frame = -acoustic_scale * log-likelihood
  double word_insertion_penalty = 0.0;  // added cost per output word (> 0: fewer words)
  double self_loop_prob = 0.75;         // phone HMM self-loop probability, in (0, 1)
  bool allow_partial = true;            // no final state reached: best partial path (else throw)
  bool frame_alignment = false;         // also return the best path's phone per frame
};

struct DecodeResult {
  std::vector<int32_t> word_ids;
  std::vector<std::string> words;
  double cost = 0;           // acoustic_cost + graph_cost
  double acoustic_cost = 0;  // -acoustic_scale * sum of the path's log-likelihoods
  double graph_cost = 0;     // graph arcs and final cost, HMM transitions, insertion penalties
  bool reached_final = false;
  int64_t frames = 0;
  int64_t tokens = 0;        // phone tokens kept over all frames (a measure of search effort)
  std::vector<int32_t> alignment;  // with DecodeOptions::frame_alignment: phone id per frame

  std::string text() const;  // the words joined by spaces
};

// Stateless apart from its options: decode() may run concurrently on several threads. The graph
// must outlive the decoder.
class Decoder {
 public:
  explicit Decoder(const DecodingGraph& graph, const DecodeOptions& options = {});

  // loglikes: (T, num_phones) float32 or float64 CPU tensor of acoustic log-likelihoods
  // (log posterior - log prior); NaN and +inf are errors, -inf is allowed (impossible phone).
  DecodeResult decode(const Tensor& loglikes) const;
  // The same on a row-major (frames, num_phones) float array.
  DecodeResult decode(const float* loglikes, int64_t frames, int64_t num_phones) const;

  const DecodeOptions& options() const { return options_; }
  const DecodingGraph& graph() const { return *graph_; }

 private:
  const DecodingGraph* graph_;
  DecodeOptions options_;
};

// Log prior of each class from alignment counts: log((count + add_count) / total), a
// (num_phones,) float32 tensor. Subtract it from log posteriors to get log-likelihoods.
Tensor log_priors_from_alignments(const std::map<std::string, std::vector<int32_t>>& alignments,
                                  int64_t num_phones, double add_count = 1.0);

}  // namespace fw::asr
