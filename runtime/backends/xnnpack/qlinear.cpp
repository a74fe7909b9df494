//===- qlinear.cpp - qlinear with QWEIGHT_NR8-packed weights --------------===//
//
// The weight is PackedQWeightLayout (packing.h): per row block of 8 output
// features and group g, the 8 rows' q values, then f32 scales, offsets
// (asymmetric) and per-group sums of q, each [blocks][groups][8].
//
// Float activations (weight-only int4/int8): the weights are dequantized to
// f32 exactly as portable's dequantize does (s * q, or s * q + o; the AVX2
// path fuses the latter into one FMA) and multiplied in f32:
//  * one input row (decode): per row block, the 8 rows are dequantized 8
//    values at a time in registers and FMA'd with the input (8 row
//    accumulators, reduced once at the end);
//  * several rows (prefill): per panel of 2 blocks and chunk of 256 k, the
//    chunk is dequantized once into k-major scratch (transposed 8x8) and
//    the f32 micro-kernels of gemm.h run every input row over it.
//
// Quantized activations (8da: int8 per token, x ~= sx (qx - zp)): for each
// output row, input row and group, the exact integer
//
//   s = sum_k (qx_k - zp) q_k = D - zp sum_k q_k,   D = sum_k qx_k q_k
//
// (sum q from the packed sums), then y = sx * sum_g sw_g s_g
// + sx * sum_g o_g (sum qx - G zp) + bias, the second term for asymmetric
// weights only. s is formed in int32 before any rounding, so the result is
// accurate relative to the centered products even when zp is large (the
// "extreme" tests: exact 0 stays 0). AVX2: 4-bit weights multiply their
// unsigned nibbles u with _mm256_maddubs_epi16 (D = sum u qx - 8 sum qx when
// symmetric, q = u - 8); pairs are at most 2 * 15 * 128 = 3840 in magnitude,
// so 8 chunks of 32 add in int16 before _mm256_madd_epi16 widens. The input
// rows are reordered once per call so that the low and high nibbles of a
// 16-byte weight load meet their inputs. 8-bit weights are widened to int16
// against int16 inputs (_mm256_madd_epi16; maddubs could saturate). The 8
// int32 partial sums of a dot product are reduced exactly (hadd tree) for 8
// dot products at once: in decode the 8 weight rows of a block against one
// input row, in prefill one weight row against 8 input rows (sharing each
// unpacked weight chunk); then s goes to f32 once per group. int32 cannot
// overflow for groups up to 16384 (larger ones take the generic path, which
// accumulates in int64).
//
//===----------------------------------------------------------------------===//
#include "gemm.h"

#include <algorithm>

namespace etllm::rt::xnnpack {
namespace {

/// Read access to a packed quantized weight.
struct QView {
  PackedQWeightLayout l;
  const uint8_t *base = nullptr;

