// Evaluation stage: frame accuracy, phone error rate by phone-loop Viterbi decoding with the
// insertion penalty tuned on dev, Kaldi log-likelihood archives, and the comparison table.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <memory>
#include <sstream>

#include <fw/audio/kaldi_io.h>

#include "examples/babel/recipe.h"

#ifdef FW_RECIPE_HAVE_ASR
#include <fw_asr/asr.h>
#endif

namespace fw::recipe {

namespace fm = fw::models;
namespace kio = fw::audio::kaldi_io;

Tensor log_posteriors(LoadedModel& m, int64_t lang, const Tensor& feats, int64_t batch_size) {
  InferenceMode im;
  const int64_t C = m.mean.size(0), F = m.mean.size(1);
  FW_CHECK(feats.dim() == 2 && feats.size(1) == C * F, "features have ", feats.size(1), " dims, the model expects ",
           C * F);
  const int64_t T = feats.size(0);
  Tensor x = ((feats.to(kFloat).reshape({T, C, F}) - m.mean) / m.std).contiguous();
  const fm::ContextSpec spec = context_spec(m.config.model);
  std::vector<Tensor> out;
  for (int64_t b = 0; b < T; b += batch_size) {
    Tensor centers = fw::arange(b, std::min(T, b + batch_size), kLong);
    Tensor w = fm::extract_windows(x, centers, spec);
    out.push_back(nn::functional::log_softmax(m.net->forward(w, lang), 1));
  }
  return out.size() == 1 ? out[0] : fw::cat(out, 0);
}

namespace {

int64_t lang_index(const LoadedModel& m, const std::string& name) {
  for (size_t l = 0; l < m.config.langs.size(); l++)
    if (m.config.langs[l].name == name) return int64_t(l);
  std::vector<std::string> names;
  for (const auto& L : m.config.langs) names.push_back(L.name);
  FW_CHECK(false, "the model has no language '", name, "' (it has ", join(names, ","), ")");
  return -1;
}

std::string fmt_num(double x, int prec) {
  if (x < 0) return "-";
  char b[32];
  std::snprintf(b, sizeof b, "%.*f", prec, x);
  return b;
}

}  // namespace

bool wer_available() {
#ifdef FW_RECIPE_HAVE_ASR
  return true;
#else
  return false;
#endif
}

// Note [WER]
// With fw_asr (examples/asr, built where OpenFst is found) each language's words are decoded from
// the same log-likelihoods as the PER: a det(L ∘ G) graph from the language's lexicon and a backoff
// bigram of its training transcripts (fw::asr::build_word_graph with its defaults: optional
// silence 0.5), token-passing Viterbi with a one-state phone HMM (beam EvalOptions::wer_beam), and
// fw::asr::score against the split's `text`. The acoustic scale is chosen on the tuning split from
// EvalOptions::wer_scales and applied to the others, as the phone insertion penalty is.
std::vector<EvalRow> evaluate(const std::string& exp, const EvalOptions& o) {
  if (o.threads > 0) fw::set_num_threads(int(o.threads));
  LoadedModel m = load_model(exp);
  std::vector<EvalRow> rows;
  for (size_t l = 0; l < m.config.langs.size(); l++) {
    const LangSpec& L = m.config.langs[l];
    int32_t sil = -1;
    bool per = o.per && !L.phones.empty();
    if (per) {
      auto names = read_phones(L.phones);
      auto it = std::find(names.begin(), names.end(), "sil");
      if (it != names.end()) sil = int32_t(it - names.begin());
    }
    const auto& prior = m.log_priors[l];
    const int64_t K = L.num_classes;
    // Splits in order, the tuning split first.
    std::vector<std::string> splits;
    for (const auto& s : o.splits)
      if (L.splits.count(s) && !L.splits.at(s).ali.empty()) splits.push_back(s);
    auto tune = std::find(splits.begin(), splits.end(), o.tune_split);
    if (tune != splits.end()) std::rotate(splits.begin(), tune, tune + 1);
    double penalty = 0;
    bool tuned = false;
#ifdef FW_RECIPE_HAVE_ASR
    std::unique_ptr<fw::asr::DecodingGraph> graph;
    if (o.wer && !L.phones.empty() && !L.lexicon.empty() && L.splits.count("train") &&
        !L.splits.at("train").text.empty()) {
      auto phones = fw::asr::PhoneTable::read(L.phones);
      graph = std::make_unique<fw::asr::DecodingGraph>(fw::asr::build_word_graph(
          phones, fw::asr::read_lexicon(L.lexicon, phones), fw::asr::read_text(L.splits.at("train").text)));
    }
    double wer_scale = 0;
    bool wer_tuned = false;
#endif
    for (const auto& split : splits) {
      LoadOptions lo = m.config.load;
      lo.max_utts = 0;
      FrameData d = load_frames(L.splits.at(split), lo);
      EvalRow row;
      row.lang = L.name;
      row.split = split;
      row.utts = int64_t(d.utts.size());
      row.frames = d.num_frames();
      int64_t correct = 0;
      std::vector<std::vector<float>> lls(d.utts.size());
      std::vector<std::vector<int32_t>> refs(d.utts.size());
      Tensor logprior = fw::tensor(std::vector<float>(prior.begin(), prior.end()));
      for (size_t u = 0; u < d.utts.size(); u++) {
        Tensor feats = d.feats.narrow(0, d.start[u], d.length[u]).reshape({d.length[u], -1});
        Tensor lp = log_posteriors(m, int64_t(l), feats, o.batch_size);
        Tensor pred = lp.argmax(1).contiguous();
        const int64_t* pp = pred.data_ptr<int64_t>();
        std::vector<int32_t> ref(static_cast<size_t>(d.length[u]));
        for (int64_t t = 0; t < d.length[u]; t++) {
          ref[size_t(t)] = int32_t(d.labels[size_t(d.start[u] + t)]);
          correct += pp[t] == ref[size_t(t)];
        }
        Tensor ll = (lp - logprior).contiguous();
        lls[u].assign(ll.data_ptr<float>(), ll.data_ptr<float>() + ll.numel());
        if (per) refs[u] = collapse(ref, sil);
      }
      row.frame_accuracy = 100.0 * double(correct) / double(std::max<int64_t>(1, row.frames));
      if (per) {
        auto score = [&](double pen) {
          EditCounts e;
          for (size_t u = 0; u < lls.size(); u++)
            e += align(refs[u], collapse(viterbi_phone_loop(lls[u].data(), d.length[u], K, pen, o.acoustic_scale), sil));
          return e;
        };
        if (!tuned) {
          double best = 1e300;
          for (double pen : o.penalties) {
            double r = score(pen).rate();
            if (r < best - 1e-12) best = r, penalty = pen;
          }
          tuned = true;
        }
        row.per = score(penalty).rate();
        row.penalty = penalty;
      }
#ifdef FW_RECIPE_HAVE_ASR
      if (graph && !L.splits.at(split).text.empty()) {
        auto text = fw::asr::read_text(L.splits.at(split).text);
        std::map<std::string, std::string> ref;
        std::vector<size_t> scored;
        for (size_t u = 0; u < d.utts.size(); u++) {
          auto it = text.find(d.utts[u]);
          if (it == text.end()) continue;
          ref[d.utts[u]] = it->second;
          scored.push_back(u);
        }
        auto wer_at = [&](double scale) {
          fw::asr::DecodeOptions dopt;
          dopt.acoustic_scale = scale;
          dopt.beam = o.wer_beam;
          fw::asr::Decoder dec(*graph, dopt);
          std::map<std::string, std::string> hyp;
          for (size_t u : scored) hyp[d.utts[u]] = dec.decode(lls[u].data(), d.length[u], K).text();
          return 100.0 * fw::asr::score(ref, hyp).total.wer();
        };
        if (!scored.empty()) {
          if (!wer_tuned) {
            double best = 1e300;
            for (double sc : o.wer_scales) {
              double w = wer_at(sc);
              if (w < best - 1e-12) best = w, wer_scale = sc;
            }
            wer_tuned = true;
          }
          row.wer = wer_at(wer_scale);
          row.wer_scale = wer_scale;
        }
      }
#endif
      rows.push_back(row);
    }
  }
  std::string tsv = "lang\tsplit\tutts\tframes\tframe_acc\tper\tpenalty\twer\twer_acoustic_scale\n";
  for (const auto& r : rows)
    tsv += r.lang + "\t" + r.split + "\t" + std::to_string(r.utts) + "\t" + std::to_string(r.frames) + "\t" +
           fmt_num(r.frame_accuracy, 2) + "\t" + fmt_num(r.per, 2) + "\t" + fmt_num(r.penalty, 1) + "\t" +
           fmt_num(r.wer, 2) + "\t" + fmt_num(r.wer < 0 ? -1 : r.wer_scale, 2) + "\n";
  write_text_atomic(exp + "/results.tsv", tsv);
  return rows;
}

std::vector<EvalRow> read_results(const std::string& path) {
  std::istringstream in(read_text(path));
  std::string line;
  std::vector<EvalRow> rows;
  bool header = true;
  while (std::getline(in, line)) {
    if (header) {
      header = false;
      continue;
    }
    auto f = split(line, '\t');
    if (f.size() < 8) continue;
    auto num = [](const std::string& s) { return s == "-" ? -1.0 : std::atof(s.c_str()); };
    EvalRow r;
    r.lang = f[0];
    r.split = f[1];
    r.utts = std::atoll(f[2].c_str());
    r.frames = std::atoll(f[3].c_str());
    r.frame_accuracy = num(f[4]);
    r.per = num(f[5]);
    r.penalty = num(f[6]);
    r.wer = num(f[7]);
    if (f.size() > 8) r.wer_scale = num(f[8]);
    rows.push_back(r);
  }
  return rows;
}

int64_t write_loglikes(const std::string& exp, const std::string& lang, const std::string& feats_rspec,
                       const std::string& wspecifier, double acoustic_scale, int64_t threads) {
  if (threads > 0) fw::set_num_threads(int(threads));
  LoadedModel m = load_model(exp);
  const int64_t l = lang.empty() ? 0 : lang_index(m, lang);
  FW_CHECK(!lang.empty() || m.config.langs.size() == 1, "the model has several languages: pass --lang");
  const auto& prior = m.log_priors[size_t(l)];
  Tensor logprior = fw::tensor(std::vector<float>(prior.begin(), prior.end()));
  kio::MatrixWriter out(wspecifier);
  int64_t n = 0;
  for (kio::SequentialMatrixReader r(feats_rspec); !r.done(); r.next()) {
    Tensor ll = (log_posteriors(m, l, r.value()) - logprior) * acoustic_scale;
    out.write(r.key(), ll.contiguous());
    n++;
  }
  out.close();
  return n;
}

// Note [Comparison table]
// One row per system, one column per language and the mean over the languages (unweighted, as
// the paper's tables list languages side by side). A system is one experiment (multilingual) or
// several (one monolingual model per language); their results.tsv rows are merged by language.
// WER: "-" where it was not computed (no fw_asr, lexicon or transcripts; Note [WER]).
std::string comparison_table(const std::vector<TableSystem>& systems, const std::string& split,
                             const std::vector<std::string>& lang_order) {
  std::vector<std::string> langs;
  std::vector<std::map<std::string, EvalRow>> per_system;
  for (const auto& s : systems) {
    std::map<std::string, EvalRow> by_lang;
    for (const auto& exp : s.exps) {
      const std::string path = exp + "/results.tsv";
      if (!file_exists(path)) continue;
      for (const auto& r : read_results(path)) {
        if (r.split != split) continue;
        by_lang[r.lang] = r;
        if (std::find(langs.begin(), langs.end(), r.lang) == langs.end()) langs.push_back(r.lang);
      }
    }
    per_system.push_back(by_lang);
  }
  std::vector<std::string> ordered;
  for (const auto& l : lang_order)
    if (std::find(langs.begin(), langs.end(), l) != langs.end()) ordered.push_back(l);
  for (const auto& l : langs)
    if (std::find(ordered.begin(), ordered.end(), l) == ordered.end()) ordered.push_back(l);
  langs = ordered;
  size_t label_w = 8;
  for (const auto& s : systems) label_w = std::max(label_w, s.label.size() + 2);
  std::ostringstream out;
  auto block = [&](const std::string& title, auto get, bool any_needed) {
    bool any = false;
    for (const auto& m : per_system)
      for (const auto& [k, r] : m) any = any || get(r) >= 0;
    out << title << (any || !any_needed ? "" : "  (not available)") << "\n";
    out << std::string(label_w, ' ');
    char cell[32];
    for (const auto& lg : langs) {
      std::snprintf(cell, sizeof cell, "%8s", lg.c_str());
      out << cell;
    }
    out << "     avg\n";
    for (size_t s = 0; s < systems.size(); s++) {
      std::string label = systems[s].label;
      label.resize(label_w, ' ');
      out << label;
      double sum = 0;
      int n = 0;
      for (const auto& lg : langs) {
        auto it = per_system[s].find(lg);
        double v = it == per_system[s].end() ? -1 : get(it->second);
        if (v >= 0) sum += v, n++;
        std::snprintf(cell, sizeof cell, "%8s", fmt_num(v, 1).c_str());
        out << cell;
      }
      std::snprintf(cell, sizeof cell, "%8s", n == int(langs.size()) && n > 0 ? fmt_num(sum / n, 1).c_str() : "-");
      out << cell << "\n";
    }
    out << "\n";
  };
  block("Frame accuracy (%), " + split + " set, higher is better", [](const EvalRow& r) { return r.frame_accuracy; },
        false);
  block("Phone error rate (%), " + split + " set, phone-loop Viterbi, penalty tuned on dev, lower is better",
        [](const EvalRow& r) { return r.per; }, true);
  block("Word error rate (%), " + split +
            " set, lexicon + bigram graph (examples/asr), acoustic scale tuned on dev, lower is better",
        [](const EvalRow& r) { return r.wer; }, true);
  return out.str();
}

}  // namespace fw::recipe
