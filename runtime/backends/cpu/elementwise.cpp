//===- elementwise.cpp - Unary, binary and rms_norm fast paths ------------===//
//
// f32 only (the compiler delegates f32 activations); anything else declines
// to the portable kernel.
//
//  * relu, add, sub, mul: one IEEE operation per element, bit-identical to
//    portable. Binary fast paths: equal shapes, or one operand broadcast
//    along rows ([..., K] op [K], either side, the small operand's other
//    dimensions 1), or a one-element operand; other broadcasts decline.
//  * sigmoid, silu, tanh, gelu: portable's formulas with exp/tanh/erf
//    replaced by the polynomial approximations of internal.h (a few ulp;
//    results below ~1e-38 in magnitude may differ by that much absolutely).
//  * rms_norm: the sum of squares in f64 (exact products, reassociated sum),
//    then portable's f32 operations: identical unless float(ss / D) rounds
//    differently, i.e. to within 1 ulp of the normalized value.
//
//===----------------------------------------------------------------------===//
#include "internal.h"

#include <algorithm>

namespace etllm::rt::cpu {
namespace {

//===----------------------------------------------------------------------===//
// Unary
//===----------------------------------------------------------------------===//

enum class Unary { Sigmoid, Silu, Tanh, Relu, GeluErf, GeluTanh };

template <Unary U> inline float unaryScalar(float x) {
  if constexpr (U == Unary::Sigmoid)
    return math::sigmoidF(x);
  else if constexpr (U == Unary::Silu)
    return x * math::sigmoidF(x);
  else if constexpr (U == Unary::Tanh)
    return math::tanhF(x);
  else if constexpr (U == Unary::Relu)
    return x < 0.0f ? 0.0f : x;
  else if constexpr (U == Unary::GeluErf)
    return math::geluErfF(x);
  else
    return math::geluTanhF(x);
}

template <Unary U> void unaryGeneric(const float *x, float *y, size_t n) {
  for (size_t i = 0; i < n; ++i)
    y[i] = unaryScalar<U>(x[i]);
}

#if ETLLM_CPU_X86
template <Unary U> ETLLM_CPU_AVX2 inline __m256 unary8(__m256 x) {
  if constexpr (U == Unary::Sigmoid) {
    return avx2::sigmoid8(x);
  } else if constexpr (U == Unary::Silu) {
    return _mm256_mul_ps(x, avx2::sigmoid8(x));
  } else if constexpr (U == Unary::Tanh) {
    return avx2::tanh8(x);
  } else if constexpr (U == Unary::Relu) {
    // max returns its second operand for NaN: NaN stays NaN, -0 stays -0.
    return _mm256_max_ps(_mm256_setzero_ps(), x);
  } else if constexpr (U == Unary::GeluErf) {
    const __m256 half = _mm256_set1_ps(0.5f), one = _mm256_set1_ps(1.0f);
    __m256 e = avx2::erf8(_mm256_mul_ps(x, _mm256_set1_ps(math::kSqrtHalf)));
    return _mm256_mul_ps(_mm256_mul_ps(half, x), _mm256_add_ps(one, e));
  } else {
    const __m256 half = _mm256_set1_ps(0.5f), one = _mm256_set1_ps(1.0f);
    __m256 x3 =
        _mm256_mul_ps(_mm256_mul_ps(_mm256_set1_ps(math::kGeluCubic), x),
                      _mm256_mul_ps(x, x));
    __m256 t = avx2::tanh8(_mm256_mul_ps(_mm256_set1_ps(math::kSqrt2OverPi),
                                         _mm256_add_ps(x, x3)));
    return _mm256_mul_ps(_mm256_mul_ps(half, x), _mm256_add_ps(one, t));
  }
}

template <Unary U>
ETLLM_CPU_AVX2 void unaryAvx2(const float *x, float *y, size_t n) {
  size_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm256_storeu_ps(y + i, unary8<U>(_mm256_loadu_ps(x + i)));
  if (i < n) {
    __m256i m = avx2::laneMask(int(n - i));
    _mm256_maskstore_ps(y + i, m, unary8<U>(_mm256_maskload_ps(x + i, m)));
  }
}
#endif

#if ETLLM_CPU_ARM64
/// unary8's operations on 4 lanes.
template <Unary U> inline float32x4_t unary4(float32x4_t x) {
  if constexpr (U == Unary::Sigmoid) {
    return neon::sigmoid4(x);
  } else if constexpr (U == Unary::Silu) {
    return vmulq_f32(x, neon::sigmoid4(x));
  } else if constexpr (U == Unary::Tanh) {
    return neon::tanh4(x);
  } else if constexpr (U == Unary::Relu) {
    // As unary8 (and portable): x < 0 ? 0 : x, so NaN and -0 stay.
    return vbslq_f32(vcltq_f32(x, vdupq_n_f32(0.0f)), vdupq_n_f32(0.0f), x);
  } else if constexpr (U == Unary::GeluErf) {
    const float32x4_t half = vdupq_n_f32(0.5f), one = vdupq_n_f32(1.0f);
    const float32x4_t e =
        neon::erf4(vmulq_f32(x, vdupq_n_f32(math::kSqrtHalf)));
    return vmulq_f32(vmulq_f32(half, x), vaddq_f32(one, e));
  } else {
    const float32x4_t half = vdupq_n_f32(0.5f), one = vdupq_n_f32(1.0f);
    const float32x4_t x3 =
        vmulq_f32(vmulq_f32(vdupq_n_f32(math::kGeluCubic), x), vmulq_f32(x, x));
    const float32x4_t t = neon::tanh4(
        vmulq_f32(vdupq_n_f32(math::kSqrt2OverPi), vaddq_f32(x, x3)));
    return vmulq_f32(vmulq_f32(half, x), vaddq_f32(one, t));
  }
}

template <Unary U> void unaryNeon(const float *x, float *y, size_t n) {
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    vst1q_f32(y + i, unary4<U>(vld1q_f32(x + i)));
    vst1q_f32(y + i + 4, unary4<U>(vld1q_f32(x + i + 4)));
  }
  for (; i < n; i += 4) {
    const int r = int(std::min<size_t>(4, n - i));
    neon::storePart(y + i, unary4<U>(neon::loadPart(x + i, r)), r);
  }
}
#endif

template <Unary U>
Status unaryKernel(const char *op, const KernelArgs &a, Isa isa,
                   bool &handled) {
  handled = false;
  if (a.inputs.size != 1 || a.outputs.size != 1 || !storageOk(a.inputs[0]) ||
      !a.outputs[0])
    return Status();
  const Tensor &in = *a.inputs[0];
  Tensor &out = *a.outputs[0];
  if (in.dtype != DType::F32 || out.dtype != DType::F32)
    return Status();
  handled = true;
  ETLLM_RETURN_IF_ERROR(resizeLike(op, out, in, in.rank ? in.dim(-1) : 0));
  const size_t n = size_t(in.numel());
  const float *x = in.ptr<float>();
  float *y = out.ptr<float>();
  parallelForTiles(a.ctx, n, kElementwiseTile, [&](size_t b, size_t e) {
#if ETLLM_CPU_X86
    if (hasAvx2(isa))
      return unaryAvx2<U>(x + b, y + b, e - b);
#endif
#if ETLLM_CPU_ARM64
    if (hasNeon(isa))
      return unaryNeon<U>(x + b, y + b, e - b);
#endif
    unaryGeneric<U>(x + b, y + b, e - b);
  });
  return Status();
}

//===----------------------------------------------------------------------===//
// Binary
//===----------------------------------------------------------------------===//

enum class Bin { Add, Sub, Mul };

template <Bin B> inline float binScalar(float x, float y) {
  if constexpr (B == Bin::Add)
    return x + y;
  else if constexpr (B == Bin::Sub)
    return x - y;
  else
    return x * y;
}

/// out[i] = a[i] op b[i*sa] for i < n (sa 0 or 1), or, with Swap,
/// b[i*sa] op a[i].
template <Bin B, bool Swap>
void binaryGeneric(const float *a, const float *b, size_t sb, float *o,
                   size_t n) {
  if (sb) {
    for (size_t i = 0; i < n; ++i)
      o[i] = Swap ? binScalar<B>(b[i], a[i]) : binScalar<B>(a[i], b[i]);
  } else {
    const float s = b[0];
    for (size_t i = 0; i < n; ++i)
      o[i] = Swap ? binScalar<B>(s, a[i]) : binScalar<B>(a[i], s);
  }
}

#if ETLLM_CPU_X86
template <Bin B> ETLLM_CPU_AVX2 inline __m256 bin8(__m256 x, __m256 y) {
  if constexpr (B == Bin::Add)
    return _mm256_add_ps(x, y);
  else if constexpr (B == Bin::Sub)
    return _mm256_sub_ps(x, y);
  else
    return _mm256_mul_ps(x, y);
}

template <Bin B, bool Swap>
ETLLM_CPU_AVX2 void binaryAvx2(const float *a, const float *b, size_t sb,
                               float *o, size_t n) {
  size_t i = 0;
  const __m256 s = _mm256_set1_ps(b[0]);
  for (; i + 8 <= n; i += 8) {
    __m256 va = _mm256_loadu_ps(a + i);
    __m256 vb = sb ? _mm256_loadu_ps(b + i) : s;
    _mm256_storeu_ps(o + i, Swap ? bin8<B>(vb, va) : bin8<B>(va, vb));
  }
  for (; i < n; ++i) {
    float bv = sb ? b[i] : b[0];
    o[i] = Swap ? binScalar<B>(bv, a[i]) : binScalar<B>(a[i], bv);
  }
}
#endif

template <Bin B, bool Swap>
void binaryRun(Isa isa, const float *a, const float *b, size_t sb, float *o,
               size_t n) {
#if ETLLM_CPU_X86
  if (hasAvx2(isa))
    return binaryAvx2<B, Swap>(a, b, sb, o, n);
#endif
  binaryGeneric<B, Swap>(a, b, sb, o, n);
}

/// How `small` broadcasts into `big` on a fast path: 0 no, 1 row (its last
/// dimension equals big's, the others are 1), 2 one element.
int broadcastKind(const Tensor &big, const Tensor &small) {
  if (small.rank > big.rank)
    return 0;
  for (int i = 0; i + 1 < small.rank; ++i)
    if (small.sizes[i] != 1)
      return 0;
  if (small.numel() == 1)
    return 2;
  if (small.rank >= 1 && big.rank >= 1 && small.dim(-1) == big.dim(-1))
    return 1;
  return 0;
}

bool sameShape(const Tensor &a, const Tensor &b) {
  if (a.rank != b.rank)
    return false;
  for (int i = 0; i < a.rank; ++i)
    if (a.sizes[i] != b.sizes[i])
      return false;
  return true;
}

template <Bin B>
Status binaryKernel(const char *op, const KernelArgs &a, Isa isa,
                    bool &handled) {
  handled = false;
  if (a.inputs.size != 2 || a.outputs.size != 1 || !storageOk(a.inputs[0]) ||
      !storageOk(a.inputs[1]) || !a.outputs[0])
    return Status();
  const Tensor &x = *a.inputs[0], &y = *a.inputs[1];
  Tensor &out = *a.outputs[0];
  if (x.dtype != DType::F32 || y.dtype != DType::F32 || out.dtype != DType::F32)
    return Status();
  // 0: same shape; 1: y broadcast into x; 2: x broadcast into y.
  int mode;
  int kind = 0;
  if (sameShape(x, y))
    mode = 0;
  else if ((kind = broadcastKind(x, y)) != 0)
    mode = 1;
  else if ((kind = broadcastKind(y, x)) != 0)
    mode = 2;
  else
    return Status();
  handled = true;
  const Tensor &big = mode == 2 ? y : x;
  ETLLM_RETURN_IF_ERROR(resizeLike(op, out, big, big.rank ? big.dim(-1) : 0));
  const size_t n = size_t(big.numel());
  if (n == 0)
    return Status();
  const float *pb = big.ptr<float>();
  const float *ps = (mode == 2 ? x : y).ptr<float>();
  float *po = out.ptr<float>();
  if (mode == 0) {
    parallelForTiles(a.ctx, n, kElementwiseTile, [&](size_t b, size_t e) {
      binaryRun<B, false>(isa, pb + b, ps + b, 1, po + b, e - b);
    });
    return Status();
  }
  // Broadcast: rows of K (kind 1) or a single element (kind 2).
  const size_t K = kind == 1 ? size_t(big.dim(-1)) : n;
  const size_t rows = n / K;
  const size_t rowTile = std::max<size_t>(1, kElementwiseTile / K);
  parallelForTiles(a.ctx, rows, rowTile, [&](size_t b, size_t e) {
    for (size_t r = b; r < e; ++r) {
      if (mode == 1)
        binaryRun<B, false>(isa, pb + r * K, ps, kind == 1, po + r * K, K);
      else
        binaryRun<B, true>(isa, pb + r * K, ps, kind == 1, po + r * K, K);
    }
  });
  return Status();
}

//===----------------------------------------------------------------------===//
// rms_norm
//===----------------------------------------------------------------------===//

double sumSquaresGeneric(const float *x, int64_t n) {
  double s[4] = {0, 0, 0, 0};
  int64_t i = 0;
  for (; i + 4 <= n; i += 4)
    for (int j = 0; j < 4; ++j)
      s[j] += double(x[i + j]) * double(x[i + j]);
  for (; i < n; ++i)
    s[0] += double(x[i]) * double(x[i]);
  return (s[0] + s[1]) + (s[2] + s[3]);
}

void scaleRowGeneric(const float *x, const float *w, float offset, float inv,
                     float *y, int64_t n) {
  if (w) {
    for (int64_t i = 0; i < n; ++i)
      y[i] = (x[i] * inv) * (w[i] + offset);
  } else {
    for (int64_t i = 0; i < n; ++i)
      y[i] = x[i] * inv;
  }
}

#if ETLLM_CPU_X86
ETLLM_CPU_AVX2 double sumSquaresAvx2(const float *x, int64_t n) {
  __m256d s0 = _mm256_setzero_pd(), s1 = _mm256_setzero_pd();
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    __m256d a = _mm256_cvtps_pd(_mm_loadu_ps(x + i));
    __m256d b = _mm256_cvtps_pd(_mm_loadu_ps(x + i + 4));
    // Products of f32 values are exact in f64: fma == mul + add here.
    s0 = _mm256_fmadd_pd(a, a, s0);
    s1 = _mm256_fmadd_pd(b, b, s1);
  }
  __m256d s = _mm256_add_pd(s0, s1);
  __m128d h =
      _mm_add_pd(_mm256_castpd256_pd128(s), _mm256_extractf128_pd(s, 1));
  double r = _mm_cvtsd_f64(_mm_add_sd(h, _mm_unpackhi_pd(h, h)));
  for (; i < n; ++i)
    r += double(x[i]) * double(x[i]);
  return r;
}