  size_t slot(int64_t rb, int64_t g) const {
    return (size_t(rb) * size_t(l.groups) + size_t(g)) * size_t(kNR);
  }
  /// Row r's q bytes of (block rb, group g); the 8 rows follow each other.
  const uint8_t *q(int64_t rb, int64_t g, int r = 0) const {
    return base + l.qdataOff + (slot(rb, g) + size_t(r)) * l.groupBytes;
  }
  const float *scales(int64_t rb, int64_t g) const {
    return reinterpret_cast<const float *>(base + l.scalesOff) + slot(rb, g);
  }
  const float *offsets(int64_t rb, int64_t g) const {
    return reinterpret_cast<const float *>(base + l.offsetsOff) + slot(rb, g);
  }
  const int32_t *sums(int64_t rb, int64_t g) const {
    return reinterpret_cast<const int32_t *>(base + l.sumsOff) + slot(rb, g);
  }
  /// The q value at position kk of a group row (4-bit: the nibble; signed
  /// when symmetric).
  int32_t value(const uint8_t *row, int64_t kk) const {
    if (l.bits == 8)
      return l.symmetric ? int32_t(int8_t(row[kk])) : int32_t(row[kk]);
    int32_t u = (kk & 1) ? (row[kk / 2] >> 4) : (row[kk / 2] & 0xf);
    return l.symmetric ? u - 8 : u;
  }
};

/// Stores 8 outputs (the first `valid`) of a row block: y = acc + bias.
void storeBlockScalar(const float *acc, const float *bias, float *y,
                      int valid) {
  for (int r = 0; r < valid; ++r)
    y[r] = acc[r] + (bias ? bias[r] : 0.0f);
}

//===----------------------------------------------------------------------===//
// Float activations
//===----------------------------------------------------------------------===//

/// Dequantizes k in [k0, k0 + kc) of blocks rb, rb + 1, ... (nb of them)
/// into dst[j][k - k0][8] (k-major), as portable's dequantize.
void dequantChunkGeneric(const QView &w, int64_t rb, int nb, int64_t k0,
                         int64_t kc, float *dst) {
  const int64_t G = w.l.groupSize;
  for (int j = 0; j < nb; ++j) {
    float *d = dst + int64_t(j) * kc * kNR;
    int64_t k = k0;
    while (k < k0 + kc) {
      const int64_t g = k / G;
      const int64_t kEnd = std::min(k0 + kc, (g + 1) * G);
      const float *sc = w.scales(rb + j, g);
      const float *of = w.l.symmetric ? nullptr : w.offsets(rb + j, g);
      for (int r = 0; r < 8; ++r) {
        const uint8_t *row = w.q(rb + j, g, r);
        const float s = sc[r];
        if (of) {
          const float o = of[r];
          for (int64_t kk = k; kk < kEnd; ++kk)
            d[(kk - k0) * kNR + r] = s * float(w.value(row, kk - g * G)) + o;
        } else {
          for (int64_t kk = k; kk < kEnd; ++kk)
            d[(kk - k0) * kNR + r] = s * float(w.value(row, kk - g * G));
        }
      }
      k = kEnd;
    }
  }
}

#if ETLLM_XNN_X86
/// 8 dequantized values of a group row starting at kk (a multiple of 8).
ETLLM_XNN_AVX2 inline __m256 dequant8(const uint8_t *row, int64_t kk,
                                      unsigned bits, bool sym, __m256 s,
                                      __m256 o) {
  __m256i v;
  if (bits == 4) {
    uint32_t packed;
    std::memcpy(&packed, row + kk / 2, 4);
    v = _mm256_srlv_epi32(_mm256_set1_epi32(int(packed)),
                          _mm256_setr_epi32(0, 4, 8, 12, 16, 20, 24, 28));
    v = _mm256_and_si256(v, _mm256_set1_epi32(0xf));
    if (sym)
      v = _mm256_sub_epi32(v, _mm256_set1_epi32(8));
  } else {
    __m128i b = _mm_loadl_epi64(reinterpret_cast<const __m128i *>(row + kk));
    v = sym ? _mm256_cvtepi8_epi32(b) : _mm256_cvtepu8_epi32(b);
  }
  __m256 f = _mm256_cvtepi32_ps(v);
  return sym ? _mm256_mul_ps(f, s) : _mm256_fmadd_ps(f, s, o);
}

/// dequantChunkGeneric for groups that are a multiple of 8 (k0, kc too).
ETLLM_XNN_AVX2 void dequantChunkAvx2(const QView &w, int64_t rb, int nb,
                                     int64_t k0, int64_t kc, float *dst) {
  const int64_t G = w.l.groupSize;
  const unsigned bits = w.l.bits;
  const bool sym = w.l.symmetric;
  for (int j = 0; j < nb; ++j) {
    float *d = dst + int64_t(j) * kc * kNR;
    for (int64_t k = k0; k < k0 + kc; k += 8) {
      const int64_t g = k / G, kk = k - g * G;
      const float *sc = w.scales(rb + j, g);
      const float *of = sym ? sc : w.offsets(rb + j, g);
      __m256 rows[8];
#pragma GCC unroll 8
      for (int r = 0; r < 8; ++r)
        rows[r] =
            dequant8(w.q(rb + j, g, r), kk, bits, sym,
                     _mm256_broadcast_ss(sc + r), _mm256_broadcast_ss(of + r));
      avx2::transpose8(rows);
#pragma GCC unroll 8
      for (int t = 0; t < 8; ++t)
        _mm256_storeu_ps(d + (k - k0 + t) * kNR, rows[t]);
    }
  }
}

/// One input row against row blocks [rbBegin, rbEnd): 8 row accumulators
/// per block, weights dequantized in registers.
template <unsigned Bits, bool Sym>
ETLLM_XNN_AVX2 void gemvQAvx2(const QView &w, const float *x, const float *bias,
                              float *y, int64_t N, int64_t rbBegin,
                              int64_t rbEnd) {
  const int64_t G = w.l.groupSize, GN = w.l.groups;
  const int64_t gb = int64_t(w.l.groupBytes);
  for (int64_t rb = rbBegin; rb < rbEnd; ++rb) {
    __m256 acc[8];
#pragma GCC unroll 8
    for (int r = 0; r < 8; ++r)
      acc[r] = _mm256_setzero_ps();
    for (int64_t g = 0; g < GN; ++g) {
      const uint8_t *q0 = w.q(rb, g);
      const float *sc = w.scales(rb, g);
      const float *of = Sym ? sc : w.offsets(rb, g);
      const float *xg = x + g * G;
      for (int64_t c = 0; c < G; c += 8) {
        const __m256 xv = _mm256_loadu_ps(xg + c);
#pragma GCC unroll 8
        for (int r = 0; r < 8; ++r) {
          __m256 wv =
              dequant8(q0 + r * gb, c, Bits, Sym, _mm256_broadcast_ss(sc + r),
                       _mm256_broadcast_ss(of + r));
          acc[r] = _mm256_fmadd_ps(xv, wv, acc[r]);
        }
      }
    }
    __m256 yv = avx2::hsum8(acc[0], acc[1], acc[2], acc[3], acc[4], acc[5],
                            acc[6], acc[7]);
    const int valid = int(std::min<int64_t>(8, N - rb * kNR));
    float *dst = y + rb * kNR;
    const __m256i m = avx2::laneMask(valid);
    if (bias)
      yv = _mm256_add_ps(yv, _mm256_maskload_ps(bias + rb * kNR, m));
    _mm256_maskstore_ps(dst, m, yv);
  }
}

void gemvQAvx2Dispatch(const QView &w, const float *x, const float *bias,
                       float *y, int64_t N, int64_t b, int64_t e) {
  if (w.l.bits == 4)
    return w.l.symmetric ? gemvQAvx2<4, true>(w, x, bias, y, N, b, e)
                         : gemvQAvx2<4, false>(w, x, bias, y, N, b, e);
  return w.l.symmetric ? gemvQAvx2<8, true>(w, x, bias, y, N, b, e)
                       : gemvQAvx2<8, false>(w, x, bias, y, N, b, e);
}
#endif

/// Scratch of the float-activation path: a dequantized panel chunk per tile
/// (none for the AVX2 decode path).
size_t floatScratchBytes(Isa isa, const ExecContext *ctx, int64_t M,
                         const PackedQWeightLayout &l) {
  if (isa == Isa::Avx2 && M == 1 && l.groupSize % 8 == 0)
    return 0;
  ctx = parallelContext(ctx, uint64_t(M) * uint64_t(l.n) * uint64_t(l.k));
  const int64_t panels =
      (l.rowBlocks + gemm::kPanelBlocks - 1) / gemm::kPanelBlocks;
  const size_t tile = defaultTile(ctx, size_t(panels));
  return numTiles(size_t(panels), tile) * size_t(gemm::kPanelBlocks) *
         size_t(gemm::kChunk) * size_t(kNR) * sizeof(float);
}

Status qlinearFloat(const KernelArgs &a, Isa isa, const QView &w,
                    const float *x, int64_t M, const float *bias, float *y) {
  const int64_t N = w.l.n, K = w.l.k, NB = w.l.rowBlocks;
  const bool vec8 = w.l.groupSize % 8 == 0;
  const ExecContext *pctx =
      parallelContext(a.ctx, uint64_t(M) * uint64_t(N) * uint64_t(K));
#if ETLLM_XNN_X86
  if (isa == Isa::Avx2 && M == 1 && vec8) {
    parallelForTiles(pctx, size_t(NB), defaultTile(pctx, size_t(NB)),
                     [&](size_t b, size_t e) {
                       gemvQAvx2Dispatch(w, x, bias, y, N, int64_t(b),
                                         int64_t(e));
                     });
    return Status();
  }
#endif
  const int64_t panels = (NB + gemm::kPanelBlocks - 1) / gemm::kPanelBlocks;
  const size_t tile = defaultTile(pctx, size_t(panels));
  const int64_t chunkFloats = gemm::kPanelBlocks * gemm::kChunk * kNR;
  if (!a.ctx)
    return kernelError("qlinear", "needs an execution context (scratch)");
  float *scratch = static_cast<float *>(
      a.ctx->scratch(floatScratchBytes(isa, a.ctx, M, w.l)));
  parallelForTiles(pctx, size_t(panels), tile, [&](size_t b, size_t e) {
    float *buf = scratch + (b / tile) * size_t(chunkFloats);
    for (size_t p = b; p < e; ++p) {
      const int64_t rb = int64_t(p) * gemm::kPanelBlocks;
      const int nb = int(std::min<int64_t>(gemm::kPanelBlocks, NB - rb));
      for (int64_t k0 = 0; k0 < K; k0 += gemm::kChunk) {
        const int64_t kc = std::min<int64_t>(gemm::kChunk, K - k0);
#if ETLLM_XNN_X86
        if (isa == Isa::Avx2 && vec8)
          dequantChunkAvx2(w, rb, nb, k0, kc, buf);
        else
#endif
          dequantChunkGeneric(w, rb, nb, k0, kc, buf);
        gemm::Tile t{x + k0, K,
                     buf,    kc * kNR,
                     kc,     bias ? bias + rb * kNR : nullptr,
                     k0 > 0, y + rb * kNR,
                     N,      int(std::min<int64_t>(N - rb * kNR, nb * kNR))};
        gemm::panelRowsN(isa, nb, t, M);
      }
    }
  });
  return Status();
}

//===----------------------------------------------------------------------===//
// Quantized activations (8da)
//===----------------------------------------------------------------------===//

/// How the input rows are laid out for the integer dot products.
enum class ActMode {
  Natural, ///< generic path: the QAct's int8 rows as they are
  Nib32,   ///< 4-bit, G % 32 == 0: int8, per 32 values [evens, odds]
  Wide16,  ///< 8-bit, G % 16 == 0: int16, natural order
};

/// Largest group the AVX2 int32 accumulation is proven safe for.
inline constexpr int64_t kMaxIntGroup = 16384;
/// Input rows per AVX2 prefill tile (one per lane of the reduction).
inline constexpr int64_t kActTile = 8;

/// The prepared input rows.
struct QActRows {
  ActMode mode = ActMode::Natural;
  const int8_t *q8 = nullptr;    // Natural / Nib32: [M][K]
  const int16_t *q16 = nullptr;  // Wide16: [M][K]
  const int32_t *gsum = nullptr; // [M][GN]: sum of qx over the group
  /// [ceil(M / 8)][GN][8]: the input-only part of the group correction,
  /// 8 * sum qx for symmetric 4-bit weights (whose nibbles are q + 8), else
  /// 0; rows of a tile are contiguous (one AVX2 lane each).
  const int32_t *xcorr = nullptr;
  /// [M][GN]: sum qx - G zp (the asymmetric weights' offset factor).
  const float *centered = nullptr;
  const float *scales = nullptr; // per row (slot m, or 0 per tensor)
  const int32_t *zps = nullptr;
  bool perToken = true;
  float sx(int64_t m) const { return scales[perToken ? m : 0]; }
  int32_t zp(int64_t m) const { return zps[perToken ? m : 0]; }
};

/// Lays out one input row for Nib32: per 32 values the even positions, then
/// the odd ones (the low and high nibbles of a 16-byte weight load).
void reorderRowNib32(const int8_t *src, int64_t K, int8_t *dst) {
  for (int64_t b = 0; b < K; b += 32)
    for (int j = 0; j < 16; ++j) {
      dst[b + j] = src[b + 2 * j];
      dst[b + 16 + j] = src[b + 2 * j + 1];
    }
}

/// Generic integer dot product of a group row with natural-order inputs.
template <typename Acc, unsigned Bits, bool Sym>
Acc dotGeneric(const uint8_t *row, const int8_t *x, int64_t G) {
  Acc acc = 0;
  if constexpr (Bits == 8) {
    for (int64_t k = 0; k < G; ++k)
      acc += Acc(Sym ? int32_t(int8_t(row[k])) : int32_t(row[k])) * Acc(x[k]);
  } else {
    constexpr int32_t off = Sym ? 8 : 0;
    for (int64_t j = 0; j < G / 2; ++j) {
      const int32_t lo = int32_t(row[j] & 0xf) - off;
      const int32_t hi = int32_t(row[j] >> 4) - off;
      acc += Acc(lo) * Acc(x[2 * j]) + Acc(hi) * Acc(x[2 * j + 1]);
    }
  }
  return acc;
}

/// The generic 8da path for row blocks [rbBegin, rbEnd) and all rows.
template <typename Acc, unsigned Bits, bool Sym>
void qactGeneric(const QView &w, const QActRows &xr, int64_t M,
                 const float *bias, float *y, int64_t rbBegin, int64_t rbEnd) {
  const int64_t G = w.l.groupSize, GN = w.l.groups, K = w.l.k, N = w.l.n;
  for (int64_t rb = rbBegin; rb < rbEnd; ++rb) {
    const int valid = int(std::min<int64_t>(8, N - rb * kNR));
    for (int64_t m = 0; m < M; ++m) {
      const float sx = xr.sx(m);
      const int64_t zp = xr.zp(m);
      float acc[8] = {};
      for (int64_t g = 0; g < GN; ++g) {
        const int8_t *xg = xr.q8 + m * K + g * G;
        const int64_t sq = xr.gsum[m * GN + g];
        const float *sc = w.scales(rb, g);
        const int32_t *sw = w.sums(rb, g);
        const float *of = Sym ? nullptr : w.offsets(rb, g);
        const float offTerm = Sym ? 0.0f : sx * float(sq - int64_t(G) * zp);
        for (int r = 0; r < 8; ++r) {
          const int64_t d =
              int64_t(dotGeneric<Acc, Bits, Sym>(w.q(rb, g, r), xg, G));
          const float c = float(d - zp * int64_t(sw[r]));
          acc[r] += (sx * sc[r]) * c;
          if (!Sym)
            acc[r] += of[r] * offTerm;
        }
      }
      storeBlockScalar(acc, bias ? bias + rb * kNR : nullptr,
                       y + m * N + rb * kNR, valid);
    }
  }
}

void qactGenericDispatch(const QView &w, const QActRows &xr, int64_t M,
                         const float *bias, float *y, int64_t b, int64_t e) {
  const bool big = w.l.groupSize > kMaxIntGroup;
  const bool sym = w.l.symmetric;
  if (w.l.bits == 4) {
    if (big)
      return sym ? qactGeneric<int64_t, 4, true>(w, xr, M, bias, y, b, e)
                 : qactGeneric<int64_t, 4, false>(w, xr, M, bias, y, b, e);
    return sym ? qactGeneric<int32_t, 4, true>(w, xr, M, bias, y, b, e)
               : qactGeneric<int32_t, 4, false>(w, xr, M, bias, y, b, e);
  }
  if (big)
    return sym ? qactGeneric<int64_t, 8, true>(w, xr, M, bias, y, b, e)
               : qactGeneric<int64_t, 8, false>(w, xr, M, bias, y, b, e);
  return sym ? qactGeneric<int32_t, 8, true>(w, xr, M, bias, y, b, e)
             : qactGeneric<int32_t, 8, false>(w, xr, M, bias, y, b, e);
}

#if ETLLM_XNN_X86
/// The nibbles u of 32 4-bit weights of a group row (16 bytes at p): the low
/// lane holds the low nibbles (even positions), the high lane the high ones.
ETLLM_XNN_AVX2 inline __m256i unpackNib32(const uint8_t *p) {
  const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i *>(p));
  return _mm256_and_si256(_mm256_inserti128_si256(_mm256_castsi128_si256(v),
                                                  _mm_srli_epi16(v, 4), 1),
                          _mm256_set1_epi8(0x0f));
}

/// One 32-value chunk of a Nib32 dot product: 16 int16 pair sums.
ETLLM_XNN_AVX2 inline __m256i chunkNib32(const uint8_t *wq, const int8_t *x,
                                         int64_t c) {
  return _mm256_maddubs_epi16(
      unpackNib32(wq + c / 2),
      _mm256_loadu_si256(reinterpret_cast<const __m256i *>(x + c)));
}

/// One 16-value chunk of a Wide16 dot product: 8 int32 pair sums.
template <bool Sym>
ETLLM_XNN_AVX2 inline __m256i chunkWide16(const uint8_t *wq, const int16_t *x,
                                          int64_t c) {
  const __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i *>(wq + c));
  const __m256i w = Sym ? _mm256_cvtepi8_epi16(b) : _mm256_cvtepu8_epi16(b);
  return _mm256_madd_epi16(
      w, _mm256_loadu_si256(reinterpret_cast<const __m256i *>(x + c)));
}

