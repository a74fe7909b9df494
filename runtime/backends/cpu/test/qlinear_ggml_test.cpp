//===- qlinear_ggml_test.cpp - ggml-scheme qlinear vs portable ------------===//
//
// Weights of the ggml schemes (Q5_0, Q5_1, Q4_K, Q5_K, Q6_K: a GGUF's blocks
// kept as they are) packed into the block layout (packing.h) and run by the
// optimized kernels, against the portable kernels on the same blocks (which
// dequantize them with ggml's reference, ggml_blocks.h). The blocks are
// random: every byte of the values, the 6-bit scales and mins and the int8
// scales, with f16 scales of realistic size.
//
// Tolerances as in qlinear_test.cpp: |optimized - portable| <= 1e-5 mag,
// mag = sum_k |xhat_k| (|dw_k (u_k - bias)| + |offset_k|) + |b|, the
// magnitudes of the terms both kernels add (the integer kernels are exact
// per block and half up to a handful of f32 roundings; portable rounds
// every product). A wrong bias (16, 32), offset (m, -dmin m_j), sub-block
// scale or high bit would be off by whole steps of a scale per block: far
// above it. The packing and the embedding rows are exact (bit for bit).
//
// Every case runs on every ISA path this CPU has, without and with a
// 2-thread pool (the parameter names say which ran). The AVX-512 kernels
// are compiled from the same source (qdot_ggml_x86.inc) and run where the
// CPU has AVX-512.
//
//===----------------------------------------------------------------------===//
#include "helpers.h"

#include "../qdot.h"

#include "etllm/runtime/ggml_blocks.h"

