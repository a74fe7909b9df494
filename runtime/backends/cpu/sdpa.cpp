//===- sdpa.cpp - Scaled dot-product attention over the KV cache ----------===//
//
// sdpa (causal with positions, optional sliding window and softcap; an
// optional additive mask [1, 1, S or 1, T], added to each row's scaled
// scores as portable does: the ring caches' kv_ring.mask): per batch and KV
// head, the G = H / Hkv query heads x S rows that
// share the KV head walk the visible keys in blocks of kKeyBlock, so each
// cached K/V row is read from memory once per KV head (the other rows find
// it in L1), with an online softmax (running max, sum and f32 accumulator
// per row). Long contexts are split into chunks of kKeyChunk keys,
// processed in parallel and merged in chunk order (the split depends on the
// context only, never on the thread count).
//
// An int8 KV cache (kv_cache_quant.h) is dequantized a block of keys and
// values at a time (AVX2, NEON or scalar: scale * q, exactly portable's
// values) into the tile's scratch, which the G * S rows then read as they
// read a float cache's block from L1; the rest is the float code.
//
// Every other form declines to the portable kernel (runDense).
//
//===----------------------------------------------------------------------===//
#include "internal.h"

#include "etllm/runtime/kv_cache_quant.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

namespace etllm::rt::cpu {

//===----------------------------------------------------------------------===//
// SDPA
//===----------------------------------------------------------------------===//

namespace {

/// Keys per block of the online softmax, and per chunk of the parallel
/// split (long contexts).
constexpr int64_t kKeyBlock = 16, kKeyChunk = 512;

/// The running state of a query row over a range of keys, in scratch:
/// [0] the running max m of the scores (-inf: no key yet), [1] the sum l
/// of exp(score - m), [2, 2 + Dv) the sum of exp(score - m) v.
constexpr int64_t kStateHead = 2;

struct SdpaProblem {
  const float *q, *k, *v; // k, v: null with an int8 cache
  Int8KvCacheRows kc, vc; // with an int8 cache
  bool int8Kv;
  int64_t B, H, S, D, Hkv, T, Dv, group;
  float scale, softcap;
  bool causal;
  int64_t window;
  const Tensor *pos;
  /// An additive f32 mask [1, 1, S or 1, T] (null: none): row s starts at
  /// mask + s * maskRow.
  const float *mask = nullptr;
  int64_t maskRow = 0;

  /// The mask's values for query row s from key j (null without a mask).
  const float *maskAt(int64_t s, int64_t j) const {
    return mask ? mask + s * maskRow + j : nullptr;
  }

  /// The visible keys [j0, j1) of query row s.
  /// With a mask: each mask row's keys from its first to its last entry
  /// that is not -inf ([maskSpan[2r], maskSpan[2r + 1]), empty when the row
  /// hides every key), so that keys outside it are never read (a ring
  /// still filling, a window).
  const int64_t *maskSpan = nullptr;

