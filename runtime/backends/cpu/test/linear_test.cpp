//===- linear_test.cpp - Packed f32 linear vs the portable kernel ---------===//
//
// Tolerance: both kernels sum the same K products in f32, in different
// orders (portable: sequential in k; optimized: FMA, two partial sums in
// decode, 256-k chunks in prefill). Each order's rounding error is at most
// ~K u sum_k |x_k w_k| (u = 2^-24) and in practice ~sqrt(K) u times that;
// with K <= 600 here the observed differences are below 1e-6 of
// mag = sum_k |x_k w_k| + |b|, so |optimized - portable| <= 1e-5 mag leaves
// an order of magnitude of margin without hiding a wrong term (one missing
// or doubled product would be ~1/K = 1e-3 of mag).
//
//===----------------------------------------------------------------------===//
#include "helpers.h"

namespace etllm::rt::cpu::test {
namespace {

constexpr double kLinearRel = 1e-5;

struct LinearCase {
  std::vector<int64_t> xShape; // [..., K]
  int64_t n;
  bool bias;
};

/// Runs packed linear (config) and portable linear on random data; returns
/// the optimized output for cross-config comparisons.
std::vector<float> checkLinear(const Config &cfg, const LinearCase &c,
                               unsigned seed) {
  std::mt19937 gen(seed);
  const int64_t K = c.xShape.back(), N = c.n;
  int64_t M = 1;
  for (size_t i = 0; i + 1 < c.xShape.size(); ++i)
    M *= c.xShape[i];
  std::vector<float> xv = randomFloats(size_t(M * K), gen);
  std::vector<float> wv = randomFloats(size_t(N * K), gen);
  std::vector<float> bv = randomFloats(size_t(N), gen);
  OwnedTensor x = f32Tensor(c.xShape, xv);
  OwnedTensor w = f32Tensor({N, K}, wv);
  OwnedTensor b = f32Tensor({N}, bv);
  OwnedTensor wp =
      bytesTensor(DType::F32, N, K, packF32Weight(wv.data(), N, K));
  OwnedTensor ref = f32Output(size_t(M * N)), got = f32Output(size_t(M * N));

  std::vector<Tensor *> pin = {x, w};
  if (c.bias)
    pin.push_back(b);
  EXPECT_OK(runPortable(OpId::Linear, pin, {ref}));

  Context ctx(cfg.threads);
  std::vector<Tensor *> ins = {x, wp}, outs = {got};
  if (c.bias)
    ins.push_back(b);
  std::vector<int64_t> ints;
  std::vector<double> floats;
  EXPECT_OK(
      linearPacked(makeArgs(ins, outs, ints, floats, ctx.get()), cfg.isa));
  EXPECT_EQ(rt::testing::shape(*got), rt::testing::shape(*ref));

  std::vector<double> mag(size_t(M * N));
  for (int64_t m = 0; m < M; ++m)
    for (int64_t n = 0; n < N; ++n) {
      double s = c.bias ? std::fabs(bv[size_t(n)]) : 0.0;
      for (int64_t k = 0; k < K; ++k)
        s += std::fabs(double(xv[size_t(m * K + k)]) * wv[size_t(n * K + k)]);
      mag[size_t(m * N + n)] = s;
    }
  std::string what = "M=" + std::to_string(M) + " K=" + std::to_string(K) +
                     " N=" + std::to_string(N) + (c.bias ? " bias" : "");
  expectClose(floatsOf(*got), floatsOf(*ref), mag, kLinearRel, what);
  return floatsOf(*got);
}

class LinearTest : public ConfigTest {};

TEST_P(LinearTest, MatchesPortable) {
  unsigned seed = 1;
  // N % 8 != 0 remainders, K beyond one 256-k chunk, M = 1 (decode) and
  // M > 1 with every remainder of the 6-row (AVX2) / 4-row (generic) tiles
  // and several of the 12-row (AVX-512) ones.
  for (int64_t M : {1, 2, 3, 5, 6, 7, 11, 12, 13, 25, 33})
    for (auto [K, N] : std::vector<std::pair<int64_t, int64_t>>{{1, 3},
                                                                {8, 8},
                                                                {16, 13},
                                                                {40, 21},
                                                                {96, 64},
                                                                {300, 37},
                                                                {513, 9},
                                                                {64, 100}})
      for (bool bias : {false, true})
        checkLinear(GetParam(), {{M, K}, N, bias}, seed++);
  reportWorst("MatchesPortable");
}

TEST_P(LinearTest, HigherRankInputs) {
  checkLinear(GetParam(), {{2, 3, 24}, 17, true}, 7);
  checkLinear(GetParam(), {{1, 1, 4, 40}, 8, false}, 8);
  checkLinear(GetParam(), {{40}, 12, true}, 9);
  reportWorst("HigherRankInputs");
}

TEST_P(LinearTest, EmptyInput) {
  checkLinear(GetParam(), {{0, 16}, 8, true}, 10);
  checkLinear(GetParam(), {{1, 0, 16}, 9, false}, 11);
  reportWorst("EmptyInput");
}

TEST_P(LinearTest, PrefillLarge) {
  checkLinear(GetParam(), {{64, 600}, 70, true}, 12);
  // Decode above the parallel threshold.
  checkLinear(GetParam(), {{1, 1024}, 301, true}, 13);
  reportWorst("PrefillLarge");
}

TEST(LinearTest, ThreadCountDoesNotChangeResults) {
  // Every output element is computed by one thread in a fixed order. The
  // shapes exceed the kernels' parallel threshold (2^18 multiply-adds), so
  // the 2-thread runs really split the work (decode and prefill paths).
  for (Isa isa : {Isa::Generic, Isa::Avx2, Isa::Avx512, Isa::Neon}) {
    if (!isaSupported(isa))
      continue;
    for (auto [M, K, N] : std::vector<std::tuple<int64_t, int64_t, int64_t>>{
             {1, 1024, 301}, {9, 640, 77}, {37, 300, 45}}) {
      std::vector<float> one = checkLinear({isa, 1}, {{M, K}, N, true}, 3);
      std::vector<float> two = checkLinear({isa, 2}, {{M, K}, N, true}, 3);
      ASSERT_EQ(one.size(), two.size());
      for (size_t i = 0; i < one.size(); ++i)
        ASSERT_TRUE(sameFloat(one[i], two[i])) << i;
    }
  }
  reportWorst("ThreadCountDoesNotChangeResults");
}

TEST(LinearTest, Avx512TilesGiveTheAvx2Bits) {
  // The 512-bit prefill tile makes each output with the 256-bit tile's FMAs
  // in the same order: every row remainder of both tile heights.
  if (!isaSupported(Isa::Avx512))
    GTEST_SKIP() << "this CPU cannot run the avx512 kernels";
  for (int64_t M : {2, 5, 11, 12, 13, 30})
    for (auto [K, N] : std::vector<std::pair<int64_t, int64_t>>{
             {300, 37}, {64, 16}, {513, 9}}) {
      std::vector<float> a = checkLinear({Isa::Avx2, 1}, {{M, K}, N, true}, 5);
      std::vector<float> b =
          checkLinear({Isa::Avx512, 1}, {{M, K}, N, true}, 5);
      ASSERT_EQ(a.size(), b.size());
      for (size_t i = 0; i < a.size(); ++i)
        ASSERT_TRUE(sameFloat(a[i], b[i])) << "M=" << M << " K=" << K << " " << i;
    }
  reportWorst("Avx512TilesGiveTheAvx2Bits");
}

TEST(LinearTest, RejectsBadOperands) {
  std::mt19937 gen(5);
  const int64_t N = 9, K = 16;
  std::vector<float> wv = randomFloats(size_t(N * K), gen);
  std::vector<uint8_t> packed = packF32Weight(wv.data(), N, K);
  OwnedTensor wp = bytesTensor(DType::F32, N, K, packed);
  OwnedTensor x = f32Tensor({2, K}, randomFloats(size_t(2 * K), gen));
  OwnedTensor xBad =
      f32Tensor({2, K + 1}, randomFloats(size_t(2 * (K + 1)), gen));
  OwnedTensor b = f32Tensor({N + 1}, randomFloats(size_t(N + 1), gen));
  OwnedTensor y = f32Output(size_t(2 * N)), ySmall = f32Output(size_t(N));
  std::vector<int64_t> ints;
  std::vector<double> floats;
  ExecContext ctx;
  auto run = [&](std::vector<Tensor *> ins, std::vector<Tensor *> outs) {
    return linearPacked(makeArgs(ins, outs, ints, floats, &ctx), detectIsa());
  };
  EXPECT_ERROR(run({xBad, wp}, {y}), "does not match");
  EXPECT_ERROR(run({x, wp, b}, {y}), "bias");
  EXPECT_ERROR(run({x, wp}, {ySmall}), "output");
  // A weight tensor whose bytes are fewer than the packing needs.
  OwnedTensor wShort = bytesTensor(
      DType::F32, N, K, std::vector<uint8_t>(packed.begin(), packed.end() - 4));
  EXPECT_ERROR(run({x, wShort}, {y}), "needs");
  EXPECT_ERROR(run({x}, {y}), "expects 2 or 3 inputs");
  OwnedTensor xi(DType::I32, {2, K});
  EXPECT_ERROR(run({xi, wp}, {y}), "f32");
}

TEST(PackingTest, CheckedF32LayoutRejectsHostileSizes) {
  EXPECT_FALSE(PackedF32Layout::computeChecked(-1, 8).ok());
  EXPECT_FALSE(PackedF32Layout::computeChecked(8, -1).ok());
  EXPECT_FALSE(
      PackedF32Layout::computeChecked(int64_t(1) << 40, int64_t(1) << 40).ok());
  EXPECT_FALSE(PackedF32Layout::computeChecked(INT64_MAX, 2).ok());
  Result<PackedF32Layout> l = PackedF32Layout::computeChecked(9, 16);
  ASSERT_TRUE(l.ok());
  EXPECT_EQ(l->rowBlocks, 2);
  EXPECT_EQ(l->totalBytes, size_t(2 * 16 * 8 * 4));
  EXPECT_EQ(l->totalBytes, PackedF32Layout::compute(9, 16).totalBytes);
}

INSTANTIATE_TEST_SUITE_P(Configs, LinearTest, ::testing::ValuesIn(allConfigs()),
                         configName);

} // namespace
} // namespace etllm::rt::cpu::test
