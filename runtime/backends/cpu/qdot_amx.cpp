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
// symmetric tiles are read in place; 4-bit ones are split into their low and
// high nibbles (values 4c.. and 16 + 4c..) once per row group and chunk of
// blocks, into a buffer on the stack, and their bias (8, symmetric) taken
// off, so that both operands are signed and the sums need no correction:
//
//   S[m][n] = sum_k w[n][k] q[m][k]       (w = u - 8 symmetric, u otherwise)
//
// and, per block, the integer the other x86 kernels form (qdot.h),
//
//   s = S - zp W,   W[n] = sum_k w[n][k] of the block  (zp = 0 per block)
//
// computed in f32 exactly (|S| and |zp W| stay below 2^24 within a block),
// then accumulated with the same f32 operations in the same order:
//
//   per block: acc += (dw[g] dx[m][b]) s   (+ o[g] (dx xsum))
//   per token: acc += dw[g] s              (+ o[g] (xsum - 32 zp)),
//              y = sx acc + bias
//
// so that a row gives the same bits here as through the AVX-512 VNNI
// kernels, alone or with others (decode and prefill agree).
//
// Layouts other than the affine 4-bit and symmetric 8-bit ones, and fewer
// than kQAmxMinRows rows (decode: the weight stream, not the products, is
// the cost), take the AVX-512 VNNI kernels.
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

template <unsigned Bits, bool Sym, bool PerToken, bool F16> struct Kernel {
  static_assert(Bits == 4 || (Bits == 8 && Sym), "8-bit symmetric only");
  static constexpr size_t kParamBytes = F16 ? 2 : 4;

  static __m512 params(const uint8_t *p) {
    if constexpr (F16)
      return _mm512_cvtph_ps(
          _mm256_loadu_si256(reinterpret_cast<const __m256i *>(p)));
    else
      return _mm512_loadu_ps(reinterpret_cast<const float *>(p));
  }
  static __mmask16 laneMask(int valid) { return __mmask16((1u << valid) - 1); }

  /// Unpacks blocks [b0, b1) of row group rg into buf (4-bit: int8 values
  /// less the bias, in TDPBSSD's order) and, per token, stores each block's
  /// W (f32, exact) in sums[b - b0].
  static void unpack(const QDotWeight &w, int64_t rg, int64_t b0, int64_t b1,
                     int8_t *buf, __m512 *sums) {
    const __m512i ones = _mm512_set1_epi8(1);
    const __m512i low = _mm512_set1_epi8(0x0f);
    const __m512i bias = _mm512_set1_epi8(Sym ? 8 : 0);
    for (int64_t b = b0; b < b1; ++b) {
      const uint8_t *t = w.tile(rg, b);
      __m512i W = _mm512_setzero_si512();
      if constexpr (Bits == 4) {
        int8_t *d = buf + size_t(b - b0) * kWeightTileBytes;
#pragma GCC unroll 4
        for (int c = 0; c < 4; ++c) {
          const __m512i v = _mm512_loadu_si512(t + c * 64);
          const __m512i lo = _mm512_sub_epi8(_mm512_and_si512(v, low), bias);
          const __m512i hi = _mm512_sub_epi8(
              _mm512_and_si512(_mm512_srli_epi16(v, 4), low), bias);
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
    alignas(64) float own[Sym ? 1 : 16][Sym ? 1 : kChunkBlocks];
  };

  /// acc[r] += block b's sums (at `sums`) of the 16 rows, with the weights'
  /// parameters at `param` (dw; o when asymmetric) and, per token, the
  /// block's weight sums W.
  [[gnu::always_inline]] static inline void
  accumulate(__m512 (&acc)[16], const int32_t *sums, const Rows &rows,
             const QDotWeight &w, size_t param, __m512 W, int64_t b) {
    const __m512 dw = params(w.scales + param);
    __m512 ow = _mm512_setzero_ps();
    if constexpr (!Sym)
      ow = params(w.offsets + param);
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
      if constexpr (!Sym)
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
    alignas(64) int8_t buf[Bits == 4 ? kChunkBlocks * kWeightTileBytes : 64];
    alignas(64) __m512 wsum[PerToken ? kChunkBlocks : 1];
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
        if constexpr (Bits == 4 || PerToken)
          unpack(w, rg, c0, c1, buf, wsum);
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
            if constexpr (!Sym) {
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
            if constexpr (Bits == 4)
              return wb + b * int64_t(kWeightTileBytes);
            else
              return w.tile(rg, b);
          };
          auto param = [&](int64_t b) {
            return paramBase + size_t(w.l.scaleGroup(b)) * kQRows * kParamBytes;
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
              accumulate(acc, sumBuf[1], rp, w, param(b - 1), W(b - 1), b - 1);
            if (b + 1 >= c1)
              break;
            ETLLM_AMX_STORE(1, sumBuf[1], 64);
            if (b + 3 < c1)
              ETLLM_AMX_MULTIPLY1(b + 3);
            accumulate(acc, sumBuf[0], rp, w, param(b), W(b), b);
          }
#undef ETLLM_AMX_MULTIPLY0
#undef ETLLM_AMX_MULTIPLY1
#undef ETLLM_AMX_MULTIPLY
          {
            const int64_t last = c1 - 1;
            accumulate(acc, sumBuf[last % 2], rp, w, param(last), W(last),
                       last);
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
  return l.scaleType == DType::F16 ? &Kernel<Bits, Sym, PerToken, true>::run
                                   : &Kernel<Bits, Sym, PerToken, false>::run;
}

template <bool PerToken> QDotFn selectKind(const PackedQBlockLayout &l) {
  if (l.bits == 4)
    return l.symmetric ? selectScales<4, true, PerToken>(l)
                       : selectScales<4, false, PerToken>(l);
  return selectScales<8, true, PerToken>(l);
}

} // namespace

bool qdotAmxReads(const PackedQBlockLayout &l) {
  return l.scheme == QScheme::Affine &&
         (l.bits == 4 || (l.bits == 8 && l.symmetric)) &&
         (l.scaleType == DType::F16 || l.scaleType == DType::F32);
}

QDotFn qdotAmx(const PackedQBlockLayout &l, bool perToken) {
  if (!qdotAmxReads(l))
    return qdotAvx512Vnni(l, perToken);
  return perToken ? selectKind<true>(l) : selectKind<false>(l);
}

} // namespace etllm::rt::cpu
ETLLM_CPU_TARGET_END
#endif
