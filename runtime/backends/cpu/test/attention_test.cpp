//===- attention_test.cpp - RoPE, SDPA, cache update, views vs portable ---===//
//
// Tolerances:
//  * rope (with the init-time table, and for positions beyond it),
//    kv_cache_update, transpose, reshape, slice: bit-identical (the same
//    f32 expressions, or copies).
//  * sdpa: the scores are reassociated dot products (FMA), exp is Cephes'
//    polynomial (a few ulp) instead of libm's, the softmax is online
//    (rescaled by exp(m_old - m_new)) and split into chunks of 512 keys,
//    the division is a multiplication by 1 / l. A score error d moves a
//    weight p by a factor (1 + d) and the output by at most 2 d max|v|;
//    d <= 2 D u scale max_j sum_d |q_d k_jd| (u = 2^-24, both sums), and
//    the sums over T keys add T u relative each. So per row
//      |diff| <= max|v| (u (4 D scale max_j sum_d |q_d k_jd| + 4 T) + 1e-6).
//    A wrong key range, head mapping or merge is off by O(max|v|).
// The int8 KV cache's cases compare with portable on the same int8 cache
// (the same dequantized values, scale * q, on every path): sdpa's bound
// above with the dequantized k and v, the cache update bit-identical (one
// row quantizer).
// Every case runs on every ISA path this CPU has, with 1 and 2 threads.
//
//===----------------------------------------------------------------------===//
#include "helpers.h"

#include "../internal.h"

#include "etllm/runtime/kv_cache_quant.h"

