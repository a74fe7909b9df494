//===- packing.h - Weights in the Vulkan kernels' layouts -------*- C++ -*-===//
//
// The compiler packs every weight the Vulkan kernels read into their
// layout ahead of time (program constants); the runtime uploads the bytes
// as they are. Shared by both halves (no Vulkan, no MLIR).
//
// Layouts (format.h WeightFormat) of a weight of R rows x C columns:
//   F32  R x C f32, row-major.
//   F16  R x C f16, row-major (C even: the kernels read pairs).
//   Q4   the R x C 4-bit values (symmetric int4 groups of 32: u = q + 8),
//        two per byte, value c of row r in byte (r * C + c) / 2, the low
//        nibble for even c (so word w holds values 8w..8w+7, value 8w + i in
//        bits 4i..4i+3); then the R x C/32 group scales in f16, row-major,
//        starting at byte R * C / 2; the total padded to 4 bytes.
//
// A packed weight may be the rows of several weights one after the other
// (a fused matmul: q, k and v; gate and up), and a large one is cut into
// row ranges that each fit one binding.
//
//===----------------------------------------------------------------------===//
#ifndef ETLLM_RUNTIME_VULKAN_PACKING_H
#define ETLLM_RUNTIME_VULKAN_PACKING_H

#include "etllm/runtime/result.h"
#include "etllm/runtime/tensor.h"
#include "etllm/runtime/vulkan/format.h"

#include <cstdint>
#include <vector>

namespace etllm::rt::vulkan {

/// Rows [rowBegin, rowEnd) of one source weight of `rows` x `cols`:
/// f32 values (`floats`, for F32 and F16) or a dense QWeight
/// (`qweight`: tensor.h QWeightLayout). Q4 takes 4-bit symmetric groups of
/// 32 (f16 or f32 scales); F32 and F16 take any QWeight, dequantized as the
/// portable kernels do (scale * q, plus the offset when asymmetric).
struct WeightPart {
  const float *floats = nullptr;
  const uint8_t *qweight = nullptr;
  size_t qweightBytes = 0;
  QuantInfo quant;
  int64_t rows = 0, cols = 0;
  int64_t rowBegin = 0, rowEnd = 0;
};

/// Whether a QWeight with `q` and `cols` columns has a Q4 layout.
bool q4Supports(const QuantInfo &q, int64_t cols);

/// Packs the parts (all with the same `cols`), rows in order, into
/// `format`. Errors name the part and the problem (a shape or a quantized
/// layout that does not fit).
Result<std::vector<uint8_t>> packWeight(WeightFormat format,
                                        const std::vector<WeightPart> &parts);

/// The value of row `r`, column `c` of a packed weight (for tests).
float packedValue(WeightFormat format, const uint8_t *data, int64_t rows,
                  int64_t cols, int64_t r, int64_t c);

} // namespace etllm::rt::vulkan

#endif // ETLLM_RUNTIME_VULKAN_PACKING_H
