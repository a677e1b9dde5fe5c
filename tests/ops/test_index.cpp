// Op-table entries for the index family, and behaviour tests that do not fit the table: views
// from basic indexing, in-place forms, composites' errors, parallel paths against a reference.
// Composite functions ride on the primitive they lower to (see tests/fixtures/gen_index.py):
// the case-name prefix picks the public function (embedding_, one_hot_, where_, acc_).
#include <gtest/gtest.h>

#include "core/op.h"
#include "tests/op_table.h"

using fw::Tensor;
using fwtest::FixArg;
using fwtest::FixCase;
using V = std::vector<Tensor>;
namespace ix = fw::indexing;

namespace {

using fwtest::starts_with;
bool same(const Tensor& a, const Tensor& b) { return fwtest::compare(a, b, 0, 0).empty(); }

fw::Scalar scalar(const FixArg& a) { return a.scalar(); }

// Index list from the fixture spec (gen_index.py): T N E b1 b0 integers and start:stop:step.
std::vector<ix::TensorIndex> parse_spec(const std::string& spec, const V& in, size_t first) {
  std::vector<ix::TensorIndex> out;
  size_t next = first, pos = 0;
  while (pos <= spec.size()) {
    size_t end = spec.find(';', pos);
    if (end == std::string::npos) end = spec.size();
    std::string e = spec.substr(pos, end - pos);
    pos = end + 1;
    if (e == "T") out.emplace_back(in.at(next++));
    else if (e == "N") out.emplace_back(ix::None);
    else if (e == "E") out.emplace_back(ix::Ellipsis);
    else if (e == "b1" || e == "b0") out.emplace_back(e == "b1");
    else if (e.find(':') != std::string::npos) {
      std::optional<int64_t> part[3];
      size_t p = 0;
      for (int k = 0; k < 3 && p <= e.size(); k++) {
        size_t q = e.find(':', p);
        if (q == std::string::npos) q = e.size();
        if (q > p) part[k] = std::stoll(e.substr(p, q - p));
        p = q + 1;
      }
      out.emplace_back(ix::Slice(part[0], part[1], part[2]));
    } else {
      out.emplace_back(int64_t(std::stoll(e)));
    }
  }
  return out;
}

Tensor longs(std::initializer_list<int64_t> v) { return fw::tensor(std::vector<int64_t>(v)); }

}  // namespace

FW_OP_TEST(index_select) {
  t.run = [](const FixCase& c) {
    if (starts_with(c.name, "embedding")) return V{fw::embedding(c.in[0], c.in[1], c.args[0].i)};
    return V{fw::index_select(c.in[0], c.args[0].i, c.in[1])};
  };
  t.error([] { fw::index_select(fw::ones({2, 3}), 0, longs({5})); },
          "[index_select] index 5 is out of bounds for dimension 0 with size 2");
  t.error([] { fw::index_select(fw::ones({2, 3}), 1, longs({0, -1})); }, "index -1 is out of bounds for dimension 1");
  t.error([] { fw::index_select(fw::ones({2, 3}), 0, fw::zeros({1, 1}, fw::kLong)); }, "Index is supposed to be a vector");
  t.error([] { fw::index_select(fw::ones({2, 3}), 0, fw::zeros({1})); }, "Expected dtype int32 or int64 for index");
  t.error([] { fw::index_select(fw::ones({2, 3}), 2, longs({0})); }, "[index_select] Dimension out of range");
  t.error([] { fw::embedding(fw::ones({4}), longs({0})); }, "[embedding] 'weight' must be 2-D");
  t.error([] { fw::embedding(fw::ones({4, 2}), fw::zeros({1})); }, "[embedding] Expected tensor for argument #1");
  t.error([] { fw::embedding(fw::ones({4, 2}), longs({4})); }, "index 4 is out of bounds for dimension 0 with size 4");
}

