//===- kv_cache_quant.h - The int8 KV cache's layout, rounding --*- C++ -*-===//
//
// A quantized KV cache is a QAct [B, Hkv, T, D] (the compiler's
// !etllm.qact<[B, Hkv, T, D], i8, per_token, sym>) in QActLayout's per-token
// layout: one row of D int8 values, one f32 scale and one (zero) int32 zero
// point per token of each head; x ~= scale * q. The program loader, the
// portable kernels and the cpu backend all read it through this header,
// so that what the loader accepts is what the kernels handle, and the
// backends quantize a written row with the same function (the same bits).
//
//===----------------------------------------------------------------------===//
#ifndef ETLLM_RUNTIME_KV_CACHE_QUANT_H
#define ETLLM_RUNTIME_KV_CACHE_QUANT_H

#include "etllm/runtime/qact_params.h"
#include "etllm/runtime/tensor.h"

#include <algorithm>
#include <cmath>
#include <cstdint>

namespace etllm::rt {

/// The quantization of an int8 KV cache: 8 bits, symmetric, f32 scales,
/// one scale per row (token), no groups.
inline QuantInfo int8KvCacheQuant() {
  QuantInfo q;
  q.bits = 8;
  q.symmetric = true;
  q.scaleType = DType::F32;
  q.groupSize = 0;
  q.perToken = true;
  q.scheme = QScheme::Affine;
  return q;
}

/// Whether `q` is int8KvCacheQuant().
inline bool isInt8KvCacheQuant(const QuantInfo &q) {
  return q.bits == 8 && q.symmetric && q.scaleType == DType::F32 &&
         q.groupSize == 0 && q.perToken && q.scheme == QScheme::Affine;
}

/// The sections of a quantized cache `t` (rank 4, isInt8KvCacheQuant): row
/// r = (b * Hkv + h) * T + j holds token j of head h of batch b.
struct Int8KvCacheRows {
  int8_t *q = nullptr;     ///< rows * D values, row r at r * D
  float *scales = nullptr; ///< one per row
  int32_t *zps = nullptr;  ///< one per row, always 0
  int64_t rows = 0, cols = 0;

  static Int8KvCacheRows of(const Tensor &t) {
    Int8KvCacheRows r;
    r.cols = t.sizes[3];
    r.rows = t.sizes[0] * t.sizes[1] * t.sizes[2];
    const QActLayout l = QActLayout::compute(r.rows, r.cols);
    uint8_t *base = static_cast<uint8_t *>(t.data);
    r.q = reinterpret_cast<int8_t *>(base);
    r.scales = reinterpret_cast<float *>(base + l.scalesOff);
    r.zps = reinterpret_cast<int32_t *>(base + l.zpOff);
    return r;
  }
};

/// Quantizes the n values load(0), ..., load(n - 1) (f32) of one cache row
/// into q[0, n) and returns its scale: amax / 127 (1 when the row is all
/// zero), q = roundClamp(x / scale, -127, 127). The same values as
/// quantize_dynamic per token, symmetric. Readers never divide by a scale,
/// so a zeroed row (scale 0) reads as zeros.
template <typename Load>
inline float quantizeInt8KvRow(const Load &load, int64_t n, int8_t *q) {
  float amax = 0.0f;
  for (int64_t i = 0; i < n; ++i)
    amax = std::max(amax, std::fabs(load(i))); // a NaN is passed over
  float scale;
  int32_t zp;
  qactParamsFromRange(/*symmetric=*/true, 0.0f, 0.0f, amax, scale, zp);
  for (int64_t i = 0; i < n; ++i)
    q[i] = int8_t(roundClamp(load(i) / scale, -127, 127));
  return scale;
}

} // namespace etllm::rt

#endif // ETLLM_RUNTIME_KV_CACHE_QUANT_H
