//===- packing.h - Weight layouts of the optimized CPU kernels --*- C++ -*-===//
//
// The compiler packs weights into these layouts at export time (so the
// runtime does no work at load and keeps no second copy); the runtime
// kernels read them. Both sides use these functions: one definition.
//
//===----------------------------------------------------------------------===//
#ifndef ETLLM_RUNTIME_XNNPACK_PACKING_H
#define ETLLM_RUNTIME_XNNPACK_PACKING_H

#include "etllm/runtime/result.h"
#include "etllm/runtime/tensor.h"

#include <cstdint>
#include <vector>

namespace etllm::rt::xnnpack {

/// Rows per block of the packed layouts.
inline constexpr int64_t kNR = 8;

/// Packed block-quantized weight [N, K], bits b, group G, NB = ceil(N / 8)
/// row blocks (the last one padded with zero rows), GN = K / G groups:
///
///   qdata:   for rb in NB, g in GN, r in 8: the G values of row rb*8+r,
///            group g, as in QWeightLayout's row format (4-bit: G/2 bytes,
///            element k in byte k/2, low nibble for even k; signed values
///            are stored as in QWeightLayout: int8, or nibble u = q + 8)
///   scales:  f32 [NB][GN][8]
///   offsets: f32 [NB][GN][8]       (asymmetric only)
///   sums:    int32 [NB][GN][8]     Σ_k q[k] of the row's group (signed q
///                                  for symmetric, unsigned for asymmetric)
///
/// Sections start at 64-byte-aligned offsets.
struct PackedQWeightLayout {
  int64_t n = 0, k = 0, groupSize = 0, groups = 0, rowBlocks = 0;
  unsigned bits = 0;
  bool symmetric = true;
  size_t groupBytes = 0; // bytes of one row's group of q values
  size_t qdataOff = 0, scalesOff = 0, offsetsOff = 0, sumsOff = 0,
         totalBytes = 0;
  static Result<PackedQWeightLayout> compute(int64_t n, int64_t k,
                                             const QuantInfo &q);
};

/// Packs a QWeightLayout blob (rows x cols) into PackedQWeightLayout.
Result<std::vector<uint8_t>> packQWeight(const uint8_t *blob, size_t size,
                                         int64_t rows, int64_t cols,
                                         const QuantInfo &q);

/// Packed f32 weight [N, K] for linear: NB row blocks, each K x 8 floats
/// (k-major: the 8 rows' k-th values are contiguous), zero-padded rows.
struct PackedF32Layout {
  int64_t n = 0, k = 0, rowBlocks = 0;
  size_t totalBytes = 0;
  static PackedF32Layout compute(int64_t n, int64_t k);
  /// compute() for untrusted sizes: an error for negative sizes or a size
  /// that does not fit in memory.
  static Result<PackedF32Layout> computeChecked(int64_t n, int64_t k);
};

/// Packs a row-major f32 weight [rows, cols].
std::vector<uint8_t> packF32Weight(const float *w, int64_t rows, int64_t cols);

} // namespace etllm::rt::xnnpack

#endif // ETLLM_RUNTIME_XNNPACK_PACKING_H