/// sum_k w_k x_k of one group row and one input row as 8 int32 partial
/// sums. Nib32: w = u (unsigned nibbles) against int8 inputs with
/// _mm256_maddubs_epi16 (pairs within 2 * 15 * 128 = 3840, so 8 chunks add
/// in int16 before widening). Wide16: 8-bit weights widened to int16
/// against int16 inputs with _mm256_madd_epi16. CH is G / 32 (Nib32) or
/// G / 16 (Wide16) when known at compile time, else 0.
template <ActMode Mode, bool Sym, int CH>
ETLLM_XNN_AVX2 inline __m256i groupDot(const uint8_t *wq, const void *x,
                                       int64_t G) {
  const __m256i ones = _mm256_set1_epi16(1);
  if constexpr (Mode == ActMode::Nib32) {
    const int8_t *xv = static_cast<const int8_t *>(x);
    if constexpr (CH > 0 && CH <= 8) {
      __m256i p = chunkNib32(wq, xv, 0);
#pragma GCC unroll 8
      for (int c = 1; c < CH; ++c)
        p = _mm256_add_epi16(p, chunkNib32(wq, xv, c * 32));
      return _mm256_madd_epi16(p, ones);
    } else {
      __m256i d = _mm256_setzero_si256();
      for (int64_t c0 = 0; c0 < G; c0 += 256) {
        __m256i p = _mm256_setzero_si256();
        const int64_t cEnd = std::min<int64_t>(G, c0 + 256);
        for (int64_t c = c0; c < cEnd; c += 32)
          p = _mm256_add_epi16(p, chunkNib32(wq, xv, c));
        d = _mm256_add_epi32(d, _mm256_madd_epi16(p, ones));
      }
      return d;
    }
  } else {
    const int16_t *xv = static_cast<const int16_t *>(x);
    if constexpr (CH > 0) {
      __m256i d = chunkWide16<Sym>(wq, xv, 0);
#pragma GCC unroll 8
      for (int c = 1; c < CH; ++c)
        d = _mm256_add_epi32(d, chunkWide16<Sym>(wq, xv, c * 16));
      return d;
    } else {
      __m256i d = _mm256_setzero_si256();
      for (int64_t c = 0; c < G; c += 16)
        d = _mm256_add_epi32(d, chunkWide16<Sym>(wq, xv, c));
      return d;
    }
  }
}

