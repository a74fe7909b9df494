//===- Quantizer.h - Block-wise weight quantization -------------*- C++ -*-===//
//
// Produces the QWeight byte layout of runtime/tensor.h (QWeightLayout) from
// float rows, or repacks GGUF Q8_0/Q4_0/Q4_1 blocks into it exactly; the
// other ggml formats are kept as their own schemes (ggmlSchemeOf).
// No LLVM/MLIR: shared by the serializer and its unit tests.
//
//===----------------------------------------------------------------------===//
#ifndef ETLLM_FORMATS_QUANTIZER_H
#define ETLLM_FORMATS_QUANTIZER_H

#include "etllm/Formats/Checkpoint.h"
#include "etllm/runtime/result.h"
#include "etllm/runtime/tensor.h"

#include <cstdint>
#include <optional>
#include <vector>

namespace etllm {

/// Quantizes `rows` x `cols` floats group-wise into the QWeight layout:
/// symmetric: scale = absmax / (2^(b-1) - 0.5), q = clamp(round(x / scale),
/// -2^(b-1), 2^(b-1) - 1) (torchao's symmetric int4/int8); asymmetric:
/// scale = (max - min) / (2^b - 1), offset = min, q = clamp(round((x - min) /
/// scale), 0, 2^b - 1). Scales are rounded to the scale type first and q is
/// computed with the rounded scale.
rt::Result<std::vector<uint8_t>> quantizeRows(const float *x, int64_t rows,
                                              int64_t cols,
                                              const rt::QuantInfo &q);

/// quantizeRows of the rows [first, first + count) of a weight laid out as
/// `l` (QWeightLayout::compute of the whole weight and `q`): `x` holds
/// those rows' floats, their values, scales and offsets go to their places
/// in `out` (l.totalBytes, zeroed by the caller). Rows quantized in any
/// number of such calls give quantizeRows' bytes.
void quantizeRowsInto(const float *x, int64_t first, int64_t count,
                      const rt::QWeightLayout &l, const rt::QuantInfo &q,
                      uint8_t *out);

/// True when GGUF blocks of `dtype` are exactly representable as `q`
/// (Q8_0: 8-bit sym group 32 f16; Q4_0: 4-bit sym group 32 f16; Q4_1:
/// 4-bit asym group 32 f16).
bool canRepackExactly(formats::DType dtype, const rt::QuantInfo &q);

/// The ggml scheme that keeps GGUF blocks of `dtype` as they are (Q5_0,
/// Q5_1, Q4_K, Q5_K, Q6_K: a QWeight of that scheme is the tensor's bytes),
/// or none.
std::optional<rt::QScheme> ggmlSchemeOf(formats::DType dtype);

/// Repacks GGUF Q8_0/Q4_0/Q4_1 blocks (rows x cols, row-major) into the
/// QWeight layout without changing any value.
rt::Result<std::vector<uint8_t>> repackGgufBlocks(formats::DType dtype,
                                                  const uint8_t *src,
                                                  int64_t rows, int64_t cols);

/// Dequantizes a QWeight blob (reference, for tests and the dequantize
/// fallback): rows x cols floats.
rt::Result<std::vector<float>> dequantizeQWeight(const uint8_t *blob,
                                                 size_t size, int64_t rows,
                                                 int64_t cols,
                                                 const rt::QuantInfo &q);

} // namespace etllm

#endif // ETLLM_FORMATS_QUANTIZER_H