FW_OP_TEST(gather) {
  t.run = [](const FixCase& c) { return V{fw::gather(c.in[0], c.args[0].i, c.in[1])}; };
  t.error([] { fw::gather(fw::ones({2, 3}), 1, fw::full({2, 2}, 7, fw::kLong)); },
          "[gather] index 7 is out of bounds for dimension 1 with size 3");
  t.error([] { fw::gather(fw::ones({2, 3}), 1, fw::full({1, 1}, -1, fw::kLong)); }, "index -1 is out of bounds");
  t.error([] { fw::gather(fw::ones({2, 3}), 1, fw::zeros({1, 1}, fw::kInt)); }, "[gather] Expected dtype int64 for index");
  t.error([] { fw::gather(fw::ones({2, 3}), 1, longs({0})); }, "Index tensor must have the same number of dimensions");
  t.error([] { fw::gather(fw::ones({2, 3}), 1, fw::zeros({3, 3}, fw::kLong)); },
          "[gather] Size does not match at dimension 0 expected index [3, 3] to be smaller than self [2, 3]");
}

FW_OP_TEST(scatter) {
  t.run = [](const FixCase& c) {
    if (starts_with(c.name, "one_hot")) return V{fw::one_hot(c.in[0], c.args[0].i)};
    if (c.args.size() == 2) return V{fw::scatter(c.in[0], c.args[0].i, c.in[1], scalar(c.args[1]))};
    return V{fw::scatter(c.in[0], c.args[0].i, c.in[1], c.in[2])};
  };
  t.error([] { fw::scatter(fw::ones({2, 3}), 1, fw::zeros({1, 1}, fw::kLong), fw::ones({1, 1}, fw::kDouble)); },
          "[scatter] Expected self.dtype to be equal to src.dtype");
  t.error([] { fw::scatter(fw::ones({2, 3}), 1, fw::full({1, 1}, 3, fw::kLong), fw::ones({1, 1})); },
          "[scatter] index 3 is out of bounds for dimension 1 with size 3");
  t.error([] { fw::scatter(fw::ones({2, 3}), 1, fw::zeros({1, 2}, fw::kLong), fw::ones({1, 1})); },
          "to be smaller size than src [1, 1]");
  t.error([] { fw::scatter(fw::ones({2, 3}), 0, fw::full({1, 1}, -3, fw::kLong), 1.0); }, "index -3 is out of bounds");
  t.error([] { fw::one_hot(fw::zeros({2})); }, "[one_hot] one_hot is only applicable to index tensor");
  t.error([] { fw::one_hot(longs({0, -2})); }, "[one_hot] Class values must be non-negative.");
  t.error([] { fw::one_hot(longs({0, 2}), 2); }, "[one_hot] Class values must be smaller than num_classes.");
  t.error([] { fw::one_hot(fw::zeros({0}, fw::kLong)); }, "Can not infer total number of classes from empty tensor.");
}

FW_OP_TEST(scatter_add) {
  t.run = [](const FixCase& c) { return V{fw::scatter_add(c.in[0], c.args[0].i, c.in[1], c.in[2])}; };
  t.error([] { fw::scatter_add(fw::ones({2, 3}), 0, fw::full({1, 1}, 2, fw::kLong), fw::ones({1, 1})); },
          "[scatter_add] index 2 is out of bounds for dimension 0 with size 2");
  t.error([] { fw::scatter_add(fw::ones({2, 3}), 0, fw::zeros({1, 1}, fw::kLong), fw::ones({1, 1}, fw::kLong)); },
          "[scatter_add] Expected self.dtype to be equal to src.dtype");
  t.error([] { fw::scatter_add(fw::ones({2, 3}), 0, fw::zeros({1}, fw::kLong), fw::ones({1, 1})); },
          "[scatter_add] Index tensor must have the same number of dimensions as self tensor");
}

