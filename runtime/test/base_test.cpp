//===- base_test.cpp - fp16/bf16 conversions and mapped files -------------===//
#include "etllm/runtime/half.h"
#include "etllm/runtime/mapped_file.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <fstream>

using namespace etllm::rt;

TEST(Half, RoundTripsEveryHalf) {
  // Every finite half converts to float and back to the same bits.
  for (uint32_t h = 0; h < 0x10000; ++h) {
    uint16_t bits = uint16_t(h);
    if ((bits & 0x7c00) == 0x7c00 && (bits & 0x3ff))
      continue; // NaN payloads are not preserved bit for bit
    EXPECT_EQ(floatToHalf(halfToFloat(bits)), bits) << std::hex << h;
  }
}

TEST(Half, KnownValues) {
  EXPECT_EQ(halfToFloat(0x3c00), 1.0f);
  EXPECT_EQ(halfToFloat(0xc000), -2.0f);
  EXPECT_EQ(halfToFloat(0x0001), std::ldexp(1.0f, -24));
  EXPECT_EQ(floatToHalf(65504.0f), 0x7bff);
  EXPECT_EQ(floatToHalf(1e6f), 0x7c00); // overflow -> inf
  EXPECT_EQ(floatToHalf(1.0f + std::ldexp(1.0f, -11)), 0x3c00); // tie -> even
  EXPECT_EQ(floatToHalf(1.0f + 3 * std::ldexp(1.0f, -11)), 0x3c02);
  EXPECT_TRUE(std::isnan(halfToFloat(floatToHalf(NAN))));
}

TEST(BFloat16, Conversions) {
  EXPECT_EQ(bf16ToFloat(0x3f80), 1.0f);
  EXPECT_EQ(floatToBf16(1.0f), 0x3f80);
  EXPECT_EQ(floatToBf16(bitsToFloat(0x3f808000)), 0x3f80); // tie -> even
  EXPECT_EQ(floatToBf16(bitsToFloat(0x3f818000)), 0x3f82);
  EXPECT_TRUE(std::isnan(bf16ToFloat(floatToBf16(NAN))));
}

TEST(MappedFile, MapsAndBoundsChecks) {
  std::string path = testing::TempDir() + "/etllm_mapped_file_test.bin";
  {
    std::ofstream f(path, std::ios::binary);
    f << "hello";
  }
  auto file = MappedFile::open(path);
  ASSERT_TRUE(file.ok()) << file.message();
  EXPECT_EQ((*file)->size(), 5u);
  EXPECT_EQ(std::string(reinterpret_cast<const char *>((*file)->data()), 5),
            "hello");
  EXPECT_TRUE((*file)->contains(0, 5));
  EXPECT_TRUE((*file)->contains(5, 0));
  EXPECT_FALSE((*file)->contains(1, 5));
  EXPECT_FALSE((*file)->contains(~uint64_t(0), 2)); // no overflow
  std::remove(path.c_str());
}

TEST(MappedFile, MissingFileIsAnErrorNamingThePath) {
  auto file = MappedFile::open("/nonexistent/etllm/file.bin");
  ASSERT_FALSE(file.ok());
  EXPECT_NE(file.message().find("/nonexistent/etllm/file.bin"),
            std::string::npos);
}
