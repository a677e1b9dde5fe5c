// Op-table entries for the FFT primitives (fft_r2c, fft_c2r, fft_c2c); fixtures from
// tests/fixtures/gen_fft.py with args [dims, normalization, onesided | last_dim_size | forward].
// The public transforms (fw::fft::*, stft, istft) are tested in tests/audio/test_spectral.cpp.
#include <gtest/gtest.h>

#include "core/op.h"
#include "tests/op_table.h"

using fw::Tensor;
using fwtest::FixCase;
using V = std::vector<Tensor>;

FW_OP_TEST(fft_r2c) {
  t.run = [](const FixCase& c) { return V{fw::_fft_r2c(c.in[0], c.args[0].ints, c.args[1].i, c.args[2].b)}; };
  t.rtol = 1e-5;
  t.atol = 1e-5;
  t.error([] { fw::_fft_r2c(fw::ones({4}, fw::kLong), {0}, 0, true); }, "[fft_r2c] expected a float32 or float64 input, got int64");
  t.error([] { fw::_fft_r2c(fw::ones({0}), {0}, 0, true); }, "[fft_r2c] Invalid number of data points (0) specified");
  t.error([] { fw::_fft_r2c(fw::ones({4}), {0}, 3, true); }, "[fft_r2c] invalid normalization mode 3");
  t.error([] { fw::_fft_r2c(fw::ones({4, 4}), {1, 1}, 0, true); }, "[fft_r2c] dims must be unique, got dim 1 twice");
  t.error([] { fw::_fft_r2c(fw::ones({4}), {}, 0, true); }, "[fft_r2c] expected at least one dim to transform");
}

FW_OP_TEST(fft_c2r) {
  t.run = [](const FixCase& c) { return V{fw::_fft_c2r(c.in[0], c.args[0].ints, c.args[1].i, c.args[2].i)}; };
  t.rtol = 1e-5;
  t.atol = 1e-5;
  t.error([] { fw::_fft_c2r(fw::ones({4}), {0}, 0, 6); }, "[fft_c2r] expected a complex input, got float32");
  t.error([] {
    fw::_fft_c2r(fw::complex(fw::ones({3}), fw::ones({3})), {0}, 0, 8);
  }, "[fft_c2r] output length 8 needs 5 input bins along dim 0, got 3");
  t.error([] { fw::_fft_c2r(fw::complex(fw::ones({3}), fw::ones({3})), {0}, 0, 0); }, "[fft_c2r] Invalid number of data points (0)");
}

FW_OP_TEST(fft_c2c) {
  t.run = [](const FixCase& c) { return V{fw::_fft_c2c(c.in[0], c.args[0].ints, c.args[1].i, c.args[2].b)}; };
  t.rtol = 1e-5;
  t.atol = 1e-5;
  t.error([] { fw::_fft_c2c(fw::ones({4}), {0}, 0, true); }, "[fft_c2c] expected a complex input, got float32");
  t.error([] { fw::_fft_c2c(fw::complex(fw::ones({4}), fw::ones({4})), {1}, 0, true); }, "[fft_c2c] Dimension out of range");
}

// istft's envelope check: the identity on a window envelope that satisfies NOLA, an error naming
// istft and the smallest |value| otherwise.
FW_OP_TEST(check_nola) {
  t.run = [](const FixCase& c) { return V{fw::detail::check_nola(c.in[0])}; };
  t.error([] { fw::detail::check_nola(fw::tensor({0.5f, 1e-12f, 0.75f})); }, "[istft] window overlap add min: 1e-12");
  t.error([] { fw::detail::check_nola(fw::tensor({0.5, -0.0, 2.0})); }, "[istft] window overlap add min: 0 (");
  t.error([] { fw::detail::check_nola(fw::tensor({1, 2})); }, "[istft] the window envelope must be float32 or float64, got int64");
}

TEST(FftOps, GradcheckPrimitives) {
  fw::manual_seed(21);
  Tensor x = fw::randn({3, 6}, fw::kDouble).requires_grad_(true);
  Tensor z = fw::randn({3, 4, 2}, fw::kDouble).requires_grad_(true);
  auto R = [](const Tensor& t) { return t.is_complex() ? fw::view_as_real(t) : t; };
  for (int64_t norm : {0, 1, 2}) {
    for (bool one : {true, false}) {
      EXPECT_TRUE(fw::autograd::gradcheck([&](const fw::autograd::variable_list& v) {
        return fw::autograd::variable_list{R(fw::_fft_r2c(v[0], {0, 1}, norm, one))};
      }, {x})) << norm << one;
    }
    for (int64_t n : {6, 7}) {
      EXPECT_TRUE(fw::autograd::gradcheck([&](const fw::autograd::variable_list& v) {
        return fw::autograd::variable_list{fw::_fft_c2r(fw::view_as_complex(v[0]), {1}, norm, n)};
      }, {z})) << norm << n;
      EXPECT_TRUE(fw::autograd::gradgradcheck([&](const fw::autograd::variable_list& v) {
        return fw::autograd::variable_list{fw::_fft_c2r(fw::view_as_complex(v[0]), {0, 1}, norm, n)};
      }, {z})) << norm << n;
    }
    for (bool fwd : {true, false}) {
      EXPECT_TRUE(fw::autograd::gradgradcheck([&](const fw::autograd::variable_list& v) {
        return fw::autograd::variable_list{R(fw::_fft_c2c(fw::view_as_complex(v[0]), {1, 0}, norm, fwd))};
      }, {z})) << norm << fwd;
    }
  }
}
