// Autograd of the index and movement ops: gradcheck and gradgradcheck of every rule (duplicate
// indices where the op accumulates, negative dims, non-contiguous inputs), the composites that
// lower to them, and second derivatives of sort/topk (their vjp is a scatter).
#include <gtest/gtest.h>

#include "fw/indexing.h"
#include "tests/fixture.h"

using fw::Tensor;
using fw::autograd::variable_list;
using fw::indexing::Slice;

namespace {

Tensor leaf(std::vector<int64_t> shape, uint64_t seed = 7) {
  fw::manual_seed(seed);
  return (fw::rand(shape, fw::kDouble) * 4 - 2).requires_grad_(true);
}
Tensor longs(std::vector<int64_t> v, std::vector<int64_t> shape) { return fw::tensor(v).reshape(shape); }

using Fn = std::function<variable_list(const variable_list&)>;

void check(const std::string& name, const Fn& fn, const variable_list& inputs) {
  try {
    EXPECT_TRUE(fw::autograd::gradcheck(fn, inputs)) << name;
    EXPECT_TRUE(fw::autograd::gradgradcheck(fn, inputs)) << name;
  } catch (const std::exception& e) {
    ADD_FAILURE() << name << ": " << e.what();
  }
}
void check1(const std::string& name, std::function<Tensor(const Tensor&)> f, const Tensor& x) {
  check(name, [f](const variable_list& v) { return variable_list{f(v[0])}; }, {x});
}
void check2(const std::string& name, std::function<Tensor(const Tensor&, const Tensor&)> f, const Tensor& x,
            const Tensor& y) {
  check(name, [f](const variable_list& v) { return variable_list{f(v[0], v[1])}; }, {x, y});
}

}  // namespace

TEST(AutogradIndex, IndexSelectAndIndexAdd) {
  Tensor x = leaf({4, 3});
  Tensor dup = longs({2, 0, 2}, {3});
  check1("index_select_0", [dup](const Tensor& t) { return t.index_select(0, dup); }, x);
  check1("index_select_neg_T", [dup](const Tensor& t) { return t.t().index_select(-1, dup); }, x);
  check1("index_select_int32", [dup](const Tensor& t) { return t.index_select(1, dup.to(fw::kInt)); }, x);
  check1("index_select_scalar_idx", [](const Tensor& t) { return t.index_select(0, longs({1}, {})); }, x);
  Tensor src = leaf({4, 3}, 9);
  check2("index_add_dup_alpha", [dup](const Tensor& a, const Tensor& b) {
    return a.index_add(-1, dup, b.narrow(1, 0, 3).slice(0, 0, 4), 2.5);
  }, x, src);
  check2("index_add_0_T", [dup](const Tensor& a, const Tensor& b) { return a.index_add(0, dup, b.t()); }, x,
         leaf({3, 3}, 11));
}

TEST(AutogradIndex, GatherScatter) {
  Tensor x = leaf({3, 4});
  Tensor gi = longs({0, 2, 1, 0, 2, 2, 0, 1}, {2, 4});
  check1("gather_0_dup", [gi](const Tensor& t) { return t.gather(0, gi); }, x);
  check1("gather_neg_T", [gi](const Tensor& t) { return t.t().gather(-1, gi.t().narrow(1, 0, 2)); }, x);
  // scatter: no two writes to one position (the result would not be smooth in src).
  Tensor si = longs({0, 2, 1, 2, 0, 0}, {2, 3});
  Tensor src = leaf({2, 5}, 3);
  check2("scatter_src", [si](const Tensor& a, const Tensor& b) { return a.scatter(0, si, b); }, x, src);
  Tensor si2 = longs({0, 3, 1, 2, 0, 3}, {2, 3});
  check2("scatter_src_T", [si2](const Tensor& a, const Tensor& b) { return a.t().scatter(-2, si2, b.t()); }, x,
         leaf({3, 5}, 4));
  check1("scatter_value", [si](const Tensor& t) { return t.scatter(0, si, 1.5); }, x);
  Tensor ai = longs({0, 0, 2, 1, 1, 1}, {2, 3});
  check2("scatter_add_dup", [ai](const Tensor& a, const Tensor& b) { return a.scatter_add(1, ai, b); }, x,
         leaf({2, 4}, 5));
  check2("scatter_add_neg_T", [ai](const Tensor& a, const Tensor& b) { return a.t().scatter_add(-1, ai, b.t()); },
         x.detach().t().contiguous().requires_grad_(true), leaf({4, 3}, 6));
  check1("gather_0dim", [](const Tensor& t) { return t.gather(0, longs({0}, {})); },
         leaf({}, 8));
}

