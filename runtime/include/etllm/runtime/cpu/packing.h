//===- packing.h - Weight layouts of the optimized CPU kernels --*- C++ -*-===//
//
// The compiler packs weights into these layouts at export time (so the
// runtime does no work at load and keeps no second copy); the runtime
// kernels read them. Both sides use these functions: one definition.
//
//===----------------------------------------------------------------------===//
#ifndef ETLLM_RUNTIME_CPU_PACKING_H
#define ETLLM_RUNTIME_CPU_PACKING_H

#include "etllm/runtime/result.h"
#include "etllm/runtime/tensor.h"

#include <cstdint>
#include <vector>

namespace etllm::rt::cpu {

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
///
/// The ggml schemes (QScheme other than Affine; K a multiple of the
/// format's block) keep every bit of their GGUF blocks, rearranged the same
/// way. Their values are unsigned (u = q + 16 for Q5_0, q + 32 for Q6_K):
///
///   tile:    the 4-bit tile above (the low 4 bits of each value), then
///            5-bit (Q5_0, Q5_1, Q5_K): [r < 16][j < 4] plane bytes, bit c
///              of byte j of row r the fifth bit of value 4c + j, bit 4 + c
///              that of value 16 + 4c + j (64 bytes; tileBytes 320);
///            6-bit (Q6_K): [w < 2][r < 16][j < 4], bits 2c, 2c + 1 of byte
///              j the top 2 bits of value 4c + j (w = 0) or 16 + 4c + j
///              (w = 1) (128 bytes; tileBytes 384);
///            so that a shift and a mask of one plane load give the high
///            bits of a chunk's values in place;
///   scales:  Q5_0, Q5_1: [RG][KB][16] f16 d; offsets [RG][KB][16] f16 m
///              (Q5_1);
///            Q4_K, Q5_K: per row group and super-block of 256 values
///              (scaleGroups = K / 256), kQK4ParamBytes: d[16], dmin[16]
///              (f16), then the 12 bytes of 6-bit scales and mins of each
///              row as [c < 3][r < 16][4 bytes c*4 ..];
///            Q6_K: per row group and super-block, kQ6KParamBytes: d[16]
///              (f16), then the 16 int8 scales of each row as
///              [c < 4][r < 16][scales 4c .. 4c + 3].
///
/// Every weight keeps its GGUF size (padding rows aside): Q4_K's 144 bytes
/// per 256 values are 128 in the tiles and 16 in the scales.
struct PackedQBlockLayout {
  int64_t n = 0, k = 0, groupSize = 0;
  int64_t rowGroups = 0, kBlocks = 0, scaleGroups = 0;
  /// Blocks per scale group (G / 32), or kBlocks per channel.
  int64_t blocksPerGroup = 0;
  unsigned bits = 0;
  bool symmetric = true;
  DType scaleType = DType::F32;
  QScheme scheme = QScheme::Affine;
  size_t tileBytes = 0;  // one row group's block
  size_t paramBytes = 0; // one row group's parameters of one scale group
  size_t qdataOff = 0, scalesOff = 0, offsetsOff = 0, totalBytes = 0;

  /// Whether a weight [*, k] quantized as `q` has this layout.
  static bool supports(int64_t k, const QuantInfo &q);
  static Result<PackedQBlockLayout> compute(int64_t n, int64_t k,
                                            const QuantInfo &q);
  /// The scale group of block b.
  int64_t scaleGroup(int64_t b) const {
    return scaleGroups == 1 ? 0 : b / blocksPerGroup;
  }
  /// Whether the offsets section exists (asymmetric affine, Q5_1).
  bool hasOffsets() const {
    return scheme == QScheme::Affine ? !symmetric : scheme == QScheme::Q5_1;
  }
};

/// Bytes per row group and super-block of the Q4_K/Q5_K and Q6_K
/// parameters (PackedQBlockLayout).
inline constexpr size_t kQK4ParamBytes = 2 * kQRows * 2 + 12 * kQRows;
inline constexpr size_t kQ6KParamBytes = kQRows * 2 + 16 * kQRows;

/// The stored (unsigned) value i (< 32) of row r (< 16) in a tile of `l`:
/// the nibble or byte of an affine layout (int8 bits for 8-bit symmetric),
/// the whole 5- or 6-bit value of a ggml scheme.
uint8_t packedValue(const PackedQBlockLayout &l, const uint8_t *tile, int r,
                    int i);

/// How the values of row r of row group rg, block b of a ggml-scheme weight
/// dequantize: x_i = dw[i / 16] * (u_i - bias) (+ offset when hasOffset)
/// for its stored values u_i (i < 32), with dw and offset computed as
/// ggml_blocks.h's reference does (the same floats).
struct GgmlBlockParams {
  float dw[2] = {0, 0};
  float offset = 0;
  int32_t bias = 0;
  bool hasOffset = false; // Q5_1 (m), Q4_K and Q5_K (-dmin m)
};
GgmlBlockParams ggmlBlockParams(const PackedQBlockLayout &l,
                                const uint8_t *scales, const uint8_t *offsets,
                                int64_t rg, int64_t b, int r);

/// Packs a QWeightLayout blob (rows x cols) into PackedQBlockLayout
/// (bit for bit: the same q values, scales and offsets; a ggml scheme's
/// every bit).
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

} // namespace etllm::rt::cpu

#endif // ETLLM_RUNTIME_CPU_PACKING_H