ETLLM_CPU_AVX2 void scaleRowAvx2(const float *x, const float *w, float offset,
                                 float inv, float *y, int64_t n) {
  const __m256 vi = _mm256_set1_ps(inv), vo = _mm256_set1_ps(offset);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    __m256 h = _mm256_mul_ps(_mm256_loadu_ps(x + i), vi);
    if (w)
      h = _mm256_mul_ps(h, _mm256_add_ps(_mm256_loadu_ps(w + i), vo));
    _mm256_storeu_ps(y + i, h);
  }
  for (; i < n; ++i)
    y[i] = w ? (x[i] * inv) * (w[i] + offset) : x[i] * inv;
}
#endif

#if ETLLM_CPU_ARM64
/// sumSquaresAvx2's sums: per lane of its two 4-double accumulators (here
/// eight 2-double halves), then its reduction order.
double sumSquaresNeon(const float *x, int64_t n) {
  float64x2_t s0a = vdupq_n_f64(0), s0b = s0a, s1a = s0a, s1b = s0a;
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const float32x4_t lo = vld1q_f32(x + i), hi = vld1q_f32(x + i + 4);
    const float64x2_t a0 = vcvt_f64_f32(vget_low_f32(lo));
    const float64x2_t a1 = vcvt_high_f64_f32(lo);
    const float64x2_t b0 = vcvt_f64_f32(vget_low_f32(hi));
    const float64x2_t b1 = vcvt_high_f64_f32(hi);
    s0a = vfmaq_f64(s0a, a0, a0);
    s0b = vfmaq_f64(s0b, a1, a1);
    s1a = vfmaq_f64(s1a, b0, b0);
    s1b = vfmaq_f64(s1b, b1, b1);
  }
  // s = s0 + s1 (lanes 0-1, 2-3), h = s[0:2] + s[2:4], r = h0 + h1.
  const float64x2_t h = vaddq_f64(vaddq_f64(s0a, s1a), vaddq_f64(s0b, s1b));
  double r = vgetq_lane_f64(h, 0) + vgetq_lane_f64(h, 1);
  for (; i < n; ++i)
    r += double(x[i]) * double(x[i]);
  return r;
}

