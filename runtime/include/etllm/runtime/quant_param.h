//===- quant_param.h - Scales and offsets of quantized weights --*- C++ -*-===//
#ifndef ETLLM_RUNTIME_QUANT_PARAM_H
#define ETLLM_RUNTIME_QUANT_PARAM_H

#include "etllm/runtime/dtype.h"
#include "etllm/runtime/half.h"

#include <cstddef>
#include <cstdint>
#include <cstring>

namespace etllm::rt {

/// Parameter i (a scale or an offset) of a quantized weight's parameter
/// section at `p`, stored as `scaleType` (F16, else F32).
inline float loadQuantParam(const uint8_t *p, size_t i, DType scaleType) {
  if (scaleType == DType::F16) {
    uint16_t h;
    std::memcpy(&h, p + 2 * i, 2);
    return halfToFloat(h);
  }
  float f;
  std::memcpy(&f, p + 4 * i, 4);
  return f;
}

} // namespace etllm::rt

#endif // ETLLM_RUNTIME_QUANT_PARAM_H
