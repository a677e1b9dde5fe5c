// Phone-loop Viterbi decoding, priors, and a Levenshtein aligner for phone error rates.
#include <cmath>
#include <limits>

#include "examples/babel/recipe.h"

namespace fw::recipe {

std::vector<double> log_priors_from_counts(const std::vector<int64_t>& counts) {
  double total = 0;
  for (int64_t c : counts) total += double(c) + 1.0;
  std::vector<double> out(counts.size());
  for (size_t k = 0; k < counts.size(); k++) out[k] = std::log((double(counts[k]) + 1.0) / total);
  return out;
}

// Note [Phone loop]
// The decoding graph is a loop over K classes with one state each: a frame either stays in the
// class of the previous frame (weight 0) or enters any other class (weight -penalty). The best
// predecessor of class k at frame t is therefore max(delta[t-1][k], best_{j != k} delta[t-1][j]
// - penalty), and best_{j != k} is the overall best unless k is the argmax, when it is the
// second best: O(T K) time. With penalty 0 the path is the frame-wise argmax; larger penalties
// trade insertions for deletions, so the penalty is tuned on dev data (eval.cpp).
std::vector<int32_t> viterbi_phone_loop(const float* ll, int64_t T, int64_t K, double penalty, double scale) {
  std::vector<int32_t> path(static_cast<size_t>(T));
  if (T == 0) return path;
  FW_CHECK(K > 0, "viterbi_phone_loop: no classes");
  std::vector<double> prev(static_cast<size_t>(K)), cur(static_cast<size_t>(K));
  std::vector<int32_t> back(static_cast<size_t>(T * K));
  for (int64_t k = 0; k < K; k++) prev[size_t(k)] = scale * double(ll[k]);
  for (int64_t t = 1; t < T; t++) {
    int64_t m1 = 0, m2 = -1;
    for (int64_t k = 1; k < K; k++) {
      if (prev[size_t(k)] > prev[size_t(m1)]) {
        m2 = m1;
        m1 = k;
      } else if (m2 < 0 || prev[size_t(k)] > prev[size_t(m2)]) {
        m2 = k;
      }
    }
    const float* row = ll + t * K;
    int32_t* bp = back.data() + t * K;
    for (int64_t k = 0; k < K; k++) {
      const int64_t j = k == m1 ? m2 : m1;
      const double stay = prev[size_t(k)];
      const double enter = j >= 0 ? prev[size_t(j)] - penalty : -std::numeric_limits<double>::infinity();
      if (stay >= enter) {
        cur[size_t(k)] = stay + scale * double(row[k]);
        bp[k] = int32_t(k);
      } else {
        cur[size_t(k)] = enter + scale * double(row[k]);
        bp[k] = int32_t(j);
      }
    }
    std::swap(prev, cur);
  }
  int64_t best = 0;
  for (int64_t k = 1; k < K; k++)
    if (prev[size_t(k)] > prev[size_t(best)]) best = k;
  for (int64_t t = T - 1; t >= 0; t--) {
    path[size_t(t)] = int32_t(best);
    if (t > 0) best = back[size_t(t * K + best)];
  }
  return path;
}

std::vector<int32_t> collapse(const std::vector<int32_t>& frames, int32_t drop) {
  std::vector<int32_t> out;
  for (size_t i = 0; i < frames.size(); i++) {
    if (i > 0 && frames[i] == frames[i - 1]) continue;
    if (frames[i] == drop) continue;
    out.push_back(frames[i]);
  }
  return out;
}

EditCounts& EditCounts::operator+=(const EditCounts& o) {
  ref += o.ref;
  sub += o.sub;
  del += o.del;
  ins += o.ins;
  cor += o.cor;
  return *this;
}

EditCounts align(const std::vector<int32_t>& ref, const std::vector<int32_t>& hyp) {
  const size_t n = ref.size(), m = hyp.size();
  // d[i][j]: edits between ref[0, i) and hyp[0, j).
  std::vector<int32_t> d((n + 1) * (m + 1));
  auto at = [&](size_t i, size_t j) -> int32_t& { return d[i * (m + 1) + j]; };
  for (size_t i = 0; i <= n; i++) at(i, 0) = int32_t(i);
  for (size_t j = 0; j <= m; j++) at(0, j) = int32_t(j);
  for (size_t i = 1; i <= n; i++)
    for (size_t j = 1; j <= m; j++) {
      int32_t diag = at(i - 1, j - 1) + (ref[i - 1] == hyp[j - 1] ? 0 : 1);
      at(i, j) = std::min({diag, at(i - 1, j) + 1, at(i, j - 1) + 1});
    }
  EditCounts e;
  e.ref = int64_t(n);
  size_t i = n, j = m;
  while (i > 0 || j > 0) {
    if (i > 0 && j > 0 && at(i, j) == at(i - 1, j - 1) + (ref[i - 1] == hyp[j - 1] ? 0 : 1)) {
      (ref[i - 1] == hyp[j - 1] ? e.cor : e.sub)++;
      i--, j--;
    } else if (i > 0 && at(i, j) == at(i - 1, j) + 1) {
      e.del++;
      i--;
    } else {
      e.ins++;
      j--;
    }
  }
  return e;
}

}  // namespace fw::recipe
