//===- qdot.h - Integer dot-product kernels over block-packed weights -*- C++
//-*-===//
//
// Internal to runtime/backends/cpu: the kernels of qlinear on
// PackedQBlockLayout weights (packing.h) and int8 activations, one
// implementation per ISA (qdot_*.cpp: qdot_x86.inc compiled for the x86
// paths, qdot_arm.inc for the arm64 ones), chosen by qdotKernel().
//
// The activations are int8 rows padded to whole blocks of 32 values, with,
// per block, the sum of its values (xsum) and either its scale (per block,
// llama.cpp's Q8_0: x ~= dx[b] q) or, per row, a scale and zero point (per
// token, ExecuTorch's 8da: x ~= sx (q - zp); padding values hold zp so
// that they contribute nothing).
//
// For one output row n and one block b the kernels form the exact integer
//
//   s = sum_k w_k (q_k - zp)          (zp = 0 per block)
//
// from the stored values u (u = w + 8 for symmetric 4-bit, w + 128 as the
// VNNI kernels see symmetric 8-bit, w otherwise): with S = sum u q and
// U = sum u,  s = S - c xsum - zp (U - 32 c)  where c is that bias (8, 128
// or 0); U is only needed per token. Then, in f32, per block
//
//   per block: y += dw[g] dx[b] s (+ o[g] dx[b] xsum)
//   per token: y += dw[g] s        (+ o[g] (xsum - 32 zp)),  y = sx y at the
//   end
//
// and y += bias. The integer part is exact (|s| < 2^31 for any K), so the
// kernels differ from the portable qlinear (which sums dequantized products
// in f32) only by f32 rounding.
//
//===----------------------------------------------------------------------===//
#ifndef ETLLM_BACKENDS_CPU_QDOT_H
#define ETLLM_BACKENDS_CPU_QDOT_H

#include "internal.h"

#include <cassert>

namespace etllm::rt::cpu {

/// A packed weight: its layout and sections.
struct QDotWeight {
  PackedQBlockLayout l;
  const uint8_t *q = nullptr;       // qdata
  const uint8_t *scales = nullptr;  // [RG][SG][16] f16 or f32
  const uint8_t *offsets = nullptr; // asymmetric only

