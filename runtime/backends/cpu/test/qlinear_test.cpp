//===- qlinear_test.cpp - Packed qlinear vs the portable kernel -----------===//
//
// Tolerances, relative to mag = sum_k |xhat_k| (|s q_k| + |o|) + |b| (the
// magnitudes of the terms both kernels add; for symmetric weights it is
// sum_k |xhat_k w_k| + |b|):
//
//  * float activations: the weights dequantize to the same f32 values as
//    portable's (s * q), or within 1 ulp (asymmetric: the AVX2 path fuses
//    s * q + o into one FMA), and the sum is reassociated as in linear:
//    |optimized - portable| <= 1e-5 mag (see linear_test.cpp).
//  * quantized activations (per block of 32, or per token): the optimized
//    kernels are exact in int32 per block (qdot.h) up to the rescale
//    dw dx s (+ o dx sum q), or dw s (+ o (sum q - 32 zp)) and sx at the
//    end, i.e. a handful of f32 roundings per block; portable rounds every
//    xhat, every weight and every partial sum. Both are within a few
//    u * mag per block of the exact value, so the same 1e-5 mag bound
//    holds with margin. A wrong zero-point, offset or nibble-bias term
//    would be off by ~|zp|, ~32 |o| |sx| or ~8 |sum q| per block: far above
//    it (the asymmetric cases below use zero points up to +-128).
//
// Every case runs on every ISA path of the architecture (generic, AVX2,
// 256-bit VNNI, AVX-512, AVX-512 VNNI on x86-64; generic, NEON, dotprod,
// i8mm on arm64: the parameter names say which ran; a path this CPU lacks
// is skipped with the reason), without and with a 2-thread pool.
//
//===----------------------------------------------------------------------===//
#include "helpers.h"

#include "etllm/runtime/parallel.h"

