//===- reduce_test.cpp - sum, mean, amax, softmax, topk -------------------===//
#include "helpers.h"

#include <limits>

using namespace etllm::rt;
using namespace etllm::rt::testing;

namespace {

TEST(Reduce, SumOverDims) {
  auto x = makeTensor(DType::F32, {2, 3}, {1, 2, 3, 4, 5, 6});
  OwnedTensor y(DType::F32, {0}, 64);
  ASSERT_OK(run(OpId::Sum, {x}, {y}, {1, -1}));
  EXPECT_SHAPE(*y, 2, 1);
  EXPECT_VALUES(*y, (std::vector<double>{6, 15}), 0);
  ASSERT_OK(run(OpId::Sum, {x}, {y}, {0, 0}));
  EXPECT_SHAPE(*y, 3);
  EXPECT_VALUES(*y, (std::vector<double>{5, 7, 9}), 0);
  ASSERT_OK(run(OpId::Sum, {x}, {y}, {0, 0, 1}));
  EXPECT_SHAPE(*y);
  EXPECT_VALUES(*y, (std::vector<double>{21}), 0);
  ASSERT_OK(run(OpId::Sum, {x}, {y}, {1})); // no dims: all, keepdim
  EXPECT_SHAPE(*y, 1, 1);
  EXPECT_VALUES(*y, (std::vector<double>{21}), 0);
}

TEST(Reduce, SumMiddleDimAndIntegers) {
  std::vector<double> v(24);
  for (int i = 0; i < 24; ++i)
    v[size_t(i)] = i;
  auto x = makeTensor(DType::I64, {2, 3, 4}, v);
  OwnedTensor y(DType::I64, {0}, 64);
  ASSERT_OK(run(OpId::Sum, {x}, {y}, {0, 1}));
  EXPECT_SHAPE(*y, 2, 4);
  EXPECT_VALUES(*y, (std::vector<double>{12, 15, 18, 21, 48, 51, 54, 57}), 0);
  ASSERT_OK(run(OpId::Amax, {x}, {y}, {1, 0, 2}));
  EXPECT_SHAPE(*y, 1, 3, 1);
  EXPECT_VALUES(*y, (std::vector<double>{15, 19, 23}), 0);
  OwnedTensor f(DType::F32, {0}, 64);
  EXPECT_ERROR(run(OpId::Sum, {x}, {f}, {0, 1}), "sum: unsupported");
  EXPECT_ERROR(run(OpId::Mean, {x}, {f}, {0, 1}), "mean: unsupported");
}

TEST(Reduce, MeanInF32AndHalf) {
  auto x = makeTensor(DType::F32, {2, 2}, {1, 2, 3, 5});
  OwnedTensor y(DType::F32, {2});
  ASSERT_OK(run(OpId::Mean, {x}, {y}, {0, -1}));
  EXPECT_VALUES(*y, (std::vector<double>{1.5, 4}), 0);
  auto h = makeTensor(DType::BF16, {1, 4}, {1, 2, 3, 4.5});
  OwnedTensor hy(DType::BF16, {1, 1});
  ASSERT_OK(run(OpId::Mean, {h}, {hy}, {1, 1}));
  EXPECT_VALUES(*hy, (std::vector<double>{2.625}), 0);
  OwnedTensor hf(DType::F32, {1, 1});
  ASSERT_OK(run(OpId::Mean, {h}, {hf}, {1, 1})); // f32 result of bf16 input
  EXPECT_VALUES(*hf, (std::vector<double>{2.625}), 0);
}

TEST(Reduce, AmaxFloatsAndNaN) {
  auto x = makeTensor(DType::F16, {2, 3}, {1, -kInf, 3, kNaN, 0, 1});
  OwnedTensor y(DType::F16, {2});
  ASSERT_OK(run(OpId::Amax, {x}, {y}, {0, 1}));
  EXPECT_VALUES(*y, (std::vector<double>{3, kNaN}), 0);
}

TEST(Reduce, Errors) {
  auto x = makeTensor(DType::F32, {2, 3}, {});
  OwnedTensor y(DType::F32, {0}, 64);
  EXPECT_ERROR(run(OpId::Sum, {x}, {y}, {0, 1, -1}), "reduced twice");
  EXPECT_ERROR(run(OpId::Sum, {x}, {y}, {0, 2}), "out of range");
  auto e = makeTensor(DType::F32, {2, 0}, {});
  EXPECT_ERROR(run(OpId::Amax, {e}, {y}, {0, 1}), "empty");
  ASSERT_OK(run(OpId::Sum, {e}, {y}, {0, 1}));
  EXPECT_VALUES(*y, (std::vector<double>{0, 0}), 0);
  OwnedTensor small(DType::F32, {0}, 4);
  EXPECT_ERROR(run(OpId::Sum, {x}, {small}, {0, 0}), "planned");
  auto b = makeTensor(DType::Bool, {2}, {});
  OwnedTensor bo(DType::Bool, {1});
  EXPECT_ERROR(run(OpId::Amax, {b}, {bo}, {0}), "amax: unsupported");
}

TEST(Softmax, LastAndFirstDim) {
  auto x = makeTensor(DType::F32, {2, 3}, {1, 2, 3, 0, 0, -kInf});
  OwnedTensor y(DType::F32, {2, 3});
  ASSERT_OK(run(OpId::Softmax, {x}, {y}, {-1}));
  double e1 = std::exp(-2.0), e2 = std::exp(-1.0), s = e1 + e2 + 1;
  EXPECT_VALUES(*y, (std::vector<double>{e1 / s, e2 / s, 1 / s, 0.5, 0.5, 0}),
                1e-7);
  ASSERT_OK(run(OpId::Softmax, {x}, {y}, {0}));
  double a = 1 / (1 + std::exp(-1.0)), b = 1 / (1 + std::exp(-2.0));
  EXPECT_VALUES(*y, (std::vector<double>{a, b, 1, 1 - a, 1 - b, 0}), 1e-7);
  // Large values stay finite (max subtraction).
  auto big = makeTensor(DType::F32, {2}, {1000, 1000});
  OwnedTensor by(DType::F32, {2});
  ASSERT_OK(run(OpId::Softmax, {big}, {by}, {0}));
  EXPECT_VALUES(*by, (std::vector<double>{0.5, 0.5}), 0);
  EXPECT_ERROR(run(OpId::Softmax, {x}, {y}, {2}), "out of range");
}

TEST(Softmax, HalfComputesInF32) {
  auto x = makeTensor(DType::F16, {3}, {0.5, 1.0, 2.0});
  OwnedTensor y(DType::F16, {3});
  ASSERT_OK(run(OpId::Softmax, {x}, {y}, {0}));
  double s = std::exp(0.5) + std::exp(1.0) + std::exp(2.0);
  std::vector<double> want;
  for (double v : {0.5, 1.0, 2.0})
    want.push_back(halfToFloat(floatToHalf(float(std::exp(v) / s))));
  EXPECT_VALUES(*y, want, 1e-3 * 0.5);
  auto i = makeTensor(DType::I64, {3}, {});
  OwnedTensor iy(DType::I64, {3});
  EXPECT_ERROR(run(OpId::Softmax, {i}, {iy}, {0}), "softmax: unsupported");
}

TEST(TopK, LastDimLargestFirstTiesInOrderNaNLargest) {
  auto x = makeTensor(DType::F32, {2, 5},
                      {1, 7, 3, 7, -2, //
                       0, kNaN, -kInf, 4, 4});
  OwnedTensor v(DType::F32, {0}, 128), i(DType::I64, {0}, 128);
  ASSERT_OK(run(OpId::TopK, {x}, {v, i}, {3, -1}));
  EXPECT_SHAPE(*v, 2, 3);
  EXPECT_SHAPE(*i, 2, 3);
  EXPECT_VALUES(*v, (std::vector<double>{7, 7, 3, kNaN, 4, 4}), 0);
  EXPECT_VALUES(*i, (std::vector<double>{1, 3, 2, 1, 3, 4}), 0);
  // k = the whole dimension sorts it.
  ASSERT_OK(run(OpId::TopK, {x}, {v, i}, {5, 1}));
  EXPECT_VALUES(*i, (std::vector<double>{1, 3, 2, 0, 4, 1, 3, 4, 0, 2}), 0);
}

TEST(TopK, InnerDimIntegersAndHalf) {
  // dim 0 of [3, 2]: per column.
  auto x = makeTensor(DType::I64, {3, 2}, {5, -1, 9, -3, 5, 8});
  OwnedTensor v(DType::I64, {0}, 64), i(DType::I64, {0}, 64);
  ASSERT_OK(run(OpId::TopK, {x}, {v, i}, {2, 0}));
  EXPECT_SHAPE(*v, 2, 2);
  EXPECT_VALUES(*v, (std::vector<double>{9, 8, 5, -1}), 0);
  EXPECT_VALUES(*i, (std::vector<double>{1, 2, 0, 0}), 0);
  auto h = makeTensor(DType::F16, {1, 1, 4}, {0.25, 2, -1, 1.5});
  OwnedTensor hv(DType::F16, {0}, 64), hi(DType::I64, {0}, 64);
  ASSERT_OK(run(OpId::TopK, {h}, {hv, hi}, {1, 2}));
  EXPECT_SHAPE(*hv, 1, 1, 1);
  EXPECT_VALUES(*hv, (std::vector<double>{2}), 0);
  EXPECT_VALUES(*hi, (std::vector<double>{1}), 0);
}

TEST(TopK, Errors) {
  auto x = makeTensor(DType::F32, {2, 3}, {});
  OwnedTensor v(DType::F32, {0}, 64), i(DType::I64, {0}, 64);
  EXPECT_ERROR(run(OpId::TopK, {x}, {v, i}, {4, -1}),
               "topk: k = 4 is out of range for a dimension of size 3");
  EXPECT_ERROR(run(OpId::TopK, {x}, {v, i}, {0, -1}), "out of range");
  EXPECT_ERROR(run(OpId::TopK, {x}, {v, i}, {1, 2}), "out of range");
  OwnedTensor i32(DType::I32, {0}, 64);
  EXPECT_ERROR(run(OpId::TopK, {x}, {v, i32}, {1, -1}), "topk: unsupported");
  OwnedTensor small(DType::I64, {0}, 8);
  EXPECT_ERROR(run(OpId::TopK, {x}, {v, small}, {2, -1}), "planned");
  auto s = makeTensor(DType::F32, {}, {1});
  EXPECT_ERROR(run(OpId::TopK, {s}, {v, i}, {1, 0}), "rank >= 1");
}

} // namespace
