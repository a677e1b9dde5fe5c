// FW_OPS: every primitive op, by family. Each family list lives next to its kernels.
#pragma once
#include "core/ops/creation_list.h"
#include "core/ops/unary_list.h"
#include "core/ops/binary_list.h"
#include "core/ops/shape_list.h"
#include "core/ops/movement_list.h"
#include "core/ops/reduce_list.h"
#include "core/ops/index_list.h"
#include "core/ops/linalg_list.h"
#include "core/ops/nn_list.h"
#include "core/ops/fft_list.h"

#define FW_OPS(X)                                                                  \
  FW_OPS_CREATION(X) FW_OPS_UNARY(X) FW_OPS_BINARY(X) FW_OPS_SHAPE(X) FW_OPS_MOVEMENT(X) FW_OPS_REDUCE(X) \
  FW_OPS_INDEX(X) FW_OPS_LINALG(X) FW_OPS_NN(X) FW_OPS_FFT(X)
