// Token-passing Viterbi beam search over a DecodingGraph (fw_asr/decoder.h).
#include "fw_asr/decoder.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include <fw/ops.h>

namespace fw::asr {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

// Note [Search space]
// A token lives either on an emitting arc of the graph (the arc's phone emits the current
// frame: the one-state phone HMM) or on a state (between frames). Per frame t:
//   1. phone tokens of frame t-1 take their self-loop (cost -log self_loop_prob);
//   2. state tokens enter the emitting arcs of their state (arc cost, + word insertion penalty
//      when the arc outputs a word); both add the frame's acoustic cost of the arc's phone;
//   3. beam (and max_active) pruning of the phone tokens;
//   4. phone tokens exit (cost -log(1 - self_loop_prob)) to their arc's destination state;
//      epsilon arcs are followed (a FIFO relaxation; the graph has no epsilon cycle); state
//      tokens outside best + beam are dropped.
// After the last frame, state tokens add their final cost. Words are kept as a linked list of
// (word, previous link) records shared by all tokens (no per-frame backpointers), unless a frame
// alignment is asked for.
struct Token {
  double cost = kInf;
  double ac = 0;       // acoustic part of cost
  int32_t link = -1;   // last word link
  int32_t bp = -1;     // trace index of the phone token of the previous frame (frame_alignment)
  int32_t me = -1;     // this token's own trace index
};

struct Link {
  int32_t word;
  int32_t prev;
};

struct TraceEntry {
  int32_t arc;
  int32_t prev;
};

// Tokens indexed by arc or state id, with an O(active) reset via generation stamps. Kept per
// thread between decodes (see Workspace), so reset() only grows the arrays.
class TokenSet {
 public:
  void reset(size_t n) {
    if (tok_.size() < n) tok_.resize(n), gen_of_.resize(n, 0);
    clear();
  }
  void clear() {
    if (++gen_ == 0) {  // wrapped: forget every stamp
      std::fill(gen_of_.begin(), gen_of_.end(), 0u);
      gen_ = 1;
    }
    active_.clear();
  }
  Token& at(int32_t i) { return tok_[size_t(i)]; }
  // Token i, created with cost +inf if absent.
  Token& get(int32_t i) {
    if (gen_of_[size_t(i)] != gen_) {
      gen_of_[size_t(i)] = gen_;
      tok_[size_t(i)] = Token{};
      active_.push_back(i);
    }
    return tok_[size_t(i)];
  }
  std::vector<int32_t>& active() { return active_; }

 private:
  std::vector<Token> tok_;
  std::vector<uint32_t> gen_of_;
  uint32_t gen_ = 0;
  std::vector<int32_t> active_;
};

// Scratch memory of one decode, reused by the next decode on the same thread: the token arrays
// are as large as the graph, and allocating them per utterance cost more than decoding short ones.
struct Workspace {
  TokenSet prev, cur, states;
  std::vector<Link> links;
  std::vector<TraceEntry> trace;
  std::vector<double> acost, scratch;
  std::vector<int32_t> queue, remap;
};

// Note [Word link garbage collection]
// Every token that crosses a word arc appends a link, most of which die with their token at the
// next pruning. When the arena doubles past the live size, the links reachable from the live
// tokens are compacted in place (a link's predecessor always has a smaller index, so one forward
// pass renumbers them) and the tokens' indices rewritten.
void collect_links(Workspace& ws) {
  std::vector<Link>& links = ws.links;
  std::vector<int32_t>& remap = ws.remap;
  remap.assign(links.size(), -1);
  auto mark = [&](int32_t l) {
    for (; l >= 0 && remap[size_t(l)] == -1; l = links[size_t(l)].prev) remap[size_t(l)] = 0;
  };
  for (int32_t i : ws.prev.active()) mark(ws.prev.at(i).link);
  for (int32_t s : ws.states.active()) mark(ws.states.at(s).link);
  int32_t n = 0;
  for (size_t l = 0; l < links.size(); ++l) {
    if (remap[l] == -1) continue;
    Link k = links[l];
    k.prev = k.prev >= 0 ? remap[size_t(k.prev)] : -1;
    remap[l] = n;
    links[size_t(n++)] = k;
  }
  links.resize(size_t(n));
  for (int32_t i : ws.prev.active()) {
    Token& t = ws.prev.at(i);
    if (t.link >= 0) t.link = remap[size_t(t.link)];
  }
  for (int32_t s : ws.states.active()) {
    Token& t = ws.states.at(s);
    if (t.link >= 0) t.link = remap[size_t(t.link)];
  }
}

}  // namespace