/// The input row m's values at group g (in its mode's layout).
inline const void *actGroup(const QActRows &xr, int64_t m, int64_t g, int64_t K,
                            int64_t G) {
  if (xr.mode == ActMode::Wide16)
    return xr.q16 + m * K + g * G;
  return xr.q8 + m * K + g * G;
}

/// The asymmetric weights' offset term for input row m and the 8 rows of
/// block rb: sum_g o_g (sum qx - G zp).
ETLLM_XNN_AVX2 inline __m256 offsetTerm(const QView &w, const QActRows &xr,
                                        int64_t rb, int64_t m) {
  const int64_t GN = w.l.groups;
  const float *cs = xr.centered + m * GN;
  __m256 f = _mm256_setzero_ps();
  for (int64_t g = 0; g < GN; ++g)
    f = _mm256_fmadd_ps(_mm256_loadu_ps(w.offsets(rb, g)),
                        _mm256_broadcast_ss(cs + g), f);
  return f;
}

/// One input row m against the 8 rows of block rb (decode, and the rows
/// left over by the 8-row tiles). Per group the 8 rows' dot products are
/// reduced together (hsum8i): s = D - zp sum q - xcorr exactly in int32,
/// then y += sw * s in f32; finally y = sx y (+ sx F) + bias.
template <ActMode Mode, bool Sym, int CH>
ETLLM_XNN_AVX2 void qactRowAvx2(const QView &w, const QActRows &xr, int64_t rb,
                                int64_t m, const float *bias, float *y) {
  const int64_t G = w.l.groupSize, GN = w.l.groups, K = w.l.k, N = w.l.n;
  const int64_t gb = int64_t(w.l.groupBytes);
  const __m256i vzp = _mm256_set1_epi32(xr.zp(m));
  const int32_t *xc = xr.xcorr + (m / kActTile) * GN * kActTile + m % kActTile;
  __m256 yv = _mm256_setzero_ps();
  for (int64_t g = 0; g < GN; ++g) {
    const uint8_t *q0 = w.q(rb, g);
    const void *xg = actGroup(xr, m, g, K, G);
    __m256i d[8];
#pragma GCC unroll 8
    for (int r = 0; r < 8; ++r)
      d[r] = groupDot<Mode, Sym, CH>(q0 + r * gb, xg, G);
    __m256i s = avx2::hsum8i(d[0], d[1], d[2], d[3], d[4], d[5], d[6], d[7]);
    const __m256i sw =
        _mm256_loadu_si256(reinterpret_cast<const __m256i *>(w.sums(rb, g)));
    s = _mm256_sub_epi32(s, _mm256_mullo_epi32(vzp, sw));
    s = _mm256_sub_epi32(s, _mm256_set1_epi32(xc[g * kActTile]));
    yv = _mm256_fmadd_ps(_mm256_loadu_ps(w.scales(rb, g)),
                         _mm256_cvtepi32_ps(s), yv);
  }
  if (!Sym)
    yv = _mm256_add_ps(yv, offsetTerm(w, xr, rb, m));
  const int valid = int(std::min<int64_t>(8, N - rb * kNR));
  const __m256i mask = avx2::laneMask(valid);
  const __m256 b8 =
      bias ? _mm256_maskload_ps(bias + rb * kNR, mask) : _mm256_setzero_ps();
  _mm256_maskstore_ps(y + m * N + rb * kNR, mask,
                      _mm256_fmadd_ps(_mm256_set1_ps(xr.sx(m)), yv, b8));
}