namespace etllm::rt::cpu::test {
namespace {

constexpr double kQLinearRel = 1e-5;

/// Reads a QAct [M, K] (per token, per tensor or per block) as floats xhat.
std::vector<double> dequantAct(const Tensor &qa) {
  const int64_t K = qa.dim(-1), M = qa.numel() / std::max<int64_t>(K, 1);
  const QActLayout l = QActLayout::compute(M, K, qa.quant);
  const uint8_t *base = qa.ptr<uint8_t>();
  std::vector<double> xh(size_t(M * K));
  if (l.perBlock) {
    for (int64_t m = 0; m < M; ++m)
      for (int64_t k = 0; k < K; ++k) {
        float s;
        std::memcpy(
            &s, base + l.scalesOff + size_t(m * l.blocks + k / kQActBlock) * 4,
            4);
        xh[size_t(m * K + k)] =
            double(s) * int32_t(int8_t(base[m * l.rowStride + k]));
      }
    return xh;
  }
  for (int64_t m = 0; m < M; ++m) {
    const int64_t slot = qa.quant.perToken ? m : 0;
    float s;
    int32_t zp;
    std::memcpy(&s, base + l.scalesOff + size_t(slot) * 4, 4);
    std::memcpy(&zp, base + l.zpOff + size_t(slot) * 4, 4);
    for (int64_t k = 0; k < K; ++k)
      xh[size_t(m * K + k)] =
          double(s) * (int32_t(int8_t(base[m * K + k])) - zp);
  }
  return xh;
}

/// An asymmetric per-token QAct [M, K] of zeros (QActLayout::compute(M,
/// K)), for a test to fill.
OwnedTensor zeroTokenQAct(int64_t M, int64_t K) {
  QuantInfo aq;
  aq.bits = 8;
  aq.symmetric = false;
  return OwnedTensor(DType::QAct, {M, K}, 0, aq);
}

/// Compares packed qlinear (config) with portable on input `x` (f32 or
/// QAct) and the random weight `w`.
void compareQLinear(const Config &cfg, Tensor &x, const std::vector<double> &xh,
                    RandomQWeight &w, bool withBias, std::mt19937 &gen,
                    const std::string &what) {
  const int64_t K = w.k, G = w.q.groupSize;
  auto term = [&](int64_t n, int64_t k) {
    const double q = w.values[size_t(n * K + k)];
    return std::fabs(w.scale(n, k / G) * q) + std::fabs(w.offset(n, k / G));
  };
  compareQLinearPacked(cfg, x, xh, w.dense, w.packed, w.n, K, withBias, gen,
                       term, kQLinearRel, what);
}

struct WeightCase {
  unsigned bits;
  bool sym;
  int64_t group, k;
};

/// The groups the block layout supports: one block (32), several blocks
/// per scale (64..512, 288 = 9 x 32), one per row with K a multiple of 32
/// (256) or not (80: 2.5 blocks; 172: stories260K's FFN; 36; 6: less
/// than one block), the tail block padded.
std::vector<WeightCase> weightCases() {
  std::vector<WeightCase> c;
  for (unsigned bits : {4u, 8u})
    for (bool sym : {true, false})
      for (auto [g, k] : std::vector<std::pair<int64_t, int64_t>>{{32, 96},
                                                                  {64, 192},
                                                                  {128, 256},
                                                                  {256, 512},
                                                                  {256, 256},
                                                                  {80, 80},
                                                                  {172, 172},
                                                                  {36, 36},
                                                                  {6, 6},
                                                                  {288, 288},
                                                                  {512, 1024}})
        c.push_back({bits, sym, g, k});
  return c;
}

std::string caseName(const WeightCase &w, int64_t M, int64_t N, DType st,
                     bool bias) {
  return "int" + std::to_string(w.bits) + (w.sym ? " sym" : " asym") +
         " G=" + std::to_string(w.group) + " K=" + std::to_string(w.k) +
         " M=" + std::to_string(M) + " N=" + std::to_string(N) +
         (st == DType::F16 ? " f16 scales" : " f32 scales") +
         (bias ? " bias" : "");
}

class QLinearTest : public ConfigTest {};

TEST_P(QLinearTest, FloatActivationsMatchPortable) {
  unsigned seed = 100;
  for (const WeightCase &wc : weightCases())
    for (int64_t M : {1, 3, 8})
      for (int64_t N : {8, 13, 16, 29})
        for (DType st : {DType::F32, DType::F16}) {
          std::mt19937 gen(seed++);
          const bool bias = (seed % 2) == 0;
          RandomQWeight w =
              makeRandomQWeight(N, wc.k, wc.bits, wc.sym, wc.group, st, gen);
          std::vector<float> xv = randomFloats(size_t(M * wc.k), gen);
          OwnedTensor x = f32Tensor({M, wc.k}, xv);
          std::vector<double> xh(xv.begin(), xv.end());
          compareQLinear(GetParam(), *x, xh, w, bias, gen,
                         caseName(wc, M, N, st, bias));
        }
  reportWorst("FloatActivationsMatchPortable");
}

/// Quantizes xv (shaped `shape`) with portable quantize_dynamic (per block
/// of 32 when perBlock, which is symmetric).
OwnedTensor quantizeFloats(const std::vector<float> &xv,
                           std::vector<int64_t> shape, bool sym, bool perToken,
                           bool perBlock) {
  OwnedTensor x = f32Tensor(shape, xv);
  QuantInfo q;
  q.bits = 8;
  q.symmetric = sym || perBlock;
  q.perToken = perToken || perBlock;
  q.groupSize = perBlock ? kQActBlock : 0;
  OwnedTensor qa(DType::QAct, shape, 0, q);
  EXPECT_OK(runPortable(OpId::QuantizeDynamic, {x}, {qa}));
  return qa;
}

/// Quantizes random floats with portable quantize_dynamic (per block of 32
/// when perBlock, which is symmetric).
OwnedTensor quantizedActivations(std::vector<int64_t> shape, bool sym,
                                 bool perToken, std::mt19937 &gen,
                                 float range = 3.0f, bool perBlock = false) {
  int64_t numel = 1;
  for (int64_t s : shape)
    numel *= s;
  // Shift half of the rows so that zero points vary widely.
  const int64_t K = shape.back();
  std::vector<float> xv = randomFloats(size_t(numel), gen, -range, range);
  for (int64_t i = 0; i < numel; ++i)
    if ((i / K) % 2)
      xv[size_t(i)] += range * float((i / K) % 3);
  return quantizeFloats(xv, shape, sym, perToken, perBlock);
}

TEST_P(QLinearTest, BlockActivationsMatchPortable) {
  unsigned seed = 300;
  // M = 4, 8 and 13: the prefill tiles (4 rows at 256 bits, 8 at 512),
  // alone and with rows left over.
  for (const WeightCase &wc : weightCases())
    for (int64_t M : {1, 2, 4, 8, 13})
      for (int64_t N : {8, 13, 16, 29, 33}) {
        std::mt19937 gen(seed++);
        const bool bias = (seed % 2) == 0;
        const DType st = (seed % 3) ? DType::F16 : DType::F32;
        RandomQWeight w =
            makeRandomQWeight(N, wc.k, wc.bits, wc.sym, wc.group, st, gen);
        OwnedTensor qa =
            quantizedActivations({M, wc.k}, true, true, gen, 3.0f, true);
        compareQLinear(GetParam(), *qa, dequantAct(*qa), w, bias, gen,
                       caseName(wc, M, N, st, bias) + " act per block");
      }
  reportWorst("BlockActivationsMatchPortable");
}

TEST_P(QLinearTest, StoriesShapes) {
  // stories260K's projections (K 64 and 172, N up to the 512-token vocab),
  // a 6-token prefill and a decode step, per block and per token.
  unsigned seed = 700;
  for (unsigned bits : {4u, 8u})
    for (int64_t K : {64, 172})
      for (int64_t G : {int64_t(32), K})
        for (int64_t N : {32, 64, 172, 512})
          for (int64_t M : {1, 6})
            for (bool perBlock : {true, false}) {
              if (K % G)
                continue;
              std::mt19937 gen(seed++);
              RandomQWeight w = makeRandomQWeight(
                  N, K, bits, true, G, G == K ? DType::F32 : DType::F16, gen);
              OwnedTensor qa = quantizedActivations({1, M, K}, perBlock, true,
                                                    gen, 3.0f, perBlock);
              compareQLinear(
                  GetParam(), *qa, dequantAct(*qa), w, false, gen,
                  caseName({bits, true, G, K}, M, N, DType::F32, false) +
                      (perBlock ? " per block" : " per token"));
            }
  reportWorst("StoriesShapes");
}

TEST_P(QLinearTest, QuantizedActivationsMatchPortable) {
  unsigned seed = 500;
  // M = 4, 8 and 13: the prefill tiles, alone and with rows left over.
  for (const WeightCase &wc : weightCases())
    for (int64_t M : {1, 2, 4, 8, 13})
      for (int64_t N : {8, 13, 16, 29}) {
        std::mt19937 gen(seed++);
        const bool bias = (seed % 2) == 0;
        const DType st = (seed % 3) ? DType::F32 : DType::F16;
        // Mostly asymmetric per-token activations (what the compiler emits).
        const bool actSym = (seed % 4) == 0;
        RandomQWeight w =
            makeRandomQWeight(N, wc.k, wc.bits, wc.sym, wc.group, st, gen);
        OwnedTensor qa = quantizedActivations({M, wc.k}, actSym, true, gen);
        compareQLinear(GetParam(), *qa, dequantAct(*qa), w, bias, gen,
                       caseName(wc, M, N, st, bias) +
                           (actSym ? " act sym" : " act asym"));
      }
  reportWorst("QuantizedActivationsMatchPortable");
}

TEST_P(QLinearTest, PerTensorAndHigherRankActivations) {
  std::mt19937 gen(900);
  for (const WeightCase &wc :
       {WeightCase{4, true, 32, 64}, WeightCase{8, false, 64, 64}}) {
    RandomQWeight w =
        makeRandomQWeight(11, wc.k, wc.bits, wc.sym, wc.group, DType::F32, gen);
    OwnedTensor pt = quantizedActivations({5, wc.k}, false, false, gen);
    compareQLinear(GetParam(), *pt, dequantAct(*pt), w, true, gen,
                   "per tensor");
    OwnedTensor r3 = quantizedActivations({2, 3, wc.k}, false, true, gen);
    compareQLinear(GetParam(), *r3, dequantAct(*r3), w, false, gen, "rank 3");
    std::vector<float> xv = randomFloats(size_t(6 * wc.k), gen);
    OwnedTensor xf = f32Tensor({1, 6, wc.k}, xv);
    compareQLinear(GetParam(), *xf, std::vector<double>(xv.begin(), xv.end()),
                   w, true, gen, "rank 3 float");
  }
  reportWorst("PerTensorAndHigherRankActivations");
}

TEST_P(QLinearTest, DecodeLarge) {
  // One input row above the parallel threshold: the decode paths split
  // over the thread pool.
  std::mt19937 gen(940);
  for (const WeightCase &wc :
       {WeightCase{4, true, 32, 1024}, WeightCase{4, false, 128, 1024},
        WeightCase{8, true, 32, 1024}, WeightCase{8, false, 1024, 1024}}) {
    RandomQWeight w = makeRandomQWeight(301, wc.k, wc.bits, wc.sym, wc.group,
                                        DType::F32, gen);
    OwnedTensor qa = quantizedActivations({1, wc.k}, false, true, gen);
    compareQLinear(GetParam(), *qa, dequantAct(*qa), w, true, gen,
                   caseName(wc, 1, 301, DType::F32, true) + " 8da");
    OwnedTensor qb = quantizedActivations({1, wc.k}, true, true, gen, 3.0f,
                                          /*perBlock=*/true);
    compareQLinear(GetParam(), *qb, dequantAct(*qb), w, true, gen,
                   caseName(wc, 1, 301, DType::F32, true) + " per block");
    std::vector<float> xv = randomFloats(size_t(wc.k), gen);
    OwnedTensor xf = f32Tensor({1, wc.k}, xv);
    compareQLinear(GetParam(), *xf, std::vector<double>(xv.begin(), xv.end()),
                   w, true, gen, caseName(wc, 1, 301, DType::F32, true));
  }
  reportWorst("DecodeLarge");
}

TEST_P(QLinearTest, PrefillLarge) {
  std::mt19937 gen(950);
  RandomQWeight w = makeRandomQWeight(45, 512, 4, true, 64, DType::F32, gen);
  OwnedTensor qa = quantizedActivations({40, 512}, false, true, gen);
  compareQLinear(GetParam(), *qa, dequantAct(*qa), w, true, gen, "8da4w");
  OwnedTensor qb = quantizedActivations({40, 512}, true, true, gen, 3.0f, true);
  compareQLinear(GetParam(), *qb, dequantAct(*qb), w, true, gen,
                 "int4, activations per block");
  std::vector<float> xv = randomFloats(size_t(40 * 512), gen);
  OwnedTensor xf = f32Tensor({40, 512}, xv);
  compareQLinear(GetParam(), *xf, std::vector<double>(xv.begin(), xv.end()), w,
                 true, gen, "int4 weight-only");
  reportWorst("PrefillLarge");
}

/// Prefill packs the rows in panels (qdot.h) and runs other tiles than
/// decode's; the integer sums are exact and the f32 steps the same, so each
/// row of an M-row result must equal, bit for bit, that row run alone (the
/// row tiles). M = 13: panels of 8 and 5 rows (tiles of 4, 2 and 1); N = 33
/// and 45: pairs of row groups and one left over.
/// Runs the M rows of one random case together (panels) and each row on
/// its own (the row tile), and expects the same bits.
/// nonNegative: rows whose values are made >= 0 (per token asymmetric,
/// their zero point is -128: -zp is not a byte).
void expectPanelsMatchRows(const WeightCase &wc, int64_t M, int64_t N,
                           int actKind, std::mt19937 &gen, Isa isa, int threads,
                           const std::vector<int64_t> &nonNegative = {}) {
  const int64_t K = wc.k;
  const bool perBlock = actKind == 0, sym = actKind != 2;
  const DType st = N == 33 ? DType::F16 : DType::F32;
  RandomQWeight w = makeRandomQWeight(N, K, wc.bits, wc.sym, wc.group, st, gen);
  std::vector<float> xv = randomFloats(size_t(M * K), gen, -3.0f, 3.0f);
  for (int64_t i = 0; i < M * K; ++i) // varied zero points
    xv[size_t(i)] += float((i / K) % 3);
  for (int64_t m : nonNegative)
    for (int64_t k = 0; k < K; ++k)
      xv[size_t(m * K + k)] = std::fabs(xv[size_t(m * K + k)]);
  OwnedTensor bias = f32Tensor({N}, randomFloats(size_t(N), gen));
  Context ctx(threads);
  auto run = [&](Tensor &x, int64_t rows) {
    OwnedTensor y = f32Output(size_t(rows * N));
    std::vector<Tensor *> ins = {&x, w.packed, bias}, outs = {y};
    std::vector<int64_t> ints;
    std::vector<double> floats;
    EXPECT_OK(qlinearPacked(makeArgs(ins, outs, ints, floats, ctx.get()), isa));
    return floatsOf(*y);
  };
  OwnedTensor qa = quantizeFloats(xv, {M, K}, sym, true, perBlock);
  const std::vector<float> all = run(*qa, M);
  for (int64_t m = 0; m < M; ++m) {
    std::vector<float> row(xv.begin() + m * K, xv.begin() + (m + 1) * K);
    OwnedTensor qr = quantizeFloats(row, {1, K}, sym, true, perBlock);
    const std::vector<float> one = run(*qr, 1);
    for (int64_t n = 0; n < N; ++n)
      ASSERT_TRUE(sameFloat(all[size_t(m * N + n)], one[size_t(n)]))
          << caseName(wc, M, N, st, true) << " act kind " << actKind << " row "
          << m << " column " << n << ": " << all[size_t(m * N + n)] << " vs "
          << one[size_t(n)];
  }
}

TEST_P(QLinearTest, PanelsGiveTheSameBitsAsSingleRows) {
  std::mt19937 gen(1300);
  for (const WeightCase &wc : weightCases())
    for (int actKind : {0, 1, 2}) // per block, per token sym / asym
      for (int64_t N : {33, 45})
        expectPanelsMatchRows(wc, 13, N, actKind, gen, GetParam().isa,
                              GetParam().threads);
}

/// Enough rows and columns (M K >= kMinParallelWork) that the panels are
/// packed on the pool's threads, in ranges that split panels (70 rows: 9
/// panels, the last of 6 rows).
TEST_P(QLinearTest, PanelsPackedInParallelGiveTheSameBits) {
  std::mt19937 gen(1301);
  const int64_t M = 70, K = 4096;
  ASSERT_GE(size_t(M * K), etllm::rt::kMinParallelWork);
  for (bool sym : {true, false})
    for (int actKind : {0, 2})
      expectPanelsMatchRows({4, sym, 32, K}, M, 33, actKind, gen,
                            GetParam().isa, GetParam().threads);
}

/// 16 rows and more: the AMX path's tiles (16 rows, a tail of 1 or 3, two
/// tiles and a tail), and on the other paths the panels again. Each row must
/// match portable and give the same bits as that row alone (decode), for
/// every weight layout (the ones the AMX kernels do not read pass to the
/// AVX-512 VNNI kernels) and activation kind.
TEST_P(QLinearTest, ManyRowsMatchPortableAndSingleRows) {
  std::mt19937 gen(1400);
  unsigned seed = 1400;
  for (const WeightCase &wc : weightCases())
    for (int64_t M : {16, 17, 35})
      for (int actKind : {0, 1, 2}) { // per block, per token sym / asym
        const int64_t N = (seed++ % 2) ? 33 : 13;
        expectPanelsMatchRows(wc, M, N, actKind, gen, GetParam().isa,
                              GetParam().threads);
        const bool perBlock = actKind == 0;
        RandomQWeight w = makeRandomQWeight(N, wc.k, wc.bits, wc.sym, wc.group,
                                            DType::F16, gen);
        OwnedTensor qa = quantizedActivations({M, wc.k}, actKind == 1, true,
                                              gen, 3.0f, perBlock);
        compareQLinear(GetParam(), *qa, dequantAct(*qa), w, (seed % 3) == 0,
                       gen,
                       caseName(wc, M, N, DType::F16, false) + " act kind " +
                           std::to_string(actKind));
      }
  reportWorst("ManyRowsMatchPortableAndSingleRows");
}

/// The arm64 prefill tiles of 16 rows (two panels; a last tile of one or two
/// panels) take a per-token zero point into their integer chains when every
/// row's -zp is a byte, else the 16 rows take the row tiles:
/// 9, 16, 21 and 40 rows, with a row of non-negative values (zero point
/// -128) in none, the first or the last tile. Each row must give the bits it
/// gives alone (decode) on every path.
TEST_P(QLinearTest, TallTilesGiveTheSameBitsWithAnyZeroPoint) {
  std::mt19937 gen(1402);
  for (const WeightCase &wc :
       {WeightCase{4, true, 32, 96}, WeightCase{4, false, 64, 128},
        WeightCase{8, true, 32, 64}})
    for (int64_t M : {9, 16, 21, 40})
      for (const std::vector<int64_t> &nonNeg :
           std::vector<std::vector<int64_t>>{{}, {3}, {M - 1}})
        for (int actKind : {1, 2})
          expectPanelsMatchRows(wc, M, 33, actKind, gen, GetParam().isa,
                                GetParam().threads, nonNeg);
}

/// More blocks than the AMX kernels unpack at a time (64): K = 2080 is 65
/// blocks (a chunk and one block), K = 4100 two chunks and a padded block;
/// groups of 32 and one per row.
TEST_P(QLinearTest, ManyBlocksMatchSingleRows) {
  std::mt19937 gen(1401);
  for (const WeightCase &wc :
       {WeightCase{4, true, 32, 2080}, WeightCase{8, true, 2080, 2080},
        WeightCase{4, false, 4100, 4100}, WeightCase{8, true, 4100, 4100}})
    for (int actKind : {0, 2})
      expectPanelsMatchRows(wc, 20, 33, actKind, gen, GetParam().isa,
                            GetParam().threads);
}

/// Extreme integers: every activation at -128 or 127 (or -127 and 127 per
/// block) and every weight at the ends of its range, so that a maddubs pair
/// reaches +-3840 and eight of them +-30720, and 8-bit products reach
/// 128 * 128: an int16 overflow or a saturating pair would show. M = 3
/// runs the decode tiles, M = 9 the prefill panels (rows repeat the three
/// patterns).
TEST_P(QLinearTest, ExtremeIntegersDoNotOverflow) {
  const int64_t K = 512, N = 16;
  for (int64_t M : {3, 9})
    for (unsigned bits : {4u, 8u})
      for (bool sym : {true, false})
        for (int64_t G : {32, 64, 512}) {
          QuantInfo q;
          q.bits = uint8_t(bits);
          q.symmetric = sym;
          q.groupSize = G;
          const int32_t lo = sym ? -(1 << (bits - 1)) : 0;
          const int32_t hi = sym ? (1 << (bits - 1)) - 1 : (1 << bits) - 1;
          RandomQWeight w;
          w.q = q;
          w.n = N;
          w.k = K;
          w.values.resize(size_t(N * K));
          for (int64_t i = 0; i < N * K; ++i)
            w.values[size_t(i)] = (i / K) % 2 ? hi : lo; // rows alternate
          w.scales.assign(size_t(N * K / G), 0.01f);
          if (!sym)
            w.offsets.assign(size_t(N * K / G), -0.07f);
          w.dense =
              rt::testing::makeQWeight(N, K, q, w.values, w.scales, w.offsets);
          auto packed =
              packQBlocks(w.dense->ptr<uint8_t>(), w.dense->capacity, N, K, q);
          ASSERT_TRUE(packed.ok());
          w.packed = bytesTensor(DType::QWeight, N, K, *packed, q);

          OwnedTensor qa = zeroTokenQAct(M, K);
          const QActLayout l = QActLayout::compute(M, K);
          uint8_t *base = qa->ptr<uint8_t>();
          const int32_t zps[3] = {-128, 127, 5};
          for (int64_t m = 0; m < M; ++m) {
            const int64_t p = m % 3;
            for (int64_t k = 0; k < K; ++k)
              base[m * K + k] =
                  uint8_t(int8_t(p == 0   ? -128
                                 : p == 1 ? 127
                                          : (k % 2 ? 127 : -128)));
            const float s = 0.02f;
            std::memcpy(base + l.scalesOff + m * 4, &s, 4);
            std::memcpy(base + l.zpOff + m * 4, &zps[p], 4);
          }
          std::mt19937 gen(bits * 10 + sym);
          compareQLinear(
              GetParam(), *qa, dequantAct(*qa), w, false, gen,
              "extreme int" + std::to_string(bits) + (sym ? " sym" : " asym") +
                  " G=" + std::to_string(G) + " M=" + std::to_string(M));

          QuantInfo bq;
          bq.bits = 8;
          bq.symmetric = true;
          bq.groupSize = kQActBlock;
          OwnedTensor qb(DType::QAct, {M, K}, 0, bq);
          const QActLayout bl = QActLayout::compute(M, K, bq);
          uint8_t *bb = qb->ptr<uint8_t>();
          for (int64_t m = 0; m < M; ++m)
            for (int64_t b = 0; b < bl.blocks; ++b) {
              int32_t sum = 0;
              for (int64_t k = 0; k < kQActBlock; ++k) {
                const int64_t p = m % 3;
                const int8_t v = p == 0   ? -127
                                 : p == 1 ? 127
                                          : (k % 2 ? 127 : -127);
                bb[m * bl.rowStride + b * kQActBlock + k] = uint8_t(v);
                sum += v;
              }
              const float s = 0.02f;
              std::memcpy(bb + bl.scalesOff + size_t(m * bl.blocks + b) * 4, &s,
                          4);
              std::memcpy(bb + bl.sumsOff + size_t(m * bl.blocks + b) * 4, &sum,
                          4);
            }
          compareQLinear(GetParam(), *qb, dequantAct(*qb), w, false, gen,
                         "extreme int" + std::to_string(bits) +
                             (sym ? " sym" : " asym") +
                             " G=" + std::to_string(G) +
                             " M=" + std::to_string(M) + " per block");
        }
  reportWorst("ExtremeIntegersDoNotOverflow");
}

/// Per-token zero points outside a byte (a QAct made by a program rather
/// than by quantize_dynamic, which keeps them in [-128, 127]): single rows
/// take the arm64 dot-product kernels' unfolded path (-zp not a byte), the
/// others the same formula as always; all match portable.
TEST_P(QLinearTest, ZeroPointsBeyondAByte) {
  const int64_t K = 96, N = 37;
  std::mt19937 gen(1400);
  for (unsigned bits : {4u, 8u})
    for (int32_t zp : {-129, -128, 128, 129, 300, -1000}) {
      RandomQWeight w =
          makeRandomQWeight(N, K, bits, true, 32, DType::F32, gen);
      for (int64_t M : {1, 3, 9, 20}) { // decode tiles, prefill panels
        OwnedTensor qa = zeroTokenQAct(M, K);
        const QActLayout l = QActLayout::compute(M, K);
        uint8_t *base = qa->ptr<uint8_t>();
        std::uniform_int_distribution<int> q(-128, 127);
        for (int64_t i = 0; i < M * K; ++i)
          base[i] = uint8_t(int8_t(q(gen)));
        for (int64_t m = 0; m < M; ++m) {
          const float s = 0.01f;
          std::memcpy(base + l.scalesOff + m * 4, &s, 4);
          std::memcpy(base + l.zpOff + m * 4, &zp, 4);
        }
        compareQLinear(GetParam(), *qa, dequantAct(*qa), w, true, gen,
                       "int" + std::to_string(bits) + " zp " +
                           std::to_string(zp) + " M " + std::to_string(M));
      }
    }
  reportWorst("ZeroPointsBeyondAByte");
}

TEST(QLinearTest, ThreadCountDoesNotChangeResults) {
  // Shapes above the parallel threshold (2^18 multiply-adds): decode and
  // prefill, float and quantized activations.
  for (Isa isa : allIsas()) {
    for (int actKind : {0, 1, 2}) // f32, per token, per block
      for (auto [M, K, N] : std::vector<std::tuple<int64_t, int64_t, int64_t>>{
               {1, 1024, 301}, {9, 640, 77}}) {
        std::vector<float> res[2];
        for (int t = 0; t < 2; ++t) {
          std::mt19937 gen(77);
          RandomQWeight w =
              makeRandomQWeight(N, K, 4, false, 32, DType::F32, gen);
          OwnedTensor x =
              actKind == 1 ? quantizedActivations({M, K}, false, true, gen)
              : actKind == 2
                  ? quantizedActivations({M, K}, true, true, gen, 3.0f, true)
                  : f32Tensor({M, K}, randomFloats(size_t(M * K), gen));
          OwnedTensor y = f32Output(size_t(M * N));
          Context ctx(t + 1);
          std::vector<Tensor *> ins = {x, w.packed}, outs = {y};
          std::vector<int64_t> ints;
          std::vector<double> floats;
          ASSERT_OK(
              qlinearPacked(makeArgs(ins, outs, ints, floats, ctx.get()), isa));
          res[t] = floatsOf(*y);
        }
        for (size_t i = 0; i < res[0].size(); ++i)
          ASSERT_TRUE(sameFloat(res[0][i], res[1][i])) << i;
      }
  }
}

TEST(QLinearTest, RejectsBadOperands) {
  std::mt19937 gen(3);
  RandomQWeight w = makeRandomQWeight(9, 64, 4, true, 32, DType::F32, gen);
  OwnedTensor x = f32Tensor({2, 64}, randomFloats(128, gen));
  OwnedTensor xBad = f32Tensor({2, 32}, randomFloats(64, gen));
  OwnedTensor y = f32Output(18);
  OwnedTensor yi(DType::I32, {18});
  ExecContext ctx;
  std::vector<int64_t> ints;
  std::vector<double> floats;
  auto run = [&](std::vector<Tensor *> ins, std::vector<Tensor *> outs) {
    return qlinearPacked(makeArgs(ins, outs, ints, floats, &ctx), detectIsa());
  };
  EXPECT_ERROR(run({xBad, w.packed}, {y}), "does not match");
  EXPECT_ERROR(run({x, w.packed}, {yi}), "output must be f32");
  OwnedTensor small =
      bytesTensor(DType::QWeight, 9, 64, std::vector<uint8_t>(100, 0), w.q);
  EXPECT_ERROR(run({x, small}, {y}), "needs");
  QuantInfo bad = w.q;
  bad.groupSize = 30; // does not divide K
  OwnedTensor badGroup =
      bytesTensor(DType::QWeight, 9, 64, std::vector<uint8_t>(4096, 0), bad);
  EXPECT_ERROR(run({x, badGroup}, {y}), "group size");
  bad.groupSize = 16; // divides K, but not a whole number of blocks
  OwnedTensor smallGroup =
      bytesTensor(DType::QWeight, 9, 64, std::vector<uint8_t>(4096, 0), bad);
  EXPECT_ERROR(run({x, smallGroup}, {y}), "block layout");
  OwnedTensor xh(DType::F16, {2, 64});
  EXPECT_ERROR(run({xh, w.packed}, {y}), "f32 or qact");
}

INSTANTIATE_TEST_SUITE_P(Configs, QLinearTest,
                         ::testing::ValuesIn(allConfigs()), configName);

} // namespace
} // namespace etllm::rt::cpu::test
