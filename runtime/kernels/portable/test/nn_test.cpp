//===- nn_test.cpp - rms_norm, layer_norm, rope, sdpa, kv_cache_update ----===//
#include "helpers.h"

#include "etllm/runtime/kv_cache_quant.h"

#include <limits>

using namespace etllm::rt;
using namespace etllm::rt::testing;

namespace {

//===----------------------------------------------------------------------===//
// rms_norm, layer_norm
//===----------------------------------------------------------------------===//

TEST(RmsNorm, WeightAndOffset) {
  // Row [3, 4]: mean(x^2) = 12.5; eps 0.5 -> rsqrt(13) .
  auto x = makeTensor(DType::F32, {1, 2}, {3, 4});
  auto w = makeTensor(DType::F32, {2}, {2, -1});
  OwnedTensor y(DType::F32, {1, 2});
  const double r = 1 / std::sqrt(13.0);
  ASSERT_OK(run(OpId::RmsNorm, {x, w}, {y}, {}, {0.5, 0.0}));
  EXPECT_VALUES(*y, (std::vector<double>{3 * r * 2, 4 * r * -1}), 1e-6);
  // Gemma: (1 + w).
  ASSERT_OK(run(OpId::RmsNorm, {x, w}, {y}, {}, {0.5, 1.0}));
  EXPECT_VALUES(*y, (std::vector<double>{3 * r * 3, 0.0}), 1e-6);
  // No weight.
  ASSERT_OK(run(OpId::RmsNorm, {x}, {y}, {}, {0.5, 1.0}));
  EXPECT_VALUES(*y, (std::vector<double>{3 * r, 4 * r}), 1e-6);
}

TEST(RmsNorm, RowsAndBFloat16RoundsBeforeTheWeight) {
  auto x = makeTensor(DType::BF16, {2, 3}, {1, 2, 3, -1, 0, 1});
  auto w = makeTensor(DType::BF16, {3}, {1.5, 1, 0.5});
  OwnedTensor y(DType::BF16, {2, 3});
  ASSERT_OK(run(OpId::RmsNorm, {x, w}, {y}, {}, {1e-6, 0.0}));
  std::vector<double> xv = values(*x), wv = values(*w), want;
  for (int r = 0; r < 2; ++r) {
    float ms = 0;
    for (int i = 0; i < 3; ++i)
      ms += float(xv[size_t(r * 3 + i)] * xv[size_t(r * 3 + i)]);
    float inv = 1.0f / std::sqrt(ms / 3 + 1e-6f);
    for (int i = 0; i < 3; ++i) {
      float h = bf16ToFloat(floatToBf16(float(xv[size_t(r * 3 + i)]) * inv));
      want.push_back(bf16ToFloat(floatToBf16(h * float(wv[size_t(i)]))));
    }
  }
  EXPECT_VALUES(*y, want, 0);
}

TEST(RmsNorm, Errors) {
  auto x = makeTensor(DType::F32, {2, 3}, {});
  auto w = makeTensor(DType::F32, {2}, {});
  OwnedTensor y(DType::F32, {2, 3});
  EXPECT_ERROR(run(OpId::RmsNorm, {x, w}, {y}, {}, {1e-5, 0.0}), "weight");
  auto xi = makeTensor(DType::I32, {2, 3}, {});
  EXPECT_ERROR(run(OpId::RmsNorm, {xi}, {y}, {}, {1e-5, 0.0}),
               "rms_norm: unsupported");
  EXPECT_ERROR(run(OpId::RmsNorm, {x}, {y}, {}, {1e-5}), "float attributes");
}

TEST(LayerNorm, WeightBiasOptional) {
  // Row [1, 3]: mean 2, var 1 -> [-1, 1] * rsqrt(1 + eps).
  auto x = makeTensor(DType::F32, {2, 2}, {1, 3, 5, 5});
  auto w = makeTensor(DType::F32, {2}, {2, 3});
  auto b = makeTensor(DType::F32, {2}, {0.5, -0.5});
  OwnedTensor y(DType::F32, {2, 2});
  const double r = 1 / std::sqrt(1.0 + 1e-5);
  ASSERT_OK(run(OpId::LayerNorm, {x, w, b}, {y}, {1, 1}, {1e-5}));
  EXPECT_VALUES(*y, (std::vector<double>{-2 * r + 0.5, 3 * r - 0.5, 0.5, -0.5}),
                1e-6);
  ASSERT_OK(run(OpId::LayerNorm, {x}, {y}, {0, 0}, {1e-5}));
  EXPECT_VALUES(*y, (std::vector<double>{-r, r, 0, 0}), 1e-6);
  ASSERT_OK(run(OpId::LayerNorm, {x, b}, {y}, {0, 1}, {1e-5}));
  EXPECT_VALUES(*y, (std::vector<double>{-r + 0.5, r - 0.5, 0.5, -0.5}), 1e-6);
  EXPECT_ERROR(run(OpId::LayerNorm, {x, w}, {y}, {1, 1}, {1e-5}),
               "do not match");
  auto h = makeTensor(DType::F16, {2, 2}, {1, 3, 4, 6});
  OwnedTensor hy(DType::F16, {2, 2});
  ASSERT_OK(run(OpId::LayerNorm, {h, w}, {hy}, {1, 0}, {0.0}));
  EXPECT_VALUES(*hy, (std::vector<double>{-2, 3, -2, 3}), 0);
}

//===----------------------------------------------------------------------===//
// rope
//===----------------------------------------------------------------------===//

/// Naive RoPE of one element, independent of the kernel's loop structure.
std::vector<double> naiveRope(const std::vector<double> &x, int64_t B,
                              int64_t H, int64_t S, int64_t D,
                              const std::vector<int64_t> &pos,
                              const std::vector<float> &invFreq, int conv,
                              float scaling) {
  const int64_t R = int64_t(invFreq.size());
  std::vector<double> out = x;
  for (int64_t row = 0; row < B * H * S; ++row) {
    const int64_t s = row % S;
    for (int64_t i = 0; i < R; ++i) {
      float angle = float(pos[size_t(s)]) * invFreq[size_t(i)];
      double c = double(std::cos(angle) * scaling),
             sn = double(std::sin(angle) * scaling);
      // Read pair (a, b), write it to (oa, ob): conv 2 reads interleaved
      // pairs and writes halves (DeepSeek's de-interleave + rotate_half).
      int64_t a = conv == 0 ? i : 2 * i, b = conv == 0 ? i + R : 2 * i + 1;
      int64_t oa = conv == 1 ? a : i, ob = conv == 1 ? b : i + R;
      double x1 = x[size_t(row * D + a)], x2 = x[size_t(row * D + b)];
      out[size_t(row * D + oa)] = x1 * c - x2 * sn;
      out[size_t(row * D + ob)] = x2 * c + x1 * sn;
    }
  }
  return out;
}

TEST(Rope, HandComputedQuarterTurn) {
  // One head, D = 2, R = 1: position 1 with inv_freq pi/2 rotates by 90°.
  auto x = makeTensor(DType::F32, {1, 1, 1, 2}, {1, 2});
  auto pos = makeTensor(DType::I64, {1}, {1});
  auto f = makeTensor(DType::F32, {1}, {M_PI / 2});
  OwnedTensor y(DType::F32, {1, 1, 1, 2});
  ASSERT_OK(run(OpId::Rope, {x, pos, f}, {y}, {0}, {1.0}));
  EXPECT_VALUES(*y, (std::vector<double>{-2, 1}), 1e-6);
  ASSERT_OK(run(OpId::Rope, {x, pos, f}, {y}, {1}, {2.0}));
  EXPECT_VALUES(*y, (std::vector<double>{-4, 2}), 1e-6);
}

TEST(Rope, EveryConventionWithPartialRotary) {
  const int64_t B = 1, H = 2, S = 3, D = 10;
  std::vector<float> freq = {1.0f, 0.1f, 0.01f}; // R = 3, dims 6..9 pass
  std::vector<int64_t> positions = {0, 5, 17};
  std::vector<double> xv = randomValues(size_t(B * H * S * D), 11);
  auto x = makeTensor(DType::F32, {B, H, S, D}, xv);
  auto pos = makeTensor(DType::I32, {S}, {0, 5, 17});
  auto f = makeTensor(DType::F32, {3}, {1.0, 0.1, 0.01});
  for (int conv : {0, 1, 2}) {
    OwnedTensor y(DType::F32, {B, H, S, D});
    ASSERT_OK(run(OpId::Rope, {x, pos, f}, {y}, {conv}, {0.75}));
    std::vector<double> want =
        naiveRope(xv, B, H, S, D, positions, freq, conv, 0.75f);
    EXPECT_VALUES(*y, want, 1e-6);
    for (int64_t row = 0; row < B * H * S; ++row)
      for (int64_t d = 6; d < D; ++d)
        EXPECT_EQ(values(*y)[size_t(row * D + d)], xv[size_t(row * D + d)]);
  }
}

TEST(Rope, HalfInPlaceAndDynamicSequence) {
  const int64_t D = 4;
  OwnedTensor x(DType::F16, {1, 1, 1, D}, 3 * D * 2);
  OwnedTensor pos(DType::I64, {1}, 3 * 8);
  auto f = makeTensor(DType::F32, {2}, {0.5, 0.25});
  for (int64_t S : {int64_t(1), int64_t(3)}) {
    int64_t xs[4] = {1, 1, S, D}, ps[1] = {S};
    ASSERT_OK(x->resize(xs, 4));
    ASSERT_OK(pos->resize(ps, 1));
    std::vector<double> xv = randomValues(size_t(S * D), 12);
    std::vector<int64_t> pv;
    for (int64_t s = 0; s < S; ++s) {
      pos->ptr<int64_t>()[s] = 7 + s;
      pv.push_back(7 + s);
    }
    for (size_t i = 0; i < xv.size(); ++i)
      setElement(*x, int64_t(i), xv[i]);
    xv = values(*x); // as rounded to f16
    Tensor alias = *x;
    ASSERT_OK(run(OpId::Rope, {x, pos, f}, {&alias}, {0}, {1.0}));
    std::vector<double> want =
        naiveRope(xv, 1, 1, S, D, pv, {0.5f, 0.25f}, 0, 1.0f);
    for (double &v : want)
      v = halfToFloat(floatToHalf(float(v)));
    EXPECT_VALUES(*x, want, 1e-3);
  }
}

TEST(Rope, DeinterleaveByHandAndInPlace) {
  // D = 4, R = 2, position 1, inv_freq {pi/2, 0}: pair (x0, x1) turns by
  // 90 degrees into (-x1, x0) at dims 0 and 2; pair (x2, x3) stays, at 1
  // and 3. In place (the output is the input) gives the same.
  auto x = makeTensor(DType::F32, {1, 1, 1, 4}, {1, 2, 3, 4});
  auto pos = makeTensor(DType::I64, {1}, {1});
  auto f = makeTensor(DType::F32, {2}, {M_PI / 2, 0});
  OwnedTensor y(DType::F32, {1, 1, 1, 4});
  ASSERT_OK(run(OpId::Rope, {x, pos, f}, {y}, {2}, {1.0}));
  EXPECT_VALUES(*y, (std::vector<double>{-2, 3, 1, 4}), 1e-6);
  Tensor alias = *x;
  ASSERT_OK(run(OpId::Rope, {x, pos, f}, {&alias}, {2}, {1.0}));
  EXPECT_VALUES(*x, (std::vector<double>{-2, 3, 1, 4}), 1e-6);
}

TEST(Rope, Errors) {
  auto x = makeTensor(DType::F32, {1, 1, 2, 4}, {});
  auto pos = makeTensor(DType::I64, {2}, {0, -1});
  auto f = makeTensor(DType::F32, {2}, {1, 1});
  OwnedTensor y(DType::F32, {1, 1, 2, 4});
  EXPECT_ERROR(run(OpId::Rope, {x, pos, f}, {y}, {0}, {1.0}),
               "negative position");
  auto pos1 = makeTensor(DType::I64, {1}, {0});
  EXPECT_ERROR(run(OpId::Rope, {x, pos1, f}, {y}, {0}, {1.0}),
               "sequence length");
  auto pos2 = makeTensor(DType::I64, {2}, {0, 1});
  auto f3 = makeTensor(DType::F32, {3}, {1, 1, 1});
  EXPECT_ERROR(run(OpId::Rope, {x, pos2, f3}, {y}, {0}, {1.0}),
               "more than half");
  EXPECT_ERROR(run(OpId::Rope, {x, pos2, f}, {y}, {3}, {1.0}), "convention");
  auto x3 = makeTensor(DType::F32, {1, 2, 4}, {});
  EXPECT_ERROR(run(OpId::Rope, {x3, pos2, f}, {y}, {0}, {1.0}), "[B, H, S, D]");
  auto pf = makeTensor(DType::F32, {2}, {0, 1});
  EXPECT_ERROR(run(OpId::Rope, {x, pf, f}, {y}, {0}, {1.0}), "i64 or i32");
}

//===----------------------------------------------------------------------===//
// sdpa
//===----------------------------------------------------------------------===//

struct SdpaCase {
  int64_t B, H, Hkv, S, T, D, Dv;
  bool hasMask, hasPos, causal;
  int64_t window;
  double scale, softcap;
};

/// A naive double-precision attention, written independently of the kernel:
/// it scores every key and excludes the invisible ones with -inf.
std::vector<double> naiveSdpa(const SdpaCase &c, const std::vector<double> &q,
                              const std::vector<double> &k,
                              const std::vector<double> &v,
                              const std::vector<double> &mask, // [S, T] or {}
                              const std::vector<int64_t> &pos) {
  std::vector<double> out(size_t(c.B * c.H * c.S * c.Dv), 0.0);
  for (int64_t b = 0; b < c.B; ++b)
    for (int64_t h = 0; h < c.H; ++h) {
      const int64_t hk = h / (c.H / c.Hkv);
      for (int64_t s = 0; s < c.S; ++s) {
        std::vector<double> sc(size_t(c.T));
        const int64_t p = c.hasPos ? pos[size_t(s)] : s;
        for (int64_t j = 0; j < c.T; ++j) {
          double dot = 0;
          for (int64_t d = 0; d < c.D; ++d)
            dot += q[size_t(((b * c.H + h) * c.S + s) * c.D + d)] *
                   k[size_t(((b * c.Hkv + hk) * c.T + j) * c.D + d)];
          double x = c.scale * dot;
          if (c.softcap > 0)
            x = c.softcap * std::tanh(x / c.softcap);
          if (c.hasMask)
            x += mask[size_t(s * c.T + j)];
          bool visible =
              !c.causal || (j <= p && (c.window == 0 || j > p - c.window));
          sc[size_t(j)] = visible ? x : -kInf;
        }
        double mx = -kInf;
        for (double x : sc)
          mx = std::max(mx, x);
        if (mx == -kInf)
          continue; // zeros
        double sum = 0;
        for (double &x : sc)
          sum += (x = std::exp(x - mx));
        for (int64_t d = 0; d < c.Dv; ++d) {
          double acc = 0;
          for (int64_t j = 0; j < c.T; ++j)
            acc += sc[size_t(j)] *
                   v[size_t(((b * c.Hkv + hk) * c.T + j) * c.Dv + d)];
          out[size_t(((b * c.H + h) * c.S + s) * c.Dv + d)] = acc / sum;
        }
      }
    }
  return out;
}

void checkSdpa(const SdpaCase &c, const std::vector<int64_t> &positions,
               unsigned seed) {
  std::vector<double> qv = randomValues(size_t(c.B * c.H * c.S * c.D), seed);
  std::vector<double> kv =
      randomValues(size_t(c.B * c.Hkv * c.T * c.D), seed + 1);
  std::vector<double> vv =
      randomValues(size_t(c.B * c.Hkv * c.T * c.Dv), seed + 2);
  std::vector<double> mv;
  if (c.hasMask) {
    mv = randomValues(size_t(c.S * c.T), seed + 3);
    mv[1] = -kInf; // an additive -inf entry too
  }
  auto q = makeTensor(DType::F32, {c.B, c.H, c.S, c.D}, qv);
  auto k = makeTensor(DType::F32, {c.B, c.Hkv, c.T, c.D}, kv);
  auto v = makeTensor(DType::F32, {c.B, c.Hkv, c.T, c.Dv}, vv);
  auto m = makeTensor(DType::F32, {c.S, c.T}, mv);
  auto p = makeI64({c.S}, positions);
  std::vector<Tensor *> ins = {q, k, v};
  if (c.hasMask)
    ins.push_back(m);
  if (c.hasPos)
    ins.push_back(p);
  OwnedTensor y(DType::F32, {c.B, c.H, c.S, c.Dv});
  OwnedTensor y2(DType::F32, {c.B, c.H, c.S, c.Dv});
  std::vector<int64_t> ints = {c.hasMask, c.hasPos, c.causal, c.window};
  ASSERT_OK(run(OpId::Sdpa, ins, {y}, ints, {c.scale, c.softcap}));
  EXPECT_VALUES(*y, naiveSdpa(c, qv, kv, vv, mv, positions), 1e-5);
  ThreadedContext tc;
  ASSERT_OK(run(OpId::Sdpa, ins, {y2}, ints, {c.scale, c.softcap}, &tc.ctx));
  EXPECT_EQ(values(*y), values(*y2));
}

TEST(Sdpa, GqaCausalPositionsWindowSoftcapMask) {
  // Decoding-like: 3 new queries at positions 4..6 in a cache of 9.
  SdpaCase c{2, 4, 2, 3, 9, 8, 6, true, true, true, 3, 0.35, 2.0};
  checkSdpa(c, {4, 5, 6}, 21);
}

TEST(Sdpa, Variants) {
  // Plain (no mask, no causal), MHA.
  checkSdpa({1, 2, 2, 4, 5, 4, 4, false, false, false, 0, 0.5, 0.0}, {}, 31);
  // Causal without positions (prefill), GQA 4:1, Dv != D.
  checkSdpa({1, 4, 1, 5, 5, 4, 3, false, false, true, 0, 0.5, 0.0}, {}, 41);
  // Causal, mask, positions beyond T and a window.
  checkSdpa({1, 2, 1, 2, 6, 4, 4, true, true, true, 2, 1.0, 0.0}, {3, 40}, 51);
  // Softcap only.
  checkSdpa({1, 1, 1, 3, 4, 4, 4, false, false, false, 0, 3.0, 1.0}, {}, 61);
}

TEST(Sdpa, RowWithoutVisibleKeysIsZero) {
  auto q = makeTensor(DType::F32, {1, 1, 2, 2}, {1, 1, 1, 1});
  auto k = makeTensor(DType::F32, {1, 1, 2, 2}, {1, 0, 0, 1});
  auto v = makeTensor(DType::F32, {1, 1, 2, 2}, {1, 2, 3, 4});
  auto m = makeTensor(DType::F32, {2, 2}, {-kInf, -kInf, 0, 0});
  auto pos = makeI64({2}, {-1, 1}); // position -1 sees nothing
  OwnedTensor y(DType::F32, {1, 1, 2, 2});
  ASSERT_OK(run(OpId::Sdpa, {q, k, v, m}, {y}, {1, 0, 0, 0}, {1.0, 0.0}));
  EXPECT_VALUES(*y, (std::vector<double>{0, 0, 2, 3}), 1e-6);
  ASSERT_OK(run(OpId::Sdpa, {q, k, v, pos}, {y}, {0, 1, 1, 0}, {1.0, 0.0}));
  EXPECT_VALUES(*y, (std::vector<double>{0, 0, 2, 3}), 1e-6);
}

TEST(Sdpa, CausalOnlyVisitsTheAllowedRange) {
  // Keys/values outside [p - window + 1, p] are NaN: a kernel that touched
  // them (even with a zero weight) would produce NaN. Decoding cost thus
  // depends on the position, not on the cache length.
  const int64_t T = 64, D = 4;
  std::vector<double> kv(size_t(T * D), std::nan(""));
  for (int64_t j = 5; j <= 7; ++j)
    for (int64_t d = 0; d < D; ++d)
      kv[size_t(j * D + d)] = double(j);
  auto q = makeTensor(DType::F32, {1, 1, 1, D}, {0, 0, 0, 0});
  auto k = makeTensor(DType::F32, {1, 1, T, D}, kv);
  auto v = makeTensor(DType::F32, {1, 1, T, D}, kv);
  auto pos = makeI64({1}, {7});
  OwnedTensor y(DType::F32, {1, 1, 1, D});
  ASSERT_OK(run(OpId::Sdpa, {q, k, v, pos}, {y}, {0, 1, 1, 3}, {1.0, 0.0}));
  EXPECT_VALUES(*y, (std::vector<double>{6, 6, 6, 6}), 1e-6);
}

TEST(Sdpa, HalfInputs) {
  auto q = makeTensor(DType::BF16, {1, 1, 1, 2}, {1, 0});
  auto k = makeTensor(DType::BF16, {1, 1, 2, 2}, {0, 0, 0, 0});
  auto v = makeTensor(DType::BF16, {1, 1, 2, 2}, {1, 2, 3, 4});
  OwnedTensor y(DType::BF16, {1, 1, 1, 2});
  ASSERT_OK(run(OpId::Sdpa, {q, k, v}, {y}, {0, 0, 0, 0}, {1.0, 0.0}));
  EXPECT_VALUES(*y, (std::vector<double>{2, 3}), 0);
}

TEST(Sdpa, Errors) {
  auto q = makeTensor(DType::F32, {1, 3, 1, 2}, {});
  auto k = makeTensor(DType::F32, {1, 2, 4, 2}, {});
  auto v = makeTensor(DType::F32, {1, 2, 4, 2}, {});
  OwnedTensor y(DType::F32, {1, 3, 1, 2});
  EXPECT_ERROR(run(OpId::Sdpa, {q, k, v}, {y}, {0, 0, 0, 0}, {1.0, 0.0}),
               "not a multiple");
  auto q2 = makeTensor(DType::F32, {1, 2, 1, 2}, {});
  auto m = makeTensor(DType::F32, {3, 4}, {});
  EXPECT_ERROR(run(OpId::Sdpa, {q2, k, v, m}, {y}, {1, 0, 0, 0}, {1.0, 0.0}),
               "does not broadcast");
  EXPECT_ERROR(run(OpId::Sdpa, {q2, k, v}, {y}, {1, 0, 0, 0}, {1.0, 0.0}),
               "do not match");
  auto p = makeTensor(DType::I64, {2}, {0, 1});
  EXPECT_ERROR(run(OpId::Sdpa, {q2, k, v, p}, {y}, {0, 1, 1, 0}, {1.0, 0.0}),
               "positions");
  auto kd = makeTensor(DType::F32, {1, 2, 4, 3}, {});
  EXPECT_ERROR(run(OpId::Sdpa, {q2, kd, v}, {y}, {0, 0, 0, 0}, {1.0, 0.0}),
               "shapes do not match");
  EXPECT_ERROR(run(OpId::Sdpa, {q2, k, v}, {y}, {0, 0, 1, -1}, {1.0, 0.0}),
               "window");
}

//===----------------------------------------------------------------------===//
// sdpa over an int8 KV cache
//===----------------------------------------------------------------------===//

/// An int8 KV cache of `shape` with random q in [-127, 127] and scales in
/// [0, 0.05) (row 0: scale 0, as a zeroed cache), and the same rows
/// dequantized (scale * q) in an f32 tensor.
void randomInt8Cache(std::vector<int64_t> shape, unsigned seed,
                     OwnedTensor &cache, OwnedTensor &dequantized) {
  cache = OwnedTensor(DType::QAct, shape, 0, int8KvCacheQuant());
  dequantized = OwnedTensor(DType::F32, shape);
  const Int8KvCacheRows c = Int8KvCacheRows::of(*cache);
  std::mt19937 gen(seed);
  std::uniform_int_distribution<int> qd(-127, 127);
  std::uniform_real_distribution<float> sd(0.0f, 0.05f);
  for (int64_t r = 0; r < c.rows; ++r) {
    c.scales[r] = r == 0 ? 0.0f : sd(gen);
    for (int64_t d = 0; d < c.cols; ++d) {
      c.q[r * c.cols + d] = int8_t(qd(gen));
      dequantized->ptr<float>()[r * c.cols + d] =
          c.scales[r] * float(c.q[r * c.cols + d]);
    }
  }
}

TEST(Sdpa, Int8CacheEqualsTheDequantizedFloatCache) {
  // B, H, Hkv, S, T, D, Dv; mask, positions, causal; window; scale, softcap.
  const std::vector<std::pair<SdpaCase, std::vector<int64_t>>> cases = {
      // GQA 2:1, odd D and T, decode-like positions.
      {{1, 4, 2, 3, 7, 12, 12, false, true, true, 0, 0.3, 0.0}, {2, 5, 6}},
      // Sliding window, softcap, batch 2, Dv != D.
      {{2, 4, 2, 2, 9, 12, 5, false, true, true, 3, 0.5, 2.0}, {4, 8}},
      // Causal prefill without positions; not causal with a mask.
      {{1, 2, 1, 5, 5, 6, 6, false, false, true, 0, 0.5, 0.0}, {}},
      {{1, 2, 2, 3, 11, 8, 8, true, false, false, 0, 0.5, 0.0}, {}},
  };
  unsigned seed = 71;
  for (const auto &[c, positions] : cases) {
    auto q = makeTensor(DType::F32, {c.B, c.H, c.S, c.D},
                        randomValues(size_t(c.B * c.H * c.S * c.D), seed++));
    OwnedTensor k, kf, v, vf;
    randomInt8Cache({c.B, c.Hkv, c.T, c.D}, seed++, k, kf);
    randomInt8Cache({c.B, c.Hkv, c.T, c.Dv}, seed++, v, vf);
    auto m = makeTensor(DType::F32, {c.S, c.T},
                        randomValues(size_t(c.S * c.T), seed++));
    auto p = makeI64({int64_t(positions.size())}, positions);
    std::vector<Tensor *> qi = {q, k, v}, fi = {q, kf, vf};
    for (Tensor *extra :
         {c.hasMask ? m.get() : nullptr, c.hasPos ? p.get() : nullptr})
      if (extra) {
        qi.push_back(extra);
        fi.push_back(extra);
      }
    const std::vector<int64_t> ints = {c.hasMask, c.hasPos, c.causal, c.window};
    OwnedTensor yq(DType::F32, {c.B, c.H, c.S, c.Dv}),
        yf(DType::F32, {c.B, c.H, c.S, c.Dv});
    ASSERT_OK(run(OpId::Sdpa, qi, {yq}, ints, {c.scale, c.softcap}));
    ASSERT_OK(run(OpId::Sdpa, fi, {yf}, ints, {c.scale, c.softcap}));
    // Bit for bit: the same f32 values in the same order.
    EXPECT_EQ(std::memcmp(yq->data, yf->data, yq->nbytes()), 0)
        << "H=" << c.H << " Hkv=" << c.Hkv << " T=" << c.T << " D=" << c.D;
  }
}

TEST(Sdpa, ZeroedInt8CacheReadsAsZeros) {
  // A cache as the module allocates it: q = 0, scale 0 (never divided by).
  OwnedTensor k(DType::QAct, {1, 1, 3, 4}, 0, int8KvCacheQuant());
  OwnedTensor v(DType::QAct, {1, 1, 3, 4}, 0, int8KvCacheQuant());
  auto q = makeTensor(DType::F32, {1, 2, 1, 4}, {1, 2, 3, 4, 5, 6, 7, 8});
  OwnedTensor y(DType::F32, {1, 2, 1, 4});
  ASSERT_OK(run(OpId::Sdpa, {q, k, v}, {y}, {0, 0, 0, 0}, {0.5, 0.0}));
  EXPECT_VALUES(*y, std::vector<double>(8, 0.0), 0);
}

TEST(Sdpa, Int8CacheErrors) {
  auto q = makeTensor(DType::F32, {1, 2, 1, 4}, {});
  auto kf = makeTensor(DType::F32, {1, 1, 3, 4}, {});
  OwnedTensor k(DType::QAct, {1, 1, 3, 4}, 0, int8KvCacheQuant());
  OwnedTensor y(DType::F32, {1, 2, 1, 4});
  EXPECT_ERROR(run(OpId::Sdpa, {q, k, kf}, {y}, {0, 0, 0, 0}, {0.5, 0.0}),
               "both be quantized or neither");
  EXPECT_ERROR(run(OpId::Sdpa, {q, kf, k}, {y}, {0, 0, 0, 0}, {0.5, 0.0}),
               "both be quantized or neither");
  QuantInfo block = int8KvCacheQuant();
  block.groupSize = kQActBlock;
  OwnedTensor kb(DType::QAct, {1, 1, 3, 4}, 0, block);
  EXPECT_ERROR(run(OpId::Sdpa, {q, kb, kb}, {y}, {0, 0, 0, 0}, {0.5, 0.0}),
               "not an int8 KV cache");
}

//===----------------------------------------------------------------------===//
// kv_cache_update
//===----------------------------------------------------------------------===//

TEST(KvCacheUpdate, AliasedWritesInPlace) {
  // Cache [1, 2, 4, 2]; write 2 new positions.
  OwnedTensor cache(DType::F32, {1, 2, 4, 2});
  for (int i = 0; i < 16; ++i)
    cache->ptr<float>()[i] = -1;
  auto pos = makeI64({2}, {2, 0});
  auto val = makeTensor(DType::F32, {1, 2, 2, 2}, {1, 2, 3, 4, 5, 6, 7, 8});
  Tensor out = *cache; // the planner aliases the result with the cache
  ASSERT_OK(run(OpId::KvCacheUpdate, {cache, pos, val}, {&out}, {2}));
  EXPECT_SHAPE(out, 1, 2, 4, 2);
  EXPECT_VALUES(*cache,
                (std::vector<double>{3, 4, -1, -1, 1, 2, -1, -1, //
                                     7, 8, -1, -1, 5, 6, -1, -1}),
                0);
}

TEST(KvCacheUpdate, NotAliasedCopiesFirst) {
  auto cache = makeTensor(DType::F16, {1, 1, 3, 2}, {1, 2, 3, 4, 5, 6});
  auto pos = makeTensor(DType::I32, {1}, {1});
  auto val = makeTensor(DType::F16, {1, 1, 1, 2}, {9, 10});
  OwnedTensor out(DType::F16, {1, 1, 3, 2});
  ASSERT_OK(run(OpId::KvCacheUpdate, {cache, pos, val}, {out}, {-2}));
  EXPECT_VALUES(*out, (std::vector<double>{1, 2, 9, 10, 5, 6}), 0);
  EXPECT_VALUES(*cache, (std::vector<double>{1, 2, 3, 4, 5, 6}), 0);
}

TEST(KvCacheUpdate, Errors) {
  auto cache = makeTensor(DType::F32, {1, 1, 3, 2}, {1, 2, 3, 4, 5, 6});
  auto val = makeTensor(DType::F32, {1, 1, 2, 2}, {9, 9, 9, 9});
  Tensor out = *cache;
  auto bad = makeI64({2}, {0, 3});
  EXPECT_ERROR(run(OpId::KvCacheUpdate, {cache, bad, val}, {&out}, {2}),
               "index 3 is out of range");
  // Nothing was written (indices are validated first).
  EXPECT_VALUES(*cache, (std::vector<double>{1, 2, 3, 4, 5, 6}), 0);
  auto neg = makeI64({2}, {-1, 0});
  EXPECT_ERROR(run(OpId::KvCacheUpdate, {cache, neg, val}, {&out}, {2}),
               "out of range");
  auto pos1 = makeI64({1}, {0});
  EXPECT_ERROR(run(OpId::KvCacheUpdate, {cache, pos1, val}, {&out}, {2}),
               "does not match");
  auto hval = makeTensor(DType::F16, {1, 1, 2, 2}, {});
  auto pos = makeI64({2}, {0, 1});
  EXPECT_ERROR(run(OpId::KvCacheUpdate, {cache, pos, hval}, {&out}, {2}),
               "unsupported dtype");
  EXPECT_ERROR(run(OpId::KvCacheUpdate, {cache, pos, val}, {&out}, {4}),
               "out of range");
}

/// An int8 cache [1, 2, 4, 3] whose every row holds q = {7, 7, 7}, scale
/// 0.5, zero point 9 (a marker: the update writes 0).
OwnedTensor markedInt8Cache() {
  OwnedTensor cache(DType::QAct, {1, 2, 4, 3}, 0, int8KvCacheQuant());
  const Int8KvCacheRows c = Int8KvCacheRows::of(*cache);
  for (int64_t r = 0; r < c.rows; ++r) {
    for (int64_t d = 0; d < c.cols; ++d)
      c.q[r * c.cols + d] = 7;
    c.scales[r] = 0.5f;
    c.zps[r] = 9;
  }
  return cache;
}

/// Row r of an int8 cache: its q values, scale and zero point.
struct Int8Row {
  std::vector<int> q;
  float scale;
  int32_t zp;
  bool operator==(const Int8Row &o) const {
    return q == o.q && std::memcmp(&scale, &o.scale, 4) == 0 && zp == o.zp;
  }
};
std::ostream &operator<<(std::ostream &os, const Int8Row &r) {
  os << "{";
  for (int x : r.q)
    os << x << " ";
  return os << "scale " << r.scale << " zp " << r.zp << "}";
}
Int8Row int8Row(const Tensor &cache, int64_t r) {
  const Int8KvCacheRows c = Int8KvCacheRows::of(cache);
  Int8Row row{{}, c.scales[r], c.zps[r]};
  for (int64_t d = 0; d < c.cols; ++d)
    row.q.push_back(c.q[r * c.cols + d]);
  return row;
}

TEST(KvCacheUpdate, Int8CacheQuantizesEachWrittenRow) {
  // Head 0 writes position 3 then 0, head 1 the same; values by hand:
  //  {1, -0.5, 0.25}: amax 1, scale 1/127, q = {127, -63.5 -> -64 (ties to
  //  even), 31.75 -> 32}; {0, 0, 0}: scale 1, q 0; {-2, 1, 0}: scale
  //  2/127, q = {-127, 63.5 -> 64, 0}; {3, 3, -3}: scale 3/127, q = +-127.
  OwnedTensor cache = markedInt8Cache();
  auto val = makeTensor(DType::F32, {1, 2, 2, 3},
                        {1, -0.5, 0.25, 0, 0, 0, -2, 1, 0, 3, 3, -3});
  auto pos = makeI64({2}, {3, 0});
  Tensor out = *cache; // aliased, as the planner makes it
  ASSERT_OK(run(OpId::KvCacheUpdate, {cache, pos, val}, {&out}, {2}));
  EXPECT_SHAPE(out, 1, 2, 4, 3);
  const Int8Row marker{{7, 7, 7}, 0.5f, 9};
  const std::vector<Int8Row> want = {
      {{0, 0, 0}, 1.0f, 0},              // head 0, position 0
      marker,                            // 1
      marker,                            // 2
      {{127, -64, 32}, 1.0f / 127, 0},   // 3
      {{127, 127, -127}, 3.0f / 127, 0}, // head 1, position 0
      marker,
      marker,
      {{-127, 64, 0}, 2.0f / 127, 0},
  };
  for (int64_t r = 0; r < 8; ++r)
    EXPECT_EQ(int8Row(*cache, r), want[size_t(r)]) << "row " << r;

  // quantize(value) with the F16 values, i32 positions, dim -2, into a copy
  // (the cache itself is then unchanged).
  OwnedTensor src = markedInt8Cache();
  auto hval = makeTensor(DType::F16, {1, 2, 1, 3}, {0.1, -0.7, 0.3, 5, 6, 7});
  auto pos1 = makeTensor(DType::I32, {1}, {2});
  OwnedTensor copy(DType::QAct, {1, 2, 4, 3}, 0, int8KvCacheQuant());
  ASSERT_OK(run(OpId::KvCacheUpdate, {src, pos1, hval}, {copy}, {-2}));
  std::vector<double> hv = values(*hval);
  for (int64_t h = 0; h < 2; ++h) {
    Int8Row row{{}, 0.0f, 0};
    int8_t qs[3];
    row.scale = quantizeInt8KvRow(
        [&](int64_t i) { return float(hv[size_t(h * 3 + i)]); }, 3, qs);
    row.q.assign(qs, qs + 3);
    for (int64_t p = 0; p < 4; ++p) {
      EXPECT_EQ(int8Row(*copy, h * 4 + p), p == 2 ? row : marker) << h << p;
      EXPECT_EQ(int8Row(*src, h * 4 + p), marker);
    }
  }
}

TEST(KvCacheUpdate, Int8CacheErrors) {
  OwnedTensor cache = markedInt8Cache();
  Tensor out = *cache;
  auto val = makeTensor(DType::F32, {1, 2, 2, 3}, std::vector<double>(12, 1));
  auto pos = makeI64({2}, {0, 1});
  auto bad = makeI64({2}, {1, 4});
  EXPECT_ERROR(run(OpId::KvCacheUpdate, {cache, bad, val}, {&out}, {2}),
               "index 4 is out of range");
  auto neg = makeI64({2}, {-1, 0});
  EXPECT_ERROR(run(OpId::KvCacheUpdate, {cache, neg, val}, {&out}, {2}),
               "out of range");
  EXPECT_ERROR(run(OpId::KvCacheUpdate, {cache, pos, val}, {&out}, {1}),
               "along dimension 2");
  EXPECT_ERROR(run(OpId::KvCacheUpdate, {cache, pos, val}, {&out}, {3}),
               "along dimension 2");
  auto ival = makeTensor(DType::I32, {1, 2, 2, 3}, {});
  EXPECT_ERROR(run(OpId::KvCacheUpdate, {cache, pos, ival}, {&out}, {2}),
               "must be float");
  auto wide = makeTensor(DType::F32, {1, 2, 2, 4}, {});
  EXPECT_ERROR(run(OpId::KvCacheUpdate, {cache, pos, wide}, {&out}, {2}),
               "does not match");
  auto pos3 = makeI64({3}, {0, 1, 2});
  EXPECT_ERROR(run(OpId::KvCacheUpdate, {cache, pos3, val}, {&out}, {2}),
               "does not match");
  OwnedTensor f32Out(DType::F32, {1, 2, 4, 3});
  EXPECT_ERROR(run(OpId::KvCacheUpdate, {cache, pos, val}, {f32Out}, {2}),
               "must be the cache's type");
  QuantInfo asym = int8KvCacheQuant();
  asym.symmetric = false;
  OwnedTensor other(DType::QAct, {1, 2, 4, 3}, 0, asym);
  Tensor otherOut = *other;
  EXPECT_ERROR(run(OpId::KvCacheUpdate, {other, pos, val}, {&otherOut}, {2}),
               "not an int8 KV cache");
  // Float values into a float cache of another type, and the reverse.
  auto fcache = makeTensor(DType::F32, {1, 2, 4, 3}, {});
  Tensor fout = *fcache;
  EXPECT_ERROR(run(OpId::KvCacheUpdate, {fcache, pos, cache}, {&fout}, {2}),
               "unsupported");
  // Nothing was written.
  for (int64_t r = 0; r < 8; ++r)
    EXPECT_EQ(int8Row(*cache, r), (Int8Row{{7, 7, 7}, 0.5f, 9})) << r;
}

} // namespace
