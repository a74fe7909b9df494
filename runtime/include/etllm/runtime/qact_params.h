//===- qact_params.h - quantize_dynamic rounding and parameters -*- C++ -*-===//
//
// The scalar pieces of dynamic activation quantization (QActLayout in
// tensor.h) that every implementation must compute identically: rounding
// and the scale / zero point of a row. The portable kernel and the cpu
// backend both call these, so their int8 activations agree bit for bit.
//
//===----------------------------------------------------------------------===//
#ifndef ETLLM_RUNTIME_QACT_PARAMS_H
#define ETLLM_RUNTIME_QACT_PARAMS_H

#include <cmath>
#include <cstdint>

namespace etllm::rt {

/// Rounds to nearest, ties to even (std::nearbyint, as torch.round), and
/// clamps to [lo, hi]; NaN gives 0.
inline int32_t roundClamp(float v, int32_t lo, int32_t hi) {
  float r = std::nearbyint(v);
  if (std::isnan(r))
    return 0;
  if (r < float(lo))
    return lo;
  if (r > float(hi))
    return hi;
  return int32_t(r);
}

/// The int8 scale and zero point of values whose minimum and maximum (both
/// taken with 0 included) are mn and mx and whose largest magnitude is
/// amax. Symmetric: scale = amax / 127, zp = 0. Asymmetric: the range
/// [mn, mx] maps onto [-128, 127]. An all-zero range gets scale 1.
inline void qactParamsFromRange(bool symmetric, float mn, float mx, float amax,
                                float &scale, int32_t &zp) {
  if (symmetric) {
    scale = amax / 127.0f;
    if (scale == 0.0f)
      scale = 1.0f;
    zp = 0;
    return;
  }
  scale = (mx - mn) / 255.0f;
  if (scale == 0.0f)
    scale = 1.0f;
  zp = roundClamp(-128.0f - mn / scale, -128, 127);
}

} // namespace etllm::rt

#endif // ETLLM_RUNTIME_QACT_PARAMS_H
