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
// symmetric tiles are read in place; 4-, 5- and 6-bit ones are split into
// their low and high nibbles (values 4c.. and 16 + 4c..), with the high
// bits from the tile's planes (Q5_0, Q5_1, Q5_K, Q6_K), once per row group
// and chunk of blocks, into a buffer on the stack, and their bias taken off
// (8 for symmetric int4, 16 for Q5_0, 32 for Q6_K), so that both operands
// are signed and the sums need no correction:
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
// super-block (d sc of a Q6_K half), decoded by the AVX-512 VNNI kernels'
// own functions (qdotSuperParamsK4, qdotSuperParamsQ6K). So a row gives the
// same bits here as through the AVX-512 VNNI kernels, alone or with others
// (decode and prefill agree).
//
// Q6_K's halves (values 0..15 and 16..31) have scales of their own: each
// half is a weight tile of its own, the other half's rows zero, and its
// sums leave the tiles apart (twice the tile work of a block, the same
// bits). The 8-bit asymmetric layout, and calls of fewer than kQAmxMinRows
// rows (decode: the weight stream, not the products, is the cost), take
// the AVX-512 VNNI kernels; the ggml blocks against per-token activations
// the generic kernel, as on every path.
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
/// it: Q5_0, Q5_1, Q4_K, Q5_K, Q6_K; per-block activations only); Bits: its
/// values' (4, 5, 6 or 8); Sym: no offsets.
template <QScheme S, unsigned Bits, bool Sym, bool PerToken, bool F16>
struct Kernel {
  static_assert(Bits != 8 || Sym, "8-bit symmetric only");
  static_assert(S == QScheme::Affine || !PerToken,
                "ggml blocks take per-block activations");
  static constexpr size_t kParamBytes = F16 ? 2 : 4;
  /// What the stored values lose to become signed: symmetric int4 (8),
  /// Q5_0 (16) and Q6_K (32).
  static constexpr int kBias = S == QScheme::Q6_K                         ? 32
                               : S == QScheme::Q5_0                       ? 16
                               : S == QScheme::Affine && Sym && Bits == 4 ? 8
                                                                          : 0;
  /// Offsets: asymmetric affine, Q5_1, Q4_K, Q5_K.
  static constexpr bool kOffset =
      S == QScheme::Affine ? !Sym : S != QScheme::Q5_0 && S != QScheme::Q6_K;
  /// Scales (and offsets) per super-block of 8 blocks (Q4_K, Q5_K, Q6_K).
  static constexpr bool kSuper =
      S == QScheme::Q4_K || S == QScheme::Q5_K || S == QScheme::Q6_K;
  /// Stored values the unpacking writes out (all but 8-bit ones).
  static constexpr bool kUnpack = Bits != 8;
  /// Products per block: Q6_K's halves (values 0..15 and 16..31) have
  /// scales of their own, so each half is a weight tile of its own (the
  /// other half's rows zero) and its sums leave the tiles apart.
  static constexpr int kUnits = S == QScheme::Q6_K ? 2 : 1;
  /// Blocks per chunk: kChunkBlocks weight tiles in the buffer.
  static constexpr int64_t kChunk = kChunkBlocks / kUnits;

  static __m512 params(const uint8_t *p) {
    if constexpr (F16)
      return _mm512_cvtph_ps(
          _mm256_loadu_si256(reinterpret_cast<const __m256i *>(p)));
    else
      return _mm512_loadu_ps(reinterpret_cast<const float *>(p));
  }
  static __mmask16 laneMask(int valid) { return __mmask16((1u << valid) - 1); }

