// Distance modules (libtorch's torch/nn/modules/distance.h): CosineSimilarity and PairwiseDistance
// over fw::nn::functional's cosine_similarity / pairwise_distance.
#pragma once
#include "fw/nn/functional.h"
#include "fw/nn/module.h"
#include "fw/nn/options.h"

namespace fw::nn {

// Options of CosineSimilarity: dim (1), eps (1e-8).
using CosineSimilarityOptions = functional::CosineSimilarityFuncOptions;
// Options of PairwiseDistance: p (2), eps (1e-6), keepdim (false).
using PairwiseDistanceOptions = functional::PairwiseDistanceFuncOptions;

// Cosine similarity of x1 and x2 along options.dim(); "fw::nn::CosineSimilarity(dim=1, eps=1e-08)".
class CosineSimilarityImpl : public Cloneable<CosineSimilarityImpl> {
 public:
  explicit CosineSimilarityImpl(const CosineSimilarityOptions& options_ = {});
  void reset() override;
  void pretty_print(std::ostream& stream) const override;
  Tensor forward(const Tensor& input1, const Tensor& input2);

  CosineSimilarityOptions options;
};
FW_MODULE(CosineSimilarity);

// p-norm of x1 - x2 + eps along the last dim; "fw::nn::PairwiseDistance(p=2, eps=1e-06, keepdim=false)".
class PairwiseDistanceImpl : public Cloneable<PairwiseDistanceImpl> {
 public:
  explicit PairwiseDistanceImpl(const PairwiseDistanceOptions& options_ = {});
  void reset() override;
  void pretty_print(std::ostream& stream) const override;
  Tensor forward(const Tensor& input1, const Tensor& input2);

  PairwiseDistanceOptions options;
};
FW_MODULE(PairwiseDistance);

}  // namespace fw::nn
