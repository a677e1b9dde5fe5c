// fw::audio::functional's beamforming (fw/audio/beamforming.h) against torchaudio 0.13
// (tests/fixtures/audio/gen_beamforming.py -> beamforming.safetensors): psd with and without masks,
// Souden and RTF MVDR weights with index and weighting references, rtf_evd (as v v^H, phase free),
// rtf_power for 1..5 iterations, apply_beamforming and the modules (MVDR with every solution,
// multi-channel masks and online accumulation over two chunks); complex64, batched and
// complex128. Plus the complex linalg.solve / eigh they rest on, a gradient check through them and
// argument errors.
#include <gtest/gtest.h>

#include <optional>
#include <string>

#include "fw/audio.h"
#include "fw/linalg.h"
#include "tests/audio/audio_fixture.h"
#include "tests/expect_error.h"

namespace {

namespace F = fw::audio::functional;
namespace T = fw::audio::transforms;
using fw::Tensor;
using fwtest::audio::Case;

const fwtest::audio::FixtureFile& fix() {
  static const fwtest::audio::FixtureFile f("beamforming");
  return f;
}

bool stored(const Case& c, const std::string& key) {
  try {
    fix().out(c, key);
    return true;
  } catch (const std::exception&) {
    return false;
  }
}

// Complex tensors are stored as view_as_real; masks and reference weightings are real.
Tensor get(const Case& c, const std::string& key) {
  const Tensor& t = fix().out(c, key);
  const bool real = key == "mask" || key == "ref" || key.rfind("mask_s", 0) == 0;
  return real ? t : fw::view_as_complex(t.contiguous());
}

Tensor run(const Case& c) {
  const std::string fn = c.str("fn");
  const bool has_ref_tensor = stored(c, "ref");
  if (fn == "psd") {
    std::optional<Tensor> m;
    if (stored(c, "mask")) m = get(c, "mask");
    return F::psd(get(c, "x"), m, c.flag("normalize", true), c.num("eps", 1e-10));
  }
  if (fn == "PSD_multi") return T::PSD(true)(get(c, "x"), get(c, "mask"));
  if (fn == "souden") {
    if (has_ref_tensor)
      return F::mvdr_weights_souden(get(c, "psd_s"), get(c, "psd_n"), get(c, "ref"));
    return F::mvdr_weights_souden(get(c, "psd_s"), get(c, "psd_n"), c.i("ref"), c.flag("diagonal_loading", true));
  }
  if (fn == "rtf_evd") {
    Tensor v = F::rtf_evd(get(c, "psd_s"));
    return v.unsqueeze(-1) * v.conj().unsqueeze(-2);
  }
  if (fn == "rtf_power") {
    if (has_ref_tensor) return F::rtf_power(get(c, "psd_s"), get(c, "psd_n"), get(c, "ref"), c.i("n_iter"));
    return F::rtf_power(get(c, "psd_s"), get(c, "psd_n"), c.i("ref"), c.i("n_iter"));
  }
  if (fn == "mvdr_rtf") {
    if (has_ref_tensor) return F::mvdr_weights_rtf(get(c, "rtf"), get(c, "psd_n"), get(c, "ref"));
    std::optional<int64_t> ref;
    if (c.has("ref")) ref = c.i("ref");
    return F::mvdr_weights_rtf(get(c, "rtf"), get(c, "psd_n"), ref);
  }
  if (fn == "apply") return F::apply_beamforming(get(c, "w"), get(c, "x"));
  if (fn == "SoudenMVDR") return T::SoudenMVDR()(get(c, "x"), get(c, "psd_s"), get(c, "psd_n"), c.i("ref"));
  if (fn == "RTFMVDR") return T::RTFMVDR()(get(c, "x"), get(c, "rtf"), get(c, "psd_n"), c.i("ref"));
  if (fn == "MVDR" || fn == "MVDR_online") {
    auto o = T::MVDROptions().ref_channel(c.i("ref")).solution(c.str("solution")).multi_mask(c.flag("multi_mask"));
    if (fn == "MVDR") return T::MVDR(o)(get(c, "x"), get(c, "mask_s"));
    T::MVDR m(o.online(true));
    Tensor m1 = get(c, "mask_s"), m2 = get(c, "mask_s2");
    m(get(c, "x"), m1, 1 - m1 * 0.5);
    return m(get(c, "x2"), m2, 1 - m2 * 0.5);
  }
  throw std::runtime_error("unknown fixture fn " + fn);
}

}  // namespace

TEST(AudioBeamforming, MatchesTorchaudio) {
  auto cases = fix().cases("");
  ASSERT_EQ(cases.size(), 96u);
  for (const auto& c : cases) {
    Tensor out = run(c);
    const bool c128 = c.name.find("c128") != std::string::npos;
    EXPECT_EQ(out.dtype(), c128 ? fw::kComplexDouble : fw::kComplexFloat) << c.name;
    FW_AUDIO_EXPECT_CLOSE(c, out, fix().out(c), c128 ? 1e-9 : 1e-4, c128 ? 1e-10 : 1e-5);
  }
}

