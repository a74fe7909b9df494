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

/// Rows per block of the f32 layout (and of the legacy quantized one).
inline constexpr int64_t kNR = 8;

/// Rows per group and values per block of PackedQBlockLayout. The block is
/// also the activations' quantization block (kQActBlock, tensor.h).
inline constexpr int64_t kQRows = 16;
inline constexpr int64_t kQBlock = 32;
static_assert(kQBlock == kQActBlock, "one block size for both operands");

/// The quantized weight layout of the integer dot-product kernels
/// (Packing QWEIGHT_R16): a weight [N, K] of `bits` 4 or 8, group G a
/// multiple of 32 or G = K (per channel), scales (and, asymmetric, offsets)
/// stored in the QuantInfo's scale type, with
///   RG = ceil(N / 16) row groups (the last padded with zero rows),
///   KB = ceil(K / 32) blocks (the last padded with zero values),
///   SG = K / G scale groups per row:
///
///   qdata:   [RG][KB] tiles of 16 rows x 32 values, 16 * 32 * bits / 8
///            bytes each, in chunks of 4 bytes per row:
///            4-bit: [c < 4][r < 16][j < 4]; byte j of row r in chunk c
///              holds value 4c + j of the block in its low nibble and value
///              16 + 4c + j in its high nibble (QWeightLayout's nibbles:
///              u = q + 8 when symmetric, u = q when not), so the low
///              nibbles of a chunk meet 4 consecutive activations and the
///              high nibbles the 4 that are 16 further;
///            8-bit: [c < 8][r < 16][j < 4]; value 4c + j (int8 when
///              symmetric, uint8 when not).
///   scales:  [RG][SG][16] (f16 or f32)
///   offsets: [RG][SG][16] asymmetric only
///
/// Sections start at 64-byte-aligned offsets. A vector load of a chunk
/// holds 4 values of 8 or 16 consecutive rows, one row per 32-bit lane, so
/// a kernel multiplies it with 4 broadcast activations and each lane sums
/// its own row (no horizontal reduction, the rows are the lanes). Padding
/// values and rows hold q = 0 and scale 0. Size: N K bits / 8 plus the
/// scales; Q4_0 (group 32, f16 scales) keeps its 18 bytes per 32 weights.
struct PackedQBlockLayout {
  int64_t n = 0, k = 0, groupSize = 0;
  int64_t rowGroups = 0, kBlocks = 0, scaleGroups = 0;
  /// Blocks per scale group (G / 32), or kBlocks per channel.
  int64_t blocksPerGroup = 0;
  unsigned bits = 0;
  bool symmetric = true;
  DType scaleType = DType::F32;
  size_t tileBytes = 0; // one row group's block
  size_t qdataOff = 0, scalesOff = 0, offsetsOff = 0, totalBytes = 0;

  /// Whether a weight [*, k] quantized as `q` has this layout.
  static bool supports(int64_t k, const QuantInfo &q);
  static Result<PackedQBlockLayout> compute(int64_t n, int64_t k,
                                            const QuantInfo &q);
  /// The scale group of block b.
  int64_t scaleGroup(int64_t b) const {
    return scaleGroups == 1 ? 0 : b / blocksPerGroup;
  }
};

/// Packs a QWeightLayout blob (rows x cols) into PackedQBlockLayout
/// (bit for bit: the same q values, scales and offsets).
Result<std::vector<uint8_t>> packQBlocks(const uint8_t *blob, size_t size,
                                         int64_t rows, int64_t cols,
                                         const QuantInfo &q);

/// Stacked expert weights [E, N, K] (etllm.moe's gate, up and down) in
/// Packing QWEIGHT_R16: expert e's PackedQBlockLayout [N, K] at
/// e * expertBytes (each padded to 64 bytes), so that a kernel reads one
/// expert's row groups on their own and a decode step touches only its
/// selected experts' bytes. Each expert's row groups are padded on their
/// own (N need not be a multiple of 16).
struct PackedQExpertsLayout {
  int64_t experts = 0;
  PackedQBlockLayout expert;
  size_t expertBytes = 0, totalBytes = 0;
  static Result<PackedQExpertsLayout> compute(int64_t experts, int64_t n,
                                              int64_t k, const QuantInfo &q);
};

/// Packs a QWeightLayout blob of a stacked weight [experts, rows, cols]
/// (the plain layout of [experts * rows, cols]) into PackedQExpertsLayout.
Result<std::vector<uint8_t>> packQExperts(const uint8_t *blob, size_t size,
                                          int64_t experts, int64_t rows,
                                          int64_t cols, const QuantInfo &q);

/// The layout of programs written before PackedQBlockLayout (Packing
/// QWEIGHT_NR8, read only: converted when a program is loaded). NB =
/// ceil(N / 8) row blocks, GN = K / G groups:
///   qdata:   for rb in NB, g in GN, r in 8: the G values of row rb*8+r,
///            group g, in QWeightLayout's row format
///   scales:  f32 [NB][GN][8]
///   offsets: f32 [NB][GN][8]       (asymmetric only)
///   sums:    int32 [NB][GN][8]     (sum of q over the row's group)
/// Sections start at 64-byte-aligned offsets.
struct LegacyQWeightLayout {
  int64_t n = 0, k = 0, groupSize = 0, groups = 0, rowBlocks = 0;
  unsigned bits = 0;
  bool symmetric = true;
  size_t groupBytes = 0; // bytes of one row's group of q values
  size_t qdataOff = 0, scalesOff = 0, offsetsOff = 0, sumsOff = 0,
         totalBytes = 0;
  static Result<LegacyQWeightLayout> compute(int64_t n, int64_t k,
                                             const QuantInfo &q);
};

/// Packs a QWeightLayout blob into the legacy layout (for tests of old
/// programs).
Result<std::vector<uint8_t>> packLegacyQWeight(const uint8_t *blob, size_t size,
                                               int64_t rows, int64_t cols,
                                               const QuantInfo &q);

/// Converts legacy bytes (LegacyQWeightLayout of `q`, `size` bytes) back
/// into a QWeightLayout blob with f32 scales (the legacy layout's scales:
/// lossless). The caller packs it (packQBlocks) when the layout supports
/// its group.
Result<std::vector<uint8_t>> unpackLegacyQWeight(const uint8_t *data,
                                                 size_t size, int64_t n,
                                                 int64_t k, const QuantInfo &q);

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