std::string DecodeResult::text() const { return join_words(words); }

Decoder::Decoder(const DecodingGraph& graph, const DecodeOptions& o) : graph_(&graph), options_(o) {
  FW_CHECK(graph.num_states() > 0, "[fw::asr::Decoder] the graph is empty");
  FW_CHECK(o.beam > 0 && !std::isnan(o.beam), "[fw::asr::Decoder] beam must be > 0, got ", o.beam);
  FW_CHECK(o.max_active >= 0, "[fw::asr::Decoder] max_active must be >= 0 (0 = unlimited), got ", o.max_active);
  FW_CHECK(o.acoustic_scale > 0 && std::isfinite(o.acoustic_scale),
           "[fw::asr::Decoder] acoustic_scale must be finite and > 0, got ", o.acoustic_scale);
  FW_CHECK(std::isfinite(o.word_insertion_penalty), "[fw::asr::Decoder] word_insertion_penalty must be finite, got ",
           o.word_insertion_penalty);
  FW_CHECK(o.self_loop_prob > 0 && o.self_loop_prob < 1, "[fw::asr::Decoder] self_loop_prob must be in (0, 1), got ",
           o.self_loop_prob);
}

DecodeResult Decoder::decode(const Tensor& loglikes) const {
  FW_CHECK(loglikes.defined(), "[fw::asr::Decoder::decode] loglikes is undefined");
  FW_CHECK(loglikes.dim() == 2, "[fw::asr::Decoder::decode] loglikes must be (frames, num_phones), got ",
           loglikes.dim(), " dims");
  FW_CHECK(loglikes.is_floating_point(), "[fw::asr::Decoder::decode] loglikes must be floating point, got ",
           loglikes.dtype());
  FW_CHECK(loglikes.size(1) == graph_->num_phones(), "[fw::asr::Decoder::decode] loglikes has ", loglikes.size(1),
           " columns but the graph has ", graph_->num_phones(), " phones");
  Tensor x = loglikes.detach().to(Device(kCPU)).to(kFloat).contiguous();
  return decode(x.numel() ? x.data_ptr<float>() : nullptr, x.size(0), x.size(1));
}