  void range(int64_t s, int64_t &j0, int64_t &j1) const {
    j0 = 0;
    j1 = T;
    if (maskSpan) {
      const int64_t r = maskRow ? s : 0;
      j0 = maskSpan[2 * r];
      j1 = maskSpan[2 * r + 1];
    }
    if (!causal)
      return;
    const int64_t p = pos ? loadPos(*pos, s) : s;
    if (p < 0) {
      j1 = 0;
      return;
    }
    j1 = std::min(j1, p >= T ? T : p + 1);
    if (window > 0 && p - window + 1 > 0)
      j0 = std::max(j0, p - window + 1);
    j0 = std::min(j0, j1);
  }
};

float dotGeneric(const float *a, const float *b, int64_t n) {
  float s = 0.0f;
  for (int64_t i = 0; i < n; ++i)
    s += a[i] * b[i];
  return s;
}

#if ETLLM_CPU_X86
/// Dot products of one query row with N key rows (D % 8 == 0), one
/// accumulator per key (N a constant: they stay in registers).
template <int N>
ETLLM_CPU_AVX2 void dotsAvx2N(const float *q, const float *k, int64_t D,
                              float *out) {
  __m256 acc[8];
#pragma GCC unroll 8
  for (int j = 0; j < 8; ++j)
    acc[j] = _mm256_setzero_ps();
  for (int64_t d = 0; d < D; d += 8) {
    const __m256 qv = _mm256_loadu_ps(q + d);
#pragma GCC unroll 8
    for (int j = 0; j < N; ++j)
      acc[j] = _mm256_fmadd_ps(qv, _mm256_loadu_ps(k + j * D + d), acc[j]);
  }
  alignas(32) float t[8];
  _mm256_store_ps(t, avx2::hsum8(acc[0], acc[1], acc[2], acc[3], acc[4], acc[5],
                                 acc[6], acc[7]));
#pragma GCC unroll 8
  for (int j = 0; j < N; ++j)
    out[j] = t[j];
}

/// Dot products of one query row with n <= N key rows (D % 8 == 0): the
/// instance of dotsAvx2N for n, found at compile time from N down. (With n
/// a run-time bound the accumulators were indexed at run time and lived on
/// the stack.)
template <int N = 8>
ETLLM_CPU_AVX2 void dotsAvx2(const float *q, const float *k, int64_t D, int n,
                             float *out) {
  if constexpr (N > 1)
    if (n < N)
      return dotsAvx2<N - 1>(q, k, D, n, out);
  dotsAvx2N<N>(q, k, D, out);
}

/// acc = acc * corr + sum_j p[j] v[j] for n keys (Dv % 8 == 0). Each lane
/// sums its products in key order, as the scalar loop does. 64 lanes at a
/// time: 8 independent FMA chains (with one 8-lane chain at a time, every
/// key waited on the FMA latency).
ETLLM_CPU_AVX2 void accumulateAvx2(float *acc, float corr, const float *p,
                                   const float *v, int64_t Dv, int n) {
  const __m256 c = _mm256_set1_ps(corr);
  int64_t d = 0;
  for (; d + 64 <= Dv; d += 64) {
    __m256 a[8];
#pragma GCC unroll 8
    for (int i = 0; i < 8; ++i)
      a[i] = _mm256_mul_ps(_mm256_loadu_ps(acc + d + 8 * i), c);
    for (int j = 0; j < n; ++j) {
      const __m256 pj = _mm256_set1_ps(p[j]);
      const float *vj = v + j * Dv + d;
#pragma GCC unroll 8
      for (int i = 0; i < 8; ++i)
        a[i] = _mm256_fmadd_ps(pj, _mm256_loadu_ps(vj + 8 * i), a[i]);
    }
#pragma GCC unroll 8
    for (int i = 0; i < 8; ++i)
      _mm256_storeu_ps(acc + d + 8 * i, a[i]);
  }
  for (; d < Dv; d += 8) {
    __m256 a = _mm256_mul_ps(_mm256_loadu_ps(acc + d), c);
    for (int j = 0; j < n; ++j)
      a = _mm256_fmadd_ps(_mm256_set1_ps(p[j]), _mm256_loadu_ps(v + j * Dv + d),
                          a);
    _mm256_storeu_ps(acc + d, a);
  }
}

// The query heads of one KV head three at a time (AVX-512 CPUs): the same
// operations as dotsAvx2N and accumulateAvx2 for each row, in the same
// order (so the same bits), with each key or value vector loaded once for
// the rows; 256-bit vectors, the 32 registers AVX-512VL gives them holding
// 3 x 8 accumulators.
#define ETLLM_CPU_AVX512VL                                                     \
  __attribute__((target("avx512f,avx512vl,avx2,fma,f16c")))

/// Rows per group of the AVX-512 helpers.
constexpr int kSdpaRows = 3;

/// dotsAvx2N for R query rows q[r] and N key rows: out[r][j].
template <int R, int N>
ETLLM_CPU_AVX512VL void dotsRowsN(const float *const *q, const float *k,
                                  int64_t D, float (*out)[kKeyBlock]) {
  __m256 acc[R][8];
#pragma GCC unroll 3
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 8
    for (int j = 0; j < 8; ++j)
      acc[r][j] = _mm256_setzero_ps();
  for (int64_t d = 0; d < D; d += 8) {
    __m256 qv[R];
#pragma GCC unroll 3
    for (int r = 0; r < R; ++r)
      qv[r] = _mm256_loadu_ps(q[r] + d);
#pragma GCC unroll 8
    for (int j = 0; j < N; ++j) {
      const __m256 kv = _mm256_loadu_ps(k + j * D + d);
#pragma GCC unroll 3
      for (int r = 0; r < R; ++r)
        acc[r][j] = _mm256_fmadd_ps(qv[r], kv, acc[r][j]);
    }
  }
#pragma GCC unroll 3
  for (int r = 0; r < R; ++r) {
    alignas(32) float t[8];
    _mm256_store_ps(t, avx2::hsum8(acc[r][0], acc[r][1], acc[r][2], acc[r][3],
                                   acc[r][4], acc[r][5], acc[r][6], acc[r][7]));
#pragma GCC unroll 8
    for (int j = 0; j < N; ++j)
      out[r][j] = t[j];
  }
}

/// dotsRowsN for n <= N keys (the instance found at compile time).
template <int R, int N = 8>
ETLLM_CPU_AVX512VL void dotsRows(const float *const *q, const float *k,
                                 int64_t D, int n, float (*out)[kKeyBlock]) {
  if constexpr (N > 1)
    if (n < N)
      return dotsRows<R, N - 1>(q, k, D, n, out);
  dotsRowsN<R, N>(q, k, D, out);
}

/// accumulateAvx2 for R rows: acc[r] = acc[r] * corr[r] + sum_j p[r][j] v[j].
template <int R>
ETLLM_CPU_AVX512VL void accumulateRows(float *const *acc, const float *corr,
                                       const float (*p)[kKeyBlock],
                                       const float *v, int64_t Dv, int n) {
  int64_t d = 0;
  for (; d + 64 <= Dv; d += 64) {
    __m256 a[R][8];
#pragma GCC unroll 3
    for (int r = 0; r < R; ++r) {
      const __m256 c = _mm256_set1_ps(corr[r]);
#pragma GCC unroll 8
      for (int i = 0; i < 8; ++i)
        a[r][i] = _mm256_mul_ps(_mm256_loadu_ps(acc[r] + d + 8 * i), c);
    }
    for (int j = 0; j < n; ++j) {
      __m256 pj[R];
#pragma GCC unroll 3
      for (int r = 0; r < R; ++r)
        pj[r] = _mm256_set1_ps(p[r][j]);
      const float *vj = v + j * Dv + d;
#pragma GCC unroll 8
      for (int i = 0; i < 8; ++i) {
        const __m256 vv = _mm256_loadu_ps(vj + 8 * i);
#pragma GCC unroll 3
        for (int r = 0; r < R; ++r)
          a[r][i] = _mm256_fmadd_ps(pj[r], vv, a[r][i]);
      }
    }
#pragma GCC unroll 3
    for (int r = 0; r < R; ++r)
#pragma GCC unroll 8
      for (int i = 0; i < 8; ++i)
        _mm256_storeu_ps(acc[r] + d + 8 * i, a[r][i]);
  }
  for (; d < Dv; d += 8)
#pragma GCC unroll 3
    for (int r = 0; r < R; ++r) {
      __m256 a =
          _mm256_mul_ps(_mm256_loadu_ps(acc[r] + d), _mm256_set1_ps(corr[r]));
      for (int j = 0; j < n; ++j)
        a = _mm256_fmadd_ps(_mm256_set1_ps(p[r][j]),
                            _mm256_loadu_ps(v + j * Dv + d), a);
      _mm256_storeu_ps(acc[r] + d, a);
    }
}

/// x[j] *= scale for j < n (n <= kKeyBlock).
ETLLM_CPU_AVX2 void scaleAvx2(float *x, int n, float scale) {
  const __m256 s = _mm256_set1_ps(scale);
  for (int o = 0; o < n; o += 8) {
    const __m256i m = avx2::laneMask(std::min(8, n - o));
    _mm256_maskstore_ps(x + o, m,
                        _mm256_mul_ps(_mm256_maskload_ps(x + o, m), s));
  }
}

/// max(m, x[0], ..., x[n - 1]) as std::max(m, x[j]) in turn gives it (a
/// NaN x[j] is passed over; max is exact, so the order does not matter).
ETLLM_CPU_AVX2 float maxAvx2(const float *x, int n, float m) {
  __m256 mx = _mm256_set1_ps(m);
  for (int o = 0; o < n; o += 8) {
    const __m256i k = avx2::laneMask(std::min(8, n - o));
    // Lanes past n hold the running max; (x > mx) ? x : mx keeps mx for a
    // NaN x.
    const __m256 v = _mm256_blendv_ps(mx, _mm256_maskload_ps(x + o, k),
                                      _mm256_castsi256_ps(k));
    mx = _mm256_max_ps(v, mx);
  }
  __m128 h =
      _mm_max_ps(_mm256_castps256_ps128(mx), _mm256_extractf128_ps(mx, 1));
  h = _mm_max_ps(h, _mm_movehl_ps(h, h));
  h = _mm_max_ss(h, _mm_movehdup_ps(h));
  return _mm_cvtss_f32(h);
}

/// x[j] = exp(x[j] - m) for j < n (avx2::exp8).
ETLLM_CPU_AVX2 void expShiftedAvx2(float *x, int n, float m) {
  const __m256 mv = _mm256_set1_ps(m);
  for (int o = 0; o < n; o += 8) {
    const __m256i k = avx2::laneMask(std::min(8, n - o));
    _mm256_maskstore_ps(
        x + o, k, avx2::exp8(_mm256_sub_ps(_mm256_maskload_ps(x + o, k), mv)));
  }
}

/// With a softcap: x[j] = cap tanh(x[j] / cap), for j < n <= 8.
ETLLM_CPU_AVX2 void softcapAvx2(float *x, int n, float cap) {
  alignas(32) float t[8] = {};
  for (int j = 0; j < n; ++j)
    t[j] = x[j] / cap;
  _mm256_store_ps(
      t, _mm256_mul_ps(_mm256_set1_ps(cap), avx2::tanh8(_mm256_load_ps(t))));
  for (int j = 0; j < n; ++j)
    x[j] = t[j];
}
#endif

#if ETLLM_CPU_ARM64
// The AVX2 helpers above on pairs of 4-lane vectors (lanes 0-3 and 4-7 of
// AVX2's 8): per lane the same operations in the same order, and the key
// sums in hsum8's order, so the bits are AVX2's.

/// dotsAvx2N: acc[j] = (lo, hi) per key; sum = ((a0 + a1) + (a2 + a3)) +
/// ((a4 + a5) + (a6 + a7)), as hsum8 adds.
template <int N>
void dotsNeonN(const float *q, const float *k, int64_t D, float *out) {
  float32x4_t lo[8], hi[8];
#pragma GCC unroll 8
  for (int j = 0; j < 8; ++j)
    lo[j] = hi[j] = vdupq_n_f32(0.0f);
  for (int64_t d = 0; d < D; d += 8) {
    const float32x4_t ql = vld1q_f32(q + d), qh = vld1q_f32(q + d + 4);
#pragma GCC unroll 8
    for (int j = 0; j < N; ++j) {
      lo[j] = vfmaq_f32(lo[j], ql, vld1q_f32(k + j * D + d));
      hi[j] = vfmaq_f32(hi[j], qh, vld1q_f32(k + j * D + d + 4));
    }
  }
  float t[8];
#pragma GCC unroll 2
  for (int g = 0; g < 2; ++g) { // keys 4g .. 4g + 3
    const float32x4_t l = vpaddq_f32(vpaddq_f32(lo[4 * g], lo[4 * g + 1]),
                                     vpaddq_f32(lo[4 * g + 2], lo[4 * g + 3]));
    const float32x4_t h = vpaddq_f32(vpaddq_f32(hi[4 * g], hi[4 * g + 1]),
                                     vpaddq_f32(hi[4 * g + 2], hi[4 * g + 3]));
    vst1q_f32(t + 4 * g, vaddq_f32(l, h));
  }
#pragma GCC unroll 8
  for (int j = 0; j < N; ++j)
    out[j] = t[j];
}

template <int N = 8>
void dotsNeon(const float *q, const float *k, int64_t D, int n, float *out) {
  if constexpr (N > 1)
    if (n < N)
      return dotsNeon<N - 1>(q, k, D, n, out);
  dotsNeonN<N>(q, k, D, out);
}

/// accumulateAvx2: 64 values (16 vectors) per pass, then 8 at a time.
void accumulateNeon(float *acc, float corr, const float *p, const float *v,
                    int64_t Dv, int n) {
  const float32x4_t c = vdupq_n_f32(corr);
  int64_t d = 0;
  for (; d + 64 <= Dv; d += 64) {
    float32x4_t a[16];
#pragma GCC unroll 16
    for (int i = 0; i < 16; ++i)
      a[i] = vmulq_f32(vld1q_f32(acc + d + 4 * i), c);
    for (int j = 0; j < n; ++j) {
      const float *vj = v + j * Dv + d;
#pragma GCC unroll 16
      for (int i = 0; i < 16; ++i)
        a[i] = vfmaq_n_f32(a[i], vld1q_f32(vj + 4 * i), p[j]);
    }
#pragma GCC unroll 16
    for (int i = 0; i < 16; ++i)
      vst1q_f32(acc + d + 4 * i, a[i]);
  }
  for (; d < Dv; d += 4) {
    float32x4_t a = vmulq_f32(vld1q_f32(acc + d), c);
    for (int j = 0; j < n; ++j)
      a = vfmaq_n_f32(a, vld1q_f32(v + j * Dv + d), p[j]);
    vst1q_f32(acc + d, a);
  }
}

/// x[j] *= scale for j < n.
void scaleNeon(float *x, int n, float scale) {
  for (int o = 0; o < n; o += 4) {
    const int r = std::min(4, n - o);
    neon::storePart(x + o, vmulq_n_f32(neon::loadPart(x + o, r), scale), r);
  }
}

/// maxAvx2: a NaN x[j] is passed over (FMAXNM), max is exact.
float maxNeon(const float *x, int n, float m) {
  float32x4_t mx = vdupq_n_f32(m);
  int o = 0;
  for (; o + 4 <= n; o += 4)
    mx = vmaxnmq_f32(vld1q_f32(x + o), mx);
  float r = vmaxnmvq_f32(mx);
  for (; o < n; ++o)
    r = std::fmax(x[o], r); // fmax: the number of a NaN pair
  return r;
}

/// x[j] = exp(x[j] - m) for j < n (neon::exp4).
void expShiftedNeon(float *x, int n, float m) {
  const float32x4_t mv = vdupq_n_f32(m);
  for (int o = 0; o < n; o += 4) {
    const int r = std::min(4, n - o);
    neon::storePart(x + o, neon::exp4(vsubq_f32(neon::loadPart(x + o, r), mv)),
                    r);
  }
}

/// x[j] = cap tanh(x[j] / cap) for j < n.
void softcapNeon(float *x, int n, float cap) {
  for (int o = 0; o < n; o += 4) {
    const int r = std::min(4, n - o);
    float t[4] = {};
    for (int j = 0; j < r; ++j)
      t[j] = x[o + j] / cap;
    neon::storePart(x + o,
                    vmulq_f32(vdupq_n_f32(cap), neon::tanh4(vld1q_f32(t))), r);
  }
}
#endif

/// Rows [r0, r0 + n) of an int8 cache dequantized into dst (n rows of
/// c.cols floats) as scale * q: one product, so every path below gives
/// portable's values.
void dequantRowsGeneric(const Int8KvCacheRows &c, int64_t r0, int64_t n,
                        float *dst) {
  const int64_t D = c.cols;
  for (int64_t r = r0; r < r0 + n; ++r, dst += D)
    for (int64_t d = 0; d < D; ++d)
      dst[d] = c.scales[r] * float(c.q[r * D + d]);
}

#if ETLLM_CPU_X86
/// dequantRowsGeneric, 8 values at a time (int8 -> int32 -> f32, times the
/// scale); the last D % 8 as the scalar loop.
ETLLM_CPU_AVX2 void dequantRowsAvx2(const Int8KvCacheRows &c, int64_t r0,
                                    int64_t n, float *dst) {
  const int64_t D = c.cols;
  for (int64_t r = r0; r < r0 + n; ++r, dst += D) {
    const int8_t *q = c.q + r * D;
    const float scale = c.scales[r];
    const __m256 sv = _mm256_set1_ps(scale);
    int64_t d = 0;
    for (; d + 8 <= D; d += 8) {
      const __m128i b =
          _mm_loadl_epi64(reinterpret_cast<const __m128i *>(q + d));
      _mm256_storeu_ps(
          dst + d,
          _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(b)), sv));
    }
    for (; d < D; ++d)
      dst[d] = scale * float(q[d]);
  }
}
#endif

