//===- packing.cpp - Weight layouts of the optimized CPU kernels ----------===//
#include "etllm/runtime/cpu/packing.h"

#include "packing_ggml.h"

#include "etllm/runtime/ggml_blocks.h"
#include "etllm/runtime/half.h"
#include "etllm/runtime/quant_param.h"

#include <cstring>

namespace etllm::rt::cpu {

namespace {

/// A packed layout L of an n x k weight with q's bits, symmetry and group
/// size (what every packed layout records).
template <typename L> L layoutOf(int64_t n, int64_t k, const QuantInfo &q) {
  L l;
  l.n = n;
  l.k = k;
  l.bits = q.bits;
  l.symmetric = q.symmetric;
  l.groupSize = q.groupSize;
  return l;
}

/// The stored value (nibble u or byte) of element k of a QWeightLayout row.
uint8_t storedValue(const uint8_t *row, int64_t k, unsigned bits) {
  if (bits == 8)
    return row[k];
  return (k % 2 == 0) ? (row[k / 2] & 0xf) : (row[k / 2] >> 4);
}

/// The signed (sym) or unsigned value of a stored nibble or byte.
int valueOf(uint8_t stored, unsigned bits, bool sym) {
  if (bits == 8)
    return sym ? int(int8_t(stored)) : int(stored);
  return sym ? int(stored) - 8 : int(stored);
}

} // namespace

//===----------------------------------------------------------------------===//
// PackedQBlockLayout
//===----------------------------------------------------------------------===//

bool PackedQBlockLayout::supports(int64_t k, const QuantInfo &q) {
  if (q.scheme != QScheme::Affine)
    return unsigned(q.scheme) < kNumQSchemes && k > 0 &&
           k % ggml::blockValues(q.scheme) == 0;
  return (q.bits == 4 || q.bits == 8) && k > 0 && q.groupSize > 0 &&
         (q.groupSize == k || q.groupSize % kQBlock == 0) &&
         k % q.groupSize == 0 &&
         (q.scaleType == DType::F16 || q.scaleType == DType::F32);
}

Result<PackedQBlockLayout> PackedQBlockLayout::compute(int64_t n, int64_t k,
                                                       const QuantInfo &q) {
  Result<QWeightLayout> plain = QWeightLayout::compute(n, k, q);
  if (!plain.ok())
    return plain.error();
  if (!supports(k, q))
    return Error("the block layout needs groups of a multiple of " +
                 std::to_string(kQBlock) + " values or one per row, not " +
                 std::to_string(q.groupSize) + " of " + std::to_string(k));
  if (q.scheme != QScheme::Affine)
    return computeGgmlLayout(n, k, q);
  PackedQBlockLayout l = blockLayoutBase(n, k, q);
  l.scaleType = q.scaleType;
  l.kBlocks = (k + kQBlock - 1) / kQBlock;
  l.scaleGroups = k / q.groupSize;
  l.blocksPerGroup = l.scaleGroups == 1 ? l.kBlocks : q.groupSize / kQBlock;
  l.tileBytes = size_t(kQRows * kQBlock) * q.bits / 8;
  l.paramBytes = size_t(kQRows) * elementSize(q.scaleType);
  // QWeightLayout::compute bounded n * k; the padded sizes add at most one
  // row group and one block per row.
  layOutBlockSections(l);
  return l;
}

PackedQBlockLayout blockLayoutBase(int64_t n, int64_t k, const QuantInfo &q) {
  PackedQBlockLayout l = layoutOf<PackedQBlockLayout>(n, k, q);
  l.scheme = q.scheme;
  l.rowGroups = (n + kQRows - 1) / kQRows;
  return l;
}

void layOutBlockSections(PackedQBlockLayout &l) {
  const size_t tiles = size_t(l.rowGroups) * size_t(l.kBlocks);
  const size_t params =
      size_t(l.rowGroups) * size_t(l.scaleGroups) * l.paramBytes;
  l.qdataOff = 0;
  l.scalesOff = alignUp(tiles * l.tileBytes, kQuantSectionAlign);
  size_t end = l.scalesOff + params;
  if (l.hasOffsets()) {
    l.offsetsOff = alignUp(end, kQuantSectionAlign);
    end = l.offsetsOff + params;
  }
  l.totalBytes = end;
}

namespace {

/// Packs rows [row0, row0 + l.n) of a QWeightLayout blob (`plain`, whose
/// rows have l.k values) into `out` (l.totalBytes, zeroed).
void packRows(const uint8_t *blob, const QWeightLayout &plain, int64_t row0,
              const PackedQBlockLayout &l, const QuantInfo &q, uint8_t *out) {
  if (q.scheme != QScheme::Affine)
    return packGgmlRows(blob, row0, l, out);
  const int64_t rows = l.n, cols = l.k;
  const size_t rowBytes = q.bits == 8 ? size_t(cols) : size_t(cols) / 2;
  // The stored value of q = 0: nibble 8 when symmetric, else 0.
  const uint8_t zero = (q.bits == 4 && q.symmetric) ? 8 : 0;
  const size_t ps = elementSize(q.scaleType);
  for (int64_t rg = 0; rg < l.rowGroups; ++rg) {
    for (int64_t b = 0; b < l.kBlocks; ++b) {
      uint8_t *tile =
          out + l.qdataOff +
          (size_t(rg) * size_t(l.kBlocks) + size_t(b)) * l.tileBytes;
      for (int64_t r = 0; r < kQRows; ++r) {
        const int64_t row = rg * kQRows + r;
        const uint8_t *src =
            row < rows ? blob + size_t(row0 + row) * rowBytes : nullptr;
        // The block's stored values: a whole block straight from its
        // bytes; the last one of a row, or a padding row, value by value.
        uint8_t v[kQBlock];
        if (src && (b + 1) * kQBlock <= cols) {
          const uint8_t *s = src + size_t(b * kQBlock) * q.bits / 8;
          if (q.bits == 8) {
            std::memcpy(v, s, kQBlock);
          } else {
            for (int64_t i = 0; i < kQBlock / 2; ++i) {
              v[2 * i] = s[i] & 0xf;
              v[2 * i + 1] = s[i] >> 4;
            }
          }
        } else {
          for (int64_t i = 0; i < kQBlock; ++i) {
            const int64_t k = b * kQBlock + i;
            v[i] = (src && k < cols) ? storedValue(src, k, q.bits) : zero;
          }
        }
        auto value = [&](int64_t i) -> uint8_t { return v[i]; };
        for (int64_t c = 0; c < kQBlock * int64_t(q.bits) / 32; ++c)
          for (int64_t j = 0; j < 4; ++j) {
            uint8_t &dst = tile[(c * kQRows + r) * 4 + j];
            if (q.bits == 8)
              dst = value(4 * c + j);
            else
              dst = uint8_t(value(4 * c + j) | (value(16 + 4 * c + j) << 4));
          }
      }
    }
    for (int64_t g = 0; g < l.scaleGroups; ++g)
      for (int64_t r = 0; r < kQRows; ++r) {
        const int64_t row = rg * kQRows + r;
        if (row >= rows)
          continue; // scale (and offset) 0: already zero
        const size_t slot =
            (size_t(rg) * size_t(l.scaleGroups) + size_t(g)) * kQRows + r;
        const size_t idx =
            size_t(row0 + row) * size_t(l.scaleGroups) + size_t(g);
        std::memcpy(out + l.scalesOff + slot * ps,
                    blob + plain.scalesOff + idx * ps, ps);
        if (!q.symmetric)
          std::memcpy(out + l.offsetsOff + slot * ps,
                      blob + plain.offsetsOff + idx * ps, ps);
      }
  }
}

/// The QWeightLayout of a `rows` x `cols` blob of `size` bytes (`what`
/// names it in the error), checked to hold the whole layout.
Result<QWeightLayout> blobLayout(const char *what, size_t size, int64_t rows,
                                 int64_t cols, const QuantInfo &q) {
  Result<QWeightLayout> plain = QWeightLayout::compute(rows, cols, q);
  if (!plain.ok())
    return plain.error();
  if (size < plain->totalBytes)
    return Error(std::string(what) + ": " + std::to_string(size) +
                 " bytes, the layout needs " +
                 std::to_string(plain->totalBytes));
  return plain;
}

/// The QWeightLayout of a `rows` x `cols` quantized weight blob of `size`
/// bytes (checked to hold it) and the layout L it is packed into.
template <typename L>
Status packLayouts(size_t size, int64_t rows, int64_t cols, const QuantInfo &q,
                   QWeightLayout &plain, L &packed) {
  Result<QWeightLayout> p =
      blobLayout("quantized weight blob", size, rows, cols, q);
  if (!p.ok())
    return p.error();
  Result<L> l = L::compute(rows, cols, q);
  if (!l.ok())
    return l.error();
  plain = *p;
  packed = *l;
  return Status();
}

} // namespace

Result<std::vector<uint8_t>> packQBlocks(const uint8_t *blob, size_t size,
                                         int64_t rows, int64_t cols,
                                         const QuantInfo &q) {
  QWeightLayout plain;
  PackedQBlockLayout packed;
  ETLLM_RETURN_IF_ERROR(packLayouts(size, rows, cols, q, plain, packed));
  std::vector<uint8_t> out(packed.totalBytes, 0);
  packRows(blob, plain, 0, packed, q, out.data());
  return out;
}

//===----------------------------------------------------------------------===//
// PackedQExpertsLayout
//===----------------------------------------------------------------------===//

Result<PackedQExpertsLayout> PackedQExpertsLayout::compute(int64_t experts,
                                                           int64_t n, int64_t k,
                                                           const QuantInfo &q) {
  if (experts <= 0 || n <= 0)
    return Error("stacked expert weights need at least one expert and row");
  // The stack as one [E * N, K] weight bounds the sizes.
  int64_t rows;
  if (__builtin_mul_overflow(experts, n, &rows))
    return Error("stacked expert weights are too large");
  Result<QWeightLayout> plain = QWeightLayout::compute(rows, k, q);
  if (!plain.ok())
    return plain.error();
  Result<PackedQBlockLayout> one = PackedQBlockLayout::compute(n, k, q);
  if (!one.ok())
    return one.error();
  PackedQExpertsLayout l;
  l.experts = experts;
  l.expert = *one;
  l.expertBytes = alignUp(one->totalBytes, kQuantSectionAlign);
  if (__builtin_mul_overflow(size_t(experts), l.expertBytes, &l.totalBytes))
    return Error("stacked expert weights are too large");
  return l;
}

Result<std::vector<uint8_t>> packQExperts(const uint8_t *blob, size_t size,
                                          int64_t experts, int64_t rows,
                                          int64_t cols, const QuantInfo &q) {
  Result<PackedQExpertsLayout> l =
      PackedQExpertsLayout::compute(experts, rows, cols, q);
  if (!l.ok())
    return l.error();
  Result<QWeightLayout> plain =
      blobLayout("quantized expert weights", size, experts * rows, cols, q);
  if (!plain.ok())
    return plain.error();
  std::vector<uint8_t> out(l->totalBytes, 0);
  for (int64_t e = 0; e < experts; ++e)
    packRows(blob, *plain, e * rows, l->expert, q,
             out.data() + size_t(e) * l->expertBytes);
  return out;
}

//===----------------------------------------------------------------------===//
// The legacy layout (programs written before PackedQBlockLayout)
//===----------------------------------------------------------------------===//

Result<LegacyQWeightLayout> LegacyQWeightLayout::compute(int64_t n, int64_t k,
                                                         const QuantInfo &q) {
  Result<QWeightLayout> plain = QWeightLayout::compute(n, k, q);
  if (!plain.ok())
    return plain.error();
  if (q.scheme != QScheme::Affine)
    return Error("the legacy layout has no ggml schemes");
  LegacyQWeightLayout l = layoutOf<LegacyQWeightLayout>(n, k, q);
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

Result<std::vector<uint8_t>> packLegacyQWeight(const uint8_t *blob, size_t size,
                                               int64_t rows, int64_t cols,
                                               const QuantInfo &q) {
  QWeightLayout plain;
  LegacyQWeightLayout l;
  ETLLM_RETURN_IF_ERROR(packLayouts(size, rows, cols, q, plain, l));
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
          scale = loadQuantParam(blob + plain.scalesOff, idx, q.scaleType);
          if (!q.symmetric)
            offset = loadQuantParam(blob + plain.offsetsOff, idx, q.scaleType);
          for (int64_t k = 0; k < q.groupSize; ++k)
            sum += valueOf(storedValue(src, k, q.bits), q.bits, q.symmetric);
        } else if (q.bits == 4 && q.symmetric) {
          std::memset(dst, 0x88, l.groupBytes);
        }
        std::memcpy(out.data() + l.scalesOff + slot * 4, &scale, 4);
        if (!q.symmetric)
          std::memcpy(out.data() + l.offsetsOff + slot * 4, &offset, 4);
        std::memcpy(out.data() + l.sumsOff + slot * 4, &sum, 4);
      }
  return out;
}

