//===- TensorDataTest.cpp - Tensor conversions to float32 -----------------===//
#include "etllm/Formats/Checkpoint.h"
#include "etllm/runtime/half.h"

#include <gtest/gtest.h>

#include <cstring>
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

} // namespace