  const uint8_t *tile(int64_t rg, int64_t b) const {
    return q + (size_t(rg) * size_t(l.kBlocks) + size_t(b)) * l.tileBytes;
  }
};

/// Int8 activation rows prepared for the kernels.
struct QDotAct {
  const int8_t *q = nullptr; // row m at q + m * stride, kBlocks * 32 values
  int64_t stride = 0;
  const int32_t *xsum = nullptr; // [M][kBlocks]
  int64_t blocks = 0;
  const float *dx = nullptr;   // [M][kBlocks] per block; null per token
  const float *sx = nullptr;   // [M] per token
  const int32_t *zp = nullptr; // [M] per token
  /// [M][kBlocks]: the sums of values 0..15 of each block, per block only,
  /// when a Q6_K weight reads the rows (its halves have their own scales);
  /// else null.
  const int32_t *xsumLo = nullptr;
  /// Prefill: the same rows packed in panels (qdotPackPanels), or null.
  const uint8_t *panel = nullptr;
  /// [M][kBlocks]: what an asymmetric weight's offsets multiply (xo above:
  /// xsum - 32 zp per token, dx xsum per block), worked out once per call
  /// for the AMX kernels (qdotAmxTiles); null otherwise (they work
  /// it out per tile).
  const float *xo = nullptr;
  bool perToken() const { return dx == nullptr; }
};

/// Prefill packs the int8 activation rows in panels of kQPanelRows rows, so
/// that a tile reads all its rows' values and per-block terms through one
/// pointer at fixed offsets (with a pointer per row, 8 rows of values, sums
/// and scales needed more registers than x86 has, and the tile spilled).
/// Panel p holds rows [p * kQPanelRows, + kQPanelRows) (rows past M are
/// zero); its block b, at panel + (p * blocks + b) * kQPanelBlockBytes:
///   int8  q[8][kQPanelRows][4]  values 4j..4j+3 of row i at (j * R + i) * 4
///   int32 negXsum[R]            -xsum
///   f32   dx[R]                 the block's scale (per block; 0 per token)
///   f32   xo[R]                 what an asymmetric weight's offset
///                               multiplies: dx xsum per block, xsum - 32 zp
///                               per token
///   int32 negXsumLo[R]          -(sum of values 0..15), from QDotAct's
///                               xsumLo (0 without it)
/// The kernels compute the same f32 operations in the same order as from
/// the rows, so both give the same bits.
inline constexpr int64_t kQPanelRows = 8;
inline constexpr size_t kQPanelQBytes = 8 * size_t(kQPanelRows) * 4;
inline constexpr size_t kQPanelBlockBytes =
    kQPanelQBytes + 4 * 4 * size_t(kQPanelRows);
/// Row counts from which qlinear packs panels (fewer: decode's row tiles).
inline constexpr int64_t kQPanelMinRows = 5;

/// The i8mm kernels' panels (SMMLA multiplies 2 rows x 8 values by 8
/// values x 2 weight rows): per panel block, at panel + (p * blocks + b) *
/// kQPairsBlockBytes,
///   int8  q[4][kQPanelRows][8]  values 8j..8j+7 of row i at (j * R + i) * 8
///                               (rows 2r and 2r + 1: 16 bytes, an operand)
///   int32 init[R / 2][4]        8 (-xsum) of rows 2r, 2r, 2r + 1, 2r + 1
///                               (per token + 256 zp: -8 (xsum - 32 zp),
///                               the 4-bit kD times xsum - 32 zp)
///   f32   dx[R / 2][4]          the scales in the same pattern (per block);
///                               per token the zero points (int32)
///   f32   xo[R / 2][4]          xo (above) in the same pattern
/// (the pattern of a 2x2 SMMLA tile: row-major, activation rows x weight
/// rows).
inline constexpr size_t kQPairsQBytes = 4 * size_t(kQPanelRows) * 8;
inline constexpr size_t kQPairsBlockBytes =
    kQPairsQBytes + 3 * 4 * 2 * size_t(kQPanelRows);

/// How an ISA's kernels read prefill rows: the panels above (Chunks: x86
/// and dotprod; Pairs: i8mm), or the rows themselves (None).
enum class QPanelFormat : uint8_t { None, Chunks, Pairs };
QPanelFormat qdotPanelFormat(Isa isa);

/// The panel blocks of M rows of `blocks` blocks: item p * blocks + b is
/// block b of panel p.
inline int64_t qdotPanelItems(int64_t M, int64_t blocks) {
  return (M + kQPanelRows - 1) / kQPanelRows * blocks;
}

/// Bytes of the panels of M rows of `blocks` blocks in format `f`.
inline size_t qdotPanelBytes(QPanelFormat f, int64_t M, int64_t blocks) {
  const size_t block = f == QPanelFormat::Chunks  ? kQPanelBlockBytes
                       : f == QPanelFormat::Pairs ? kQPairsBlockBytes
                                                  : 0;
  return size_t(qdotPanelItems(M, blocks)) * block;
}

/// Packs the panel blocks [begin, end) (qdotPanelItems) of rows [0, M) of
/// `a` (whole blocks: padded rows) into `dst` (qdotPanelBytes(f, M,
/// a.blocks) bytes in all) in format `f` (not None); calls for disjoint
/// ranges may run concurrently.
void qdotPackPanels(QPanelFormat f, const QDotAct &a, int64_t M, uint8_t *dst,
                    int64_t begin, int64_t end);

/// Computes y[m * ldy + n] for m < M and the rows n of row groups
/// [rg0, rg1) (the padding rows of the last group are not stored), adding
/// bias[n] when given.
using QDotFn = void (*)(const QDotWeight &w, const QDotAct &a, int64_t M,
                        int64_t rg0, int64_t rg1, const float *bias, float *y,
                        int64_t ldy);

/// The portable C++ kernel: every layout and activation kind.
void qdotGeneric(const QDotWeight &w, const QDotAct &a, int64_t M, int64_t rg0,
                 int64_t rg1, const float *bias, float *y, int64_t ldy);

/// The kernel of `isa` for this weight and activation kind; the generic
/// kernel when the ISA has none for it (8-bit asymmetric weights outside
/// VNNI: their unsigned bytes overflow maddubs' int16 pairs).
QDotFn qdotKernel(Isa isa, const PackedQBlockLayout &l, bool perToken);

/// f32 activation rows for the weight-only kernels: row m at x + m * stride
/// with kBlocks * 32 readable values (the tail 0), and each block's sum of
/// values (the nibble bias and asymmetric offsets multiply it).
struct QDotF32Act {
  const float *x = nullptr;
  int64_t stride = 0;
  const float *xsum = nullptr; // [M][kBlocks]
  int64_t blocks = 0;
};

/// Weight-only qlinear for a few rows (decode): y[m * ldy + n] for m < M
/// (M <= kQDotF32MaxRows) and the rows of row groups [rg0, rg1), dequantizing
/// in registers: y = sum_b dw (sum_k u_k x_k - c xsum_b) (+ o xsum_b).
using QDotF32Fn = void (*)(const QDotWeight &w, const QDotF32Act &a, int64_t M,
                           int64_t rg0, int64_t rg1, const float *bias,
                           float *y, int64_t ldy);
inline constexpr int64_t kQDotF32MaxRows = 4;

/// The portable C++ weight-only kernel (every layout; the moe kernel's
/// fallback where qdotF32Kernel has none).
void qdotF32Generic(const QDotWeight &w, const QDotF32Act &a, int64_t M,
                    int64_t rg0, int64_t rg1, const float *bias, float *y,
                    int64_t ldy);

/// The weight-only kernel of `isa`, or null (the caller dequantizes into
/// scratch and runs the f32 GEMM).
QDotF32Fn qdotF32Kernel(Isa isa, const PackedQBlockLayout &l);

/// The packed weight `wt` (a QWeight [N, K] holding PackedQBlockLayout
/// bytes), checked.
Result<QDotWeight> qdotWeight(const Tensor &wt);

/// qlinear on a weight checked by qdotWeight (the delegate does it once at
/// init): checks only the input, bias and output.
Status qlinearRun(const KernelArgs &a, Isa isa, const QDotWeight &w);

/// Most qlinears one group may hold.
inline constexpr int kMaxQLinearGroup = 8;

/// One qlinear of a group.
struct QLinearPart {
  const QDotWeight *w;
  const float *bias;
  float *y;
  LoraFused *lora = nullptr; ///< a hook added by the tiles (one row)
};

/// n qlinears that read the same input (q, k and v; gate and up), as one:
/// the input is prepared once and one parallel loop covers the row groups
/// of all weights (one dispatch instead of n). Each args[i] is a qlinear's
/// arguments, w[i] its checked weight; lora (null, or one entry per
/// qlinear, null where none) the LoRA hooks fused into them (prepared by
/// loraFusedPrepare), which need a single row.
Status qlinearGroupRun(const KernelArgs *args, const QDotWeight *const *w,
                       size_t n, Isa isa, LoraFused *const *lora = nullptr);

/// qembedding (out[i] = dequantized row indices[i] of the table, f32) on a
/// table checked by qdotWeight: the same values as portable's qembedding.
Status qembeddingRun(const KernelArgs &a, const QDotWeight &w);

/// The scratch bytes qlinearRun needs for M rows of the input `x` (its
/// dtype and quantization; the shape is not read) with the thread pool of
/// `ctx`: the delegate reserves the upper bound at init so that execute
/// does not grow it.
size_t qlinearPackedScratch(Isa isa, const ExecContext *ctx, int64_t M,
                            const PackedQBlockLayout &l, const Tensor &x);

#if ETLLM_CPU_ARM64
// The arm64 ISA files' tables (null entries: no kernel for that case).
QDotF32Fn qdotF32Neon(const PackedQBlockLayout &l);
QDotFn qdotNeon(const PackedQBlockLayout &l, bool perToken);
QDotFn qdotDotprod(const PackedQBlockLayout &l, bool perToken);
QDotFn qdotI8mm(const PackedQBlockLayout &l, bool perToken);
#endif

#if ETLLM_CPU_X86
// The ISA files' tables (null entries: no kernel for that case).
QDotF32Fn qdotF32Avx2(const PackedQBlockLayout &l);
QDotF32Fn qdotF32Avx512(const PackedQBlockLayout &l);
QDotFn qdotAvx2(const PackedQBlockLayout &l, bool perToken);
QDotFn qdotAvxVnni(const PackedQBlockLayout &l, bool perToken);
QDotFn qdotAvxVnniEvex(const PackedQBlockLayout &l, bool perToken);
QDotFn qdotAvx512(const PackedQBlockLayout &l, bool perToken);
QDotFn qdotAvx512Vnni(const PackedQBlockLayout &l, bool perToken);
/// The AMX kernels (qdot_amx.cpp) where qdotAmxReads(l, perToken), else the
/// AVX-512 VNNI ones; they pass calls of fewer than kQAmxMinRows rows to the
/// latter.
QDotFn qdotAmx(const PackedQBlockLayout &l, bool perToken);
bool qdotAmxReads(const PackedQBlockLayout &l, bool perToken);
/// Whether the AMX kernel of `l` adds offset terms (QDotAct::xo).
bool qdotAmxOffsets(const PackedQBlockLayout &l);
/// The f32 scales d sc_j and offsets -dmin m_j of the 8 blocks j of one
/// Q4_K or Q5_K super-block record `rec` (PackedQBlockLayout) for its row
/// group's 16 rows, dw[j][r] and ow[j][r]: the AVX-512 VNNI kernels'
/// floats (qdot_avx512vnni.cpp), which the AMX kernels read too.
void qdotSuperParamsK4(const uint8_t *rec, float (*dw)[kQRows],
                       float (*ow)[kQRows]);
/// The f32 scales d sc of the two halves (values 0..15, 16..31) of the 8
/// blocks j of one Q6_K super-block record: dw[2 j + half][r], likewise.
void qdotSuperParamsQ6K(const uint8_t *rec, float (*dw)[kQRows]);
#endif

/// Rows from which the AMX kernels multiply on tiles (fewer: decode, whose
/// cost is the weight stream; the AVX-512 VNNI kernels run it).
inline constexpr int64_t kQAmxMinRows = 16;

/// Whether qdotKernel(isa, l, perToken) multiplies a call of M rows on AMX
/// tiles (it then reads the rows, not the panels, and, where
/// qdotAmxOffsets(l), QDotAct::xo); false off x86.
bool qdotAmxTiles(Isa isa, const PackedQBlockLayout &l, bool perToken,
                  int64_t M);

/// What an asymmetric weight's offsets multiply for row m and block b
/// (QDotAct::xo): xsum - 32 zp per token, dx xsum per block.
inline float qdotOffsetTerm(const QDotAct &a, int64_t m, int64_t b) {
  const int32_t xs = a.xsum[m * a.blocks + b];
  return a.perToken() ? float(xs - int32_t(kQBlock) * a.zp[m])
                      : a.dx[m * a.blocks + b] * float(xs);
}

} // namespace etllm::rt::cpu

#endif // ETLLM_BACKENDS_CPU_QDOT_H
