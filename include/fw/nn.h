// fw::nn: modules, containers, initialisers and the functional API (libtorch's torch/nn.h).
#pragma once
#include "fw/nn/functional.h"
#include "fw/nn/init.h"
#include "fw/nn/module.h"
#include "fw/nn/modules.h"
#include "fw/nn/options.h"
#include "fw/nn/ordered_dict.h"
