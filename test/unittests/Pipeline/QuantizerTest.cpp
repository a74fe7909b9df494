//===- QuantizerTest.cpp - Quantization and exact GGUF repacking ----------===//
#include "etllm/Formats/Quantizer.h"

#include "etllm/Formats/Checkpoint.h"
#include "etllm/Formats/Gguf.h"
#include "etllm/runtime/kernel.h"
#include "etllm/runtime/testing.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>

using namespace etllm;

namespace {

std::vector<float> randomRows(int64_t rows, int64_t cols, unsigned seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> d(0.0f, 1.0f);
  std::vector<float> x(rows * cols);
  for (float &v : x)
    v = d(rng);
  return x;
}

rt::QuantInfo info(unsigned bits, int64_t group, bool sym, rt::DType scale) {
  rt::QuantInfo q;
  q.bits = bits;
  q.groupSize = group;
  q.symmetric = sym;
  q.scaleType = scale;
  return q;
}

TEST(Quantizer, ErrorStaysWithinHalfAStep) {
  const int64_t rows = 5, cols = 64;
  std::vector<float> x = randomRows(rows, cols, 1);
  for (unsigned bits : {4u, 8u})
    for (bool sym : {true, false})
      for (rt::DType st : {rt::DType::F32, rt::DType::F16}) {
        rt::QuantInfo q = info(bits, 32, sym, st);
        auto blob = quantizeRows(x.data(), rows, cols, q);
        ASSERT_TRUE(blob.ok()) << blob.message();
        auto back =
            dequantizeQWeight(blob->data(), blob->size(), rows, cols, q);
        ASSERT_TRUE(back.ok());
        for (int64_t r = 0; r < rows; ++r)
          for (int64_t g = 0; g < 2; ++g) {
            float mn = 1e30f, mx = -1e30f, amax = 0;
            for (int64_t k = 0; k < 32; ++k) {
              float v = x[r * cols + g * 32 + k];
              mn = std::min(mn, v);
              mx = std::max(mx, v);
              amax = std::max(amax, std::fabs(v));
            }
            // Symmetric 4-bit is Q4_0's rule: the value of largest
            // magnitude is -8 steps (the step takes the opposite sign), so
            // a value within half a step of the other extreme, +8 steps,
            // is clamped to +7: one step of error there, half a step
            // everywhere else.
            const bool q40 = sym && bits == 4;
            float levels = q40   ? 8.0f
                           : sym ? (1 << (bits - 1)) - 0.5f
                                 : (1 << bits) - 1;
            float step = sym ? amax / levels : (mx - mn) / levels;
            // The largest magnitude's sign: which extreme is clamped.
            float sgn = amax == mx ? 1.0f : -1.0f;
            // Half a step, plus the f16 rounding of scale and offset.
            const float rounding =
                (st == rt::DType::F16 ? 2e-3f : 1e-6f) * amax;
            for (int64_t k = 0; k < 32; ++k) {
              int64_t i = r * cols + g * 32 + k;
              const bool clamped = q40 && -sgn * x[i] > 7.5f * step;
              float tol = (clamped ? 1.0f : 0.5f) * step * 1.01f + rounding;
              EXPECT_NEAR((*back)[i], x[i], tol)
                  << "bits " << bits << " sym " << sym << " i " << i;
            }
          }
      }
}

TEST(Quantizer, RuntimeDequantizeAgreesWithTheSerializerLayout) {
  // The compiler writes the blob; the runtime's portable dequantize kernel
  // must read exactly the same values.
  const int64_t rows = 3, cols = 96;
  std::vector<float> x = randomRows(rows, cols, 2);
  for (unsigned bits : {4u, 8u})
    for (bool sym : {true, false}) {
      rt::QuantInfo q = info(bits, 32, sym, rt::DType::F16);
      auto blob = quantizeRows(x.data(), rows, cols, q);
      ASSERT_TRUE(blob.ok());
      auto expect =
          dequantizeQWeight(blob->data(), blob->size(), rows, cols, q);
      rt::Tensor w;
      w.dtype = rt::DType::QWeight;
      w.rank = 2;
      w.sizes[0] = rows;
      w.sizes[1] = cols;
      w.data = blob->data();
      w.capacity = blob->size();
      w.quant = q;
      rt::testing::OwnedTensor out(rt::DType::F32, {rows, cols});
      rt::Tensor *ins[] = {&w};
      rt::Tensor *outs[] = {out.get()};
      rt::ExecContext ctx;
      rt::KernelArgs args;
      args.inputs = {ins, 1};
      args.outputs = {outs, 1};
      args.ctx = &ctx;
      ASSERT_TRUE(rt::portableKernels().get(rt::OpId::Dequantize)(args).ok());
      for (int64_t i = 0; i < rows * cols; ++i)
        ASSERT_EQ(out->ptr<float>()[i], (*expect)[i]) << i;
    }
}

TEST(Quantizer, GgufBlocksRepackExactly) {
  const int64_t rows = 4, cols = 64;
  std::vector<float> x = randomRows(rows, cols, 3);
  for (formats::DType t : {formats::DType::Q8_0, formats::DType::Q4_0}) {
    // ggml's reference quantizer makes the blocks.
    std::vector<uint8_t> blocks(rows * (cols / 32) *
                                formats::dtypeBlockBytes(t));
    for (int64_t r = 0; r < rows; ++r) {
      uint8_t *dst =
          blocks.data() + r * (cols / 32) * formats::dtypeBlockBytes(t);
      if (t == formats::DType::Q8_0)
        formats::quantizeRowQ8_0(x.data() + r * cols, dst, cols);
      else
        formats::quantizeRowQ4_0(x.data() + r * cols, dst, cols);
    }
    std::vector<float> ggml(rows * cols);
    ASSERT_TRUE(
        formats::dequantizeRows(t, blocks.data(), rows * cols, ggml.data())
            .ok());
    auto packed = repackGgufBlocks(t, blocks.data(), rows, cols);
    ASSERT_TRUE(packed.ok()) << packed.message();
    rt::QuantInfo q =
        info(t == formats::DType::Q8_0 ? 8 : 4, 32, true, rt::DType::F16);
    auto ours =
        dequantizeQWeight(packed->data(), packed->size(), rows, cols, q);
    ASSERT_TRUE(ours.ok());
    for (int64_t i = 0; i < rows * cols; ++i)
      ASSERT_EQ((*ours)[i], ggml[i])
          << formats::dtypeName(t) << " element " << i;
  }
}

TEST(Quantizer, RejectsBadParameters) {
  std::vector<float> x(64, 1.0f);
  EXPECT_FALSE(
      quantizeRows(x.data(), 1, 64, info(3, 32, true, rt::DType::F32)).ok());
  EXPECT_FALSE(
      quantizeRows(x.data(), 1, 64, info(4, 48, true, rt::DType::F32)).ok());
  EXPECT_FALSE(repackGgufBlocks(formats::DType::Q4_K, nullptr, 1, 256).ok());
}

} // namespace