/// 8 input rows m0.. against the 8 rows of block rb (prefill). For each
/// weight row and group, the 8 input rows' dot products share one unpacked
/// weight chunk and are reduced together (hsum8i, a lane per input row):
/// s = D - zp sum q - xcorr exactly in int32, then acc += sw * s in f32. The
/// 8 x 8 results are transposed to rows of y.
template <ActMode Mode, bool Sym, int CH>
ETLLM_XNN_AVX2 void qactTileAvx2(const QView &w, const QActRows &xr, int64_t rb,
                                 int64_t m0, const float *bias, float *y) {
  const int64_t G = w.l.groupSize, GN = w.l.groups, K = w.l.k, N = w.l.n;
  const int32_t *xc = xr.xcorr + (m0 / kActTile) * GN * kActTile;
  const __m256i vzp = _mm256_setr_epi32(
      xr.zp(m0), xr.zp(m0 + 1), xr.zp(m0 + 2), xr.zp(m0 + 3), xr.zp(m0 + 4),
      xr.zp(m0 + 5), xr.zp(m0 + 6), xr.zp(m0 + 7));
  const size_t es = Mode == ActMode::Wide16 ? 2 : 1;
  const uint8_t *x0 = static_cast<const uint8_t *>(actGroup(xr, m0, 0, K, G));
  const size_t rowStride = size_t(K) * es, groupStride = size_t(G) * es;
  __m256 acc[8]; // acc[r]: lane i is input row m0 + i
  for (int r = 0; r < 8; ++r) {
    __m256 a = _mm256_setzero_ps();
    const float *sc = w.scales(rb, 0) + r;
    const int32_t *sq = w.sums(rb, 0) + r;
    for (int64_t g = 0; g < GN; ++g) {
      const uint8_t *wq = w.q(rb, g, r);
      const uint8_t *xg = x0 + size_t(g) * groupStride;
      __m256i d[8];
#pragma GCC unroll 8
      for (int i = 0; i < 8; ++i)
        d[i] = groupDot<Mode, Sym, CH>(wq, xg + i * rowStride, G);
      __m256i s = avx2::hsum8i(d[0], d[1], d[2], d[3], d[4], d[5], d[6], d[7]);
      s = _mm256_sub_epi32(
          s, _mm256_mullo_epi32(vzp, _mm256_set1_epi32(sq[g * kNR])));
      s = _mm256_sub_epi32(
          s, _mm256_loadu_si256(
                 reinterpret_cast<const __m256i *>(xc + g * kActTile)));
      a = _mm256_fmadd_ps(_mm256_broadcast_ss(sc + g * kNR),
                          _mm256_cvtepi32_ps(s), a);
    }
    acc[r] = a;
  }
  avx2::transpose8(acc); // acc[i]: input row m0 + i, lane r: weight row r
  const int valid = int(std::min<int64_t>(8, N - rb * kNR));
  const __m256i mask = avx2::laneMask(valid);
  const __m256 b8 =
      bias ? _mm256_maskload_ps(bias + rb * kNR, mask) : _mm256_setzero_ps();
  for (int i = 0; i < 8; ++i) {
    const int64_t m = m0 + i;
    __m256 v = acc[i];
    if (!Sym)
      v = _mm256_add_ps(v, offsetTerm(w, xr, rb, m));
    _mm256_maskstore_ps(y + m * N + rb * kNR, mask,
                        _mm256_fmadd_ps(_mm256_set1_ps(xr.sx(m)), v, b8));
  }
}

