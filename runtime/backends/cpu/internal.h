//===- internal.h - Shared internals of the cpu kernels ---------*- C++ -*-===//
//
// Internal to runtime/backends/cpu: the AVX2 target attribute, small
// SIMD helpers, the scalar/vector math (exp, tanh, erf) shared by the
// generic, AVX2 and NEON paths, and the per-file kernel entry points.
//
//===----------------------------------------------------------------------===//
#ifndef ETLLM_BACKENDS_CPU_INTERNAL_H
#define ETLLM_BACKENDS_CPU_INTERNAL_H

#include "etllm/runtime/cpu/kernels.h"
#include "etllm/runtime/cpu/packing.h"
#include "etllm/runtime/half.h"
#include "etllm/runtime/kernel.h"
#include "etllm/runtime/kv_cache_quant.h"
#include "etllm/runtime/parallel.h"

#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#if defined(__x86_64__) || defined(__i386__)
#define ETLLM_CPU_X86 1
#include <immintrin.h>
/// Marks a function compiled for AVX2 + FMA + F16C (called only when the
/// CPU has them: see detectIsa()).
#define ETLLM_CPU_AVX2 __attribute__((target("avx2,fma,f16c")))
#else
#define ETLLM_CPU_X86 0
#endif

#if defined(__aarch64__)
#define ETLLM_CPU_ARM64 1
#include <arm_neon.h>
#else
#define ETLLM_CPU_ARM64 0
#endif

