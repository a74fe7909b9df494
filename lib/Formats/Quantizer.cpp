//===- Quantizer.cpp - Block-wise weight quantization ---------------------===//
#include "etllm/Formats/Quantizer.h"

#include "etllm/runtime/half.h"

#include <algorithm>
#include <cmath>
#include <cstring>

namespace etllm {

using rt::Error;
using rt::QuantInfo;
using rt::QWeightLayout;
using rt::Result;

namespace {

/// Rounds `v` to the scale type and back (so q uses the stored scale).
float roundToScaleType(float v, rt::DType t) {
  return t == rt::DType::F16 ? rt::halfToFloat(rt::floatToHalf(v)) : v;
}

void storeScale(uint8_t *dst, int64_t index, float v, rt::DType t) {
  if (t == rt::DType::F16) {
    uint16_t h = rt::floatToHalf(v);
    std::memcpy(dst + index * 2, &h, 2);
  } else {
    std::memcpy(dst + index * 4, &v, 4);
  }
}

float loadScale(const uint8_t *src, int64_t index, rt::DType t) {
  if (t == rt::DType::F16) {
    uint16_t h;
    std::memcpy(&h, src + index * 2, 2);
    return rt::halfToFloat(h);
  }
  float v;
  std::memcpy(&v, src + index * 4, 4);
  return v;
}

/// Stores the quantized value q (signed when symmetric) of element k of
/// `row` at bit width `bits`.
void storeQ(uint8_t *row, int64_t k, int q, unsigned bits, bool symmetric) {
  if (bits == 8) {
    row[k] = symmetric ? uint8_t(int8_t(q)) : uint8_t(q);
    return;
  }
  uint8_t u = uint8_t(symmetric ? q + 8 : q) & 0xf;
  uint8_t &b = row[k / 2];
  b = (k % 2 == 0) ? uint8_t((b & 0xf0) | u) : uint8_t((b & 0x0f) | (u << 4));
}

int loadQ(const uint8_t *row, int64_t k, unsigned bits, bool symmetric) {
  if (bits == 8)
    return symmetric ? int(int8_t(row[k])) : int(row[k]);
  uint8_t b = row[k / 2];
  int u = (k % 2 == 0) ? (b & 0xf) : (b >> 4);
  return symmetric ? u - 8 : u;
}

/// Rounds to the nearest integer, ties to even, as std::nearbyint does in
/// the default rounding mode, for |v| < 2^22 (adding 1.5 * 2^23 leaves no
/// fraction bits). Unlike the libm call it vectorizes. Not valid under
/// -ffast-math, which the project does not use.
inline float roundHalfEven(float v) {
  constexpr float kMagic = 12582912.0f;
  return (v + kMagic) - kMagic;
}

/// The quantized values of one group: q[k] = clamp(round(x[k] * inv)) (or
/// of (x[k] - offset) * inv), clamped in float first (the same integers:
/// the bounds are integers and rounding is monotonic); NaN gives 0.
inline void quantizeGroup(const float *x, int64_t g, float offset, float inv,
                          float qmin, float qmax, int8_t *q) {
  for (int64_t k = 0; k < g; ++k) {
    float v = (x[k] - offset) * inv;
    v = v == v ? v : 0.0f;
    v = v < qmin ? qmin : v;
    v = v > qmax ? qmax : v;
    q[k] = int8_t(int(roundHalfEven(v)));
  }
}

/// max |x[k]| (NaN ignored, as std::max(amax, NaN) ignores it), in eight
/// lanes so that it vectorizes; max is exact, so the order does not matter.
inline float absMax(const float *x, int64_t g) {
  float acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  int64_t k = 0;
  for (; k + 8 <= g; k += 8)
    for (int j = 0; j < 8; ++j) {
      float a = std::fabs(x[k + j]);
      acc[j] = acc[j] < a ? a : acc[j];
    }
  for (; k < g; ++k) {
    float a = std::fabs(x[k]);
    acc[0] = acc[0] < a ? a : acc[0];
  }
  float m = 0;
  for (float a : acc)
    m = m < a ? a : m;
  return m;
}

/// The value of largest magnitude (the first of them; NaN ignored), 0 for
/// an all-zero group.
inline float signedAbsMax(const float *x, int64_t g) {
  float amax = 0, v = 0;
  for (int64_t k = 0; k < g; ++k)
    if (amax < std::fabs(x[k])) {
      amax = std::fabs(x[k]);
      v = x[k];
    }
  return v;
}

} // namespace

// Compiled twice, for AVX2 and for the baseline, the one to run chosen when
// the library loads (GCC's target_clones): the loops above vectorize 8
// wide. No FMA is enabled, so both compute the same IEEE operations in the
// same order per element and give the same bytes.
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
__attribute__((target_clones("avx2", "default")))
#endif
void quantizeRowsInto(const float *x, int64_t first, int64_t count,
                      const QWeightLayout &l, const QuantInfo &q,
                      uint8_t *out) {
  const int64_t cols = l.cols;
  int64_t g = q.groupSize;
  int qmin = q.symmetric ? -(1 << (q.bits - 1)) : 0;
  int qmax = q.symmetric ? (1 << (q.bits - 1)) - 1 : (1 << q.bits) - 1;
  size_t qRowBytes = q.bits == 8 ? size_t(cols) : size_t(cols) / 2;
  // Whole bytes per group: 8-bit, or 4-bit groups of even size (the
  // layout's rows are even); else element by element (storeQ).
  const bool wholeBytes = q.bits == 8 || g % 2 == 0;
  std::vector<int8_t> qg(static_cast<size_t>(g));
  for (int64_t r = first; r < first + count; ++r) {
    const float *xr = x + (r - first) * cols;
    uint8_t *qrow = out + r * qRowBytes;
    for (int64_t gi = 0; gi < l.groups; ++gi) {
      const float *xg = xr + gi * g;
      float scale, offset = 0;
      if (q.symmetric && q.bits == 4) {
        // llama.cpp's Q4_0 rule: the value of largest magnitude maps to -8
        // exactly (the scale takes its sign), so all 16 levels are used
        // and the largest weight has no error. stories260K's perplexity:
        // 6.23 against 6.68 with max |x| / 7.5 (docs/Pipelines.md).
        scale = signedAbsMax(xg, g) / -8.0f;
      } else if (q.symmetric) {
        scale = absMax(xg, g) / (float(qmax) + 0.5f);
      } else {
        float mn = xg[0], mx = xg[0];
        for (int64_t k = 1; k < g; ++k) {
          mn = std::min(mn, xg[k]);
          mx = std::max(mx, xg[k]);
        }
        scale = (mx - mn) / float(qmax);
        offset = roundToScaleType(mn, q.scaleType);
      }
      scale = roundToScaleType(scale, q.scaleType);
      float inv = scale != 0 ? 1.0f / scale : 0.0f;
      quantizeGroup(xg, g, offset, inv, float(qmin), float(qmax), qg.data());
      if (!wholeBytes) {
        for (int64_t k = 0; k < g; ++k)
          storeQ(qrow, gi * g + k, qg[k], q.bits, q.symmetric);
      } else if (q.bits == 8) {
        std::memcpy(qrow + gi * g, qg.data(), size_t(g)); // int8 or uint8 bits
      } else {
        // Element k in byte k/2, the low nibble for even k; signed values
        // stored as q + 8.
        // (In uint8 arithmetic, which keeps the low nibble of q + 8, with
        // restrict pointers: the pairs vectorize.)
        const uint8_t bias = q.symmetric ? 8 : 0;
        const int8_t *__restrict src = qg.data();
        uint8_t *__restrict dst = qrow + gi * g / 2;
        for (int64_t i = 0; i < g / 2; ++i) {
          const uint8_t lo = uint8_t(uint8_t(src[2 * i]) + bias) & 0xf;
          const uint8_t hi = uint8_t(uint8_t(src[2 * i + 1]) + bias) & 0xf;
          dst[i] = uint8_t(lo | (hi << 4));
        }
      }
      int64_t idx = r * l.groups + gi;
      storeScale(out + l.scalesOff, idx, scale, q.scaleType);
      if (!q.symmetric)
        storeScale(out + l.offsetsOff, idx, offset, q.scaleType);
    }
  }
}

Result<std::vector<uint8_t>> quantizeRows(const float *x, int64_t rows,
                                          int64_t cols, const QuantInfo &q) {
  Result<QWeightLayout> layout = QWeightLayout::compute(rows, cols, q);
  if (!layout.ok())
    return layout.error();
  std::vector<uint8_t> out(layout->totalBytes, 0);
  quantizeRowsInto(x, 0, rows, *layout, q, out.data());
  return out;
}

std::optional<rt::QScheme> ggmlSchemeOf(formats::DType dtype) {
  switch (dtype) {
  case formats::DType::Q5_0:
    return rt::QScheme::Q5_0;
  case formats::DType::Q5_1:
    return rt::QScheme::Q5_1;
  case formats::DType::Q4_K:
    return rt::QScheme::Q4_K;
  case formats::DType::Q5_K:
    return rt::QScheme::Q5_K;
  case formats::DType::Q6_K:
    return rt::QScheme::Q6_K;
  default:
    return std::nullopt;
  }
}

bool canRepackExactly(formats::DType dtype, const QuantInfo &q) {
  if (q.scheme != rt::QScheme::Affine)
    return false; // (kept as they are: ggmlSchemeOf)
  if (q.groupSize != 32 || q.scaleType != rt::DType::F16)
    return false;
  switch (dtype) {
  case formats::DType::Q8_0:
    return q.bits == 8 && q.symmetric;
  case formats::DType::Q4_0:
    return q.bits == 4 && q.symmetric;
  case formats::DType::Q4_1:
    return q.bits == 4 && !q.symmetric;
  default:
    return false;
  }
}

Result<std::vector<uint8_t>> repackGgufBlocks(formats::DType dtype,
                                              const uint8_t *src, int64_t rows,
                                              int64_t cols) {
  QuantInfo q;
  q.groupSize = 32;
  q.scaleType = rt::DType::F16;
  q.bits = dtype == formats::DType::Q8_0 ? 8 : 4;
  q.symmetric = dtype != formats::DType::Q4_1;
  if (!canRepackExactly(dtype, q))
    return Error(std::string("cannot repack ") + formats::dtypeName(dtype) +
                 " blocks exactly");
  Result<QWeightLayout> layout = QWeightLayout::compute(rows, cols, q);
  if (!layout.ok())
    return layout.error();
  const QWeightLayout &l = *layout;
  std::vector<uint8_t> out(l.totalBytes, 0);
  size_t blockBytes = formats::dtypeBlockBytes(dtype);
  size_t qRowBytes = q.bits == 8 ? size_t(cols) : size_t(cols) / 2;
  for (int64_t r = 0; r < rows; ++r) {
    uint8_t *qrow = out.data() + r * qRowBytes;
    for (int64_t b = 0; b < l.groups; ++b) {
      const uint8_t *blk = src + (r * l.groups + b) * blockBytes;
      int64_t idx = r * l.groups + b;
      // The f16 scale (and Q4_1's f16 min) are copied bit for bit.
      std::memcpy(out.data() + l.scalesOff + idx * 2, blk, 2);
      if (dtype == formats::DType::Q8_0) {
        std::memcpy(qrow + b * 32, blk + 2, 32);
        continue;
      }
      const uint8_t *qs = blk + (dtype == formats::DType::Q4_1 ? 4 : 2);
      if (dtype == formats::DType::Q4_1)
        std::memcpy(out.data() + l.offsetsOff + idx * 2, blk + 2, 2);
      // ggml packs element j in the low nibble of byte j and element j + 16
      // in the high nibble; ours is element k in byte k/2, low nibble for
      // even k. Q4_0's q - 8 and our sym nibble u - 8 are the same value.
      for (int j = 0; j < 16; ++j) {
        int lo = qs[j] & 0xf, hi = qs[j] >> 4;
        storeQ(qrow, b * 32 + j, dtype == formats::DType::Q4_0 ? lo - 8 : lo, 4,
               dtype == formats::DType::Q4_0);
        storeQ(qrow, b * 32 + j + 16,
               dtype == formats::DType::Q4_0 ? hi - 8 : hi, 4,
               dtype == formats::DType::Q4_0);
      }
    }
  }
  return out;
}

Result<std::vector<float>> dequantizeQWeight(const uint8_t *blob, size_t size,
                                             int64_t rows, int64_t cols,
                                             const QuantInfo &q) {
  Result<QWeightLayout> layout = QWeightLayout::compute(rows, cols, q);
  if (!layout.ok())
    return layout.error();
  const QWeightLayout &l = *layout;
  if (size < l.totalBytes)
    return Error("quantized blob is truncated");
  std::vector<float> out(size_t(rows * cols));
  size_t qRowBytes = q.bits == 8 ? size_t(cols) : size_t(cols) / 2;
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t k = 0; k < cols; ++k) {
      int64_t idx = r * l.groups + k / q.groupSize;
      float s = loadScale(blob + l.scalesOff, idx, q.scaleType);
      float o =
          q.symmetric ? 0.0f : loadScale(blob + l.offsetsOff, idx, q.scaleType);
      out[r * cols + k] =
          s * float(loadQ(blob + r * qRowBytes, k, q.bits, q.symmetric)) + o;
    }
  return out;
}

} // namespace etllm
