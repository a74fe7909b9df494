//===- qdot_amx.cpp - Prefill integer dot products on AMX tiles -----------===//
//
// The qdot.h kernels for many activation rows on Intel AMX (AMX-TILE and
// AMX-INT8: Sapphire Rapids and later Xeons): TDPBSSD multiplies a tile of
// 16 activation rows x 32 int8 values (one block) by a tile of 32 values x
// 16 weight rows into 16 x 16 int32 sums, 8,192 multiply-adds in one
// instruction (vpdpbusd on 512 bits: 64).
//
// The weight tiles are already in the order the instruction wants: a chunk
// of a PackedQBlockLayout tile (16 rows x 4 consecutive values, one row per
// 32-bit lane) is one 64-byte row of TDPBSSD's second operand. 8-bit
// symmetric tiles are read in place; 4- and 5-bit ones are split into their
// low and high nibbles (values 4c.. and 16 + 4c..), with the fifth bit from
// the tile's plane (Q5_0, Q5_1, Q5_K), once per row group and chunk of
// blocks, into a buffer on the stack, and their bias taken off (8 for
// symmetric int4, 16 for Q5_0), so that both operands are signed and the
// sums need no correction:
//
//   S[m][n] = sum_k w[n][k] q[m][k]       (w = u - bias)
//
// and, per block, the integer the other x86 kernels form (qdot.h),
//
//   s = S - zp W,   W[n] = sum_k w[n][k] of the block  (zp = 0 per block)
//
// computed in f32 exactly (|S| and |zp W| stay below 2^24 within a block),
// then accumulated with the same f32 operations in the same order:
//
//   per block: acc += (dw dx[m][b]) s      (+ o (dx xsum))
//   per token: acc += dw s                 (+ o (xsum - 32 zp)),
//              y = sx acc + bias
//
// with dw, o the block's scale and offset: the group's (affine), the
// block's f16 d and m (Q5_0, Q5_1), or d sc_j and -dmin m_j of a Q4_K/Q5_K
// super-block, decoded by the AVX-512 VNNI kernels' own function
// (qdotSuperParamsK4). So a row gives the same bits here as through the
// AVX-512 VNNI kernels, alone or with others (decode and prefill agree).
//
// Q6_K (two scales per block, a K = 16 tile each) and the 8-bit asymmetric
// layout, and calls of fewer than kQAmxMinRows rows (decode: the weight
// stream, not the products, is the cost), take the AVX-512 VNNI kernels;
// the ggml blocks against per-token activations the generic kernel, as on
// every path.
//
//===----------------------------------------------------------------------===//
#include "qdot.h"

#include <algorithm>
#include <cstring>

#if ETLLM_CPU_X86
#include <immintrin.h>

#include "qdot_target.h"

ETLLM_CPU_AVX512_DIAGNOSTICS

ETLLM_CPU_TARGET_BEGIN(
    "avx512f,avx512bw,avx512dq,avx512vl,avx512vnni,avx2,fma,f16c")