void scaleRowNeon(const float *x, const float *w, float offset, float inv,
                  float *y, int64_t n) {
  const float32x4_t vi = vdupq_n_f32(inv), vo = vdupq_n_f32(offset);
  int64_t i = 0;
  for (; i + 4 <= n; i += 4) {
    float32x4_t h = vmulq_f32(vld1q_f32(x + i), vi);
    if (w)
      h = vmulq_f32(h, vaddq_f32(vld1q_f32(w + i), vo));
    vst1q_f32(y + i, h);
  }
  for (; i < n; ++i)
    y[i] = w ? (x[i] * inv) * (w[i] + offset) : x[i] * inv;
}
#endif

double sumSquares(Isa isa, const float *x, int64_t n) {
#if ETLLM_CPU_X86
  if (hasAvx2(isa))
    return sumSquaresAvx2(x, n);
#endif
#if ETLLM_CPU_ARM64
  if (hasNeon(isa))
    return sumSquaresNeon(x, n);
#endif
  return sumSquaresGeneric(x, n);
}

void scaleRow(Isa isa, const float *x, const float *w, float offset, float inv,
              float *y, int64_t n) {
#if ETLLM_CPU_X86
  if (hasAvx2(isa))
    return scaleRowAvx2(x, w, offset, inv, y, n);
#endif
#if ETLLM_CPU_ARM64
  if (hasNeon(isa))
    return scaleRowNeon(x, w, offset, inv, y, n);
#endif
  scaleRowGeneric(x, w, offset, inv, y, n);
}

} // namespace