namespace {
/// The definition quantizeRows must equal byte for byte: per group, the
/// scale from the value of largest magnitude m (symmetric 4-bit, Q4_0's
/// rule: m / -8), max |x| (symmetric 8-bit: max |x| / 127.5) or min/max
/// (asymmetric), rounded to the scale type; q = clamp(nearbyint((x -
/// offset) / scale)); element k of a
/// row in byte k (8 bits) or in the low (even k) / high nibble of byte k/2
/// (4 bits, signed values + 8).
std::vector<uint8_t> referenceQuantize(const std::vector<float> &x,
                                       int64_t rows, int64_t cols,
                                       const rt::QuantInfo &q) {
  auto l = rt::QWeightLayout::compute(rows, cols, q);
  EXPECT_TRUE(l.ok());
  std::vector<uint8_t> out(l->totalBytes, 0);
  auto toScale = [&](float v) {
    return q.scaleType == rt::DType::F16 ? rt::halfToFloat(rt::floatToHalf(v))
                                         : v;
  };
  auto put = [&](size_t off, int64_t i, float v) {
    if (q.scaleType == rt::DType::F16) {
      uint16_t h = rt::floatToHalf(v);
      std::memcpy(out.data() + off + i * 2, &h, 2);
    } else {
      std::memcpy(out.data() + off + i * 4, &v, 4);
    }
  };
  const int qmin = q.symmetric ? -(1 << (q.bits - 1)) : 0;
  const int qmax = q.symmetric ? (1 << (q.bits - 1)) - 1 : (1 << q.bits) - 1;
  const int64_t g = q.groupSize;
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t gi = 0; gi < cols / g; ++gi) {
      const float *xg = x.data() + r * cols + gi * g;
      float scale, offset = 0;
      if (q.symmetric && q.bits == 4) {
        const float *m = std::max_element(xg, xg + g, [](float a, float b) {
          return std::fabs(a) < std::fabs(b);
        });
        scale = *m / -8.0f;
      } else if (q.symmetric) {
        float amax = 0;
        for (int64_t k = 0; k < g; ++k)
          amax = std::max(amax, std::fabs(xg[k]));
        scale = amax / (float(qmax) + 0.5f);
      } else {
        float mn = *std::min_element(xg, xg + g);
        float mx = *std::max_element(xg, xg + g);
        scale = (mx - mn) / float(qmax);
        offset = toScale(mn);
      }
      scale = toScale(scale);
      float inv = scale != 0 ? 1.0f / scale : 0.0f;
      for (int64_t k = 0; k < g; ++k) {
        int v =
            std::clamp(int(std::nearbyint((xg[k] - offset) * inv)), qmin, qmax);
        int64_t e = r * cols + gi * g + k;
        if (q.bits == 8) {
          out[e] = uint8_t(v);
        } else {
          uint8_t u = uint8_t(q.symmetric ? v + 8 : v) & 0xf;
          out[e / 2] |= e % 2 == 0 ? u : uint8_t(u << 4);
        }
      }
      put(l->scalesOff, r * (cols / g) + gi, scale);
      if (!q.symmetric)
        put(l->offsetsOff, r * (cols / g) + gi, offset);
    }
  return out;
}
} // namespace