namespace etllm::rt::cpu {

/// Whether `isa` runs the AVX2 code of the kernels without a wider variant
/// (every x86 path includes AVX2, FMA and F16C).
inline bool hasAvx2(Isa isa) {
  return ETLLM_CPU_X86 && isaArch(isa) == IsaArch::X86;
}
/// Whether `isa` includes AVX-512 F/BW/DQ/VL (avx512, avx512vnni, amx).
inline bool hasAvx512(Isa isa) {
  return ETLLM_CPU_X86 && (isa == Isa::Avx512 || isa == Isa::Avx512Vnni ||
                           isa == Isa::Amx);
}
/// Whether `isa` runs the NEON code of the kernels without a dot-product
/// variant (every arm64 path includes NEON; Armv8.0 has no target
/// attribute to ask for).
inline bool hasNeon(Isa isa) {
  return ETLLM_CPU_ARM64 && isaArch(isa) == IsaArch::Arm64;
}
/// Whether the CPU has the VEX-encoded AVX-VNNI (else Isa::AvxVnni runs the
/// EVEX encoding of the same kernels).
bool hasVexVnni();

//===----------------------------------------------------------------------===//
// Errors and shapes
//===----------------------------------------------------------------------===//

/// An error prefixed with the operator name (as the portable kernels do).
inline Error kernelError(const char *op, const std::string &msg) {
  return Error(std::string(op) + ": " + msg);
}

/// The product of sizes[begin, end).
inline int64_t prodSizes(const int64_t *sizes, int begin, int end) {
  int64_t n = 1;
  for (int i = begin; i < end; ++i)
    n *= sizes[i];
  return n;
}

/// Checks that a tensor's current shape fits its storage (the check the
/// portable registry does on inputs), naming it `what`.
Status checkStorage(const char *op, const char *what, const Tensor &t);

/// Checks a linear-style call: inputs (x, weight[, bias]), all non-null,
/// and one non-null output.
Status checkLinearArgs(const char *op, const KernelArgs &a);

/// Whether a tensor is present and its current shape fits its storage (the
/// fast paths decline otherwise and the portable kernel reports the error).
bool storageOk(const Tensor *t);

/// Resizes `out` to `in`'s shape with `last` as the last dimension.
Status resizeLike(const char *op, Tensor &out, const Tensor &in, int64_t last);

/// Validates the operands of packed linear/qlinear against a weight [N, K]:
/// the input's last dimension, an optional f32 bias [N] and an f32 output.
/// Sets M, the number of input rows.
Status checkLinearOperands(const char *op, const Tensor &x, int64_t N,
                           int64_t K, const Tensor *bias, const Tensor &out,
                           int64_t &M);

/// Work (multiply-adds) below which a matrix kernel runs on the calling
/// thread: a thread-pool dispatch costs microseconds (far more when the
/// machine is oversubscribed and a worker is descheduled), more than such
/// work takes.
inline constexpr uint64_t kMinParallelWork = uint64_t(1) << 18;

/// `ctx` when `work` is worth splitting over its thread pool, else null:
/// parallelFor / parallelForTiles / defaultTile then run inline, in order.
inline const ExecContext *parallelContext(const ExecContext *ctx,
                                          uint64_t work) {
  return work >= kMinParallelWork ? ctx : nullptr;
}

/// Elements per parallel tile of the element-wise kernels (below it they
/// run on the calling thread).
inline constexpr size_t kElementwiseTile = 16384;

//===----------------------------------------------------------------------===//
// Scalar math shared by the generic paths (branch-free, so that loops over
// it auto-vectorize). The AVX2 versions below implement the same formulas.
//===----------------------------------------------------------------------===//

namespace math {

using rt::bitsToFloat;
using rt::floatToBits;

// exp: Cephes expf's polynomial on r = x - n ln2, |r| <= ln2 / 2, with
// round-to-nearest n computed by the 1.5 * 2^23 trick, and 2^n applied as
// two factors 2^(n/2) 2^(n - n/2) so that results down to the subnormal
// range (x >= -104) and up to overflow (x > 88.72 gives inf) are exact
// scalings of the polynomial.
inline constexpr float kExpLo = -104.0f, kExpHi = 88.8f;
inline constexpr float kLog2e = 1.44269504088896341f;
inline constexpr float kLn2Hi = 0.693359375f, kLn2Lo = -2.12194440e-4f;
inline constexpr float kRoundMagic = 12582912.0f; // 1.5 * 2^23
inline constexpr float kExpP0 = 1.9875691500e-4f, kExpP1 = 1.3981999507e-3f,
                       kExpP2 = 8.3334519073e-3f, kExpP3 = 4.1665795894e-2f,
                       kExpP4 = 1.6666665459e-1f, kExpP5 = 5.0000001201e-1f;

/// exp(x) to ~1 ulp; NaN propagates.
inline float expF(float x) {
  // Clamp (NaN-preserving: comparisons with NaN are false).
  x = x < kExpLo ? kExpLo : x;
  x = x > kExpHi ? kExpHi : x;
  float t = x * kLog2e + kRoundMagic;
  float n = t - kRoundMagic;
  int32_t ni = int32_t(floatToBits(t) - floatToBits(kRoundMagic));
  float r = x - n * kLn2Hi;
  r = r - n * kLn2Lo;
  float p = kExpP0;
  p = p * r + kExpP1;
  p = p * r + kExpP2;
  p = p * r + kExpP3;
  p = p * r + kExpP4;
  p = p * r + kExpP5;
  p = p * (r * r) + r + 1.0f;
  int32_t n1 = ni >> 1, n2 = ni - n1;
  float s1 = bitsToFloat(uint32_t(n1 + 127) << 23);
  float s2 = bitsToFloat(uint32_t(n2 + 127) << 23);
  return p * s1 * s2;
}

inline float sigmoidF(float x) { return 1.0f / (1.0f + expF(-x)); }

// tanh: Cephes tanhf. |x| < 0.625: x + x^3 P(x^2); else 1 - 2 / (e^2|x| + 1).
// Computed on |x|; the sign is copied back (tanh is odd, -0 stays -0).
inline constexpr float kTanhP0 = -5.70498872745e-3f,
                       kTanhP1 = 2.06390887954e-2f,
                       kTanhP2 = -5.37397155531e-2f,
                       kTanhP3 = 1.33314422036e-1f,
                       kTanhP4 = -3.33332819422e-1f;

inline float tanhF(float x) {
  uint32_t bits = floatToBits(x);
  float z = bitsToFloat(bits & 0x7fffffffu);
  float s = z * z;
  float p = kTanhP0;
  p = p * s + kTanhP1;
  p = p * s + kTanhP2;
  p = p * s + kTanhP3;
  p = p * s + kTanhP4;
  float small = z + z * (s * p);
  float large = 1.0f - 2.0f / (expF(2.0f * z) + 1.0f);
  float r = z > 0.625f ? large : small;
  return bitsToFloat(floatToBits(r) | (bits & 0x80000000u));
}

// erf: Eigen's rational approximation x P(x^2) / Q(x^2) on [-4, 4] (erf is
// 1 to f32 precision beyond).
inline constexpr float kErfA13 = -2.72614225801306e-10f,
                       kErfA11 = 2.77068142495902e-08f,
                       kErfA9 = -2.10102402082508e-06f,
                       kErfA7 = -5.69250639462346e-05f,
                       kErfA5 = -7.34990630326855e-04f,
                       kErfA3 = -2.95459980854025e-03f,
                       kErfA1 = -1.60960333262415e-02f;
inline constexpr float kErfB8 = -1.45660718464996e-05f,
                       kErfB6 = -2.13374055278905e-04f,
                       kErfB4 = -1.68282697438203e-03f,
                       kErfB2 = -7.37332916720468e-03f,
                       kErfB0 = -1.42647390514189e-02f;

inline float erfF(float x) {
  x = x < -4.0f ? -4.0f : x;
  x = x > 4.0f ? 4.0f : x;
  float x2 = x * x;
  float p = kErfA13;
  p = p * x2 + kErfA11;
  p = p * x2 + kErfA9;
  p = p * x2 + kErfA7;
  p = p * x2 + kErfA5;
  p = p * x2 + kErfA3;
  p = p * x2 + kErfA1;
  p = p * x;
  float q = kErfB8;
  q = q * x2 + kErfB6;
  q = q * x2 + kErfB4;
  q = q * x2 + kErfB2;
  q = q * x2 + kErfB0;
  return p / q;
}

inline constexpr float kSqrtHalf = 0.70710678118654752440f;
inline constexpr float kSqrt2OverPi = 0.79788456080286535588f;
inline constexpr float kGeluCubic = 0.044715f;

inline float geluErfF(float x) {
  return 0.5f * x * (1.0f + erfF(x * kSqrtHalf));
}
inline float geluTanhF(float x) {
  return 0.5f * x * (1.0f + tanhF(kSqrt2OverPi * (x + kGeluCubic * x * x * x)));
}

} // namespace math

#if ETLLM_CPU_X86
//===----------------------------------------------------------------------===//
// AVX2 helpers
//===----------------------------------------------------------------------===//

namespace avx2 {

/// A mask of the first n (0..8) 32-bit lanes, for maskload/maskstore.
ETLLM_CPU_AVX2 inline __m256i laneMask(int n) {
  const __m256i idx = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  return _mm256_cmpgt_epi32(_mm256_set1_epi32(n), idx);
}

/// [sum(v[0]), ..., sum(v[7])]: the lane sums of eight vectors.
ETLLM_CPU_AVX2 inline __m256 hsum8(__m256 v0, __m256 v1, __m256 v2, __m256 v3,
                                   __m256 v4, __m256 v5, __m256 v6, __m256 v7) {
  __m256 h01 = _mm256_hadd_ps(v0, v1), h23 = _mm256_hadd_ps(v2, v3);
  __m256 h45 = _mm256_hadd_ps(v4, v5), h67 = _mm256_hadd_ps(v6, v7);
  __m256 h0123 = _mm256_hadd_ps(h01, h23), h4567 = _mm256_hadd_ps(h45, h67);
  __m256 lo = _mm256_permute2f128_ps(h0123, h4567, 0x20);
  __m256 hi = _mm256_permute2f128_ps(h0123, h4567, 0x31);
  return _mm256_add_ps(lo, hi);
}

/// The integer version of hsum8 (exact).
ETLLM_CPU_AVX2 inline __m256i hsum8i(__m256i v0, __m256i v1, __m256i v2,
                                     __m256i v3, __m256i v4, __m256i v5,
                                     __m256i v6, __m256i v7) {
  __m256i h01 = _mm256_hadd_epi32(v0, v1), h23 = _mm256_hadd_epi32(v2, v3);
  __m256i h45 = _mm256_hadd_epi32(v4, v5), h67 = _mm256_hadd_epi32(v6, v7);
  __m256i h0123 = _mm256_hadd_epi32(h01, h23);
  __m256i h4567 = _mm256_hadd_epi32(h45, h67);
  __m256i lo = _mm256_permute2x128_si256(h0123, h4567, 0x20);
  __m256i hi = _mm256_permute2x128_si256(h0123, h4567, 0x31);
  return _mm256_add_epi32(lo, hi);
}

/// Sum of the 8 lanes.
ETLLM_CPU_AVX2 inline float hsum(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

/// Transposes the 8x8 matrix whose rows are r[0..7], in place.
ETLLM_CPU_AVX2 inline void transpose8(__m256 r[8]) {
  __m256 t0 = _mm256_unpacklo_ps(r[0], r[1]),
         t1 = _mm256_unpackhi_ps(r[0], r[1]);
  __m256 t2 = _mm256_unpacklo_ps(r[2], r[3]),
         t3 = _mm256_unpackhi_ps(r[2], r[3]);
  __m256 t4 = _mm256_unpacklo_ps(r[4], r[5]),
         t5 = _mm256_unpackhi_ps(r[4], r[5]);
  __m256 t6 = _mm256_unpacklo_ps(r[6], r[7]),
         t7 = _mm256_unpackhi_ps(r[6], r[7]);
  __m256 s0 = _mm256_shuffle_ps(t0, t2, 0x44),
         s1 = _mm256_shuffle_ps(t0, t2, 0xee);
  __m256 s2 = _mm256_shuffle_ps(t1, t3, 0x44),
         s3 = _mm256_shuffle_ps(t1, t3, 0xee);
  __m256 s4 = _mm256_shuffle_ps(t4, t6, 0x44),
         s5 = _mm256_shuffle_ps(t4, t6, 0xee);
  __m256 s6 = _mm256_shuffle_ps(t5, t7, 0x44),
         s7 = _mm256_shuffle_ps(t5, t7, 0xee);
  r[0] = _mm256_permute2f128_ps(s0, s4, 0x20);
  r[1] = _mm256_permute2f128_ps(s1, s5, 0x20);
  r[2] = _mm256_permute2f128_ps(s2, s6, 0x20);
  r[3] = _mm256_permute2f128_ps(s3, s7, 0x20);
  r[4] = _mm256_permute2f128_ps(s0, s4, 0x31);
  r[5] = _mm256_permute2f128_ps(s1, s5, 0x31);
  r[6] = _mm256_permute2f128_ps(s2, s6, 0x31);
  r[7] = _mm256_permute2f128_ps(s3, s7, 0x31);
}

/// math::expF on 8 lanes (same formula).
ETLLM_CPU_AVX2 inline __m256 exp8(__m256 x) {
  using namespace math;
  // max/min return their second operand when either is NaN: keep x second.
  x = _mm256_max_ps(_mm256_set1_ps(kExpLo), x);
  x = _mm256_min_ps(_mm256_set1_ps(kExpHi), x);
  const __m256 magic = _mm256_set1_ps(kRoundMagic);
  __m256 t = _mm256_fmadd_ps(x, _mm256_set1_ps(kLog2e), magic);
  __m256 n = _mm256_sub_ps(t, magic);
  __m256i ni =
      _mm256_sub_epi32(_mm256_castps_si256(t), _mm256_castps_si256(magic));
  __m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(kLn2Hi), x);
  r = _mm256_fnmadd_ps(n, _mm256_set1_ps(kLn2Lo), r);
  __m256 p = _mm256_set1_ps(kExpP0);
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(kExpP1));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(kExpP2));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(kExpP3));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(kExpP4));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(kExpP5));
  p = _mm256_fmadd_ps(p, _mm256_mul_ps(r, r),
                      _mm256_add_ps(r, _mm256_set1_ps(1.0f)));
  __m256i n1 = _mm256_srai_epi32(ni, 1);
  __m256i n2 = _mm256_sub_epi32(ni, n1);
  const __m256i bias = _mm256_set1_epi32(127);
  __m256 s1 =
      _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(n1, bias), 23));
  __m256 s2 =
      _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(n2, bias), 23));
  return _mm256_mul_ps(_mm256_mul_ps(p, s1), s2);
}