template <ActMode Mode, bool Sym, int CH>
ETLLM_XNN_AVX2 void qactAvx2(const QView &w, const QActRows &xr, int64_t M,
                             const float *bias, float *y, int64_t rbBegin,
                             int64_t rbEnd) {
  for (int64_t rb = rbBegin; rb < rbEnd; ++rb) {
    int64_t m = 0;
    for (; m + kActTile <= M; m += kActTile)
      qactTileAvx2<Mode, Sym, CH>(w, xr, rb, m, bias, y);
    for (; m < M; ++m)
      qactRowAvx2<Mode, Sym, CH>(w, xr, rb, m, bias, y);
  }
}

template <ActMode Mode, bool Sym>
void qactAvx2Chunks(const QView &w, const QActRows &xr, int64_t M,
                    const float *bias, float *y, int64_t b, int64_t e) {
  const int64_t chunks = w.l.groupSize / (Mode == ActMode::Nib32 ? 32 : 16);
  switch (chunks) {
  case 1:
    return qactAvx2<Mode, Sym, 1>(w, xr, M, bias, y, b, e);
  case 2:
    return qactAvx2<Mode, Sym, 2>(w, xr, M, bias, y, b, e);
  case 4:
    return qactAvx2<Mode, Sym, 4>(w, xr, M, bias, y, b, e);
  case 8:
    return qactAvx2<Mode, Sym, 8>(w, xr, M, bias, y, b, e);
  default:
    return qactAvx2<Mode, Sym, 0>(w, xr, M, bias, y, b, e);
  }
}

