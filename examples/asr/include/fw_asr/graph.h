// fw::asr decoding graphs: det(L ∘ G), minimized, built with OpenFst and stored in a compact
// OpenFst-free form that fw::asr::Decoder searches. The phone HMM (H: one state per phone with a
// self-loop) is applied by the decoder, not compiled into the graph. See examples/asr/README.md
// for the construction (Kaldi's recipe: optional silence, disambiguation symbols, backoff LM).
#pragma once
#include <cstdint>
#include <limits>
#include <map>
#include <string>
#include <vector>

#include "fw_asr/lexicon.h"

namespace fw::asr {

// The word grammar G.
struct LmOptions {
  enum class Type {
    kWordLoop,  // every word equally likely after every word (uniform over words + end)
    kUnigram,   // add-k smoothed unigram of the training text
    kBigram,    // absolute-discounting backoff bigram over the add-k unigram
  };
  Type type = Type::kBigram;
  double add_k = 0.5;     // unigram pseudo-count of each vocabulary word and of </s>; >= 0
  double discount = 0.5;  // bigram absolute discount D, in (0, 1)
};

struct GraphOptions {
  // Probability of a silence phone before the first word, between words and after the last one.
  // 0 disables optional silence (the silence phone may then only appear inside pronunciations).
  double silence_prob = 0.5;
  std::string silence_phone = "sil";
  LmOptions lm;
  // Push weights towards the start state (tropical semiring): every arc then carries the cost
  // difference to the best completion, so grammar costs are paid as early as the phones allow
  // and the beam prunes earlier. Path costs are unchanged (up to float rounding).
  bool push_weights = true;
};

// Sizes of the intermediate machines, for logs (states / arcs).
struct GraphInfo {
  int64_t pronunciations = 0, words = 0, disambig_symbols = 0;  // disambig_symbols: #1.. in L (not #0)
  int64_t l_states = 0, l_arcs = 0, g_states = 0, g_arcs = 0;
  int64_t lg_states = 0, lg_arcs = 0;    // L ∘ G, connected
  int64_t det_states = 0, det_arcs = 0;  // determinized
  int64_t min_states = 0, min_arcs = 0;  // minimized (the final graph)
  double seconds = 0;
};

// A weighted graph whose arcs consume one phone (an acoustic class id) or nothing (epsilon) and
// output a word id or nothing (0). Costs are -log probabilities (tropical semiring).
class DecodingGraph {
 public:
  struct Arc {
    int32_t dest;
    int32_t phone;  // 0..num_phones-1; -1 on epsilon arcs
    int32_t word;   // 1..num_words; 0 = no output
    float cost;
  };

  DecodingGraph() = default;
  // Builds the compact form from (source state, arc) pairs; throws on out-of-range states,
  // phones or words, or on a cycle of epsilon arcs (the decoder needs none).
  DecodingGraph(int32_t num_phones, std::vector<std::string> words, int32_t start, std::vector<float> final_costs,
                const std::vector<std::pair<int32_t, Arc>>& arcs, GraphInfo info = {});

  int32_t num_states() const { return int32_t(final_cost_.size()); }
  int32_t num_phones() const { return num_phones_; }
  int32_t num_words() const { return int32_t(words_.size()) - 1; }
  int64_t num_arcs() const { return int64_t(emit_arcs_.size() + eps_arcs_.size()); }
  int64_t num_emitting_arcs() const { return int64_t(emit_arcs_.size()); }
  int32_t start() const { return start_; }
  // +inf for a state that is not final.
  float final_cost(int32_t s) const { return final_cost_[s]; }
  // Word id -> word; id 0 is "<eps>".
  const std::string& word(int32_t id) const;
  const std::vector<std::string>& words() const { return words_; }
  const GraphInfo& info() const { return info_; }

  // Arcs of state s that consume a phone: [emit_begin(s), emit_begin(s + 1)) of emitting_arcs().
  int64_t emit_begin(int32_t s) const { return emit_offsets_[s]; }
  const std::vector<Arc>& emitting_arcs() const { return emit_arcs_; }
  // Arcs of state s that consume nothing: [eps_begin(s), eps_begin(s + 1)) of epsilon_arcs().
  int64_t eps_begin(int32_t s) const { return eps_offsets_[s]; }
  const std::vector<Arc>& epsilon_arcs() const { return eps_arcs_; }

  // One line: states, arcs, words, phones and the GraphInfo sizes.
  std::string summary() const;
  // Writes the graph as an OpenFst StdVectorFst (input label = phone id + 1, 0 = epsilon; output
  // label = word id), for fstinfo / fstprint, and the matching symbol tables next to it
  // (<path>.words.txt, <path>.phones.txt with "<eps> 0").
  void write_fst(const std::string& path, const PhoneTable& phones) const;

 private:
  int32_t num_phones_ = 0;
  int32_t start_ = 0;
  std::vector<std::string> words_{"<eps>"};
  std::vector<float> final_cost_;
  std::vector<int64_t> emit_offsets_{0}, eps_offsets_{0};
  std::vector<Arc> emit_arcs_, eps_arcs_;
  GraphInfo info_;
};

// Word graph: lexicon L (optional silence, disambiguation symbols for homophones and for
// pronunciations that are prefixes of others) composed with a grammar G estimated from
// `train_text` (utt -> "word word ..."; may be empty for LmOptions::kWordLoop), determinized and
// minimized. The vocabulary is every lexicon word; a training word missing from the lexicon is an
// error naming the word and its utterance.
DecodingGraph build_word_graph(const PhoneTable& phones, const std::vector<Pronunciation>& lexicon,
                               const std::map<std::string, std::string>& train_text, const GraphOptions& options = {});

// Phone graph for phone error rates: the "words" are the phones other than the silence phone
// (word id = position among them + 1, so word(i) is the phone's name), optional silence between
// them, and G estimated from the training alignments collapsed with collapse_alignment (silence
// dropped). With LmOptions::kWordLoop `train_alignments` may be empty (a plain phone loop).
DecodingGraph build_phone_graph(const PhoneTable& phones,
                                const std::map<std::string, std::vector<int32_t>>& train_alignments,
                                const GraphOptions& options = {});

}  // namespace fw::asr