ETLLM_CPU_AVX2 inline __m256 sigmoid8(__m256 x) {
  const __m256 one = _mm256_set1_ps(1.0f);
  __m256 e = exp8(_mm256_sub_ps(_mm256_setzero_ps(), x));
  return _mm256_div_ps(one, _mm256_add_ps(one, e));
}

ETLLM_CPU_AVX2 inline __m256 tanh8(__m256 x) {
  using namespace math;
  const __m256 signMask =
      _mm256_castsi256_ps(_mm256_set1_epi32(int(0x80000000u)));
  __m256 sign = _mm256_and_ps(x, signMask);
  __m256 z = _mm256_andnot_ps(signMask, x);
  __m256 s = _mm256_mul_ps(z, z);
  __m256 p = _mm256_set1_ps(kTanhP0);
  p = _mm256_fmadd_ps(p, s, _mm256_set1_ps(kTanhP1));
  p = _mm256_fmadd_ps(p, s, _mm256_set1_ps(kTanhP2));
  p = _mm256_fmadd_ps(p, s, _mm256_set1_ps(kTanhP3));
  p = _mm256_fmadd_ps(p, s, _mm256_set1_ps(kTanhP4));
  __m256 small = _mm256_fmadd_ps(z, _mm256_mul_ps(s, p), z);
  const __m256 one = _mm256_set1_ps(1.0f);
  __m256 e = exp8(_mm256_add_ps(z, z));
  __m256 large = _mm256_sub_ps(
      one, _mm256_div_ps(_mm256_set1_ps(2.0f), _mm256_add_ps(e, one)));
  __m256 useLarge = _mm256_cmp_ps(z, _mm256_set1_ps(0.625f), _CMP_GT_OQ);
  __m256 r = _mm256_blendv_ps(small, large, useLarge);
  return _mm256_or_ps(r, sign);
}

