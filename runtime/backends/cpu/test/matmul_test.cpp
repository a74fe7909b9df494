//===- matmul_test.cpp - Per-head matmul vs the portable kernel -----------===//
//
// Tolerance: both kernels sum the same K products per output in k order,
// portable with a multiply and an add, the AVX2 path with FMA (one rounding
// less per step). The difference is at most ~K u sum_k |x_k w_kn|
// (u = 2^-24); with K <= 130 here |optimized - portable| <= 1e-5 mag
// (mag = sum_k |x_k w_kn|) has margin and still catches a wrong head, row
// or missing product (~1/K of mag). The generic path is the same
// expressions as portable: bit-identical.
//
//===----------------------------------------------------------------------===//
#include "helpers.h"

#include "../internal.h"

namespace etllm::rt::cpu::test {
namespace {

class MatmulTest : public ConfigTest {};

struct MatmulCase {
  int64_t B, H, S, K, N;
};

void checkMatmul(const Config &cfg, const MatmulCase &c, std::mt19937 &gen) {
  std::vector<float> xv = randomFloats(size_t(c.B * c.H * c.S * c.K), gen),
                     wv = randomFloats(size_t(c.H * c.K * c.N), gen);
  OwnedTensor x = f32Tensor({c.B, c.H, c.S, c.K}, xv);
  OwnedTensor w = f32Tensor({c.H, c.K, c.N}, wv);
  const size_t n = size_t(c.B * c.H * c.S * c.N);
  OwnedTensor ref = f32Output(n), got = f32Output(n);
  ASSERT_OK(runPortable(OpId::Matmul, {x, w}, {ref}));
  Context ctx(cfg.threads);
  std::vector<Tensor *> ins = {x, w}, outs = {got};
  std::vector<int64_t> ints;
  std::vector<double> floats;
  bool handled = false;
  ASSERT_OK(matmulKernel(makeArgs(ins, outs, ints, floats, ctx.get()), cfg.isa,
                         handled));
  ASSERT_TRUE(handled);
  ASSERT_EQ(rt::testing::shape(*got), rt::testing::shape(*ref));
  const std::string what = "B" + std::to_string(c.B) + " H" +
                           std::to_string(c.H) + " S" + std::to_string(c.S) +
                           " K" + std::to_string(c.K) + " N" +
                           std::to_string(c.N);
  std::vector<float> g = floatsOf(*got), r = floatsOf(*ref);
  for (int64_t row = 0; row < c.B * c.H * c.S; ++row) {
    const int64_t h = (row / c.S) % c.H;
    for (int64_t j = 0; j < c.N; ++j) {
      double mag = 0;
      for (int64_t k = 0; k < c.K; ++k)
        mag += std::fabs(double(xv[size_t(row * c.K + k)]) *
                         wv[size_t((h * c.K + k) * c.N + j)]);
      const size_t i = size_t(row * c.N + j);
      if (cfg.isa == Isa::Generic)
        ASSERT_TRUE(sameFloat(g[i], r[i]))
            << what << " at " << i << ": " << g[i] << " vs " << r[i];
      else
        ASSERT_LE(std::fabs(double(g[i]) - r[i]), 1e-5 * mag + 1e-30)
            << what << " at " << i;
    }
  }
}

TEST_P(MatmulTest, MatchesPortableOnOddShapes) {
  std::mt19937 gen(7);
  for (const MatmulCase &c : std::vector<MatmulCase>{
           {1, 16, 1, 128, 64},  // decode, N a multiple of 32
           {1, 3, 5, 7, 37},     // odd everything: 32 + a masked tail of 5
           {2, 4, 3, 16, 8},     // two batches share the heads' weights
           {1, 5, 1, 130, 20},   // v_head_dim-like N, K not a multiple of 8
           {1, 2, 9, 1, 1},      // K = N = 1
           {1, 1, 64, 33, 100}}) // prefill rows, 96 + 4
    checkMatmul(GetParam(), c, gen);
}

TEST_P(MatmulTest, EmptyAndDeclines) {
  Context ctx(GetParam().threads);
  std::vector<int64_t> ints;
  std::vector<double> floats;
  // S = 0: an empty [B, H, 0, N] result.
  OwnedTensor x0 = f32Tensor({1, 2, 0, 3}, {});
  OwnedTensor w = f32Tensor({2, 3, 4}, std::vector<float>(24, 1.0f));
  OwnedTensor y = f32Output(16);
  std::vector<Tensor *> ins = {x0, w}, outs = {y};
  bool handled = false;
  ASSERT_OK(matmulKernel(makeArgs(ins, outs, ints, floats, ctx.get()),
                         GetParam().isa, handled));
  EXPECT_TRUE(handled);
  EXPECT_EQ(rt::testing::shape(*y), (std::vector<int64_t>{1, 2, 0, 4}));
  // Weights for one head broadcast over three, another inner size, rank-2
  // operands: the portable kernel's (it reports the mismatch).
  OwnedTensor x = f32Tensor({1, 3, 1, 3}, std::vector<float>(9, 1.0f));
  OwnedTensor w1 = f32Tensor({1, 3, 4}, std::vector<float>(12, 1.0f));
  OwnedTensor wk = f32Tensor({3, 2, 4}, std::vector<float>(24, 1.0f));
  OwnedTensor x2 = f32Tensor({3, 3}, std::vector<float>(9, 1.0f));
  OwnedTensor w2 = f32Tensor({3, 4}, std::vector<float>(12, 1.0f));
  for (auto [a, b] :
       std::vector<std::pair<Tensor *, Tensor *>>{{x, w1}, {x, wk}, {x2, w2}}) {
    ins = {a, b};
    ASSERT_OK(matmulKernel(makeArgs(ins, outs, ints, floats, ctx.get()),
                           GetParam().isa, handled));
    EXPECT_FALSE(handled);
  }
}

INSTANTIATE_TEST_SUITE_P(Configs, MatmulTest, ::testing::ValuesIn(allConfigs()),
                         configName);

} // namespace
} // namespace etllm::rt::cpu::test
