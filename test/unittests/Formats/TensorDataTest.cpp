//===- TensorDataTest.cpp - Tensor conversions to float32 -----------------===//
#include "etllm/Formats/Checkpoint.h"
#include "etllm/runtime/half.h"

#include <gtest/gtest.h>

#include <cstring>
#include <utility>
#include <vector>

using namespace etllm::formats;

namespace {

uint32_t bitsOf(float f) {
  uint32_t b;
  std::memcpy(&b, &f, 4);
  return b;
}

// Every half value (zeros, subnormals, normals, infinities, quiet and
// signalling NaNs with their payloads), from an odd offset and with a tail
// shorter than a vector: bit-identical to the scalar halfToFloat, whatever
// path toFloat32 takes on this CPU.
TEST(TensorData, EveryHalfConvertsExactly) {
  const size_t n = 65536 + 5;
  std::vector<uint8_t> bytes(2 * n + 1);
  for (size_t i = 0; i < n; ++i) {
    uint16_t h = uint16_t(i * 40503u); // a permutation of 0..65535, then 5
    std::memcpy(bytes.data() + 1 + 2 * i, &h, 2);
  }
  TensorRef t;
  t.name = "t";
  t.file = "mem";
  t.dtype = DType::F16;
  t.shape = {int64_t(n)};
  t.data = bytes.data() + 1;
  t.nbytes = 2 * n;
  auto f = toFloat32(t);
  ASSERT_TRUE(f.ok()) << f.message();
  ASSERT_EQ(f->size(), n);
  size_t mismatches = 0;
  for (size_t i = 0; i < n; ++i) {
    uint16_t h;
    std::memcpy(&h, t.data + 2 * i, 2);
    mismatches += bitsOf((*f)[i]) != bitsOf(etllm::rt::halfToFloat(h));
  }
  EXPECT_EQ(mismatches, 0u);
}

// toFloat32Range: any whole-block slice equals the same slice of
// toFloat32, for plain and block types; a range that is not whole blocks or
// runs past the end is refused, naming the tensor.
TEST(TensorData, RangesEqualSlicesOfTheWhole) {
  // 2 rows of 64: F16 values, and Q8_0 blocks (34 bytes: f16 scale, 32 int8).
  std::vector<uint8_t> f16(2 * 128), q8(4 * 34);
  for (size_t i = 0; i < 128; ++i) {
    uint16_t h = etllm::rt::floatToHalf(float(i) * 0.25f - 7.0f);
    std::memcpy(f16.data() + 2 * i, &h, 2);
  }
  for (size_t b = 0; b < 4; ++b) {
    uint16_t s = etllm::rt::floatToHalf(0.5f + float(b));
    std::memcpy(q8.data() + 34 * b, &s, 2);
    for (size_t k = 0; k < 32; ++k)
      q8[34 * b + 2 + k] = uint8_t(int8_t(int(k) - 16));
  }
  for (auto [dtype, bytes] :
       {std::pair{DType::F16, &f16}, std::pair{DType::Q8_0, &q8}}) {
    TensorRef t;
    t.name = "w";
    t.file = "mem";
    t.dtype = dtype;
    t.shape = {2, 64};
    t.data = bytes->data();
    t.nbytes = bytes->size();
    auto whole = toFloat32(t);
    ASSERT_TRUE(whole.ok()) << whole.message();
    for (auto [first, count] : {std::pair<uint64_t, uint64_t>{0, 128},
                                {64, 64},
                                {32, 64},
                                {96, 32},
                                {128, 0}}) {
      std::vector<float> got(count);
      auto st = toFloat32Range(t, first, count, got.data());
      ASSERT_TRUE(st.ok()) << st.message();
      EXPECT_EQ(got, std::vector<float>(whole->begin() + first,
                                        whole->begin() + first + count))
          << dtypeName(dtype) << " [" << first << ", +" << count << ")";
    }
    std::vector<float> sink(256);
    for (auto [first, count] :
         {std::pair<uint64_t, uint64_t>{0, 129}, {128, 1}, {~0ull, 2}}) {
      auto st = toFloat32Range(t, first, count, sink.data());
      ASSERT_FALSE(st.ok()) << first << " +" << count;
      EXPECT_NE(st.message().find("mem: tensor 'w'"), std::string::npos)
          << st.message();
    }
    if (dtype == DType::Q8_0) {
      auto st = toFloat32Range(t, 16, 32, sink.data());
      EXPECT_FALSE(st.ok()) << "half a block";
    }
  }
}

} // namespace
