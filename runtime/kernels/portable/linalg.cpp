//===- linalg.cpp - matmul, linear, embedding -----------------------------===//
//
// Products accumulate in f32 in index order over K. Work is split over the
// thread pool by output rows (matmul), output features (linear) or looked-up
// rows (embedding); every output element is computed by one thread in the
// same order whatever the thread count, so results do not depend on it.
//
//===----------------------------------------------------------------------===//
#include "common.h"
#include "kernels.h"

namespace etllm::rt::portable {

Status kernelMatmul(const KernelArgs &a) {
  const char *op = opName(OpId::Matmul);
  const Tensor &A = *a.inputs[0], &B = *a.inputs[1];
  Tensor &out = *a.outputs[0];
  if (A.dtype != B.dtype || out.dtype != A.dtype || !isFloat(A.dtype))
    return unsupportedDTypes(op, A.dtype, B.dtype, out.dtype);
  if (A.rank < 2 || B.rank < 2)
    return opError(op, "operands must have rank >= 2, got " + A.shapeString() +
                           " and " + B.shapeString());
  const int64_t M = A.dim(-2), K = A.dim(-1), N = B.dim(-1);
  if (B.dim(-2) != K)
    return opError(op, "inner dimensions differ: " + A.shapeString() + " @ " +
                           B.shapeString());
  // Broadcast the batch dimensions.
  Tensor batchA = A, batchB = B;
  batchA.rank = A.rank - 2;
  batchB.rank = B.rank - 2;
  Shape batch;
  int64_t bstr[2][kMaxRank];
  ETLLM_RETURN_IF_ERROR(broadcastPair(op, batchA, batchB, batch, bstr));
  Shape os = batch;
  os.sizes[os.rank++] = M;
  os.sizes[os.rank++] = N;
  const int64_t numBatch = batch.numel();
  const size_t rows = size_t(numBatch * M);
  const size_t tile = defaultTile(a.ctx, rows, size_t(N) * size_t(K));
  void *scratch = nullptr;
  ETLLM_RETURN_IF_ERROR(getScratch(
      op, a, numTiles(rows, tile) * size_t(N) * sizeof(float), scratch));
  ETLLM_RETURN_IF_ERROR(resizeTo(op, out, os));
  return dispatchFloat(A.dtype, op, [&](auto tag) -> Status {
    using T = typename decltype(tag)::type;
    const T *pa = A.ptr<T>(), *pb = B.ptr<T>();
    T *po = out.ptr<T>();
    float *accAll = static_cast<float *>(scratch);
    parallelForTiles(a.ctx, rows, tile, [&](size_t begin, size_t end) {
      float *acc = accAll + (begin / tile) * size_t(N);
      for (size_t r = begin; r < end; ++r) {
        const int64_t bi = int64_t(r) / M, m = int64_t(r) % M;
        // Batch offsets (in matrices) of A and B.
        int64_t offA = 0, offB = 0, rem = bi;
        for (int d = batch.rank - 1; d >= 0; --d) {
          int64_t idx = rem % batch.sizes[d];
          rem /= batch.sizes[d];
          offA += idx * bstr[0][d];
          offB += idx * bstr[1][d];
        }
        const T *arow = pa + (offA * M + m) * K;
        const T *bmat = pb + offB * K * N;
        for (int64_t n = 0; n < N; ++n)
          acc[n] = 0.0f;
        for (int64_t k = 0; k < K; ++k) {
          const float av = toF32(arow[k]);
          const T *brow = bmat + k * N;
          for (int64_t n = 0; n < N; ++n)
            acc[n] += av * toF32(brow[n]);
        }
        T *orow = po + (bi * M + m) * N;
        for (int64_t n = 0; n < N; ++n)
          orow[n] = fromF32<T>(acc[n]);
      }
    });
    return Status();
  });
}

Status kernelLinear(const KernelArgs &a) {
  const char *op = opName(OpId::Linear);
  const Tensor &x = *a.inputs[0], &w = *a.inputs[1];
  const Tensor *bias = a.inputs.size > 2 ? a.inputs[2] : nullptr;
  Tensor &out = *a.outputs[0];
  if (x.dtype != w.dtype || out.dtype != x.dtype || !isFloat(x.dtype) ||
      (bias && bias->dtype != x.dtype))
    return unsupportedDTypes(op, x.dtype, w.dtype, out.dtype);
  if (x.rank < 1 || w.rank != 2)
    return opError(op, "expects input [..., K] and weight [N, K], got " +
                           x.shapeString() + " and " + w.shapeString());
  const int64_t K = x.dim(-1), N = w.dim(0);
  if (w.dim(1) != K)
    return opError(op, "weight " + w.shapeString() +
                           " does not match the input " + x.shapeString());
  if (bias && (bias->rank != 1 || bias->dim(0) != N))
    return opError(op, "bias " + bias->shapeString() + " does not match " +
                           std::to_string(N) + " output features");
  const int64_t M = prod(x.sizes, 0, x.rank - 1);
  Shape os = Shape::of(x);
  os.sizes[os.rank - 1] = N;
  const bool isF32 = x.dtype == DType::F32;
  const size_t tile = defaultTile(a.ctx, size_t(N), size_t(M) * size_t(K));
  const size_t xFloats = isF32 ? 0 : size_t(M * K);
  const size_t biasFloats = bias ? size_t(N) : 0;
  const size_t rowFloats = isF32 ? 0 : numTiles(size_t(N), tile) * size_t(K);
  void *scratch = nullptr;
  ETLLM_RETURN_IF_ERROR(getScratch(
      op, a, (xFloats + biasFloats + rowFloats) * sizeof(float), scratch));
  ETLLM_RETURN_IF_ERROR(resizeTo(op, out, os));
  return dispatchFloat(x.dtype, op, [&](auto tag) -> Status {
    using T = typename decltype(tag)::type;
    float *xf = static_cast<float *>(scratch);
    float *bf = xf + xFloats;
    float *rows = bf + biasFloats;
    const float *xin = isF32 ? x.ptr<float>() : xf;
    if (!isF32)
      toF32Row(x.ptr<T>(), xf, M * K);
    if (bias)
      toF32Row(bias->ptr<T>(), bf, N);
    const T *pw = w.ptr<T>();
    linearRows(a.ctx, xin, M, K, N, bias ? bf : nullptr, out.ptr<T>(), rows,
               tile, [&](int64_t n, float *buf) -> const float * {
                 if constexpr (std::is_same_v<T, float>) {
                   return pw + n * K;
                 } else {
                   toF32Row(pw + n * K, buf, K);
                   return buf;
                 }
               });
    return Status();
  });
}

Status kernelEmbedding(const KernelArgs &a) {
  const char *op = opName(OpId::Embedding);
  const Tensor &table = *a.inputs[0], &idx = *a.inputs[1];
  Tensor &out = *a.outputs[0];
  if (!isFloat(table.dtype) || out.dtype != table.dtype)
    return unsupportedDTypes(op, table.dtype, out.dtype);
  if (table.rank != 2)
    return opError(op, "table must be [V, D], got " + table.shapeString());
  if (idx.rank + 1 > kMaxRank)
    return opError(op, "indices have too high a rank");
  const int64_t V = table.dim(0), D = table.dim(1);
  ETLLM_RETURN_IF_ERROR(checkIndices(op, idx, V));
  Shape os = Shape::of(idx);
  os.sizes[os.rank++] = D;
  ETLLM_RETURN_IF_ERROR(resizeTo(op, out, os));
  const size_t rowBytes = size_t(D) * elementSize(table.dtype);
  const uint8_t *src = table.ptr<uint8_t>();
  uint8_t *dst = out.ptr<uint8_t>();
  const size_t n = size_t(idx.numel());
  parallelForTiles(a.ctx, n, defaultTile(a.ctx, n, size_t(D)),
                   [&](size_t begin, size_t end) {
                     for (size_t i = begin; i < end; ++i)
                       std::memcpy(dst + i * rowBytes,
                                   src + size_t(loadIndex(idx, int64_t(i))) *
                                             rowBytes,
                                   rowBytes);
                   });
  return Status();
}

} // namespace etllm::rt::portable
