//===- GgmlQuantize.cpp - Simple quantizers of ggml's other formats -------===//
//
// Q5_0 and Q5_1 as ggml's reference quantizers compute them; Q4_K, Q5_K and
// Q6_K with a plain min/max choice of the sub-block scales (ggml searches
// for better ones: make_qkx2_quants, make_qx_quants), quantized against the
// stored 6-bit or int8 scales exactly as ggml's reference then quantizes
// the values. Valid blocks of each format for synthetic checkpoints
// (etllm-gen-checkpoint --gguf-type), which test that GGUF blocks are kept
// and run exactly; not a replacement for llama-quantize. The block layouts
// are ggml's (etllm/runtime/ggml_blocks.h).
//
//===----------------------------------------------------------------------===//
#include "Internal.h"

#include "etllm/runtime/ggml_blocks.h"
#include "etllm/runtime/half.h"

#include <algorithm>
#include <cmath>
#include <cstring>

namespace etllm::formats::detail {

namespace {

int nearestInt(float v) { return int(std::lround(v)); }

void storeHalf(uint8_t *p, float f) {
  uint16_t h = rt::floatToHalf(f);
  std::memcpy(p, &h, 2);
}

/// Q5_0: d = (value of largest magnitude) / -16, q = x / d + 16 in [0, 31].
void quantizeQ5_0(const float *x, uint8_t *b) {
  float amax = 0, max = 0;
  for (int j = 0; j < 32; ++j)
    if (amax < std::fabs(x[j])) {
      amax = std::fabs(x[j]);
      max = x[j];
    }
  const float d = max / -16, id = d != 0 ? 1.0f / d : 0.0f;
  storeHalf(b, d);
  uint32_t qh = 0;
  for (int j = 0; j < 16; ++j) {
    const uint8_t x0 = uint8_t(std::min(31, int(int8_t(x[j] * id + 16.5f))));
    const uint8_t x1 =
        uint8_t(std::min(31, int(int8_t(x[16 + j] * id + 16.5f))));
    b[6 + j] = uint8_t((x0 & 0xF) | ((x1 & 0xF) << 4));
    qh |= uint32_t((x0 & 0x10) >> 4) << j;
    qh |= uint32_t((x1 & 0x10) >> 4) << (j + 16);
  }
  std::memcpy(b + 2, &qh, 4);
}

/// Q5_1: d = (max - min) / 31, m = min, q = (x - min) / d in [0, 31].
void quantizeQ5_1(const float *x, uint8_t *b) {
  float mn = x[0], mx = x[0];
  for (int j = 1; j < 32; ++j) {
    mn = std::min(mn, x[j]);
    mx = std::max(mx, x[j]);
  }
  const float d = (mx - mn) / 31, id = d != 0 ? 1.0f / d : 0.0f;
  storeHalf(b, d);
  storeHalf(b + 2, mn);
  uint32_t qh = 0;
  for (int j = 0; j < 16; ++j) {
    const uint8_t x0 = uint8_t((x[j] - mn) * id + 0.5f);
    const uint8_t x1 = uint8_t((x[16 + j] - mn) * id + 0.5f);
    b[8 + j] = uint8_t((x0 & 0xF) | ((x1 & 0xF) << 4));
    qh |= uint32_t((x0 & 0x10) >> 4) << j;
    qh |= uint32_t((x1 & 0x10) >> 4) << (j + 16);
  }
  std::memcpy(b + 4, &qh, 4);
}

/// Q4_K (bits 4) or Q5_K (bits 5): per sub-block of 32, scale (max - min')
/// / (2^bits - 1) and min -min' (min' = min(0, min x)), both as 6-bit
/// multiples of the super-block's f16 d and dmin; the values quantized
/// against the stored scales and mins.
void quantizeK(const float *x, uint8_t *b, int bits) {
  const int qmax = (1 << bits) - 1;
  float scale[8], mins[8], maxScale = 0, maxMin = 0;
  for (int j = 0; j < 8; ++j) {
    float mn = 0, mx = x[32 * j];
    for (int i = 0; i < 32; ++i) {
      mn = std::min(mn, x[32 * j + i]);
      mx = std::max(mx, x[32 * j + i]);
    }
    scale[j] = (mx - mn) / float(qmax);
    mins[j] = -mn;
    maxScale = std::max(maxScale, scale[j]);
    maxMin = std::max(maxMin, mins[j]);
  }
  const float invScale = maxScale > 0 ? 63.0f / maxScale : 0.0f;
  const float invMin = maxMin > 0 ? 63.0f / maxMin : 0.0f;
  uint8_t ls[8], lm[8];
  uint8_t *scales = b + 4;
  std::memset(scales, 0, 12);
  for (int j = 0; j < 8; ++j) {
    ls[j] = uint8_t(std::min(63, nearestInt(invScale * scale[j])));
    lm[j] = uint8_t(std::min(63, nearestInt(invMin * mins[j])));
    if (j < 4) {
      scales[j] = ls[j];
      scales[j + 4] = lm[j];
    } else {
      scales[j + 4] = uint8_t((ls[j] & 0xF) | ((lm[j] & 0xF) << 4));
      scales[j - 4] |= uint8_t((ls[j] >> 4) << 6);
      scales[j] |= uint8_t((lm[j] >> 4) << 6);
    }
  }
  storeHalf(b, maxScale / 63);
  storeHalf(b + 2, maxMin / 63);
  const float d = rt::ggml::loadHalf(b), dmin = rt::ggml::loadHalf(b + 2);
  uint8_t L[256];
  for (int j = 0; j < 8; ++j) {
    uint8_t sc, m;
    rt::ggml::scaleMinK4(j, scales, sc, m);
    const float dd = d * sc, dm = dmin * m;
    for (int i = 0; i < 32; ++i)
      L[32 * j + i] =
          dd != 0 ? uint8_t(std::clamp(nearestInt((x[32 * j + i] + dm) / dd),
                                       0, qmax))
                  : 0;
  }
  uint8_t *qs = b + (bits == 4 ? 16 : 48);
  if (bits == 5) {
    uint8_t *qh = b + 16;
    std::memset(qh, 0, 32);
    for (int j = 0; j < 8; ++j)
      for (int i = 0; i < 32; ++i)
        qh[i] |= uint8_t(((L[32 * j + i] >> 4) & 1) << j);
  }
  for (int p = 0; p < 4; ++p)
    for (int l = 0; l < 32; ++l)
      qs[32 * p + l] = uint8_t((L[64 * p + l] & 0xF) |
                               ((L[64 * p + 32 + l] & 0xF) << 4));
}

/// Q6_K: per sub-block of 16, scale = (value of largest magnitude) / -32,
/// stored as an int8 multiple of the super-block's f16 d; q = x / (d sc)
/// + 32 in [0, 63].
void quantizeQ6_K(const float *x, uint8_t *b) {
  float scale[16], maxScale = 0, amaxScale = 0;
  for (int j = 0; j < 16; ++j) {
    float amax = 0, max = 0;
    for (int i = 0; i < 16; ++i)
      if (amax < std::fabs(x[16 * j + i])) {
        amax = std::fabs(x[16 * j + i]);
        max = x[16 * j + i];
      }
    scale[j] = max / -32;
    if (std::fabs(scale[j]) > amaxScale) {
      amaxScale = std::fabs(scale[j]);
      maxScale = scale[j];
    }
  }
  const float iscale = maxScale != 0 ? -128.0f / maxScale : 0.0f;
  int8_t *sc = reinterpret_cast<int8_t *>(b + 192);
  for (int j = 0; j < 16; ++j)
    sc[j] = int8_t(std::min(127, nearestInt(iscale * scale[j])));
  storeHalf(b + 208, iscale != 0 ? 1.0f / iscale : 0.0f);
  const float d = rt::ggml::loadHalf(b + 208);
  uint8_t L[256];
  for (int j = 0; j < 16; ++j) {
    const float dd = d * sc[j];
    for (int i = 0; i < 16; ++i)
      L[16 * j + i] =
          dd != 0 ? uint8_t(std::clamp(nearestInt(x[16 * j + i] / dd) + 32, 0,
                                       63))
                  : 32;
  }
  uint8_t *ql = b, *qh = b + 128;
  for (int n = 0; n < 256; n += 128) {
    for (int l = 0; l < 32; ++l) {
      const uint8_t q1 = L[n + l], q2 = L[n + l + 32], q3 = L[n + l + 64],
                    q4 = L[n + l + 96];
      ql[l] = uint8_t((q1 & 0xF) | ((q3 & 0xF) << 4));
      ql[l + 32] = uint8_t((q2 & 0xF) | ((q4 & 0xF) << 4));
      qh[l] = uint8_t((q1 >> 4) | ((q2 >> 4) << 2) | ((q3 >> 4) << 4) |
                      ((q4 >> 4) << 6));
    }
    ql += 64;
    qh += 32;
  }
}

} // namespace

bool quantizeGgmlRows(DType dtype, const float *src, int64_t n, uint8_t *dst) {
  void (*one)(const float *, uint8_t *) = nullptr;
  switch (dtype) {
  case DType::Q5_0:
    one = quantizeQ5_0;
    break;
  case DType::Q5_1:
    one = quantizeQ5_1;
    break;
  case DType::Q4_K:
    one = [](const float *x, uint8_t *b) { quantizeK(x, b, 4); };
    break;
  case DType::Q5_K:
    one = [](const float *x, uint8_t *b) { quantizeK(x, b, 5); };
    break;
  case DType::Q6_K:
    one = quantizeQ6_K;
    break;
  default:
    return false;
  }
  const int64_t bs = dtypeBlockSize(dtype), bb = dtypeBlockBytes(dtype);
  for (int64_t i = 0; i < n / bs; ++i)
    one(src + i * bs, dst + i * bb);
  return true;
}

/// general.file_type of a GGUF whose 2-D tensors are `d` (llama.cpp's
/// LLAMA_FTYPE_MOSTLY_*; K-quants as their _M mixes); 0 (all F32) otherwise.
uint32_t ggufFileType(DType d) {
  switch (d) {
  case DType::F16:
    return 1;
  case DType::BF16:
    return 32;
  case DType::Q8_0:
    return 7;
  case DType::Q4_0:
    return 2;
  case DType::Q5_0:
    return 8;
  case DType::Q5_1:
    return 9;
  case DType::Q4_K:
    return 15; // MOSTLY_Q4_K_M
  case DType::Q5_K:
    return 17; // MOSTLY_Q5_K_M
  case DType::Q6_K:
    return 18;
  default:
    return 0;
  }
}

} // namespace etllm::formats::detail