ETLLM_CPU_AVX2 inline __m256 erf8(__m256 x) {
  using namespace math;
  x = _mm256_max_ps(_mm256_set1_ps(-4.0f), x);
  x = _mm256_min_ps(_mm256_set1_ps(4.0f), x);
  __m256 x2 = _mm256_mul_ps(x, x);
  __m256 p = _mm256_set1_ps(kErfA13);
  p = _mm256_fmadd_ps(p, x2, _mm256_set1_ps(kErfA11));
  p = _mm256_fmadd_ps(p, x2, _mm256_set1_ps(kErfA9));
  p = _mm256_fmadd_ps(p, x2, _mm256_set1_ps(kErfA7));
  p = _mm256_fmadd_ps(p, x2, _mm256_set1_ps(kErfA5));
  p = _mm256_fmadd_ps(p, x2, _mm256_set1_ps(kErfA3));
  p = _mm256_fmadd_ps(p, x2, _mm256_set1_ps(kErfA1));
  p = _mm256_mul_ps(p, x);
  __m256 q = _mm256_set1_ps(kErfB8);
  q = _mm256_fmadd_ps(q, x2, _mm256_set1_ps(kErfB6));
  q = _mm256_fmadd_ps(q, x2, _mm256_set1_ps(kErfB4));
  q = _mm256_fmadd_ps(q, x2, _mm256_set1_ps(kErfB2));
  q = _mm256_fmadd_ps(q, x2, _mm256_set1_ps(kErfB0));
  return _mm256_div_ps(p, q);
}

} // namespace avx2
#endif // ETLLM_CPU_X86

