//===- linalg_test.cpp - matmul, linear, embedding ------------------------===//
#include "helpers.h"

using namespace etllm::rt;
using namespace etllm::rt::testing;

namespace {

TEST(Matmul, HandComputed) {
  auto a = makeTensor(DType::F32, {2, 3}, {1, 2, 3, 4, 5, 6});
  auto b = makeTensor(DType::F32, {3, 2}, {7, 8, 9, 10, 11, 12});
  OwnedTensor y(DType::F32, {2, 2});
  ASSERT_OK(run(OpId::Matmul, {a, b}, {y}));
  EXPECT_VALUES(*y, (std::vector<double>{58, 64, 139, 154}), 0);
}

TEST(Matmul, BatchBroadcasting) {
  // [2, 1, 1, 2] @ [3, 2, 1] -> [2, 3, 1, 1].
  auto a = makeTensor(DType::F32, {2, 1, 1, 2}, {1, 2, 3, 4});
  auto b = makeTensor(DType::F32, {3, 2, 1}, {1, 0, 0, 1, 1, 1});
  OwnedTensor y(DType::F32, {0}, 6 * 4);
  ASSERT_OK(run(OpId::Matmul, {a, b}, {y}));
  EXPECT_SHAPE(*y, 2, 3, 1, 1);
  EXPECT_VALUES(*y, (std::vector<double>{1, 2, 3, 3, 4, 7}), 0);
}

TEST(Matmul, HalfAndErrors) {
  auto a = makeTensor(DType::F16, {1, 2}, {0.5, 2});
  auto b = makeTensor(DType::F16, {2, 1}, {3, 0.25});
  OwnedTensor y(DType::F16, {1, 1});
  ASSERT_OK(run(OpId::Matmul, {a, b}, {y}));
  EXPECT_VALUES(*y, (std::vector<double>{2}), 0);
  auto c = makeTensor(DType::F16, {3, 1}, {});
  EXPECT_ERROR(run(OpId::Matmul, {a, c}, {y}), "inner dimensions");
  auto v = makeTensor(DType::F16, {2}, {});
  EXPECT_ERROR(run(OpId::Matmul, {a, v}, {y}), "rank >= 2");
  auto i = makeTensor(DType::I64, {1, 2}, {});
  auto j = makeTensor(DType::I64, {2, 1}, {});
  OwnedTensor iy(DType::I64, {1, 1});
  EXPECT_ERROR(run(OpId::Matmul, {i, j}, {iy}), "matmul: unsupported");
  auto a3 = makeTensor(DType::F16, {2, 1, 2}, {});
  auto b3 = makeTensor(DType::F16, {3, 2, 1}, {});
  OwnedTensor y3(DType::F16, {0}, 64);
  EXPECT_ERROR(run(OpId::Matmul, {a3, b3}, {y3}), "do not broadcast");
}

TEST(Matmul, ThreadedMatchesSerial) {
  auto a = makeTensor(DType::F32, {3, 5, 16}, randomValues(3 * 5 * 16, 1));
  auto b = makeTensor(DType::F32, {3, 16, 7}, randomValues(3 * 16 * 7, 2));
  OwnedTensor y1(DType::F32, {3, 5, 7}), y2(DType::F32, {3, 5, 7});
  ThreadedContext tc;
  ASSERT_OK(run(OpId::Matmul, {a, b}, {y1}));
  ASSERT_OK(run(OpId::Matmul, {a, b}, {y2}, {}, {}, &tc.ctx));
  EXPECT_EQ(values(*y1), values(*y2));
  // And equals a naive double-precision product closely.
  std::vector<double> av = values(*a), bv = values(*b), got = values(*y1);
  for (int bi = 0; bi < 3; ++bi)
    for (int m = 0; m < 5; ++m)
      for (int n = 0; n < 7; ++n) {
        double s = 0;
        for (int k = 0; k < 16; ++k)
          s += av[size_t((bi * 5 + m) * 16 + k)] *
               bv[size_t((bi * 16 + k) * 7 + n)];
        EXPECT_NEAR(got[size_t((bi * 5 + m) * 7 + n)], s, 1e-5);
      }
}

TEST(Linear, WithAndWithoutBias) {
  auto x = makeTensor(DType::F32, {1, 2, 3}, {1, 2, 3, 4, 5, 6});
  auto w = makeTensor(DType::F32, {2, 3}, {1, 0, -1, 0.5, 0.5, 0.5});
  auto b = makeTensor(DType::F32, {2}, {10, 20});
  OwnedTensor y(DType::F32, {1, 2, 2});
  ASSERT_OK(run(OpId::Linear, {x, w}, {y}));
  EXPECT_SHAPE(*y, 1, 2, 2);
  EXPECT_VALUES(*y, (std::vector<double>{-2, 3, -2, 7.5}), 0);
  ASSERT_OK(run(OpId::Linear, {x, w, b}, {y}));
  EXPECT_VALUES(*y, (std::vector<double>{8, 23, 8, 27.5}), 0);
}

TEST(Linear, HalfAndBFloat16) {
  for (DType dt : {DType::F16, DType::BF16}) {
    auto x = makeTensor(dt, {2}, {1.5, -2});
    auto w = makeTensor(dt, {3, 2}, {1, 1, 2, 0.5, -1, 0});
    auto b = makeTensor(dt, {3}, {0.25, 0, 1});
    OwnedTensor y(dt, {3});
    ASSERT_OK(run(OpId::Linear, {x, w, b}, {y}));
    EXPECT_VALUES(*y, (std::vector<double>{-0.25, 2, -0.5}), 0);
  }
}

TEST(Linear, Errors) {
  auto x = makeTensor(DType::F32, {2, 3}, {});
  auto w = makeTensor(DType::F32, {4, 2}, {});
  OwnedTensor y(DType::F32, {2, 4});
  EXPECT_ERROR(run(OpId::Linear, {x, w}, {y}), "does not match the input");
  auto w2 = makeTensor(DType::F32, {4, 3}, {});
  auto b = makeTensor(DType::F32, {3}, {});
  EXPECT_ERROR(run(OpId::Linear, {x, w2, b}, {y}), "bias");
  auto wh = makeTensor(DType::F16, {4, 3}, {});
  EXPECT_ERROR(run(OpId::Linear, {x, wh}, {y}), "linear: unsupported");
  OwnedTensor small(DType::F32, {2, 3});
  EXPECT_ERROR(run(OpId::Linear, {x, w2}, {small}), "planned");
}

TEST(Linear, ThreadedMatchesSerialAndDynamicRows) {
  const int64_t K = 24, N = 37;
  auto w = makeTensor(DType::BF16, {N, K}, randomValues(size_t(N * K), 3));
  auto b = makeTensor(DType::BF16, {N}, randomValues(size_t(N), 4));
  OwnedTensor x(DType::BF16, {1, K}, 5 * K * 2);
  OwnedTensor y1(DType::BF16, {1, N}, 5 * N * 2),
      y2(DType::BF16, {1, N}, 5 * N * 2);
  ThreadedContext tc;
  for (int64_t rows : {int64_t(1), int64_t(5)}) {
    int64_t s[2] = {rows, K};
    ASSERT_OK(x->resize(s, 2));
    std::vector<double> xv = randomValues(size_t(rows * K), 5 + unsigned(rows));
    for (size_t i = 0; i < xv.size(); ++i)
      setElement(*x, int64_t(i), xv[i]);
    ASSERT_OK(run(OpId::Linear, {x, w, b}, {y1}));
    ASSERT_OK(run(OpId::Linear, {x, w, b}, {y2}, {}, {}, &tc.ctx));
    EXPECT_SHAPE(*y1, rows, N);
    EXPECT_EQ(values(*y1), values(*y2));
    std::vector<double> xd = values(*x), wd = values(*w), bd = values(*b);
    std::vector<double> got = values(*y1);
    for (int64_t m = 0; m < rows; ++m)
      for (int64_t n = 0; n < N; ++n) {
        double s = bd[size_t(n)];
        for (int64_t k = 0; k < K; ++k)
          s += xd[size_t(m * K + k)] * wd[size_t(n * K + k)];
        EXPECT_NEAR(got[size_t(m * N + n)], s, 0.02 + std::fabs(s) / 128);
      }
  }
}

TEST(Embedding, LooksUpRows) {
  auto table = makeTensor(DType::F32, {4, 2}, {0, 1, 10, 11, 20, 21, 30, 31});
  auto idx = makeTensor(DType::I64, {2, 2}, {3, 0, 1, 1});
  OwnedTensor y(DType::F32, {0}, 64);
  ASSERT_OK(run(OpId::Embedding, {table, idx}, {y}));
  EXPECT_SHAPE(*y, 2, 2, 2);
  EXPECT_VALUES(*y, (std::vector<double>{30, 31, 0, 1, 10, 11, 10, 11}), 0);
  auto idx32 = makeTensor(DType::I32, {1}, {2});
  ASSERT_OK(run(OpId::Embedding, {table, idx32}, {y}));
  EXPECT_SHAPE(*y, 1, 2);
  EXPECT_VALUES(*y, (std::vector<double>{20, 21}), 0);
}

TEST(Embedding, Errors) {
  auto table = makeTensor(DType::BF16, {4, 2}, {});
  OwnedTensor y(DType::BF16, {0}, 64);
  auto bad = makeTensor(DType::I64, {2}, {1, 4});
  EXPECT_ERROR(run(OpId::Embedding, {table, bad}, {y}), "index 4 is out of");
  auto neg = makeTensor(DType::I32, {1}, {-1});
  EXPECT_ERROR(run(OpId::Embedding, {table, neg}, {y}), "index -1");
  auto fidx = makeTensor(DType::F32, {1}, {0});
  EXPECT_ERROR(run(OpId::Embedding, {table, fidx}, {y}), "i64 or i32");
  auto flat = makeTensor(DType::BF16, {8}, {});
  auto idx = makeTensor(DType::I64, {1}, {0});
  EXPECT_ERROR(run(OpId::Embedding, {flat, idx}, {y}), "[V, D]");
  OwnedTensor small(DType::BF16, {0}, 2);
  EXPECT_ERROR(run(OpId::Embedding, {table, idx}, {small}), "planned");
}

TEST(Embedding, ThreadedLookups) {
  auto table = makeTensor(DType::F16, {50, 8}, randomValues(400, 9));
  std::vector<double> ids;
  for (int i = 0; i < 20; ++i)
    ids.push_back((i * 7) % 50);
  auto idx = makeTensor(DType::I64, {20}, ids);
  OwnedTensor y(DType::F16, {20, 8});
  ThreadedContext tc;
  ASSERT_OK(run(OpId::Embedding, {table, idx}, {y}, {}, {}, &tc.ctx));
  std::vector<double> t = values(*table), got = values(*y);
  for (int i = 0; i < 20; ++i)
    for (int d = 0; d < 8; ++d)
      EXPECT_EQ(got[size_t(i * 8 + d)], t[size_t(ids[size_t(i)] * 8 + d)]);
}

} // namespace
