// All of fw::nn's modules (libtorch's torch/nn/modules.h).
#pragma once
#include "fw/nn/module.h"
#include "fw/nn/modules/activation.h"
#include "fw/nn/modules/container.h"
#include "fw/nn/modules/conv.h"
#include "fw/nn/modules/distance.h"
#include "fw/nn/modules/dropout.h"
#include "fw/nn/modules/embedding.h"
#include "fw/nn/modules/linear.h"
#include "fw/nn/modules/loss.h"
#include "fw/nn/modules/normalization.h"
#include "fw/nn/modules/pooling.h"
#include "fw/nn/modules/rnn.h"