#if ETLLM_CPU_ARM64
//===----------------------------------------------------------------------===//
// NEON helpers: the AVX2 helpers' operations on 4 lanes (per lane the same
// IEEE operations in the same order, fused where AVX2 fuses), so that the
// NEON kernels give the AVX2 kernels' bits.
//===----------------------------------------------------------------------===//

namespace neon {

/// The first n (0..4) floats at p, the rest 0.
inline float32x4_t loadPart(const float *p, int n) {
  if (n >= 4)
    return vld1q_f32(p);
  float t[4] = {};
  if (n > 0)
    std::memcpy(t, p, size_t(n) * sizeof(float));
  return vld1q_f32(t);
}

/// Stores the first n (0..4) lanes of v at p.
inline void storePart(float *p, float32x4_t v, int n) {
  if (n >= 4) {
    vst1q_f32(p, v);
    return;
  }
  float t[4];
  vst1q_f32(t, v);
  if (n > 0)
    std::memcpy(p, t, size_t(n) * sizeof(float));
}

/// An 8-row block's result: dst[0, valid) = base + acc, base dst
/// (accumulate), else bias, else 0 (gemm.h's tiles).
inline void storeBlock(float *dst, bool accumulate, const float *bias,
                       const float32x4_t (&acc)[2], int valid) {
#pragma GCC unroll 2
  for (int h = 0; h < 2; ++h) {
    const int n = valid - 4 * h;
    if (n <= 0)
      return;
    const float32x4_t base = accumulate ? loadPart(dst + 4 * h, n)
                             : bias     ? loadPart(bias + 4 * h, n)
                                        : vdupq_n_f32(0.0f);
    storePart(dst + 4 * h, vaddq_f32(base, acc[h]), n);
  }
}

/// Sum of the 4 lanes in avx2::hsum's order: (v0 + v2) + (v1 + v3).
inline float hsum(float32x4_t v) {
  const float32x2_t h = vadd_f32(vget_low_f32(v), vget_high_f32(v));
  return vget_lane_f32(h, 0) + vget_lane_f32(h, 1);
}

/// avx2::hsum of the 8 lanes (lo, hi): (lo + hi), then as hsum.
inline float hsum8(float32x4_t lo, float32x4_t hi) {
  return hsum(vaddq_f32(lo, hi));
}

/// math::expF on 4 lanes (avx2::exp8's operations).
inline float32x4_t exp4(float32x4_t x) {
  using namespace math;
  x = vmaxq_f32(vdupq_n_f32(kExpLo), x); // NaN stays NaN
  x = vminq_f32(vdupq_n_f32(kExpHi), x);
  const float32x4_t magic = vdupq_n_f32(kRoundMagic);
  const float32x4_t t = vfmaq_f32(magic, x, vdupq_n_f32(kLog2e));
  const float32x4_t n = vsubq_f32(t, magic);
  const int32x4_t ni =
      vsubq_s32(vreinterpretq_s32_f32(t), vreinterpretq_s32_f32(magic));
  float32x4_t r = vfmsq_f32(x, n, vdupq_n_f32(kLn2Hi));
  r = vfmsq_f32(r, n, vdupq_n_f32(kLn2Lo));
  float32x4_t p = vdupq_n_f32(kExpP0);
  p = vfmaq_f32(vdupq_n_f32(kExpP1), p, r);
  p = vfmaq_f32(vdupq_n_f32(kExpP2), p, r);
  p = vfmaq_f32(vdupq_n_f32(kExpP3), p, r);
  p = vfmaq_f32(vdupq_n_f32(kExpP4), p, r);
  p = vfmaq_f32(vdupq_n_f32(kExpP5), p, r);
  p = vfmaq_f32(vaddq_f32(r, vdupq_n_f32(1.0f)), p, vmulq_f32(r, r));
  const int32x4_t n1 = vshrq_n_s32(ni, 1);
  const int32x4_t n2 = vsubq_s32(ni, n1);
  const int32x4_t bias = vdupq_n_s32(127);
  const float32x4_t s1 =
      vreinterpretq_f32_s32(vshlq_n_s32(vaddq_s32(n1, bias), 23));
  const float32x4_t s2 =
      vreinterpretq_f32_s32(vshlq_n_s32(vaddq_s32(n2, bias), 23));
  return vmulq_f32(vmulq_f32(p, s1), s2);
}

inline float32x4_t sigmoid4(float32x4_t x) {
  const float32x4_t one = vdupq_n_f32(1.0f);
  const float32x4_t e = exp4(vsubq_f32(vdupq_n_f32(0.0f), x));
  return vdivq_f32(one, vaddq_f32(one, e));
}

inline float32x4_t tanh4(float32x4_t x) {
  using namespace math;
  const uint32x4_t signMask = vdupq_n_u32(0x80000000u);
  const uint32x4_t bits = vreinterpretq_u32_f32(x);
  const uint32x4_t sign = vandq_u32(bits, signMask);
  const float32x4_t z = vreinterpretq_f32_u32(vbicq_u32(bits, signMask));
  const float32x4_t s = vmulq_f32(z, z);
  float32x4_t p = vdupq_n_f32(kTanhP0);
  p = vfmaq_f32(vdupq_n_f32(kTanhP1), p, s);
  p = vfmaq_f32(vdupq_n_f32(kTanhP2), p, s);
  p = vfmaq_f32(vdupq_n_f32(kTanhP3), p, s);
  p = vfmaq_f32(vdupq_n_f32(kTanhP4), p, s);
  const float32x4_t small = vfmaq_f32(z, z, vmulq_f32(s, p));
  const float32x4_t one = vdupq_n_f32(1.0f);
  const float32x4_t e = exp4(vaddq_f32(z, z));
  const float32x4_t large =
      vsubq_f32(one, vdivq_f32(vdupq_n_f32(2.0f), vaddq_f32(e, one)));
  const uint32x4_t useLarge = vcgtq_f32(z, vdupq_n_f32(0.625f));
  const float32x4_t r = vbslq_f32(useLarge, large, small);
  return vreinterpretq_f32_u32(vorrq_u32(vreinterpretq_u32_f32(r), sign));
}

inline float32x4_t erf4(float32x4_t x) {
  using namespace math;
  x = vmaxq_f32(vdupq_n_f32(-4.0f), x);
  x = vminq_f32(vdupq_n_f32(4.0f), x);
  const float32x4_t x2 = vmulq_f32(x, x);
  float32x4_t p = vdupq_n_f32(kErfA13);
  p = vfmaq_f32(vdupq_n_f32(kErfA11), p, x2);
  p = vfmaq_f32(vdupq_n_f32(kErfA9), p, x2);
  p = vfmaq_f32(vdupq_n_f32(kErfA7), p, x2);
  p = vfmaq_f32(vdupq_n_f32(kErfA5), p, x2);
  p = vfmaq_f32(vdupq_n_f32(kErfA3), p, x2);
  p = vfmaq_f32(vdupq_n_f32(kErfA1), p, x2);
  p = vmulq_f32(p, x);
  float32x4_t q = vdupq_n_f32(kErfB8);
  q = vfmaq_f32(vdupq_n_f32(kErfB6), q, x2);
  q = vfmaq_f32(vdupq_n_f32(kErfB4), q, x2);
  q = vfmaq_f32(vdupq_n_f32(kErfB2), q, x2);
  q = vfmaq_f32(vdupq_n_f32(kErfB0), q, x2);
  return vdivq_f32(p, q);
}

} // namespace neon
#endif // ETLLM_CPU_ARM64

