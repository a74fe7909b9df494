//===- packing_ggml.cpp - The block layout of the ggml schemes ------------===//
//
// PackedQBlockLayout for ggml's Q5_0, Q5_1, Q4_K, Q5_K and Q6_K blocks
// (packing.h): every value, scale and minimum of the GGUF's blocks, moved
// into the layout the integer kernels read, nothing recomputed. The values
// are stored unsigned (ggml_blocks.h storedValue); ggmlBlockParams says how
// they dequantize, with the reference's own f32 operations.
//
//===----------------------------------------------------------------------===//
#include "packing_ggml.h"

#include "etllm/runtime/ggml_blocks.h"

#include <cstring>

namespace etllm::rt::cpu {

namespace {

/// Bytes of the high-bit plane of a tile (after its 256 bytes of nibbles).
size_t planeBytes(unsigned bits) {
  return bits == 5 ? size_t(kQRows) * 4 : bits == 6 ? size_t(kQRows) * 8 : 0;
}

/// Writes the 32 stored values u of row r of a tile (the nibble chunks and
/// the plane of the layout's bits).
void storeTileRow(uint8_t *tile, unsigned bits, int r, const uint8_t *u) {
  for (int c = 0; c < 4; ++c)
    for (int j = 0; j < 4; ++j)
      tile[(c * kQRows + r) * 4 + j] =
          uint8_t((u[4 * c + j] & 0xf) | (u[16 + 4 * c + j] & 0xf) << 4);
  uint8_t *plane = tile + size_t(kQRows) * kQBlock / 2;
  for (int j = 0; j < 4; ++j) {
    if (bits == 5) {
      uint8_t v = 0;
      for (int c = 0; c < 4; ++c)
        v = uint8_t(v | ((u[4 * c + j] >> 4) & 1) << c |
                    ((u[16 + 4 * c + j] >> 4) & 1) << (4 + c));
      plane[r * 4 + j] = v;
    } else if (bits == 6) {
      for (int w = 0; w < 2; ++w) {
        uint8_t v = 0;
        for (int c = 0; c < 4; ++c)
          v = uint8_t(v | ((u[16 * w + 4 * c + j] >> 4) & 3) << (2 * c));
        plane[(w * kQRows + r) * 4 + j] = v;
      }
    }
  }
}

float loadHalfAt(const uint8_t *p) { return ggml::loadHalf(p); }

} // namespace

Result<PackedQBlockLayout> computeGgmlLayout(int64_t n, int64_t k,
                                             const QuantInfo &q) {
  if (!PackedQBlockLayout::supports(k, q))
    return Error(std::string("the block layout needs ") + qschemeName(q.scheme) +
                 " rows of whole blocks, not " + std::to_string(k) + " values");
  PackedQBlockLayout l = blockLayoutBase(n, k, q);
  l.scaleType = DType::F16;
  const int64_t bv = ggml::blockValues(q.scheme);
  l.kBlocks = k / kQBlock;
  l.scaleGroups = k / bv;
  l.blocksPerGroup = bv / kQBlock;
  l.tileBytes = size_t(kQRows) * kQBlock / 2 + planeBytes(q.bits);
  switch (q.scheme) {
  case QScheme::Q4_K:
  case QScheme::Q5_K:
    l.paramBytes = kQK4ParamBytes;
    break;
  case QScheme::Q6_K:
    l.paramBytes = kQ6KParamBytes;
    break;
  default:
    l.paramBytes = size_t(kQRows) * 2;
    break;
  }
  // QWeightLayout::compute bounded the blocks; padding adds one row group.
  layOutBlockSections(l);
  return l;
}

void packGgmlRows(const uint8_t *blob, int64_t row0,
                  const PackedQBlockLayout &l, uint8_t *out) {
  const QScheme s = l.scheme;
  const int64_t bv = ggml::blockValues(s);
  const size_t bb = size_t(ggml::blockBytes(s));
  const int64_t perRow = l.k / bv; // GGUF blocks per row
  for (int64_t rg = 0; rg < l.rowGroups; ++rg)
    for (int r = 0; r < int(kQRows); ++r) {
      const int64_t row = rg * kQRows + r;
      if (row >= l.n)
        break; // values and parameters 0: already zero
      const uint8_t *src = blob + size_t(row0 + row) * size_t(perRow) * bb;
      for (int64_t g = 0; g < perRow; ++g) {
        const uint8_t *blk = src + size_t(g) * bb;
        for (int64_t j = 0; j < l.blocksPerGroup; ++j) {
          uint8_t u[kQBlock];
          for (int i = 0; i < int(kQBlock); ++i)
            u[i] = ggml::storedValue(s, blk, int(j * kQBlock) + i);
          const int64_t b = g * l.blocksPerGroup + j;
          storeTileRow(out + l.qdataOff +
                           (size_t(rg) * size_t(l.kBlocks) + size_t(b)) *
                               l.tileBytes,
                       l.bits, r, u);
        }
        const size_t at =
            (size_t(rg) * size_t(l.scaleGroups) + size_t(g)) * l.paramBytes;
        uint8_t *rec = out + l.scalesOff + at;
        switch (s) {
        case QScheme::Q5_0:
          std::memcpy(rec + 2 * r, blk, 2);
          break;
        case QScheme::Q5_1:
          std::memcpy(rec + 2 * r, blk, 2);
          std::memcpy(out + l.offsetsOff + at + 2 * r, blk + 2, 2);
          break;
        case QScheme::Q4_K:
        case QScheme::Q5_K:
          std::memcpy(rec + 2 * r, blk, 2);                    // d
          std::memcpy(rec + 2 * kQRows + 2 * r, blk + 2, 2);   // dmin
          for (int c = 0; c < 3; ++c)                          // scales
            std::memcpy(rec + 4 * kQRows + (c * kQRows + r) * 4,
                        blk + 4 + 4 * c, 4);
          break;
        case QScheme::Q6_K:
          std::memcpy(rec + 2 * r, blk + 208, 2);              // d
          for (int c = 0; c < 4; ++c)                          // scales
            std::memcpy(rec + 2 * kQRows + (c * kQRows + r) * 4,
                        blk + 192 + 4 * c, 4);
          break;
        case QScheme::Affine:
          break;
        }
      }
    }
}

uint8_t packedValue(const PackedQBlockLayout &l, const uint8_t *tile, int r,
                    int i) {
  if (l.bits == 8)
    return tile[((i / 4) * kQRows + r) * 4 + i % 4];
  const int c = (i % 16) / 4, j = i % 4;
  const uint8_t v = tile[(c * kQRows + r) * 4 + j];
  int u = i < 16 ? (v & 0xf) : (v >> 4);
  const uint8_t *plane = tile + size_t(kQRows) * kQBlock / 2;
  if (l.bits == 5)
    u |= ((plane[r * 4 + j] >> (i < 16 ? c : 4 + c)) & 1) << 4;
  else if (l.bits == 6)
    u |= ((plane[((i / 16) * kQRows + r) * 4 + j] >> (2 * c)) & 3) << 4;
  return uint8_t(u);
}

GgmlBlockParams ggmlBlockParams(const PackedQBlockLayout &l,
                                const uint8_t *scales, const uint8_t *offsets,
                                int64_t rg, int64_t b, int r) {
  GgmlBlockParams p;
  const int64_t g = l.scaleGroup(b), j = b % l.blocksPerGroup;
  const size_t at =
      (size_t(rg) * size_t(l.scaleGroups) + size_t(g)) * l.paramBytes;
  const uint8_t *rec = scales + at;
  switch (l.scheme) {
  case QScheme::Q5_0:
    p.dw[0] = p.dw[1] = loadHalfAt(rec + 2 * r);
    p.bias = 16;
    break;
  case QScheme::Q5_1:
    p.dw[0] = p.dw[1] = loadHalfAt(rec + 2 * r);
    p.offset = loadHalfAt(offsets + at + 2 * r);
    p.hasOffset = true;
    break;
  case QScheme::Q4_K:
  case QScheme::Q5_K: {
    const float d = loadHalfAt(rec + 2 * r);
    const float dmin = loadHalfAt(rec + 2 * kQRows + 2 * r);
    uint8_t q[12];
    for (int c = 0; c < 3; ++c)
      std::memcpy(q + 4 * c, rec + 4 * kQRows + (c * kQRows + r) * 4, 4);
    uint8_t sc, m;
    ggml::scaleMinK4(int(j), q, sc, m);
    p.dw[0] = p.dw[1] = d * sc;
    p.offset = -(dmin * m);
    p.hasOffset = true;
    break;
  }
  case QScheme::Q6_K: {
    const float d = loadHalfAt(rec + 2 * r);
    for (int h = 0; h < 2; ++h) {
      const int idx = int(2 * j) + h; // sub-block of 16 values
      const int8_t sc = int8_t(
          rec[2 * kQRows + ((idx / 4) * kQRows + r) * 4 + idx % 4]);
      p.dw[h] = d * sc;
    }
    p.bias = 32;
    break;
  }
  case QScheme::Affine:
    break;
  }
  return p;
}

} // namespace etllm::rt::cpu
