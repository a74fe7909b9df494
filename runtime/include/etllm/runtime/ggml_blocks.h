//===- ggml_blocks.h - ggml's quantized block formats -----------*- C++ -*-===//
//
// The block formats of ggml (llama.cpp's ggml-common.h and ggml-quants.c),
// defined once: the GGUF reader (lib/Formats) dequantizes checkpoint tensors
// with these functions, and QWeights of the ggml schemes (tensor.h QScheme)
// keep a GGUF's blocks as they are, which the portable kernels dequantize
// with the same functions. Blocks are little-endian structs of f16 scales and
// packed values along a row; the arithmetic (and its f32 evaluation order)
// is ggml's reference dequantization.
//
//===----------------------------------------------------------------------===//
#ifndef ETLLM_RUNTIME_GGML_BLOCKS_H
#define ETLLM_RUNTIME_GGML_BLOCKS_H

#include "etllm/runtime/half.h"
#include "etllm/runtime/tensor.h"

#include <cstdint>
#include <cstring>

namespace etllm::rt::ggml {

inline float loadHalf(const uint8_t *p) {
  uint16_t h;
  std::memcpy(&h, p, 2);
  return halfToFloat(h);
}

/// Values per block of the 32-value formats and the super-block formats.
inline constexpr int kQK = 32;
inline constexpr int kQKK = 256;

/// block_q8_0 { half d; int8 qs[32]; }: 34 bytes.
inline void dequantQ8_0(const uint8_t *b, float *y) {
  const float d = loadHalf(b);
  const int8_t *qs = reinterpret_cast<const int8_t *>(b + 2);
  for (int j = 0; j < kQK; ++j)
    y[j] = qs[j] * d;
}

/// block_q4_0 { half d; uint8 qs[16]; }: 18 bytes; low nibbles are values
/// 0..15, high nibbles 16..31, both offset by 8.
inline void dequantQ4_0(const uint8_t *b, float *y) {
  const float d = loadHalf(b);
  const uint8_t *qs = b + 2;
  for (int j = 0; j < kQK / 2; ++j) {
    y[j] = ((qs[j] & 0x0F) - 8) * d;
    y[j + kQK / 2] = ((qs[j] >> 4) - 8) * d;
  }
}

/// block_q4_1 { half d; half m; uint8 qs[16]; }: 20 bytes.
inline void dequantQ4_1(const uint8_t *b, float *y) {
  const float d = loadHalf(b), m = loadHalf(b + 2);
  const uint8_t *qs = b + 4;
  for (int j = 0; j < kQK / 2; ++j) {
    y[j] = (qs[j] & 0x0F) * d + m;
    y[j + kQK / 2] = (qs[j] >> 4) * d + m;
  }
}

/// The 5-bit value j (< 32) of a Q5_0/Q5_1 block: qs holds the low nibbles
/// (values 0..15 low, 16..31 high), bit j of qh the fifth bit of value j.
inline int q5Value(const uint8_t *qs, uint32_t qh, int j) {
  const int lo = j < 16 ? (qs[j] & 0x0F) : (qs[j - 16] >> 4);
  return lo | int((qh >> j) & 1) << 4;
}

/// block_q5_0 { half d; uint8 qh[4]; uint8 qs[16]; }: 22 bytes; x = d (q - 16).
inline void dequantQ5_0(const uint8_t *b, float *y) {
  const float d = loadHalf(b);
  uint32_t qh;
  std::memcpy(&qh, b + 2, 4);
  for (int j = 0; j < kQK; ++j)
    y[j] = (q5Value(b + 6, qh, j) - 16) * d;
}

/// block_q5_1 { half d; half m; uint8 qh[4]; uint8 qs[16]; }: 24 bytes;
/// x = d q + m.
inline void dequantQ5_1(const uint8_t *b, float *y) {
  const float d = loadHalf(b), m = loadHalf(b + 2);
  uint32_t qh;
  std::memcpy(&qh, b + 4, 4);
  for (int j = 0; j < kQK; ++j)
    y[j] = q5Value(b + 8, qh, j) * d + m;
}

/// The 6-bit scale and min of sub-block j (< 8) of a Q4_K/Q5_K super-block,
/// packed in 12 bytes: j < 4 in the low 6 bits of bytes j and j + 4; j >= 4
/// in the nibbles of byte j + 4 and the top 2 bits of bytes j - 4 and j.
inline void scaleMinK4(int j, const uint8_t *q, uint8_t &d, uint8_t &m) {
  if (j < 4) {
    d = q[j] & 63;
    m = q[j + 4] & 63;
  } else {
    d = (q[j + 4] & 0xF) | ((q[j - 4] >> 6) << 4);
    m = (q[j + 4] >> 4) | ((q[j - 0] >> 6) << 4);
  }
}

/// The 4-bit part of value i (< 32) of sub-block j (< 8) of a Q4_K/Q5_K
/// super-block: sub-blocks 2p and 2p + 1 share the 32 bytes at qs + 32 p,
/// low and high nibbles.
inline int q4kNibble(const uint8_t *qs, int j, int i) {
  const uint8_t v = qs[(j / 2) * 32 + i];
  return j % 2 ? v >> 4 : v & 0xF;
}

/// block_q4_K { half d; half dmin; uint8 scales[12]; uint8 qs[128]; }: 144
/// bytes, 8 sub-blocks of 32; x = (d sc_j) q - (dmin m_j).
inline void dequantQ4_K(const uint8_t *b, float *y) {
  const float d = loadHalf(b), min = loadHalf(b + 2);
  for (int j = 0; j < 8; ++j) {
    uint8_t sc, m;
    scaleMinK4(j, b + 4, sc, m);
    const float dj = d * sc, mj = min * m;
    for (int i = 0; i < 32; ++i)
      *y++ = dj * q4kNibble(b + 16, j, i) - mj;
  }
}

/// block_q5_K { half d; half dmin; uint8 scales[12]; uint8 qh[32];
/// uint8 qs[128]; }: 176 bytes; as Q4_K, with bit j of qh[i] the fifth bit
/// of value i of sub-block j.
inline void dequantQ5_K(const uint8_t *b, float *y) {
  const float d = loadHalf(b), min = loadHalf(b + 2);
  const uint8_t *qh = b + 16;
  for (int j = 0; j < 8; ++j) {
    uint8_t sc, m;
    scaleMinK4(j, b + 4, sc, m);
    const float dj = d * sc, mj = min * m;
    for (int i = 0; i < 32; ++i)
      *y++ = dj * (q4kNibble(b + 48, j, i) + ((qh[i] >> j) & 1) * 16) - mj;
  }
}

/// The 6-bit value v (< 256, unsigned: q + 32) of a Q6_K super-block: in
/// each half of 128 values (ql + 64 n, qh + 32 n), value 32 k + l (k < 4,
/// l < 32) has its low 4 bits in ql[l + 32 (k % 2)] (low nibble for k < 2)
/// and its top 2 bits at bit 2 k of qh[l].
inline int q6kValue(const uint8_t *ql, const uint8_t *qh, int v) {
  const int n = v / 128, k = (v % 128) / 32, l = v % 32;
  const uint8_t lo = ql[64 * n + l + 32 * (k % 2)];
  const int low = k < 2 ? lo & 0xF : lo >> 4;
  return low | ((qh[32 * n + l] >> (2 * k)) & 3) << 4;
}

/// block_q6_K { uint8 ql[128]; uint8 qh[64]; int8 scales[16]; half d; }:
/// 210 bytes, 16 sub-blocks of 16 with int8 scales; x = (d sc_j) (q - 32).
inline void dequantQ6_K(const uint8_t *b, float *y) {
  const int8_t *sc = reinterpret_cast<const int8_t *>(b + 192);
  const float d = loadHalf(b + 208);
  for (int v = 0; v < kQKK; ++v)
    y[v] = d * sc[v / 16] * (q6kValue(b, b + 128, v) - 32);
}

/// The stored (unsigned) value v (< blockValues(s)) of a block of scheme
/// `s` (not Affine): Q5_0 and Q6_K store q + 16 and q + 32, the others q.
inline uint8_t storedValue(QScheme s, const uint8_t *b, int v) {
  uint32_t qh;
  switch (s) {
  case QScheme::Q5_0:
    std::memcpy(&qh, b + 2, 4);
    return uint8_t(q5Value(b + 6, qh, v));
  case QScheme::Q5_1:
    std::memcpy(&qh, b + 4, 4);
    return uint8_t(q5Value(b + 8, qh, v));
  case QScheme::Q4_K:
    return uint8_t(q4kNibble(b + 16, v / 32, v % 32));
  case QScheme::Q5_K:
    return uint8_t(q4kNibble(b + 48, v / 32, v % 32) |
                   ((b[16 + v % 32] >> (v / 32)) & 1) << 4);
  case QScheme::Q6_K:
    return uint8_t(q6kValue(b, b + 128, v));
  case QScheme::Affine:
    break;
  }
  return 0;
}

/// Values and bytes per block of a ggml scheme (0 for Affine).
inline int64_t blockValues(QScheme s) {
  switch (s) {
  case QScheme::Q5_0:
  case QScheme::Q5_1:
    return kQK;
  case QScheme::Q4_K:
  case QScheme::Q5_K:
  case QScheme::Q6_K:
    return kQKK;
  case QScheme::Affine:
    break;
  }
  return 0;
}
inline int64_t blockBytes(QScheme s) {
  switch (s) {
  case QScheme::Q5_0:
    return 22;
  case QScheme::Q5_1:
    return 24;
  case QScheme::Q4_K:
    return 144;
  case QScheme::Q5_K:
    return 176;
  case QScheme::Q6_K:
    return 210;
  case QScheme::Affine:
    break;
  }
  return 0;
}

/// Dequantizes one block of scheme `s` (not Affine) into blockValues(s)
/// floats.
inline void dequantBlock(QScheme s, const uint8_t *b, float *y) {
  switch (s) {
  case QScheme::Q5_0:
    return dequantQ5_0(b, y);
  case QScheme::Q5_1:
    return dequantQ5_1(b, y);
  case QScheme::Q4_K:
    return dequantQ4_K(b, y);
  case QScheme::Q5_K:
    return dequantQ5_K(b, y);
  case QScheme::Q6_K:
    return dequantQ6_K(b, y);
  case QScheme::Affine:
    break;
  }
}

} // namespace etllm::rt::ggml

#endif // ETLLM_RUNTIME_GGML_BLOCKS_H