//===----------------------------------------------------------------------===//
// Entry points of the kernel files (dispatched by kernels.cpp).
//===----------------------------------------------------------------------===//

/// The most positions a RopeTable holds (later ones compute their angles).
constexpr int64_t kRopeMaxPositions = int64_t(1) << 20;

/// RoPE's cos/sin of positions [0, positions) (each row: R cos, R sin),
/// built once per delegate instance from a constant inv_freq.
struct RopeTable {
  int64_t R = 0, positions = 0;
  float scaling = 1.0f;
  std::vector<float> freq, cosSin;
  Status build(const Tensor &invFreq, float attentionScaling, int64_t bound);
};

/// rope with a table (declines, handled = false, when it does not apply).
Status ropeKernel(const KernelArgs &a, Isa isa, const RopeTable *table,
                  bool &handled);
Status sdpaKernel(const KernelArgs &a, Isa isa, bool &handled);
Status kvCacheUpdateKernel(const KernelArgs &a, Isa isa, bool &handled);
Status transposeKernel(const KernelArgs &a, Isa isa, bool &handled);
Status reshapeKernel(const KernelArgs &a, Isa isa, bool &handled);
Status sliceKernel(const KernelArgs &a, Isa isa, bool &handled);
/// matmul of [B, H, S, K] by a per-head [H, K, N] weight (matmul.cpp).
Status matmulKernel(const KernelArgs &a, Isa isa, bool &handled);
/// The LoRA hook (lora.cpp).
Status loraKernel(const KernelArgs &a, Isa isa, bool &handled);

