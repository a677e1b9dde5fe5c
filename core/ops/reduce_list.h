// Reductions (reduce.cpp, reduce_stats.cpp) and along-dim ops (sort.cpp): X(name, kind).
// max/min are the (values, indices) forms over one dim; the all-reduce max()/min() call amax/amin.
// Composites without an entry: std, std_mean, argsort, allclose, equal, all-reduce median.
#pragma once
#define FW_OPS_REDUCE(X)                                                                        \
  X(sum, Reduction) X(mean, Reduction) X(prod, Reduction) X(amax, Reduction) X(amin, Reduction) \
  X(max, Reduction) X(min, Reduction) X(argmax, Reduction) X(argmin, Reduction)                 \
  X(all, Reduction) X(any, Reduction) X(count_nonzero, Reduction) X(var, Reduction)             \
  X(var_mean, Reduction) X(logsumexp, Reduction) X(norm, Reduction) X(isclose, Opaque)          \
  X(cumsum, Opaque) X(cumprod, Opaque) X(sort, Opaque) X(topk, Opaque) X(median, Opaque)