#if ETLLM_CPU_ARM64
/// dequantRowsAvx2 with NEON: int8 -> int16 -> int32 -> f32, times the
/// scale.
void dequantRowsNeon(const Int8KvCacheRows &c, int64_t r0, int64_t n,
                     float *dst) {
  const int64_t D = c.cols;
  for (int64_t r = r0; r < r0 + n; ++r, dst += D) {
    const int8_t *q = c.q + r * D;
    const float scale = c.scales[r];
    int64_t d = 0;
    for (; d + 8 <= D; d += 8) {
      const int16x8_t w = vmovl_s8(vld1_s8(q + d));
      vst1q_f32(dst + d,
                vmulq_n_f32(vcvtq_f32_s32(vmovl_s16(vget_low_s16(w))), scale));
      vst1q_f32(dst + d + 4,
                vmulq_n_f32(vcvtq_f32_s32(vmovl_s16(vget_high_s16(w))), scale));
    }
    for (; d < D; ++d)
      dst[d] = scale * float(q[d]);
  }
}
#endif

void dequantRows(Isa isa, const Int8KvCacheRows &c, int64_t r0, int64_t n,
                 float *dst) {
#if ETLLM_CPU_X86
  if (hasAvx2(isa))
    return dequantRowsAvx2(c, r0, n, dst);
#endif
#if ETLLM_CPU_ARM64
  if (hasNeon(isa))
    return dequantRowsNeon(c, r0, n, dst);
#endif
  (void)isa;
  dequantRowsGeneric(c, r0, n, dst);
}

