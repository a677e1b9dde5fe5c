#pragma once
// Index ops: gather/scatter family, masked_select/nonzero (data-dependent output shapes) and the
// advanced-indexing primitives index/index_put that Tensor::index and index_put_ lower to.
// check_targets validates class-index targets (nll_loss, cross_entropy) inside its kernel, so
// the check needs no item() and compiled losses do not break the graph.
#define FW_OPS_INDEX(X)                                                                      \
  X(index_select, Opaque) X(gather, Opaque) X(scatter, Opaque) X(scatter_add, Opaque)        \
  X(index_add, Opaque) X(masked_select, Opaque) X(nonzero, Opaque) X(take, Opaque)           \
  X(index, Opaque) X(index_put, Opaque) X(check_targets, Opaque)
