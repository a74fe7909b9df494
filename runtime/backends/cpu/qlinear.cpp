//===- qlinear.cpp - qlinear with QWEIGHT_R16 (block-packed) weights
//-------===//
//
// The weight is PackedQBlockLayout (packing.h): row groups of 16 output
// features, blocks of 32 values, each tile chunked so that one vector load
// holds 4 values of 8 or 16 rows (one row per lane).
//
// Int8 activations (the QAct input of quantize_dynamic: per block of 32,
// llama.cpp's Q8_0, or per token, ExecuTorch's 8da) run the integer kernels
// of qdot.h: exact int32 block sums, corrected and rescaled in f32. Per
// block the QAct layout already holds what they need (padded rows, scales,
// block sums); per token the rows are padded with the zero point (when K is
// not a multiple of 32) and the block sums computed once per call.
//
// Float activations (weight-only) dequantize a row group's chunk of 256
// values at a time into k-major scratch, exactly as portable's dequantize
// (s * q, or s * q + o), and run the f32 micro-kernels of gemm.h over it.
//
// Work is split over row groups: every output element is computed by one
// thread in a fixed order, so results do not depend on the thread count.
//
//===----------------------------------------------------------------------===//
#include "gemm.h"
#include "qdot.h"

#include "etllm/runtime/half.h"
#include "etllm/runtime/quant_param.h"

#include <algorithm>