/// Floats of one tile's block of dequantized keys and values (an int8
/// cache), whole cache lines so that the blocks stay 64-byte aligned.
int64_t int8KvBlockFloats(int64_t D, int64_t Dv) {
  return int64_t(alignUp(size_t(kKeyBlock * (D + Dv)), 16));
}

/// Which helpers sdpaChunk runs: portable C++, AVX2 (per query row, or
/// with AVX-512 three query heads at a time: the same bits) or NEON (the
/// vector ones need D and Dv multiples of 8).
enum class SdpaPath { Generic, Avx2, Avx512, Neon };

/// The state's max and sum after a block of n exponentials p (as every
/// path adds them: in key order).
inline void updateState(float *st, float mx, float corr, const float *p,
                        int n) {
  float sum = 0.0f;
  for (int o = 0; o < n; ++o)
    sum += p[o];
  st[0] = mx;
  st[1] = st[1] * corr + sum;
}

#if ETLLM_CPU_X86
/// One row's online-softmax step over n scores sc (AVX2): scaled, capped,
/// the state's max and sum updated and sc turned into exp(score - max);
/// corr is what the row's accumulator is scaled by. False (nothing changed)
/// while no score is finite (or NaN scores: left to the merge).
bool softmaxStepAvx2(const SdpaProblem &P, float *sc, int n, float *st,
                     float &corr, const float *mask) {
  scaleAvx2(sc, n, P.scale);
  if (P.softcap > 0.0f)
    for (int o = 0; o < n; o += 8)
      softcapAvx2(sc + o, std::min(8, n - o), P.softcap);
  if (mask) // added to the scaled (and capped) scores, as portable
    for (int o = 0; o < n; ++o)
      sc[o] += mask[o];
  const float mx = maxAvx2(sc, n, st[0]);
  if (!(mx > -INFINITY))
    return false;
  corr = st[0] == -INFINITY ? 0.0f : std::exp(st[0] - mx);
  expShiftedAvx2(sc, n, mx);
  updateState(st, mx, corr, sc, n);
  return true;
}
#endif

