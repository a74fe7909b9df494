//===- qweight.h - Read access to block-quantized weights -------*- C++ -*-===//
//
// Internal to runtime/kernels/portable: a validated view of a QWeight
// (QWeightLayout, tensor.h) that dequantizes one row at a time, shared by
// qlinear, qembedding, dequantize (quant.cpp) and moe (moe.cpp), so every
// kernel reads a quantized row exactly as `dequantize` does.
//
//===----------------------------------------------------------------------===//
#ifndef ETLLM_KERNELS_PORTABLE_QWEIGHT_H
#define ETLLM_KERNELS_PORTABLE_QWEIGHT_H

#include "common.h"

#include "etllm/runtime/ggml_blocks.h"
#include "etllm/runtime/quant_param.h"

namespace etllm::rt::portable {

/// Read access to a validated QWeight.
struct QWeightView {
  QWeightLayout l;
  QuantInfo q;
  const uint8_t *base = nullptr;

  float param(size_t off, int64_t i) const {
    return loadQuantParam(base + off, size_t(i), q.scaleType);
  }

  /// Dequantizes row r (l.cols values) into dst.
  void dequantRow(int64_t r, float *dst) const {
    if (q.scheme != QScheme::Affine) {
      // A GGUF's blocks, dequantized as ggml's reference does.
      const int64_t bv = ggml::blockValues(q.scheme);
      const size_t bb = size_t(ggml::blockBytes(q.scheme));
      for (int64_t g = 0; g < l.groups; ++g)
        ggml::dequantBlock(q.scheme, base + size_t(r * l.groups + g) * bb,
                           dst + g * bv);
      return;
    }
    const int64_t K = l.cols, gs = q.groupSize;
    for (int64_t g = 0; g < l.groups; ++g) {
      const float s = param(l.scalesOff, r * l.groups + g);
      const int64_t k0 = g * gs, k1 = k0 + gs;
      if (q.bits == 8) {
        const uint8_t *row = base + size_t(r * K);
        if (q.symmetric) {
          for (int64_t k = k0; k < k1; ++k)
            dst[k] = s * float(int8_t(row[k]));
        } else {
          const float o = param(l.offsetsOff, r * l.groups + g);
          for (int64_t k = k0; k < k1; ++k)
            dst[k] = s * float(row[k]) + o;
        }
      } else {
        // Rows start on a byte boundary (K is even).
        const uint8_t *row = base + size_t(r * K) / 2;
        if (q.symmetric) {
          for (int64_t k = k0; k < k1; ++k) {
            int u = (k & 1) ? row[k / 2] >> 4 : row[k / 2] & 0xf;
            dst[k] = s * float(u - 8);
          }
        } else {
          const float o = param(l.offsetsOff, r * l.groups + g);
          for (int64_t k = k0; k < k1; ++k) {
            int u = (k & 1) ? row[k / 2] >> 4 : row[k / 2] & 0xf;
            dst[k] = s * float(u) + o;
          }
        }
      }
    }
  }
};

inline Status makeQWeightView(const char *op, const Tensor &w, QWeightView &v) {
  if (w.dtype != DType::QWeight)
    return opError(op, std::string("expected a qweight, got ") +
                           dtypeName(w.dtype));
  if (w.rank < 1)
    return opError(op, "quantized weight must have rank >= 1");
  const int64_t cols = w.dim(-1), rows = prod(w.sizes, 0, w.rank - 1);
  Result<QWeightLayout> l = QWeightLayout::compute(rows, cols, w.quant);
  if (!l.ok())
    return opError(op, l.message());
  if (l->totalBytes > w.capacity)
    return opError(op, "quantized weight " + w.shapeString() +
                           " does not fit its storage");
  v.l = *l;
  v.q = w.quant;
  v.base = w.ptr<uint8_t>();
  return Status();
}

} // namespace etllm::rt::portable

#endif // ETLLM_KERNELS_PORTABLE_QWEIGHT_H