TEST(AutogradIndex, MaskedSelectAndTake) {
  Tensor x = leaf({3, 4});
  Tensor mask = fw::tensor(std::vector<bool>{true, false, true, true});
  check1("masked_select_bcast_mask", [mask](const Tensor& t) { return t.masked_select(mask); }, x);
  Tensor m2 = fw::tensor(std::vector<bool>{true, false, false, true, true, false}).reshape({2, 3});
  check1("masked_select_bcast_self_T", [m2](const Tensor& t) { return t.t().masked_select(m2.unsqueeze(1)); },
         leaf({3, 2}));
  Tensor ti = longs({0, -1, 5, 0, 11, -12}, {2, 3});
  check1("take_dup_neg", [ti](const Tensor& t) { return t.take(ti); }, x);
  check1("take_T", [ti](const Tensor& t) { return t.t().take(ti); }, x);
}

TEST(AutogradIndex, AdvancedIndexing) {
  Tensor x = leaf({3, 4, 2});
  Tensor i = longs({2, 0, 2}, {3}), j = longs({1, -1, 3}, {3});
  check1("index_one", [i](const Tensor& t) { return t.index({i}); }, x);
  check1("index_slice_tensor", [j](const Tensor& t) { return t.index({Slice(), j}); }, x);
  check1("index_pair_bcast", [i, j](const Tensor& t) { return t.index({i.unsqueeze(1), j}); }, x);
  check1("index_non_adjacent", [i](const Tensor& t) { return t.index({i, Slice(), longs({1, 0, 1}, {3})}); }, x);
  check1("index_mask_T", [](const Tensor& t) {
    return t.transpose(0, 1).index({fw::tensor(std::vector<bool>{true, false, true, true})});
  }, x);
  check1("index_int_then_tensor", [j](const Tensor& t) { return t.index({1, j}); }, x);
  check1("fw_index", [i](const Tensor& t) { return fw::index(t, {std::nullopt, longs({2, 0, 3}, {3})}); }, x);
}

TEST(AutogradIndex, IndexPut) {
  Tensor x = leaf({4, 3});
  Tensor dup = longs({2, 0, 2, 1}, {4}), uniq = longs({3, 0}, {2});
  check2("index_put_acc_dup", [dup](const Tensor& a, const Tensor& v) {
    return fw::index_put(a, {dup}, v, true);
  }, x, leaf({4, 3}, 2));
  check2("index_put_acc_bcast", [dup](const Tensor& a, const Tensor& v) {
    return fw::index_put(a, {std::nullopt, longs({2, 0, 2, 1}, {4})}, v, true);
  }, x, leaf({4, 1}, 3));
  check2("index_put_assign", [uniq](const Tensor& a, const Tensor& v) { return fw::index_put(a, {uniq}, v); }, x,
         leaf({3}, 4));
  check2("index_put_assign_T", [uniq](const Tensor& a, const Tensor& v) {
    return fw::index_put(a.t(), {std::nullopt, uniq}, v.t());
  }, x, leaf({2, 3}, 5));
  // Tensor::index_put_ on a non-leaf (the in-place path), with a leading full slice.
  check2("index_put_inplace", [uniq](const Tensor& a, const Tensor& v) {
    Tensor y = a * 1;
    y.index_put_({Slice(), longs({2, 0}, {2})}, v);
    return y;
  }, x, leaf({4, 2}, 6));
  check2("index_put_mask", [](const Tensor& a, const Tensor& v) {
    Tensor y = a.clone();
    y.index_put_({fw::tensor(std::vector<bool>{false, true, true, false})}, v);
    return y;
  }, x, leaf({3}, 7));
}

