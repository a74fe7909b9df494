//===- params.h - Parameter blocks of the Vulkan kernels --------*- C++ -*-===//
//
// One declaration of each kernel's parameter block, read by the C++ host
// code (the compiler fills them, the runtime checks them) and by the GLSL
// compute shaders (runtime/backends/vulkan/shaders, `#include "params.h"`),
// so both sides agree on every field. The blocks live in a uniform buffer
// (std140): only 32-bit scalars and nested blocks whose size is a multiple
// of 16 bytes, so std140 and the C++ layout are the same (format.cpp
// checks the sizes).
//
// Conventions. S is the current sequence length (the Globals block, set
// per call). A row count "m0 + mS * S" and an element offset "off + offS *
// S" follow the sequence; offsets and strides count elements of the
// binding's type, never bytes.
//
//===----------------------------------------------------------------------===//
#ifndef ETLLM_RUNTIME_VULKAN_PARAMS_H
#define ETLLM_RUNTIME_VULKAN_PARAMS_H

#ifdef __cplusplus
#include <cstdint>
namespace etllm::rt::vulkan {
using uint = uint32_t;
#endif

/// Set per call (binding 0 of every kernel).
struct Globals {
  uint S;     // current sequence length
  uint kvLen; // 1 + the largest position of the call
  uint pad0;
  uint pad1;
};

/// Y[m, j] = sum_k X[m, k] W[j, k] (+ B[j]) (+ R[m, j]), j < n; or, with
/// the swiglu epilogue, W holds 2n rows and Y[m, j] = silu(g) * u with g
/// from row j and u from row n + j.
/// Bindings: X, W, Y, R, B (R, B: any binding when unused).
struct MatmulParams {
  uint m0;
  uint mS;
  uint n;
  uint k;
  int xOff;
  int xOffS;
  uint xStride;
  uint epilogue; // kEpilogue* flags
  int yOff;
  int yOffS;
  uint yStride;
  uint wScaleOff; // q4: the word where the scales start (n * k / 8)
  int rOff;
  int rOffS;
  uint rStride;
  uint bOff; // bias: its first element in B
};

/// Y[m, :] = X[m, :] * rsqrt(mean(X[m, :]^2) + eps) * (W + weightOffset)
/// (W: f32, when hasWeight). Bindings: X, W, Y.
struct RmsNormParams {
  uint m0;
  uint mS;
  uint d;
  uint hasWeight;
  int xOff;
  int xOffS;
  uint xStride;
  float eps;
  int yOff;
  int yOffS;
  uint yStride;
  float weightOffset;
};

/// One job of ROPE: for every s < S and head h < heads, the d values at
/// src[srcOff + srcOffS * S + h * srcStrideH + s * srcStrideS + i] go to
/// dst[dstOff + h * dstStrideH + row * dstStrideS + i], rotated (rotate) by
/// position positions[s], where row = positions[s] (toCache, a KV cache of
/// dstRows rows) or s.
struct RopeJob {
  uint heads;
  uint d;
  uint rotate;
  uint toCache;
  int srcOff;
  int srcOffS;
  uint srcStrideH;
  uint srcStrideS;
  uint dstOff;
  uint dstStrideH;
  uint dstStrideS;
  uint dstRows;
};

/// Bindings: positions (i32), table (f32 [tableRows][r][cos, sin]), then
/// src, dst of each job. `convention`: 0 rotate_half (i with i + r), 1
/// interleaved (2i with 2i + 1), 2 deinterleave_rotate_half.
struct RopeParams {
  uint jobs;
  uint r;
  uint convention;
  uint tableRows;
  RopeJob job0;
  RopeJob job1;
  RopeJob job2;
};

/// Attention of query head h, query s over keys j < t of kv head h /
/// (heads / kvHeads): Q[qOff + qOffS S + h qStrideH + s qStrideS + i],
/// K[kOff + hk kStrideH + j kStrideT + i], V likewise, O like Q. Causal:
/// key j is visible to query s when j <= p (p = positions[s], or s without
/// positions) and, with window > 0, j > p - window. softcap > 0:
/// tanh(x / softcap) * softcap of the scaled scores.
/// Split-KV (decoding: the kernel is told so per bucket): each of `splits`
/// workgroups of a (head, query) covers `chunk` keys and writes a partial
/// (max, sum, dv accumulators) at P[partialOff + ((h * S + s) * splits +
/// split) * (dv + 2)]; SDPA_COMBINE merges them into O.
/// Bindings: positions (i32; any binding without), Q, K, V, O, P.
struct SdpaParams {
  uint heads;
  uint kvHeads;
  uint d;
  uint dv;
  int qOff;
  int qOffS;
  uint qStrideH;
  uint qStrideS;
  int oOff;
  int oOffS;
  uint oStrideH;
  uint oStrideS;
  uint kOff;
  uint kStrideH;
  uint kStrideT;
  uint vOff;
  uint vStrideH;
  uint vStrideT;
  uint t;
  uint causal;
  uint hasPositions;
  uint window;
  float scale;
  float softcap;
  uint splits;
  uint chunk;
  uint partialOff;
  uint maxSplitRows; // rows (heads x S) the partials hold
};

/// Bindings: P (the partials), O. Same meaning as in SdpaParams.
struct SdpaCombineParams {
  uint heads;
  uint dv;
  uint splits;
  uint partialOff;
  int oOff;
  int oOffS;
  uint oStrideH;
  uint oStrideS;
};

/// Softmax over the last dimension of rows m0 + mS * S. Bindings: X, Y.
struct SoftmaxParams {
  uint m0;
  uint mS;
  uint d;
  uint pad0;
  int xOff;
  int xOffS;
  uint xStride;
  uint pad1;
  int yOff;
  int yOffS;
  uint yStride;
  uint pad2;
};

/// Y[i] = A[i] op B[i] for i < n0 + nS * S on contiguous data (op:
/// kElementwise*); with bScalar the right operand is `scalar`.
/// Bindings: A, B (any binding when unused), Y.
struct ElementwiseParams {
  uint n0;
  uint nS;
  uint op;
  uint bScalar;
  int aOff;
  int aOffS;
  int bOff;
  int bOffS;
  int yOff;
  int yOffS;
  float scalar;
  uint pad0;
};

/// Y[m, :] = table row I[m] for m < m0 + mS * S, when the row is one of
/// the table's [rowBegin, rowBegin + rows) (a table split over several
/// bindings is read by one dispatch per part). Bindings: I (i32), table, Y.
struct EmbeddingParams {
  uint m0;
  uint mS;
  uint d;
  uint rowBegin;
  uint rows;
  uint wScaleOff; // q4: the word where the scales start (rows * d / 8)
  int iOff;
  int iOffS;
  int yOff;
  int yOffS;
  uint yStride;
  uint pad0;
};

/// dst[dstOff + dstOffS S + sum_i idx_i ds_i] = src[srcOff + srcOffS S +
/// sum_i idx_i ss_i] over idx < (n0, n1, n2, n3), where dimension `dyn`
/// (or none: 4) has n_dyn * S entries. Bindings: src, dst.
struct CopyParams {
  uint n0;
  uint n1;
  uint n2;
  uint n3;
  uint dyn;
  int srcOff;
  int srcOffS;
  int dstOff;
  uint ss0;
  uint ss1;
  uint ss2;
  uint ss3;
  uint ds0;
  uint ds1;
  uint ds2;
  uint ds3;
  int dstOffS;
  uint pad0;
  uint pad1;
  uint pad2;
};

#ifdef __cplusplus
} // namespace etllm::rt::vulkan
#endif

