//===- format_test.cpp - Packing and the barrier rule (no device) ---------===//
#include "etllm/runtime/half.h"
#include "etllm/runtime/testing.h"
#include "etllm/runtime/vulkan/format.h"
#include "etllm/runtime/vulkan/packing.h"

#include <gtest/gtest.h>

#include <random>

namespace etllm::rt::vulkan {
namespace {

TEST(VulkanFormat, Q4KeepsTheDenseNibblesAndScales) {
  // Two weights of 3 and 2 rows, 64 columns, packed one after the other:
  // every value is the portable dequantization's.
  QuantInfo q;
  q.bits = 4;
  q.groupSize = 32;
  q.scaleType = DType::F16;
  std::mt19937 rng(1);
  std::uniform_int_distribution<int> qv(-8, 7);
  std::vector<rt::testing::OwnedTensor> w;
  std::vector<std::vector<int32_t>> qs;
  std::vector<std::vector<float>> scales;
  for (int64_t rows : {3, 2}) {
    std::vector<int32_t> vals(size_t(rows * 64));
    for (auto &v : vals)
      v = qv(rng);
    std::vector<float> sc(size_t(rows * 2));
    for (size_t i = 0; i < sc.size(); ++i)
      sc[i] = 0.01f * float(i + 1);
    w.push_back(rt::testing::makeQWeight(rows, 64, q, vals, sc));
    qs.push_back(vals);
    scales.push_back(sc);
  }
  std::vector<WeightPart> parts;
  for (size_t i = 0; i < 2; ++i) {
    WeightPart p;
    p.qweight = w[i]->ptr<uint8_t>();
    p.qweightBytes = w[i]->capacity;
    p.quant = q;
    p.rows = w[i]->sizes[0];
    p.cols = 64;
    p.rowBegin = 0;
    p.rowEnd = p.rows;
    parts.push_back(p);
  }
  auto packed = packWeight(WeightFormat::Q4, parts);
  ASSERT_TRUE(packed.ok()) << packed.message();
  EXPECT_EQ(packed->size(), weightBytes(WeightFormat::Q4, 5, 64));
  for (int64_t r = 0; r < 5; ++r)
    for (int64_t c = 0; c < 64; ++c) {
      const size_t part = r < 3 ? 0 : 1, pr = size_t(r < 3 ? r : r - 3);
      const float want =
          halfToFloat(floatToHalf(scales[part][pr * 2 + size_t(c / 32)])) *
          float(qs[part][pr * 64 + size_t(c)]);
      EXPECT_EQ(packedValue(WeightFormat::Q4, packed->data(), 5, 64, r, c),
                want)
          << r << "," << c;
    }
  // A row range of one part.
  parts[0].rowBegin = 1;
  parts[0].rowEnd = 3;
  auto range = packWeight(WeightFormat::Q4, {parts[0]});
  ASSERT_TRUE(range.ok());
  EXPECT_EQ(packedValue(WeightFormat::Q4, range->data(), 2, 64, 0, 5),
            packedValue(WeightFormat::Q4, packed->data(), 5, 64, 1, 5));
}

TEST(VulkanFormat, RejectsWeightsWithoutALayout) {
  std::vector<float> f(3 * 33, 1.0f);
  WeightPart p;
  p.floats = f.data();
  p.rows = 3;
  p.cols = 33;
  p.rowEnd = 3;
  EXPECT_FALSE(packWeight(WeightFormat::F16, {p}).ok()); // odd columns
  EXPECT_TRUE(packWeight(WeightFormat::F32, {p}).ok());
  p.rowEnd = 4;
  EXPECT_FALSE(packWeight(WeightFormat::F32, {p}).ok()); // rows past the end
  QuantInfo q8;
  q8.bits = 8;
  q8.groupSize = 32;
  EXPECT_FALSE(q4Supports(q8, 64));
  EXPECT_EQ(weightBytes(WeightFormat::Q4, 2, 48), 0u);
}

TEST(VulkanFormat, BarrierRule) {
  const Access writeA{0, 0, 256, true}, readA{0, 128, 512, false},
      readB{1, 0, 256, false}, writeA2{0, 256, 512, true};
  EXPECT_TRUE(needsBarrier({writeA}, {readA}));    // read after write
  EXPECT_TRUE(needsBarrier({readA}, {writeA}));    // write after read
  EXPECT_TRUE(needsBarrier({writeA}, {writeA}));   // write after write
  EXPECT_FALSE(needsBarrier({readA}, {readA}));    // reads only
  EXPECT_FALSE(needsBarrier({writeA}, {readB}));   // another buffer
  EXPECT_FALSE(needsBarrier({writeA}, {writeA2})); // adjacent, not overlapping
  EXPECT_TRUE(selfConflict({writeA, readA}));
  EXPECT_FALSE(selfConflict({readA, readA}));
}

TEST(VulkanFormat, KernelTable) {
  for (int k = 0; k < kNumKernels; ++k) {
    const KernelInfo &info = kernelInfo(KernelId(k));
    EXPECT_EQ(info.paramBytes % 16, 0u) << info.name;
    for (uint32_t v = 0; v < 16; ++v) {
      if (!validVariant(KernelId(k), v))
        continue;
      uint32_t written = 0;
      for (uint32_t b = 0; b < numBindings(KernelId(k), v); ++b)
        written += writesBinding(KernelId(k), v, b);
      EXPECT_GE(written, 1u) << info.name << " variant " << v;
    }
  }
}

} // namespace
} // namespace etllm::rt::vulkan
