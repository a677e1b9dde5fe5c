// Decoding graph construction with OpenFst (fw_asr/graph.h). OpenFst stays in this file.
#include "fw_asr/graph.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <fstream>
#include <set>
#include <sstream>
#include <unordered_map>

#include <fst/fstlib.h>

#include <fw/error.h>

namespace fw::asr {
namespace {

using fst::StdArc;
using fst::StdVectorFst;
using Weight = fst::TropicalWeight;
using Label = StdArc::Label;

// Note [Label conventions]
// OpenFst reserves label 0 for epsilon, so on the phone side label = phone id + 1 and the
// disambiguation symbols #0, #1, ... follow the phones (label num_phones + 1 + k). On the word
// side label = word id (1..W, 0 = <eps>) and G's backoff symbol #0 is W + 1. G's backoff arcs
// read #0 and write <eps> (as Kaldi's arpa2fst does); L passes #0 through with a #0:#0 self-loop
// on its word-boundary state. After determinization the phone-side disambiguation symbols are
// replaced by epsilon.

struct Problem {
  int32_t num_phones = 0;
  int32_t silence = -1;  // phone id, -1 if none
  std::vector<std::string> words;  // id -> word, words[0] = "<eps>"
  std::vector<std::pair<int32_t, std::vector<int32_t>>> prons;  // (word id, phone ids)
  std::vector<std::vector<int32_t>> sentences;                  // word ids
};

float cost_of(double p) { return p > 0 ? float(-std::log(p)) : std::numeric_limits<float>::infinity(); }

void add_arc(StdVectorFst& f, int s, Label il, Label ol, double cost, int d) {
  f.AddArc(s, StdArc(il, ol, Weight(float(cost)), d));
}

// Kaldi's make_lexicon_fst with optional silence and disambiguation symbols (README: "Graph").
StdVectorFst make_lexicon(const Problem& pb, double sil_prob, int64_t* max_disambig) {
  std::map<std::vector<int32_t>, int32_t> count;
  std::set<std::vector<int32_t>> prefixes;
  for (const auto& [w, ph] : pb.prons) {
    ++count[ph];
    for (size_t n = 1; n < ph.size(); ++n) prefixes.emplace(ph.begin(), ph.begin() + n);
  }
  std::map<std::vector<int32_t>, int32_t> next_k;
  *max_disambig = 0;
  const Label disambig0 = pb.num_phones + 1;
  const Label word_disambig0 = Label(pb.words.size());  // W + 1
  StdVectorFst L;
  const int start = L.AddState();
  const int loop = sil_prob > 0 ? L.AddState() : start;
  const int sil_state = sil_prob > 0 ? L.AddState() : -1;
  L.SetStart(start);
  L.SetFinal(loop, Weight::One());
  const double no_sil_cost = sil_prob > 0 ? -std::log(1 - sil_prob) : 0.0;
  const double sil_cost = sil_prob > 0 ? -std::log(sil_prob) : 0.0;
  if (sil_prob > 0) {
    add_arc(L, start, 0, 0, no_sil_cost, loop);
    add_arc(L, start, pb.silence + 1, 0, sil_cost, loop);
    add_arc(L, sil_state, pb.silence + 1, 0, 0.0, loop);
  }
  for (const auto& [w, ph] : pb.prons) {
    std::vector<Label> syms;
    for (int32_t p : ph) syms.push_back(p + 1);
    if (count[ph] > 1 || prefixes.count(ph)) {
      int32_t k = ++next_k[ph];
      *max_disambig = std::max<int64_t>(*max_disambig, k);
      syms.push_back(disambig0 + k);
    }
    int s = loop;
    for (size_t i = 0; i + 1 < syms.size(); ++i) {
      int ns = L.AddState();
      add_arc(L, s, syms[i], i == 0 ? w : 0, 0.0, ns);
      s = ns;
    }
    add_arc(L, s, syms.back(), syms.size() == 1 ? w : 0, no_sil_cost, loop);
    if (sil_prob > 0) add_arc(L, s, syms.back(), syms.size() == 1 ? w : 0, sil_cost, sil_state);
  }
  add_arc(L, loop, disambig0, word_disambig0, 0.0, loop);
  if (sil_prob > 0) fst::RmEpsilon(&L);
  return L;
}

// Unigram probabilities p[w] (w = 1..W) and p[0] = p(</s>), add-k smoothed.
std::vector<double> unigram(const Problem& pb, double add_k, const char* fn) {
  const size_t W = pb.words.size() - 1;
  std::vector<double> c(W + 1, 0.0);
  double total = 0;
  for (const auto& s : pb.sentences) {
    for (int32_t w : s) c[size_t(w)] += 1;
    c[0] += 1;
    total += double(s.size()) + 1;
  }
  double denom = total + add_k * double(W + 1);
  FW_CHECK(denom > 0, "[fw::asr::", fn, "] a unigram or bigram grammar needs training text or add_k > 0 ",
           "(no sentences, add_k = ", add_k, ")");
  for (double& v : c) v = (v + add_k) / denom;
  return c;
}

StdVectorFst make_grammar(const Problem& pb, const LmOptions& o, const char* fn) {
  const int32_t W = int32_t(pb.words.size()) - 1;
  const Label backoff = W + 1;
  StdVectorFst G;
  if (o.type == LmOptions::Type::kWordLoop) {
    int s = G.AddState();
    G.SetStart(s);
    const double c = std::log(double(W) + 1);
    for (int32_t w = 1; w <= W; ++w) add_arc(G, s, w, w, c, s);
    G.SetFinal(s, Weight(float(c)));
    return G;
  }
  std::vector<double> uni = unigram(pb, o.add_k, fn);
  if (o.type == LmOptions::Type::kUnigram) {
    int s = G.AddState();
    G.SetStart(s);
    for (int32_t w = 1; w <= W; ++w)
      if (uni[size_t(w)] > 0) add_arc(G, s, w, w, cost_of(uni[size_t(w)]), s);
    G.SetFinal(s, Weight(cost_of(uni[0])));
    return G;
  }
  // Backoff bigram. History 0 is <s>; next word 0 is </s>.
  std::vector<std::map<int32_t, int64_t>> next(size_t(W) + 1);
  for (const auto& s : pb.sentences) {
    int32_t h = 0;
    for (int32_t w : s) ++next[size_t(h)][w], h = w;
    ++next[size_t(h)][0];
  }
  const int U = G.AddState();
  std::vector<int> state(size_t(W) + 1, U);
  for (int32_t h = 0; h <= W; ++h)
    if (!next[size_t(h)].empty()) state[size_t(h)] = G.AddState();
  G.SetStart(state[0]);
  const double D = o.discount;
  for (int32_t h = 0; h <= W; ++h) {
    const auto& nx = next[size_t(h)];
    if (nx.empty()) continue;
    int64_t ch = 0;
    double seen_uni = 0;
    for (const auto& [w, c] : nx) ch += c, seen_uni += uni[size_t(w)];
    for (const auto& [w, c] : nx) {
      double p = (double(c) - D) / double(ch);
      if (w == 0)
        G.SetFinal(state[size_t(h)], Weight(cost_of(p)));
      else
        add_arc(G, state[size_t(h)], w, w, cost_of(p), state[size_t(w)]);
    }
    double left = D * double(nx.size()) / double(ch);
    double rest = 1.0 - seen_uni;
    if (rest > 1e-12) add_arc(G, state[size_t(h)], backoff, 0, cost_of(left / rest), U);
  }
  for (int32_t w = 1; w <= W; ++w)
    if (uni[size_t(w)] > 0) add_arc(G, U, w, w, cost_of(uni[size_t(w)]), state[size_t(w)]);
  G.SetFinal(U, Weight(cost_of(uni[0])));
  return G;
}

int64_t count_arcs(const StdVectorFst& f) {
  int64_t n = 0;
  for (int s = 0; s < f.NumStates(); ++s) n += int64_t(f.NumArcs(s));
  return n;
}

void check_fst(const StdVectorFst& f, const char* fn, const char* step) {
  FW_CHECK(!f.Properties(fst::kError, false), "[fw::asr::", fn, "] OpenFst failed in ", step,
           " (see the OpenFst message on stderr)");
}

DecodingGraph build(const Problem& pb, const GraphOptions& o, const char* fn) {
  auto t0 = std::chrono::steady_clock::now();
  GraphInfo info;
  info.pronunciations = int64_t(pb.prons.size());
  info.words = int64_t(pb.words.size()) - 1;
  StdVectorFst L = make_lexicon(pb, o.silence_prob, &info.disambig_symbols);
  StdVectorFst G = make_grammar(pb, o.lm, fn);
  info.l_states = L.NumStates(), info.l_arcs = count_arcs(L);
  info.g_states = G.NumStates(), info.g_arcs = count_arcs(G);
  fst::ArcSort(&L, fst::OLabelCompare<StdArc>());
  fst::ArcSort(&G, fst::ILabelCompare<StdArc>());
  StdVectorFst LG;
  fst::Compose(L, G, &LG);
  check_fst(LG, fn, "Compose(L, G)");
  FW_CHECK(LG.Start() != fst::kNoStateId, "[fw::asr::", fn, "] L ∘ G is empty: no word sequence of the grammar ",
           "can be spelled with the lexicon");
  info.lg_states = LG.NumStates(), info.lg_arcs = count_arcs(LG);
  StdVectorFst det;
  fst::Determinize(LG, &det);
  check_fst(det, fn, "Determinize(L ∘ G)");
  info.det_states = det.NumStates(), info.det_arcs = count_arcs(det);
  fst::EncodeMapper<StdArc> encoder(fst::kEncodeLabels | fst::kEncodeWeights, fst::ENCODE);
  fst::Encode(&det, &encoder);
  fst::Minimize(&det);
  fst::Decode(&det, encoder);
  check_fst(det, fn, "Minimize(det(L ∘ G))");
  info.min_states = det.NumStates(), info.min_arcs = count_arcs(det);
  if (o.push_weights) {
    fst::Push(&det, fst::REWEIGHT_TO_INITIAL);
    check_fst(det, fn, "Push(min(det(L ∘ G)))");
  }

  const int32_t P = pb.num_phones, W = int32_t(pb.words.size()) - 1;
  std::vector<float> finals(size_t(det.NumStates()));
  std::vector<std::pair<int32_t, DecodingGraph::Arc>> arcs;
  arcs.reserve(size_t(info.min_arcs));
  for (int s = 0; s < det.NumStates(); ++s) {
    Weight f = det.Final(s);
    finals[size_t(s)] = f == Weight::Zero() ? std::numeric_limits<float>::infinity() : f.Value();
    for (fst::ArcIterator<StdVectorFst> it(det, s); !it.Done(); it.Next()) {
      const StdArc& a = it.Value();
      FW_ASSERT(a.olabel >= 0 && a.olabel <= W);
      int32_t phone = a.ilabel >= 1 && a.ilabel <= P ? int32_t(a.ilabel) - 1 : -1;
      arcs.push_back({s, {int32_t(a.nextstate), phone, int32_t(a.olabel), a.weight.Value()}});
    }
  }
  info.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return DecodingGraph(P, pb.words, int32_t(det.Start()), std::move(finals), arcs, info);
}

void check_options(const PhoneTable& phones, const GraphOptions& o, Problem& pb, const char* fn) {
  FW_CHECK(phones.size() > 0, "[fw::asr::", fn, "] the phone table is empty");
  FW_CHECK(o.silence_prob >= 0 && o.silence_prob < 1, "[fw::asr::", fn, "] silence_prob must be in [0, 1), got ",
           o.silence_prob);
  FW_CHECK(o.lm.add_k >= 0 && std::isfinite(o.lm.add_k), "[fw::asr::", fn, "] lm.add_k must be >= 0, got ",
           o.lm.add_k);
  FW_CHECK(o.lm.discount > 0 && o.lm.discount < 1, "[fw::asr::", fn, "] lm.discount must be in (0, 1), got ",
           o.lm.discount);
  pb.num_phones = phones.size();
  std::optional<int32_t> sil = phones.find(o.silence_phone);
  FW_CHECK(sil.has_value() || o.silence_prob == 0, "[fw::asr::", fn, "] silence phone '", o.silence_phone,
           "' is not in the phone table (set GraphOptions::silence_phone, or silence_prob = 0)");
  pb.silence = sil ? *sil : -1;
}

}  // namespace

DecodingGraph build_word_graph(const PhoneTable& phones, const std::vector<Pronunciation>& lexicon,
                               const std::map<std::string, std::string>& train_text, const GraphOptions& options) {
  const char* fn = "build_word_graph";
  Problem pb;
  check_options(phones, options, pb, fn);
  FW_CHECK(!lexicon.empty(), "[fw::asr::build_word_graph] the lexicon is empty");
  std::vector<std::string> vocab = lexicon_words(lexicon);
  std::unordered_map<std::string, int32_t> ids;
  for (size_t i = 0; i < vocab.size(); ++i) ids.emplace(vocab[i], int32_t(i) + 1);
  pb.words.push_back("<eps>");
  pb.words.insert(pb.words.end(), vocab.begin(), vocab.end());
  std::set<std::pair<std::string, std::vector<int32_t>>> seen;
  for (const Pronunciation& p : lexicon) {
    FW_CHECK(!p.word.empty() && split_words(p.word).size() == 1 && p.word.find_first_of(" \t\r\n") == std::string::npos,
             "[fw::asr::build_word_graph] lexicon word '", p.word, "' is empty or has whitespace");
    FW_CHECK(p.word != "<eps>" && p.word != "#0" && p.word != "<s>" && p.word != "</s>",
             "[fw::asr::build_word_graph] lexicon word '", p.word, "' is a reserved symbol");
    FW_CHECK(!p.phones.empty(), "[fw::asr::build_word_graph] lexicon word '", p.word, "' has no phones");
    for (int32_t ph : p.phones)
      FW_CHECK(ph >= 0 && ph < phones.size(), "[fw::asr::build_word_graph] lexicon word '", p.word, "' has phone id ",
               ph, ", outside the phone table [0, ", phones.size(), ")");
    if (seen.emplace(p.word, p.phones).second) pb.prons.emplace_back(ids.at(p.word), p.phones);
  }
  std::vector<std::string> missing;
  std::string first_utt;
  for (const auto& [utt, text] : train_text) {
    std::vector<int32_t> s;
    for (const std::string& w : split_words(text)) {
      auto it = ids.find(w);
      if (it != ids.end()) {
        s.push_back(it->second);
      } else if (std::find(missing.begin(), missing.end(), w) == missing.end()) {
        if (missing.empty()) first_utt = utt;
        missing.push_back(w);
      }
    }
    pb.sentences.push_back(std::move(s));
  }
  if (!missing.empty()) {
    std::string list;
    for (size_t i = 0; i < std::min<size_t>(missing.size(), 10); ++i) list += (i ? ", '" : "'") + missing[i] + "'";
    if (missing.size() > 10) list += ", ...";
    fw::detail::throw_error("[fw::asr::build_word_graph] word '", missing[0], "' of training utterance '", first_utt,
                            "' is not in the lexicon (", missing.size(), " distinct missing word",
                            missing.size() == 1 ? "" : "s", ": ", list, ")");
  }
  return build(pb, options, fn);
}

DecodingGraph build_phone_graph(const PhoneTable& phones,
                                const std::map<std::string, std::vector<int32_t>>& train_alignments,
                                const GraphOptions& options) {
  const char* fn = "build_phone_graph";
  Problem pb;
  check_options(phones, options, pb, fn);
  std::vector<int32_t> word_of(size_t(phones.size()), 0);
  pb.words.push_back("<eps>");
  for (int32_t p = 0; p < phones.size(); ++p) {
    if (p == pb.silence) continue;
    pb.words.push_back(phones.name(p));
    word_of[size_t(p)] = int32_t(pb.words.size()) - 1;
    pb.prons.emplace_back(word_of[size_t(p)], std::vector<int32_t>{p});
  }
  FW_CHECK(!pb.prons.empty(), "[fw::asr::build_phone_graph] the phone table has no phone besides silence");
  for (const auto& [utt, ali] : train_alignments) {
    std::vector<int32_t> s;
    for (int32_t p : collapse_alignment(ali, pb.silence)) {
      FW_CHECK(p >= 0 && p < phones.size(), "[fw::asr::build_phone_graph] alignment of utterance '", utt,
               "' has phone id ", p, ", outside the phone table [0, ", phones.size(), ")");
      s.push_back(word_of[size_t(p)]);
    }
    pb.sentences.push_back(std::move(s));
  }
  return build(pb, options, fn);
}

// ---- DecodingGraph ----

DecodingGraph::DecodingGraph(int32_t num_phones, std::vector<std::string> words, int32_t start,
                             std::vector<float> final_costs, const std::vector<std::pair<int32_t, Arc>>& arcs,
                             GraphInfo info)
    : num_phones_(num_phones), start_(start), words_(std::move(words)), final_cost_(std::move(final_costs)),
      info_(info) {
  const int32_t S = int32_t(final_cost_.size());
  FW_CHECK(num_phones_ > 0, "[fw::asr::DecodingGraph] num_phones must be > 0, got ", num_phones_);
  FW_CHECK(!words_.empty(), "[fw::asr::DecodingGraph] the word table needs at least <eps> (id 0)");
  FW_CHECK(S > 0 && start_ >= 0 && start_ < S, "[fw::asr::DecodingGraph] start state ", start_, " out of range [0, ",
           S, ")");
  const int32_t W = int32_t(words_.size());
  std::vector<int64_t> n_emit(size_t(S) + 1, 0), n_eps(size_t(S) + 1, 0);
  for (size_t k = 0; k < arcs.size(); ++k) {
    const auto& [src, a] = arcs[k];
    FW_CHECK(src >= 0 && src < S && a.dest >= 0 && a.dest < S, "[fw::asr::DecodingGraph] arc ", k, " (", src, " -> ",
             a.dest, ") has a state out of range [0, ", S, ")");
    FW_CHECK(a.phone >= -1 && a.phone < num_phones_, "[fw::asr::DecodingGraph] arc ", k, " has phone ", a.phone,
             ", outside [-1, ", num_phones_, ")");
    FW_CHECK(a.word >= 0 && a.word < W, "[fw::asr::DecodingGraph] arc ", k, " has word ", a.word, ", outside [0, ", W,
             ")");
    FW_CHECK(!std::isnan(a.cost) && a.cost != -std::numeric_limits<float>::infinity(), "[fw::asr::DecodingGraph] arc ",
             k, " has cost ", a.cost);
    ++(a.phone >= 0 ? n_emit : n_eps)[size_t(src) + 1];
  }
  for (int32_t s = 0; s < S; ++s) n_emit[size_t(s) + 1] += n_emit[size_t(s)], n_eps[size_t(s) + 1] += n_eps[size_t(s)];
  emit_offsets_ = n_emit;
  eps_offsets_ = n_eps;
  emit_arcs_.resize(size_t(n_emit.back()));
  eps_arcs_.resize(size_t(n_eps.back()));
  for (const auto& [src, a] : arcs) {
    if (a.phone >= 0)
      emit_arcs_[size_t(n_emit[size_t(src)]++)] = a;
    else
      eps_arcs_[size_t(n_eps[size_t(src)]++)] = a;
  }
  // Kahn's algorithm on the epsilon subgraph: every state must be removable (no epsilon cycle).
  std::vector<int32_t> indeg(size_t(S), 0), queue;
  for (const Arc& a : eps_arcs_) ++indeg[size_t(a.dest)];
  for (int32_t s = 0; s < S; ++s)
    if (indeg[size_t(s)] == 0) queue.push_back(s);
  for (size_t q = 0; q < queue.size(); ++q) {
    int32_t s = queue[q];
    for (int64_t k = eps_offsets_[size_t(s)]; k < eps_offsets_[size_t(s) + 1]; ++k)
      if (--indeg[size_t(eps_arcs_[size_t(k)].dest)] == 0) queue.push_back(eps_arcs_[size_t(k)].dest);
  }
  FW_CHECK(int32_t(queue.size()) == S, "[fw::asr::DecodingGraph] the graph has a cycle of epsilon arcs (",
           S - int32_t(queue.size()), " states on or after it); the decoder needs an epsilon-acyclic graph");
}

const std::string& DecodingGraph::word(int32_t id) const {
  FW_CHECK(id >= 0 && id < int32_t(words_.size()), "[fw::asr::DecodingGraph::word] id ", id, " out of range [0, ",
           words_.size(), ")");
  return words_[size_t(id)];
}

std::string DecodingGraph::summary() const {
  std::ostringstream os;
  os << "DecodingGraph: " << num_states() << " states, " << num_arcs() << " arcs (" << eps_arcs_.size()
     << " epsilon), " << num_words() << " words, " << num_phones_ << " phones";
  if (info_.min_states > 0) {
    os << "; L " << info_.l_states << "/" << info_.l_arcs << " (" << info_.pronunciations << " prons, "
       << info_.disambig_symbols << " disambig), G " << info_.g_states << "/" << info_.g_arcs << ", L∘G "
       << info_.lg_states << "/" << info_.lg_arcs << ", det " << info_.det_states << "/" << info_.det_arcs
       << ", min " << info_.min_states << "/" << info_.min_arcs << " (states/arcs), built in " << info_.seconds
       << " s";
  }
  return os.str();
}

void DecodingGraph::write_fst(const std::string& path, const PhoneTable& phones) const {
  FW_CHECK(phones.size() == num_phones_, "[fw::asr::DecodingGraph::write_fst] phone table has ", phones.size(),
           " phones, the graph ", num_phones_);
  StdVectorFst f;
  for (int32_t s = 0; s < num_states(); ++s) f.AddState();
  f.SetStart(start_);
  for (int32_t s = 0; s < num_states(); ++s) {
    if (std::isfinite(final_cost_[size_t(s)])) f.SetFinal(s, Weight(final_cost_[size_t(s)]));
    for (int64_t k = emit_offsets_[size_t(s)]; k < emit_offsets_[size_t(s) + 1]; ++k) {
      const Arc& a = emit_arcs_[size_t(k)];
      add_arc(f, s, a.phone + 1, a.word, a.cost, a.dest);
    }
    for (int64_t k = eps_offsets_[size_t(s)]; k < eps_offsets_[size_t(s) + 1]; ++k) {
      const Arc& a = eps_arcs_[size_t(k)];
      add_arc(f, s, 0, a.word, a.cost, a.dest);
    }
  }
  FW_CHECK(f.Write(path), "[fw::asr::DecodingGraph::write_fst] cannot write '", path, "'");
  std::ofstream w(path + ".words.txt", std::ios::binary), p(path + ".phones.txt", std::ios::binary);
  for (size_t i = 0; i < words_.size(); ++i) w << words_[i] << ' ' << i << '\n';
  p << "<eps> 0\n";
  for (int32_t i = 0; i < num_phones_; ++i) p << phones.name(i) << ' ' << i + 1 << '\n';
  FW_CHECK(w.good() && p.good(), "[fw::asr::DecodingGraph::write_fst] cannot write the symbol tables next to '",
           path, "'");
}

}  // namespace fw::asr
