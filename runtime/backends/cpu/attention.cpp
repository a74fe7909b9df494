//===- attention.cpp - RoPE, the cache update and head transposes ---------===//
//
// The attention block of a decoder layer inside the delegate, but SDPA
// (sdpa.cpp):
//
//  * rope: the cos/sin table of positions [0, bound) is computed once at
//    init (RopeTable, bound = the positions' upper bound, max_seq_len) with
//    portable's expressions (cos(p * f) * scaling, f32), and the rotation
//    uses separate products and sums as portable does: bit-identical.
//    Positions beyond the table are computed on the fly the same way.
//  * kv_cache_update: row copies into the cache, in place; into an int8
//    cache, each row quantized by portable's function (the same bytes).
//  * transpose of dims 1 and 2 of rank-4 tensors (the head layout changes),
//    reshape and slice (step 1; the last position before lm_head): copies
//    (the delegate's values have their own storage).
//
// Every other form declines to the portable kernel (runDense).
//
//===----------------------------------------------------------------------===//
#include "internal.h"

#include "etllm/runtime/kv_cache_quant.h"
#include "etllm/runtime/slice_bounds.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

namespace etllm::rt::cpu {

namespace {

/// cos/sin of one position, as portable computes them.
void ropeAngles(const float *freq, int64_t R, float scaling, int64_t p,
                float *c, float *s) {
  const float pf = float(p);
  for (int64_t i = 0; i < R; ++i) {
    const float angle = pf * freq[i];
    c[i] = std::cos(angle) * scaling;
    s[i] = std::sin(angle) * scaling;
  }
}

} // namespace

//===----------------------------------------------------------------------===//
// RoPE
//===----------------------------------------------------------------------===//

Status RopeTable::build(const Tensor &invFreq, float attentionScaling,
                        int64_t bound) {
  if (invFreq.dtype != DType::F32 || invFreq.rank != 1 || !invFreq.data)
    return Error("rope: inv_freq must be a 1-D f32 constant");
  R = invFreq.sizes[0];
  scaling = attentionScaling;
  positions = std::min<int64_t>(bound, kRopeMaxPositions);
  freq.assign(invFreq.ptr<float>(), invFreq.ptr<float>() + R);
  cosSin.assign(size_t(positions) * size_t(R) * 2, 0.0f);
  for (int64_t p = 0; p < positions; ++p)
    ropeAngles(freq.data(), R, scaling, p, cosSin.data() + p * 2 * R,
               cosSin.data() + p * 2 * R + R);
  return Status();
}

namespace {

/// deinterleave_rotate_half: pair (2i, 2i + 1) of x rotated into (i, i + R)
/// of y, staged in `row` (2R floats) so that y may be x; as portable.
void rotateRowDeinterleave(const float *x, float *y, const float *c,
                           const float *s, int64_t R, int64_t D, float *row) {
  for (int64_t i = 0; i < R; ++i) {
    const float x1 = x[2 * i], x2 = x[2 * i + 1];
    row[i] = x1 * c[i] - x2 * s[i];
    row[i + R] = x2 * c[i] + x1 * s[i];
  }
  std::memcpy(y, row, size_t(2 * R) * sizeof(float));
  if (x != y)
    for (int64_t i = 2 * R; i < D; ++i)
      y[i] = x[i];
}

/// out[i1], out[i2] = x1 c - x2 s, x2 c + x1 s for the R pairs of one row.
void rotateRowGeneric(const float *x, float *y, const float *c, const float *s,
                      int64_t R, int64_t D, bool interleaved) {
  for (int64_t i = 0; i < R; ++i) {
    const int64_t i1 = interleaved ? 2 * i : i;
    const int64_t i2 = interleaved ? 2 * i + 1 : i + R;
    const float x1 = x[i1], x2 = x[i2];
    y[i1] = x1 * c[i] - x2 * s[i];
    y[i2] = x2 * c[i] + x1 * s[i];
  }
  if (x != y)
    for (int64_t i = 2 * R; i < D; ++i)
      y[i] = x[i];
}

#if ETLLM_CPU_X86
/// rotateRowGeneric for rotate_half with R % 8 == 0: the same products and
/// sums (no FMA), so the same bits.
ETLLM_CPU_AVX2 void rotateHalfAvx2(const float *x, float *y, const float *c,
                                   const float *s, int64_t R, int64_t D) {
  for (int64_t i = 0; i < R; i += 8) {
    const __m256 x1 = _mm256_loadu_ps(x + i), x2 = _mm256_loadu_ps(x + R + i);
    const __m256 cv = _mm256_loadu_ps(c + i), sv = _mm256_loadu_ps(s + i);
    _mm256_storeu_ps(
        y + i, _mm256_sub_ps(_mm256_mul_ps(x1, cv), _mm256_mul_ps(x2, sv)));
    _mm256_storeu_ps(
        y + R + i, _mm256_add_ps(_mm256_mul_ps(x2, cv), _mm256_mul_ps(x1, sv)));
  }
  if (x != y)
    for (int64_t i = 2 * R; i < D; ++i)
      y[i] = x[i];
}
#endif

#if ETLLM_CPU_ARM64
/// rotateHalfAvx2 with 4 lanes (R % 4 == 0): the same bits.
void rotateHalfNeon(const float *x, float *y, const float *c, const float *s,
                    int64_t R, int64_t D) {
  for (int64_t i = 0; i < R; i += 4) {
    const float32x4_t x1 = vld1q_f32(x + i), x2 = vld1q_f32(x + R + i);
    const float32x4_t cv = vld1q_f32(c + i), sv = vld1q_f32(s + i);
    vst1q_f32(y + i, vsubq_f32(vmulq_f32(x1, cv), vmulq_f32(x2, sv)));
    vst1q_f32(y + R + i, vaddq_f32(vmulq_f32(x2, cv), vmulq_f32(x1, sv)));
  }
  if (x != y)
    for (int64_t i = 2 * R; i < D; ++i)
      y[i] = x[i];
}
#endif

} // namespace

Status ropeKernel(const KernelArgs &a, Isa isa, const RopeTable *table,
                  bool &handled) {
  handled = false;
  if (!table || a.inputs.size != 3 || a.outputs.size != 1 ||
      !isF32Rank4(a.inputs[0]) || !isPositions(a.inputs[1]) || !a.outputs[0] ||
      a.outputs[0]->dtype != DType::F32 || a.ints.size != 1 ||
      a.floats.size != 1)
    return Status();
  const Tensor &x = *a.inputs[0], &pos = *a.inputs[1];
  Tensor &out = *a.outputs[0];
  const int64_t B = x.sizes[0], H = x.sizes[1], S = x.sizes[2], D = x.sizes[3];
  const int64_t R = table->R;
  const bool interleaved = a.ints[0] == 1, deinterleave = a.ints[0] == 2;
  if (pos.sizes[0] != S || 2 * R > D || a.ints[0] < 0 || a.ints[0] > 2 ||
      float(a.floats[0]) != table->scaling || (deinterleave && R > 512))
    return Status();
  for (int64_t s = 0; s < S; ++s)
    if (loadPos(pos, s) < 0)
      return Status(); // portable reports it
  handled = true;
  ETLLM_RETURN_IF_ERROR(out.resize(x.sizes, 4));
  float extra[2 * 512], row[2 * 512];
  const bool avx = hasAvx2(isa) && !interleaved && !deinterleave && R % 8 == 0;
  const bool neon = hasNeon(isa) && !interleaved && !deinterleave && R % 4 == 0;
  for (int64_t s = 0; s < S; ++s) {
    const int64_t p = loadPos(pos, s);
    const float *c, *sn;
    if (p < table->positions) {
      c = table->cosSin.data() + p * 2 * R;
      sn = c + R;
    } else if (R <= 512) {
      ropeAngles(table->freq.data(), R, table->scaling, p, extra, extra + R);
      c = extra;
      sn = extra + R;
    } else {
      handled = false; // a huge head beyond the table: portable
      return Status();
    }
    for (int64_t bh = 0; bh < B * H; ++bh) {
      const float *px = x.ptr<float>() + (bh * S + s) * D;
      float *py = out.ptr<float>() + (bh * S + s) * D;
#if ETLLM_CPU_X86
      if (avx) {
        rotateHalfAvx2(px, py, c, sn, R, D);
        continue;
      }
#endif
#if ETLLM_CPU_ARM64
      if (neon) {
        rotateHalfNeon(px, py, c, sn, R, D);
        continue;
      }
#endif
      if (deinterleave)
        rotateRowDeinterleave(px, py, c, sn, R, D, row);
      else
        rotateRowGeneric(px, py, c, sn, R, D, interleaved);
    }
  }
  (void)avx;
  (void)neon;
  return Status();
}

//===----------------------------------------------------------------------===//
// kv_cache_update, transpose, reshape
//===----------------------------------------------------------------------===//

namespace {

/// Whether `v` [B, H, S, D] and the positions [S] fit the cache [B, H, T, D]
/// with every position in [0, T); otherwise the portable kernel reports it.
bool updateFits(const Tensor &cache, const Tensor &pos, const Tensor &v) {
  const int64_t T = cache.sizes[2], S = v.sizes[2];
  if (v.sizes[0] != cache.sizes[0] || v.sizes[1] != cache.sizes[1] ||
      v.sizes[3] != cache.sizes[3] || pos.sizes[0] != S)
    return false;
  for (int64_t s = 0; s < S; ++s) {
    const int64_t p = loadPos(pos, s);
    if (p < 0 || p >= T)
      return false;
  }
  return true;
}

/// kv_cache_update of the cache input 0 [B, H, T, D] by the f32 rows of
/// input 2 [B, H, S, D] at the positions input 1 along dim 2, into output 0
/// (in place or after a copy of the cache): declines (handled false) what
/// portable must report (shapes, positions out of range). `rowWriter(out)`
/// gives the function that stores a source row of D floats as row r
/// (b * H + h) * T + position of the output.
template <typename RowWriter>
Status updateCacheRows(const KernelArgs &a, bool &handled,
                       RowWriter rowWriter) {
  const Tensor &cache = *a.inputs[0], &pos = *a.inputs[1], &v = *a.inputs[2];
  Tensor &out = *a.outputs[0];
  if (!updateFits(cache, pos, v))
    return Status();
  const int64_t B = cache.sizes[0], H = cache.sizes[1], T = cache.sizes[2],
                D = cache.sizes[3], S = v.sizes[2];
  handled = true;
  const size_t bytes = cache.nbytes();
  ETLLM_RETURN_IF_ERROR(out.resize(cache.sizes, 4));
  if (out.data != cache.data) // not in place: out = cache first
    std::memmove(out.data, cache.data, bytes);
  const auto writeRow = rowWriter(out);
  for (int64_t bh = 0; bh < B * H; ++bh)
    for (int64_t s = 0; s < S; ++s)
      writeRow(bh * T + loadPos(pos, s), v.ptr<float>() + (bh * S + s) * D, D);
  return Status();
}

/// kv_cache_update of an int8 cache by f32 rows along dim 2 (-2), each row
/// quantized with portable's quantizeInt8KvRow.
Status int8KvCacheUpdate(const KernelArgs &a, bool &handled) {
  if (!isInt8KvCache(a.inputs[0]) || !isPositions(a.inputs[1]) ||
      !isF32Rank4(a.inputs[2]) || !a.outputs[0] ||
      a.outputs[0]->dtype != DType::QAct ||
      !isInt8KvCacheQuant(a.outputs[0]->quant) ||
      (a.ints[0] != 2 && a.ints[0] != -2))
    return Status();
  return updateCacheRows(a, handled, [](Tensor &out) {
    const Int8KvCacheRows c = Int8KvCacheRows::of(out);
    return [c](int64_t r, const float *src, int64_t D) {
      c.scales[r] = quantizeInt8KvRow([src](int64_t i) { return src[i]; }, D,
                                      c.q + r * D);
      c.zps[r] = 0;
    };
  });
}

} // namespace

Status kvCacheUpdateKernel(const KernelArgs &a, Isa, bool &handled) {
  handled = false;
  if (a.inputs.size == 3 && a.outputs.size == 1 && a.ints.size == 1 &&
      a.inputs[0] && a.inputs[0]->dtype == DType::QAct)
    return int8KvCacheUpdate(a, handled);
  if (a.inputs.size != 3 || a.outputs.size != 1 || a.ints.size != 1 ||
      !isF32Rank4(a.inputs[0]) || !isPositions(a.inputs[1]) ||
      !isF32Rank4(a.inputs[2]) || !a.outputs[0] ||
      a.outputs[0]->dtype != DType::F32 || a.ints[0] != 2)
    return Status();
  return updateCacheRows(a, handled, [](Tensor &out) {
    float *y = out.ptr<float>();
    return [y](int64_t r, const float *src, int64_t D) {
      std::memcpy(y + r * D, src, size_t(D) * 4);
    };
  });
}

Status transposeKernel(const KernelArgs &a, Isa, bool &handled) {
  handled = false;
  if (a.inputs.size != 1 || a.outputs.size != 1 || a.ints.size != 2 ||
      !isF32Rank4(a.inputs[0]) || !a.outputs[0] ||
      a.outputs[0]->dtype != DType::F32)
    return Status();
  const int64_t d0 = std::min(a.ints[0], a.ints[1]),
                d1 = std::max(a.ints[0], a.ints[1]);
  if (!(d0 == 1 && d1 == 2) && !(d0 == -3 && d1 == -2))
    return Status();
  const Tensor &x = *a.inputs[0];
  Tensor &out = *a.outputs[0];
  const int64_t B = x.sizes[0], P = x.sizes[1], Q = x.sizes[2], D = x.sizes[3];
  if (x.data == out.data && P != 1 && Q != 1)
    return Status();
  handled = true;
  const int64_t shape[4] = {B, Q, P, D};
  ETLLM_RETURN_IF_ERROR(out.resize(shape, 4));
  if (x.data == out.data) // a size-1 dimension: the same bytes
    return Status();
  for (int64_t b = 0; b < B; ++b)
    for (int64_t p = 0; p < P; ++p)
      for (int64_t q = 0; q < Q; ++q)
        std::memcpy(out.ptr<float>() + ((b * Q + q) * P + p) * D,
                    x.ptr<float>() + ((b * P + p) * Q + q) * D, size_t(D) * 4);
  return Status();
}

Status sliceKernel(const KernelArgs &a, Isa, bool &handled) {
  handled = false;
  if (a.inputs.size != 1 || a.outputs.size != 1 || a.ints.size != 4 ||
      !storageOk(a.inputs[0]) || !a.outputs[0] ||
      a.inputs[0]->dtype != DType::F32 || a.outputs[0]->dtype != DType::F32 ||
      a.ints[3] != 1 || a.inputs[0]->rank < 1)
    return Status();
  const Tensor &x = *a.inputs[0];
  Tensor &out = *a.outputs[0];
  int64_t d = a.ints[0];
  if (d < 0)
    d += x.rank;
  if (d < 0 || d >= x.rank || x.data == out.data)
    return Status();
  handled = true;
  // PyTorch clamping, as portable.
  const int64_t size = x.sizes[d];
  int64_t start = a.ints[1], end = a.ints[2];
  clampSliceBounds(size, start, end);
  const int64_t len = end > start ? end - start : 0;
  int64_t shape[kMaxRank];
  for (int i = 0; i < x.rank; ++i)
    shape[i] = x.sizes[i];
  shape[d] = len;
  ETLLM_RETURN_IF_ERROR(out.resize(shape, x.rank));
  const int64_t outer = prodSizes(x.sizes, 0, int(d)),
                inner = prodSizes(x.sizes, int(d) + 1, x.rank);
  for (int64_t o = 0; o < outer; ++o)
    std::memcpy(out.ptr<float>() + o * len * inner,
                x.ptr<float>() + (o * size + start) * inner,
                size_t(len * inner) * 4);
  return Status();
}

Status reshapeKernel(const KernelArgs &a, Isa, bool &handled) {
  handled = false;
  if (a.inputs.size != 1 || a.outputs.size != 1 || !storageOk(a.inputs[0]) ||
      !a.outputs[0] || a.inputs[0]->dtype != DType::F32 ||
      a.outputs[0]->dtype != DType::F32 || a.ints.size > size_t(kMaxRank))
    return Status();
  const Tensor &x = *a.inputs[0];
  Tensor &out = *a.outputs[0];
  int64_t shape[kMaxRank];
  int inferred = -1;
  int64_t known = 1;
  for (size_t i = 0; i < a.ints.size; ++i) {
    const int64_t s = a.ints[i];
    if (s == -1 && inferred < 0) {
      inferred = int(i);
      continue;
    }
    if (s < 0 || s > (int64_t(1) << 40))
      return Status(); // portable reports it
    shape[i] = s;
    known *= s;
  }
  const int64_t n = x.numel();
  if (inferred >= 0) {
    if (known == 0 || n % known)
      return Status();
    shape[inferred] = n / known;
  } else if (known != n) {
    return Status();
  }
  handled = true;
  ETLLM_RETURN_IF_ERROR(out.resize(shape, int(a.ints.size)));
  if (out.data != x.data)
    std::memcpy(out.data, x.data, size_t(n) * 4);
  return Status();
}

} // namespace etllm::rt::cpu