DecodeResult Decoder::decode(const float* ll, int64_t T, int64_t P) const {
  const DecodingGraph& g = *graph_;
  const DecodeOptions& o = options_;
  FW_CHECK(P == g.num_phones(), "[fw::asr::Decoder::decode] loglikes has ", P, " columns but the graph has ",
           g.num_phones(), " phones");
  FW_CHECK(T >= 0 && T < (int64_t(1) << 31), "[fw::asr::Decoder::decode] bad number of frames ", T);
  FW_CHECK(T == 0 || ll != nullptr, "[fw::asr::Decoder::decode] loglikes is null for ", T, " frames");
  for (int64_t i = 0; i < T * P; ++i)
    FW_CHECK(!std::isnan(ll[i]) && ll[i] != std::numeric_limits<float>::infinity(),
             "[fw::asr::Decoder::decode] loglikes[", i / P, ", ", i % P, "] is ", ll[i],
             " (NaN and +inf are not log-likelihoods)");

  const auto& emit = g.emitting_arcs();
  const auto& eps = g.epsilon_arcs();
  const double loop_cost = -std::log(o.self_loop_prob), exit_cost = -std::log1p(-o.self_loop_prob);
  const double wip = o.word_insertion_penalty, beam = o.beam;
  thread_local Workspace ws;
  ws.prev.reset(emit.size());
  ws.cur.reset(emit.size());
  ws.states.reset(size_t(g.num_states()));
  ws.links.clear();
  ws.trace.clear();
  ws.acost.assign(size_t(P), 0.0);
  TokenSet &prev = ws.prev, &cur = ws.cur, &states = ws.states;
  std::vector<Link>& links = ws.links;
  std::vector<TraceEntry>& trace = ws.trace;
  std::vector<double>& acost = ws.acost;
  std::vector<double>& scratch = ws.scratch;
  std::vector<int32_t>& queue = ws.queue;
  size_t gc_at = size_t(1) << 16;
  DecodeResult r;
  r.frames = T;

  auto add_link = [&](int32_t word, int32_t prev_link) {
    FW_CHECK(links.size() < size_t(std::numeric_limits<int32_t>::max()),
             "[fw::asr::Decoder::decode] too many word links (use a smaller beam)");
    links.push_back({word, prev_link});
    return int32_t(links.size()) - 1;
  };
  // Relaxes the state tokens reachable over epsilon arcs from those in `states`.
  auto closure = [&]() {
    queue.assign(states.active().begin(), states.active().end());
    for (size_t q = 0; q < queue.size(); ++q) {
      const int32_t s = queue[q];
      const Token from = states.at(s);
      for (int64_t k = g.eps_begin(s); k < g.eps_begin(s + 1); ++k) {
        const DecodingGraph::Arc& a = eps[size_t(k)];
        double c = from.cost + a.cost + (a.word ? wip : 0.0);
        Token& t = states.get(a.dest);
        if (!(c < t.cost)) continue;
        t = Token{c, from.ac, a.word ? add_link(a.word, from.link) : from.link, from.bp, -1};
        queue.push_back(a.dest);
      }
    }
  };

  states.clear();
  states.get(g.start()) = Token{0.0, 0.0, -1, -1, -1};
  closure();
  for (int64_t t = 0; t < T; ++t) {
    const float* row = ll + t * P;
    for (int64_t p = 0; p < P; ++p) acost[size_t(p)] = -o.acoustic_scale * double(row[p]);
    cur.clear();
    double best = kInf;
    for (int32_t i : prev.active()) {
      const Token& from = prev.at(i);
      double ac = acost[size_t(emit[size_t(i)].phone)];
      double c = from.cost + loop_cost + ac;
      if (!(c < kInf)) continue;
      cur.get(i) = Token{c, from.ac + ac, from.link, from.me, -1};
      best = std::min(best, c);
    }
    double cutoff = best + beam;
    for (int32_t s : states.active()) {
      const Token& from = states.at(s);
      for (int64_t k = g.emit_begin(s); k < g.emit_begin(s + 1); ++k) {
        const DecodingGraph::Arc& a = emit[size_t(k)];
        double ac = acost[size_t(a.phone)];
        double c = from.cost + a.cost + (a.word ? wip : 0.0) + ac;
        if (!(c <= cutoff) || !(c < kInf)) continue;
        Token& to = cur.get(int32_t(k));
        if (!(c < to.cost)) continue;
        to = Token{c, from.ac + ac, a.word ? add_link(a.word, from.link) : from.link, from.bp, -1};
        if (c < best) best = c, cutoff = best + beam;
      }
    }
    FW_CHECK(best < kInf, "[fw::asr::Decoder::decode] no path survives frame ", t,
             ": every phone the graph allows there has log-likelihood -inf");
    std::vector<int32_t>& act = cur.active();
    if (o.max_active > 0 && int64_t(act.size()) > o.max_active) {
      scratch.clear();
      for (int32_t i : act) scratch.push_back(cur.at(i).cost);
      std::nth_element(scratch.begin(), scratch.begin() + (o.max_active - 1), scratch.end());
      cutoff = std::min(cutoff, scratch[size_t(o.max_active - 1)]);
    }
    act.erase(std::remove_if(act.begin(), act.end(), [&](int32_t i) { return !(cur.at(i).cost <= cutoff); }),
              act.end());
    r.tokens += int64_t(act.size());
    if (o.frame_alignment) {
      for (int32_t i : act) {
        Token& tk = cur.at(i);
        tk.me = int32_t(trace.size());
        trace.push_back({i, tk.bp});
      }
    }
    states.clear();
    double best_state = kInf;
    for (int32_t i : act) {
      const Token& from = cur.at(i);
      const DecodingGraph::Arc& a = emit[size_t(i)];
      double c = from.cost + exit_cost;
      Token& to = states.get(a.dest);
      if (c < to.cost) to = Token{c, from.ac, from.link, from.me, -1};
    }
    closure();
    for (int32_t s : states.active()) best_state = std::min(best_state, states.at(s).cost);
    std::vector<int32_t>& sact = states.active();
    sact.erase(std::remove_if(sact.begin(), sact.end(),
                              [&](int32_t s) { return !(states.at(s).cost <= best_state + beam); }),
               sact.end());
    std::swap(prev, cur);
    if (links.size() > gc_at) {
      collect_links(ws);
      gc_at = std::max(size_t(1) << 16, 2 * links.size());
    }
  }

  int32_t best_s = -1;
  double best_total = kInf;
  for (int32_t s : states.active()) {
    double c = states.at(s).cost + double(g.final_cost(s));
    if (c < best_total) best_total = c, best_s = s;
  }
  r.reached_final = best_s >= 0;
  if (best_s < 0) {
    FW_CHECK(o.allow_partial, "[fw::asr::Decoder::decode] no final state reached after ", T,
             " frames (allow_partial is off)");
    for (int32_t s : states.active()) {
      if (states.at(s).cost < best_total) best_total = states.at(s).cost, best_s = s;
    }
  }
  FW_CHECK(best_s >= 0, "[fw::asr::Decoder::decode] the search has no surviving token after ", T, " frames");
  const Token& fin = states.at(best_s);
  r.cost = best_total;
  r.acoustic_cost = fin.ac;
  r.graph_cost = best_total - fin.ac;
  for (int32_t l = fin.link; l >= 0; l = links[size_t(l)].prev) r.word_ids.push_back(links[size_t(l)].word);
  std::reverse(r.word_ids.begin(), r.word_ids.end());
  for (int32_t w : r.word_ids) r.words.push_back(g.word(w));
  if (o.frame_alignment) {
    r.alignment.assign(size_t(T), -1);
    int64_t t = T - 1;
    for (int32_t e = fin.bp; e >= 0; e = trace[size_t(e)].prev, --t) {
      FW_ASSERT(t >= 0);
      r.alignment[size_t(t)] = emit[size_t(trace[size_t(e)].arc)].phone;
    }
    FW_ASSERT(t == -1);
  }
  return r;
}

