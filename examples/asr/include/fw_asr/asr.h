// fw_asr: speech decoding and scoring for the fw speech recipes (examples/asr/README.md).
//   fw::asr::PhoneTable, read_lexicon, read_text     inputs (fw_asr/lexicon.h)
//   fw::asr::build_word_graph, build_phone_graph     det(L ∘ G) with OpenFst (fw_asr/graph.h)
//   fw::asr::Decoder                                 Viterbi beam search (fw_asr/decoder.h)
//   fw::asr::align, score, format_wer                WER / PER scoring (fw_asr/score.h)
#pragma once
#include "fw_asr/decoder.h"
#include "fw_asr/graph.h"
#include "fw_asr/lexicon.h"
#include "fw_asr/score.h"