namespace etllm::rt::cpu::test {
namespace {

constexpr double kRel = 1e-5;

const QScheme kSchemes[] = {QScheme::Q5_0, QScheme::Q5_1, QScheme::Q4_K,
                            QScheme::Q5_K, QScheme::Q6_K};

/// Random blocks of scheme s for a weight [n, k]; `extreme` sets every value
/// to its largest stored value (15, 31 or 63) and the scales to their
/// largest, so that the int16 sums reach their bounds.
std::vector<uint8_t> randomBlocks(QScheme s, int64_t n, int64_t k,
                                  std::mt19937 &gen, bool extreme = false) {
  const int64_t bv = ggml::blockValues(s), bb = ggml::blockBytes(s);
  std::vector<uint8_t> out(size_t(n * (k / bv) * bb));
  std::uniform_int_distribution<int> byte(0, 255);
  for (uint8_t &b : out)
    b = extreme ? 0xff : uint8_t(byte(gen));
  auto half = [&](float lo, float hi) {
    std::uniform_real_distribution<float> d(lo, hi);
    return floatToHalf(d(gen));
  };
  for (size_t at = 0; at < out.size(); at += size_t(bb)) {
    uint8_t *blk = out.data() + at;
    uint16_t h[2];
    switch (s) {
    case QScheme::Q5_0:
      h[0] = half(0.001f, 0.05f);
      std::memcpy(blk, h, 2);
      break;
    case QScheme::Q5_1:
      h[0] = half(0.001f, 0.05f);
      h[1] = half(-0.5f, 0.1f);
      std::memcpy(blk, h, 4);
      break;
    case QScheme::Q4_K:
    case QScheme::Q5_K:
      h[0] = half(0.0002f, 0.002f);
      h[1] = half(0.0002f, 0.004f);
      std::memcpy(blk, h, 4);
      break;
    case QScheme::Q6_K:
      h[0] = half(0.0001f, 0.001f);
      std::memcpy(blk + 208, h, 2);
      if (extreme)
        std::memset(blk + 192, 0x7f, 16);
      break;
    case QScheme::Affine:
      break;
    }
  }
  return out;
}

/// A ggml-scheme weight: its blocks (dense, for portable) and packed.
struct GgmlWeight {
  QScheme s;
  int64_t n = 0, k = 0;
  QuantInfo q;
  PackedQBlockLayout l;
  std::vector<uint8_t> packedBytes;
  OwnedTensor dense, packed;
  /// The dequantization of element (row, col) from the packed layout.
  GgmlBlockParams params(int64_t row, int64_t col) const {
    return ggmlBlockParams(l, packedBytes.data() + l.scalesOff,
                           l.hasOffsets() ? packedBytes.data() + l.offsetsOff
                                          : nullptr,
                           row / kQRows, col / kQBlock, int(row % kQRows));
  }
  uint8_t stored(int64_t row, int64_t col) const {
    const uint8_t *tile =
        packedBytes.data() + l.qdataOff +
        (size_t(row / kQRows) * size_t(l.kBlocks) + size_t(col / kQBlock)) *
            l.tileBytes;
    return packedValue(l, tile, int(row % kQRows), int(col % kQBlock));
  }
};

GgmlWeight makeWeight(QScheme s, int64_t n, int64_t k, std::mt19937 &gen,
                      bool extreme = false) {
  GgmlWeight w;
  w.s = s;
  w.n = n;
  w.k = k;
  w.q = ggmlQuantInfo(s);
  std::vector<uint8_t> blocks = randomBlocks(s, n, k, gen, extreme);
  w.dense = OwnedTensor(DType::QWeight, {n, k}, blocks.size(), w.q);
  std::memcpy(w.dense->data, blocks.data(), blocks.size());
  Result<PackedQBlockLayout> l = PackedQBlockLayout::compute(n, k, w.q);
  EXPECT_TRUE(l.ok()) << (l.ok() ? "" : l.message());
  w.l = *l;
  Result<std::vector<uint8_t>> p =
      packQBlocks(blocks.data(), blocks.size(), n, k, w.q);
  EXPECT_TRUE(p.ok()) << (p.ok() ? "" : p.message());
  w.packedBytes = *p;
  w.packed = bytesTensor(DType::QWeight, n, k, w.packedBytes, w.q);
  return w;
}

std::string name(QScheme s, int64_t M, int64_t N, int64_t K, bool bias) {
  return std::string(qschemeName(s)) + " M=" + std::to_string(M) +
         " N=" + std::to_string(N) + " K=" + std::to_string(K) +
         (bias ? " bias" : "");
}

/// Reads a QAct [M, K] (per token or per block) as floats xhat.
std::vector<double> dequantAct(const Tensor &qa) {
  const int64_t K = qa.dim(-1), M = qa.numel() / K;
  const QActLayout l = QActLayout::compute(M, K, qa.quant);
  const uint8_t *base = qa.ptr<uint8_t>();
  std::vector<double> xh(size_t(M * K));
  for (int64_t m = 0; m < M; ++m)
    for (int64_t k = 0; k < K; ++k) {
      float s;
      int32_t zp = 0;
      if (l.perBlock) {
        std::memcpy(
            &s, base + l.scalesOff + size_t(m * l.blocks + k / kQActBlock) * 4,
            4);
        xh[size_t(m * K + k)] = double(s) * int8_t(base[m * l.rowStride + k]);
      } else {
        std::memcpy(&s, base + l.scalesOff + size_t(m) * 4, 4);
        std::memcpy(&zp, base + l.zpOff + size_t(m) * 4, 4);
        xh[size_t(m * K + k)] = double(s) * (int8_t(base[m * K + k]) - zp);
      }
    }
  return xh;
}

OwnedTensor quantize(const std::vector<float> &xv, int64_t M, int64_t K,
                     bool perBlock) {
  OwnedTensor x = f32Tensor({M, K}, xv);
  QuantInfo q;
  q.bits = 8;
  q.symmetric = perBlock;
  q.groupSize = perBlock ? kQActBlock : 0;
  OwnedTensor qa(DType::QAct, {M, K}, 0, q);
  EXPECT_OK(runPortable(OpId::QuantizeDynamic, {x}, {qa}));
  return qa;
}

/// Packed qlinear (cfg) against portable on input x (f32 or QAct), within
/// rel * mag.
void compare(const Config &cfg, Tensor &x, const std::vector<double> &xh,
             GgmlWeight &w, bool withBias, std::mt19937 &gen,
             const std::string &what, double rel = kRel) {
  auto term = [&](int64_t n, int64_t k) {
    const GgmlBlockParams p = w.params(n, k);
    return std::fabs(double(p.dw[(k % kQBlock) / 16]) *
                     (int32_t(w.stored(n, k)) - p.bias)) +
           (p.hasOffset ? std::fabs(double(p.offset)) : 0.0);
  };
  compareQLinearPacked(cfg, x, xh, w.dense, w.packed, w.n, w.k, withBias, gen,
                       term, rel, what);
}

std::vector<int64_t> ks(QScheme s) {
  return ggml::blockValues(s) == 32 ? std::vector<int64_t>{32, 96, 160}
                                    : std::vector<int64_t>{256, 768};
}

// The packed layout holds every bit: each value dequantizes from it exactly
// as ggml's reference dequantizes the block (the same floats), padding rows
// included (zero), and its size is the GGUF's.
TEST(GgmlPacking, LosslessAndGgufSized) {
  std::mt19937 gen(11);
  for (QScheme s : kSchemes)
    for (int64_t n : {1, 16, 21}) {
      const int64_t k = ggml::blockValues(s) * 3;
      GgmlWeight w = makeWeight(s, n, k, gen);
      const uint8_t *blocks = w.dense->ptr<uint8_t>();
      const int64_t bv = ggml::blockValues(s), bb = ggml::blockBytes(s);
      std::vector<float> ref(static_cast<size_t>(bv));
      for (int64_t row = 0; row < w.l.rowGroups * kQRows; ++row)
        for (int64_t g = 0; g < k / bv; ++g) {
          if (row < n)
            ggml::dequantBlock(s, blocks + size_t((row * (k / bv) + g) * bb),
                               ref.data());
          for (int64_t i = 0; i < bv; ++i) {
            const int64_t col = g * bv + i;
            const GgmlBlockParams p = w.params(row, col);
            float x = p.dw[(col % kQBlock) / 16] *
                      float(int32_t(w.stored(row, col)) - p.bias);
            if (p.hasOffset)
              x = x + p.offset;
            const float want = row < n ? ref[size_t(i)] : 0.0f;
            ASSERT_TRUE(x == want)
                << qschemeName(s) << " row " << row << " col " << col << ": "
                << x << " vs " << want;
          }
        }
      if (n % kQRows == 0) { // no padding rows: the GGUF's bytes, sections
        EXPECT_LE(w.l.totalBytes, w.dense->capacity + 2 * kQuantSectionAlign)
            << qschemeName(s);
      }
    }
}

class GgmlQLinearTest : public ConfigTest {};

TEST_P(GgmlQLinearTest, BlockActivationsMatchPortable) {
  unsigned seed = 2000;
  // M = 1..4: decode's row tiles; 5, 8, 13: prefill's panels (tiles of 4,
  // and 1..3 left over); 16, 35: the AMX path's tiles of 16 rows (and a
  // tail of 3); N: partial vectors and row groups.
  for (QScheme s : kSchemes)
    for (int64_t K : ks(s))
      for (int64_t M : {1, 2, 3, 4, 5, 8, 13, 16, 35})
        for (int64_t N : {1, 13, 16, 33}) {
          std::mt19937 gen(seed++);
          const bool bias = seed % 2;
          GgmlWeight w = makeWeight(s, N, K, gen);
          OwnedTensor qa =
              quantize(randomFloats(size_t(M * K), gen, -3, 3), M, K, true);
          compare(GetParam(), *qa, dequantAct(*qa), w, bias, gen,
                  name(s, M, N, K, bias) + " act per block");
        }
  reportWorst("BlockActivationsMatchPortable");
}

TEST_P(GgmlQLinearTest, TokenAndFloatActivationsMatchPortable) {
  unsigned seed = 3000;
  for (QScheme s : kSchemes)
    for (int64_t M : {1, 3, 6})
      for (int64_t N : {7, 16}) {
        const int64_t K = ks(s).back();
        std::mt19937 gen(seed++);
        GgmlWeight w = makeWeight(s, N, K, gen);
        std::vector<float> xv = randomFloats(size_t(M * K), gen, -2, 3);
        OwnedTensor qa = quantize(xv, M, K, false);
        compare(GetParam(), *qa, dequantAct(*qa), w, true, gen,
                name(s, M, N, K, true) + " act per token");
        OwnedTensor xf = f32Tensor({M, K}, xv);
        compare(GetParam(), *xf, std::vector<double>(xv.begin(), xv.end()), w,
                false, gen, name(s, M, N, K, false) + " f32");
      }
  reportWorst("TokenAndFloatActivationsMatchPortable");
}

// Every stored value at its largest (15, 31, 63) against activations at
// +-127: the int16 partial sums reach their bounds (a flush too late would
// wrap: off by 65536 steps of a scale), and large blocks run on the pool.
// Rows of terms of one sign have no cancellation: portable's sequential f32
// sum of K such terms is within (K - 1) u of the exact value (u = 2^-24),
// which is the tolerance here (6.1e-5 for K = 1024; Q6_K's sums measured
// 1.3e-5).
TEST_P(GgmlQLinearTest, ExtremeValuesDoNotOverflow) {
  std::mt19937 gen(4000);
  for (QScheme s : kSchemes) {
    const int64_t K = 1024, N = 40, M = 9;
    GgmlWeight w = makeWeight(s, N, K, gen, /*extreme=*/true);
    std::vector<float> xv(size_t(M * K));
    for (size_t i = 0; i < xv.size(); ++i)
      xv[i] = (i / size_t(K)) % 3 == 0   ? 1.0f
              : (i / size_t(K)) % 3 == 1 ? -1.0f
                                         : (i % 2 ? 1.0f : -1.0f);
    for (int64_t M1 : {int64_t(1), M}) {
      OwnedTensor qa = quantize(
          std::vector<float>(xv.begin(), xv.begin() + M1 * K), M1, K, true);
      compare(GetParam(), *qa, dequantAct(*qa), w, false, gen,
              name(s, M1, N, K, false) + " extreme", double(K - 1) * 0x1p-24);
    }
  }
  reportWorst("ExtremeValuesDoNotOverflow");
}

// Prefill's panels (and the AMX path's tiles) and decode's row tiles
// compute the same integer sums and f32 steps: each row of a 13-, 17- or
// 35-row call equals that row run alone, bit for bit.
TEST_P(GgmlQLinearTest, PanelsGiveTheSameBitsAsSingleRows) {
  std::mt19937 gen(5000);
  for (QScheme s : kSchemes)
    for (int64_t M : {13, 17, 35}) {
      const int64_t K = ks(s).back(), N = 37;
      GgmlWeight w = makeWeight(s, N, K, gen);
      std::vector<float> xv = randomFloats(size_t(M * K), gen, -3, 3);
      OwnedTensor bias = f32Tensor({N}, randomFloats(size_t(N), gen));
      Context ctx(GetParam().threads);
      auto run = [&](Tensor &x, int64_t rows) {
        OwnedTensor y = f32Output(size_t(rows * N));
        std::vector<Tensor *> ins = {&x, w.packed, bias}, outs = {y};
        std::vector<int64_t> ints;
        std::vector<double> floats;
        EXPECT_OK(qlinearPacked(makeArgs(ins, outs, ints, floats, ctx.get()),
                                GetParam().isa));
        return floatsOf(*y);
      };
      OwnedTensor qa = quantize(xv, M, K, true);
      const std::vector<float> all = run(*qa, M);
      for (int64_t m = 0; m < M; ++m) {
        OwnedTensor qr = quantize(
            std::vector<float>(xv.begin() + m * K, xv.begin() + (m + 1) * K), 1,
            K, true);
        const std::vector<float> one = run(*qr, 1);
        for (int64_t n = 0; n < N; ++n)
          ASSERT_TRUE(sameFloat(all[size_t(m * N + n)], one[size_t(n)]))
              << qschemeName(s) << " M=" << M << " row " << m << " column "
              << n;
      }
    }
}

// qembedding rows of a packed ggml table are portable's, bit for bit.
TEST_P(GgmlQLinearTest, EmbeddingRowsArePortables) {
  std::mt19937 gen(6000);
  for (QScheme s : kSchemes) {
    const int64_t V = 37, D = ks(s).back();
    GgmlWeight w = makeWeight(s, V, D, gen);
    OwnedTensor idx(DType::I64, {5}, 5 * 8);
    const int64_t rows[5] = {0, 36, 17, 16, 3};
    std::memcpy(idx->data, rows, sizeof rows);
    OwnedTensor ref = f32Output(size_t(5 * D)), got = f32Output(size_t(5 * D));
    ASSERT_OK(runPortable(OpId::QEmbedding, {w.dense, idx}, {ref}));
    Context ctx(GetParam().threads);
    std::vector<Tensor *> ins = {w.packed, idx}, outs = {got};
    std::vector<int64_t> ints;
    std::vector<double> floats;
    Result<QDotWeight> qw = qdotWeight(*w.packed);
    ASSERT_TRUE(qw.ok()) << qw.message();
    ASSERT_OK(qembeddingRun(makeArgs(ins, outs, ints, floats, ctx.get()), *qw));
    const std::vector<float> a = floatsOf(*got), b = floatsOf(*ref);
    for (size_t i = 0; i < a.size(); ++i)
      ASSERT_TRUE(sameFloat(a[i], b[i])) << qschemeName(s) << " element " << i
                                         << ": " << a[i] << " vs " << b[i];
  }
}

INSTANTIATE_TEST_SUITE_P(Configs, GgmlQLinearTest,
                         ::testing::ValuesIn(allConfigs()), configName);

} // namespace
} // namespace etllm::rt::cpu::test