TEST(AutogradIndex, Movement) {
  Tensor x = leaf({3, 4});
  check1("flip", [](const Tensor& t) { return t.flip({0, -1}); }, x);
  check1("flip_T", [](const Tensor& t) { return t.t().flip({1}); }, x);
  check1("roll", [](const Tensor& t) { return t.roll({1, -3}, {0, -1}); }, x);
  check1("roll_flat_T", [](const Tensor& t) { return t.t().roll({5}); }, x);
  check1("repeat", [](const Tensor& t) { return t.repeat({2, 1, 3}); }, x);
  check1("repeat_T", [](const Tensor& t) { return t.t().repeat({1, 2}); }, x);
  check1("tile", [](const Tensor& t) { return fw::tile(t, {2}); }, x);
  check1("pad_constant", [](const Tensor& t) { return fw::constant_pad_nd(t, {1, 2, 0, 1}, 0.5); }, x);
  check1("pad_crop", [](const Tensor& t) { return fw::constant_pad_nd(t, {-1, 2, 1, -2}); }, x);
  check1("pad_crop_T", [](const Tensor& t) { return fw::constant_pad_nd(t.t(), {-2, 1}); }, x);
  check1("unfold_overlap", [](const Tensor& t) { return t.unfold(1, 3, 1); }, x);
  check1("unfold_gap_neg", [](const Tensor& t) { return t.unfold(-2, 1, 2); }, x);
  check1("unfold_T", [](const Tensor& t) { return t.t().unfold(0, 2, 1); }, x);
  check1("unfold_0dim", [](const Tensor& t) { return t.unfold(0, 1, 1); }, leaf({}));
}

TEST(AutogradIndex, Composites) {
  Tensor w = leaf({5, 3});
  Tensor idx = longs({4, 0, 4, 2, 1, 4}, {2, 3});
  check1("embedding", [idx](const Tensor& t) { return fw::embedding(t, idx); }, w);
  check1("embedding_1d", [idx](const Tensor& t) { return fw::embedding(t.t().t(), idx.reshape({-1})); }, w);
  // padding_idx: the padded row gets no gradient (not the true derivative, so no gradcheck).
  Tensor w2 = w.detach().clone().requires_grad_(true);
  fw::embedding(w2, idx, 4).sum().backward();
  FW_EXPECT_CLOSE(w2.grad().select(0, 4), fw::zeros({3}, fw::kDouble));
  FW_EXPECT_CLOSE(w2.grad().select(0, 0), fw::ones({3}, fw::kDouble));
  Tensor x = leaf({1, 2, 3, 4});
  for (std::string mode : {"reflect", "replicate", "circular"}) {
    check1("pad_" + mode, [mode](const Tensor& t) { return fw::pad(t, {2, 1, 1, 2}, mode); }, x);
    check1("pad_" + mode + "_T", [mode](const Tensor& t) { return fw::pad(t.transpose(2, 3), {1, 0, 0, 1}, mode); }, x);
  }
  check1("pad_circular_crop", [](const Tensor& t) { return fw::pad(t, {-1, 2, 1, -1}, "circular"); }, x);
  check1("pad_replicate_wide", [](const Tensor& t) { return fw::pad(t, {4, 5}, "replicate"); }, leaf({1, 2, 2}));
}

TEST(AutogradIndex, IndexOutputsHaveNoGradient) {
  Tensor x = leaf({2, 3});
  EXPECT_FALSE(fw::nonzero(x).requires_grad());
  EXPECT_FALSE(std::get<1>(x.sort(1)).requires_grad());
  EXPECT_FALSE(x.argmax().requires_grad());
  Tensor y = x.gather(1, longs({0, 2, 1, 1}, {2, 2}));
  EXPECT_TRUE(y.requires_grad());
}