namespace etllm::rt::cpu::test {
namespace {

class AttentionTest : public ConfigTest {};

OwnedTensor positions(const std::vector<int64_t> &p) {
  OwnedTensor t(DType::I64, {int64_t(p.size())});
  std::memcpy(t->data, p.data(), p.size() * 8);
  return t;
}

void expectSameBits(const Tensor &got, const Tensor &ref,
                    const std::string &what) {
  ASSERT_EQ(rt::testing::shape(got), rt::testing::shape(ref)) << what;
  std::vector<float> g = floatsOf(got), r = floatsOf(ref);
  for (size_t i = 0; i < g.size(); ++i)
    ASSERT_TRUE(sameFloat(g[i], r[i]))
        << what << " at " << i << ": " << g[i] << " vs " << r[i];
}

/// Runs the dense kernel of `op` (which must take the case) on `ins`.
void runOptimized(const Config &cfg, OpId op, std::vector<Tensor *> ins,
                  std::vector<Tensor *> outs, std::vector<int64_t> ints,
                  std::vector<double> floats) {
  Context ctx(cfg.threads);
  bool handled = false;
  ASSERT_OK(denseKernel(op)(makeArgs(ins, outs, ints, floats, ctx.get()),
                            cfg.isa, handled));
  ASSERT_TRUE(handled) << opInfo(op).name;
}

TEST_P(AttentionTest, RopeIsBitIdentical) {
  std::mt19937 gen(1);
  // D, R (pairs rotated), convention.
  for (auto [D, R, conv] :
       std::vector<std::tuple<int64_t, int64_t, int>>{{8, 4, 0},
                                                      {64, 32, 0},
                                                      {64, 32, 1},
                                                      {12, 4, 0},
                                                      {6, 3, 1},
                                                      {64, 32, 2},
                                                      {10, 3, 2},
                                                      {2, 1, 2}}) {
    const int64_t H = 3, S = 5;
    std::vector<float> fv = randomFloats(size_t(R), gen, 0.0f, 1.0f);
    OwnedTensor freq = f32Tensor({R}, fv);
    RopeTable table;
    ASSERT_OK(table.build(*freq, 0.75f, /*bound=*/16));
    // Positions inside the table and beyond it.
    OwnedTensor pos = positions({0, 3, 15, 16, 40});
    OwnedTensor x =
        f32Tensor({1, H, S, D}, randomFloats(size_t(H * S * D), gen));
    OwnedTensor ref = f32Output(size_t(H * S * D)),
                got = f32Output(size_t(H * S * D));
    ASSERT_OK(runPortable(OpId::Rope, {x, pos, freq}, {ref}, {conv}, {0.75}));
    Context ctx(GetParam().threads);
    std::vector<Tensor *> ins = {x, pos, freq}, outs = {got};
    std::vector<int64_t> ints = {conv};
    std::vector<double> floats = {0.75};
    bool handled = false;
    ASSERT_OK(ropeKernel(makeArgs(ins, outs, ints, floats, ctx.get()),
                         GetParam().isa, &table, handled));
    ASSERT_TRUE(handled);
    expectSameBits(*got, *ref, "rope D=" + std::to_string(D));
    // In place (the output is the input; deinterleave_rotate_half writes
    // other dimensions than it reads).
    Tensor alias = *x;
    outs = {&alias};
    ASSERT_OK(ropeKernel(makeArgs(ins, outs, ints, floats, ctx.get()),
                         GetParam().isa, &table, handled));
    ASSERT_TRUE(handled);
    expectSameBits(*x, *ref, "rope in place D=" + std::to_string(D));
  }
}

struct SdpaCase {
  int64_t B, H, Hkv, S, T, D, p0; // queries at positions p0 .. p0 + S - 1
  int64_t window;
  double softcap;
  bool causal;
  /// An additive mask [1, 1, S, T] (a ring cache's): 0 or -inf, some rows
  /// with finite offsets, one row all -inf; 2: [1, 1, 1, T] for every row.
  int mask = 0;
};

/// The rows of `x` (rows of D values) quantized into an int8 KV cache of
/// `shape` with portable's row quantizer; x becomes the dequantized values
/// (scale * q) that every kernel reads.
OwnedTensor int8Cache(std::vector<int64_t> shape, std::vector<float> &x) {
  OwnedTensor t(DType::QAct, shape, 0, int8KvCacheQuant());
  const Int8KvCacheRows c = Int8KvCacheRows::of(*t);
  for (int64_t r = 0; r < c.rows; ++r) {
    float *row = x.data() + r * c.cols;
    c.scales[r] = quantizeInt8KvRow([row](int64_t i) { return row[i]; }, c.cols,
                                    c.q + r * c.cols);
    for (int64_t d = 0; d < c.cols; ++d)
      row[d] = c.scales[r] * float(c.q[r * c.cols + d]);
  }
  return t;
}

void checkSdpa(const Config &cfg, const SdpaCase &c, std::mt19937 &gen,
               bool int8Kv = false) {
  const int64_t Dv = c.D;
  std::vector<float> qv = randomFloats(size_t(c.B * c.H * c.S * c.D), gen),
                     kv = randomFloats(size_t(c.B * c.Hkv * c.T * c.D), gen),
                     vv = randomFloats(size_t(c.B * c.Hkv * c.T * Dv), gen);
  OwnedTensor q = f32Tensor({c.B, c.H, c.S, c.D}, qv);
  OwnedTensor k = int8Kv ? int8Cache({c.B, c.Hkv, c.T, c.D}, kv)
                         : f32Tensor({c.B, c.Hkv, c.T, c.D}, kv);
  OwnedTensor v = int8Kv ? int8Cache({c.B, c.Hkv, c.T, Dv}, vv)
                         : f32Tensor({c.B, c.Hkv, c.T, Dv}, vv);
  std::vector<int64_t> p;
  for (int64_t s = 0; s < c.S; ++s)
    p.push_back(c.p0 + s);
  OwnedTensor pos = positions(p);
  const double scale = 1.0 / std::sqrt(double(c.D));
  std::vector<int64_t> ints = {c.mask ? 1 : 0, 1, c.causal ? 1 : 0, c.window};
  std::vector<double> floats = {scale, c.softcap};
  const size_t n = size_t(c.B * c.H * c.S * Dv);
  OwnedTensor ref = f32Output(n), got = f32Output(n);
  const int64_t maskRows = c.mask == 2 ? 1 : c.S;
  std::vector<float> mv(size_t(maskRows * c.T));
  std::uniform_real_distribution<float> u01(0.0f, 1.0f);
  for (int64_t s = 0; s < maskRows; ++s)
    for (int64_t j = 0; j < c.T; ++j) {
      const float r = u01(gen);
      mv[size_t(s * c.T + j)] =
          s == 1 ? -INFINITY // a row that sees nothing: zeros
          : r < 0.3f ? -INFINITY
          : s % 3 == 2 ? -2.0f * u01(gen) // finite offsets
                       : 0.0f;
    }
  OwnedTensor mask = f32Tensor({1, 1, maskRows, c.T}, mv);
  std::vector<Tensor *> inputs = {q, k, v, pos};
  if (c.mask)
    inputs = {q, k, v, mask, pos};
  ASSERT_OK(runPortable(OpId::Sdpa, inputs, {ref}, ints, floats));
  {
    // With the scratch init reserves (sdpaScratchBytes), which the kernel
    // must not outgrow.
    Context ctx(cfg.threads);
    void *reserved = ctx.get()->scratch(sdpaScratchBytes(
        ctx.get(), c.B, c.H, c.S, c.Hkv, c.T, c.D, Dv, int8Kv));
    std::vector<Tensor *> ins = inputs, outs = {got};
    std::vector<int64_t> is = ints;
    std::vector<double> fs = floats;
    bool handled = false;
    ASSERT_OK(
        sdpaKernel(makeArgs(ins, outs, is, fs, ctx.get()), cfg.isa, handled));
    ASSERT_TRUE(handled);
    EXPECT_EQ(ctx.get()->scratch(0), reserved)
        << "sdpa outgrew its reservation";
  }
  ASSERT_EQ(rt::testing::shape(*got), rt::testing::shape(*ref));
  // The bound of the header, per query row.
  std::vector<double> mag(n);
  const int64_t G = c.H / c.Hkv;
  for (int64_t b = 0; b < c.B; ++b)
    for (int64_t h = 0; h < c.H; ++h)
      for (int64_t s = 0; s < c.S; ++s) {
        const float *qr = qv.data() + ((b * c.H + h) * c.S + s) * c.D;
        double qk = 0, vmax = 0;
        for (int64_t j = 0; j < c.T; ++j) {
          const float *kr = kv.data() + ((b * c.Hkv + h / G) * c.T + j) * c.D;
          double t = 0;
          for (int64_t d = 0; d < c.D; ++d)
            t += std::fabs(double(qr[d]) * kr[d]);
          qk = std::max(qk, t);
          for (int64_t d = 0; d < Dv; ++d)
            vmax = std::max(
                vmax,
                double(std::fabs(
                    vv[size_t(((b * c.Hkv + h / G) * c.T + j) * Dv + d)])));
        }
        const double u = std::ldexp(1.0, -24);
        const double tol =
            vmax *
            (u * (4.0 * double(c.D) * scale * qk + 4.0 * double(c.T)) + 1e-6);
        for (int64_t d = 0; d < Dv; ++d)
          mag[size_t(((b * c.H + h) * c.S + s) * Dv + d)] = tol;
      }
  std::vector<float> g = floatsOf(*got), r = floatsOf(*ref);
  int failures = 0;
  for (size_t i = 0; i < n; ++i) {
    const double diff = std::fabs(double(g[i]) - double(r[i]));
    gWorstRatio = std::max(gWorstRatio, diff / mag[i]);
    if (!(diff <= mag[i]) && failures++ < 5)
      ADD_FAILURE() << "sdpa B=" << c.B << " H=" << c.H << " Hkv=" << c.Hkv
                    << " S=" << c.S << " T=" << c.T << " D=" << c.D
                    << " p0=" << c.p0 << " window=" << c.window
                    << " softcap=" << c.softcap << " causal=" << c.causal
                    << " mask=" << c.mask << " int8Kv=" << int8Kv << " at "
                    << i << ": " << g[i]
                    << " vs " << r[i];
  }
}

TEST_P(AttentionTest, SdpaMatchesPortable) {
  std::mt19937 gen(2);
  const std::vector<SdpaCase> cases = {
      // Decode, GQA 4:1 and 1:1, a partly filled cache.
      {1, 8, 2, 1, 64, 8, 20, 0, 0, true},
      {1, 4, 4, 1, 64, 64, 63, 0, 0, true},
      // stories260K's shape, prefill from 0 and later.
      {1, 8, 4, 6, 512, 8, 0, 0, 0, true},
      {1, 8, 4, 3, 512, 8, 100, 0, 0, true},
      // The 1B shape (32 / 8 heads of 64), decode at a long context (two
      // and three chunks of keys) and a prefill.
      {1, 32, 8, 1, 1100, 64, 1099, 0, 0, true},
      {1, 32, 8, 1, 1100, 64, 600, 0, 0, true},
      {1, 32, 8, 17, 256, 64, 0, 0, 0, true},
      // Head sizes that are not a multiple of 8 (generic path), batch 2.
      {2, 6, 3, 4, 40, 12, 7, 0, 0, true},
      // 64 values of a head in registers, then 16 more; key blocks cut at
      // every length 1-8 by the positions (S = 9 rows from 0).
      {1, 4, 2, 9, 40, 80, 0, 0, 0, true},
      // Sliding window, softcap (gemma2), not causal.
      {1, 4, 2, 5, 600, 16, 590, 64, 0, true},
      {1, 4, 2, 3, 40, 16, 10, 0, 50.0, true},
      {1, 4, 2, 3, 40, 16, 0, 0, 0, false},
      // Multi-head latent attention over the latent cache: one KV head for
      // every query head, the latent + rope row as the head (DeepSeek-V2-
      // Lite: 16 heads of 512 + 64; an odd small one on the generic path).
      {1, 16, 1, 1, 100, 576, 80, 0, 0, true},
      {1, 16, 1, 5, 600, 576, 590, 0, 0, true},
      {1, 3, 1, 4, 24, 20, 2, 0, 0, true},
  };
  for (const SdpaCase &c : cases)
    checkSdpa(GetParam(), c, gen);
  reportWorst("SdpaMatchesPortable");
}

TEST_P(AttentionTest, SdpaOverAnInt8CacheMatchesPortable) {
  std::mt19937 gen(5);
  const std::vector<SdpaCase> cases = {
      // Head sizes 8, 12 (generic path), 64 and 72 (64 in registers + 8);
      // caches of 1, 33 (two key blocks and one key) and 300 keys; decode
      // (S = 1) and S = 7 (key blocks cut at every length by the positions).
      {1, 8, 2, 1, 33, 8, 32, 0, 0, true},
      {1, 8, 2, 7, 33, 8, 10, 0, 0, true},
      {2, 6, 3, 7, 33, 12, 26, 0, 0, true},
      {1, 4, 4, 1, 1, 12, 0, 0, 0, true},
      {1, 4, 2, 1, 300, 64, 299, 0, 0, true},
      {1, 4, 2, 7, 300, 64, 0, 0, 0, true},
      {1, 4, 1, 7, 300, 72, 150, 0, 0, true},
      {1, 2, 1, 1, 1, 72, 0, 0, 0, true},
      // Long contexts: three chunks of keys in parallel, decode and S = 7.
      {1, 8, 2, 1, 1100, 64, 1099, 0, 0, true},
      {1, 4, 2, 7, 1100, 72, 1090, 0, 0, true},
      // Sliding window (blocks before it are never dequantized), softcap,
      // not causal.
      {1, 4, 2, 5, 600, 16, 590, 64, 0, true},
      {1, 4, 2, 3, 40, 12, 10, 0, 50.0, true},
      {1, 4, 2, 3, 33, 8, 0, 0, 0, false},
  };
  for (const SdpaCase &c : cases)
    checkSdpa(GetParam(), c, gen, /*int8Kv=*/true);
  reportWorst("SdpaOverAnInt8CacheMatchesPortable");
}

/// An additive mask (a ring cache's kv_ring.mask: 0 or -inf per slot, here
/// with finite offsets too), alone or with causal positions, over f32 and
/// int8 caches; head sizes on every path; one row per query or one for all.
TEST_P(AttentionTest, SdpaWithAMaskMatchesPortable) {
  std::mt19937 gen(11);
  const std::vector<SdpaCase> cases = {
      // Decode over a ring of 543 slots (Gemma 3's local layers, chunk 32).
      {1, 4, 1, 1, 543, 64, 0, 0, 0, false, 1},
      // A chunk of 7 over 71 slots, GQA 4:1; head size 12 (generic path).
      {1, 8, 2, 7, 71, 8, 0, 0, 0, false, 1},
      {2, 6, 3, 4, 40, 12, 0, 0, 0, false, 1},
      // 80 values of a head (64 in registers + 16), softcap.
      {1, 4, 2, 3, 67, 80, 0, 0, 30.0, false, 1},
      // With causal positions and a window as well; one mask row for all.
      {1, 4, 2, 5, 600, 16, 590, 64, 0, true, 1},
      {1, 4, 2, 3, 1100, 64, 1090, 0, 0, true, 2},
  };
  for (const SdpaCase &c : cases) {
    checkSdpa(GetParam(), c, gen);
    checkSdpa(GetParam(), c, gen, /*int8Kv=*/true);
  }
  reportWorst("SdpaWithAMaskMatchesPortable");
}

TEST_P(AttentionTest, SdpaOverTheLatentCacheAsKeyAndValue) {
  // The MLA swap's sdpa reads one tensor (the latent cache) as both key and
  // value: the same result as portable on the same aliasing.
  std::mt19937 gen(4);
  const int64_t H = 5, T = 30, D = 40, S = 2;
  OwnedTensor q = f32Tensor({1, H, S, D}, randomFloats(size_t(H * S * D), gen));
  OwnedTensor kv = f32Tensor({1, 1, T, D}, randomFloats(size_t(T * D), gen));
  OwnedTensor pos = positions({17, 18});
  OwnedTensor ref = f32Output(size_t(H * S * D)),
              got = f32Output(size_t(H * S * D));
  const std::vector<int64_t> ints = {0, 1, 1, 0};
  const std::vector<double> floats = {0.125, 0.0};
  ASSERT_OK(runPortable(OpId::Sdpa, {q, kv, kv, pos}, {ref}, ints, floats));
  runOptimized(GetParam(), OpId::Sdpa, {q, kv, kv, pos}, {got}, ints, floats);
  // The header's bound with |v| <= 1, |q k| <= 1 per term (u = 2^-24).
  const double u = std::ldexp(1.0, -24);
  const double tol = u * (4.0 * D * 0.125 * D + 4.0 * T) + 1e-6;
  std::vector<float> g = floatsOf(*got), r = floatsOf(*ref);
  for (size_t i = 0; i < g.size(); ++i)
    ASSERT_NEAR(g[i], r[i], tol) << i;
}

TEST_P(AttentionTest, SdpaWithoutVisibleKeysGivesZeros) {
  // A negative position sees no key: zeros, as portable.
  OwnedTensor q = f32Tensor({1, 2, 1, 8}, std::vector<float>(16, 1.0f));
  OwnedTensor k = f32Tensor({1, 2, 4, 8}, std::vector<float>(64, 1.0f));
  OwnedTensor v = f32Tensor({1, 2, 4, 8}, std::vector<float>(64, 3.0f));
  OwnedTensor pos = positions({-1});
  OwnedTensor got = f32Output(16);
  runOptimized(GetParam(), OpId::Sdpa, {q, k, v, pos}, {got}, {0, 1, 1, 0},
               {0.5, 0.0});
  for (float x : floatsOf(*got))
    EXPECT_EQ(x, 0.0f);
}

/// The AVX-512 paths take the query heads of a KV head three at a time;
/// each row must keep the AVX2 path's bits (and so NEON's, which does
/// AVX2's operations): groups of 1 to 7 query heads per KV head (3 + 3 + 1
/// rows, rows without a visible key among them), prefill and decode, float
/// and int8 caches.
TEST(AttentionTest, SdpaGroupedRowsGiveTheAvx2Bits) {
  if (!isaSupported(Isa::Avx2))
    GTEST_SKIP() << "no AVX2 on this CPU";
  std::vector<Isa> wide;
  for (Isa isa : {Isa::Avx512, Isa::Avx512Vnni, Isa::Amx})
    if (isaSupported(isa))
      wide.push_back(isa);
  if (wide.empty())
    GTEST_SKIP() << "no AVX-512 on this CPU";
  for (int64_t G : {1, 2, 3, 4, 7})
    for (auto [S, p0] :
         std::vector<std::pair<int64_t, int64_t>>{{1, 70}, {20, 0}, {9, -3}})
      for (int64_t D : {64, 80})
        for (bool int8Kv : {false, true}) {
          const int64_t Hkv = 2, H = G * Hkv, T = 100;
          std::mt19937 gen(uint32_t(G * 100 + S + D));
          OwnedTensor q =
              f32Tensor({1, H, S, D}, randomFloats(size_t(H * S * D), gen));
          std::vector<float> kv = randomFloats(size_t(Hkv * T * D), gen);
          std::vector<float> vv = randomFloats(size_t(Hkv * T * D), gen);
          OwnedTensor k = int8Kv ? int8Cache({1, Hkv, T, D}, kv)
                                 : f32Tensor({1, Hkv, T, D}, kv);
          OwnedTensor v = int8Kv ? int8Cache({1, Hkv, T, D}, vv)
                                 : f32Tensor({1, Hkv, T, D}, vv);
          std::vector<int64_t> p;
          for (int64_t s = 0; s < S; ++s)
            p.push_back(p0 + s); // negative: a row that sees no key
          OwnedTensor pos = positions(p);
          auto run = [&](Isa isa) {
            OwnedTensor y = f32Output(size_t(H * S * D));
            runOptimized({isa, 1}, OpId::Sdpa, {q, k, v, pos}, {y},
                         {0, 1, 1, 0}, {0.125, 0.0});
            return floatsOf(*y);
          };
          const std::vector<float> ref = run(Isa::Avx2);
          for (Isa isa : wide) {
            const std::vector<float> got = run(isa);
            ASSERT_EQ(got.size(), ref.size());
            for (size_t i = 0; i < ref.size(); ++i)
              ASSERT_TRUE(sameFloat(got[i], ref[i]))
                  << isaName(isa) << " G=" << G << " S=" << S << " p0=" << p0
                  << " D=" << D << " int8Kv=" << int8Kv << " at " << i << ": "
                  << got[i] << " vs " << ref[i];
          }
        }
}

TEST(AttentionTest, SdpaThreadCountDoesNotChangeResults) {
  // The 1B shape at a long context (chunks of keys in parallel), and the
  // latent cache's single KV head.
  for (SdpaCase c : {SdpaCase{1, 32, 8, 1, 1100, 64, 1099, 0, 0, true},
                     SdpaCase{1, 16, 1, 2, 300, 72, 250, 0, 0, true}})
    for (Isa isa : allIsas()) {
      std::vector<float> res[2];
      for (int t = 0; t < 2; ++t) {
        std::mt19937 gen(9);
        OwnedTensor q = f32Tensor({1, c.H, c.S, c.D},
                                  randomFloats(size_t(c.H * c.S * c.D), gen));
        OwnedTensor k = f32Tensor({1, c.Hkv, c.T, c.D},
                                  randomFloats(size_t(c.Hkv * c.T * c.D), gen));
        OwnedTensor v = f32Tensor({1, c.Hkv, c.T, c.D},
                                  randomFloats(size_t(c.Hkv * c.T * c.D), gen));
        std::vector<int64_t> p;
        for (int64_t s = 0; s < c.S; ++s)
          p.push_back(c.p0 + s);
        OwnedTensor pos = positions(p);
        OwnedTensor y = f32Output(size_t(c.H * c.S * c.D));
        runOptimized({isa, t + 1}, OpId::Sdpa, {q, k, v, pos}, {y},
                     {0, 1, 1, 0}, {0.125, 0.0});
        res[t] = floatsOf(*y);
      }
      for (size_t i = 0; i < res[0].size(); ++i)
        ASSERT_TRUE(sameFloat(res[0][i], res[1][i]))
            << isaName(isa) << " H=" << c.H << " Hkv=" << c.Hkv << " " << i;
    }
}

TEST_P(AttentionTest, CacheUpdateAndViewsAreExact) {
  std::mt19937 gen(3);
  const int64_t H = 4, T = 16, D = 8, S = 3;
  std::vector<float> cv = randomFloats(size_t(H * T * D), gen);
  std::vector<float> vals = randomFloats(size_t(H * S * D), gen);
  OwnedTensor pos = positions({5, 6, 9});
  OwnedTensor v = f32Tensor({1, H, S, D}, vals);
  // Out of place (a copy first) and in place.
  OwnedTensor cache = f32Tensor({1, H, T, D}, cv),
              ref = f32Tensor({1, H, T, D}, cv);
  OwnedTensor out = f32Output(size_t(H * T * D));
  ASSERT_OK(runPortable(OpId::KvCacheUpdate, {ref, pos, v}, {ref}, {2}));
  runOptimized(GetParam(), OpId::KvCacheUpdate, {cache, pos, v}, {out}, {2},
               {});
  expectSameBits(*out, *ref, "kv_cache_update (copy)");
  runOptimized(GetParam(), OpId::KvCacheUpdate, {cache, pos, v}, {cache}, {2},
               {});
  expectSameBits(*cache, *ref, "kv_cache_update (in place)");

  OwnedTensor x = f32Tensor({2, 3, 5, 4}, randomFloats(120, gen));
  OwnedTensor tr = f32Output(120), tg = f32Output(120);
  ASSERT_OK(runPortable(OpId::Transpose, {x}, {tr}, {1, 2}));
  runOptimized(GetParam(), OpId::Transpose, {x}, {tg}, {2, 1}, {});
  expectSameBits(*tg, *tr, opName(OpId::Transpose));

  OwnedTensor sr = f32Output(120), sg = f32Output(120);
  for (auto [d, s0, s1] : std::vector<std::tuple<int64_t, int64_t, int64_t>>{
           {2, -1, INT64_MAX}, {1, 1, 3}, {-1, 0, 2}, {0, 5, 9}}) {
    ASSERT_OK(runPortable(OpId::Slice, {x}, {sr}, {d, s0, s1, 1}));
    runOptimized(GetParam(), OpId::Slice, {x}, {sg}, {d, s0, s1, 1}, {});
    expectSameBits(*sg, *sr, opName(OpId::Slice));
  }

  OwnedTensor rr = f32Output(120), rg = f32Output(120);
  ASSERT_OK(runPortable(OpId::Reshape, {x}, {rr}, {2, -1, 4}));
  runOptimized(GetParam(), OpId::Reshape, {x}, {rg}, {2, -1, 4}, {});
  expectSameBits(*rg, *rr, opName(OpId::Reshape));
}

TEST_P(AttentionTest, Int8CacheUpdateIsExact) {
  // The same bytes as portable (one row quantizer), in place and into a
  // copy, for odd head sizes and cache lengths.
  std::mt19937 gen(6);
  for (auto [H, T, D, S] :
       std::vector<std::tuple<int64_t, int64_t, int64_t, int64_t>>{
           {2, 1, 8, 1}, {3, 33, 12, 7}, {2, 300, 72, 5}}) {
    std::vector<float> cv = randomFloats(size_t(H * T * D), gen);
    OwnedTensor cache = int8Cache({1, H, T, D}, cv);
    OwnedTensor ref(DType::QAct, {1, H, T, D}, 0, int8KvCacheQuant());
    std::memcpy(ref->data, cache->data, cache->nbytes());
    OwnedTensor v =
        f32Tensor({1, H, S, D}, randomFloats(size_t(H * S * D), gen, -4, 4));
    std::vector<int64_t> p;
    for (int64_t s = 0; s < S; ++s)
      p.push_back((s * 7 + 3) % T); // (repeats when S > T: the last wins)
    OwnedTensor pos = positions(p);
    ASSERT_OK(runPortable(OpId::KvCacheUpdate, {ref, pos, v}, {ref}, {2}));
    OwnedTensor out(DType::QAct, {1, H, T, D}, 0, int8KvCacheQuant());
    runOptimized(GetParam(), OpId::KvCacheUpdate, {cache, pos, v}, {out}, {2},
                 {});
    const std::string what = "H=" + std::to_string(H) +
                             " T=" + std::to_string(T) +
                             " D=" + std::to_string(D);
    EXPECT_EQ(std::memcmp(out->data, ref->data, ref->nbytes()), 0)
        << "copy " << what;
    runOptimized(GetParam(), OpId::KvCacheUpdate, {cache, pos, v}, {cache},
                 {-2}, {});
    EXPECT_EQ(std::memcmp(cache->data, ref->data, ref->nbytes()), 0)
        << "in place " << what;
  }
}

TEST(AttentionTest, DeclinesWhatItDoesNotCover) {
  // An out-of-range cache position, a mask per head, a transpose of other
  // dims: the optimized kernels leave them (and the error) to portable.
  std::mt19937 gen(4);
  OwnedTensor cache = f32Tensor({1, 2, 4, 8}, randomFloats(64, gen));
  OwnedTensor v = f32Tensor({1, 2, 1, 8}, randomFloats(16, gen));
  OwnedTensor bad = positions({4});
  ExecContext ctx;
  std::vector<Tensor *> ins = {cache, bad, v}, outs = {cache};
  std::vector<int64_t> ints = {2};
  std::vector<double> floats;
  KernelArgs a = makeArgs(ins, outs, ints, floats, &ctx);
  bool handled = true;
  ASSERT_OK(kvCacheUpdateKernel(a, detectIsa(), handled));
  EXPECT_FALSE(handled);
  EXPECT_FALSE(runDense(OpId::KvCacheUpdate, a, detectIsa()).ok());

  OwnedTensor x = f32Tensor({2, 3, 4, 5}, randomFloats(120, gen));
  OwnedTensor y = f32Output(120);
  std::vector<Tensor *> ti = {x}, to = {y};
  std::vector<int64_t> dims = {0, 3};
  handled = true;
  ASSERT_OK(transposeKernel(makeArgs(ti, to, dims, floats, &ctx), detectIsa(),
                            handled));
  EXPECT_FALSE(handled);

  // An int8 cache: an out-of-range position, values of another type; sdpa
  // over an int8 key and an f32 value (portable's error).
  std::vector<float> cv(64, 0.5f);
  OwnedTensor qcache = int8Cache({1, 2, 4, 8}, cv);
  ins = {qcache, bad, v};
  outs = {qcache};
  handled = true;
  ASSERT_OK(kvCacheUpdateKernel(makeArgs(ins, outs, ints, floats, &ctx),
                                detectIsa(), handled));
  EXPECT_FALSE(handled);
  OwnedTensor hv(DType::F16, {1, 2, 1, 8});
  OwnedTensor good = positions({1});
  ins = {qcache, good, hv};
  handled = true;
  ASSERT_OK(kvCacheUpdateKernel(makeArgs(ins, outs, ints, floats, &ctx),
                                detectIsa(), handled));
  EXPECT_FALSE(handled);
  OwnedTensor q = f32Tensor({1, 2, 1, 8}, randomFloats(16, gen));
  OwnedTensor sy = f32Output(16);
  std::vector<Tensor *> si = {q, qcache, cache}, so = {sy};
  std::vector<int64_t> sints = {0, 0, 0, 0};
  std::vector<double> sfloats = {0.5, 0.0};
  KernelArgs sa = makeArgs(si, so, sints, sfloats, &ctx);
  handled = true;
  ASSERT_OK(sdpaKernel(sa, detectIsa(), handled));
  EXPECT_FALSE(handled);
  EXPECT_FALSE(runDense(OpId::Sdpa, sa, detectIsa()).ok());

  // A mask per head ([1, 2, 1, T]) is portable's broadcast, not the
  // kernel's.
  OwnedTensor headMask = f32Tensor({1, 2, 1, 4}, std::vector<float>(8, 0.0f));
  std::vector<Tensor *> mi = {q, cache, cache, headMask};
  std::vector<int64_t> mints = {1, 0, 0, 0};
  handled = true;
  ASSERT_OK(sdpaKernel(makeArgs(mi, so, mints, sfloats, &ctx), detectIsa(),
                       handled));
  EXPECT_FALSE(handled);
}

INSTANTIATE_TEST_SUITE_P(Configs, AttentionTest,
                         ::testing::ValuesIn(allConfigs()), configName);

} // namespace
} // namespace etllm::rt::cpu::test
