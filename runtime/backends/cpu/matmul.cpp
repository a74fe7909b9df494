//===- matmul.cpp - batched matmul by a per-head weight -------------------===//
//
// y[b, h, s, :] = x[b, h, s, :] @ w[h] for activations x [B, H, S, K] and a
// constant per-head weight w [H, K, N] (the absorbed attention of
// multi-head latent attention: q_nope through kv_b_proj's key half, the
// attention output through its value half; the compiler materializes the
// weights). As portable, each output row is sum_k x[k] w[k, :] in k order
// (axpy over N); the AVX2 path keeps 32 outputs in registers across k with
// FMA, so only the rounding of each product-sum differs. Work is split over
// (b, h, s) rows: every output is computed by one thread in a fixed order,
// whatever the thread count.
//
// Every other form (other ranks, broadcasting, f16 operands) declines to the
// portable kernel.
//
//===----------------------------------------------------------------------===//
#include "internal.h"

namespace etllm::rt::cpu {

namespace {

void rowGeneric(const float *x, const float *w, float *y, int64_t K,
                int64_t N) {
  for (int64_t n = 0; n < N; ++n)
    y[n] = 0.0f;
  for (int64_t k = 0; k < K; ++k) {
    const float xv = x[k];
    const float *wr = w + k * N;
    for (int64_t n = 0; n < N; ++n)
      y[n] += xv * wr[n];
  }
}

#if ETLLM_CPU_X86
/// rowGeneric with FMA: 32 outputs at a time over all of k, then 8, then a
/// masked tail.
ETLLM_CPU_AVX2 void rowAvx2(const float *x, const float *w, float *y, int64_t K,
                            int64_t N) {
  int64_t n = 0;
  for (; n + 32 <= N; n += 32) {
    __m256 a0 = _mm256_setzero_ps(), a1 = _mm256_setzero_ps(),
           a2 = _mm256_setzero_ps(), a3 = _mm256_setzero_ps();
    const float *wr = w + n;
    for (int64_t k = 0; k < K; ++k, wr += N) {
      const __m256 xv = _mm256_set1_ps(x[k]);
      a0 = _mm256_fmadd_ps(xv, _mm256_loadu_ps(wr), a0);
      a1 = _mm256_fmadd_ps(xv, _mm256_loadu_ps(wr + 8), a1);
      a2 = _mm256_fmadd_ps(xv, _mm256_loadu_ps(wr + 16), a2);
      a3 = _mm256_fmadd_ps(xv, _mm256_loadu_ps(wr + 24), a3);
    }
    _mm256_storeu_ps(y + n, a0);
    _mm256_storeu_ps(y + n + 8, a1);
    _mm256_storeu_ps(y + n + 16, a2);
    _mm256_storeu_ps(y + n + 24, a3);
  }
  for (; n < N; n += 8) {
    const int lanes = int(std::min<int64_t>(8, N - n));
    const __m256i mask = avx2::laneMask(lanes);
    __m256 a = _mm256_setzero_ps();
    const float *wr = w + n;
    for (int64_t k = 0; k < K; ++k, wr += N)
      a = _mm256_fmadd_ps(_mm256_set1_ps(x[k]), _mm256_maskload_ps(wr, mask),
                          a);
    _mm256_maskstore_ps(y + n, mask, a);
  }
}
#endif

#if ETLLM_CPU_ARM64
/// rowAvx2 with 4-lane vectors: per output the same FMAs over k in order.
void rowNeon(const float *x, const float *w, float *y, int64_t K, int64_t N) {
  int64_t n = 0;
  for (; n + 32 <= N; n += 32) {
    float32x4_t a[8];
#pragma GCC unroll 8
    for (int i = 0; i < 8; ++i)
      a[i] = vdupq_n_f32(0.0f);
    const float *wr = w + n;
    for (int64_t k = 0; k < K; ++k, wr += N) {
      const float xv = x[k];
#pragma GCC unroll 8
      for (int i = 0; i < 8; ++i)
        a[i] = vfmaq_n_f32(a[i], vld1q_f32(wr + 4 * i), xv);
    }
#pragma GCC unroll 8
    for (int i = 0; i < 8; ++i)
      vst1q_f32(y + n + 4 * i, a[i]);
  }
  for (; n < N; n += 4) {
    const int lanes = int(std::min<int64_t>(4, N - n));
    float32x4_t a = vdupq_n_f32(0.0f);
    const float *wr = w + n;
    for (int64_t k = 0; k < K; ++k, wr += N)
      a = vfmaq_n_f32(a, neon::loadPart(wr, lanes), x[k]);
    neon::storePart(y + n, a, lanes);
  }
}
#endif

bool isF32(const Tensor *t) { return storageOk(t) && t->dtype == DType::F32; }

} // namespace

Status matmulKernel(const KernelArgs &a, Isa isa, bool &handled) {
  handled = false;
  if (a.inputs.size != 2 || a.outputs.size != 1 || !isF32(a.inputs[0]) ||
      !isF32(a.inputs[1]) || !a.outputs[0] || a.outputs[0]->dtype != DType::F32)
    return Status();
  const Tensor &x = *a.inputs[0], &w = *a.inputs[1];
  if (x.rank != 4 || w.rank != 3)
    return Status();
  const int64_t B = x.sizes[0], H = x.sizes[1], S = x.sizes[2], K = x.sizes[3],
                N = w.sizes[2];
  if (w.sizes[0] != H || w.sizes[1] != K)
    return Status(); // broadcasting or a mismatch: portable
  handled = true;
  Tensor &out = *a.outputs[0];
  const int64_t shape[4] = {B, H, S, N};
  ETLLM_RETURN_IF_ERROR(out.resize(shape, 4));
  const size_t rows = size_t(B * H * S);
  if (rows == 0 || N == 0)
    return Status();
  const float *px = x.ptr<float>(), *pw = w.ptr<float>();
  float *py = out.ptr<float>();
  const bool avx = hasAvx2(isa), neon = hasNeon(isa);
  (void)avx;
  (void)neon;
  const ExecContext *pctx =
      parallelContext(a.ctx, uint64_t(rows) * uint64_t(K) * uint64_t(N));
  parallelForTiles(pctx, rows, defaultTile(pctx, rows),
                   [&](size_t begin, size_t end) {
                     for (size_t r = begin; r < end; ++r) {
                       const int64_t h = (int64_t(r) / S) % H;
                       const float *xr = px + int64_t(r) * K;
                       const float *wh = pw + h * K * N;
                       float *yr = py + int64_t(r) * N;
#if ETLLM_CPU_X86
                       if (avx) {
                         rowAvx2(xr, wh, yr, K, N);
                         continue;
                       }
#endif
#if ETLLM_CPU_ARM64
                       if (neon) {
                         rowNeon(xr, wh, yr, K, N);
                         continue;
                       }
#endif
                       rowGeneric(xr, wh, yr, K, N);
                     }
                   });
  return Status();
}

} // namespace etllm::rt::cpu
