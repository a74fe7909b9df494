//===- QuantTest.cpp - dtypes, dequantization, quantizers, permutes -------===//
//
// Dequantization is checked against blocks built by hand from the ggml block
// layouts, with expected values derived per element from the documented bit
// positions.
//
//===----------------------------------------------------------------------===//

#include "etllm/Formats/Checkpoint.h"
#include "etllm/Formats/Gguf.h"
#include "etllm/runtime/half.h"
#include "TestUtil.h"

#include <cmath>

using namespace etllm::formats;
using namespace etllm::formats::testing;

namespace {

void putHalf(std::vector<uint8_t> &b, size_t at, float v) {
  uint16_t h = etllm::rt::floatToHalf(v);
  std::memcpy(&b[at], &h, 2);
}

std::vector<float> dequant(DType t, const std::vector<uint8_t> &b, int64_t n) {
  std::vector<float> y(static_cast<size_t>(n));
  Status s = dequantizeRows(t, b.data(), n, y.data());
  EXPECT_TRUE(s.ok()) << s.message();
  return y;
}

TEST(DType, SizesAndNames) {
  EXPECT_EQ(dtypeBlockBytes(DType::Q8_0), 34);
  EXPECT_EQ(dtypeBlockBytes(DType::Q4_0), 18);
  EXPECT_EQ(dtypeBlockBytes(DType::Q4_1), 20);
  EXPECT_EQ(dtypeBlockBytes(DType::Q5_0), 22);
  EXPECT_EQ(dtypeBlockBytes(DType::Q5_1), 24);
  EXPECT_EQ(dtypeBlockBytes(DType::Q4_K), 144);
  EXPECT_EQ(dtypeBlockBytes(DType::Q5_K), 176);
  EXPECT_EQ(dtypeBlockBytes(DType::Q6_K), 210);
  EXPECT_EQ(dtypeBlockSize(DType::Q6_K), 256);
  EXPECT_EQ(dtypeBlockSize(DType::BF16), 1);
  EXPECT_STREQ(dtypeName(DType::Q5_K), "Q5_K");
  EXPECT_EQ(parseDType("bf16").value(), DType::BF16);
  EXPECT_EQ(parseDType("q4_0").value(), DType::Q4_0);
  expectError(parseDType("q3_k"), {"q3_k"});
  EXPECT_EQ(byteSize(DType::F16, {3, 5}).value(), 30u);
  EXPECT_EQ(byteSize(DType::Q4_K, {2, 512}).value(), 4u * 144);
  EXPECT_EQ(byteSize(DType::F32, {}).value(), 4u);
  EXPECT_EQ(byteSize(DType::F32, {0, 7}).value(), 0u);
  expectError(byteSize(DType::Q8_0, {4, 33}), {"multiple", "32"});
  expectError(byteSize(DType::F32, {-1, 2}), {"negative"});
  expectError(byteSize(DType::F32, {1ll << 62, 1ll << 62}), {"overflow"});
  expectError(byteSize(DType::F64, {1ll << 31, 1ll << 31, 1ll << 2}),
              {"overflow"});
}

TEST(Dequantize, Q8_0) {
  std::vector<uint8_t> b(34);
  putHalf(b, 0, 0.25f);
  for (int j = 0; j < 32; ++j)
    b[2 + j] = static_cast<uint8_t>(static_cast<int8_t>(j - 16));
  auto y = dequant(DType::Q8_0, b, 32);
  for (int j = 0; j < 32; ++j)
    EXPECT_EQ(y[j], (j - 16) * 0.25f) << j;
}

TEST(Dequantize, Q4_0AndQ4_1) {
  std::vector<uint8_t> b(18);
  putHalf(b, 0, 0.5f);
  for (int j = 0; j < 16; ++j)
    b[2 + j] = static_cast<uint8_t>(j | ((15 - j) << 4));
  auto y = dequant(DType::Q4_0, b, 32);
  for (int j = 0; j < 16; ++j) {
    EXPECT_EQ(y[j], (j - 8) * 0.5f);
    EXPECT_EQ(y[j + 16], (7 - j) * 0.5f);
  }
  std::vector<uint8_t> c(20);
  putHalf(c, 0, 0.5f);
  putHalf(c, 2, 1.0f);
  for (int j = 0; j < 16; ++j)
    c[4 + j] = static_cast<uint8_t>(j | ((15 - j) << 4));
  y = dequant(DType::Q4_1, c, 32);
  for (int j = 0; j < 16; ++j) {
    EXPECT_EQ(y[j], j * 0.5f + 1.0f);
    EXPECT_EQ(y[j + 16], (15 - j) * 0.5f + 1.0f);
  }
}

TEST(Dequantize, Q5_0AndQ5_1) {
  // Q5_0: qh bit e is the fifth bit of element e.
  std::vector<uint8_t> b(22);
  putHalf(b, 0, 1.0f);
  uint32_t qh = 0xAAAAAAAAu; // odd elements have the fifth bit
  std::memcpy(&b[2], &qh, 4);
  for (int j = 0; j < 16; ++j)
    b[6 + j] = static_cast<uint8_t>(j | ((15 - j) << 4));
  auto y = dequant(DType::Q5_0, b, 64 / 2);
  for (int e = 0; e < 32; ++e) {
    int nibble = e < 16 ? e : 15 - (e - 16);
    int fifth = (qh >> e) & 1;
    EXPECT_EQ(y[e], static_cast<float>(nibble + 16 * fifth - 16)) << e;
  }
  std::vector<uint8_t> c(24);
  putHalf(c, 0, 0.5f);
  putHalf(c, 2, -2.0f);
  uint32_t qh1 = 0x0000FFFFu;
  std::memcpy(&c[4], &qh1, 4);
  for (int j = 0; j < 16; ++j)
    c[8 + j] = static_cast<uint8_t>(j | ((15 - j) << 4));
  y = dequant(DType::Q5_1, c, 32);
  for (int e = 0; e < 32; ++e) {
    int nibble = e < 16 ? e : 15 - (e - 16);
    int fifth = (qh1 >> e) & 1;
    EXPECT_EQ(y[e], (nibble + 16 * fifth) * 0.5f - 2.0f) << e;
  }
}

/// The 6-bit scale/min of sub-block `sub` in the 12-byte K-quant packing:
/// sub-blocks 0-3 keep 6 bits in bytes 0-3 (scales) and 4-7 (mins); 4-7 keep
/// their low 4 bits in the nibbles of bytes 8-11 and their top 2 bits in the
/// top 2 bits of bytes 0-3 (scales) and 4-7 (mins).
void kScale(const uint8_t *s, int sub, int &sc, int &m) {
  if (sub < 4) {
    sc = s[sub] & 63;
    m = s[sub + 4] & 63;
  } else {
    sc = (s[sub + 4] & 15) | ((s[sub - 4] >> 6) << 4);
    m = (s[sub + 4] >> 4) | ((s[sub] >> 6) << 4);
  }
}

std::vector<uint8_t> kScales() {
  // sc = {1,2,3,4, 37,6,7,8}, m = {0,1,2,3, 4,5,6,50}: 37 and 50 need the
  // high bits.
  std::vector<uint8_t> s(12);
  int sc[8] = {1, 2, 3, 4, 37, 6, 7, 8}, m[8] = {0, 1, 2, 3, 4, 5, 6, 50};
  for (int i = 0; i < 4; ++i) {
    s[i] = static_cast<uint8_t>(sc[i] | ((sc[i + 4] >> 4) << 6));
    s[i + 4] = static_cast<uint8_t>(m[i] | ((m[i + 4] >> 4) << 6));
    s[i + 8] = static_cast<uint8_t>((sc[i + 4] & 15) | ((m[i + 4] & 15) << 4));
  }
  int got, gm;
  kScale(s.data(), 4, got, gm);
  EXPECT_EQ(got, 37);
  kScale(s.data(), 7, got, gm);
  EXPECT_EQ(gm, 50);
  return s;
}

TEST(Dequantize, Q4_K) {
  std::vector<uint8_t> b(144);
  putHalf(b, 0, 1.0f);
  putHalf(b, 2, 0.5f);
  std::vector<uint8_t> s = kScales();
  std::copy(s.begin(), s.end(), b.begin() + 4);
  for (int i = 0; i < 128; ++i)
    b[16 + i] = static_cast<uint8_t>((i * 7) & 0xFF);
  auto y = dequant(DType::Q4_K, b, 256);
  for (int e = 0; e < 256; ++e) {
    // Element e: 64-element chunk c, half h (low nibbles then high nibbles
    // of the chunk's 32 bytes), lane l; sub-block 2c + h.
    int c = e / 64, h = (e % 64) / 32, l = e % 32;
    uint8_t q = b[16 + 32 * c + l];
    int nib = h ? q >> 4 : q & 15;
    int sc, m;
    kScale(s.data(), 2 * c + h, sc, m);
    EXPECT_FLOAT_EQ(y[e], 1.0f * sc * nib - 0.5f * m) << e;
  }
}

TEST(Dequantize, Q5_K) {
  std::vector<uint8_t> b(176);
  putHalf(b, 0, 0.25f);
  putHalf(b, 2, 1.0f);
  std::vector<uint8_t> s = kScales();
  std::copy(s.begin(), s.end(), b.begin() + 4);
  for (int l = 0; l < 32; ++l)
    b[16 + l] = static_cast<uint8_t>(l * 13 + 5);
  for (int i = 0; i < 128; ++i)
    b[48 + i] = static_cast<uint8_t>((i * 11) & 0xFF);
  auto y = dequant(DType::Q5_K, b, 256);
  for (int e = 0; e < 256; ++e) {
    // Sub-block k = e / 32 takes its fifth bit from bit k of qh[lane].
    int c = e / 64, h = (e % 64) / 32, l = e % 32, k = e / 32;
    uint8_t q = b[48 + 32 * c + l];
    int nib = (h ? q >> 4 : q & 15) + (((b[16 + l] >> k) & 1) ? 16 : 0);
    int sc, m;
    kScale(s.data(), k, sc, m);
    EXPECT_FLOAT_EQ(y[e], 0.25f * sc * nib - 1.0f * m) << e;
  }
}

TEST(Dequantize, Q6_K) {
  std::vector<uint8_t> b(210);
  for (int i = 0; i < 128; ++i)
    b[i] = static_cast<uint8_t>((i * 29 + 3) & 0xFF); // ql
  for (int i = 0; i < 64; ++i)
    b[128 + i] = static_cast<uint8_t>((i * 37) & 0xFF); // qh
  for (int i = 0; i < 16; ++i)
    b[192 + i] = static_cast<uint8_t>(static_cast<int8_t>(i - 8)); // scales
  putHalf(b, 208, 0.5f);
  auto y = dequant(DType::Q6_K, b, 256);
  for (int e = 0; e < 256; ++e) {
    // 128-element halves n; within, quarter q of 32 lanes l. Low 4 bits: the
    // low (q = 0, 1) or high (q = 2, 3) nibble of ql[64n + l + 32 * (q & 1)];
    // high 2 bits: bits 2q..2q+1 of qh[32n + l]; scale 8n + l/16 + 2q.
    int n = e / 128, q = (e % 128) / 32, l = e % 32;
    uint8_t lo = b[64 * n + l + 32 * (q & 1)];
    int low4 = q < 2 ? lo & 15 : lo >> 4;
    int high2 = (b[128 + 32 * n + l] >> (2 * q)) & 3;
    int v = (low4 | (high2 << 4)) - 32;
    int sc = static_cast<int8_t>(b[192 + 8 * n + l / 16 + 2 * q]);
    EXPECT_FLOAT_EQ(y[e], 0.5f * sc * v) << e;
  }
}

TEST(Dequantize, RejectsBadArguments) {
  std::vector<uint8_t> b(64);
  float y[64];
  Status s = dequantizeRows(DType::F16, b.data(), 32, y);
  EXPECT_FALSE(s.ok());
  s = dequantizeRows(DType::Q8_0, b.data(), 33, y);
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("multiple"), std::string::npos);
}

