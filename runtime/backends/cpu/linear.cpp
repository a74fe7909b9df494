//===- linear.cpp - linear with F32_NR8-packed weights --------------------===//
//
// y[m, n] = sum_k x[m, k] w[n, k] + bias[n], f32. The weight is
// PackedF32Layout: row blocks of 8 output features, k-major. Work is split
// over panels of row blocks (output features), so every output element is
// computed by one thread in a fixed order: results do not depend on the
// thread count. Against portable (a sequential f32 sum in k order) only the
// association of the sum differs (FMA, two partial sums in decode, k chunks
// in prefill).
//
//===----------------------------------------------------------------------===//
#include "gemm.h"

#include <algorithm>

namespace etllm::rt::cpu {

Status checkLinearOperands(const char *op, const Tensor &x, int64_t N,
                           int64_t K, const Tensor *bias, const Tensor &out,
                           int64_t &M) {
  if (x.rank < 1)
    return kernelError(op, "input must have rank >= 1");
  if (x.dim(-1) != K)
    return kernelError(op, "weight [" + std::to_string(N) + ", " +
                               std::to_string(K) +
                               "] does not match the input " + x.shapeString());
  if (bias) {
    ETLLM_RETURN_IF_ERROR(checkStorage(op, "bias", *bias));
    if (bias->dtype != DType::F32 || bias->rank != 1 || bias->sizes[0] != N)
      return kernelError(op, "bias " + bias->shapeString() +
                                 " does not match " + std::to_string(N) +
                                 " output features (f32)");
  }
  if (out.dtype != DType::F32)
    return kernelError(op, std::string("output must be f32, not ") +
                               dtypeName(out.dtype));
  M = prodSizes(x.sizes, 0, x.rank - 1);
  return Status();
}

Status linearPacked(const KernelArgs &a, Isa isa) {
  const char *op = opName(OpId::Linear);
  ETLLM_RETURN_IF_ERROR(checkLinearArgs(op, a));
  const Tensor &x = *a.inputs[0], &w = *a.inputs[1];
  const Tensor *bias = a.inputs.size > 2 ? a.inputs[2] : nullptr;
  Tensor &out = *a.outputs[0];
  ETLLM_RETURN_IF_ERROR(checkStorage(op, "input", x));
  if (x.dtype != DType::F32 || w.dtype != DType::F32)
    return kernelError(op, std::string("packed linear needs f32, got ") +
                               dtypeName(x.dtype) + " and " +
                               dtypeName(w.dtype));
  if (w.rank != 2)
    return kernelError(op, "weight must be [N, K], got " + w.shapeString());
  const int64_t N = w.sizes[0], K = w.sizes[1];
  Result<PackedF32Layout> l = PackedF32Layout::computeChecked(N, K);
  if (!l.ok())
    return kernelError(op, l.message());
  if (l->totalBytes > w.capacity || !w.data)
    return kernelError(op, "packed weight " + w.shapeString() + " needs " +
                               std::to_string(l->totalBytes) + " bytes");
  int64_t M;
  ETLLM_RETURN_IF_ERROR(checkLinearOperands(op, x, N, K, bias, out, M));
  ETLLM_RETURN_IF_ERROR(resizeLike(op, out, x, N));
  if (M == 0 || N == 0)
    return Status();

  const float *px = x.ptr<float>();
  const float *pw = w.ptr<float>();
  const float *pb = bias ? bias->ptr<float>() : nullptr;
  float *py = out.ptr<float>();
  const int64_t NB = l->rowBlocks;
  const int64_t blockFloats = K * kNR;
  const ExecContext *pctx =
      parallelContext(a.ctx, uint64_t(M) * uint64_t(N) * uint64_t(K));

  if (K == 0) {
    // No products: y = bias (or 0).
    for (int64_t m = 0; m < M; ++m)
      for (int64_t n = 0; n < N; ++n)
        py[m * N + n] = pb ? pb[n] : 0.0f;
    return Status();
  }

  // The tile of row blocks [rb, rb + nb) over k in [k0, k0 + kc), adding
  // to y after the first chunk.
  auto tileAt = [&](int64_t rb, int nb, int64_t k0, int64_t kc) {
    return gemm::Tile{px + k0,
                      K,
                      pw + rb * blockFloats + k0 * kNR,
                      blockFloats,
                      kc,
                      pb ? pb + rb * kNR : nullptr,
                      k0 > 0,
                      py + rb * kNR,
                      N,
                      int(std::min<int64_t>(N - rb * kNR, nb * kNR))};
  };

  // Runs body(rb, nb) on every panel of `per` row blocks [rb, rb + nb) (the
  // last may have fewer), the panels in parallel.
  auto forEachPanel = [&](int64_t per, auto body) {
    const int64_t panels = (NB + per - 1) / per;
    parallelForTiles(pctx, size_t(panels), defaultTile(pctx, size_t(panels)),
                     [&](size_t b, size_t e) {
                       for (size_t p = b; p < e; ++p) {
                         const int64_t rb = int64_t(p) * per;
                         body(rb, int(std::min<int64_t>(per, NB - rb)));
                       }
                     });
  };

  if (gemm::hasGemv(isa) && M == 1) {
    // Decode: memory-bound; panels of 4 blocks, 8 accumulator chains.
    forEachPanel(gemm::kGemvBlocks, [&](int64_t rb, int nb) {
      gemm::gemvN(isa, nb, tileAt(rb, nb, 0, K));
    });
    return Status();
  }

  // Panels of 2 blocks; k in chunks; all rows per chunk.
  forEachPanel(gemm::kPanelBlocks, [&](int64_t rb, int nb) {
    for (int64_t k0 = 0; k0 < K; k0 += gemm::kChunk)
      gemm::panelRowsN(
          isa, nb, tileAt(rb, nb, k0, std::min<int64_t>(gemm::kChunk, K - k0)),
          M);
  });
  return Status();
}

} // namespace etllm::rt::cpu