Status rmsNormKernel(const KernelArgs &a, Isa isa, bool &handled) {
  const char *op = opName(OpId::RmsNorm);
  handled = false;
  if (a.inputs.size < 1 || a.inputs.size > 2 || a.outputs.size != 1 ||
      a.floats.size != 2 || !a.floats.data || !storageOk(a.inputs[0]) ||
      !a.outputs[0])
    return Status();
  const Tensor &x = *a.inputs[0];
  const Tensor *w = a.inputs.size > 1 ? a.inputs[1] : nullptr;
  Tensor &out = *a.outputs[0];
  if (x.dtype != DType::F32 || out.dtype != DType::F32 || x.rank < 1)
    return Status();
  const int64_t D = x.dim(-1);
  if (w && (!storageOk(w) || w->dtype != DType::F32 || w->rank != 1 ||
            w->sizes[0] != D))
    return Status();
  handled = true;
  ETLLM_RETURN_IF_ERROR(resizeLike(op, out, x, D));
  const int64_t rows = prodSizes(x.sizes, 0, x.rank - 1);
  if (rows == 0 || D == 0)
    return Status();
  const float eps = float(a.floats[0]), offset = float(a.floats[1]);
  const float *px = x.ptr<float>();
  const float *pw = w ? w->ptr<float>() : nullptr;
  float *py = out.ptr<float>();
  const size_t rowTile =
      std::max<size_t>(1, kElementwiseTile / size_t(std::max<int64_t>(D, 1)));
  parallelForTiles(a.ctx, size_t(rows), rowTile, [&](size_t b, size_t e) {
    for (size_t r = b; r < e; ++r) {
      const float *xr = px + int64_t(r) * D;
      float *yr = py + int64_t(r) * D;
      const float ms = float(sumSquares(isa, xr, D) / double(D));
      const float inv = 1.0f / std::sqrt(ms + eps);
      scaleRow(isa, xr, pw, offset, inv, yr, D);
    }
  });
  return Status();
}