TEST(Quantize, Q8_0MatchesReference) {
  float x[64];
  for (int j = 0; j < 32; ++j)
    x[j] = (j - 16) * 0.1f;
  for (int j = 32; j < 64; ++j)
    x[j] = 0.0f; // an all-zero block quantizes to d = 0
  std::vector<uint8_t> q(68);
  quantizeRowQ8_0(x, q.data(), 64);
  float d = etllm::rt::halfToFloat(etllm::rt::floatToHalf(1.6f / 127));
  uint16_t dh;
  std::memcpy(&dh, q.data(), 2);
  EXPECT_EQ(etllm::rt::halfToFloat(dh), d);
  EXPECT_EQ(static_cast<int8_t>(q[2]), -127); // x = -1.6 = -amax
  EXPECT_EQ(static_cast<int8_t>(q[2 + 16]), 0);
  auto y = dequant(DType::Q8_0, q, 64);
  for (int j = 0; j < 32; ++j)
    EXPECT_NEAR(y[j], x[j], d * 0.51f);
  for (int j = 32; j < 64; ++j)
    EXPECT_EQ(y[j], 0.0f);
}

TEST(Quantize, Q4_0MatchesReference) {
  float x[32];
  for (int j = 0; j < 32; ++j)
    x[j] = 0.05f * ((j % 9) - 4);
  x[5] = -0.8f; // the largest magnitude, negative: d = max / -8 = 0.1
  std::vector<uint8_t> q(18);
  quantizeRowQ4_0(x, q.data(), 32);
  uint16_t dh;
  std::memcpy(&dh, q.data(), 2);
  float d = etllm::rt::halfToFloat(dh);
  EXPECT_EQ(d, etllm::rt::halfToFloat(etllm::rt::floatToHalf(0.1f)));
  EXPECT_EQ(q[2 + 5] & 15, 0); // -0.8 / 0.1 + 8.5 -> 0
  auto y = dequant(DType::Q4_0, q, 32);
  for (int j = 0; j < 32; ++j)
    EXPECT_NEAR(y[j], x[j], 0.051f) << j;
  EXPECT_NEAR(y[5], -0.8f, 1e-3f);
}