  /// The scales and offsets of a chunk's weight tiles (blocks, or Q6_K's
  /// halves), per super-block formats: dw[unit][row], ow[unit][row].
  struct SuperParams {
    alignas(64) float dw[kSuper ? kChunkBlocks : 1][kQRows];
    alignas(64) float ow[kSuper && kOffset ? kChunkBlocks : 1][kQRows];
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
        if (b % 8 == 0) {
          const uint8_t *rec =
              w.scales +
              (size_t(rg) * size_t(w.l.scaleGroups) + size_t(b / 8)) *
                  w.l.paramBytes;
          if constexpr (S == QScheme::Q6_K)
            qdotSuperParamsQ6K(rec, sp.dw + 2 * (b - b0));
          else
            qdotSuperParamsK4(rec, sp.dw + (b - b0), sp.ow + (b - b0));
        }
      __m512i W = _mm512_setzero_si512();
      if constexpr (S == QScheme::Q6_K) {
        // The tile of values 0..15 (chunks' low nibbles, rows 0-3) and that
        // of values 16..31 (rows 4-7), the top two bits from the planes
        // (bits 2c, 2c + 1 of each byte: to bits 4, 5).
        int8_t *d = buf + size_t(2 * (b - b0)) * kWeightTileBytes;
        const __m512i pl0 = _mm512_loadu_si512(t + kWeightTileBytes / 2);
        const __m512i pl1 = _mm512_loadu_si512(t + kWeightTileBytes / 2 + 64);
        const __m512i b45 = _mm512_set1_epi8(0x30);
        auto top = [&](__m512i p, int c) {
          const __m512i v = c == 0   ? _mm512_slli_epi16(p, 4)
                            : c == 1 ? _mm512_slli_epi16(p, 2)
                            : c == 2 ? p
                                     : _mm512_srli_epi16(p, 2);
          return _mm512_and_si512(v, b45);
        };
        const __m512i zero = _mm512_setzero_si512();
#pragma GCC unroll 4
        for (int c = 0; c < 4; ++c) {
          const __m512i v = _mm512_loadu_si512(t + c * 64);
          const __m512i lo = _mm512_sub_epi8(
              _mm512_or_si512(_mm512_and_si512(v, low), top(pl0, c)), bias);
          const __m512i hi = _mm512_sub_epi8(
              _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi16(v, 4), low),
                              top(pl1, c)),
              bias);
          _mm512_store_si512(d + c * 64, lo);
          _mm512_store_si512(d + (4 + c) * 64, zero);
          _mm512_store_si512(d + kWeightTileBytes + c * 64, zero);
          _mm512_store_si512(d + kWeightTileBytes + (4 + c) * 64, hi);
        }
      } else if constexpr (kUnpack) {
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
      for (int64_t c0 = 0; c0 < KB; c0 += kChunk) {
        const int64_t c1 = std::min(KB, c0 + kChunk);
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
              for (int64_t b = c0; b < c1; ++b)
                rp.own[r][b - c0] = qdotOffsetTerm(a, m, b);
            }
          }
          __m512 acc[16];
#pragma GCC unroll 16
          for (int r = 0; r < 16; ++r)
            acc[r] = c0 == 0 || r >= rows
                         ? _mm512_setzero_ps()
                         : _mm512_maskz_loadu_ps(vm, y + (m0 + r) * ldy + n0);
          const int8_t *xq = a.q + m0 * a.stride;
          // The chunk's weight tiles ("units": its blocks, or Q6_K's
          // halves), u0 <= u < u1; unit u belongs to block u / kUnits.
          const int64_t u0 = c0 * kUnits, u1 = c1 * kUnits;
          auto wt = [&](int64_t u) -> const void * {
            if constexpr (kUnpack)
              return buf + (u - u0) * int64_t(kWeightTileBytes);
            else
              return w.tile(rg, u);
          };
          // Unit u's scales and offsets for the 16 rows.
          auto scales = [&](int64_t u) {
            if constexpr (kSuper)
              return _mm512_load_ps(sp.dw[u - u0]);
            else
              return params(w.scales + paramBase +
                            size_t(w.l.scaleGroup(u)) * kQRows * kParamBytes);
          };
          auto offsets = [&](int64_t u) {
            if constexpr (!kOffset)
              return _mm512_setzero_ps();
            else if constexpr (kSuper)
              return _mm512_load_ps(sp.ow[u - u0]);
            else
              return params(w.offsets + paramBase +
                            size_t(w.l.scaleGroup(u)) * kQRows * kParamBytes);
          };
          auto W = [&](int64_t u) {
            if constexpr (PerToken)
              return wsum[u - u0];
            else
              return _mm512_setzero_ps();
          };
          auto add = [&](const int32_t *sums, int64_t u) {
            accumulate(acc, sums, rp, scales(u), offsets(u), W(u), u / kUnits);
          };
          // Unit u's products go to tile set u % 2, which is stored and
          // then takes unit u + 2; unit u's sums are accumulated one unit
          // later (a load of a tile just stored waits for the stores): the
          // tile unit multiplies units u + 1 and u + 2 while the vector
          // units take unit u - 1's sums.
