//===- slice_bounds.h - PyTorch's clamping of slice bounds ------*- C++ -*-===//
//
// The portable slice kernel and the cpu backend's clamp a slice's start and
// end the same way, through this function.
//
//===----------------------------------------------------------------------===//
#ifndef ETLLM_RUNTIME_SLICE_BOUNDS_H
#define ETLLM_RUNTIME_SLICE_BOUNDS_H

#include <algorithm>
#include <cstdint>

namespace etllm::rt {

/// Clamps [start, end) to a dimension of `size` as PyTorch does: a negative
/// bound counts from the end, then both are limited to [0, size].
inline void clampSliceBounds(int64_t size, int64_t &start, int64_t &end) {
  if (start < 0)
    start += size;
  if (end < 0)
    end += size;
  start = std::min(std::max<int64_t>(start, 0), size);
  end = std::min(std::max<int64_t>(end, 0), size);
}

} // namespace etllm::rt

#endif // ETLLM_RUNTIME_SLICE_BOUNDS_H
