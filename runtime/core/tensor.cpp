//===- tensor.cpp - Tensor shapes, capacities and quantized layouts -------===//
#include "etllm/runtime/tensor.h"
#include "etllm/runtime/ggml_blocks.h"

#include <limits>
#include <sstream>

namespace etllm::rt {

static bool mulOverflows(uint64_t a, uint64_t b, uint64_t &out) {
  return __builtin_mul_overflow(a, b, &out);
}

const char *qschemeName(QScheme s) {
  switch (s) {
  case QScheme::Affine:
    return "affine";
  case QScheme::Q5_0:
    return "q5_0";
  case QScheme::Q5_1:
    return "q5_1";
  case QScheme::Q4_K:
    return "q4_k";
  case QScheme::Q5_K:
    return "q5_k";
  case QScheme::Q6_K:
    return "q6_k";
  }
  return "invalid";
}

QuantInfo ggmlQuantInfo(QScheme s) {
  QuantInfo q;
  q.scheme = s;
  q.scaleType = DType::F16;
  q.groupSize = s == QScheme::Q6_K ? 16 : 32;
  q.bits = s == QScheme::Q4_K ? 4 : s == QScheme::Q6_K ? 6 : 5;
  q.symmetric = s == QScheme::Q5_0 || s == QScheme::Q6_K;
  return q;
}

Result<QWeightLayout> QWeightLayout::compute(int64_t rows, int64_t cols,
                                             const QuantInfo &q) {
  if (rows <= 0 || cols <= 0)
    return Error("quantized weight has an empty or negative shape");
  if (q.scheme != QScheme::Affine) {
    if (unsigned(q.scheme) >= kNumQSchemes)
      return Error("quantized weight has an unknown scheme " +
                   std::to_string(unsigned(q.scheme)));
    const QuantInfo want = ggmlQuantInfo(q.scheme);
    if (q.bits != want.bits || q.groupSize != want.groupSize ||
        q.symmetric != want.symmetric || q.scaleType != want.scaleType)
      return Error(std::string("quantized weight of scheme ") +
                   qschemeName(q.scheme) +
                   " has parameters other than the scheme's");
    const int64_t bv = ggml::blockValues(q.scheme);
    if (cols % bv != 0)
      return Error(std::string(qschemeName(q.scheme)) + " rows of " +
                   std::to_string(cols) + " values are not whole blocks of " +
                   std::to_string(bv));
    QWeightLayout l;
    l.rows = rows;
    l.cols = cols;
    l.groups = cols / bv;
    uint64_t blocks, bytes;
    if (mulOverflows(uint64_t(rows), uint64_t(l.groups), blocks) ||
        mulOverflows(blocks, uint64_t(ggml::blockBytes(q.scheme)), bytes) ||
        blocks > (uint64_t(1) << 45))
      return Error("quantized weight is too large");
    l.qbytes = l.scalesOff = l.offsetsOff = l.totalBytes = size_t(bytes);
    return l;
  }
  if (q.bits != 4 && q.bits != 8)
    return Error("quantized weight has " + std::to_string(q.bits) +
                 " bits (4 or 8 expected)");
  if (q.groupSize <= 0 || cols % q.groupSize != 0)
    return Error("group size " + std::to_string(q.groupSize) +
                 " does not divide the row length " + std::to_string(cols));
  if (q.bits == 4 && cols % 2 != 0)
    return Error("4-bit weight rows must have an even length");
  if (q.scaleType != DType::F32 && q.scaleType != DType::F16)
    return Error("quantized weight scales must be f32 or f16");
  QWeightLayout l;
  l.rows = rows;
  l.cols = cols;
  l.groups = cols / q.groupSize;
  uint64_t elems, groupsTotal, scaleBytes;
  if (mulOverflows(uint64_t(rows), uint64_t(cols), elems) ||
      mulOverflows(uint64_t(rows), uint64_t(l.groups), groupsTotal) ||
      mulOverflows(groupsTotal, elementSize(q.scaleType), scaleBytes) ||
      elems > (uint64_t(1) << 50))
    return Error("quantized weight is too large");
  l.qbytes = q.bits == 8 ? elems : elems / 2;
  l.scalesOff = alignUp(l.qbytes, kQuantSectionAlign);
  size_t end = l.scalesOff + scaleBytes;
  if (!q.symmetric) {
    l.offsetsOff = alignUp(end, kQuantSectionAlign);
    end = l.offsetsOff + scaleBytes;
  }
  l.totalBytes = end;
  return l;
}

QActLayout QActLayout::compute(int64_t rows, int64_t cols) {
  QActLayout l;
  l.rows = rows;
  l.cols = cols;
  l.rowStride = cols;
  l.blocks = 1;
  l.scalesOff = alignUp(size_t(rows * cols), kQuantSectionAlign);
  l.zpOff = alignUp(l.scalesOff + size_t(rows) * 4, kQuantSectionAlign);
  l.totalBytes = l.zpOff + size_t(rows) * 4;
  return l;
}

QActLayout QActLayout::compute(int64_t rows, int64_t cols, const QuantInfo &q) {
  if (q.groupSize != kQActBlock)
    return compute(rows, cols);
  QActLayout l;
  l.rows = rows;
  l.cols = cols;
  l.perBlock = true;
  l.blocks = (cols + kQActBlock - 1) / kQActBlock;
  l.rowStride = l.blocks * kQActBlock;
  const size_t params = size_t(rows * l.blocks) * 4;
  l.scalesOff = alignUp(size_t(rows * l.rowStride), kQuantSectionAlign);
  l.sumsOff = alignUp(l.scalesOff + params, kQuantSectionAlign);
  l.totalBytes = l.sumsOff + params;
  return l;
}

Result<size_t> storageBytes(DType t, const int64_t *sizes, int rank,
                            const QuantInfo &q) {
  if (rank < 0 || rank > kMaxRank)
    return Error("rank " + std::to_string(rank) + " is out of range");
  uint64_t numel = 1;
  for (int i = 0; i < rank; ++i) {
    if (sizes[i] < 0)
      return Error("negative dimension size");
    if (mulOverflows(numel, uint64_t(sizes[i]), numel) ||
        numel > (uint64_t(1) << 50))
      return Error("tensor is too large");
  }
  if (t == DType::QWeight || t == DType::QAct) {
    if (rank < 1)
      return Error("quantized tensors have rank >= 1");
    int64_t cols = sizes[rank - 1];
    if (cols == 0)
      return size_t(0);
    int64_t rows = int64_t(numel) / cols;
    if (t == DType::QAct) {
      if (q.groupSize != 0 &&
          (q.groupSize != kQActBlock || !q.symmetric || !q.perToken))
        return Error("quantized activations are per token, per tensor or "
                     "symmetric per block of " +
                     std::to_string(kQActBlock));
      return QActLayout::compute(rows, cols, q).totalBytes;
    }
    Result<QWeightLayout> l = QWeightLayout::compute(rows, cols, q);
    if (!l.ok())
      return l.error();
    return l->totalBytes;
  }
  uint64_t bytes;
  if (mulOverflows(numel, elementSize(t), bytes))
    return Error("tensor is too large");
  return size_t(bytes);
}

size_t Tensor::nbytes() const {
  Result<size_t> b = storageBytes(dtype, sizes, rank, quant);
  return b.ok() ? *b : 0;
}

Status Tensor::resize(const int64_t *newSizes, int newRank) {
  Result<size_t> bytes = storageBytes(dtype, newSizes, newRank, quant);
  if (!bytes.ok())
    return bytes.error();
  if (*bytes > capacity) {
    Tensor probe = *this;
    probe.rank = newRank;
    for (int i = 0; i < newRank; ++i)
      probe.sizes[i] = newSizes[i];
    return Error("shape " + probe.shapeString() + " needs " +
                 std::to_string(*bytes) + " bytes, more than the planned " +
                 std::to_string(capacity));
  }
  rank = newRank;
  for (int i = 0; i < newRank; ++i)
    sizes[i] = newSizes[i];
  return Status();
}

std::string Tensor::shapeString() const {
  std::ostringstream os;
  os << '[';
  for (int i = 0; i < rank; ++i)
    os << (i ? ", " : "") << sizes[i];
  os << "] " << dtypeName(dtype);
  return os.str();
}

} // namespace etllm::rt