namespace etllm::rt::cpu {
namespace {

/// The value of element i of row r in a tile of a ggml scheme, dequantized
/// as the reference does (ggmlBlockParams).
inline float ggmlValue(const PackedQBlockLayout &l, const QDotWeight &w,
                       const uint8_t *tile, int64_t rg, int64_t b, int r,
                       int i) {
  const GgmlBlockParams p = ggmlBlockParams(l, w.scales, w.offsets, rg, b, r);
  const float x =
      p.dw[i / 16] * float(int32_t(packedValue(l, tile, r, i)) - p.bias);
  return p.hasOffset ? x + p.offset : x;
}

/// The signed (symmetric) or unsigned value i of row r in a tile.
inline int32_t tileValue(const uint8_t *tile, unsigned bits, bool sym, int r,
                         int i) {
  if (bits == 8) {
    const uint8_t v = tile[((i / 4) * kQRows + r) * 4 + i % 4];
    return sym ? int32_t(int8_t(v)) : int32_t(v);
  }
  const int c = (i % 16) / 4;
  const uint8_t v = tile[(c * kQRows + r) * 4 + i % 4];
  const int32_t u = i < 16 ? (v & 0xf) : (v >> 4);
  return sym ? u - 8 : u;
}

} // namespace

//===----------------------------------------------------------------------===//
// The generic integer kernel (and the kernel table)
//===----------------------------------------------------------------------===//

namespace {
/// The loops of the generic kernels: for each row n (row group rg, row r)
/// and token m, acc starts at 0, addBlock(acc, rg, r, b, m) adds the terms
/// of every block b in order, then y = finish(m, acc) + bias.
template <typename AddBlock, typename Finish>
void qdotGenericRows(const PackedQBlockLayout &l, int64_t M, int64_t rg0,
                     int64_t rg1, const float *bias, float *y, int64_t ldy,
                     AddBlock addBlock, Finish finish) {
  for (int64_t rg = rg0; rg < rg1; ++rg)
    for (int r = 0; r < int(kQRows); ++r) {
      const int64_t n = rg * kQRows + r;
      if (n >= l.n)
        break;
      for (int64_t m = 0; m < M; ++m) {
        float acc = 0.0f;
        for (int64_t b = 0; b < l.kBlocks; ++b)
          addBlock(acc, rg, r, b, m);
        y[m * ldy + n] = finish(m, acc) + (bias ? bias[n] : 0.0f);
      }
    }
}
} // namespace

void qdotGeneric(const QDotWeight &w, const QDotAct &a, int64_t M, int64_t rg0,
                 int64_t rg1, const float *bias, float *y, int64_t ldy) {
  const PackedQBlockLayout &l = w.l;
  const bool perToken = a.perToken();
  auto finish = [&](int64_t m, float acc) {
    return perToken ? a.sx[m] * acc : acc;
  };
  if (l.scheme != QScheme::Affine) {
    // A ggml scheme: per block and half of 16 values, the exact integer sum
    // of (u - bias) (q - zp), scaled as the SIMD kernels do.
    const bool split = l.scheme == QScheme::Q6_K;
    return qdotGenericRows(
        l, M, rg0, rg1, bias, y, ldy,
        [&](float &acc, int64_t rg, int r, int64_t b, int64_t m) {
          const int8_t *xq = a.q + m * a.stride;
          const int32_t zp = perToken ? a.zp[m] : 0;
          const uint8_t *tile = w.tile(rg, b);
          const GgmlBlockParams p =
              ggmlBlockParams(l, w.scales, w.offsets, rg, b, r);
          int32_t s[2] = {0, 0};
          for (int i = 0; i < int(kQBlock); ++i)
            s[i / 16] += (int32_t(packedValue(l, tile, r, i)) - p.bias) *
                         (int32_t(xq[b * kQBlock + i]) - zp);
          const int32_t xsum = a.xsum[m * a.blocks + b];
          const float d = perToken ? 1.0f : a.dx[m * a.blocks + b];
          if (split) {
            acc += p.dw[0] * d * float(s[0]);
            acc += p.dw[1] * d * float(s[1]);
          } else {
            acc += p.dw[0] * d * float(s[0] + s[1]);
          }
          if (p.hasOffset)
            acc += p.offset * (perToken ? float(xsum - int32_t(kQBlock) * zp)
                                        : d * float(xsum));
        },
        finish);
  }
  qdotGenericRows(
      l, M, rg0, rg1, bias, y, ldy,
      [&](float &acc, int64_t rg, int r, int64_t b, int64_t m) {
        const int8_t *xq = a.q + m * a.stride;
        const int32_t zp = perToken ? a.zp[m] : 0;
        const uint8_t *tile = w.tile(rg, b);
        const int64_t g = l.scaleGroup(b);
        const size_t slot =
            (size_t(rg) * size_t(l.scaleGroups) + size_t(g)) * kQRows + r;
        const float dw = loadQuantParam(w.scales, slot, l.scaleType);
        int32_t s = 0;
        for (int i = 0; i < int(kQBlock); ++i)
          s += tileValue(tile, l.bits, l.symmetric, r, i) *
               (int32_t(xq[b * kQBlock + i]) - zp);
        const int32_t xsum = a.xsum[m * a.blocks + b];
        if (perToken) {
          acc += dw * float(s);
          if (!l.symmetric)
            acc += loadQuantParam(w.offsets, slot, l.scaleType) *
                   float(xsum - int32_t(kQBlock) * zp);
        } else {
          const float d = a.dx[m * a.blocks + b];
          acc += dw * d * float(s);
          if (!l.symmetric)
            acc += loadQuantParam(w.offsets, slot, l.scaleType) *
                   (d * float(xsum));
        }
      },
      finish);
}

namespace {

/// Chunks panels (qdot.h): per block, the 8 rows' values interleaved per 4
/// bytes, then -xsum, dx and xo per row.
void packChunks(const QDotAct &a, int64_t M, uint8_t *dst, int64_t begin,
                int64_t end) {
  const int64_t KB = a.blocks, R = kQPanelRows;
  const bool perToken = a.perToken();
  for (int64_t item = begin; item < end; ++item) {
    const int64_t p = item / KB, b = item % KB;
    uint8_t *d = dst + size_t(item) * kQPanelBlockBytes;
    int32_t negXsum[kQPanelRows] = {}, negXsumLo[kQPanelRows] = {};
    float dx[kQPanelRows] = {}, xo[kQPanelRows] = {};
    std::memset(d, 0, kQPanelQBytes);
    for (int64_t i = 0; i < R && p * R + i < M; ++i) {
      const int64_t m = p * R + i;
      const int8_t *row = a.q + m * a.stride + b * kQBlock;
      for (int64_t j = 0; j < 8; ++j)
        std::memcpy(d + (j * R + i) * 4, row + 4 * j, 4);
      const int32_t xsum = a.xsum[m * KB + b];
      negXsum[i] = -xsum;
      if (a.xsumLo)
        negXsumLo[i] = -a.xsumLo[m * KB + b];
      if (perToken) {
        xo[i] = float(xsum - int32_t(kQBlock) * a.zp[m]);
      } else {
        dx[i] = a.dx[m * KB + b];
        xo[i] = dx[i] * float(xsum);
      }
    }
    std::memcpy(d + kQPanelQBytes, negXsum, sizeof negXsum);
    std::memcpy(d + kQPanelQBytes + sizeof negXsum, dx, sizeof dx);
    std::memcpy(d + kQPanelQBytes + sizeof negXsum + sizeof dx, xo, sizeof xo);
    std::memcpy(d + kQPanelQBytes + sizeof negXsum + sizeof dx + sizeof xo,
                negXsumLo, sizeof negXsumLo);
  }
}

/// Pairs panels (qdot.h): per block, each row's values in runs of 8, then
/// per row pair the 2x2 patterns of 8 (-xsum), dx (or zp) and xo.
void packPairs(const QDotAct &a, int64_t M, uint8_t *dst, int64_t begin,
               int64_t end) {
  const int64_t KB = a.blocks, R = kQPanelRows;
  const bool perToken = a.perToken();
  for (int64_t item = begin; item < end; ++item) {
    const int64_t p = item / KB, b = item % KB;
    uint8_t *d = dst + size_t(item) * kQPairsBlockBytes;
    int32_t init[kQPanelRows * 2] = {}, zp[kQPanelRows * 2] = {};
    float dx[kQPanelRows * 2] = {}, xo[kQPanelRows * 2] = {};
    std::memset(d, 0, kQPairsQBytes);
    for (int64_t i = 0; i < R && p * R + i < M; ++i) {
      const int64_t m = p * R + i;
      const int8_t *row = a.q + m * a.stride + b * kQBlock;
      for (int64_t j = 0; j < 4; ++j)
        std::memcpy(d + (j * R + i) * 8, row + 8 * j, 8);
      const int32_t xsum = a.xsum[m * KB + b];
      // Lanes 2h and 2h + 1 of the pair's pattern (h: i's place in it).
      const int64_t l0 = (i / 2) * 4 + (i % 2) * 2;
      for (int64_t l = l0; l < l0 + 2; ++l) {
        // kD xsum - 32 kD zp for the 4-bit kD = -8 (other kD: a multiple);
        // wrapping, as the kernels' int32 lanes do, for a zero point a
        // program made far beyond a byte.
        init[l] = int32_t(uint32_t(8 * -xsum) +
                          (perToken ? uint32_t(a.zp[m]) * 256u : 0u));
        if (perToken) {
          zp[l] = a.zp[m];
          xo[l] = float(xsum - int32_t(kQBlock) * a.zp[m]);
        } else {
          dx[l] = a.dx[m * KB + b];
          xo[l] = dx[l] * float(xsum);
        }
      }
    }
    uint8_t *t = d + kQPairsQBytes;
    std::memcpy(t, init, sizeof init);
    if (perToken)
      std::memcpy(t + sizeof init, zp, sizeof zp);
    else
      std::memcpy(t + sizeof init, dx, sizeof dx);
    std::memcpy(t + sizeof init + sizeof dx, xo, sizeof xo);
  }
}

} // namespace

QPanelFormat qdotPanelFormat(Isa isa) {
  switch (isa) {
  case Isa::Avx2:
  case Isa::AvxVnni:
  case Isa::Avx512:
  case Isa::Avx512Vnni:
  case Isa::Amx:
  case Isa::Dotprod:
    return QPanelFormat::Chunks;
  case Isa::I8mm:
    return QPanelFormat::Pairs;
  case Isa::Generic:
  case Isa::Neon:
    break;
  }
  return QPanelFormat::None;
}

void qdotPackPanels(QPanelFormat f, const QDotAct &a, int64_t M, uint8_t *dst,
                    int64_t begin, int64_t end) {
  if (f == QPanelFormat::Chunks)
    packChunks(a, M, dst, begin, end);
  else if (f == QPanelFormat::Pairs)
    packPairs(a, M, dst, begin, end);
}

void qdotF32Generic(const QDotWeight &w, const QDotF32Act &a, int64_t M,
                    int64_t rg0, int64_t rg1, const float *bias, float *y,
                    int64_t ldy) {
  const PackedQBlockLayout &l = w.l;
  auto unscaled = [](int64_t, float acc) { return acc; };
  if (l.scheme != QScheme::Affine) {
    // (The moe kernel's fallback; dense qlinears of a ggml scheme take the
    // dequantizing GEMM.) Each value dequantized as the reference does.
    return qdotGenericRows(
        l, M, rg0, rg1, bias, y, ldy,
        [&](float &acc, int64_t rg, int r, int64_t b, int64_t m) {
          for (int i = 0; i < int(kQBlock); ++i)
            acc += ggmlValue(l, w, w.tile(rg, b), rg, b, r, i) *
                   a.x[m * a.stride + b * kQBlock + i];
        },
        unscaled);
  }
  qdotGenericRows(
      l, M, rg0, rg1, bias, y, ldy,
      [&](float &acc, int64_t rg, int r, int64_t b, int64_t m) {
        const float *x = a.x + m * a.stride;
        const uint8_t *tile = w.tile(rg, b);
        const size_t slot =
            (size_t(rg) * size_t(l.scaleGroups) + size_t(l.scaleGroup(b))) *
                kQRows +
            r;
        float d = 0.0f;
        for (int i = 0; i < int(kQBlock); ++i)
          d += float(tileValue(tile, l.bits, l.symmetric, r, i)) *
               x[b * kQBlock + i];
        acc += loadQuantParam(w.scales, slot, l.scaleType) * d;
        if (!l.symmetric)
          acc += loadQuantParam(w.offsets, slot, l.scaleType) *
                 a.xsum[m * a.blocks + b];
      },
      unscaled);
}

bool qdotAmxTiles(Isa isa, const PackedQBlockLayout &l, bool perToken,
                  int64_t M) {
#if ETLLM_CPU_X86
  return isa == Isa::Amx && M >= kQAmxMinRows && qdotAmxReads(l, perToken);
#else
  (void)isa;
  (void)l;
  (void)perToken;
  (void)M;
  return false;
#endif
}

QDotFn qdotKernel(Isa isa, const PackedQBlockLayout &l, bool perToken) {
  QDotFn fn = nullptr;
  switch (isa) {
  case Isa::Generic:
    break;
#if ETLLM_CPU_X86
  case Isa::Avx2:
    fn = qdotAvx2(l, perToken);
    break;
  case Isa::AvxVnni:
    fn = hasVexVnni() ? qdotAvxVnni(l, perToken) : qdotAvxVnniEvex(l, perToken);
    break;
  case Isa::Avx512:
    fn = qdotAvx512(l, perToken);
    break;
  case Isa::Avx512Vnni:
    fn = qdotAvx512Vnni(l, perToken);
    break;
  case Isa::Amx:
    fn = qdotAmx(l, perToken);
    break;
#endif
#if ETLLM_CPU_ARM64
  // The arm64 kernels read the affine int4/int8 tiles only: weights kept in
  // ggml's other block formats (Q5_0 ... Q6_K) take the generic kernel
  // there until they have arm64 kernels of their own.
  case Isa::Neon:
  case Isa::Dotprod:
  case Isa::I8mm:
    if (l.scheme != QScheme::Affine)
      break;
    if (isa == Isa::Dotprod)
      fn = qdotDotprod(l, perToken);
    else if (isa == Isa::I8mm)
      fn = qdotI8mm(l, perToken);
    else
      fn = qdotNeon(l, perToken);
    break;
#endif
  default: // another architecture's path
    break;
  }
  return fn ? fn : &qdotGeneric;
}

QDotF32Fn qdotF32Kernel(Isa isa, const PackedQBlockLayout &l) {
#if ETLLM_CPU_X86
  if (hasAvx512(isa))
    return qdotF32Avx512(l);
  if (hasAvx2(isa))
    return qdotF32Avx2(l);
#endif
#if ETLLM_CPU_ARM64
  if (hasNeon(isa) && l.scheme == QScheme::Affine)
    return qdotF32Neon(l);
#endif
  (void)isa;
  (void)l;
  return nullptr;
}

namespace {

//===----------------------------------------------------------------------===//
// Float activations
//===----------------------------------------------------------------------===//

/// Dequantizes values [k0, k0 + kc) of row group rg (16 rows: two kNR
/// blocks) into dst[j][k - k0][8], as portable's dequantize does.
void dequantChunk(const QDotWeight &w, int64_t rg, int64_t k0, int64_t kc,
                  float *dst) {
  const PackedQBlockLayout &l = w.l;
  for (int64_t b = k0 / kQBlock; b * kQBlock < k0 + kc; ++b) {
    const uint8_t *tile = w.tile(rg, b);
    const int64_t g = l.scaleGroup(b);
    if (l.scheme != QScheme::Affine) {
      for (int r = 0; r < int(kQRows); ++r) {
        float *d = dst + (r / kNR) * kc * kNR + r % kNR;
        for (int i = 0; i < int(kQBlock); ++i) {
          const int64_t k = b * kQBlock + i;
          if (k >= k0 && k < k0 + kc)
            d[(k - k0) * kNR] = ggmlValue(l, w, tile, rg, b, r, i);
        }
      }
      continue;
    }
    for (int r = 0; r < int(kQRows); ++r) {
      const size_t slot =
          (size_t(rg) * size_t(l.scaleGroups) + size_t(g)) * kQRows + r;
      const float s = loadQuantParam(w.scales, slot, l.scaleType);
      const float o =
          l.symmetric ? 0.0f : loadQuantParam(w.offsets, slot, l.scaleType);
      float *d = dst + (r / kNR) * kc * kNR + r % kNR;
      for (int i = 0; i < int(kQBlock); ++i) {
        const int64_t k = b * kQBlock + i;
        if (k < k0 || k >= k0 + kc)
          continue;
        const float q = float(tileValue(tile, l.bits, l.symmetric, r, i));
        d[(k - k0) * kNR] = l.symmetric ? s * q : s * q + o;
      }
    }
  }
}

/// Scratch of the register-dequantizing path (a few rows): the rows
/// padded to whole blocks (K % 32 != 0) and the block sums.
size_t fewRowsScratchBytes(int64_t M, const PackedQBlockLayout &l) {
  const size_t sums = alignUp(size_t(M * l.kBlocks) * 4, 64);
  return sums + (l.k % kQBlock ? size_t(M * l.kBlocks * kQBlock) * 4 : 0);
}

/// Scratch of the float path: one dequantized row-group chunk per tile, or
/// the few-rows path's.
size_t floatScratchBytes(Isa isa, const ExecContext *ctx, int64_t M,
                         const PackedQBlockLayout &l) {
  if (M <= kQDotF32MaxRows && qdotF32Kernel(isa, l))
    return fewRowsScratchBytes(M, l);
  ctx = parallelContext(ctx, uint64_t(M) * uint64_t(l.n) * uint64_t(l.k));
  const size_t tile = defaultTile(ctx, size_t(l.rowGroups));
  return numTiles(size_t(l.rowGroups), tile) * size_t(kQRows) *
         size_t(gemm::kChunk) * sizeof(float);
}

/// The row groups of all parts, in order: part i covers [first[i],
/// first[i + 1]).
struct PartRanges {
  int64_t first[kMaxQLinearGroup + 1] = {};
  void build(const QLinearPart *parts, size_t n) {
    for (size_t i = 0; i < n; ++i)
      first[i + 1] = first[i] + parts[i].w->l.rowGroups;
  }
  /// Calls fn(part, rgBegin, rgEnd) for the parts' pieces of [b, e).
  template <typename Fn>
  void split(size_t n, int64_t b, int64_t e, const Fn &fn) const {
    for (size_t i = 0; i < n && b < e; ++i) {
      const int64_t lo = std::max(b, first[i]), hi = std::min(e, first[i + 1]);
      if (lo < hi)
        fn(i, lo - first[i], hi - first[i]);
    }
  }
};

/// Adds part i's fused LoRA hook to its row groups [rg0, rg1) (one row).
inline void addLora(const QLinearPart &p, int64_t rg0, int64_t rg1) {
  if (p.lora)
    loraFusedAddColumns(*p.lora, rg0 * kQRows, std::min(rg1 * kQRows, p.w->l.n),
                        p.y);
}

/// Most tiles a loop with fused LoRA hooks tracks (beyond: the hooks'
/// coefficients are computed before the loop).
constexpr size_t kMaxLoraTiles = 1024;

/// Runs fn(part, rg0, rg1) over the row groups of the parts in one
/// parallel loop of `tile` row groups per task, with their fused LoRA
/// hooks: one task per hook, ahead of the tiles, computes its coefficients
/// (x At) while the other threads run tiles; a tile adds a hook's (x At) Bt
/// to its columns if the hook is ready, else the calling thread adds it
/// after the loop. Nobody waits for anybody.
template <typename Fn>
void forTiles(const ExecContext *pctx, const PartRanges &pr,
              const QLinearPart *parts, size_t n, size_t tile, const Fn &fn) {
  const int64_t total = pr.first[n];
  LoraFused *hooks[kMaxQLinearGroup];
  size_t nh = 0;
  for (size_t i = 0; i < n; ++i)
    if (parts[i].lora)
      hooks[nh++] = parts[i].lora;
  const size_t tiles = numTiles(size_t(total), tile);
  // Too many tiles to note which hooks they left: every hook ready first.
  const bool overlap = nh > 0 && tiles <= kMaxLoraTiles;
  if (!overlap)
    for (size_t h = 0; h < nh; ++h)
      loraFusedCoefficients(*hooks[h]);
  // Per tile, the parts whose hook it left to the calling thread (a bit
  // per part: kMaxQLinearGroup <= 8).
  static_assert(kMaxQLinearGroup <= 8, "one byte of bits per tile");
  uint8_t left[kMaxLoraTiles];
  const size_t lead = overlap ? nh * tile : 0;
  parallelForTiles(pctx, lead + size_t(total), tile, [&](size_t b, size_t e) {
    if (b < lead) {
      loraFusedCoefficients(*hooks[b / tile]);
      return;
    }
    b -= lead;
    e -= lead;
    uint8_t bits = 0;
    pr.split(n, int64_t(b), int64_t(e), [&](size_t i, int64_t r0, int64_t r1) {
      fn(i, r0, r1);
      if (!parts[i].lora)
        return;
      if (parts[i].lora->ready.load(std::memory_order_acquire))
        addLora(parts[i], r0, r1);
      else
        bits = uint8_t(bits | (1u << i));
    });
    if (overlap)
      left[b / tile] = bits;
  });
  for (size_t t = 0; overlap && t < tiles; ++t) {
    if (!left[t])
      continue;
    const int64_t b = int64_t(t * tile);
    const int64_t e = std::min(total, int64_t((t + 1) * tile));
    pr.split(n, b, e, [&](size_t i, int64_t r0, int64_t r1) {
      if (left[t] & (1u << i))
        addLora(parts[i], r0, r1);
    });
  }
}

/// Total multiply-adds of the parts for M rows (the parallel threshold).
uint64_t groupWork(const QLinearPart *parts, size_t n, int64_t M) {
  uint64_t w = 0;
  for (size_t i = 0; i < n; ++i)
    w += uint64_t(M) * uint64_t(parts[i].w->l.n) * uint64_t(parts[i].w->l.k);
  return w;
}

Status qlinearFloat(ExecContext *ctx, Isa isa, const float *x, int64_t M,
                    const QLinearPart *parts, size_t n) {
  if (!ctx)
    return kernelError(opName(OpId::QLinear),
                       "needs an execution context (scratch)");
  const PackedQBlockLayout &l0 = parts[0].w->l;
  const int64_t K = l0.k;
  bool fewRows = M <= kQDotF32MaxRows;
  size_t withKernel = 0;
  for (size_t i = 0; i < n; ++i)
    withKernel += qdotF32Kernel(isa, parts[i].w->l) != nullptr;
  if (fewRows && withKernel != 0 && withKernel != n) {
    // Only some parts have a register-dequantizing kernel: each on its own.
    for (size_t i = 0; i < n; ++i)
      ETLLM_RETURN_IF_ERROR(qlinearFloat(ctx, isa, x, M, parts + i, 1));
    return Status();
  }
  fewRows = fewRows && withKernel == n;
  if (fewRows) {
    const ExecContext *pctx = parallelContext(ctx, groupWork(parts, n, M));
    // A few rows: dequantize in registers, all parts in one parallel loop.
    float *scratch =
        static_cast<float *>(ctx->scratch(fewRowsScratchBytes(M, l0)));
    const int64_t KB = l0.kBlocks;
    QDotF32Act act;
    act.blocks = KB;
    float *sums = scratch;
    float *rows = scratch + alignUp(size_t(M * KB) * 4, 64) / 4;
    act.xsum = sums;
    if (K % kQBlock) {
      for (int64_t m = 0; m < M; ++m) {
        std::memcpy(rows + m * KB * kQBlock, x + m * K, size_t(K) * 4);
        std::fill(rows + m * KB * kQBlock + K, rows + (m + 1) * KB * kQBlock,
                  0.0f);
      }
      act.x = rows;
      act.stride = KB * kQBlock;
    } else {
      act.x = x;
      act.stride = K;
    }
    for (int64_t m = 0; m < M; ++m)
      for (int64_t b = 0; b < KB; ++b) {
        float s = 0.0f;
        for (int64_t k = 0; k < kQBlock; ++k)
          s += act.x[m * act.stride + b * kQBlock + k];
        sums[m * KB + b] = s;
      }
    PartRanges pr;
    pr.build(parts, n);
    const int64_t total = pr.first[n];
    forTiles(pctx, pr, parts, n, defaultTile(pctx, size_t(total)),
             [&](size_t i, int64_t r0, int64_t r1) {
               qdotF32Kernel(isa, parts[i].w->l)(*parts[i].w, act, M, r0, r1,
                                                 parts[i].bias, parts[i].y,
                                                 parts[i].w->l.n);
             });
    return Status();
  }
  // Many rows: per part (nothing is shared between them here), dequantize
  // chunks into scratch and run the f32 GEMM over them. The scratch is sized
  // from the tiles this call uses (the pool may be paused, parallel.h).
  const size_t chunkFloats = size_t(kQRows) * size_t(gemm::kChunk);
  for (size_t i = 0; i < n; ++i) {
    const QDotWeight &w = *parts[i].w;
    const float *bias = parts[i].bias;
    float *y = parts[i].y;
    if (parts[i].lora) // (rare: a single row without a register kernel)
      loraFusedCoefficients(*parts[i].lora);
    const int64_t N = w.l.n, RG = w.l.rowGroups;
    const ExecContext *ppctx =
        parallelContext(ctx, uint64_t(M) * uint64_t(N) * uint64_t(K));
    const size_t tile = defaultTile(ppctx, size_t(RG));
    float *scratch = static_cast<float *>(
        ctx->scratch(numTiles(size_t(RG), tile) * chunkFloats * sizeof(float)));
    parallelForTiles(ppctx, size_t(RG), tile, [&](size_t b, size_t e) {
      float *buf = scratch + (b / tile) * chunkFloats;
      for (size_t rg = b; rg < e; ++rg) {
        const int64_t n0 = int64_t(rg) * kQRows;
        const int nb = N - n0 > kNR ? 2 : 1;
        for (int64_t k0 = 0; k0 < K; k0 += gemm::kChunk) {
          const int64_t kc = std::min<int64_t>(gemm::kChunk, K - k0);
          dequantChunk(w, int64_t(rg), k0, kc, buf);
          gemm::Tile t{x + k0, K,
                       buf,    kc * kNR,
                       kc,     bias ? bias + n0 : nullptr,
                       k0 > 0, y + n0,
                       N,      int(std::min<int64_t>(N - n0, kQRows))};
          gemm::panelRowsN(isa, nb, t, M);
        }
      }
      addLora(parts[i], int64_t(b), int64_t(e));
    });
  }
  return Status();
}

//===----------------------------------------------------------------------===//
// Int8 activations
//===----------------------------------------------------------------------===//

/// Scratch of a per-token QAct: the block sums, then (K % 32 != 0) the
/// rows padded with their zero points.
struct TokenScratch {
  size_t sums = 0, rows = 0;
  size_t total() const { return sums + rows; }
};

TokenScratch tokenScratch(int64_t M, const PackedQBlockLayout &l) {
  TokenScratch s;
  s.sums = alignUp(size_t(M) * size_t(l.kBlocks) * 4, 64);
  if (l.k % kQBlock != 0)
    s.rows = alignUp(size_t(M) * size_t(l.kBlocks) * size_t(kQBlock), 64);
  return s;
}

/// Scratch of a QAct input of M rows: the per-token sums and rows (none per
/// block), then the panels when `isa` may read them (the generic kernel
/// reads the rows; so do the ISAs' fallbacks to it, which makes this an
/// upper bound).
struct QActScratch {
  TokenScratch token;
  size_t lo = 0; // per block: the sums of each block's first 16 values
  size_t panels = 0;
  size_t xo = 0; // the AMX kernels' offset terms (QDotAct::xo)
  QActScratch(Isa isa, int64_t M, const PackedQBlockLayout &l, bool perBlock) {
    if (!perBlock)
      token = tokenScratch(M, l);
    else if (isa != Isa::Generic)
      lo = alignUp(size_t(M) * size_t(l.kBlocks) * 4, 64);
    if (M >= kQPanelMinRows)
      panels = qdotPanelBytes(qdotPanelFormat(isa), M, l.kBlocks);
    if (isa == Isa::Amx && M >= kQAmxMinRows)
      xo = alignUp(size_t(M) * size_t(l.kBlocks) * 4, 64);
  }
  size_t total() const { return token.total() + lo + panels + xo; }
};

Status qlinearQAct(ExecContext *ctx, Isa isa, const Tensor &x, int64_t M,
                   const QLinearPart *parts, size_t n) {
  const PackedQBlockLayout &l0 = parts[0].w->l;
  const int64_t K = l0.k, KB = l0.kBlocks;
  const QActLayout xl = QActLayout::compute(M, K, x.quant);
  const uint8_t *xb = x.ptr<uint8_t>();
  QDotAct act;
  act.blocks = KB;
  const QActScratch sl(isa, M, l0, xl.perBlock);
  uint8_t *scratch =
      ctx ? static_cast<uint8_t *>(ctx->scratch(sl.total())) : nullptr;
  if (xl.perBlock) {
    act.q = reinterpret_cast<const int8_t *>(xb);
    act.stride = xl.rowStride;
    act.dx = reinterpret_cast<const float *>(xb + xl.scalesOff);
    act.xsum = reinterpret_cast<const int32_t *>(xb + xl.sumsOff);
  } else {
    if (!ctx)
      return kernelError(opName(OpId::QLinear),
                         "needs an execution context (scratch)");
    int32_t *sums = reinterpret_cast<int32_t *>(scratch);
    int8_t *rows = reinterpret_cast<int8_t *>(scratch + sl.token.sums);
    const int8_t *qx = reinterpret_cast<const int8_t *>(xb);
    const int32_t *zps = reinterpret_cast<const int32_t *>(xb + xl.zpOff);
    act.sx = reinterpret_cast<const float *>(xb + xl.scalesOff);
    act.zp = zps;
    const bool padded = sl.token.rows != 0;
    act.q = padded ? rows : qx;
    act.stride = padded ? KB * kQBlock : K;
    act.xsum = sums;
    for (int64_t m = 0; m < M; ++m) {
      const int8_t *src = qx + m * K;
      if (padded) {
        int8_t *dst = rows + m * KB * kQBlock;
        std::memcpy(dst, src, size_t(K));
        std::memset(dst + K, int(int8_t(zps[m])), size_t(KB * kQBlock - K));
        src = dst;
      }
      for (int64_t b = 0; b < KB; ++b) {
        int32_t s = 0;
        for (int64_t k = 0; k < kQBlock; ++k)
          s += src[b * kQBlock + k];
        sums[m * KB + b] = s;
      }
    }
  }
  QDotFn fns[kMaxQLinearGroup];
  bool panelReaders = false; // a part whose kernel reads the panels
  bool halves = false;       // a Q6_K part whose kernel reads xsumLo
  bool offsetTerms = false;  // a part whose kernel reads xo
  for (size_t i = 0; i < n; ++i) {
    const PackedQBlockLayout &l = parts[i].w->l;
    fns[i] = qdotKernel(isa, l, act.perToken());
    const bool tiles = qdotAmxTiles(isa, l, act.perToken(), M);
#if ETLLM_CPU_X86
    offsetTerms = offsetTerms || (tiles && qdotAmxOffsets(l));
#endif
    panelReaders = panelReaders || (fns[i] != &qdotGeneric && !tiles);
    halves = halves ||
             (fns[i] != &qdotGeneric && parts[i].w->l.scheme == QScheme::Q6_K);
  }
  if (halves) {
    if (!scratch || sl.lo == 0)
      return kernelError(opName(OpId::QLinear),
                         "needs an execution context (scratch)");
    // Once per call: the sums of each block's values 0..15 (Q6_K's halves).
    int32_t *lo = reinterpret_cast<int32_t *>(scratch + sl.token.total());
    for (int64_t m = 0; m < M; ++m)
      for (int64_t b = 0; b < KB; ++b) {
        const int8_t *q = act.q + m * act.stride + b * kQBlock;
        int32_t s = 0;
        for (int k = 0; k < 16; ++k)
          s += q[k];
        lo[m * KB + b] = s;
      }
    act.xsumLo = lo;
  }
  if (offsetTerms && scratch && sl.xo != 0) {
    // Once per call (every row group of every part reads them).
    float *xo = reinterpret_cast<float *>(scratch + sl.token.total() + sl.lo +
                                          sl.panels);
    for (int64_t m = 0; m < M; ++m)
      for (int64_t b = 0; b < KB; ++b)
        xo[m * KB + b] = qdotOffsetTerm(act, m, b);
    act.xo = xo;
  }
  if (ctx && sl.panels != 0 && panelReaders) {
    // Once per call, for every part and thread (qdot.h).
    uint8_t *panel = scratch + sl.token.total() + sl.lo;
    // The panels' blocks are independent: packed on the pool's threads
    // (packed on the calling thread alone they took 2.2% of a 2-thread
    // prefill's samples while the worker waited).
    const size_t items = size_t(qdotPanelItems(M, KB));
    const ExecContext *packCtx =
        parallelContext(ctx, uint64_t(M) * uint64_t(KB) * kQBlock);
    const QPanelFormat format = qdotPanelFormat(isa);
    parallelForTiles(
        packCtx, items, defaultTile(packCtx, items), [&](size_t i0, size_t i1) {
          qdotPackPanels(format, act, M, panel, int64_t(i0), int64_t(i1));
        });
    act.panel = panel;
  }
  PartRanges pr;
  pr.build(parts, n);
  const int64_t total = pr.first[n];
  const ExecContext *pctx = parallelContext(ctx, groupWork(parts, n, M));
  forTiles(pctx, pr, parts, n, defaultTile(pctx, size_t(total)),
           [&](size_t i, int64_t r0, int64_t r1) {
             fns[i](*parts[i].w, act, M, r0, r1, parts[i].bias, parts[i].y,
                    parts[i].w->l.n);
           });
  return Status();
}

} // namespace

Result<QDotWeight> qdotWeight(const Tensor &wt) {
  if (wt.dtype != DType::QWeight || wt.rank != 2)
    return Error("weight must be a qweight [N, K], got " + wt.shapeString());
  Result<PackedQBlockLayout> l =
      PackedQBlockLayout::compute(wt.sizes[0], wt.sizes[1], wt.quant);
  if (!l.ok())
    return l.error();
  if (l->totalBytes > wt.capacity || !wt.data ||
      reinterpret_cast<uintptr_t>(wt.data) % 4 != 0)
    return Error("packed weight " + wt.shapeString() + " needs " +
                 std::to_string(l->totalBytes) + " 4-byte-aligned bytes");
  QDotWeight w;
  w.l = *l;
  const uint8_t *base = wt.ptr<uint8_t>();
  w.q = base + l->qdataOff;
  w.scales = base + l->scalesOff;
  w.offsets = l->hasOffsets() ? base + l->offsetsOff : nullptr;
  return w;
}

size_t qlinearPackedScratch(Isa isa, const ExecContext *ctx, int64_t M,
                            const PackedQBlockLayout &l, const Tensor &x) {
  if (M <= 0)
    return 0;
  if (x.dtype == DType::QAct)
    return QActScratch(isa, M, l, x.quant.groupSize == kQActBlock).total();
  // Any row count up to M: the few-rows path or the dequantizing one.
  return std::max(floatScratchBytes(isa, ctx, std::min(M, kQDotF32MaxRows), l),
                  floatScratchBytes(isa, ctx, M, l));
}

Status qlinearGroupRun(const KernelArgs *args, const QDotWeight *const *w,
                       size_t n, Isa isa, LoraFused *const *lora) {
  const char *op = opName(OpId::QLinear);
  if (n == 0 || n > size_t(kMaxQLinearGroup))
    return kernelError(op, "a group of " + std::to_string(n) + " qlinears");
  const Tensor &x = *args[0].inputs[0];
  ETLLM_RETURN_IF_ERROR(checkStorage(op, "input", x));
  if (x.dtype != DType::F32 && x.dtype != DType::QAct)
    return kernelError(op, std::string("packed qlinear needs an f32 or qact "
                                       "input, got ") +
                               dtypeName(x.dtype));
  if (x.dtype == DType::QAct &&
      ((x.quant.bits != 0 && x.quant.bits != 8) ||
       (x.quant.groupSize != 0 &&
        (x.quant.groupSize != kQActBlock || !x.quant.symmetric))))
    return kernelError(op, "quantized activations must be 8-bit, per token, "
                           "per tensor or symmetric per block of 32");
  QLinearPart parts[kMaxQLinearGroup];
  int64_t M = 0;
  for (size_t i = 0; i < n; ++i) {
    const KernelArgs &a = args[i];
    if (a.inputs[0] != &x || w[i]->l.k != w[0]->l.k)
      return kernelError(op, "the qlinears of a group share their input");
    const Tensor *bias = a.inputs.size > 2 ? a.inputs[2] : nullptr;
    Tensor &out = *a.outputs[0];
    int64_t Mi;
    ETLLM_RETURN_IF_ERROR(
        checkLinearOperands(op, x, w[i]->l.n, w[i]->l.k, bias, out, Mi));
    ETLLM_RETURN_IF_ERROR(resizeLike(op, out, x, w[i]->l.n));
    M = Mi;
    parts[i] = {w[i], bias ? bias->ptr<float>() : nullptr, out.ptr<float>(),
                lora ? lora[i] : nullptr};
    if (parts[i].lora && M != 1)
      return kernelError(op, "a fused LoRA hook needs a single row, got " +
                                 std::to_string(M));
  }
  if (M == 0)
    return Status();
  ExecContext *ctx = args[0].ctx;
  if (x.dtype == DType::QAct)
    return qlinearQAct(ctx, isa, x, M, parts, n);
  return qlinearFloat(ctx, isa, x.ptr<float>(), M, parts, n);
}

Status qlinearRun(const KernelArgs &a, Isa isa, const QDotWeight &w) {
  const QDotWeight *pw = &w;
  return qlinearGroupRun(&a, &pw, 1, isa);
}

Status qembeddingRun(const KernelArgs &a, const QDotWeight &w) {
  const char *op = opName(OpId::QEmbedding);
  if (a.inputs.size != 2 || a.outputs.size != 1 || !a.inputs[1] ||
      !a.outputs[0])
    return kernelError(op, "expects a table, indices and 1 output");
  const Tensor &idx = *a.inputs[1];
  Tensor &out = *a.outputs[0];
  ETLLM_RETURN_IF_ERROR(checkStorage(op, "indices", idx));
  if (idx.dtype != DType::I64 && idx.dtype != DType::I32)
    return kernelError(op, std::string("indices must be i64 or i32, not ") +
                               dtypeName(idx.dtype));
  if (out.dtype != DType::F32)
    return kernelError(op, std::string("output must be f32, not ") +
                               dtypeName(out.dtype));
  if (idx.rank + 1 > kMaxRank)
    return kernelError(op, "indices have too high a rank");
  const PackedQBlockLayout &l = w.l;
  const int64_t V = l.n, D = l.k, n = idx.numel();
  int64_t sizes[kMaxRank];
  for (int i = 0; i < idx.rank; ++i)
    sizes[i] = idx.sizes[i];
  sizes[idx.rank] = D;
  Status st = out.resize(sizes, idx.rank + 1);
  if (!st.ok())
    return kernelError(op, "output: " + st.message());
  for (int64_t i = 0; i < n; ++i) {
    const int64_t v = idx.dtype == DType::I64 ? idx.ptr<int64_t>()[i]
                                              : int64_t(idx.ptr<int32_t>()[i]);
    if (v < 0 || v >= V)
      return kernelError(op, "index " + std::to_string(v) +
                                 " is out of range for a table of " +
                                 std::to_string(V) + " rows");
  }
  float *py = out.ptr<float>();
  for (int64_t i = 0; i < n; ++i) {
    const int64_t v = idx.dtype == DType::I64 ? idx.ptr<int64_t>()[i]
                                              : int64_t(idx.ptr<int32_t>()[i]);
    const int64_t rg = v / kQRows;
    const int r = int(v % kQRows);
    float *dst = py + i * D;
    if (l.scheme != QScheme::Affine) {
      for (int64_t b = 0; b < l.kBlocks; ++b)
        for (int k = 0; k < int(kQBlock); ++k)
          dst[b * kQBlock + k] = ggmlValue(l, w, w.tile(rg, b), rg, b, r, k);
      continue;
    }
    for (int64_t b = 0; b < l.kBlocks; ++b) {
      const uint8_t *tile = w.tile(rg, b);
      const size_t slot =
          (size_t(rg) * size_t(l.scaleGroups) + size_t(l.scaleGroup(b))) *
              kQRows +
          r;
      const float s = loadQuantParam(w.scales, slot, l.scaleType);
      const float o =
          l.symmetric ? 0.0f : loadQuantParam(w.offsets, slot, l.scaleType);
      const int64_t kEnd = std::min<int64_t>(kQBlock, D - b * kQBlock);
      for (int64_t k = 0; k < kEnd; ++k) {
        const float q = float(tileValue(tile, l.bits, l.symmetric, r, int(k)));
        dst[b * kQBlock + k] = l.symmetric ? s * q : s * q + o;
      }
    }
  }
  return Status();
}

Status qlinearPacked(const KernelArgs &a, Isa isa) {
  ETLLM_RETURN_IF_ERROR(checkLinearArgs(opName(OpId::QLinear), a));
  Result<QDotWeight> w = qdotWeight(*a.inputs[1]);
  if (!w.ok())
    return kernelError(opName(OpId::QLinear), w.message());
  return qlinearRun(a, isa, *w);
}

} // namespace etllm::rt::cpu