TEST(Quantizer, EqualsItsDefinitionByteForByte) {
  // Odd and even group sizes (a 4-bit group of odd size shares bytes with
  // its neighbour), values on exact rounding ties, zeros (a zero scale) and
  // extremes, every bit width, both symmetries and scale types.
  for (unsigned bits : {4u, 8u})
    for (bool sym : {true, false})
      for (rt::DType st : {rt::DType::F16, rt::DType::F32})
        for (int64_t group : {1, 3, 7, 8, 32, 96}) {
          const int64_t rows = 5, cols = 672; // every group size divides it
          if (cols % group)
            continue;
          std::vector<float> x = randomRows(rows, cols, 11 + unsigned(group));
          // Ties: multiples of half a step of a group whose max is 7.5.
          for (int64_t k = 0; k < cols; ++k)
            x[k] = 0.5f * float(k % 16) - 3.5f;
          std::fill(x.begin() + cols, x.begin() + 2 * cols, 0.0f);
          x[2 * cols] = 1e30f;
          x[2 * cols + 1] = -1e-30f;
          rt::QuantInfo q = info(bits, group, sym, st);
          auto got = quantizeRows(x.data(), rows, cols, q);
          ASSERT_TRUE(got.ok()) << got.message();
          EXPECT_EQ(*got, referenceQuantize(x, rows, cols, q))
              << bits << " bits, group " << group << (sym ? " sym" : " asym");
        }
}

TEST(Quantizer, RowsInBlocksGiveTheWholeWeightsBytes) {
  // WeightStore quantizes a weight a block of rows at a time: any split of
  // the rows gives quantizeRows' bytes, 4- and 8-bit, both symmetries.
  const int64_t rows = 13, cols = 96;
  std::vector<float> x = randomRows(rows, cols, 5);
  for (unsigned bits : {4u, 8u})
    for (bool sym : {true, false}) {
      rt::QuantInfo q = info(bits, 32, sym, rt::DType::F16);
      auto whole = quantizeRows(x.data(), rows, cols, q);
      ASSERT_TRUE(whole.ok()) << whole.message();
      auto l = rt::QWeightLayout::compute(rows, cols, q);
      ASSERT_TRUE(l.ok()) << l.message();
      for (int64_t block : {1, 4, 13}) {
        std::vector<uint8_t> out(l->totalBytes, 0);
        for (int64_t r0 = 0; r0 < rows; r0 += block) {
          int64_t n = std::min(block, rows - r0);
          quantizeRowsInto(x.data() + r0 * cols, r0, n, *l, q, out.data());
        }
        EXPECT_EQ(out, *whole) << bits << " bits, blocks of " << block;
      }
    }
}