Tensor log_priors_from_alignments(const std::map<std::string, std::vector<int32_t>>& alignments, int64_t num_phones,
                                  double add_count) {
  FW_CHECK(num_phones > 0, "[fw::asr::log_priors_from_alignments] num_phones must be > 0, got ", num_phones);
  FW_CHECK(add_count >= 0 && std::isfinite(add_count),
           "[fw::asr::log_priors_from_alignments] add_count must be >= 0, got ", add_count);
  std::vector<double> counts(size_t(num_phones), add_count);
  for (const auto& [utt, ali] : alignments) {
    for (size_t i = 0; i < ali.size(); ++i) {
      FW_CHECK(ali[i] >= 0 && ali[i] < num_phones, "[fw::asr::log_priors_from_alignments] utterance '", utt,
               "' frame ", i, " has class ", ali[i], ", outside [0, ", num_phones, ")");
      counts[size_t(ali[i])] += 1;
    }
  }
  double total = 0;
  for (double c : counts) total += c;
  FW_CHECK(total > 0, "[fw::asr::log_priors_from_alignments] no frames and add_count = 0");
  Tensor out = empty({num_phones}, kFloat);
  float* p = out.data_ptr<float>();
  for (int64_t i = 0; i < num_phones; ++i) p[i] = float(std::log(counts[size_t(i)] / total));
  return out;
}

}  // namespace fw::asr