/// Keys [c0, c1) of one (b, hk) for its G * S query rows (row g * S + s),
/// updating their states (states + row * (kStateHead + Dv)). With an int8
/// cache, `block` holds int8KvBlockFloats(D, Dv) floats for the current
/// block's dequantized keys (kKeyBlock rows of D) and values (of Dv).
void sdpaChunk(const SdpaProblem &P, Isa isa, int64_t b, int64_t hk, int64_t c0,
               int64_t c1, float *states, float *block) {
  const int64_t G = P.group, S = P.S, D = P.D, Dv = P.Dv;
  const int64_t stride = kStateHead + Dv;
  const int64_t row0 = (b * P.Hkv + hk) * P.T; // key/value row of key 0
  const bool vec8 = D % 8 == 0 && Dv % 8 == 0;
  const SdpaPath path = !vec8            ? SdpaPath::Generic
                        : hasAvx512(isa) ? SdpaPath::Avx512
                        : hasAvx2(isa)   ? SdpaPath::Avx2
                        : hasNeon(isa)   ? SdpaPath::Neon
                                         : SdpaPath::Generic;
  float sc[kKeyBlock];
  for (int64_t j = c0; j < c1; j += kKeyBlock) {
    const int64_t jEnd = std::min(c1, j + kKeyBlock);
    // Key and value rows of key j: the cache's, or the dequantized block's
    // (of the keys some query row sees: none before a sliding window).
    const float *kj, *vj;
    if (P.int8Kv) {
      int64_t u0 = jEnd, u1 = j;
      for (int64_t s = 0; s < S; ++s) {
        int64_t r0, r1;
        P.range(s, r0, r1);
        if (std::max(j, r0) < std::min(jEnd, r1)) {
          u0 = std::min(u0, std::max(j, r0));
          u1 = std::max(u1, std::min(jEnd, r1));
        }
      }
      if (u0 >= u1)
        continue;
      float *kBlock = block, *vBlock = block + kKeyBlock * D;
      dequantRows(isa, P.kc, row0 + u0, u1 - u0, kBlock + (u0 - j) * D);
      dequantRows(isa, P.vc, row0 + u0, u1 - u0, vBlock + (u0 - j) * Dv);
      kj = kBlock;
      vj = vBlock;
    } else {
      kj = P.k + (row0 + j) * D;
      vj = P.v + (row0 + j) * Dv;
    }
    for (int64_t s = 0; s < S; ++s) {
      int64_t r0, r1;
      P.range(s, r0, r1);
      const int64_t lo = std::max(j, r0), hi = std::min(jEnd, r1);
      if (lo >= hi)
        continue;
      const int n = int(hi - lo);
#if ETLLM_CPU_X86
      if (path == SdpaPath::Avx512) {
        const float *k0 = kj + (lo - j) * D, *v0 = vj + (lo - j) * Dv;
        for (int64_t g0 = 0; g0 < G; g0 += kSdpaRows) {
          const int R = int(std::min<int64_t>(kSdpaRows, G - g0));
          const float *qs[kSdpaRows];
          float *sts[kSdpaRows], *accs[kSdpaRows];
          for (int r = 0; r < R; ++r) {
            qs[r] = P.q + ((b * P.H + hk * G + g0 + r) * S + s) * D;
            sts[r] = states + ((g0 + r) * S + s) * stride;
          }
          float scr[kSdpaRows][kKeyBlock];
          for (int o = 0; o < n; o += 8) {
            const float *ko = k0 + o * D;
            const int m = std::min(8, n - o);
            float(*out)[kKeyBlock] =
                reinterpret_cast<float(*)[kKeyBlock]>(&scr[0][o]);
            if (R == 3)
              dotsRows<3>(qs, ko, D, m, out);
            else if (R == 2)
              dotsRows<2>(qs, ko, D, m, out);
            else
              dotsRows<1>(qs, ko, D, m, out);
          }
          // Per row, as the AVX2 path: the rows with nothing finite yet
          // take no values.
          int live = 0;
          float corrs[kSdpaRows];
          float(*ps)[kKeyBlock] = scr;
          for (int r = 0; r < R; ++r) {
            float *sc = scr[r], *st = sts[r];
            float corr;
            if (!softmaxStepAvx2(P, sc, n, st, corr, P.maskAt(s, lo)))
              continue;
            if (live != r)
              std::memcpy(ps[live], sc, sizeof(float) * size_t(n));
            accs[live] = st + kStateHead;
            corrs[live++] = corr;
          }
          if (live == 3)
            accumulateRows<3>(accs, corrs, ps, v0, Dv, n);
          else if (live == 2)
            accumulateRows<2>(accs, corrs, ps, v0, Dv, n);
          else if (live == 1)
            accumulateRows<1>(accs, corrs, ps, v0, Dv, n);
        }
        continue;
      }
#endif
      for (int64_t g = 0; g < G; ++g) {
        const float *q = P.q + ((b * P.H + hk * G + g) * S + s) * D;
        float *st = states + (g * S + s) * stride;
        const float *k0 = kj + (lo - j) * D, *v0 = vj + (lo - j) * Dv;
        float *acc = st + kStateHead;
        switch (path) {
#if ETLLM_CPU_X86
        case SdpaPath::Avx2: {
          for (int o = 0; o < n; o += 8)
            dotsAvx2(q, k0 + o * D, D, std::min(8, n - o), sc + o);
          float corr;
          if (!softmaxStepAvx2(P, sc, n, st, corr, P.maskAt(s, lo)))
            continue;
          accumulateAvx2(acc, corr, sc, v0, Dv, n);
          continue;
        }
#endif
#if ETLLM_CPU_ARM64
        case SdpaPath::Neon: {
          for (int o = 0; o < n; o += 8)
            dotsNeon(q, k0 + o * D, D, std::min(8, n - o), sc + o);
          scaleNeon(sc, n, P.scale);
          if (P.softcap > 0.0f)
            softcapNeon(sc, n, P.softcap);
          if (const float *m = P.maskAt(s, lo))
            for (int o = 0; o < n; ++o)
              sc[o] += m[o];
          const float mx = maxNeon(sc, n, st[0]);
          if (!(mx > -INFINITY))
            continue;
          const float corr = st[0] == -INFINITY ? 0.0f : std::exp(st[0] - mx);
          expShiftedNeon(sc, n, mx);
          updateState(st, mx, corr, sc, n);
          accumulateNeon(acc, corr, sc, v0, Dv, n);
          continue;
        }
#endif
        default:
          break;
        }
        for (int o = 0; o < n; ++o)
          sc[o] = dotGeneric(q, k0 + o * D, D) * P.scale;
        if (P.softcap > 0.0f)
          for (int o = 0; o < n; ++o)
            sc[o] = P.softcap * std::tanh(sc[o] / P.softcap);
        if (const float *m = P.maskAt(s, lo))
          for (int o = 0; o < n; ++o)
            sc[o] += m[o];
        float mx = st[0];
        for (int o = 0; o < n; ++o)
          mx = std::max(mx, sc[o]);
        if (!(mx > -INFINITY))
          continue;
        const float corr = st[0] == -INFINITY ? 0.0f : std::exp(st[0] - mx);
        for (int o = 0; o < n; ++o)
          sc[o] = std::exp(sc[o] - mx);
        updateState(st, mx, corr, sc, n);
        for (int64_t d = 0; d < Dv; ++d) {
          float av = acc[d] * corr;
          for (int o = 0; o < n; ++o)
            av += sc[o] * v0[o * Dv + d];
          acc[d] = av;
        }
      }
    }
  }
}

} // namespace