FW_OP_TEST(index_add) {
  t.run = [](const FixCase& c) { return V{fw::index_add(c.in[0], c.args[0].i, c.in[1], c.in[2], scalar(c.args[1]))}; };
  t.error([] { fw::index_add(fw::ones({2, 3}), 0, longs({0, 5}), fw::ones({2, 3})); },
          "[index_add] index 5 is out of bounds for dimension 0 with size 2");
  t.error([] { fw::index_add(fw::ones({2, 3}), 0, longs({0, 0}), fw::ones({2, 3}, fw::kDouble)); },
          "[index_add] self (Float) and source (Double) must have the same scalar type");
  t.error([] { fw::index_add(fw::ones({2, 3}), 0, longs({0, 1}), fw::ones({3, 3})); },
          "Number of indices (2) should be equal to source.size(dim): (3), for dim: 0");
  t.error([] { fw::index_add(fw::ones({2, 3}), 0, longs({0, 1}), fw::ones({2, 4})); },
          "[index_add] source of shape [2, 4] must match self of shape [2, 3] apart from dimension 0");
  t.error([] { fw::index_add(fw::ones({3}), 0, fw::zeros({1, 1}, fw::kLong), fw::ones({1})); },
          "Index is supposed to be a vector");
}

FW_OP_TEST(masked_select) {
  t.run = [](const FixCase& c) { return V{fw::masked_select(c.in[0], c.in[1])}; };
  t.error([] { fw::masked_select(fw::ones({3}), longs({1, 0, 1})); }, "[masked_select] expected BoolTensor or ByteTensor");
  t.error([] { fw::masked_select(fw::ones({2, 3}), fw::ones({2}, fw::kBool)); }, "[masked_select] The size of tensor a (3)");
}

FW_OP_TEST(nonzero) {
  t.run = [](const FixCase& c) {
    if (starts_with(c.name, "where")) return fw::where(c.in[0]);
    return V{fw::nonzero(c.in[0])};
  };
  t.error([] { fw::nonzero(Tensor()); }, "[nonzero] argument #0 is an undefined tensor");
}

FW_OP_TEST(take) {
  t.run = [](const FixCase& c) { return V{fw::take(c.in[0], c.in[1])}; };
  t.error([] { fw::take(fw::ones({2, 3}), longs({0, 6})); }, "[take] out of range: tried to access index 6 on a tensor of 6 elements.");
  t.error([] { fw::take(fw::ones({2, 3}), longs({-7})); }, "tried to access index -7");
  t.error([] { fw::take(fw::ones({2, 3}), fw::zeros({1}, fw::kInt)); }, "[take] Expected a long tensor for index, but got Int");
}

FW_OP_TEST(check_targets) {
  t.run = [](const FixCase& c) { return V{fw::detail::check_targets(c.in[0], c.args[0].i, c.args[1].i)}; };
  t.error([] { fw::detail::check_targets(longs({0, 5, -1}), 5, -100); }, "[nll_loss] Target 5 is out of bounds.");
  t.error([] { fw::detail::check_targets(longs({-100, -1}), 5, -100); }, "[nll_loss] Target -1 is out of bounds.");
  t.error([] { fw::detail::check_targets(fw::zeros({2}), 5, -100); },
          "[nll_loss] expected an integer tensor of class indices as target, but got Float");
}

FW_OP_TEST(index) {
  t.run = [](const FixCase& c) { return V{c.in[0].index(parse_spec(c.args[0].s, c.in, 1))}; };
  t.error([] { fw::ones({2, 3}).index({longs({5})}); }, "[index] index 5 is out of bounds for dimension 0 with size 2");
  t.error([] { fw::ones({2, 3}).index({ix::Slice(), longs({-4})}); }, "index -4 is out of bounds for dimension 1 with size 3");
  t.error([] { fw::ones({2, 3}).index({0, 0, 0}); }, "[index] too many indices for tensor of dimension 2");
  t.error([] { fw::ones({2, 3}).index({fw::ones({3}, fw::kBool)}); },
          "The shape of the mask [3] at index 0 does not match the shape of the indexed tensor [2, 3] at index 0");
  t.error([] { fw::ones({2, 3}).index({fw::zeros({1})}); }, "tensors used as indices must be long, byte or bool tensors");
  t.error([] { fw::ones({2, 3}).index({fw::zeros({1}, fw::kInt)}); }, "tensors used as indices must be long");
  t.error([] { fw::ones({2, 3}).index({fw::zeros({1, 2}, fw::kLong), fw::zeros({3}, fw::kLong)}); },
          "shape mismatch: indexing tensors could not be broadcast together with shapes [1, 2], [3]");
  t.error([] { fw::ones({2, 3}).index({ix::Slice(0, 2, 0)}); }, "step must be greater than zero");
}