#define ETLLM_AMX_MULTIPLY(c, x, wt_, u)                                       \
  do {                                                                         \
    ETLLM_AMX_ZERO(c);                                                         \
    ETLLM_AMX_LOAD(x, xq + ((u) / kUnits) * kQBlock, a.stride);                \
    ETLLM_AMX_LOAD(wt_, wt(u), 64);                                            \
    ETLLM_AMX_DPBSSD(c, x, wt_);                                               \
  } while (0)
#define ETLLM_AMX_MULTIPLY0(u) ETLLM_AMX_MULTIPLY(0, 2, 4, u)
#define ETLLM_AMX_MULTIPLY1(u) ETLLM_AMX_MULTIPLY(1, 3, 5, u)
          ETLLM_AMX_MULTIPLY0(u0);
          if (u0 + 1 < u1)
            ETLLM_AMX_MULTIPLY1(u0 + 1);
          for (int64_t u = u0; u < u1; u += 2) {
            ETLLM_AMX_STORE(0, sumBuf[0], 64);
            if (u + 2 < u1)
              ETLLM_AMX_MULTIPLY0(u + 2);
            if (u > u0)
              add(sumBuf[1], u - 1);
            if (u + 1 >= u1)
              break;
            ETLLM_AMX_STORE(1, sumBuf[1], 64);
            if (u + 3 < u1)
              ETLLM_AMX_MULTIPLY1(u + 3);
            add(sumBuf[0], u);
          }
#undef ETLLM_AMX_MULTIPLY0
#undef ETLLM_AMX_MULTIPLY1
#undef ETLLM_AMX_MULTIPLY
          add(sumBuf[(u1 - 1) % 2], u1 - 1);
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
  case QScheme::Q6_K:
    return &Kernel<QScheme::Q6_K, 6, true, false, true>::run;
  default:
    return nullptr;
  }
}

} // namespace

bool qdotAmxReads(const PackedQBlockLayout &l, bool perToken) {
  // (The ggml blocks per token: the generic kernel, as on every path.)
  if (l.scheme != QScheme::Affine)
    return !perToken && selectGgml(l.scheme) != nullptr;
  return (l.bits == 4 || (l.bits == 8 && l.symmetric)) &&
         (l.scaleType == DType::F16 || l.scaleType == DType::F32);
}

bool qdotAmxOffsets(const PackedQBlockLayout &l) {
  return l.scheme == QScheme::Affine
             ? !l.symmetric
             : l.scheme != QScheme::Q5_0 && l.scheme != QScheme::Q6_K;
}

QDotFn qdotAmx(const PackedQBlockLayout &l, bool perToken) {
  if (!qdotAmxReads(l, perToken))
    return qdotAvx512Vnni(l, perToken);
  if (l.scheme != QScheme::Affine)
    return selectGgml(l.scheme);
  return perToken ? selectKind<true>(l) : selectKind<false>(l);
}

} // namespace etllm::rt::cpu
ETLLM_CPU_TARGET_END
#endif