Status addKernel(const KernelArgs &a, Isa isa, bool &handled) {
  return binaryKernel<Bin::Add>(opName(OpId::Add), a, isa, handled);
}
Status subKernel(const KernelArgs &a, Isa isa, bool &handled) {
  return binaryKernel<Bin::Sub>(opName(OpId::Sub), a, isa, handled);
}
Status mulKernel(const KernelArgs &a, Isa isa, bool &handled) {
  return binaryKernel<Bin::Mul>(opName(OpId::Mul), a, isa, handled);
}
Status siluKernel(const KernelArgs &a, Isa isa, bool &handled) {
  return unaryKernel<Unary::Silu>(opName(OpId::Silu), a, isa, handled);
}
Status sigmoidKernel(const KernelArgs &a, Isa isa, bool &handled) {
  return unaryKernel<Unary::Sigmoid>(opName(OpId::Sigmoid), a, isa, handled);
}
Status tanhKernel(const KernelArgs &a, Isa isa, bool &handled) {
  return unaryKernel<Unary::Tanh>(opName(OpId::Tanh), a, isa, handled);
}
Status reluKernel(const KernelArgs &a, Isa isa, bool &handled) {
  return unaryKernel<Unary::Relu>(opName(OpId::Relu), a, isa, handled);
}
Status geluKernel(const KernelArgs &a, Isa isa, bool &handled) {
  handled = false;
  if (a.ints.size != 1 || !a.ints.data)
    return Status();
  if (a.ints[0] == 0)
    return unaryKernel<Unary::GeluErf>(opName(OpId::Gelu), a, isa, handled);
  if (a.ints[0] == 1)
    return unaryKernel<Unary::GeluTanh>(opName(OpId::Gelu), a, isa, handled);
  return Status(); // the portable kernel reports the bad attribute
}

} // namespace etllm::rt::cpu
