//===- quantize.cpp - quantize_dynamic, per token -------------------------===//
//
// Bit-identical to the portable kernel: the same min/max (NaN ignored, 0
// included), the same f32 scale and zero point (qactParamsFromRange, the
// code portable calls), a true division x / scale per element and round-
// to-nearest-even. Two equivalences make the vector loops simple:
//  * clamping x / scale to [-1024, 1024] before rounding changes nothing:
//    |zp| <= 128 and the result is clamped to [-128, 127] anyway;
//  * on that range, (v + 1.5 * 2^23) - 1.5 * 2^23 is nearbyint(v) (the
//    generic path's rounding; AVX2 uses vroundps, NEON frintn).
// NaN quantizes to 0 + zp, as in roundClamp (qact_params.h).
//
// Per block (symmetric, 32 values, llama.cpp's Q8_0): scale = amax / 127 of
// the block (the same division as portable), q = nearbyint(x / scale)
// clamped to [-127, 127], NaN -> 0, and the block's sum of q.
//
// Per-tensor activations and non-f32 inputs decline to portable.
//
//===----------------------------------------------------------------------===//
#include "internal.h"

#include "etllm/runtime/qact_params.h"
#include "etllm/runtime/tensor.h"

#include <algorithm>

namespace etllm::rt::cpu {
namespace {

/// Folds x[k, K) into a row's running minimum, maximum and largest
/// magnitude in element order, the generic path's arithmetic: every path
/// ends its row with it, so all of them give the same range (std::min/max
/// semantics: a NaN leaves the running value).
inline void rangeOf(const float *x, int64_t k, int64_t K, float &mn, float &mx,
                    float &amax) {
  for (; k < K; ++k) {
    const float v = x[k];
    mn = v < mn ? v : mn;
    mx = mx < v ? v : mx;
    const float av = std::fabs(v);
    amax = amax < av ? av : amax;
  }
}

void quantizeRowGeneric(const float *x, int64_t K, bool sym, int8_t *q,
                        float &scaleOut, int32_t &zpOut) {
  float mn = 0.0f, mx = 0.0f, amax = 0.0f;
  rangeOf(x, 0, K, mn, mx, amax);
  float scale;
  int32_t zp;
  qactParamsFromRange(sym, mn, mx, amax, scale, zp);
  scaleOut = scale;
  zpOut = zp;
  const float lo = sym ? -127.0f : -128.0f;
  const float magic = 12582912.0f; // 1.5 * 2^23
  const float zpf = float(zp);
  for (int64_t k = 0; k < K; ++k) {
    float v = x[k] / scale;
    v = v < -1024.0f ? -1024.0f : v;
    v = v > 1024.0f ? 1024.0f : v;
    float r = (v + magic) - magic;
    r = r == r ? r : 0.0f; // NaN -> 0
    float t = r + zpf;     // exact: small integers
    t = t < lo ? lo : t;
    t = t > 127.0f ? 127.0f : t;
    q[k] = int8_t(int32_t(t));
  }
}

/// One block of n <= 32 values, as portable: q (32, the tail 0), the scale
/// and the sum of q.
void quantizeBlockGeneric(const float *x, int64_t n, int8_t *q, float &scaleOut,
                          int32_t &sumOut) {
  float amax = 0.0f;
  for (int64_t k = 0; k < n; ++k) {
    const float av = std::fabs(x[k]);
    amax = amax < av ? av : amax;
  }
  float scale;
  int32_t zp;
  qactParamsFromRange(true, 0.0f, 0.0f, amax, scale, zp);
  scaleOut = scale;
  int32_t sum = 0;
  for (int64_t k = 0; k < kQActBlock; ++k) {
    const int32_t v = k < n ? roundClamp(x[k] / scale, -127, 127) : 0;
    q[k] = int8_t(v);
    sum += v;
  }
  sumOut = sum;
}

#if ETLLM_CPU_X86
/// The constants of one row's quantization.
struct Quant8 {
  __m256 scale, lim, nlim;
  __m256i zp, qlo, qhi;
};

ETLLM_CPU_AVX2 inline Quant8 makeQuant8(float scale, int32_t zp, bool sym) {
  Quant8 p;
  p.scale = _mm256_set1_ps(scale);
  p.lim = _mm256_set1_ps(1024.0f);
  p.nlim = _mm256_set1_ps(-1024.0f);
  p.zp = _mm256_set1_epi32(zp);
  p.qlo = _mm256_set1_epi32(sym ? -127 : -128);
  p.qhi = _mm256_set1_epi32(127);
  return p;
}

/// Quantizes 8 values to int32 lanes in [-128, 127].
ETLLM_CPU_AVX2 inline __m256i quant8(const Quant8 &p, __m256 v) {
  v = _mm256_div_ps(v, p.scale);
  v = _mm256_round_ps(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  v = _mm256_and_ps(v, _mm256_cmp_ps(v, v, _CMP_ORD_Q)); // NaN -> 0
  v = _mm256_min_ps(_mm256_max_ps(v, p.nlim), p.lim);
  __m256i r = _mm256_add_epi32(_mm256_cvtps_epi32(v), p.zp);
  return _mm256_min_epi32(_mm256_max_epi32(r, p.qlo), p.qhi);
}

ETLLM_CPU_AVX2 void quantizeRowAvx2(const float *x, int64_t K, bool sym,
                                    int8_t *q, float &scaleOut,
                                    int32_t &zpOut) {
  const __m256 absMask = _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff));
  // Four running minima, maxima and absolute maxima (one chain each waited
  // on the max latency: half of the kernel's time on Sapphire Rapids),
  // merged at the end; min and max are exact, so the order does not matter.
  __m256 cmn[4], cmx[4], cam[4];
  for (int c = 0; c < 4; ++c)
    cmn[c] = cmx[c] = cam[c] = _mm256_setzero_ps();
  int64_t k = 0;
  for (; k + 32 <= K; k += 32)
#pragma GCC unroll 4
    for (int c = 0; c < 4; ++c) {
      const __m256 v = _mm256_loadu_ps(x + k + 8 * c);
      // min/max return the second operand when the first is NaN: the
      // running value survives a NaN element, as with std::min(running, v).
      cmn[c] = _mm256_min_ps(v, cmn[c]);
      cmx[c] = _mm256_max_ps(v, cmx[c]);
      cam[c] = _mm256_max_ps(_mm256_and_ps(v, absMask), cam[c]);
    }
  for (; k + 8 <= K; k += 8) {
    const __m256 v = _mm256_loadu_ps(x + k);
    cmn[0] = _mm256_min_ps(v, cmn[0]);
    cmx[0] = _mm256_max_ps(v, cmx[0]);
    cam[0] = _mm256_max_ps(_mm256_and_ps(v, absMask), cam[0]);
  }
  // (The running values hold no NaN: each started at 0.)
  const __m256 vmn = _mm256_min_ps(_mm256_min_ps(cmn[0], cmn[1]),
                                   _mm256_min_ps(cmn[2], cmn[3]));
  const __m256 vmx = _mm256_max_ps(_mm256_max_ps(cmx[0], cmx[1]),
                                   _mm256_max_ps(cmx[2], cmx[3]));
  const __m256 vam = _mm256_max_ps(_mm256_max_ps(cam[0], cam[1]),
                                   _mm256_max_ps(cam[2], cam[3]));
  alignas(32) float lmn[8], lmx[8], lam[8];
  _mm256_store_ps(lmn, vmn);
  _mm256_store_ps(lmx, vmx);
  _mm256_store_ps(lam, vam);
  float mn = 0.0f, mx = 0.0f, amax = 0.0f;
  for (int i = 0; i < 8; ++i) {
    mn = lmn[i] < mn ? lmn[i] : mn;
    mx = mx < lmx[i] ? lmx[i] : mx;
    amax = amax < lam[i] ? lam[i] : amax;
  }
  rangeOf(x, k, K, mn, mx, amax);
  float scale;
  int32_t zp;
  qactParamsFromRange(sym, mn, mx, amax, scale, zp);
  scaleOut = scale;
  zpOut = zp;
  const Quant8 qp = makeQuant8(scale, zp, sym);
  k = 0;
  for (; k + 32 <= K; k += 32) {
    __m256i a = quant8(qp, _mm256_loadu_ps(x + k));
    __m256i b = quant8(qp, _mm256_loadu_ps(x + k + 8));
    __m256i c = quant8(qp, _mm256_loadu_ps(x + k + 16));
    __m256i d = quant8(qp, _mm256_loadu_ps(x + k + 24));
    // packs work per 128-bit lane: [a0-3 b0-3 c0-3 d0-3 | a4-7 b4-7 c4-7
    // d4-7] as 32-bit groups; the permutation restores a, b, c, d order.
    __m256i ab = _mm256_packs_epi32(a, b);
    __m256i cd = _mm256_packs_epi32(c, d);
    __m256i abcd = _mm256_packs_epi16(ab, cd);
    abcd = _mm256_permutevar8x32_epi32(
        abcd, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
    _mm256_storeu_si256(reinterpret_cast<__m256i *>(q + k), abcd);
  }
  for (; k + 8 <= K; k += 8) {
    alignas(32) int32_t tmp[8];
    _mm256_store_si256(reinterpret_cast<__m256i *>(tmp),
                       quant8(qp, _mm256_loadu_ps(x + k)));
    for (int i = 0; i < 8; ++i)
      q[k + i] = int8_t(tmp[i]);
  }
  if (k < K) {
    __m256i m = avx2::laneMask(int(K - k));
    alignas(32) int32_t tmp[8];
    _mm256_store_si256(reinterpret_cast<__m256i *>(tmp),
                       quant8(qp, _mm256_maskload_ps(x + k, m)));
    for (int64_t i = 0; i < K - k; ++i)
      q[k + i] = int8_t(tmp[i]);
  }
}

/// One block of n <= 32 values: q (32, the tail 0), its scale and sum.
ETLLM_CPU_AVX2 void quantizeBlockAvx2(const float *x, int64_t n, int8_t *q,
                                      float &scaleOut, int32_t &sumOut) {
  __m256 v[4];
  const __m256 absMask = _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff));
  __m256 vam = _mm256_setzero_ps();
  for (int j = 0; j < 4; ++j) {
    const int64_t left = n - 8 * j;
    v[j] = left >= 8  ? _mm256_loadu_ps(x + 8 * j)
           : left > 0 ? _mm256_maskload_ps(x + 8 * j, avx2::laneMask(int(left)))
                      : _mm256_setzero_ps();
    // max returns its second operand when the first is NaN: NaN ignored.
    vam = _mm256_max_ps(_mm256_and_ps(v[j], absMask), vam);
  }
  alignas(32) float lam[8];
  _mm256_store_ps(lam, vam);
  float amax = 0.0f;
  for (int i = 0; i < 8; ++i)
    amax = amax < lam[i] ? lam[i] : amax;
  float scale;
  int32_t zp;
  qactParamsFromRange(true, 0.0f, 0.0f, amax, scale, zp);
  scaleOut = scale;
  const __m256 vs = _mm256_set1_ps(scale);
  const __m256 lo = _mm256_set1_ps(-127.0f), hi = _mm256_set1_ps(127.0f);
  __m256i r[4];
  for (int j = 0; j < 4; ++j) {
    __m256 t = _mm256_div_ps(v[j], vs);
    t = _mm256_round_ps(t, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    t = _mm256_and_ps(t, _mm256_cmp_ps(t, t, _CMP_ORD_Q)); // NaN -> 0
    t = _mm256_min_ps(_mm256_max_ps(t, lo), hi);
    r[j] = _mm256_cvtps_epi32(t);
  }
  __m256i s = _mm256_add_epi32(_mm256_add_epi32(r[0], r[1]),
                               _mm256_add_epi32(r[2], r[3]));
  __m128i s4 =
      _mm_add_epi32(_mm256_castsi256_si128(s), _mm256_extracti128_si256(s, 1));
  s4 = _mm_add_epi32(s4, _mm_shuffle_epi32(s4, 0x4e));
  s4 = _mm_add_epi32(s4, _mm_shuffle_epi32(s4, 0xb1));
  sumOut = _mm_cvtsi128_si32(s4);
  __m256i ab = _mm256_packs_epi32(r[0], r[1]);
  __m256i cd = _mm256_packs_epi32(r[2], r[3]);
  __m256i abcd = _mm256_packs_epi16(ab, cd);
  abcd = _mm256_permutevar8x32_epi32(abcd,
                                     _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
  _mm256_storeu_si256(reinterpret_cast<__m256i *>(q), abcd);
}
#endif

#if ETLLM_CPU_ARM64
/// 4 values divided by the scale, rounded to nearest even (FRINTN), NaN ->
/// 0, clamped to [-1024, 1024], plus zp and clamped to [qlo, 127]: quant8's
/// steps.
inline int32x4_t quant4(float32x4_t v, float32x4_t scale, int32x4_t zp,
                        int32x4_t qlo) {
  v = vrndnq_f32(vdivq_f32(v, scale));
  v = vbslq_f32(vceqq_f32(v, v), v, vdupq_n_f32(0.0f)); // NaN -> 0
  v = vminq_f32(vmaxq_f32(v, vdupq_n_f32(-1024.0f)), vdupq_n_f32(1024.0f));
  const int32x4_t r = vaddq_s32(vcvtq_s32_f32(v), zp);
  return vminq_s32(vmaxq_s32(r, qlo), vdupq_n_s32(127));
}

/// 16 int32 lanes in [-128, 127] as bytes.
inline int8x16_t narrow16(int32x4_t a, int32x4_t b, int32x4_t c, int32x4_t d) {
  return vcombine_s8(vqmovn_s16(vcombine_s16(vqmovn_s32(a), vqmovn_s32(b))),
                     vqmovn_s16(vcombine_s16(vqmovn_s32(c), vqmovn_s32(d))));
}

void quantizeRowNeon(const float *x, int64_t K, bool sym, int8_t *q,
                     float &scaleOut, int32_t &zpOut) {
  // FMINNM/FMAXNM pass over a NaN element, as std::min(running, v) does.
  float32x4_t vmn = vdupq_n_f32(0.0f), vmx = vmn, vam = vmn;
  int64_t k = 0;
  for (; k + 4 <= K; k += 4) {
    const float32x4_t v = vld1q_f32(x + k);
    vmn = vminnmq_f32(v, vmn);
    vmx = vmaxnmq_f32(v, vmx);
    vam = vmaxnmq_f32(vabsq_f32(v), vam);
  }
  float mn = vminnmvq_f32(vmn), mx = vmaxnmvq_f32(vmx),
        amax = vmaxnmvq_f32(vam);
  // The generic loop keeps its +0 start unless a value is below (above) it:
  // a -0 element must not make mn -0.
  mn = mn < 0.0f ? mn : 0.0f;
  mx = mx > 0.0f ? mx : 0.0f;
  rangeOf(x, k, K, mn, mx, amax);
  float scale;
  int32_t zp;
  qactParamsFromRange(sym, mn, mx, amax, scale, zp);
  scaleOut = scale;
  zpOut = zp;
  const float32x4_t vs = vdupq_n_f32(scale);
  const int32x4_t vz = vdupq_n_s32(zp), qlo = vdupq_n_s32(sym ? -127 : -128);
  k = 0;
  for (; k + 16 <= K; k += 16)
    vst1q_s8(q + k, narrow16(quant4(vld1q_f32(x + k), vs, vz, qlo),
                             quant4(vld1q_f32(x + k + 4), vs, vz, qlo),
                             quant4(vld1q_f32(x + k + 8), vs, vz, qlo),
                             quant4(vld1q_f32(x + k + 12), vs, vz, qlo)));
  for (; k < K; k += 4) {
    const int n = int(std::min<int64_t>(4, K - k));
    int32_t t[4];
    vst1q_s32(t, quant4(neon::loadPart(x + k, n), vs, vz, qlo));
    for (int i = 0; i < n; ++i)
      q[k + i] = int8_t(t[i]);
  }
}

/// One block of n <= 32 values: q (32, the tail 0), its scale and sum.
void quantizeBlockNeon(const float *x, int64_t n, int8_t *q, float &scaleOut,
                       int32_t &sumOut) {
  float32x4_t v[8];
  float32x4_t vam = vdupq_n_f32(0.0f);
  for (int j = 0; j < 8; ++j) {
    v[j] = neon::loadPart(x + 4 * j, int(std::max<int64_t>(0, n - 4 * j)));
    vam = vmaxnmq_f32(vabsq_f32(v[j]), vam); // NaN ignored
  }
  const float amax = vmaxnmvq_f32(vam);
  float scale;
  int32_t zp;
  qactParamsFromRange(true, 0.0f, 0.0f, amax, scale, zp);
  scaleOut = scale;
  const float32x4_t vs = vdupq_n_f32(scale);
  const int32x4_t z = vdupq_n_s32(0), qlo = vdupq_n_s32(-127);
  int32x4_t r[8];
  int32x4_t sum = z;
  for (int j = 0; j < 8; ++j) {
    r[j] = quant4(v[j], vs, z, qlo);
    sum = vaddq_s32(sum, r[j]);
  }
  sumOut = vaddvq_s32(sum);
  vst1q_s8(q, narrow16(r[0], r[1], r[2], r[3]));
  vst1q_s8(q + 16, narrow16(r[4], r[5], r[6], r[7]));
}
#endif

void quantizeRow(Isa isa, const float *x, int64_t K, bool sym, int8_t *q,
                 float &scale, int32_t &zp) {
#if ETLLM_CPU_X86
  if (hasAvx2(isa))
    return quantizeRowAvx2(x, K, sym, q, scale, zp);
#endif
#if ETLLM_CPU_ARM64
  if (hasNeon(isa))
    return quantizeRowNeon(x, K, sym, q, scale, zp);
#endif
  quantizeRowGeneric(x, K, sym, q, scale, zp);
}

void quantizeBlock(Isa isa, const float *x, int64_t n, int8_t *q, float &scale,
                   int32_t &sum) {
#if ETLLM_CPU_X86
  if (hasAvx2(isa))
    return quantizeBlockAvx2(x, n, q, scale, sum);
#endif
#if ETLLM_CPU_ARM64
  if (hasNeon(isa))
    return quantizeBlockNeon(x, n, q, scale, sum);
#endif
  quantizeBlockGeneric(x, n, q, scale, sum);
}

} // namespace

Status quantizeDynamicKernel(const KernelArgs &a, Isa isa, bool &handled) {
  const char *op = opName(OpId::QuantizeDynamic);
  handled = false;
  if (a.inputs.size != 1 || a.outputs.size != 1 || !storageOk(a.inputs[0]) ||
      !a.outputs[0])
    return Status();
  const Tensor &x = *a.inputs[0];
  Tensor &out = *a.outputs[0];
  const bool perBlock = out.quant.groupSize == kQActBlock;
  if (x.dtype != DType::F32 || out.dtype != DType::QAct || x.rank < 1 ||
      !out.quant.perToken || (out.quant.bits != 0 && out.quant.bits != 8) ||
      (out.quant.groupSize != 0 && (!perBlock || !out.quant.symmetric)))
    return Status();
  handled = true;
  const int64_t K = x.dim(-1), R = prodSizes(x.sizes, 0, x.rank - 1);
  ETLLM_RETURN_IF_ERROR(resizeLike(op, out, x, K));
  if (K == 0 || R == 0)
    return Status();
  const bool sym = out.quant.symmetric;
  const QActLayout l = QActLayout::compute(R, K, out.quant);
  uint8_t *base = out.ptr<uint8_t>();
  int8_t *qs = reinterpret_cast<int8_t *>(base);
  float *scales = reinterpret_cast<float *>(base + l.scalesOff);
  const float *px = x.ptr<float>();
  const size_t rowTile =
      std::max<size_t>(1, kElementwiseTile / size_t(std::max<int64_t>(K, 1)));
  if (perBlock) {
    int32_t *sums = reinterpret_cast<int32_t *>(base + l.sumsOff);
    parallelForTiles(a.ctx, size_t(R), rowTile, [&](size_t b, size_t e) {
      for (size_t r = b; r < e; ++r)
        for (int64_t blk = 0; blk < l.blocks; ++blk) {
          const float *src = px + int64_t(r) * K + blk * kQActBlock;
          const int64_t n = std::min<int64_t>(kQActBlock, K - blk * kQActBlock);
          int8_t *dst = qs + int64_t(r) * l.rowStride + blk * kQActBlock;
          const size_t slot = r * size_t(l.blocks) + size_t(blk);
          quantizeBlock(isa, src, n, dst, scales[slot], sums[slot]);
        }
    });
    return Status();
  }
  int32_t *zps = reinterpret_cast<int32_t *>(base + l.zpOff);
  parallelForTiles(a.ctx, size_t(R), rowTile, [&](size_t b, size_t e) {
    for (size_t r = b; r < e; ++r) {
      float scale;
      int32_t zp;
      quantizeRow(isa, px + int64_t(r) * K, K, sym, qs + int64_t(r) * K, scale,
                  zp);
      scales[r] = scale;
      zps[r] = zp;
    }
  });
  return Status();
}

} // namespace etllm::rt::cpu