void qactAvx2Dispatch(const QView &w, const QActRows &xr, int64_t M,
                      const float *bias, float *y, int64_t b, int64_t e) {
  const bool sym = w.l.symmetric;
  switch (xr.mode) {
  case ActMode::Nib32:
    return sym ? qactAvx2Chunks<ActMode::Nib32, true>(w, xr, M, bias, y, b, e)
               : qactAvx2Chunks<ActMode::Nib32, false>(w, xr, M, bias, y, b, e);
  case ActMode::Wide16:
    return sym ? qactAvx2Chunks<ActMode::Wide16, true>(w, xr, M, bias, y, b, e)
               : qactAvx2Chunks<ActMode::Wide16, false>(w, xr, M, bias, y, b,
                                                        e);
  case ActMode::Natural:
    break;
  }
}
#endif

/// The layout the AVX2 integer path wants for the input rows, or Natural
/// (the generic path).
ActMode actMode(Isa isa, const PackedQWeightLayout &l) {
#if ETLLM_XNN_X86
  if (isa == Isa::Avx2 && l.groupSize <= kMaxIntGroup) {
    if (l.bits == 4 && l.groupSize % 32 == 0)
      return ActMode::Nib32;
    if (l.bits == 8 && l.groupSize % 16 == 0)
      return ActMode::Wide16;
  }
#endif
  return ActMode::Natural;
}

/// Scratch of the quantized-activation path: group sums, corrections,
/// centered sums, then the reordered rows (64-byte-aligned sections).
struct QActScratch {
  size_t sums = 0, corr = 0, centered = 0, rows = 0;
  size_t total() const { return sums + corr + centered + rows; }
};

QActScratch qactScratch(ActMode mode, int64_t M, const PackedQWeightLayout &l) {
  const int64_t K = l.k, GN = l.groups;
  const int64_t tiles = (M + kActTile - 1) / kActTile;
  QActScratch s;
  s.sums = alignUp(size_t(M * GN) * 4, 64);
  s.corr = alignUp(size_t(tiles * GN * kActTile) * 4, 64);
  s.centered = alignUp(size_t(M * GN) * 4, 64);
  s.rows = mode == ActMode::Wide16    ? size_t(M * K) * 2
           : mode == ActMode::Natural ? 0
                                      : size_t(M * K);
  return s;
}

