//===- quant_test.cpp - quantize_dynamic, qlinear, qembedding, dequantize -===//
#include "helpers.h"

using namespace etllm::rt;
using namespace etllm::rt::testing;

namespace {

QuantInfo qinfo(int bits, bool sym, DType scaleType, int64_t group) {
  QuantInfo q;
  q.bits = uint8_t(bits);
  q.symmetric = sym;
  q.scaleType = scaleType;
  q.groupSize = group;
  return q;
}

/// Random quantized values and parameters for a [rows, cols] weight.
OwnedTensor randomQWeight(int64_t rows, int64_t cols, const QuantInfo &q,
                          unsigned seed) {
  std::mt19937 gen(seed);
  const int lo = q.symmetric ? -(1 << (q.bits - 1)) : 0;
  const int hi = q.symmetric ? (1 << (q.bits - 1)) - 1 : (1 << q.bits) - 1;
  std::uniform_int_distribution<int> qd(lo, hi);
  std::uniform_real_distribution<float> sd(0.01f, 0.1f), od(-0.5f, 0.5f);
  std::vector<int32_t> qs(size_t(rows * cols));
  for (int32_t &v : qs)
    v = qd(gen);
  std::vector<float> scales(size_t(rows * cols / q.groupSize)), offsets;
  for (float &s : scales)
    s = sd(gen);
  if (!q.symmetric) {
    offsets.resize(scales.size());
    for (float &o : offsets)
      o = od(gen);
  }
  return makeQWeight(rows, cols, q, qs, scales, offsets);
}

TEST(Dequantize, EightBitSymmetric) {
  QuantInfo q = qinfo(8, true, DType::F32, 2);
  auto w = makeQWeight(2, 4, q, {1, -2, 3, -128, 127, 0, 5, -5},
                       {0.5f, 2.0f, 1.0f, 0.25f});
  OwnedTensor y(DType::F32, {2, 4});
  ASSERT_OK(run(OpId::Dequantize, {w}, {y}));
  EXPECT_VALUES(
      *y, (std::vector<double>{0.5, -1, 6, -256, 127, 0, 1.25, -1.25}), 0);
}

TEST(Dequantize, FourBitAsymmetricHalfScales) {
  QuantInfo q = qinfo(4, false, DType::F16, 4);
  auto w = makeQWeight(1, 4, q, {0, 15, 7, 8}, {0.5f}, {-4.0f});
  OwnedTensor y(DType::BF16, {1, 4});
  ASSERT_OK(run(OpId::Dequantize, {w}, {y}));
  EXPECT_VALUES(*y, (std::vector<double>{-4, 3.5, -0.5, 0}), 0);
}

TEST(Dequantize, FourBitNibbleLayout) {
  // Built byte by byte from the QWeightLayout description: element k of a
  // row in byte k/2, low nibble for even k, q = u - 8 when symmetric.
  QuantInfo q = qinfo(4, true, DType::F32, 4);
  OwnedTensor w(DType::QWeight, {1, 4}, 0, q);
  uint8_t *b = w->ptr<uint8_t>();
  b[0] = 0x9f; // k0: 0xf -> 7, k1: 0x9 -> 1
  b[1] = 0x08; // k2: 0x8 -> 0, k3: 0x0 -> -8
  float scale = 1.0f;
  std::memcpy(b + 64, &scale, 4); // scalesOff = alignUp(2, 64)
  OwnedTensor y(DType::F32, {1, 4});
  ASSERT_OK(run(OpId::Dequantize, {w}, {y}));
  EXPECT_VALUES(*y, (std::vector<double>{7, 1, 0, -8}), 0);
}

TEST(Dequantize, Errors) {
  auto f = makeTensor(DType::F32, {2, 2}, {});
  OwnedTensor y(DType::F32, {2, 2});
  EXPECT_ERROR(run(OpId::Dequantize, {f}, {y}), "expected a qweight");
  QuantInfo q = qinfo(8, true, DType::F32, 2);
  auto w = makeQWeight(2, 2, q, {}, {});
  OwnedTensor yi(DType::I32, {2, 2});
  EXPECT_ERROR(run(OpId::Dequantize, {w}, {yi}), "dequantize: unsupported");
  OwnedTensor small(DType::F32, {1, 2});
  EXPECT_ERROR(run(OpId::Dequantize, {w}, {small}), "planned");
  // A malformed quantization (group size not dividing the row).
  Tensor bad = *w;
  bad.quant.groupSize = 3;
  EXPECT_ERROR(run(OpId::Dequantize, {&bad}, {y}), "group size");
}

/// qlinear with a float input equals dequantize + linear (f32) to 1e-5
/// relative (in fact bit for bit: same rows, same accumulation order).
void checkQLinearMatchesDequantized(const QuantInfo &q, unsigned seed) {
  const int64_t M = 3, K = 64, N = 5;
  auto w = randomQWeight(N, K, q, seed);
  auto x = makeTensor(DType::F32, {M, K}, randomValues(size_t(M * K), seed));
  auto b = makeTensor(DType::F32, {N}, randomValues(size_t(N), seed + 1));
  OwnedTensor wf(DType::F32, {N, K});
  ASSERT_OK(run(OpId::Dequantize, {w}, {wf}));
  OwnedTensor ref(DType::F32, {M, N}), y(DType::F32, {M, N}),
      yt(DType::F32, {M, N});
  ASSERT_OK(run(OpId::Linear, {x, wf, b}, {ref}));
  ASSERT_OK(run(OpId::QLinear, {x, w, b}, {y}));
  ThreadedContext tc;
  ASSERT_OK(run(OpId::QLinear, {x, w, b}, {yt}, {}, {}, &tc.ctx));
  std::vector<double> r = values(*ref), g = values(*y);
  for (size_t i = 0; i < r.size(); ++i)
    EXPECT_NEAR(g[i], r[i], 1e-5 * std::max(1.0, std::fabs(r[i])))
        << "at " << i;
  EXPECT_EQ(values(*y), values(*yt));
}

TEST(QLinear, FloatInputMatchesDequantizePlusLinear) {
  checkQLinearMatchesDequantized(qinfo(4, true, DType::F16, 32), 1);
  checkQLinearMatchesDequantized(qinfo(4, true, DType::F32, 16), 2);
  checkQLinearMatchesDequantized(qinfo(4, false, DType::F32, 32), 3);
  checkQLinearMatchesDequantized(qinfo(4, false, DType::F16, 64), 4);
  checkQLinearMatchesDequantized(qinfo(8, true, DType::F32, 32), 5);
  checkQLinearMatchesDequantized(qinfo(8, true, DType::F16, 64), 6);
  checkQLinearMatchesDequantized(qinfo(8, false, DType::F16, 32), 7);
}

TEST(QLinear, HandComputed) {
  // w = [[1, 2], [-1, 0.5]] as 8-bit sym with scale 0.5; x = [2, 1].
  QuantInfo q = qinfo(8, true, DType::F32, 2);
  auto w = makeQWeight(2, 2, q, {2, 4, -2, 1}, {0.5f, 0.5f});
  auto x = makeTensor(DType::BF16, {1, 1, 2}, {2, 1});
  auto b = makeTensor(DType::BF16, {2}, {0.5, 0});
  OwnedTensor y(DType::F32, {1, 1, 2});
  ASSERT_OK(run(OpId::QLinear, {x, w, b}, {y}));
  EXPECT_SHAPE(*y, 1, 1, 2);
  EXPECT_VALUES(*y, (std::vector<double>{4.5, -1.5}), 0);
}

TEST(QLinear, Errors) {
  QuantInfo q = qinfo(8, true, DType::F32, 2);
  auto w = makeQWeight(2, 4, q, {}, {1, 1, 1, 1});
  auto x = makeTensor(DType::F32, {1, 2}, {});
  OwnedTensor y(DType::F32, {1, 2});
  EXPECT_ERROR(run(OpId::QLinear, {x, w}, {y}), "does not match the input");
  auto x4 = makeTensor(DType::F32, {1, 4}, {});
  auto b = makeTensor(DType::F32, {3}, {});
  EXPECT_ERROR(run(OpId::QLinear, {x4, w, b}, {y}), "bias");
  auto wf = makeTensor(DType::F32, {2, 4}, {});
  EXPECT_ERROR(run(OpId::QLinear, {x4, wf}, {y}), "expected a qweight");
  auto xi = makeTensor(DType::I32, {1, 4}, {});
  EXPECT_ERROR(run(OpId::QLinear, {xi, w}, {y}), "qlinear: unsupported");
  QuantInfo a4;
  a4.bits = 4;
  OwnedTensor qa(DType::QAct, {1, 4}, 0, a4);
  EXPECT_ERROR(run(OpId::QLinear, {qa, w}, {y}), "8-bit");
  OwnedTensor small(DType::F32, {1, 1});
  EXPECT_ERROR(run(OpId::QLinear, {x4, w}, {small}), "planned");
}

//===----------------------------------------------------------------------===//
// quantize_dynamic
//===----------------------------------------------------------------------===//

struct QActView {
  const int8_t *q;
  const float *scales;
  const int32_t *zps;
};
QActView qactView(const Tensor &t) {
  int64_t K = t.dim(-1), R = t.numel() / K;
  QActLayout l = QActLayout::compute(R, K);
  const uint8_t *b = t.ptr<uint8_t>();
  return {reinterpret_cast<const int8_t *>(b),
          reinterpret_cast<const float *>(b + l.scalesOff),
          reinterpret_cast<const int32_t *>(b + l.zpOff)};
}

QuantInfo actInfo(bool sym, bool perToken) {
  QuantInfo q;
  q.bits = 8;
  q.symmetric = sym;
  q.perToken = perToken;
  return q;
}

TEST(QuantizeDynamic, AsymmetricPerToken) {
  auto x = makeTensor(DType::F32, {2, 4}, {-1, 0, 2, 1, 0, 0, 0, 0});
  OwnedTensor qa(DType::QAct, {2, 4}, 0, actInfo(false, true));
  ASSERT_OK(run(OpId::QuantizeDynamic, {x}, {qa}));
  QActView v = qactView(*qa);
  EXPECT_FLOAT_EQ(v.scales[0], 3.0f / 255.0f);
  EXPECT_EQ(v.zps[0], -43); // round(-128 + 85)
  EXPECT_EQ(std::vector<int>(v.q, v.q + 4),
            (std::vector<int>{-128, -43, 127, 42}));
  // An all-zero row: scale 1, zp -128, every q = zp.
  EXPECT_EQ(v.scales[1], 1.0f);
  EXPECT_EQ(v.zps[1], -128);
  EXPECT_EQ(std::vector<int>(v.q + 4, v.q + 8),
            (std::vector<int>{-128, -128, -128, -128}));
}

TEST(QuantizeDynamic, SymmetricPerTokenAndPerTensor) {
  auto x = makeTensor(DType::F32, {1, 4}, {1.27, -0.5, 0.1, 0});
  OwnedTensor qa(DType::QAct, {1, 4}, 0, actInfo(true, true));
  ASSERT_OK(run(OpId::QuantizeDynamic, {x}, {qa}));
  QActView v = qactView(*qa);
  EXPECT_FLOAT_EQ(v.scales[0], 1.27f / 127.0f);
  EXPECT_EQ(v.zps[0], 0);
  EXPECT_EQ(std::vector<int>(v.q, v.q + 4),
            (std::vector<int>{127, -50, 10, 0}));

  // Per tensor: one scale from the whole tensor, stored in every row's slot.
  auto t = makeTensor(DType::BF16, {2, 2}, {1.25, 0, -0.6015625, 0.125});
  OwnedTensor qt(DType::QAct, {2, 2}, 0, actInfo(true, false));
  ASSERT_OK(run(OpId::QuantizeDynamic, {t}, {qt}));
  QActView w = qactView(*qt);
  EXPECT_FLOAT_EQ(w.scales[0], 1.25f / 127.0f);
  EXPECT_EQ(w.scales[1], w.scales[0]);
  EXPECT_EQ(w.zps[1], 0);
  EXPECT_EQ(std::vector<int>(w.q, w.q + 4),
            (std::vector<int>{127, 0, -61, 13})); // -61.1, 12.7
}

TEST(QuantizeDynamic, AsymmetricPerTensor) {
  auto x = makeTensor(DType::F32, {2, 2}, {-1, 0, 0, 2});
  OwnedTensor qa(DType::QAct, {2, 2}, 0, actInfo(false, false));
  ASSERT_OK(run(OpId::QuantizeDynamic, {x}, {qa}));
  QActView v = qactView(*qa);
  EXPECT_FLOAT_EQ(v.scales[0], 3.0f / 255.0f);
  EXPECT_EQ(v.scales[1], v.scales[0]);
  EXPECT_EQ(v.zps[0], -43);
  EXPECT_EQ(v.zps[1], -43);
  EXPECT_EQ(std::vector<int>(v.q, v.q + 4),
            (std::vector<int>{-128, -43, -43, 127}));
}

// The scale fixed at export: values beyond the calibrated range saturate,
// half-way values round to even, every row stores the scale and zero point 0;
// the bytes a per-tensor quantize_dynamic gives when the scale is the data's.
TEST(QuantizeStatic, FixedScaleSaturatesAndRoundsToEven) {
  auto x = makeTensor(DType::F32, {2, 4}, {0.25, -0.5, 3.0, -3.0,  //
                                           0.125, 0.375, 0, -0.75});
  OwnedTensor qa(DType::QAct, {2, 4}, 0, actInfo(true, false));
  ASSERT_OK(run(OpId::QuantizeStatic, {x}, {qa}, {}, {0.25}));
  QActView v = qactView(*qa);
  EXPECT_EQ(v.scales[0], 0.25f);
  EXPECT_EQ(v.scales[1], 0.25f);
  EXPECT_EQ(v.zps[0], 0);
  EXPECT_EQ(v.zps[1], 0);
  // 3 / 0.25 = 12; 0.125 / 0.25 = 0.5 -> 0; 0.375 / 0.25 = 1.5 -> 2.
  EXPECT_EQ(std::vector<int>(v.q, v.q + 8),
            (std::vector<int>{1, -2, 12, -12, 0, 2, 0, -3}));
  ASSERT_OK(run(OpId::QuantizeStatic, {x}, {qa}, {}, {0.01}));
  v = qactView(*qa);
  EXPECT_EQ(std::vector<int>(v.q, v.q + 4),
            (std::vector<int>{25, -50, 127, -127}));
  // The scale of the data itself: quantize_dynamic's bytes.
  auto y = makeTensor(DType::F16, {2, 3}, {1.0, -0.5, 0.25, 2.0, 0.75, -1.5});
  OwnedTensor qs(DType::QAct, {2, 3}, 0, actInfo(true, false));
  OwnedTensor qd(DType::QAct, {2, 3}, 0, actInfo(true, false));
  ASSERT_OK(run(OpId::QuantizeStatic, {y}, {qs}, {}, {2.0f / 127.0f}));
  ASSERT_OK(run(OpId::QuantizeDynamic, {y}, {qd}));
  EXPECT_EQ(std::vector<uint8_t>(qs->ptr<uint8_t>(),
                                 qs->ptr<uint8_t>() + qs->nbytes()),
            std::vector<uint8_t>(qd->ptr<uint8_t>(),
                                 qd->ptr<uint8_t>() + qd->nbytes()));
}

TEST(QuantizeStatic, Errors) {
  auto x = makeTensor(DType::F32, {1, 4}, {1, 2, 3, 4});
  OwnedTensor perToken(DType::QAct, {1, 4}, 0, actInfo(true, true));
  EXPECT_ERROR(run(OpId::QuantizeStatic, {x}, {perToken}, {}, {0.5}),
               "per-tensor symmetric");
  OwnedTensor asym(DType::QAct, {1, 4}, 0, actInfo(false, false));
  EXPECT_ERROR(run(OpId::QuantizeStatic, {x}, {asym}, {}, {0.5}),
               "per-tensor symmetric");
  OwnedTensor qa(DType::QAct, {1, 4}, 0, actInfo(true, false));
  EXPECT_ERROR(run(OpId::QuantizeStatic, {x}, {qa}, {}, {0.0}),
               "not positive and finite");
  EXPECT_ERROR(run(OpId::QuantizeStatic, {x}, {qa}, {}, {-1.0}),
               "not positive and finite");
  auto i = makeTensor(DType::I32, {1, 4}, {1, 2, 3, 4});
  EXPECT_ERROR(run(OpId::QuantizeStatic, {i}, {qa}, {}, {0.5}),
               "unsupported");
}

TEST(QuantizeDynamic, Errors) {
  auto x = makeTensor(DType::I32, {1, 4}, {});
  OwnedTensor qa(DType::QAct, {1, 4}, 0, actInfo(false, true));
  EXPECT_ERROR(run(OpId::QuantizeDynamic, {x}, {qa}),
               "quantize_dynamic: unsupported");
  auto f = makeTensor(DType::F32, {2, 4}, {});
  EXPECT_ERROR(run(OpId::QuantizeDynamic, {f}, {qa}), "planned");
  OwnedTensor notQ(DType::F32, {1, 4});
  auto f1 = makeTensor(DType::F32, {1, 4}, {});
  EXPECT_ERROR(run(OpId::QuantizeDynamic, {f1}, {notQ}), "f32 -> f32");
}

/// quantize_dynamic -> qlinear against the float reference sum_k x w + b.
/// Tolerance: each dequantized activation is within one scale of x (half a
/// step of rounding, at most one step where the clamp bites), so
/// |y - y_ref| <= scale_m * sum_k |w[n, k]|, plus 1e-4 of f32 rounding.
void checkDynamicQuantizedLinear(bool sym, bool perToken, unsigned seed) {
  const int64_t M = 4, K = 64, N = 6;
  QuantInfo wq = qinfo(4, true, DType::F32, 32);
  auto w = randomQWeight(N, K, wq, seed);
  OwnedTensor wf(DType::F32, {N, K});
  ASSERT_OK(run(OpId::Dequantize, {w}, {wf}));
  std::vector<double> xv = randomValues(size_t(M * K), seed, -2.0, 3.0);
  auto x = makeTensor(DType::F32, {M, K}, xv);
  auto b = makeTensor(DType::F32, {N}, randomValues(size_t(N), seed + 9));
  OwnedTensor qa(DType::QAct, {M, K}, 0, actInfo(sym, perToken));
  ASSERT_OK(run(OpId::QuantizeDynamic, {x}, {qa}));
  OwnedTensor y(DType::F32, {M, N});
  ASSERT_OK(run(OpId::QLinear, {qa, w, b}, {y}));
  QActView v = qactView(*qa);
  std::vector<double> wv = values(*wf), bv = values(*b), got = values(*y);
  for (int64_t m = 0; m < M; ++m)
    for (int64_t n = 0; n < N; ++n) {
      double ref = bv[size_t(n)], absW = 0;
      for (int64_t k = 0; k < K; ++k) {
        ref += xv[size_t(m * K + k)] * wv[size_t(n * K + k)];
        absW += std::fabs(wv[size_t(n * K + k)]);
      }
      double scale = v.scales[perToken ? m : 0];
      EXPECT_NEAR(got[size_t(m * N + n)], ref, scale * absW + 1e-4)
          << "m " << m << " n " << n;
      // Also: exactly the reference semantics on x-hat.
      double exact = bv[size_t(n)];
      for (int64_t k = 0; k < K; ++k) {
        int64_t slot = perToken ? m : 0;
        double xh =
            double(v.scales[slot]) * double(v.q[m * K + k] - v.zps[slot]);
        exact += xh * wv[size_t(n * K + k)];
      }
      EXPECT_NEAR(got[size_t(m * N + n)], exact, 1e-4);
    }
}

TEST(QLinear, DynamicQuantizedActivationsAgreeWithFloat) {
  checkDynamicQuantizedLinear(false, true, 101);
  checkDynamicQuantizedLinear(true, true, 102);
  checkDynamicQuantizedLinear(false, false, 103);
  checkDynamicQuantizedLinear(true, false, 104);
}

//===----------------------------------------------------------------------===//
// qembedding
//===----------------------------------------------------------------------===//

TEST(QEmbedding, RowsAreDequantizedRows) {
  QuantInfo q = qinfo(4, false, DType::F16, 8);
  auto w = randomQWeight(10, 16, q, 77);
  OwnedTensor wf(DType::F32, {10, 16});
  ASSERT_OK(run(OpId::Dequantize, {w}, {wf}));
  auto idx = makeTensor(DType::I32, {1, 3}, {9, 0, 9});
  OwnedTensor y(DType::F32, {0}, 3 * 16 * 4);
  ThreadedContext tc;
  ASSERT_OK(run(OpId::QEmbedding, {w, idx}, {y}, {}, {}, &tc.ctx));
  EXPECT_SHAPE(*y, 1, 3, 16);
  std::vector<double> t = values(*wf), got = values(*y);
  const int rows[3] = {9, 0, 9};
  for (int i = 0; i < 3; ++i)
    for (int d = 0; d < 16; ++d)
      EXPECT_EQ(got[size_t(i * 16 + d)], t[size_t(rows[i] * 16 + d)]);
  auto bad = makeTensor(DType::I64, {1}, {10});
  EXPECT_ERROR(run(OpId::QEmbedding, {w, bad}, {y}), "out of range");
  auto table = makeTensor(DType::F32, {10, 16}, {});
  EXPECT_ERROR(run(OpId::QEmbedding, {table, idx}, {y}), "expected a qweight");
}

} // namespace
