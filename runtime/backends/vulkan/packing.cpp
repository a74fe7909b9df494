//===- packing.cpp - Weights in the Vulkan kernels' layouts ---------------===//
#include "etllm/runtime/vulkan/packing.h"

#include "etllm/runtime/half.h"
#include "etllm/runtime/quant_param.h"

#include <cstring>

namespace etllm::rt::vulkan {

bool q4Supports(const QuantInfo &q, int64_t cols) {
  return q.bits == 4 && q.symmetric && q.groupSize == 32 && cols % 32 == 0 &&
         (q.scaleType == DType::F16 || q.scaleType == DType::F32);
}

static std::string partName(size_t i) {
  return "weight part " + std::to_string(i);
}

/// Rows [rowBegin, rowEnd) of a dense QWeight as floats: scale * q (sym),
/// scale * q + offset (asym), the scale read in its type.
static Result<std::vector<float>> dequantizeRows(const WeightPart &p) {
  Result<QWeightLayout> l = QWeightLayout::compute(p.rows, p.cols, p.quant);
  if (!l.ok())
    return l.error();
  if (p.qweightBytes < l->totalBytes)
    return Error("the quantized weight holds " +
                 std::to_string(p.qweightBytes) + " bytes, its layout needs " +
                 std::to_string(l->totalBytes));
  auto scaleAt = [&](size_t off, uint64_t g) {
    return loadQuantParam(p.qweight + off, size_t(g), p.quant.scaleType);
  };
  std::vector<float> out(size_t(p.rowEnd - p.rowBegin) * size_t(p.cols));
  for (int64_t r = p.rowBegin; r < p.rowEnd; ++r)
    for (int64_t c = 0; c < p.cols; ++c) {
      const uint64_t e = uint64_t(r) * uint64_t(p.cols) + uint64_t(c);
      int q;
      if (p.quant.bits == 8) {
        q = p.quant.symmetric ? int(int8_t(p.qweight[e])) : int(p.qweight[e]);
      } else {
        const int u = (p.qweight[e / 2] >> (4 * (e % 2))) & 15;
        q = p.quant.symmetric ? u - 8 : u;
      }
      const uint64_t g = e / uint64_t(p.quant.groupSize);
      float v = scaleAt(l->scalesOff, g) * float(q);
      if (!p.quant.symmetric)
        v += scaleAt(l->offsetsOff, g);
      out[size_t(r - p.rowBegin) * size_t(p.cols) + size_t(c)] = v;
    }
  return out;
}

Result<std::vector<uint8_t>> packWeight(WeightFormat format,
                                        const std::vector<WeightPart> &parts) {
  if (parts.empty())
    return Error("no weight to pack");
  const int64_t cols = parts[0].cols;
  int64_t rows = 0;
  for (size_t i = 0; i < parts.size(); ++i) {
    const WeightPart &p = parts[i];
    if (p.cols != cols)
      return Error(partName(i) + " has " + std::to_string(p.cols) +
                   " columns, the first has " + std::to_string(cols));
    if (p.rowBegin < 0 || p.rowEnd <= p.rowBegin || p.rowEnd > p.rows)
      return Error(partName(i) + ": rows [" + std::to_string(p.rowBegin) +
                   ", " + std::to_string(p.rowEnd) + ") are not within its " +
                   std::to_string(p.rows));
    rows += p.rowEnd - p.rowBegin;
  }
  const uint64_t total = weightBytes(format, rows, cols);
  if (total == 0)
    return Error("a " + std::to_string(rows) + " x " + std::to_string(cols) +
                 " weight has no " +
                 (format == WeightFormat::Q4    ? "q4"
                  : format == WeightFormat::F16 ? "f16"
                                                : "f32") +
                 " layout");
  std::vector<uint8_t> out(total, 0);
  int64_t row = 0; // packed rows so far
  for (size_t i = 0; i < parts.size(); ++i) {
    const WeightPart &p = parts[i];
    const int64_t n = p.rowEnd - p.rowBegin;
    if (format != WeightFormat::Q4) {
      std::vector<float> dequantized;
      const float *src = nullptr;
      if (p.floats) {
        src = p.floats + p.rowBegin * cols;
      } else if (p.qweight) {
        Result<std::vector<float>> d = dequantizeRows(p);
        if (!d.ok())
          return Error(partName(i) + ": " + d.message());
        dequantized = std::move(*d);
        src = dequantized.data();
      } else {
        return Error(partName(i) + " has no values");
      }
      if (format == WeightFormat::F32) {
        std::memcpy(out.data() + uint64_t(row) * cols * 4, src,
                    uint64_t(n) * cols * 4);
      } else {
        uint16_t *dst =
            reinterpret_cast<uint16_t *>(out.data()) + uint64_t(row) * cols;
        for (int64_t e = 0; e < n * cols; ++e)
          dst[e] = floatToHalf(src[e]);
      }
      row += n;
      continue;
    }
    if (!p.qweight || !q4Supports(p.quant, cols))
      return Error(partName(i) +
                   " is not a symmetric 4-bit weight with groups of 32");
    Result<QWeightLayout> l = QWeightLayout::compute(p.rows, cols, p.quant);
    if (!l.ok())
      return Error(partName(i) + ": " + l.message());
    if (p.qweightBytes < l->totalBytes)
      return Error(partName(i) + " holds " + std::to_string(p.qweightBytes) +
                   " bytes, its layout needs " + std::to_string(l->totalBytes));
    // Nibbles: the dense layout's bytes of those rows, as they are.
    std::memcpy(out.data() + uint64_t(row) * cols / 2,
                p.qweight + uint64_t(p.rowBegin) * cols / 2,
                uint64_t(n) * cols / 2);
    // Scales: f16, after all the nibbles.
    const uint64_t groups = uint64_t(cols) / 32;
    uint16_t *scales =
        reinterpret_cast<uint16_t *>(out.data() + uint64_t(rows) * cols / 2) +
        uint64_t(row) * groups;
    const uint8_t *s = p.qweight + l->scalesOff;
    for (uint64_t g = 0; g < uint64_t(n) * groups; ++g) {
      const uint64_t at = uint64_t(p.rowBegin) * groups + g;
      if (p.quant.scaleType == DType::F16) {
        std::memcpy(&scales[g], s + at * 2, 2);
      } else {
        float f;
        std::memcpy(&f, s + at * 4, 4);
        scales[g] = floatToHalf(f);
      }
    }
    row += n;
  }
  return out;
}

float packedValue(WeightFormat format, const uint8_t *data, int64_t rows,
                  int64_t cols, int64_t r, int64_t c) {
  const uint64_t e = uint64_t(r) * cols + c;
  switch (format) {
  case WeightFormat::F32: {
    float f;
    std::memcpy(&f, data + e * 4, 4);
    return f;
  }
  case WeightFormat::F16: {
    uint16_t h;
    std::memcpy(&h, data + e * 2, 2);
    return halfToFloat(h);
  }
  case WeightFormat::Q4: {
    const int u = (data[e / 2] >> (4 * (e % 2))) & 15;
    uint16_t h;
    std::memcpy(&h, data + uint64_t(rows) * cols / 2 + (e / 32) * 2, 2);
    return halfToFloat(h) * float(u - 8);
  }
  }
  return 0;
}

} // namespace etllm::rt::vulkan
