//===- tensor.h - Runtime tensors and quantized layouts ---------*- C++ -*-===//
//
// A runtime tensor is a dense, row-major view: element type, current shape
// (dynamic dimensions change between calls, within the planned capacity)
// and a data pointer into planned memory, a constant segment or a mutable
// buffer. Tensors never own memory.
//
//===----------------------------------------------------------------------===//
#ifndef ETLLM_RUNTIME_TENSOR_H
#define ETLLM_RUNTIME_TENSOR_H

#include "etllm/runtime/dtype.h"
#include "etllm/runtime/result.h"

#include <cstddef>
#include <cstdint>
#include <string>

namespace etllm::rt {

inline constexpr int kMaxRank = 8;
inline constexpr size_t kQuantSectionAlign = 64;

inline size_t alignUp(size_t v, size_t a) { return (v + a - 1) / a * a; }

/// How a QWeight codes its values (same values as the schema's QScheme).
enum class QScheme : uint8_t {
  /// `bits`-bit values (4, 8) in groups of `groupSize` along a row, each
  /// group with a scale (and an offset) in `scaleType`: QWeightLayout's
  /// sections. GGUF Q4_0, Q4_1 and Q8_0 blocks are exactly this.
  Affine = 0,
  /// ggml's block formats, kept as a GGUF stores them (ggml_blocks.h): the
  /// QWeight's bytes are the GGUF tensor's blocks, row-major.
  Q5_0 = 1, ///< 32 values: f16 d, 5-bit q; x = d (q - 16)
  Q5_1 = 2, ///< 32 values: f16 d and m, 5-bit q; x = d q + m
  Q4_K = 3, ///< 256 values: f16 d, dmin; 6-bit scale and min per 32; 4-bit q
  Q5_K = 4, ///< as Q4_K with 5-bit q
  Q6_K = 5, ///< 256 values: f16 d, int8 scale per 16, 6-bit q; d sc (q - 32)
};
inline constexpr unsigned kNumQSchemes = 6;

/// "affine", "q5_0", ... (the IR's and the schema's spelling, lower case).
const char *qschemeName(QScheme s);

/// Parameters of a block-quantized weight or a quantized activation.
///
/// A weight of a ggml scheme carries the values that scheme implies
/// (ggmlQuantInfo): its value bits, the values per scale (32, or 16 for
/// Q6_K), whether it is symmetric (Q5_0, Q6_K) and F16 (the type of the
/// block's stored scale), so that code reading only these fields (sizes,
/// listings) sees the right ones; QWeightLayout::compute rejects any other.
struct QuantInfo {
  uint8_t bits = 0;             // 4 or 8 (Affine); 4, 5 or 6 (ggml)
  bool symmetric = true;        // sym: signed q; asym: unsigned q + offset/zp
  DType scaleType = DType::F32; // F16 or F32 (weights); F32 (activations)
  /// Weights: elements per group along the last dim. Activations: 0 (one
  /// scale per row or tensor) or kQActBlock (one scale per block of 32
  /// consecutive elements of a row: symmetric only).
  int64_t groupSize = 0;
  bool perToken = true; // activations: one scale per row (else per tensor)
  QScheme scheme = QScheme::Affine; // weights
};

/// The QuantInfo of a weight of ggml scheme `s` (not Affine).
QuantInfo ggmlQuantInfo(QScheme s);

/// Elements per block of block-quantized activations (QuantInfo::groupSize
/// of a QAct): llama.cpp's Q8_0 block, the unit of the integer dot products.
inline constexpr int64_t kQActBlock = 32;

/// Byte layout of a QWeight of logical shape [..., K] with R = numel / K rows
/// and G = K / groupSize groups per row, in one contiguous blob:
///
///   [0, qbytes)            R*K quantized values, row-major. 8-bit: one byte
///                          each (int8 when symmetric, uint8 when not).
///                          4-bit: two per byte, element k of a row in byte
///                          k/2, the low nibble for even k; the nibble u is
///                          q = u - 8 when symmetric, q = u when not.
///   [scalesOff, ...)       R*G scales (scaleType), row-major
///   [offsetsOff, ...)      asymmetric only: R*G offsets (scaleType)
///
/// Dequantized: x = scale * q (sym), x = scale * q + offset (asym).
///
/// A ggml scheme (QScheme other than Affine) is R rows of K / B blocks of
/// its format (B = 32 or 256 values, ggml_blocks.h), row-major, exactly a
/// GGUF tensor's bytes: qbytes = scalesOff = offsetsOff = totalBytes, and
/// `groups` counts blocks per row.
struct QWeightLayout {
  int64_t rows = 0, cols = 0, groups = 0;
  size_t qbytes = 0, scalesOff = 0, offsetsOff = 0, totalBytes = 0;
  static Result<QWeightLayout> compute(int64_t rows, int64_t cols,
                                       const QuantInfo &q);
};

/// Byte layout of a QAct with R rows of K elements (R = numel / K).
///
/// Per token or per tensor (groupSize 0):
///   [0, R*K)         int8 values (asym: q - zp is the centered value)
///   [scalesOff, ...) R f32 scales (1 when per tensor)
///   [zpOff, ...)     R int32 zero points (asym; 0 when symmetric)
///   x ~= scale * (q - zp).
///
/// Per block (groupSize kQActBlock, symmetric), B = ceil(K / 32) blocks per
/// row, each row padded to Kp = 32 B values:
///   [0, R*Kp)        int8 values, row r at r * Kp; the padding is 0
///   [scalesOff, ...) R*B f32 scales, row-major
///   [sumsOff, ...)   R*B int32 sums of the block's q values
///   x ~= scale[r][k / 32] * q.
struct QActLayout {
  int64_t rows = 0, cols = 0;
  int64_t rowStride = 0; // values between consecutive rows (K or Kp)
  int64_t blocks = 0;    // scales per row: 1, or B per block
  bool perBlock = false;
  size_t scalesOff = 0, zpOff = 0, sumsOff = 0, totalBytes = 0;
  /// The per-token/per-tensor layout.
  static QActLayout compute(int64_t rows, int64_t cols);
  /// The layout `q` selects (per block when q.groupSize is kQActBlock).
  static QActLayout compute(int64_t rows, int64_t cols, const QuantInfo &q);
};

/// A non-owning view of tensor data with a dynamic shape.
struct Tensor {
  DType dtype = DType::F32;
  int32_t rank = 0;
  int64_t sizes[kMaxRank] = {};
  void *data = nullptr;
  size_t capacity = 0; // bytes available at `data`
  QuantInfo quant;     // QWeight / QAct only

  int64_t numel() const {
    int64_t n = 1;
    for (int i = 0; i < rank; ++i)
      n *= sizes[i];
    return n;
  }
  int64_t dim(int i) const { return sizes[i < 0 ? i + rank : i]; }
  /// Bytes the current shape occupies (quantized types: their layout).
  size_t nbytes() const;
  template <typename T> T *ptr() { return static_cast<T *>(data); }
  template <typename T> const T *ptr() const {
    return static_cast<const T *>(data);
  }
  /// Sets the shape, failing (without changing it) when it would not fit the
  /// capacity.
  Status resize(const int64_t *newSizes, int newRank);
  std::string shapeString() const;
};

/// Bytes needed for `numel` elements of `t` with last dimension `cols`
/// (quantized types) — used for capacity checks and memory planning.
Result<size_t> storageBytes(DType t, const int64_t *sizes, int rank,
                            const QuantInfo &q);

} // namespace etllm::rt

#endif // ETLLM_RUNTIME_TENSOR_H