FW_OP_TEST(index_put) {
  t.run = [](const FixCase& c) {
    if (starts_with(c.name, "acc_")) {
      fw::detail::OpAttrs a;
      for (size_t k = 2; k < c.in.size(); k++) a.ints.push_back(int64_t(k - 2));
      a.flags = 1;
      return V{fw::detail::dispatch1(fw::detail::OpId::index_put, c.in, a)};
    }
    Tensor y = c.in[0].clone();
    if (c.args.size() == 2) y.index_put_(parse_spec(c.args[0].s, c.in, 1), scalar(c.args[1]));
    else y.index_put_(parse_spec(c.args[0].s, c.in, 2), c.in[1]);
    return V{y};
  };
  t.error([] { fw::zeros({2, 3}).index_put_({longs({0})}, fw::ones({3}, fw::kDouble)); },
          "[index_put] Index put requires the source and destination dtypes match, got Float for the destination and "
          "Double for the source.");
  t.error([] { fw::zeros({2, 3}).index_put_({longs({0})}, fw::ones({2})); },
          "shape mismatch: value tensor of shape [2] cannot be broadcast to indexing result of shape [1, 3]");
  t.error([] { fw::zeros({2, 3}).index_put_({ix::Slice(), longs({3})}, 1.0); },
          "[index_put] index 3 is out of bounds for dimension 1 with size 3");
  t.error([] { fw::zeros({2, 3}).index_put_({0}, fw::ones({4})); }, "[copy_] The size of tensor a (3) must match the size of tensor b (4)");
}

// ---- behaviour outside the table

