//===- Limits.h - Bounds of checkpoint config values ------------*- C++ -*-===//
#ifndef ETLLM_FORMATS_LIMITS_H
#define ETLLM_FORMATS_LIMITS_H

#include <cstdint>

namespace etllm::formats {

/// The largest dimension or size any checkpoint reader accepts for config
/// values, and the bound of etllm-gen-checkpoint's size flags.
constexpr int64_t kMaxConfigDim = 10000000;

} // namespace etllm::formats

#endif // ETLLM_FORMATS_LIMITS_H