Status qlinearQAct(const KernelArgs &a, Isa isa, const QView &w,
                   const Tensor &x, int64_t M, const float *bias, float *y) {
  const int64_t K = w.l.k, G = w.l.groupSize, GN = w.l.groups;
  const QActLayout xl = QActLayout::compute(M, K);
  const uint8_t *xb = x.ptr<uint8_t>();
  QActRows xr;
  xr.perToken = x.quant.perToken;
  xr.scales = reinterpret_cast<const float *>(xb + xl.scalesOff);
  xr.zps = reinterpret_cast<const int32_t *>(xb + xl.zpOff);
  const int8_t *qx = reinterpret_cast<const int8_t *>(xb);

  const ActMode mode = actMode(isa, w.l);
  xr.mode = mode;
  if (!a.ctx)
    return kernelError("qlinear", "needs an execution context (scratch)");
  const QActScratch sl = qactScratch(mode, M, w.l);
  const size_t sumBytes = sl.sums, corrBytes = sl.corr, centBytes = sl.centered;
  uint8_t *scratch = static_cast<uint8_t *>(a.ctx->scratch(sl.total()));
  int32_t *gsum = reinterpret_cast<int32_t *>(scratch);
  int32_t *xcorr = reinterpret_cast<int32_t *>(scratch + sumBytes);
  float *centered = reinterpret_cast<float *>(scratch + sumBytes + corrBytes);
  uint8_t *rows = scratch + sumBytes + corrBytes + centBytes;
  std::memset(xcorr, 0, corrBytes); // the padding rows of the last tile
  xr.gsum = gsum;
  xr.xcorr = xcorr;
  xr.centered = centered;
  xr.q8 = mode == ActMode::Nib32 ? reinterpret_cast<const int8_t *>(rows) : qx;
  xr.q16 = reinterpret_cast<const int16_t *>(rows);
  const bool nibbleSym = mode == ActMode::Nib32 && w.l.symmetric;
  parallelFor(parallelContext(a.ctx, uint64_t(M) * uint64_t(K)), size_t(M),
              [&](size_t mi) {
                const int64_t m = int64_t(mi);
                const int8_t *src = qx + m * K;
                const int64_t zp = xr.zp(m);
                for (int64_t g = 0; g < GN; ++g) {
                  int32_t s = 0;
                  for (int64_t k = 0; k < G; ++k)
                    s += src[g * G + k];
                  gsum[m * GN + g] = s;
                  xcorr[((m / kActTile) * GN + g) * kActTile + m % kActTile] =
                      nibbleSym ? 8 * s : 0;
                  centered[m * GN + g] = float(int64_t(s) - G * zp);
                }
                if (mode == ActMode::Nib32)
                  reorderRowNib32(src, K,
                                  reinterpret_cast<int8_t *>(rows) + m * K);
                else if (mode == ActMode::Wide16) {
                  int16_t *dst = reinterpret_cast<int16_t *>(rows) + m * K;
                  for (int64_t k = 0; k < K; ++k)
                    dst[k] = src[k];
                }
              });

  const int64_t NB = w.l.rowBlocks;
  const ExecContext *pctx =
      parallelContext(a.ctx, uint64_t(M) * uint64_t(w.l.n) * uint64_t(K));
  parallelForTiles(
      pctx, size_t(NB), defaultTile(pctx, size_t(NB)), [&](size_t b, size_t e) {
#if ETLLM_XNN_X86
        if (mode != ActMode::Natural)
          return qactAvx2Dispatch(w, xr, M, bias, y, int64_t(b), int64_t(e));
#endif
        qactGenericDispatch(w, xr, M, bias, y, int64_t(b), int64_t(e));
      });
  return Status();
}

} // namespace

size_t qlinearPackedScratch(Isa isa, const ExecContext *ctx, int64_t M,
                            const PackedQWeightLayout &l, bool quantAct) {
  if (M <= 0)
    return 0;
  if (quantAct)
    return qactScratch(actMode(isa, l), M, l).total();
  return floatScratchBytes(isa, ctx, M, l);
}

Status qlinearPacked(const KernelArgs &a, Isa isa) {
  const char *op = "qlinear";
  ETLLM_RETURN_IF_ERROR(checkLinearArgs(op, a));
  const Tensor &x = *a.inputs[0], &wt = *a.inputs[1];
  const Tensor *bias = a.inputs.size > 2 ? a.inputs[2] : nullptr;
  Tensor &out = *a.outputs[0];
  ETLLM_RETURN_IF_ERROR(checkStorage(op, "input", x));
  if (x.dtype != DType::F32 && x.dtype != DType::QAct)
    return kernelError(op, std::string("packed qlinear needs an f32 or qact "
                                       "input, got ") +
                               dtypeName(x.dtype));
  if (x.dtype == DType::QAct && x.quant.bits != 0 && x.quant.bits != 8)
    return kernelError(op, "quantized activations are 8-bit, not " +
                               std::to_string(x.quant.bits) + "-bit");
  if (wt.dtype != DType::QWeight || wt.rank != 2)
    return kernelError(op, "weight must be a qweight [N, K], got " +
                               wt.shapeString());
  const int64_t N = wt.sizes[0], K = wt.sizes[1];
  Result<PackedQWeightLayout> l = PackedQWeightLayout::compute(N, K, wt.quant);
  if (!l.ok())
    return kernelError(op, l.message());
  if (l->totalBytes > wt.capacity || !wt.data ||
      reinterpret_cast<uintptr_t>(wt.data) % 4 != 0)
    return kernelError(op, "packed weight " + wt.shapeString() + " needs " +
                               std::to_string(l->totalBytes) +
                               " 4-byte-aligned bytes");
  int64_t M;
  ETLLM_RETURN_IF_ERROR(checkLinearOperands(op, x, N, K, bias, out, M));
  ETLLM_RETURN_IF_ERROR(resizeLike(op, out, x, N));
  if (M == 0)
    return Status();
  QView w;
  w.l = *l;
  w.base = wt.ptr<uint8_t>();
  const float *pb = bias ? bias->ptr<float>() : nullptr;
  float *py = out.ptr<float>();
  if (x.dtype == DType::QAct)
    return qlinearQAct(a, isa, w, x, M, pb, py);
  return qlinearFloat(a, isa, w, x.ptr<float>(), M, pb, py);
}

} // namespace etllm::rt::xnnpack