namespace {

/// sdpaKernel's scratch: the states of `items` (b, hk, chunk) items of
/// `itemFloats` each, then (an int8 cache) one block of dequantized keys
/// and values for each of `tiles` tiles. In floats; saturates (the sizes
/// come from a program) instead of wrapping.
struct SdpaScratch {
  uint64_t blocksAt = 0, floats = 0;
  SdpaScratch(uint64_t items, uint64_t itemFloats, uint64_t tiles,
              uint64_t blockFloats) {
    uint64_t states, blocks;
    if (__builtin_mul_overflow(items, itemFloats, &states) ||
        __builtin_mul_overflow(tiles, blockFloats, &blocks) ||
        states > (UINT64_MAX >> 1)) {
      floats = UINT64_MAX;
      return;
    }
    blocksAt = (states + 15) / 16 * 16; // a cache line
    if (__builtin_add_overflow(blocksAt, blocks, &floats))
      floats = UINT64_MAX;
  }
  size_t bytes() const {
    return floats > SIZE_MAX / sizeof(float) ? SIZE_MAX
                                             : size_t(floats) * sizeof(float);
  }
};

} // namespace

size_t sdpaScratchBytes(const ExecContext *ctx, int64_t B, int64_t H, int64_t S,
                        int64_t Hkv, int64_t T, int64_t D, int64_t Dv,
                        bool int8Kv) {
  if (Hkv <= 0 || H % Hkv)
    return 0;
  const int64_t chunks = std::max<int64_t>(1, (T + kKeyChunk - 1) / kKeyChunk);
  uint64_t items = 1, itemFloats = 1;
  for (int64_t f : {B, Hkv, chunks})
    if (f < 0 || __builtin_mul_overflow(items, uint64_t(f), &items))
      return SIZE_MAX;
  for (int64_t f : {H / Hkv, S, int64_t(kStateHead) + Dv})
    if (f < 0 || __builtin_mul_overflow(itemFloats, uint64_t(f), &itemFloats))
      return SIZE_MAX;
  if (!int8Kv)
    return SdpaScratch(items, itemFloats, 0, 0).bytes();
  if (D < 0 || Dv < 0 || D + Dv > (int64_t(1) << 40))
    return SIZE_MAX;
  // defaultTile makes at most 4 tiles per thread, and one per item.
  const uint64_t threads = std::max<uint64_t>(ctx ? ctx->numThreads() : 1, 1);
  const uint64_t tiles = std::min<uint64_t>(items, 4 * threads);
  return SdpaScratch(items, itemFloats, tiles,
                     uint64_t(int8KvBlockFloats(D, Dv)))
      .bytes();
}