/// A LoRA hook run inside the parallel loop of the packed qlinear whose
/// output it updates, on a single row. The loop's first tasks compute each
/// hook's (x At) and coefficients (loraFusedCoefficients, one task per
/// hook, overlapping the other threads' qlinear tiles); a tile that finds
/// its hook ready adds the (x At) Bt of the columns it has just written
/// (loraFusedAddColumns), one that does not leaves them to the calling
/// thread after the loop. Every column gets exactly the operations of
/// loraKernel, in its order: the results are the same bits.
struct LoraFused {
  const LoraHookTerms *hook = nullptr; ///< null: nothing to add
  const float *x = nullptr;            ///< the hook's input row [in]
  float *t = nullptr;                  ///< per term in order, rank coefficients
  size_t floats = 0;                   ///< of t: the sum of the terms' ranks
  std::atomic<bool> ready{false};      ///< t is computed (release / acquire)
};

/// Sets up the hook `hook` of ctx's table over a qlinear with N outputs
/// and the f32 input `x` of the hook; `buf` holds `capacity` floats for the
/// coefficients. Returns whether the qlinear adds the hook (f.hook null:
/// nothing applied); false when loraKernel would not run it (several rows,
/// no AVX2, a factor type or shape it declines, a bad index, more terms
/// than `buf` holds): the lora node then runs as usual, in place.
bool loraFusedPrepare(Isa isa, const ExecContext &ctx, const Tensor &x,
                      int64_t N, int64_t hook, float *buf, size_t capacity,
                      LoraFused &f);
