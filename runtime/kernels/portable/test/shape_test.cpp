//===- shape_test.cpp - Shape and index kernels ---------------------------===//
#include "helpers.h"

using namespace etllm::rt;
using namespace etllm::rt::testing;

namespace {

std::vector<double> iota(int n) {
  std::vector<double> v(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i)
    v[size_t(i)] = i;
  return v;
}

TEST(Transpose, SwapsDims) {
  auto x = makeTensor(DType::F32, {2, 3}, iota(6));
  OwnedTensor y(DType::F32, {3, 2});
  ASSERT_OK(run(OpId::Transpose, {x}, {y}, {0, -1}));
  EXPECT_SHAPE(*y, 3, 2);
  EXPECT_VALUES(*y, (std::vector<double>{0, 3, 1, 4, 2, 5}), 0);
  EXPECT_ERROR(run(OpId::Transpose, {x}, {y}, {0, 2}), "out of range");
}

TEST(Transpose, EveryDTypeIsMovedAsBytes) {
  for (DType dt : {DType::F32, DType::F16, DType::BF16, DType::I64, DType::I32,
                   DType::I8, DType::U8, DType::Bool}) {
    auto x = makeTensor(dt, {2, 2}, {1, 0, 1, 1});
    OwnedTensor y(dt, {2, 2});
    ASSERT_OK(run(OpId::Transpose, {x}, {y}, {1, 0}));
    SCOPED_TRACE(dtypeName(dt));
    EXPECT_VALUES(*y, (std::vector<double>{1, 1, 0, 1}), 0);
  }
  QuantInfo q;
  q.bits = 8;
  q.groupSize = 2;
  auto w = makeQWeight(2, 2, q, {1, 2, 3, 4}, {1, 1});
  OwnedTensor wy(DType::QWeight, {2, 2}, 0, q);
  EXPECT_ERROR(run(OpId::Transpose, {w}, {wy}, {1, 0}),
               "unsupported dtype qweight");
}

TEST(Permute, ReordersDims) {
  auto x = makeTensor(DType::I32, {2, 3, 2}, iota(12));
  OwnedTensor y(DType::I32, {0}, 12 * 4);
  ASSERT_OK(run(OpId::Permute, {x}, {y}, {2, 0, 1}));
  EXPECT_SHAPE(*y, 2, 2, 3);
  EXPECT_VALUES(*y, (std::vector<double>{0, 2, 4, 6, 8, 10, 1, 3, 5, 7, 9, 11}),
                0);
  EXPECT_ERROR(run(OpId::Permute, {x}, {y}, {0, 0, 1}), "appears twice");
  EXPECT_ERROR(run(OpId::Permute, {x}, {y}, {0, 1}), "expected 3");
  OwnedTensor wrong(DType::I64, {0}, 12 * 8);
  EXPECT_ERROR(run(OpId::Permute, {x}, {wrong}, {0, 1, 2}), "i32 -> i64");
}

TEST(Reshape, InfersAndCopies) {
  auto x = makeTensor(DType::F32, {2, 3}, iota(6));
  OwnedTensor y(DType::F32, {0}, 6 * 4);
  ASSERT_OK(run(OpId::Reshape, {x}, {y}, {3, -1}));
  EXPECT_SHAPE(*y, 3, 2);
  EXPECT_VALUES(*y, iota(6), 0);
  ASSERT_OK(run(OpId::Reshape, {x}, {y}, {-1}));
  EXPECT_SHAPE(*y, 6);
  EXPECT_ERROR(run(OpId::Reshape, {x}, {y}, {-1, -1}), "more than one -1");
  EXPECT_ERROR(run(OpId::Reshape, {x}, {y}, {4, -1}), "cannot infer");
  EXPECT_ERROR(run(OpId::Reshape, {x}, {y}, {4, 2}), "cannot view");
  EXPECT_ERROR(run(OpId::Reshape, {x}, {y}, {3, -2}), "invalid target");
}

TEST(Reshape, AliasedOutputOnlySetsTheShape) {
  auto x = makeTensor(DType::F32, {2, 3}, iota(6));
  Tensor view = *x; // shares the storage
  view.rank = 1;
  view.sizes[0] = 0;
  ASSERT_OK(run(OpId::Reshape, {x}, {&view}, {1, 6}));
  EXPECT_EQ(view.data, x->data);
  EXPECT_SHAPE(view, 1, 6);
  EXPECT_VALUES(view, iota(6), 0);
  EXPECT_SHAPE(*x, 2, 3); // the input keeps its own shape
}

TEST(Unsqueeze, AliasAndCopy) {
  auto x = makeTensor(DType::BF16, {2, 3}, iota(6));
  OwnedTensor y(DType::BF16, {0}, 6 * 2);
  ASSERT_OK(run(OpId::Unsqueeze, {x}, {y}, {-1}));
  EXPECT_SHAPE(*y, 2, 3, 1);
  EXPECT_VALUES(*y, iota(6), 0);
  ASSERT_OK(run(OpId::Unsqueeze, {x}, {y}, {0}));
  EXPECT_SHAPE(*y, 1, 2, 3);
  Tensor view = *x;
  ASSERT_OK(run(OpId::Unsqueeze, {x}, {&view}, {1}));
  EXPECT_SHAPE(view, 2, 1, 3);
  EXPECT_EQ(view.data, x->data);
  EXPECT_ERROR(run(OpId::Unsqueeze, {x}, {y}, {4}), "out of range");
}

TEST(Squeeze, AliasAndCopy) {
  auto x = makeTensor(DType::I64, {2, 1, 3}, iota(6));
  OwnedTensor y(DType::I64, {0}, 6 * 8);
  ASSERT_OK(run(OpId::Squeeze, {x}, {y}, {1}));
  EXPECT_SHAPE(*y, 2, 3);
  EXPECT_VALUES(*y, iota(6), 0);
  ASSERT_OK(run(OpId::Squeeze, {x}, {y}, {0})); // size 2: a no-op
  EXPECT_SHAPE(*y, 2, 1, 3);
  Tensor view = *x;
  ASSERT_OK(run(OpId::Squeeze, {x}, {&view}, {-2}));
  EXPECT_SHAPE(view, 2, 3);
  EXPECT_ERROR(run(OpId::Squeeze, {x}, {y}, {3}), "out of range");
}

TEST(Expand, BroadcastsAndAddsLeadingDims) {
  auto x = makeTensor(DType::F32, {2, 1}, {1, 2});
  OwnedTensor y(DType::F32, {0}, 64);
  ASSERT_OK(run(OpId::Expand, {x}, {y}, {2, -1, 3}));
  EXPECT_SHAPE(*y, 2, 2, 3);
  EXPECT_VALUES(*y, (std::vector<double>{1, 1, 1, 2, 2, 2, 1, 1, 1, 2, 2, 2}),
                0);
  EXPECT_ERROR(run(OpId::Expand, {x}, {y}, {3, 3}), "cannot expand");
  EXPECT_ERROR(run(OpId::Expand, {x}, {y}, {-1, 2, 3}), "explicit size");
  EXPECT_ERROR(run(OpId::Expand, {x}, {y}, {3}), "invalid");
  OwnedTensor small(DType::F32, {0}, 8);
  EXPECT_ERROR(run(OpId::Expand, {x}, {small}, {2, 3}), "planned");
}

TEST(Slice, PyTorchClamping) {
  auto x = makeTensor(DType::F32, {2, 5}, iota(10));
  OwnedTensor y(DType::F32, {0}, 64);
  ASSERT_OK(run(OpId::Slice, {x}, {y}, {1, 1, 4, 1}));
  EXPECT_SHAPE(*y, 2, 3);
  EXPECT_VALUES(*y, (std::vector<double>{1, 2, 3, 6, 7, 8}), 0);
  ASSERT_OK(run(OpId::Slice, {x}, {y}, {1, -1, INT64_MAX, 1}));
  EXPECT_SHAPE(*y, 2, 1);
  EXPECT_VALUES(*y, (std::vector<double>{4, 9}), 0);
  ASSERT_OK(run(OpId::Slice, {x}, {y}, {-1, 0, INT64_MAX, 2}));
  EXPECT_VALUES(*y, (std::vector<double>{0, 2, 4, 5, 7, 9}), 0);
  ASSERT_OK(run(OpId::Slice, {x}, {y}, {0, -100, 1, 1}));
  EXPECT_SHAPE(*y, 1, 5);
  EXPECT_VALUES(*y, iota(5), 0);
  ASSERT_OK(run(OpId::Slice, {x}, {y}, {1, 4, 2, 1}));
  EXPECT_SHAPE(*y, 2, 0);
  ASSERT_OK(run(OpId::Slice, {x}, {y}, {1, 1, 5, INT64_MAX}));
  EXPECT_VALUES(*y, (std::vector<double>{1, 6}), 0);
  EXPECT_ERROR(run(OpId::Slice, {x}, {y}, {1, 0, 5, 0}), "step");
  EXPECT_ERROR(run(OpId::Slice, {x}, {y}, {2, 0, 5, 1}), "out of range");
}

TEST(Cat, Variadic) {
  auto a = makeTensor(DType::I8, {2, 1}, {1, 2});
  auto b = makeTensor(DType::I8, {2, 2}, {3, 4, 5, 6});
  auto c = makeTensor(DType::I8, {2, 0}, {});
  OwnedTensor y(DType::I8, {0}, 64);
  ASSERT_OK(run(OpId::Cat, {a, b, c, a}, {y}, {-1}));
  EXPECT_SHAPE(*y, 2, 4);
  EXPECT_VALUES(*y, (std::vector<double>{1, 3, 4, 1, 2, 5, 6, 2}), 0);
  ASSERT_OK(run(OpId::Cat, {b, b}, {y}, {0}));
  EXPECT_SHAPE(*y, 4, 2);
  EXPECT_VALUES(*y, (std::vector<double>{3, 4, 5, 6, 3, 4, 5, 6}), 0);
  EXPECT_ERROR(run(OpId::Cat, {a, b}, {y}, {0}), "does not match");
  auto f = makeTensor(DType::F32, {2, 1}, {});
  EXPECT_ERROR(run(OpId::Cat, {a, f}, {y}, {1}), "does not match");
}

TEST(Split, IntoSizes) {
  auto x = makeTensor(DType::F16, {2, 4}, iota(8));
  OwnedTensor p(DType::F16, {0}, 64), q(DType::F16, {0}, 64);
  ASSERT_OK(run(OpId::Split, {x}, {p, q}, {1, 1, 3}));
  EXPECT_SHAPE(*p, 2, 1);
  EXPECT_SHAPE(*q, 2, 3);
  EXPECT_VALUES(*p, (std::vector<double>{0, 4}), 0);
  EXPECT_VALUES(*q, (std::vector<double>{1, 2, 3, 5, 6, 7}), 0);
  EXPECT_ERROR(run(OpId::Split, {x}, {p, q}, {1, 1, 2}), "add up");
  EXPECT_ERROR(run(OpId::Split, {x}, {p, q}, {1, 4}), "1 sizes for 2");
  EXPECT_ERROR(run(OpId::Split, {x}, {p, q}, {1, -1, 5}), "add up");
}

TEST(IndexSelect, AlongDims) {
  auto x = makeTensor(DType::F32, {3, 2}, iota(6));
  auto i = makeTensor(DType::I64, {2}, {2, 0});
  OwnedTensor y(DType::F32, {0}, 64);
  ASSERT_OK(run(OpId::IndexSelect, {x, i}, {y}, {0}));
  EXPECT_SHAPE(*y, 2, 2);
  EXPECT_VALUES(*y, (std::vector<double>{4, 5, 0, 1}), 0);
  auto j = makeTensor(DType::I32, {3}, {1, 1, 0});
  ASSERT_OK(run(OpId::IndexSelect, {x, j}, {y}, {1}));
  EXPECT_SHAPE(*y, 3, 3);
  EXPECT_VALUES(*y, (std::vector<double>{1, 1, 0, 3, 3, 2, 5, 5, 4}), 0);
  auto bad = makeTensor(DType::I64, {1}, {3});
  EXPECT_ERROR(run(OpId::IndexSelect, {x, bad}, {y}, {0}), "out of range");
  auto twoD = makeTensor(DType::I64, {1, 1}, {0});
  EXPECT_ERROR(run(OpId::IndexSelect, {x, twoD}, {y}, {0}), "1-D");
}

TEST(Gather, TorchSemantics) {
  auto x = makeTensor(DType::F32, {2, 3}, iota(6));
  auto i = makeTensor(DType::I64, {2, 2}, {2, 0, 1, 1});
  OwnedTensor y(DType::F32, {0}, 64);
  ASSERT_OK(run(OpId::Gather, {x, i}, {y}, {1}));
  EXPECT_SHAPE(*y, 2, 2);
  EXPECT_VALUES(*y, (std::vector<double>{2, 0, 4, 4}), 0);
  auto k = makeTensor(DType::I64, {1, 3}, {1, 0, 1});
  ASSERT_OK(run(OpId::Gather, {x, k}, {y}, {0}));
  EXPECT_VALUES(*y, (std::vector<double>{3, 1, 5}), 0);
  auto bad = makeTensor(DType::I64, {1, 1}, {3});
  EXPECT_ERROR(run(OpId::Gather, {x, bad}, {y}, {1}), "out of range");
  auto big = makeTensor(DType::I64, {3, 1}, {0, 0, 0});
  EXPECT_ERROR(run(OpId::Gather, {x, big}, {y}, {1}), "larger");
  auto r1 = makeTensor(DType::I64, {2}, {0, 0});
  EXPECT_ERROR(run(OpId::Gather, {x, r1}, {y}, {1}), "rank");
}

TEST(IndexCopy, ReplacesSlices) {
  auto x = makeTensor(DType::F32, {3, 2}, iota(6));
  auto i = makeTensor(DType::I64, {2}, {2, 0});
  auto src = makeTensor(DType::F32, {2, 2}, {10, 11, 12, 13});
  OwnedTensor y(DType::F32, {3, 2});
  ASSERT_OK(run(OpId::IndexCopy, {x, i, src}, {y}, {0}));
  EXPECT_VALUES(*y, (std::vector<double>{12, 13, 2, 3, 10, 11}), 0);
  EXPECT_VALUES(*x, iota(6), 0); // input untouched
  auto bad = makeTensor(DType::I64, {2}, {2, 3});
  EXPECT_ERROR(run(OpId::IndexCopy, {x, bad, src}, {y}, {0}), "out of range");
  auto neg = makeTensor(DType::I64, {2}, {-1, 0});
  EXPECT_ERROR(run(OpId::IndexCopy, {x, neg, src}, {y}, {0}), "out of range");
  auto src3 = makeTensor(DType::F32, {2, 3}, {});
  EXPECT_ERROR(run(OpId::IndexCopy, {x, i, src3}, {y}, {0}), "source");
}

TEST(IndexPut, AccumulateAndNegative) {
  auto x = makeTensor(DType::I64, {2, 3}, iota(6));
  auto i = makeTensor(DType::I64, {3}, {-1, 0, 2});
  auto v = makeTensor(DType::I64, {2, 3}, {10, 20, 30, 40, 50, 60});
  OwnedTensor y(DType::I64, {2, 3});
  ASSERT_OK(run(OpId::IndexPut, {x, i, v}, {y}, {1, 0}));
  EXPECT_VALUES(*y, (std::vector<double>{20, 1, 30, 50, 4, 60}), 0);
  // Accumulate: duplicates add up (-1 and 2 are the same column).
  ASSERT_OK(run(OpId::IndexPut, {x, i, v}, {y}, {1, 1}));
  EXPECT_VALUES(
      *y, (std::vector<double>{20, 1, 2 + 10 + 30, 53, 4, 5 + 40 + 60}), 0);
  auto fx = makeTensor(DType::F16, {2}, {1, 2});
  auto fi = makeTensor(DType::I32, {1}, {1});
  auto fv = makeTensor(DType::F16, {1}, {0.5});
  OwnedTensor fy(DType::F16, {2});
  ASSERT_OK(run(OpId::IndexPut, {fx, fi, fv}, {fy}, {0, 1}));
  EXPECT_VALUES(*fy, (std::vector<double>{1, 2.5}), 0);
  auto bad = makeTensor(DType::I64, {1}, {-3});
  EXPECT_ERROR(run(OpId::IndexPut, {fx, bad, fv}, {fy}, {0, 1}),
               "out of range");
}

} // namespace
