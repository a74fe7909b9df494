//===- packing.cpp - Weight layouts of the optimized CPU kernels ----------===//
#include "etllm/runtime/xnnpack/packing.h"

#include "etllm/runtime/half.h"

#include <cstring>

namespace etllm::rt::xnnpack {

Result<PackedQWeightLayout> PackedQWeightLayout::compute(int64_t n, int64_t k,
                                                         const QuantInfo &q) {
  Result<QWeightLayout> plain = QWeightLayout::compute(n, k, q);
  if (!plain.ok())
    return plain.error();
  PackedQWeightLayout l;
  l.n = n;
  l.k = k;
  l.bits = q.bits;
  l.symmetric = q.symmetric;
  l.groupSize = q.groupSize;
  l.groups = k / q.groupSize;
  l.rowBlocks = (n + kNR - 1) / kNR;
  l.groupBytes = q.bits == 8 ? size_t(q.groupSize) : size_t(q.groupSize) / 2;
  if (q.bits == 4 && q.groupSize % 2)
    return Error("4-bit groups must have an even size");
  size_t slots = size_t(l.rowBlocks) * l.groups * kNR;
  l.qdataOff = 0;
  l.scalesOff = alignUp(slots * l.groupBytes, kQuantSectionAlign);
  size_t end = l.scalesOff + slots * 4;
  if (!q.symmetric) {
    l.offsetsOff = alignUp(end, kQuantSectionAlign);
    end = l.offsetsOff + slots * 4;
  }
  l.sumsOff = alignUp(end, kQuantSectionAlign);
  l.totalBytes = l.sumsOff + slots * 4;
  return l;
}

static float loadScale(const uint8_t *p, int64_t i, DType t) {
  if (t == DType::F16) {
    uint16_t h;
    std::memcpy(&h, p + 2 * i, 2);
    return halfToFloat(h);
  }
  float f;
  std::memcpy(&f, p + 4 * i, 4);
  return f;
}

Result<std::vector<uint8_t>> packQWeight(const uint8_t *blob, size_t size,
                                         int64_t rows, int64_t cols,
                                         const QuantInfo &q) {
  Result<QWeightLayout> plain = QWeightLayout::compute(rows, cols, q);
  if (!plain.ok())
    return plain.error();
  if (size < plain->totalBytes)
    return Error("quantized weight blob has " + std::to_string(size) +
                 " bytes, needs " + std::to_string(plain->totalBytes));
  Result<PackedQWeightLayout> packed =
      PackedQWeightLayout::compute(rows, cols, q);
  if (!packed.ok())
    return packed.error();
  const PackedQWeightLayout &l = *packed;
  std::vector<uint8_t> out(l.totalBytes, 0);
  size_t rowBytes = q.bits == 8 ? size_t(cols) : size_t(cols) / 2;
  for (int64_t rb = 0; rb < l.rowBlocks; ++rb)
    for (int64_t g = 0; g < l.groups; ++g)
      for (int64_t r = 0; r < kNR; ++r) {
        size_t slot = (size_t(rb) * l.groups + g) * kNR + r;
        int64_t row = rb * kNR + r;
        uint8_t *dst = out.data() + l.qdataOff + slot * l.groupBytes;
        float scale = 0, offset = 0;
        int32_t sum = 0;
        if (row < rows) {
          const uint8_t *src = blob + row * rowBytes + g * l.groupBytes;
          std::memcpy(dst, src, l.groupBytes);
          int64_t idx = row * l.groups + g;
          scale = loadScale(blob + plain->scalesOff, idx, q.scaleType);
          if (!q.symmetric)
            offset = loadScale(blob + plain->offsetsOff, idx, q.scaleType);
          for (int64_t k = 0; k < q.groupSize; ++k) {
            int v;
            if (q.bits == 8)
              v = q.symmetric ? int(int8_t(src[k])) : int(src[k]);
            else {
              int u = (k % 2 == 0) ? (src[k / 2] & 0xf) : (src[k / 2] >> 4);
              v = q.symmetric ? u - 8 : u;
            }
            sum += v;
          }
        } else if (q.bits == 4 && q.symmetric) {
          // Padding rows hold q = 0 (nibble 8) with scale 0.
          std::memset(dst, 0x88, l.groupBytes);
        }
        std::memcpy(out.data() + l.scalesOff + slot * 4, &scale, 4);
        if (!q.symmetric)
          std::memcpy(out.data() + l.offsetsOff + slot * 4, &offset, 4);
        std::memcpy(out.data() + l.sumsOff + slot * 4, &sum, 4);
      }
  return out;
}

PackedF32Layout PackedF32Layout::compute(int64_t n, int64_t k) {
  PackedF32Layout l;
  l.n = n;
  l.k = k;
  l.rowBlocks = (n + kNR - 1) / kNR;
  l.totalBytes = size_t(l.rowBlocks) * k * kNR * 4;
  return l;
}

Result<PackedF32Layout> PackedF32Layout::computeChecked(int64_t n, int64_t k) {
  if (n < 0 || k < 0)
    return Error("packed f32 weight has a negative size");
  // Bound every factor so that rowBlocks * k * 8 * 4 cannot overflow.
  const uint64_t blocks = (uint64_t(n) + kNR - 1) / kNR;
  uint64_t elems;
  if (__builtin_mul_overflow(blocks, uint64_t(k), &elems) ||
      elems > (uint64_t(1) << 46))
    return Error("packed f32 weight [" + std::to_string(n) + ", " +
                 std::to_string(k) + "] is too large");
  return compute(n, k);
}

std::vector<uint8_t> packF32Weight(const float *w, int64_t rows, int64_t cols) {
  PackedF32Layout l = PackedF32Layout::compute(rows, cols);
  std::vector<uint8_t> out(l.totalBytes, 0);
  float *dst = reinterpret_cast<float *>(out.data());
  for (int64_t rb = 0; rb < l.rowBlocks; ++rb)
    for (int64_t k = 0; k < cols; ++k)
      for (int64_t r = 0; r < kNR; ++r) {
        int64_t row = rb * kNR + r;
        dst[(rb * cols + k) * kNR + r] = row < rows ? w[row * cols + k] : 0.0f;
      }
  return out;
}

} // namespace etllm::rt::xnnpack