Result<std::vector<uint8_t>> unpackLegacyQWeight(const uint8_t *data,
                                                 size_t size, int64_t n,
                                                 int64_t k,
                                                 const QuantInfo &q) {
  Result<LegacyQWeightLayout> legacy = LegacyQWeightLayout::compute(n, k, q);
  if (!legacy.ok())
    return legacy.error();
  if (size < legacy->totalBytes)
    return Error("legacy packed weight has " + std::to_string(size) +
                 " bytes, needs " + std::to_string(legacy->totalBytes));
  QuantInfo f32 = q;
  f32.scaleType = DType::F32;
  Result<QWeightLayout> plain = QWeightLayout::compute(n, k, f32);
  if (!plain.ok())
    return plain.error();
  const LegacyQWeightLayout &l = *legacy;
  std::vector<uint8_t> out(plain->totalBytes, 0);
  const size_t rowBytes = q.bits == 8 ? size_t(k) : size_t(k) / 2;
  for (int64_t row = 0; row < n; ++row)
    for (int64_t g = 0; g < l.groups; ++g) {
      const size_t slot =
          (size_t(row / kNR) * size_t(l.groups) + size_t(g)) * kNR + row % kNR;
      std::memcpy(out.data() + size_t(row) * rowBytes + g * l.groupBytes,
                  data + l.qdataOff + slot * l.groupBytes, l.groupBytes);
      const size_t idx = size_t(row) * size_t(l.groups) + size_t(g);
      std::memcpy(out.data() + plain->scalesOff + idx * 4,
                  data + l.scalesOff + slot * 4, 4);
      if (!q.symmetric)
        std::memcpy(out.data() + plain->offsetsOff + idx * 4,
                    data + l.offsetsOff + slot * 4, 4);
    }
  return out;
}

//===----------------------------------------------------------------------===//
// f32
//===----------------------------------------------------------------------===//

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

} // namespace etllm::rt::cpu
