// fw models: the very deep multilingual CNN acoustic models of Sercu et al. (ICASSP 2016).
//   fw::models::ModelConfig, default_stages      configurations (fw/models/config.h)
//   fw::models::AcousticCnn                      shared trunk + per-language heads (fw/models/acoustic_cnn.h)
//   fw::models::extract_windows, ContextSpec      (multi-scale) context windows (fw/models/context.h)
//   fw::models::FrameSampler                     frame sampling with p ∝ f^γ (fw/models/sampler.h)
#pragma once
#include "fw/fw.h"
#include "fw/models/config.h"
#include "fw/models/acoustic_cnn.h"
#include "fw/models/context.h"
#include "fw/models/sampler.h"
