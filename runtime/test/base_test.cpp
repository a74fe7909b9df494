//===- base_test.cpp - fp16/bf16, mapped files, the operator table --------===//
#include "etllm/runtime/flags.h"
#include "etllm/runtime/half.h"
#include "etllm/runtime/kernel.h"
#include "etllm/runtime/mapped_file.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstring>
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

// ops.def is generated from the op contracts; its attribute entries agree
// with its counts.
TEST(OpTable, AttributeEntriesMatchTheCounts) {
  for (size_t i = 0; i < size_t(OpId::NumOps); ++i) {
    OpId id = OpId(i);
    const OpInfo &op = opInfo(id);
    SCOPED_TRACE(op.name);
    EXPECT_EQ(findOp(op.name, std::strlen(op.name)), &op);
    Span<const IntAttrInfo> ints = intAttrs(id);
    if (op.numInts >= 0) {
      EXPECT_EQ(ints.size, size_t(op.numInts));
      for (const IntAttrInfo &a : ints)
        EXPECT_NE(a.kind, IntAttrKind::List);
    } else {
      ASSERT_GT(ints.size, 0u);
      EXPECT_EQ(ints[ints.size - 1].kind, IntAttrKind::List);
    }
    EXPECT_EQ(floatAttrNames(id).size, size_t(op.numFloats));
  }
  Span<const IntAttrInfo> sdpa = intAttrs(OpId::Sdpa);
  ASSERT_EQ(sdpa.size, 4u);
  EXPECT_STREQ(sdpa[0].name, "has_mask");
  EXPECT_EQ(sdpa[0].kind, IntAttrKind::Input);
  EXPECT_EQ(sdpa[2].kind, IntAttrKind::Flag);
  EXPECT_EQ(sdpa[3].kind, IntAttrKind::Value);
  EXPECT_EQ(intAttrs(OpId::Rope)[0].kind, IntAttrKind::Enum);
  EXPECT_EQ(intAttrs(OpId::Rope)[0].max, 2); // deinterleave_rotate_half
  EXPECT_STREQ(floatAttrNames(OpId::RmsNorm)[1], "weight_offset");
  EXPECT_EQ(intAttrs(OpId::Neg).size, 0u);
}

TEST(OpTable, CheckIntAttrs) {
  int64_t gelu[] = {1};
  EXPECT_TRUE(checkIntAttrs(OpId::Gelu, 1, {gelu, 1}).ok());
  gelu[0] = 5;
  EXPECT_FALSE(checkIntAttrs(OpId::Gelu, 1, {gelu, 1}).ok());
  // sdpa q, k, v, positions: has_mask 0, has_positions 1.
  int64_t sdpa[] = {0, 1, 1, 0};
  EXPECT_TRUE(checkIntAttrs(OpId::Sdpa, 4, {sdpa, 4}).ok());
  EXPECT_FALSE(checkIntAttrs(OpId::Sdpa, 5, {sdpa, 4}).ok());
  // Values and lists are not range-checked.
  int64_t reshape[] = {-1, 8, 8};
  EXPECT_TRUE(checkIntAttrs(OpId::Reshape, 1, {reshape, 3}).ok());
}

// The one parser of numeric flags (flags.h).
TEST(Flags, NumbersAreFiniteAndInRange) {
  using namespace etllm::rt;
  const NumberRange unit{0, 1, true, false};
  EXPECT_EQ(parseNumber("--top-p", "0.5", unit).value(), 0.5);
  EXPECT_EQ(parseNumber("--top-p", "1", unit).value(), 1.0);
  for (const char *bad : {"nan", "NaN", "inf", "-inf", "1e999", "", " 0.5",
                          "0.5 ", "0x", "0", "1.0000001", "abc"}) {
    Result<double> r = parseNumber("--top-p", bad, unit);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_EQ(r.message().rfind("--top-p: ", 0), 0u) << r.message();
  }
  EXPECT_EQ(parseNumber("--top-p", nullptr, unit).message(),
            "--top-p: the value is missing");
  EXPECT_EQ(parseNumber("--top-p", "0", unit).message(),
            "--top-p: '0' is out of range (a number in (0, 1])");
  const NumberRange count{0, 100, false, false, true};
  EXPECT_EQ(parseNumber("-n", "100", count).value(), 100);
  EXPECT_EQ(parseNumber("-n", "1e2", count).message(),
            "-n: '1e2' is not an integer");
  EXPECT_FALSE(parseNumber("-n", "1.5", count).ok());
  EXPECT_FALSE(checkNumber("temperature", std::nan(""), unit).ok());
  EXPECT_EQ(checkNumber("temperature", 2, unit).message(),
            "temperature: 2 is out of range (a number in (0, 1])");
  EXPECT_FALSE(checkNumber("top_k", 1.5, count).ok());
}

TEST(Flags, IntegersSeedsAndByteSizes) {
  using namespace etllm::rt;
  EXPECT_EQ(parseInteger("--x", "-7", -10, 10).value(), -7);
  EXPECT_FALSE(parseInteger("--x", "11", -10, 10).ok());
  EXPECT_FALSE(parseInteger("--x", "99999999999999999999", 0, 10).ok());
  EXPECT_FALSE(parseInteger("--x", "+", 0, 10).ok());
  EXPECT_FALSE(parseInteger("--x", "1 ", 0, 10).ok());
  EXPECT_EQ(parseUnsigned("--seed", "18446744073709551615").value(),
            UINT64_MAX);
  EXPECT_FALSE(parseUnsigned("--seed", "18446744073709551616").ok());
  EXPECT_FALSE(parseUnsigned("--seed", "-1").ok());
  EXPECT_EQ(parseByteSize("--max-memory", "512M").value(), uint64_t(512) << 20);
  EXPECT_EQ(parseByteSize("--max-memory", "2GiB").value(), uint64_t(2) << 30);
  EXPECT_EQ(parseByteSize("--max-memory", "1000").value(), 1000u);
  for (const char *bad : {"", "M", "5x", "-1M", "1.5G", "99999999999T"})
    EXPECT_FALSE(parseByteSize("--max-memory", bad).ok()) << bad;
}

TEST(Flags, ThreadsWithinTheMachine) {
  using namespace etllm::rt;
  size_t hw = hardwareThreads();
  ASSERT_GE(hw, 1u);
  EXPECT_EQ(parseThreads("--threads", "1").value(), 1u);
  EXPECT_EQ(parseThreads("--threads", std::to_string(hw).c_str()).value(), hw);
  Result<size_t> r = parseThreads("--threads", std::to_string(hw + 1).c_str());
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.message(), "--threads: " + std::to_string(hw + 1) +
                             " is out of range (1 to the machine's " +
                             std::to_string(hw) + " hardware threads)");
  EXPECT_FALSE(parseThreads("--threads", "0").ok());
  EXPECT_FALSE(parseThreads("--threads", "nan").ok());
  EXPECT_FALSE(parseThreads("--threads", "4611686018427387904").ok());
}
