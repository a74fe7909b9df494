//===- dtype.h - Element types of runtime tensors ---------------*- C++ -*-===//
#ifndef ETLLM_RUNTIME_DTYPE_H
#define ETLLM_RUNTIME_DTYPE_H

#include <cstddef>
#include <cstdint>

namespace etllm::rt {

/// Element type of a runtime tensor. The numeric values are part of the
/// program-file format (schema DType): append only.
enum class DType : uint8_t {
  F32 = 0,
  F16 = 1,
  BF16 = 2,
  I64 = 3,
  I32 = 4,
  I8 = 5,
  U8 = 6,
  Bool = 7,    // one byte per element, 0 or 1
  QWeight = 8, // block-quantized weight, layout in QWeightLayout
  QAct = 9,    // dynamically quantized activation, layout in QActLayout
};

inline constexpr int kNumDTypes = 10;

/// Bytes per element, or 0 for the packed quantized types.
inline size_t elementSize(DType t) {
  switch (t) {
  case DType::F32:
  case DType::I32:
    return 4;
  case DType::F16:
  case DType::BF16:
    return 2;
  case DType::I64:
    return 8;
  case DType::I8:
  case DType::U8:
  case DType::Bool:
    return 1;
  case DType::QWeight:
  case DType::QAct:
    return 0;
  }
  return 0;
}

inline const char *dtypeName(DType t) {
  switch (t) {
  case DType::F32:
    return "f32";
  case DType::F16:
    return "f16";
  case DType::BF16:
    return "bf16";
  case DType::I64:
    return "i64";
  case DType::I32:
    return "i32";
  case DType::I8:
    return "i8";
  case DType::U8:
    return "u8";
  case DType::Bool:
    return "bool";
  case DType::QWeight:
    return "qweight";
  case DType::QAct:
    return "qact";
  }
  return "?";
}

inline bool isFloat(DType t) {
  return t == DType::F32 || t == DType::F16 || t == DType::BF16;
}
inline bool isInteger(DType t) {
  return t == DType::I64 || t == DType::I32 || t == DType::I8 || t == DType::U8;
}

} // namespace etllm::rt

#endif // ETLLM_RUNTIME_DTYPE_H