TEST(AutogradIndex, SortTopkSecondOrder) {
  Tensor x = leaf({3, 4}, 5);
  check1("sort", [](const Tensor& t) { return std::get<0>(t.sort(1, true)); }, x);
  check1("sort_0", [](const Tensor& t) { return std::get<0>(t.sort(0)); }, x);
  check1("sort_T", [](const Tensor& t) { return std::get<0>(t.t().sort(-1)); }, x);
  check1("topk", [](const Tensor& t) { return std::get<0>(t.topk(2, 1)); }, x);
  check1("topk_0_smallest", [](const Tensor& t) { return std::get<0>(t.topk(2, 0, false)); }, x);
}

TEST(AutogradIndex, EmptyAndZeroDimGradients) {
  auto grad_of = [](const Tensor& x, const std::function<Tensor(const Tensor&)>& f) {
    Tensor y = x.detach().clone().requires_grad_(true);
    f(y).sum().backward();
    return y.grad();
  };
  Tensor x = leaf({3, 4}), s = leaf({});
  Tensor empty_idx = fw::zeros({0}, fw::kLong);
  FW_EXPECT_CLOSE(grad_of(x, [&](const Tensor& t) { return t.index_select(1, empty_idx); }), fw::zeros({3, 4}, fw::kDouble));
  FW_EXPECT_CLOSE(grad_of(x, [&](const Tensor& t) { return t.gather(0, fw::zeros({0, 4}, fw::kLong)); }),
                  fw::zeros({3, 4}, fw::kDouble));
  FW_EXPECT_CLOSE(grad_of(x, [&](const Tensor& t) { return t.scatter(0, fw::zeros({0, 4}, fw::kLong), 2.0); }),
                  fw::ones({3, 4}, fw::kDouble));
  FW_EXPECT_CLOSE(grad_of(x, [&](const Tensor& t) { return t.take(empty_idx); }), fw::zeros({3, 4}, fw::kDouble));
  FW_EXPECT_CLOSE(grad_of(x, [&](const Tensor& t) { return fw::constant_pad_nd(t, {-4, 0}); }),
                  fw::zeros({3, 4}, fw::kDouble));
  FW_EXPECT_CLOSE(grad_of(x, [&](const Tensor& t) { return t.repeat({0, 2}); }), fw::zeros({3, 4}, fw::kDouble));
  FW_EXPECT_CLOSE(grad_of(x, [&](const Tensor& t) { return t.unfold(1, 0, 1); }), fw::zeros({3, 4}, fw::kDouble));
  FW_EXPECT_CLOSE(grad_of(x, [&](const Tensor& t) { return t.masked_select(fw::zeros({4}, fw::kBool)); }),
                  fw::zeros({3, 4}, fw::kDouble));
  Tensor one = fw::ones({}, fw::kDouble);
  FW_EXPECT_CLOSE(grad_of(s, [&](const Tensor& t) { return t.index_select(0, longs({0, 0}, {2})); }), one);
  FW_EXPECT_CLOSE(grad_of(s, [&](const Tensor& t) { return t.take(longs({0, -1, 0}, {3})); }), one * 3);
  FW_EXPECT_CLOSE(grad_of(s, [&](const Tensor& t) { return t.repeat({2, 3}); }), one * 6);
  FW_EXPECT_CLOSE(grad_of(s, [&](const Tensor& t) { return t.flip({0}).roll({1}); }), one);
  FW_EXPECT_CLOSE(grad_of(s, [&](const Tensor& t) { return t.masked_select(fw::ones({}, fw::kBool)); }), one);
  FW_EXPECT_CLOSE(grad_of(s, [&](const Tensor& t) { return t.masked_select(fw::ones({2}, fw::kBool)); }), one * 2);
  FW_EXPECT_CLOSE(grad_of(s, [&](const Tensor& t) { return t.unfold(0, 0, 1); }), fw::zeros({}, fw::kDouble));
  // index_add / scatter_add into a 0-dim self.
  Tensor v = leaf({1}, 4);
  check2("index_add_0dim", [](const Tensor& a, const Tensor& b) { return a.index_add(0, longs({0}, {1}), b, 3); }, s,
         v);
  check2("scatter_add_0dim", [](const Tensor& a, const Tensor& b) { return a.scatter_add(0, longs({0}, {}), b); }, s,
         leaf({}, 5));
}