TEST(Convert, ToFloat32PlainTypes) {
  uint16_t h[3] = {etllm::rt::floatToHalf(1.5f), etllm::rt::floatToHalf(-2.0f),
                   etllm::rt::floatToHalf(65504.0f)};
  TensorRef t;
  t.name = "x";
  t.file = "mem";
  t.dtype = DType::F16;
  t.shape = {3};
  t.data = reinterpret_cast<const uint8_t *>(h);
  t.nbytes = 6;
  auto f = toFloat32(t);
  ASSERT_TRUE(f.ok()) << f.message();
  EXPECT_EQ(*f, (std::vector<float>{1.5f, -2.0f, 65504.0f}));
  uint16_t bf[2] = {etllm::rt::floatToBf16(3.0f),
                    etllm::rt::floatToBf16(-0.5f)};
  t.dtype = DType::BF16;
  t.shape = {2};
  t.data = reinterpret_cast<const uint8_t *>(bf);
  t.nbytes = 4;
  EXPECT_EQ(toFloat32(t).value(), (std::vector<float>{3.0f, -0.5f}));
  int64_t i64[2] = {-7, 1 << 20};
  t.dtype = DType::I64;
  t.data = reinterpret_cast<const uint8_t *>(i64);
  t.nbytes = 16;
  EXPECT_EQ(toFloat32(t).value(), (std::vector<float>{-7.0f, 1048576.0f}));
  uint8_t bools[2] = {0, 1};
  t.dtype = DType::BOOL;
  t.data = bools;
  t.nbytes = 2;
  EXPECT_EQ(toFloat32(t).value(), (std::vector<float>{0.0f, 1.0f}));
  t.nbytes = 3; // inconsistent with dtype x shape
  expectError(toFloat32(t), {"mem", "'x'"});
}

