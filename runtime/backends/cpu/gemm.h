//===- gemm.h - f32 micro-kernels over k-major row blocks -------*- C++ -*-===//
//
// Internal to runtime/backends/cpu. The weights are row blocks of 8
// output features stored k-major (PackedF32Layout, or a dequantized chunk of
// a PackedQWeightLayout): the 8 rows' k-th values are contiguous, so one
// vector load feeds 8 outputs and each input value is broadcast once per
// block. A tile computes MR input rows x NB blocks (MR * NB accumulators,
// two 128-bit vectors per block on arm64);
// the tile driver walks k in chunks so that a panel's weights stay in L1
// while every input row tile uses them (prefill reuses weight loads).
//
//===----------------------------------------------------------------------===//
#ifndef ETLLM_BACKENDS_CPU_GEMM_H
#define ETLLM_BACKENDS_CPU_GEMM_H

#include "internal.h"

#include "etllm/runtime/cpu/packing.h"

namespace etllm::rt::cpu::gemm {

/// One tile: y[i][j*8 + r] (+)= sum_{k < kc} x[i*ldx + k] * w[j*ws + k*8 + r]
/// for i < MR, j < NB, and the columns j*8 + r < nValid. With `accumulate`
/// the tile adds to y; otherwise it starts from bias[j*8 + r] (or 0).
struct Tile {
  const float *x;
  int64_t ldx;
  const float *w;
  int64_t ws; // floats between consecutive blocks
  int64_t kc;
  const float *bias; // already offset to the tile's first column, or null
  bool accumulate;
  float *y; // already offset to the tile's first column
  int64_t ldy;
  int nValid; // valid columns, <= NB * 8
};

template <int MR, int NB> void tileGeneric(const Tile &t) {
  float acc[MR][NB * 8] = {};
  for (int64_t k = 0; k < t.kc; ++k) {
    for (int i = 0; i < MR; ++i) {
      const float xv = t.x[i * t.ldx + k];
      for (int j = 0; j < NB; ++j) {
        const float *wk = t.w + j * t.ws + k * kNR;
        for (int r = 0; r < 8; ++r)
          acc[i][j * 8 + r] += xv * wk[r];
      }
    }
  }
  for (int i = 0; i < MR; ++i) {
    float *dst = t.y + i * t.ldy;
    for (int c = 0; c < t.nValid; ++c) {
      float base = t.accumulate ? dst[c] : (t.bias ? t.bias[c] : 0.0f);
      dst[c] = base + acc[i][c];
    }
  }
}

#if ETLLM_CPU_X86
template <int MR, int NB> ETLLM_CPU_AVX2 void tileAvx2(const Tile &t) {
  __m256 acc[MR][NB];
#pragma GCC unroll 8
  for (int i = 0; i < MR; ++i)
#pragma GCC unroll 4
    for (int j = 0; j < NB; ++j)
      acc[i][j] = _mm256_setzero_ps();
  const float *x = t.x;
  const float *w = t.w;
  const int64_t ldx = t.ldx, ws = t.ws;
  for (int64_t k = 0; k < t.kc; ++k) {
    __m256 wv[NB];
#pragma GCC unroll 4
    for (int j = 0; j < NB; ++j)
      wv[j] = _mm256_loadu_ps(w + j * ws + k * kNR);
#pragma GCC unroll 8
    for (int i = 0; i < MR; ++i) {
      const __m256 xb = _mm256_broadcast_ss(x + i * ldx + k);
#pragma GCC unroll 4
      for (int j = 0; j < NB; ++j)
        acc[i][j] = _mm256_fmadd_ps(xb, wv[j], acc[i][j]);
    }
  }
#pragma GCC unroll 8
  for (int i = 0; i < MR; ++i) {
#pragma GCC unroll 4
    for (int j = 0; j < NB; ++j) {
      const int valid = t.nValid - j * 8;
      if (valid <= 0)
        continue;
      float *dst = t.y + i * t.ldy + j * 8;
      if (valid >= 8) {
        __m256 base = t.accumulate ? _mm256_loadu_ps(dst)
                      : t.bias     ? _mm256_loadu_ps(t.bias + j * 8)
                                   : _mm256_setzero_ps();
        _mm256_storeu_ps(dst, _mm256_add_ps(base, acc[i][j]));
      } else {
        const __m256i m = avx2::laneMask(valid);
        __m256 base = t.accumulate ? _mm256_maskload_ps(dst, m)
                      : t.bias     ? _mm256_maskload_ps(t.bias + j * 8, m)
                                   : _mm256_setzero_ps();
        _mm256_maskstore_ps(dst, m, _mm256_add_ps(base, acc[i][j]));
      }
    }
  }
}

/// tileAvx2 over two blocks with 512-bit vectors: the two blocks' k-th
/// values (two 256-bit loads) make one zmm, so each broadcast input value
/// feeds 16 outputs with one FMA and a tile holds MR (up to 12) rows. Every
/// output gets the same FMAs in the same order as tileAvx2<MR, 2>: the same
/// bits.
template <int MR>
__attribute__((target("avx512f,avx512vl,avx512dq,avx2,fma"))) void
tileAvx512(const Tile &t) {
  __m512 acc[MR];
#pragma GCC unroll 12
  for (int i = 0; i < MR; ++i)
    acc[i] = _mm512_setzero_ps();
  const float *x = t.x;
  const float *w0 = t.w, *w1 = t.w + t.ws;
  const int64_t ldx = t.ldx;
  for (int64_t k = 0; k < t.kc; ++k) {
    const __m512 wv = _mm512_insertf32x8(
        _mm512_castps256_ps512(_mm256_loadu_ps(w0 + k * kNR)),
        _mm256_loadu_ps(w1 + k * kNR), 1);
#pragma GCC unroll 12
    for (int i = 0; i < MR; ++i)
      acc[i] = _mm512_fmadd_ps(_mm512_set1_ps(x[i * ldx + k]), wv, acc[i]);
  }
  const int valid = t.nValid < 16 ? t.nValid : 16;
  const __mmask16 m = __mmask16((1u << valid) - 1u);
#pragma GCC unroll 12
  for (int i = 0; i < MR; ++i) {
    float *dst = t.y + i * t.ldy;
    __m512 base = t.accumulate ? _mm512_maskz_loadu_ps(m, dst)
                  : t.bias     ? _mm512_maskz_loadu_ps(m, t.bias)
                               : _mm512_setzero_ps();
    _mm512_mask_storeu_ps(dst, m, _mm512_add_ps(base, acc[i]));
  }
}

/// One input row (decode) against NB blocks over the whole k range, with
/// two accumulator sets (even/odd k) to hide the FMA latency.
template <int NB> ETLLM_CPU_AVX2 void gemvAvx2(const Tile &t) {
  __m256 a0[NB], a1[NB];
#pragma GCC unroll 4
  for (int j = 0; j < NB; ++j) {
    a0[j] = _mm256_setzero_ps();
    a1[j] = _mm256_setzero_ps();
  }
  const float *x = t.x, *w = t.w;
  const int64_t ws = t.ws, kc = t.kc;
  int64_t k = 0;
  for (; k + 2 <= kc; k += 2) {
    const __m256 x0 = _mm256_broadcast_ss(x + k);
    const __m256 x1 = _mm256_broadcast_ss(x + k + 1);
#pragma GCC unroll 4
    for (int j = 0; j < NB; ++j) {
      a0[j] = _mm256_fmadd_ps(x0, _mm256_loadu_ps(w + j * ws + k * kNR), a0[j]);
      a1[j] = _mm256_fmadd_ps(x1, _mm256_loadu_ps(w + j * ws + (k + 1) * kNR),
                              a1[j]);
    }
  }
  if (k < kc) {
    const __m256 x0 = _mm256_broadcast_ss(x + k);
#pragma GCC unroll 4
    for (int j = 0; j < NB; ++j)
      a0[j] = _mm256_fmadd_ps(x0, _mm256_loadu_ps(w + j * ws + k * kNR), a0[j]);
  }
#pragma GCC unroll 4
  for (int j = 0; j < NB; ++j) {
    const int valid = t.nValid - j * 8;
    if (valid <= 0)
      continue;
    __m256 acc = _mm256_add_ps(a0[j], a1[j]);
    float *dst = t.y + j * 8;
    if (valid >= 8) {
      __m256 base = t.accumulate ? _mm256_loadu_ps(dst)
                    : t.bias     ? _mm256_loadu_ps(t.bias + j * 8)
                                 : _mm256_setzero_ps();
      _mm256_storeu_ps(dst, _mm256_add_ps(base, acc));
    } else {
      const __m256i m = avx2::laneMask(valid);
      __m256 base = t.accumulate ? _mm256_maskload_ps(dst, m)
                    : t.bias     ? _mm256_maskload_ps(t.bias + j * 8, m)
                                 : _mm256_setzero_ps();
      _mm256_maskstore_ps(dst, m, _mm256_add_ps(base, acc));
    }
  }
}
#endif

#if ETLLM_CPU_ARM64
/// tileAvx2 with 128-bit vectors (each 8-row block is two): every output
/// gets the same FMAs in the same order, so the bits are AVX2's.
template <int MR, int NB> void tileNeon(const Tile &t) {
  float32x4_t acc[MR][NB][2];
#pragma GCC unroll 8
  for (int i = 0; i < MR; ++i)
#pragma GCC unroll 4
    for (int j = 0; j < NB; ++j)
      acc[i][j][0] = acc[i][j][1] = vdupq_n_f32(0.0f);
  const float *x = t.x;
  const float *w = t.w;
  const int64_t ldx = t.ldx, ws = t.ws;
  for (int64_t k = 0; k < t.kc; ++k) {
    float32x4_t wv[NB][2];
#pragma GCC unroll 4
    for (int j = 0; j < NB; ++j) {
      wv[j][0] = vld1q_f32(w + j * ws + k * kNR);
      wv[j][1] = vld1q_f32(w + j * ws + k * kNR + 4);
    }
#pragma GCC unroll 8
    for (int i = 0; i < MR; ++i) {
      const float xs = x[i * ldx + k];
#pragma GCC unroll 4
      for (int j = 0; j < NB; ++j) {
        acc[i][j][0] = vfmaq_n_f32(acc[i][j][0], wv[j][0], xs);
        acc[i][j][1] = vfmaq_n_f32(acc[i][j][1], wv[j][1], xs);
      }
    }
  }
#pragma GCC unroll 8
  for (int i = 0; i < MR; ++i) {
#pragma GCC unroll 4
    for (int j = 0; j < NB; ++j)
      neon::storeBlock(t.y + i * t.ldy + j * 8, t.accumulate,
                       t.bias ? t.bias + j * 8 : nullptr, acc[i][j],
                       t.nValid - j * 8);
  }
}

/// gemvAvx2 with 128-bit vectors (the same two accumulator sets, the same
/// bits).
template <int NB> void gemvNeon(const Tile &t) {
  float32x4_t a0[NB][2], a1[NB][2];
#pragma GCC unroll 4
  for (int j = 0; j < NB; ++j)
    a0[j][0] = a0[j][1] = a1[j][0] = a1[j][1] = vdupq_n_f32(0.0f);
  const float *x = t.x, *w = t.w;
  const int64_t ws = t.ws, kc = t.kc;
  int64_t k = 0;
  for (; k + 2 <= kc; k += 2) {
    const float x0 = x[k], x1 = x[k + 1];
#pragma GCC unroll 4
    for (int j = 0; j < NB; ++j)
#pragma GCC unroll 2
      for (int h = 0; h < 2; ++h) {
        a0[j][h] =
            vfmaq_n_f32(a0[j][h], vld1q_f32(w + j * ws + k * kNR + 4 * h), x0);
        a1[j][h] = vfmaq_n_f32(
            a1[j][h], vld1q_f32(w + j * ws + (k + 1) * kNR + 4 * h), x1);
      }
  }
  if (k < kc) {
    const float x0 = x[k];
#pragma GCC unroll 4
    for (int j = 0; j < NB; ++j)
#pragma GCC unroll 2
      for (int h = 0; h < 2; ++h)
        a0[j][h] =
            vfmaq_n_f32(a0[j][h], vld1q_f32(w + j * ws + k * kNR + 4 * h), x0);
  }
#pragma GCC unroll 4
  for (int j = 0; j < NB; ++j) {
    const float32x4_t acc[2] = {vaddq_f32(a0[j][0], a1[j][0]),
                                vaddq_f32(a0[j][1], a1[j][1])};
    neon::storeBlock(t.y + j * 8, t.accumulate,
                     t.bias ? t.bias + j * 8 : nullptr, acc, t.nValid - j * 8);
  }
}
#endif

/// Rows per tile of the drivers below (AVX-512: two-block panels only).
inline constexpr int kMRAvx2 = 6, kMRAvx512 = 12, kMRNeon = 6,
                     kMRGeneric = 4;
/// Blocks per panel (the tile width) for prefill and for decode.
inline constexpr int kPanelBlocks = 2, kGemvBlocks = 4;
/// k per chunk: a panel's chunk (2 x 256 x 8 floats, 16 KiB) stays in L1.
inline constexpr int64_t kChunk = 256;

/// Runs tiles over all M rows for one panel chunk of NB blocks (NB <= 2):
/// the rows in tiles of MR, then the remainder.
template <int NB> void panelRows(Isa isa, Tile t, int64_t M) {
  int64_t m = 0;
#if ETLLM_CPU_X86
  if (NB == 2 && hasAvx512(isa)) {
    for (; m + kMRAvx512 <= M; m += kMRAvx512) {
      tileAvx512<kMRAvx512>(t);
      t.x += kMRAvx512 * t.ldx;
      t.y += kMRAvx512 * t.ldy;
    }
    switch (M - m) {
    case 1:
      return tileAvx512<1>(t);
    case 2:
      return tileAvx512<2>(t);
    case 3:
      return tileAvx512<3>(t);
    case 4:
      return tileAvx512<4>(t);
    case 5:
      return tileAvx512<5>(t);
    case 6:
      return tileAvx512<6>(t);
    case 7:
      return tileAvx512<7>(t);
    case 8:
      return tileAvx512<8>(t);
    case 9:
      return tileAvx512<9>(t);
    case 10:
      return tileAvx512<10>(t);
    case 11:
      return tileAvx512<11>(t);
    default:
      return;
    }
  }
  if (hasAvx2(isa)) {
    for (; m + kMRAvx2 <= M; m += kMRAvx2) {
      tileAvx2<kMRAvx2, NB>(t);
      t.x += kMRAvx2 * t.ldx;
      t.y += kMRAvx2 * t.ldy;
    }
    switch (M - m) {
    case 1:
      return tileAvx2<1, NB>(t);
    case 2:
      return tileAvx2<2, NB>(t);
    case 3:
      return tileAvx2<3, NB>(t);
    case 4:
      return tileAvx2<4, NB>(t);
    case 5:
      return tileAvx2<5, NB>(t);
    default:
      return;
    }
  }
#endif
#if ETLLM_CPU_ARM64
  if (hasNeon(isa)) {
    for (; m + kMRNeon <= M; m += kMRNeon) {
      tileNeon<kMRNeon, NB>(t);
      t.x += kMRNeon * t.ldx;
      t.y += kMRNeon * t.ldy;
    }
    switch (M - m) {
    case 1:
      return tileNeon<1, NB>(t);
    case 2:
      return tileNeon<2, NB>(t);
    case 3:
      return tileNeon<3, NB>(t);
    case 4:
      return tileNeon<4, NB>(t);
    case 5:
      return tileNeon<5, NB>(t);
    default:
      return;
    }
  }
#endif
  for (; m + kMRGeneric <= M; m += kMRGeneric) {
    tileGeneric<kMRGeneric, NB>(t);
    t.x += kMRGeneric * t.ldx;
    t.y += kMRGeneric * t.ldy;
  }
  switch (M - m) {
  case 1:
    return tileGeneric<1, NB>(t);
  case 2:
    return tileGeneric<2, NB>(t);
  case 3:
    return tileGeneric<3, NB>(t);
  default:
    return;
  }
}

/// Whether `isa` has a gemv kernel (one input row against whole rows of
/// blocks).
inline bool hasGemv(Isa isa) { return hasAvx2(isa) || hasNeon(isa); }

/// The gemv kernel of `isa` (hasGemv) over nb (1..4) blocks.
inline void gemvN(Isa isa, int nb, const Tile &t) {
#if ETLLM_CPU_X86
  if (hasAvx2(isa)) {
    switch (nb) {
    case 4:
      return gemvAvx2<4>(t);
    case 3:
      return gemvAvx2<3>(t);
    case 2:
      return gemvAvx2<2>(t);
    default:
      return gemvAvx2<1>(t);
    }
  }
#endif
#if ETLLM_CPU_ARM64
  if (hasNeon(isa)) {
    switch (nb) {
    case 4:
      return gemvNeon<4>(t);
    case 3:
      return gemvNeon<3>(t);
    case 2:
      return gemvNeon<2>(t);
    default:
      return gemvNeon<1>(t);
    }
  }
#endif
  (void)isa;
  (void)nb;
  (void)t;
}

/// panelRows for a runtime block count (1 or 2).
inline void panelRowsN(Isa isa, int nb, const Tile &t, int64_t M) {
  if (nb == 2)
    panelRows<2>(isa, t, M);
  else
    panelRows<1>(isa, t, M);
}

} // namespace etllm::rt::cpu::gemm

#endif // ETLLM_BACKENDS_CPU_GEMM_H
