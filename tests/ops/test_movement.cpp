// Op-table entries for the movement family (flip, roll, repeat, constant_pad_nd, unfold) and
// behaviour tests: unfold aliasing, copies never aliasing, pad's mode errors.
// Composite functions ride on a primitive (see tests/fixtures/gen_movement.py): tile_* cases
// on repeat, pad_* cases on constant_pad_nd.
#include <gtest/gtest.h>

#include "tests/op_table.h"

using fw::Tensor;
using fwtest::FixArg;
using fwtest::FixCase;
using V = std::vector<Tensor>;

namespace {

using fwtest::starts_with;
bool same(const Tensor& a, const Tensor& b) { return fwtest::compare(a, b, 0, 0).empty(); }

fw::Scalar scalar(const FixArg& a) { return a.scalar(); }

}  // namespace

FW_OP_TEST(flip) {
  t.run = [](const FixCase& c) { return V{fw::flip(c.in[0], c.args[0].ints)}; };
  t.error([] { fw::flip(fw::ones({2, 3}), {0, 0}); }, "[flip] dim 0 appears multiple times in the list of dims");
  t.error([] { fw::flip(fw::ones({2, 3}), {2}); }, "[flip] Dimension out of range (expected to be in range of [-2, 1], but got 2)");
}

FW_OP_TEST(roll) {
  t.run = [](const FixCase& c) { return V{fw::roll(c.in[0], c.args[0].ints, c.args[1].ints)}; };
  t.error([] { fw::roll(fw::ones({2, 3}), {1}, {0, 1}); }, "[roll] shifts and dimensions must align. shifts: 1, dims:2");
  t.error([] { fw::roll(fw::ones({2, 3}), {1, 2}); }, "shifts and dimensions must align");
  t.error([] { fw::roll(fw::ones({2, 3}), {}, {}); }, "[roll] `shifts` required");
  t.error([] { fw::roll(fw::ones({2, 3}), {1}, {2}); }, "[roll] Dimension out of range");
  t.error([] { fw::roll(fw::ones({}), {1}, {0}); }, "[roll] Dimension specified as 0 but tensor has no dimensions");
}

FW_OP_TEST(repeat) {
  t.run = [](const FixCase& c) {
    if (starts_with(c.name, "tile")) return V{fw::tile(c.in[0], c.args[0].ints)};
    return V{c.in[0].repeat(c.args[0].ints)};
  };
  t.error([] { fw::ones({2, 3}).repeat({2}); },
          "[repeat] Number of dimensions of repeat dims can not be smaller than number of dimensions of tensor");
  t.error([] { fw::ones({2, 3}).repeat({-1, 1}); }, "[repeat] Trying to create tensor with negative dimension");
}

FW_OP_TEST(constant_pad_nd) {
  t.run = [](const FixCase& c) {
    if (starts_with(c.name, "pad_")) return V{fw::pad(c.in[0], c.args[0].ints, c.args[1].s, c.args[2].f)};
    return V{fw::constant_pad_nd(c.in[0], c.args[0].ints, scalar(c.args[1]))};
  };
  t.error([] { fw::constant_pad_nd(fw::ones({2, 3}), {1}); }, "[constant_pad_nd] Length of pad must be even but instead it equals 1");
  t.error([] { fw::constant_pad_nd(fw::ones({2, 3}), {1, 1, 1, 1, 1, 1}); },
          "Length of pad should be no more than twice the number of dimensions of the input. Pad length is 6");
  t.error([] { fw::constant_pad_nd(fw::ones({2, 3}), {-2, -2}); },
          "The input size 3, plus negative padding -2 and -2 resulted in a negative output size");
  t.error([] { fw::pad(fw::ones({2, 3}), {3, 1}, "reflect"); },
          "[pad] Argument #4: Padding size should be less than the corresponding input dimension, but got: padding (3, 1)");
  t.error([] { fw::pad(fw::ones({2, 3}), {1, 1}, "foo"); }, "[pad] Unrecognised padding mode foo");
  t.error([] { fw::pad(fw::ones({2, 3}), {1, 1}, "reflect", 1.0); }, "Padding mode \"reflect\" doesn't take in value argument");
  t.error([] { fw::pad(fw::ones({2, 3}), {1}, "reflect"); }, "[pad] Padding length must be divisible by 2");
  t.error([] { fw::pad(fw::ones({2, 3}), {1, 1, 1, 1, 1, 1}, "replicate"); }, "[pad] Padding length too large");
  t.error([] { fw::pad(fw::ones({3}), {1, 1}, "reflect"); }, "Only 2D, 3D, 4D, 5D padding with non-constant padding");
  t.error([] { fw::pad(fw::ones({2, 3}), {1, 1}, "circular"); }, "[pad] Invalid padding size, expected 0 but got 2");
  t.error([] { fw::pad(fw::ones({1, 2, 3}), {4, 0}, "circular"); }, "Padding value causes wrapping around more than once");
  t.error([] { fw::pad(fw::ones({2, 3}, fw::kLong), {1, 1}, "replicate"); }, "replicate padding not implemented for dtype int64");
  t.error([] { fw::pad(fw::ones({2, 0}), {1, 1}, "reflect"); }, "reflect padding needs a non-empty dimension 1");
  t.error([] { fw::pad(fw::ones({2, 4}), {-4, -1}, "replicate"); }, "is too small for padding (-4, -1)");
}