namespace etllm::rt::cpu {
namespace {

// The tile instructions, written out: GCC 12's _tile_* macros are asm
// statements without a memory clobber, so the compiler could move the
// stores of a weight buffer past the tileloadd that reads it, or a load of
// the sums before the tilestored that writes them (tileConfig says which
// tile holds what).
#define ETLLM_AMX_LOAD(t, base, stride)                                        \
  __asm__ volatile("tileloadd (%0,%1,1), %%tmm" #t                             \
                   :                                                           \
                   : "r"(base), "r"(int64_t(stride))                           \
                   : "memory")
#define ETLLM_AMX_STORE(t, base, stride)                                       \
  __asm__ volatile("tilestored %%tmm" #t ", (%0,%1,1)"                         \
                   :                                                           \
                   : "r"(base), "r"(int64_t(stride))                           \
                   : "memory")
#define ETLLM_AMX_ZERO(t) __asm__ volatile("tilezero %%tmm" #t ::)
// AT&T order: the second source, the first, the destination.
#define ETLLM_AMX_DPBSSD(c, a, b)                                              \
  __asm__ volatile("tdpbssd %%tmm" #b ", %%tmm" #a ", %%tmm" #c ::)

/// LDTILECFG's 64-byte operand (palette 1).
struct alignas(64) TileConfig {
  uint8_t palette = 1;
  uint8_t startRow = 0;
  uint8_t reserved[14] = {};
  uint16_t colsb[16] = {};
  uint8_t rows[16] = {};
};
static_assert(sizeof(TileConfig) == 64, "LDTILECFG reads 64 bytes");

/// The tiles of `rows` activation rows, two sets (even and odd blocks):
/// sums (tiles 0 and 1, rows x 16 int32), activations (2 and 3, rows x 32
/// int8), weights (4 and 5, 8 x 64 int8).
TileConfig tileConfig(int rows) {
  TileConfig c;
  for (int set = 0; set < 2; ++set) {
    c.rows[0 + set] = uint8_t(rows);
    c.colsb[0 + set] = 64;
    c.rows[2 + set] = uint8_t(rows);
    c.colsb[2 + set] = uint16_t(kQBlock);
    c.rows[4 + set] = uint8_t(kQBlock / 4);
    c.colsb[4 + set] = 64;
  }
  return c;
}

void loadConfig(const TileConfig &c) {
  __asm__ volatile("ldtilecfg %0" ::"m"(c) : "memory");
}
void releaseTiles() { __asm__ volatile("tilerelease" ::: "memory"); }

/// Blocks of a row group unpacked at a time (the stack buffer: 64 x 512
/// bytes = 32 KiB, within L1 on the CPUs that have AMX (48 KiB)).
constexpr int64_t kChunkBlocks = 64;
constexpr size_t kWeightTileBytes = size_t(kQBlock) * size_t(kQRows);

/// S: the weight's scheme (Affine, or a ggml block kept as a GGUF stores
/// it: Q5_0, Q5_1, Q4_K, Q5_K; per-block activations only); Bits: its
/// values' (4, 5 or 8); Sym: affine weights without offsets.
template <QScheme S, unsigned Bits, bool Sym, bool PerToken, bool F16>
struct Kernel {
  static_assert(Bits != 8 || Sym, "8-bit symmetric only");
  static_assert(S == QScheme::Affine || !PerToken,
                "ggml blocks take per-block activations");
  static constexpr size_t kParamBytes = F16 ? 2 : 4;
  /// What the stored values lose to become signed: symmetric int4 (8) and
  /// Q5_0 (16).
  static constexpr int kBias = S == QScheme::Q5_0                         ? 16
                               : S == QScheme::Affine && Sym && Bits == 4 ? 8
                                                                          : 0;
  /// Offsets: asymmetric affine, Q5_1, Q4_K, Q5_K.
  static constexpr bool kOffset =
      S == QScheme::Affine ? !Sym : S != QScheme::Q5_0;
  /// Scales and offsets per super-block of 8 blocks (Q4_K, Q5_K).
  static constexpr bool kSuper = S == QScheme::Q4_K || S == QScheme::Q5_K;
  /// Stored values the unpacking writes out (all but 8-bit ones).
  static constexpr bool kUnpack = Bits != 8;

  static __m512 params(const uint8_t *p) {
    if constexpr (F16)
      return _mm512_cvtph_ps(
          _mm256_loadu_si256(reinterpret_cast<const __m256i *>(p)));
    else
      return _mm512_loadu_ps(reinterpret_cast<const float *>(p));
  }
  static __mmask16 laneMask(int valid) { return __mmask16((1u << valid) - 1); }

  /// The scales and offsets of a chunk's blocks, per super-block formats:
  /// dw[b - c0][row], ow[b - c0][row].
  struct SuperParams {
    alignas(64) float dw[kSuper ? kChunkBlocks : 1][kQRows];
    alignas(64) float ow[kSuper ? kChunkBlocks : 1][kQRows];
  };

  /// Unpacks blocks [b0, b1) of row group rg into buf (4- and 5-bit: int8
  /// values less the bias, in TDPBSSD's order), per token stores each
  /// block's W (f32, exact) in sums[b - b0], and per super-block decodes
  /// the blocks' parameters into sp.
  static void unpack(const QDotWeight &w, int64_t rg, int64_t b0, int64_t b1,
                     int8_t *buf, __m512 *sums, SuperParams &sp) {
    const __m512i ones = _mm512_set1_epi8(1);
    const __m512i low = _mm512_set1_epi8(0x0f);
    const __m512i bias = _mm512_set1_epi8(char(kBias));
    [[maybe_unused]] const __m512i bit4 = _mm512_set1_epi8(0x10);
    for (int64_t b = b0; b < b1; ++b) {
      const uint8_t *t = w.tile(rg, b);
      if constexpr (kSuper)
        if (b % 8 == 0)
          qdotSuperParamsK4(w.scales + (size_t(rg) * size_t(w.l.scaleGroups) +
                                        size_t(b / 8)) *
                                           w.l.paramBytes,
                            sp.dw + (b - b0), sp.ow + (b - b0));
      __m512i W = _mm512_setzero_si512();
      if constexpr (kUnpack) {
        int8_t *d = buf + size_t(b - b0) * kWeightTileBytes;
        // The 5-bit formats' plane (packing.h): bit c of each byte is
        // value 4c + j's fifth bit, bit 4 + c value 16 + 4c + j's.
        [[maybe_unused]] __m512i plane;
        if constexpr (Bits == 5)
          plane = _mm512_loadu_si512(t + kWeightTileBytes / 2);
#pragma GCC unroll 4
        for (int c = 0; c < 4; ++c) {
          const __m512i v = _mm512_loadu_si512(t + c * 64);
          __m512i lo = _mm512_and_si512(v, low);
          __m512i hi = _mm512_and_si512(_mm512_srli_epi16(v, 4), low);
          if constexpr (Bits == 5) {
            lo = _mm512_or_si512(
                lo, _mm512_and_si512(_mm512_slli_epi16(plane, 4 - c), bit4));
            hi = _mm512_or_si512(
                hi, _mm512_and_si512(_mm512_srli_epi16(plane, c), bit4));
          }
          lo = _mm512_sub_epi8(lo, bias);
          hi = _mm512_sub_epi8(hi, bias);
          _mm512_store_si512(d + c * 64, lo);
          _mm512_store_si512(d + (4 + c) * 64, hi);
          if constexpr (PerToken)
            W = _mm512_dpbusd_epi32(_mm512_dpbusd_epi32(W, ones, lo), ones, hi);
        }
      } else if constexpr (PerToken) {
#pragma GCC unroll 8
        for (int c = 0; c < 8; ++c)
          W = _mm512_dpbusd_epi32(W, ones, _mm512_loadu_si512(t + c * 64));
      }
      if constexpr (PerToken)
        sums[b - b0] = _mm512_cvtepi32_ps(W);
    }
  }

  /// What one tile of 16 rows reads per block: the rows' parameters,
  /// gathered once per tile (rows past M repeat row M - 1; their results are
  /// not stored).
  struct Rows {
    const float *dx[16]; // per block: the rows' block scales
    float zp[16];        // per token: the zero points
    /// Asymmetric weights: what the offsets multiply (QDotAct::xo), block
    /// b of row r at xo[r][b - c0]: the call's table, or (without one) the
    /// tile's blocks [c0, c0 + kChunkBlocks) worked out here.
    const float *xo[16];
    int64_t c0 = 0;
    alignas(64) float own[kOffset ? 16 : 1][kOffset ? kChunkBlocks : 1];
  };

  /// acc[r] += block b's sums (at `sums`) of the 16 rows, with the weights'
  /// scales dw (and offsets ow) and, per token, the block's weight sums W.
  [[gnu::always_inline]] static inline void
  accumulate(__m512 (&acc)[16], const int32_t *sums, const Rows &rows,
             __m512 dw, __m512 ow, __m512 W, int64_t b) {
#pragma GCC unroll 16
    for (int r = 0; r < 16; ++r) {
      __m512 s = _mm512_cvtepi32_ps(_mm512_load_si512(sums + 16 * r));
      if constexpr (PerToken) {
        s = _mm512_fnmadd_ps(_mm512_set1_ps(rows.zp[r]), W, s);
        acc[r] = _mm512_fmadd_ps(dw, s, acc[r]);
      } else {
        acc[r] = _mm512_fmadd_ps(
            _mm512_mul_ps(dw, _mm512_set1_ps(rows.dx[r][b])), s, acc[r]);
      }
      if constexpr (kOffset)
        acc[r] = _mm512_fmadd_ps(ow, _mm512_set1_ps(rows.xo[r][b - rows.c0]),
                                 acc[r]);
    }
  }

  static void run(const QDotWeight &w, const QDotAct &a, int64_t M, int64_t rg0,
                  int64_t rg1, const float *bias, float *y, int64_t ldy) {
    if (M < kQAmxMinRows)
      return qdotAvx512Vnni(w.l, PerToken)(w, a, M, rg0, rg1, bias, y, ldy);
    const int64_t KB = w.l.kBlocks, N = w.l.n, SG = w.l.scaleGroups;
    const TileConfig full = tileConfig(16), tail = tileConfig(int(M % 16));
    alignas(64) int8_t buf[kUnpack ? kChunkBlocks * kWeightTileBytes : 64];
    alignas(64) __m512 wsum[PerToken ? kChunkBlocks : 1];
    SuperParams sp;
    // (Zeroed: the rows a tail tile does not store are read, not used.)
    alignas(64) int32_t sumBuf[2][16 * 16] = {};
    loadConfig(full);
    bool tailLoaded = false;
    for (int64_t rg = rg0; rg < rg1; ++rg) {
      const int64_t n0 = rg * kQRows;
      if (n0 >= N)
        break;
      const int valid = int(std::min<int64_t>(kQRows, N - n0));
      const __mmask16 vm = laneMask(valid);
      const size_t paramBase = size_t(rg) * size_t(SG) * kQRows * kParamBytes;
      for (int64_t c0 = 0; c0 < KB; c0 += kChunkBlocks) {
        const int64_t c1 = std::min(KB, c0 + kChunkBlocks);
        if constexpr (kUnpack || PerToken || kSuper)
          unpack(w, rg, c0, c1, buf, wsum, sp);
        for (int64_t m0 = 0; m0 < M; m0 += 16) {
          const int rows = int(std::min<int64_t>(16, M - m0));
          if ((rows < 16) != tailLoaded) {
            loadConfig(rows < 16 ? tail : full);
            tailLoaded = rows < 16;
          }
          Rows rp;
          rp.c0 = c0;
          for (int r = 0; r < 16; ++r) {
            const int64_t m = std::min<int64_t>(m0 + r, M - 1);
            if constexpr (PerToken)
              rp.zp[r] = float(a.zp[m]);
            else
              rp.dx[r] = a.dx + m * KB;
            if constexpr (kOffset) {
              if (a.xo) {
                rp.xo[r] = a.xo + m * KB + c0;
                continue;
              }
              rp.xo[r] = rp.own[r];
              for (int64_t b = c0; b < c1; b += 16) {
                const __mmask16 bm =
                    laneMask(int(std::min<int64_t>(16, c1 - b)));
                const __m512i xs =
                    _mm512_maskz_loadu_epi32(bm, a.xsum + m * KB + b);
                __m512 xo;
                if constexpr (PerToken)
                  xo = _mm512_cvtepi32_ps(_mm512_sub_epi32(
                      xs, _mm512_set1_epi32(int32_t(kQBlock) * a.zp[m])));
                else
                  xo = _mm512_mul_ps(
                      _mm512_maskz_loadu_ps(bm, a.dx + m * KB + b),
                      _mm512_cvtepi32_ps(xs));
                _mm512_mask_storeu_ps(&rp.own[r][b - c0], bm, xo);
              }
            }
          }
          __m512 acc[16];
#pragma GCC unroll 16
          for (int r = 0; r < 16; ++r)
            acc[r] = c0 == 0 || r >= rows
                         ? _mm512_setzero_ps()
                         : _mm512_maskz_loadu_ps(vm, y + (m0 + r) * ldy + n0);
          const int8_t *xq = a.q + m0 * a.stride;
          const int8_t *wb = buf - c0 * int64_t(kWeightTileBytes);
          auto wt = [&](int64_t b) -> const void * {
            if constexpr (kUnpack)
              return wb + b * int64_t(kWeightTileBytes);
            else
              return w.tile(rg, b);
          };
          // Block b's scales and offsets for the 16 rows.
          auto scales = [&](int64_t b) {
            if constexpr (kSuper)
              return _mm512_load_ps(sp.dw[b - c0]);
            else
              return params(w.scales + paramBase +
                            size_t(w.l.scaleGroup(b)) * kQRows * kParamBytes);
          };
          auto offsets = [&](int64_t b) {
            if constexpr (!kOffset)
              return _mm512_setzero_ps();
            else if constexpr (kSuper)
              return _mm512_load_ps(sp.ow[b - c0]);
            else
              return params(w.offsets + paramBase +
                            size_t(w.l.scaleGroup(b)) * kQRows * kParamBytes);
          };
          auto W = [&](int64_t b) {
            if constexpr (PerToken)
              return wsum[b - c0];
            else
              return _mm512_setzero_ps();
          };
          // Block b's products go to tile set b % 2, which is stored and
          // then takes block b + 2; block b's sums are accumulated one
          // block later (a load of a tile just stored waits for the
          // stores): the tile unit multiplies blocks b + 1 and b + 2 while
          // the vector units take block b - 1's sums.
#define ETLLM_AMX_MULTIPLY(c, x, wt_, b)                                       \
  do {                                                                         \
    ETLLM_AMX_ZERO(c);                                                         \
    ETLLM_AMX_LOAD(x, xq + (b)*kQBlock, a.stride);                             \
    ETLLM_AMX_LOAD(wt_, wt(b), 64);                                            \
    ETLLM_AMX_DPBSSD(c, x, wt_);                                               \
  } while (0)
#define ETLLM_AMX_MULTIPLY0(b) ETLLM_AMX_MULTIPLY(0, 2, 4, b)
#define ETLLM_AMX_MULTIPLY1(b) ETLLM_AMX_MULTIPLY(1, 3, 5, b)
          ETLLM_AMX_MULTIPLY0(c0);
          if (c0 + 1 < c1)
            ETLLM_AMX_MULTIPLY1(c0 + 1);
          for (int64_t b = c0; b < c1; b += 2) {
            ETLLM_AMX_STORE(0, sumBuf[0], 64);
            if (b + 2 < c1)
              ETLLM_AMX_MULTIPLY0(b + 2);
            if (b > c0)
              accumulate(acc, sumBuf[1], rp, scales(b - 1), offsets(b - 1),
                         W(b - 1), b - 1);
            if (b + 1 >= c1)
              break;
            ETLLM_AMX_STORE(1, sumBuf[1], 64);
            if (b + 3 < c1)
              ETLLM_AMX_MULTIPLY1(b + 3);
            accumulate(acc, sumBuf[0], rp, scales(b), offsets(b), W(b), b);
          }
#undef ETLLM_AMX_MULTIPLY0
#undef ETLLM_AMX_MULTIPLY1
#undef ETLLM_AMX_MULTIPLY
          {
            const int64_t last = c1 - 1;
            accumulate(acc, sumBuf[last % 2], rp, scales(last), offsets(last),
                       W(last), last);
          }
#pragma GCC unroll 16
          for (int r = 0; r < 16; ++r)
            if (r < rows)
              _mm512_mask_storeu_ps(y + (m0 + r) * ldy + n0, vm, acc[r]);
        }
      }
      const __m512 bv =
          bias ? _mm512_maskz_loadu_ps(vm, bias + n0) : _mm512_setzero_ps();
      for (int64_t m = 0; m < M; ++m) {
        float *py = y + m * ldy + n0;
        __m512 r = _mm512_maskz_loadu_ps(vm, py);
        if constexpr (PerToken)
          r = _mm512_mul_ps(_mm512_set1_ps(a.sx[m]), r);
        _mm512_mask_storeu_ps(py, vm, _mm512_add_ps(r, bv));
      }
    }
    releaseTiles();
  }
};

template <unsigned Bits, bool Sym, bool PerToken>
QDotFn selectScales(const PackedQBlockLayout &l) {
  using A16 = Kernel<QScheme::Affine, Bits, Sym, PerToken, true>;
  using A32 = Kernel<QScheme::Affine, Bits, Sym, PerToken, false>;
  return l.scaleType == DType::F16 ? &A16::run : &A32::run;
}

template <bool PerToken> QDotFn selectKind(const PackedQBlockLayout &l) {
  if (l.bits == 4)
    return l.symmetric ? selectScales<4, true, PerToken>(l)
                       : selectScales<4, false, PerToken>(l);
  return selectScales<8, true, PerToken>(l);
}

/// The ggml blocks' kernels (per-block activations; f16 parameters).
QDotFn selectGgml(QScheme s) {
  switch (s) {
  case QScheme::Q5_0:
    return &Kernel<QScheme::Q5_0, 5, true, false, true>::run;
  case QScheme::Q5_1:
    return &Kernel<QScheme::Q5_1, 5, false, false, true>::run;
  case QScheme::Q4_K:
    return &Kernel<QScheme::Q4_K, 4, false, false, true>::run;
  case QScheme::Q5_K:
    return &Kernel<QScheme::Q5_K, 5, false, false, true>::run;
  default:
    return nullptr;
  }
}

} // namespace

bool qdotAmxReads(const PackedQBlockLayout &l) {
  if (l.scheme != QScheme::Affine)
    return selectGgml(l.scheme) != nullptr;
  return (l.bits == 4 || (l.bits == 8 && l.symmetric)) &&
         (l.scaleType == DType::F16 || l.scaleType == DType::F32);
}

bool qdotAmxOffsets(const PackedQBlockLayout &l) {
  return l.scheme == QScheme::Affine ? !l.symmetric : l.scheme != QScheme::Q5_0;
}

QDotFn qdotAmx(const PackedQBlockLayout &l, bool perToken) {
  // (The ggml blocks per token: the generic kernel, as on every path.)
  if (!qdotAmxReads(l) || (perToken && l.scheme != QScheme::Affine))
    return qdotAvx512Vnni(l, perToken);
  if (l.scheme != QScheme::Affine)
    return selectGgml(l.scheme);
  return perToken ? selectKind<true>(l) : selectKind<false>(l);
}

} // namespace etllm::rt::cpu
ETLLM_CPU_TARGET_END
#endif