Status sdpaKernel(const KernelArgs &a, Isa isa, bool &handled) {
  handled = false;
  if (a.inputs.size < 3 || a.outputs.size != 1 || a.ints.size != 4 ||
      a.floats.size != 2 || (a.ints[0] != 0 && a.ints[0] != 1) ||
      !isF32Rank4(a.inputs[0]) || !a.outputs[0] ||
      a.outputs[0]->dtype != DType::F32 || !a.ctx)
    return Status();
  // Key and value: both f32 or both int8 caches (a mix is portable's error).
  const bool int8Kv = isInt8KvCache(a.inputs[1]) && isInt8KvCache(a.inputs[2]);
  if (!int8Kv && (!isF32Rank4(a.inputs[1]) || !isF32Rank4(a.inputs[2])))
    return Status();
  const bool hasMask = a.ints[0] != 0, hasPos = a.ints[1] != 0;
  const Tensor *mask = hasMask ? a.inputs[3] : nullptr;
  const Tensor *pos = hasPos ? a.inputs[3 + hasMask] : nullptr;
  if (a.inputs.size != size_t(3 + hasMask + hasPos) ||
      (hasPos && !isPositions(pos)) || a.ints[3] < 0)
    return Status();
  const Tensor &q = *a.inputs[0], &k = *a.inputs[1], &v = *a.inputs[2];
  SdpaProblem P;
  P.B = q.sizes[0];
  P.H = q.sizes[1];
  P.S = q.sizes[2];
  P.D = q.sizes[3];
  P.Hkv = k.sizes[1];
  P.T = k.sizes[2];
  P.Dv = v.sizes[3];
  if (k.sizes[0] != P.B || k.sizes[3] != P.D || v.sizes[0] != P.B ||
      v.sizes[1] != P.Hkv || v.sizes[2] != P.T || P.Hkv <= 0 ||
      P.H % P.Hkv != 0 || (hasPos && pos->sizes[0] != P.S))
    return Status();
  // A mask over the keys of each query row, the same for every batch and
  // head ([1, 1, S or 1, T], f32: what kv_ring.mask gives); any other
  // broadcast is portable's.
  if (mask && (!isF32Rank4(mask) || mask->sizes[0] != 1 ||
               mask->sizes[1] != 1 ||
               (mask->sizes[2] != P.S && mask->sizes[2] != 1) ||
               mask->sizes[3] != P.T))
    return Status();
  handled = true;
  P.group = P.H / P.Hkv;
  P.q = q.ptr<float>();
  P.int8Kv = int8Kv;
  P.k = int8Kv ? nullptr : k.ptr<float>();
  P.v = int8Kv ? nullptr : v.ptr<float>();
  if (int8Kv) {
    P.kc = Int8KvCacheRows::of(k);
    P.vc = Int8KvCacheRows::of(v);
  }
  P.scale = float(a.floats[0]);
  P.softcap = float(a.floats[1]);
  P.causal = a.ints[2] != 0;
  P.window = a.ints[3];
  P.pos = pos;
  // The mask rows' spans, on the stack (no allocation per call); a call of
  // more rows reads every key of each row (the same result).
  constexpr int64_t kMaxSpanRows = 256;
  int64_t maskSpan[2 * kMaxSpanRows];
  if (mask) {
    P.mask = mask->ptr<float>();
    P.maskRow = mask->sizes[2] == 1 ? 0 : P.T;
  }
  if (mask && mask->sizes[2] <= kMaxSpanRows) {
    const int64_t rows = mask->sizes[2];
    for (int64_t r = 0; r < rows; ++r) {
      const float *m = P.mask + r * P.T;
      int64_t lo = 0, hi = P.T;
      while (lo < hi && m[lo] == -INFINITY)
        ++lo;
      while (hi > lo && m[hi - 1] == -INFINITY)
        --hi;
      maskSpan[2 * r] = lo;
      maskSpan[2 * r + 1] = hi;
    }
    P.maskSpan = maskSpan;
  }
  Tensor &out = *a.outputs[0];
  const int64_t shape[4] = {P.B, P.H, P.S, P.Dv};
  ETLLM_RETURN_IF_ERROR(out.resize(shape, 4));
  if (out.numel() == 0)
    return Status();

  // The keys any row sees: [0, kMax), in chunks of kKeyChunk.
  int64_t kMax = 0;
  for (int64_t s = 0; s < P.S; ++s) {
    int64_t j0, j1;
    P.range(s, j0, j1);
    kMax = std::max(kMax, j1);
  }
  const int64_t chunks =
      std::max<int64_t>(1, (kMax + kKeyChunk - 1) / kKeyChunk);
  const int64_t rowsPerHead = P.group * P.S;
  const int64_t stride = kStateHead + P.Dv;
  const size_t itemFloats = size_t(rowsPerHead * stride);
  const size_t items = size_t(P.B * P.Hkv * chunks);
  const uint64_t work =
      uint64_t(P.B * P.H * P.S) * uint64_t(kMax) * uint64_t(P.D + P.Dv);
  const ExecContext *pctx = parallelContext(a.ctx, work);
  const size_t tile = defaultTile(pctx, items);
  // With an int8 cache every tile has its block of dequantized rows (after
  // the states: one scratch, reserved at init by sdpaScratchBytes).
  const int64_t blockFloats = int8Kv ? int8KvBlockFloats(P.D, P.Dv) : 0;
  const SdpaScratch layout(items, itemFloats, numTiles(items, tile),
                           uint64_t(blockFloats));
  if (layout.bytes() == SIZE_MAX)
    return Error("sdpa: the scratch of " + q.shapeString() + " over " +
                 k.shapeString() + " is too large");
  float *states = static_cast<float *>(a.ctx->scratch(layout.bytes()));
  parallelForTiles(pctx, items, tile, [&](size_t b0, size_t e0) {
    float *block =
        int8Kv ? states + layout.blocksAt + (b0 / tile) * size_t(blockFloats)
               : nullptr;
    for (size_t it = b0; it < e0; ++it) {
      const int64_t c = int64_t(it) % chunks, bh = int64_t(it) / chunks;
      float *st = states + it * itemFloats;
      for (int64_t r = 0; r < rowsPerHead; ++r) {
        st[r * stride] = -INFINITY;
        std::fill(st + r * stride + 1, st + (r + 1) * stride, 0.0f);
      }
      sdpaChunk(P, isa, bh / P.Hkv, bh % P.Hkv, c * kKeyChunk,
                std::min(kMax, (c + 1) * kKeyChunk), st, block);
    }
  });
  // Merge the chunks of every row, in chunk order.
  float *py = out.ptr<float>();
  for (int64_t b = 0; b < P.B; ++b)
    for (int64_t hk = 0; hk < P.Hkv; ++hk)
      for (int64_t r = 0; r < rowsPerHead; ++r) {
        const int64_t g = r / P.S, s = r % P.S;
        float *dst = py + ((b * P.H + hk * P.group + g) * P.S + s) * P.Dv;
        const float *first =
            states + size_t((b * P.Hkv + hk) * chunks) * itemFloats;
        float m = -INFINITY;
        for (int64_t c = 0; c < chunks; ++c)
          m = std::max(m, first[c * itemFloats + r * stride]);
        if (!(m > -INFINITY)) { // no visible key: zeros, as portable
          std::fill(dst, dst + P.Dv, 0.0f);
          continue;
        }
        float l = 0.0f;
        std::fill(dst, dst + P.Dv, 0.0f);
        for (int64_t c = 0; c < chunks; ++c) {
          const float *sr = first + c * itemFloats + r * stride;
          if (!(sr[0] > -INFINITY))
            continue;
          const float w = chunks == 1 ? 1.0f : std::exp(sr[0] - m);
          l += sr[1] * w;
          for (int64_t d = 0; d < P.Dv; ++d)
            dst[d] += sr[kStateHead + d] * w;
        }
        const float inv = 1.0f / l;
        for (int64_t d = 0; d < P.Dv; ++d)
          dst[d] *= inv;
      }
  return Status();
}

} // namespace etllm::rt::cpu
