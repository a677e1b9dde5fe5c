// fw::data: datasets, samplers, transforms and the DataLoader (libtorch's torch/data.h).
#pragma once
#include "fw/data/dataloader.h"
#include "fw/data/datasets.h"
#include "fw/data/example.h"
#include "fw/data/samplers.h"
#include "fw/data/transforms.h"