// Values shared by both sides (GLSL has no constexpr: macros).
#define ETLLM_VK_EPILOGUE_RESIDUAL 1u
#define ETLLM_VK_EPILOGUE_BIAS 2u
#define ETLLM_VK_EPILOGUE_SWIGLU 4u

#define ETLLM_VK_ELEMENTWISE_ADD 0u
#define ETLLM_VK_ELEMENTWISE_MUL 1u
#define ETLLM_VK_ELEMENTWISE_SILU 2u
#define ETLLM_VK_ELEMENTWISE_SWIGLU 3u
#define ETLLM_VK_ELEMENTWISE_SUB 4u

// The workgroup shapes the runtime's grids assume (contracts.cpp).
#define ETLLM_VK_GEMV_THREADS 64u
#define ETLLM_VK_GEMV_ROWS 2u     // output columns per GEMV workgroup
#define ETLLM_VK_GEMV_MAX_M 4u    // more rows than this: the GEMM kernel
#define ETLLM_VK_GEMM_TILE 32u    // GEMM tiles: 32 x 32 outputs, 256 threads
#define ETLLM_VK_ROW_THREADS 128u // rms_norm, softmax, embedding, rope
#define ETLLM_VK_SDPA_THREADS 64u // keys per pass of an SDPA workgroup
#define ETLLM_VK_SDPA_MAX_HEAD 256u
#define ETLLM_VK_FLAT_THREADS 256u // elementwise, copy

#endif // ETLLM_RUNTIME_VULKAN_PARAMS_H