/// Computes f.t (x At, then the coefficients) and sets f.ready.
void loraFusedCoefficients(LoraFused &f);
/// y[n0..n1) += the prepared hook's (x At) Bt, term by term (f.t computed).
void loraFusedAddColumns(const LoraFused &f, int64_t n0, int64_t n1, float *y);
/// The scratch sdpaKernel needs (at most) on `ctx` for q [B, H, S, D],
/// values [*, Hkv, T, Dv]; `int8Kv`: key and value are int8 KV caches
/// (dequantized a block at a time into the scratch).
size_t sdpaScratchBytes(const ExecContext *ctx, int64_t B, int64_t H, int64_t S,
                        int64_t Hkv, int64_t T, int64_t D, int64_t Dv,
                        bool int8Kv);

Status quantizeDynamicKernel(const KernelArgs &a, Isa isa, bool &handled);
Status rmsNormKernel(const KernelArgs &a, Isa isa, bool &handled);
Status addKernel(const KernelArgs &a, Isa isa, bool &handled);
Status subKernel(const KernelArgs &a, Isa isa, bool &handled);
Status mulKernel(const KernelArgs &a, Isa isa, bool &handled);
Status siluKernel(const KernelArgs &a, Isa isa, bool &handled);
Status geluKernel(const KernelArgs &a, Isa isa, bool &handled);
Status sigmoidKernel(const KernelArgs &a, Isa isa, bool &handled);
Status tanhKernel(const KernelArgs &a, Isa isa, bool &handled);
Status reluKernel(const KernelArgs &a, Isa isa, bool &handled);

/// Tensors the attention kernels take (attention.cpp, sdpa.cpp).
inline int64_t loadPos(const Tensor &p, int64_t i) {
  return p.dtype == DType::I64 ? p.ptr<int64_t>()[i]
                               : int64_t(p.ptr<int32_t>()[i]);
}
inline bool isPositions(const Tensor *t) {
  return storageOk(t) && t->rank == 1 &&
         (t->dtype == DType::I64 || t->dtype == DType::I32);
}
inline bool isF32Rank4(const Tensor *t) {
  return storageOk(t) && t->dtype == DType::F32 && t->rank == 4;
}
/// An int8 KV cache [B, Hkv, T, D] (kv_cache_quant.h) with its bytes.
inline bool isInt8KvCache(const Tensor *t) {
  return storageOk(t) && t->dtype == DType::QAct && t->rank == 4 &&
         isInt8KvCacheQuant(t->quant);
}

} // namespace etllm::rt::cpu

#endif // ETLLM_BACKENDS_CPU_INTERNAL_H
