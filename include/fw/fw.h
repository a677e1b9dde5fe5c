// Umbrella header: everything a libtorch-style program needs (#include <fw/fw.h>).
#pragma once
#include "fw/dtype.h"
#include "fw/error.h"
#include "fw/autograd.h"
#include "fw/indexing.h"
#include "fw/ops.h"
#include "fw/tensor.h"
#include "fw/nn/functional.h"
#include "fw/optim.h"
#include "fw/nn.h"
#include "fw/data.h"
#include "fw/utils.h"
#include "fw/serialize.h"
