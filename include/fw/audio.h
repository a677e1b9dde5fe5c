// fw audio: TorchAudio's building blocks and Kaldi-compatible features, built from fw ops.
//   fw::audio::load/save/info            audio files through libsndfile (fw/audio/io.h)
//   fw::audio::functional                torchaudio.functional (fw/audio/functional.h)
//   fw::audio::transforms                torchaudio.transforms as nn Modules (fw/audio/transforms.h)
//   fw::audio::kaldi                     torchaudio.compliance.kaldi, batched (fw/audio/kaldi.h)
//   fw::audio::models                    torchaudio.models (fw/audio/models.h, fw/audio/emformer.h,
//                                        fw/audio/hdemucs.h, fw/audio/hubert.h, fw/audio/tacotron2.h)
//   fw::audio::functional::compute_kaldi_pitch / process_kaldi_pitch   Kaldi pitch (fw/audio/pitch.h)
// FFTs (fw::fft::*, fw::stft/istft) are core ops declared in fw/fft.h.
#pragma once
#include "fw/fw.h"
#include "fw/audio/io.h"
#include "fw/audio/functional.h"
#include "fw/audio/effects.h"
#include "fw/audio/beamforming.h"
#include "fw/audio/rnnt.h"
#include "fw/audio/pitch.h"
#include "fw/audio/models.h"
#include "fw/audio/emformer.h"
#include "fw/audio/hdemucs.h"
#include "fw/audio/hubert.h"
#include "fw/audio/tacotron2.h"
#include "fw/audio/transforms.h"
#include "fw/audio/kaldi.h"
#include "fw/audio/kaldi_io.h"