TEST(Indexing, BasicEntriesGiveViews) {
  Tensor x = fw::arange(24).view({2, 3, 4});
  Tensor v = x.index({ix::Slice(), 1, ix::Slice(1, ix::None, 2)});
  EXPECT_TRUE(v.is_alias_of(x));
  EXPECT_EQ(v.sizes().vec(), (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(v.strides().vec(), (std::vector<int64_t>{12, 2}));
  v.fill_(-1);
  EXPECT_EQ(x.index({1, 1, 3}).item<int64_t>(), -1);
  EXPECT_EQ(x.index({1, 1, 2}).item<int64_t>(), 18);
  Tensor e = x.index({"...", ix::None, -1});
  EXPECT_EQ(e.sizes().vec(), (std::vector<int64_t>{2, 3, 1}));
  EXPECT_TRUE(e.is_alias_of(x));
  Tensor whole = x.index({ix::Ellipsis});
  EXPECT_TRUE(whole.is_alias_of(x));
  EXPECT_FALSE(whole.is_same(x));
  EXPECT_THROW(ix::TensorIndex("::"), fw::Error);
}

TEST(Indexing, TensorEntriesCopy) {
  Tensor x = fw::arange(6).view({2, 3});
  Tensor r = x[longs({1, 0})];
  EXPECT_FALSE(r.is_alias_of(x));
  EXPECT_TRUE(same(r, longs({3, 4, 5, 0, 1, 2}).view({2, 3})));
  Tensor m = x[x.gt(2)];
  EXPECT_TRUE(same(m, longs({3, 4, 5})));
  // A 0-dim integer tensor selects, giving a view like an integer.
  Tensor s = x.index({fw::scalar_tensor(1, fw::kInt)});
  EXPECT_TRUE(s.is_alias_of(x));
}

TEST(Indexing, IndexPutWritesThroughViews) {
  Tensor x = fw::zeros({3, 4});
  Tensor col = x.index({ix::Slice(), 1});
  col.index_put_({longs({0, 2})}, 5.0);
  EXPECT_EQ(x.index({2, 1}).item<double>(), 5.0);
  x.index_put_({x.gt(1)}, fw::full({}, 2.0));
  EXPECT_EQ(x.sum().item<double>(), 4.0);
  x.index_put_({ix::Ellipsis, 3}, fw::tensor(std::vector<float>{1.0f, 2.0f, 3.0f}));
  EXPECT_EQ(x.index({2, 3}).item<double>(), 3.0);
  uint32_t v = x._version();
  x.index_put_({longs({0})}, 1.0);
  EXPECT_GT(x._version(), v);
}

TEST(Indexing, InPlaceFormsOnNonContiguousSelf) {
  Tensor base = fw::zeros({4, 3});
  Tensor t = base.t();  // [3, 4], non-contiguous
  t.scatter_(1, longs({0, 3, 1}).view({3, 1}), 1.0);
  EXPECT_EQ(base.sum().item<double>(), 3.0);
  EXPECT_EQ(base.index({3, 1}).item<double>(), 1.0);
  t.scatter_add_(1, longs({0, 0}).view({1, 2}), fw::full({1, 2}, 2.0f));
  EXPECT_EQ(base.index({0, 0}).item<double>(), 5.0);
  t.index_add_(0, longs({2, 2}), fw::ones({2, 4}), 0.5);
  EXPECT_EQ(base.index({ix::Slice(), 2}).sum().item<double>(), 5.0);
  t.scatter_(0, fw::zeros({1, 1}, fw::kLong), fw::full({1, 1}, 9.0f));
  EXPECT_EQ(base.index({0, 0}).item<double>(), 9.0);
}

TEST(Indexing, FailedInPlaceLeavesSelfUnchanged) {
  Tensor x = fw::zeros({3});
  EXPECT_THROW(x.index_add_(0, longs({0, 3}), fw::ones({2})), fw::Error);
  EXPECT_THROW(x.scatter_(0, longs({1, 7}), fw::ones({2})), fw::Error);
  EXPECT_THROW(x.index_put_({longs({1, -4})}, 1.0), fw::Error);
  EXPECT_EQ(x.abs().sum().item<double>(), 0.0);
}

// Large enough to take the parallel path of the strided loops; checked against plain loops.
TEST(Indexing, ParallelPathsMatchReference) {
  fw::manual_seed(7);
  Tensor x = fw::randn({300, 257});
  Tensor idx = fw::randint(0, 300, {500});
  Tensor sel = x.index_select(0, idx);
  Tensor adv = x.index({idx});
  auto xa = x.accessor<float, 2>();
  auto ia = idx.accessor<int64_t, 1>();
  auto sa = sel.accessor<float, 2>();
  bool ok = true;
  for (int64_t i = 0; i < 500; i++)
    for (int64_t j = 0; j < 257; j++) ok = ok && sa[i][j] == xa[ia[i]][j];
  EXPECT_TRUE(ok);
  EXPECT_TRUE(same(sel, adv));
  Tensor gi = fw::randint(0, 257, {300, 400});
  Tensor g = x.gather(1, gi);
  auto ga = g.accessor<float, 2>();
  auto gia = gi.accessor<int64_t, 2>();
  for (int64_t i = 0; i < 300; i++)
    for (int64_t j = 0; j < 400; j++) ok = ok && ga[i][j] == xa[i][gia[i][j]];
  EXPECT_TRUE(ok);
  Tensor back = fw::zeros({300, 257}).scatter_add(1, gi, fw::ones({300, 400}));
  EXPECT_EQ(back.sum().item<double>(), 300.0 * 400.0);
}

TEST(Indexing, WhereReturnsOneTensorPerDim) {
  auto w = fw::where(fw::eye(2).gt(0));
  ASSERT_EQ(w.size(), 2u);
  EXPECT_TRUE(same(w[0], longs({0, 1})));
  EXPECT_TRUE(same(w[1], longs({0, 1})));
}
