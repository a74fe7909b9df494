//===- quantize_test.cpp - quantize_dynamic: bit-identical to portable ----===//
#include "helpers.h"

#include <limits>

namespace etllm::rt::cpu::test {
namespace {

/// The activation schemes: per token (asymmetric, symmetric), per block.
enum Mode { Asym = 0, Sym = 1, Block = 2 };
const char *modeName(int m) {
  return m == Asym ? " asym" : m == Sym ? " sym" : " per block";
}

/// Runs quantize_dynamic both ways and expects identical bytes (values,
/// scales, zero points or block sums).
void checkQuantize(const Config &cfg, std::vector<int64_t> shape,
                   const std::vector<float> &xv, int mode,
                   const std::string &what) {
  OwnedTensor x = f32Tensor(shape, xv);
  QuantInfo q;
  q.bits = 8;
  q.symmetric = mode != Asym;
  q.perToken = true;
  q.groupSize = mode == Block ? kQActBlock : 0;
  OwnedTensor ref(DType::QAct, shape, 0, q), got(DType::QAct, shape, 0, q);
  ASSERT_OK(runPortable(OpId::QuantizeDynamic, {x}, {ref}));
  Context ctx(cfg.threads);
  std::vector<Tensor *> ins = {x}, outs = {got};
  std::vector<int64_t> ints;
  std::vector<double> floats;
  bool handled = false;
  ASSERT_OK(denseKernel(OpId::QuantizeDynamic)(
      makeArgs(ins, outs, ints, floats, ctx.get()), cfg.isa, handled));
  ASSERT_TRUE(handled) << what;
  ASSERT_EQ(rt::testing::shape(*got), rt::testing::shape(*ref)) << what;
  const size_t bytes = ref->nbytes();
  ASSERT_EQ(bytes, got->nbytes());
  const uint8_t *a = got->ptr<uint8_t>(), *b = ref->ptr<uint8_t>();
  // Compare the defined sections only (the alignment padding is unwritten).
  const int64_t K = shape.back(), R = x->numel() / std::max<int64_t>(K, 1);
  const QActLayout l = QActLayout::compute(R, K, q);
  for (int64_t r = 0; r < R; ++r)
    for (int64_t k = 0; k < l.rowStride; ++k) {
      const int64_t i = r * l.rowStride + k;
      ASSERT_EQ(int(int8_t(a[i])), int(int8_t(b[i])))
          << what << ": q[" << r << ", " << k
          << "] of x = " << (k < K ? xv[size_t(r * K + k)] : 0.0f);
    }
  const size_t params = size_t(R * l.blocks) * 4;
  EXPECT_EQ(0, std::memcmp(a + l.scalesOff, b + l.scalesOff, params))
      << what << ": scales";
  if (mode == Block)
    EXPECT_EQ(0, std::memcmp(a + l.sumsOff, b + l.sumsOff, params))
        << what << ": block sums";
  else
    EXPECT_EQ(0, std::memcmp(a + l.zpOff, b + l.zpOff, size_t(R) * 4))
        << what << ": zero points";
}

class QuantizeTest : public ConfigTest {};

TEST_P(QuantizeTest, RandomRowsBitIdentical) {
  unsigned seed = 1;
  for (int64_t K : {1, 7, 8, 9, 31, 32, 33, 63, 100, 257, 2048})
    for (int64_t R : {1, 3, 17})
      for (int mode : {Asym, Sym, Block}) {
        std::mt19937 gen(seed++);
        std::vector<float> xv = randomFloats(size_t(R * K), gen, -4.0f, 4.0f);
        // Vary the row ranges: all-positive, all-negative, tiny, huge.
        for (int64_t r = 0; r < R; ++r)
          for (int64_t k = 0; k < K; ++k) {
            float &v = xv[size_t(r * K + k)];
            switch (r % 5) {
            case 1:
              v = std::fabs(v) + 1.0f;
              break;
            case 2:
              v = -std::fabs(v) * 100.0f;
              break;
            case 3:
              v *= 1e-20f;
              break;
            case 4:
              v *= 1e30f;
              break;
            }
          }
        checkQuantize(GetParam(), {R, K}, xv, mode,
                      "K=" + std::to_string(K) + " R=" + std::to_string(R) +
                          modeName(mode));
      }
}

TEST_P(QuantizeTest, RoundingTiesBitIdentical) {
  // x / scale lands on exact .5 values: ties must round to even.
  for (int mode : {Asym, Sym}) {
    std::vector<float> xv;
    const float maxv = mode == Sym ? 127.0f : 127.5f;
    for (int i = -255; i <= 255; ++i)
      xv.push_back(float(i) * 0.5f);
    xv.push_back(maxv);
    xv.push_back(-128.0f);
    checkQuantize(GetParam(), {1, int64_t(xv.size())}, xv, mode, "ties");
  }
  // Per block: each block of 32 holds 127 (scale 1) and halves.
  std::vector<float> xb;
  for (int b = 0; b < 6; ++b)
    for (int i = 0; i < 32; ++i)
      xb.push_back(i == 0 ? 127.0f : float((b * 32 + i) % 255 - 127) * 0.5f);
  checkQuantize(GetParam(), {1, int64_t(xb.size())}, xb, Block, "block ties");
}

TEST_P(QuantizeTest, SpecialValuesBitIdentical) {
  const float inf = std::numeric_limits<float>::infinity();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float den = std::numeric_limits<float>::denorm_min();
  std::vector<std::vector<float>> rows = {
      {0, 0, 0, 0, 0, 0, 0, 0, 0, 0},               // constant zero row
      {2, 2, 2, 2, 2, 2, 2, 2, 2, 2},               // constant row
      {-0.0f, 0, -0.0f, 1, 2, -3, 0, 0, 0, 0},      // signed zeros
      {nan, 1, 2, 3, -4, 5, 6, 7, 8, 9},            // a NaN
      {1, 2, nan, nan, nan, nan, nan, nan, nan, 5}, // many NaNs
      {inf, 1, -2, 3, 4, 5, 6, 7, 8, 9},            // +inf
      {-inf, 1, -2, 3, 4, 5, 6, 7, 8, 9},           // -inf
      {inf, -inf, 1, 2, 3, 4, 5, 6, 7, 8},          // both
      {den, -den, den, 0, 0, 0, 0, 0, 0, 0},        // subnormals
      {3e38f, -3e38f, 1, 0, 0, 0, 0, 0, 0, 0},      // near overflow
  };
  for (int mode : {Asym, Sym, Block})
    for (size_t i = 0; i < rows.size(); ++i)
      checkQuantize(GetParam(), {1, int64_t(rows[i].size())}, rows[i], mode,
                    "special row " + std::to_string(i) + modeName(mode));
}

TEST_P(QuantizeTest, HigherRankAndEmpty) {
  std::mt19937 gen(4);
  checkQuantize(GetParam(), {2, 3, 40}, randomFloats(240, gen), Asym, "rank 3");
  checkQuantize(GetParam(), {2, 3, 40}, randomFloats(240, gen), Block,
                "rank 3 per block");
  checkQuantize(GetParam(), {0, 16}, {}, Asym, "empty");
}

TEST(QuantizeTest, PerTensorDeclinesToPortable) {
  std::mt19937 gen(5);
  OwnedTensor x = f32Tensor({3, 16}, randomFloats(48, gen));
  QuantInfo q;
  q.bits = 8;
  q.symmetric = false;
  q.perToken = false;
  OwnedTensor ref(DType::QAct, {3, 16}, 0, q), got(DType::QAct, {3, 16}, 0, q);
  ExecContext ctx;
  std::vector<Tensor *> ins = {x}, outs = {got};
  std::vector<int64_t> ints;
  std::vector<double> floats;
  KernelArgs a = makeArgs(ins, outs, ints, floats, &ctx);
  bool handled = true;
  ASSERT_OK(denseKernel(OpId::QuantizeDynamic)(a, detectIsa(), handled));
  EXPECT_FALSE(handled);
  ASSERT_OK(runDense(OpId::QuantizeDynamic, a, detectIsa()));
  ASSERT_OK(runPortable(OpId::QuantizeDynamic, {x}, {ref}));
  EXPECT_EQ(0, std::memcmp(got->data, ref->data, ref->nbytes()));
}

INSTANTIATE_TEST_SUITE_P(Configs, QuantizeTest,
                         ::testing::ValuesIn(allConfigs()), configName);

} // namespace
} // namespace etllm::rt::cpu::test