TEST(Permute, InterleavedToRotateHalf) {
  // One head of 4 rows [a0, b0, a1, b1] (interleaved pairs) becomes
  // [a0, a1, b0, b1] (rotate-half); rows of 2 floats.
  float in[8] = {10, 11, 20, 21, 12, 13, 22, 23};
  float out[8];
  Status s = permuteQkRowsToRotateHalf(DType::F32, {4, 2}, 1,
                                       reinterpret_cast<const uint8_t *>(in),
                                       reinterpret_cast<uint8_t *>(out));
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(std::vector<float>(out, out + 8),
            (std::vector<float>{10, 11, 12, 13, 20, 21, 22, 23}));
  float back[8];
  ASSERT_TRUE(permuteQkRowsToInterleaved(DType::F32, {4, 2}, 1,
                                         reinterpret_cast<uint8_t *>(out),
                                         reinterpret_cast<uint8_t *>(back))
                  .ok());
  EXPECT_EQ(std::vector<float>(back, back + 8), std::vector<float>(in, in + 8));
}

TEST(Permute, BlockRowsAndBiasesAndErrors) {
  // 2 heads x 4 rows of one Q8_0 block each: rows move as whole blocks.
  std::vector<uint8_t> src(8 * 34), dst(8 * 34), back(8 * 34);
  for (size_t i = 0; i < src.size(); ++i)
    src[i] = static_cast<uint8_t>(i / 34);
  ASSERT_TRUE(
      permuteQkRowsToRotateHalf(DType::Q8_0, {8, 32}, 2, src.data(), dst.data())
          .ok());
  std::vector<int> rowOrder;
  for (int r = 0; r < 8; ++r)
    rowOrder.push_back(dst[r * 34]);
  EXPECT_EQ(rowOrder, (std::vector<int>{0, 2, 1, 3, 4, 6, 5, 7}));
  ASSERT_TRUE(permuteQkRowsToInterleaved(DType::Q8_0, {8, 32}, 2, dst.data(),
                                         back.data())
                  .ok());
  EXPECT_EQ(back, src);
  // 1-D biases permute element-wise.
  float bias[4] = {0, 1, 2, 3}, pb[4];
  ASSERT_TRUE(permuteQkRowsToRotateHalf(DType::F32, {4}, 1,
                                        reinterpret_cast<uint8_t *>(bias),
                                        reinterpret_cast<uint8_t *>(pb))
                  .ok());
  EXPECT_EQ(std::vector<float>(pb, pb + 4), (std::vector<float>{0, 2, 1, 3}));
  EXPECT_FALSE(permuteQkRowsToRotateHalf(DType::F32, {6, 2}, 4, src.data(),
                                         dst.data())
                   .ok()); // 6 rows, 4 heads
  EXPECT_FALSE(permuteQkRowsToRotateHalf(DType::F32, {6, 2}, 2, src.data(),
                                         dst.data())
                   .ok()); // odd head size 3
  EXPECT_FALSE(permuteQkRowsToRotateHalf(DType::Q8_0, {64}, 1, src.data(),
                                         dst.data())
                   .ok()); // no whole-block rows
}

} // namespace