TEST(AudioBeamforming, ComplexSolveAndEigh) {
  Tensor re = (fw::arange(18, fw::kDouble) * 0.7).sin().reshape({2, 3, 3});
  Tensor im = (fw::arange(18, fw::kDouble) * 1.3).cos().reshape({2, 3, 3});
  Tensor M = fw::complex(re, im);
  Tensor A = fw::matmul(M, M.mH()) + fw::eye(3, fw::kComplexDouble);  // Hermitian positive definite
  Tensor b = fw::complex(fw::ones({2, 3, 2}, fw::kDouble), fw::arange(12, fw::kDouble).reshape({2, 3, 2}));
  Tensor x = fw::linalg::solve(A, b);
  EXPECT_LT((fw::matmul(A, x) - b).abs().max().item<double>(), 1e-12);
  auto [w, V] = fw::linalg::eigh(A);
  EXPECT_EQ(w.dtype(), fw::kDouble);
  EXPECT_LT((fw::matmul(A, V) - V * w.unsqueeze(-2)).abs().max().item<double>(), 1e-12);
  EXPECT_LT((fw::matmul(V.mH(), V) - fw::eye(3, fw::kComplexDouble)).abs().max().item<double>(), 1e-12);
  // The upper triangle gives the same Hermitian matrix's eigenvalues.
  EXPECT_TRUE(fw::allclose(std::get<0>(fw::linalg::eigh(A, "U")), w));
  EXPECT_TRUE(fw::allclose(fw::linalg::eigvalsh(A), w));
}

// Gradients through complex solve/eigh/matmul, checked by finite differences on real parameters.
TEST(AudioBeamforming, GradientsThroughComplexLinalg) {
  Tensor re = (fw::arange(2 * 3 * 8, fw::kDouble) * 0.61).sin().reshape({3, 2, 8}).requires_grad_();
  Tensor im = (fw::arange(2 * 3 * 8, fw::kDouble) * 0.29).cos().reshape({3, 2, 8}).requires_grad_();
  Tensor m = (fw::arange(16, fw::kDouble) * 0.5).sin().abs().reshape({2, 8});
  auto f = [&](const fw::autograd::variable_list& in) {
    Tensor x = fw::complex(in[0], in[1]);  // (channel 3, freq 2, time 8)
    Tensor ps = F::psd(x, m), pn = F::psd(x, 1 - m);
    Tensor w = F::mvdr_weights_souden(ps, pn, 0);
    Tensor y = F::apply_beamforming(w, x);
    Tensor v = F::rtf_evd(ps);
    Tensor proj = (v.unsqueeze(-1) * v.conj().unsqueeze(-2)).abs();  // phase-free
    return fw::autograd::variable_list{fw::view_as_real(y), fw::view_as_real(F::rtf_power(ps, pn, 1, 2)), proj};
  };
  EXPECT_TRUE(fw::autograd::gradcheck(f, {re, im}, 1e-6, 1e-5, 1e-3));
}

TEST(AudioBeamforming, BadArgumentsAreNamed) {
  Tensor x = fw::complex(fw::ones({3, 4, 10}), fw::zeros({3, 4, 10}));
  Tensor p = F::psd(x);
  EXPECT_ERROR(F::psd(x.real()), "[audio::psd] specgram must be complex");
  EXPECT_ERROR(F::psd(x, fw::ones({4, 9})), "The dimensions of mask except the channel dimension");
  EXPECT_ERROR(F::mvdr_weights_souden(p, p.narrow(-1, 0, 2), 0), "The dimensions of psd_s and psd_n should be the same");
  EXPECT_ERROR(F::mvdr_weights_souden(p.real(), p.real(), 0), "must be complex64 or complex128");
  EXPECT_ERROR(F::mvdr_weights_souden(p, p, 3), "reference_channel 3 is out of range for 3 channels");
  EXPECT_ERROR(F::mvdr_weights_souden(p, p, fw::ones({2})), "a tensor reference_channel must be (..., channel) with 3");
  EXPECT_ERROR(F::rtf_power(p, p, 0, 0), "The number of iteration must be greater than 0");
  EXPECT_ERROR(F::mvdr_weights_rtf(p.select(-1, 0).narrow(-1, 0, 2), p), "The dimensions of rtf");
  EXPECT_ERROR(F::apply_beamforming(p.select(-1, 0), x.unsqueeze(0)), "The dimensions except the last two");
  EXPECT_ERROR(T::MVDR(T::MVDROptions().solution("svd")), "`solution` must be one of");
  EXPECT_ERROR(T::MVDR(T::MVDROptions().ref_channel(5))(x, fw::ones({4, 10})), "ref_channel 5 is out of range for 3");
  EXPECT_ERROR(fw::linalg::solve(fw::ones({2, 2}, fw::kInt), fw::ones({2}, fw::kInt)),
               "Expected a float32, float64, complex64 or complex128 tensor as A");
}
