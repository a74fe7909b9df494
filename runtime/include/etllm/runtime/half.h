//===- half.h - IEEE fp16 and bfloat16 conversions --------------*- C++ -*-===//
//
// Bit-exact conversions between float and the 16-bit float formats found in
// checkpoints (F16, BF16). Round-to-nearest-even on the way down; NaN stays
// NaN. Shared by the runtime kernels and the compiler's importers.
//
//===----------------------------------------------------------------------===//
#ifndef ETLLM_RUNTIME_HALF_H
#define ETLLM_RUNTIME_HALF_H

#include <cstdint>
#include <cstring>

namespace etllm::rt {

inline float bitsToFloat(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
inline uint32_t floatToBits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

/// IEEE 754 binary16 -> binary32 (exact).
inline float halfToFloat(uint16_t h) {
  uint32_t sign = uint32_t(h & 0x8000) << 16;
  uint32_t exp = (h >> 10) & 0x1f;
  uint32_t mant = h & 0x3ff;
  if (exp == 0) {
    if (mant == 0)
      return bitsToFloat(sign);
    // Subnormal: normalize.
    float f = float(mant) * (1.0f / 16777216.0f); // mant * 2^-24
    return sign ? -f : f;
  }
  if (exp == 31)
    return bitsToFloat(sign | 0x7f800000u | (mant << 13));
  return bitsToFloat(sign | ((exp + 112) << 23) | (mant << 13));
}

/// binary32 -> binary16, round to nearest even.
inline uint16_t floatToHalf(float f) {
  uint32_t x = floatToBits(f);
  uint32_t sign = (x >> 16) & 0x8000;
  uint32_t absx = x & 0x7fffffff;
  if (absx >= 0x7f800000) // Inf or NaN
    return uint16_t(sign | 0x7c00 | (absx > 0x7f800000 ? 0x200 : 0));
  if (absx >= 0x477ff000) // rounds to >= 65520: overflow to Inf
    return uint16_t(sign | 0x7c00);
  if (absx < 0x38800000) { // below the smallest normal half: subnormal/zero
    // Let the FPU do the rounding: add a magic number that aligns the bits.
    float v = bitsToFloat(absx) + 0.5f;
    return uint16_t(sign | (floatToBits(v) - 0x3f000000u));
  }
  uint32_t mantOdd = (absx >> 13) & 1;
  absx += 0xc8000fffu + mantOdd; // rebias exponent (-112 << 23) and round
  return uint16_t(sign | (absx >> 13));
}

/// bfloat16 -> float (exact).
inline float bf16ToFloat(uint16_t b) { return bitsToFloat(uint32_t(b) << 16); }

/// float -> bfloat16, round to nearest even.
inline uint16_t floatToBf16(float f) {
  uint32_t x = floatToBits(f);
  if ((x & 0x7fffffff) > 0x7f800000)
    return uint16_t((x >> 16) | 0x40);
  uint32_t lsb = (x >> 16) & 1;
  return uint16_t((x + 0x7fff + lsb) >> 16);
}

} // namespace etllm::rt

#endif // ETLLM_RUNTIME_HALF_H