FW_OP_TEST(unfold) {
  t.run = [](const FixCase& c) { return V{c.in[0].unfold(c.args[0].i, c.args[1].i, c.args[2].i)}; };
  t.error([] { fw::ones({2, 3}).unfold(1, 4, 1); }, "[unfold] maximum size for tensor at dimension 1 is 3 but size is 4");
  t.error([] { fw::ones({2, 3}).unfold(1, 2, 0); }, "[unfold] step is 0 but must be > 0");
  t.error([] { fw::ones({2, 3}).unfold(1, -1, 1); }, "[unfold] size is -1 but must be >= 0");
  t.error([] { fw::ones({}).unfold(0, 2, 1); }, "maximum size for tensor at dimension 0 is 1 but size is 2");
  t.error([] { fw::ones({2, 3}).unfold(2, 1, 1); }, "[unfold] Dimension out of range");
}

// ---- behaviour outside the table

TEST(Movement, UnfoldIsAView) {
  Tensor x = fw::arange(12.0).view({2, 6});
  Tensor u = x.unfold(1, 3, 2);
  EXPECT_TRUE(u.is_alias_of(x));
  EXPECT_EQ(u.sizes().vec(), (std::vector<int64_t>{2, 2, 3}));
  EXPECT_EQ(u.strides().vec(), (std::vector<int64_t>{6, 2, 1}));
  u.select(1, 1).select(1, 0).fill_(-1.0);
  EXPECT_EQ(x.index({0, 2}).item<double>(), -1.0);
  EXPECT_EQ(x.index({1, 2}).item<double>(), -1.0);
  Tensor v = x.t().unfold(0, 2, 2);  // non-contiguous input keeps its strides
  EXPECT_EQ(v.strides().vec(), (std::vector<int64_t>{2, 6, 1}));
}

TEST(Movement, CopiesDoNotAlias) {
  Tensor x = fw::arange(6.0).view({2, 3});
  for (const Tensor& y : {fw::flip(x, {}), fw::roll(x, {0}, {0}), x.repeat({1, 1}), fw::tile(x, {}),
                          fw::constant_pad_nd(x, {}), fw::pad(x, {0, 0}, "replicate")}) {
    EXPECT_FALSE(y.is_alias_of(x));
    EXPECT_TRUE(same(y, x));
  }
}

TEST(Movement, FlipLargeNonContiguous) {
  Tensor x = fw::randn({64, 33, 40}).permute({2, 0, 1});
  Tensor f = fw::flip(x, {0, 2});
  Tensor back = fw::flip(f, {2, 0});
  EXPECT_TRUE(same(back, x));
  EXPECT_EQ(f.index({0, 5, 0}).item<double>(), x.index({39, 5, 32}).item<double>());
}
