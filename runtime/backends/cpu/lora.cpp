//===- lora.cpp - The LoRA hook with AVX2, FMA and F16C -------------------===//
//
// out = base + sum over the adapters applied to the hook of
//       scale * (x At) Bt
// as the portable kernel (runtime/kernels/portable/lora.cpp, the reference),
// with f32, half or int8 factors read in place (half converted by
// vcvtph2ps, int8 by vpmovsxbd + vcvtdq2ps; int8 scales, one per rank
// index, applied to the rank-sized intermediate).
// On a decode step the kernel is bound by reading the factors: a small
// region (rank 16, 2048 x 2048: 128 KiB in half), cold in the caches, read
// once per token. The loops prefetch ahead of their streams (x At reads At
// in order; (x At) Bt streams four rows of Bt side by side), which the
// hardware prefetchers alone ramp up too late for. A thread-pool dispatch
// costs more than such a hook takes on one thread (etllm_cpu_bench's
// Lora_* cases: 2048 x 8192 in half, 13-15 us inline, 19 us split over 2
// threads), so x At always runs on the calling thread and (x At) Bt goes to
// the pool only when Bt holds at least kParallelBytes (the portable kernel
// makes two dispatches per hook: 224 per token for rank 16 on the seven
// projections of a 16-layer model). In the delegate a decode step does not
// run this kernel over a packed qlinear's output: the qlinear's own
// parallel loop computes x At as its first tasks, while the other threads
// run qlinear tiles, and adds (x At) Bt to the columns each tile writes
// (loraFusedCoefficients, loraFusedAddColumns: the same operations per
// column, so the same bits); no dispatch of its own, no thread waiting.
//
// Numerics: products and sums in f32 with FMA, x At summed in a fixed
// order (two interleaved partial sums per lane, added at the end), so a
// row's result is the same bits whatever the thread count and whether it
// comes alone or in a prefill; against the portable kernel it differs by
// the rounding of the reassociated sums (test/lora_test.cpp).
//
// Declines (the portable kernel runs and reports) on the generic ISA, on
// anything but f32 activations, without a hook table, and on shapes or
// factor types the portable kernel would refuse.
//
//===----------------------------------------------------------------------===//
#include "internal.h"

#include "etllm/runtime/half.h"

#include <algorithm>

namespace etllm::rt::cpu {

#if ETLLM_CPU_X86
namespace {

/// (x At) Bt is split over the pool on a decode step when Bt holds at least
/// this many bytes (see the header: below it a dispatch costs more than
/// the second thread saves).
constexpr int64_t kParallelBytes = int64_t(1) << 20;

/// Bytes ahead of the current position that the loops prefetch: a hook's
/// factors are a small region read once per token, cold in the caches; the
/// hardware prefetchers ramp up too late on it (measured with
/// etllm_cpu_bench's Lora_* cases).
constexpr int64_t kPrefetchBytes = 2048;

ETLLM_CPU_AVX2 inline void prefetch(const void *p) {
  _mm_prefetch(static_cast<const char *>(p), _MM_HINT_T0);
}

ETLLM_CPU_AVX2 inline __m256 load8(const float *p) {
  return _mm256_loadu_ps(p);
}
ETLLM_CPU_AVX2 inline __m256 load8(const uint16_t *p) {
  return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i *>(p)));
}
ETLLM_CPU_AVX2 inline __m256 load8(const int8_t *p) {
  return _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(
      _mm_loadl_epi64(reinterpret_cast<const __m128i *>(p))));
}
inline float load1(const float *p) { return *p; }
inline float load1(const uint16_t *p) { return halfToFloat(*p); }
inline float load1(const int8_t *p) { return float(*p); }

/// t[k0, k0 + 8 NV) = sum over i of x[i] * At[i, k0 + ...]: even and odd
/// rows in separate accumulators, added at the end.
template <int NV, typename T>
ETLLM_CPU_AVX2 void xAtBlock(const float *x, const T *at, int64_t K, int64_t r,
                             int64_t k0, float *t) {
  __m256 even[NV], odd[NV];
  for (int v = 0; v < NV; ++v)
    even[v] = odd[v] = _mm256_setzero_ps();
  int64_t i = 0;
  for (; i + 2 <= K; i += 2) {
    const __m256 x0 = _mm256_set1_ps(x[i]), x1 = _mm256_set1_ps(x[i + 1]);
    const T *a0 = at + i * r + k0, *a1 = a0 + r;
    prefetch(a0 + kPrefetchBytes / int64_t(sizeof(T)));
    for (int v = 0; v < NV; ++v) {
      even[v] = _mm256_fmadd_ps(x0, load8(a0 + 8 * v), even[v]);
      odd[v] = _mm256_fmadd_ps(x1, load8(a1 + 8 * v), odd[v]);
    }
  }
  if (i < K) {
    const __m256 x0 = _mm256_set1_ps(x[i]);
    const T *a0 = at + i * r + k0;
    for (int v = 0; v < NV; ++v)
      even[v] = _mm256_fmadd_ps(x0, load8(a0 + 8 * v), even[v]);
  }
  for (int v = 0; v < NV; ++v)
    _mm256_storeu_ps(t + k0 + 8 * v, _mm256_add_ps(even[v], odd[v]));
}

/// t[0..r) = x At for one row (At's int8 scales not applied).
template <typename T>
ETLLM_CPU_AVX2 void xAt(const float *x, const T *at, int64_t K, int64_t r,
                        float *t) {
  int64_t k0 = 0;
  for (; k0 + 32 <= r; k0 += 32)
    xAtBlock<4>(x, at, K, r, k0, t);
  switch ((r - k0) / 8) {
  case 3:
    xAtBlock<3>(x, at, K, r, k0, t);
    break;
  case 2:
    xAtBlock<2>(x, at, K, r, k0, t);
    break;
  case 1:
    xAtBlock<1>(x, at, K, r, k0, t);
    break;
  default:
    break;
  }
  k0 += (r - k0) / 8 * 8;
  for (int64_t k = k0; k < r; ++k) { // the last r % 8 lanes
    float s = 0;
    for (int64_t i = 0; i < K; ++i)
      s = std::fma(x[i], load1(at + i * r + k), s);
    t[k] = s;
  }
}

/// t[0..r) = the coefficients of Bt's rows (loraCoefficient).
void coefficients(const LoraTerm &term, int64_t r, float *t) {
  for (int64_t k = 0; k < r; ++k)
    t[k] = loraCoefficient(term, k, t[k]);
}

/// out[n0..n1) += sum over k in [k0, k0 + KG) of t[k] * Bt[k, n0..n1), k in
/// order: KG rows of Bt streamed side by side.
template <int KG, typename T>
ETLLM_CPU_AVX2 void addRows(const float *t, const T *bt, int64_t k0, int64_t N,
                            int64_t n0, int64_t n1, float *out) {
  __m256 c[KG];
  const T *row[KG];
  for (int g = 0; g < KG; ++g) {
    c[g] = _mm256_set1_ps(t[k0 + g]);
    row[g] = bt + (k0 + g) * N;
  }
  constexpr int64_t ahead = kPrefetchBytes / int64_t(sizeof(T));
  int64_t n = n0;
  for (; n + 32 <= n1; n += 32) {
    for (int g = 0; g < KG; ++g)
      prefetch(row[g] + n + ahead);
    __m256 acc[4];
    for (int v = 0; v < 4; ++v)
      acc[v] = _mm256_loadu_ps(out + n + 8 * v);
    for (int g = 0; g < KG; ++g)
      for (int v = 0; v < 4; ++v)
        acc[v] = _mm256_fmadd_ps(c[g], load8(row[g] + n + 8 * v), acc[v]);
    for (int v = 0; v < 4; ++v)
      _mm256_storeu_ps(out + n + 8 * v, acc[v]);
  }
  for (; n + 8 <= n1; n += 8) {
    __m256 acc = _mm256_loadu_ps(out + n);
    for (int g = 0; g < KG; ++g)
      acc = _mm256_fmadd_ps(c[g], load8(row[g] + n), acc);
    _mm256_storeu_ps(out + n, acc);
  }
  for (; n < n1; ++n) {
    float s = out[n];
    for (int g = 0; g < KG; ++g)
      s = std::fma(t[k0 + g], load1(row[g] + n), s);
    out[n] = s;
  }
}

/// out[n0..n1) += sum over k of t[k] * Bt[k, n0..n1), k in order, four rows
/// of Bt at a time.
template <typename T>
ETLLM_CPU_AVX2 void addProduct(const float *t, const T *bt, int64_t r,
                               int64_t N, int64_t n0, int64_t n1, float *out) {
  int64_t k = 0;
  for (; k + 4 <= r; k += 4)
    addRows<4>(t, bt, k, N, n0, n1, out);
  for (; k < r; ++k)
    addRows<1>(t, bt, k, N, n0, n1, out);
}

template <typename TA, typename TB>
void addTerm(const ExecContext *ctx, const LoraTerm &term, const float *px,
             int64_t M, int64_t K, int64_t N, float *tmp, float *po) {
  const TA *at = static_cast<const TA *>(term.at);
  const TB *bt = static_cast<const TB *>(term.bt);
  const int64_t r = term.rank;
  if (M == 1) {
    xAt(px, at, K, r, tmp);
    coefficients(term, r, tmp);
    const bool split = r * N * int64_t(sizeof(TB)) >= kParallelBytes;
    const ExecContext *pctx = split ? ctx : nullptr;
    parallelForTiles(pctx, size_t(N), defaultTile(pctx, size_t(N)),
                     [&](size_t n0, size_t n1) {
                       addProduct(tmp, bt, r, N, int64_t(n0), int64_t(n1), po);
                     });
    return;
  }
  const uint64_t work = uint64_t(M) * uint64_t(r) * uint64_t(K + N);
  parallelFor(parallelContext(ctx, work), size_t(M), [&](size_t m) {
    float *tm = tmp + int64_t(m) * r;
    xAt(px + int64_t(m) * K, at, K, r, tm);
    coefficients(term, r, tm);
    addProduct(tm, bt, r, N, 0, N, po + int64_t(m) * N);
  });
}

} // namespace
#endif

namespace {

/// Hook `hook` of `hooks` when the kernels of this file run it over K input
/// and N output features (a valid index, those features, every factor of a
/// type they read), else null: the portable kernel runs and reports.
const LoraHookTerms *runnableHook(const std::vector<LoraHookTerms> &hooks,
                                  int64_t hook, int64_t K, int64_t N) {
  if (hook < 0 || size_t(hook) >= hooks.size())
    return nullptr;
  const LoraHookTerms &h = hooks[size_t(hook)];
  if (h.inFeatures != K || h.outFeatures != N)
    return nullptr;
  for (const LoraTerm &t : h.terms)
    if (!loraTermReadable(t))
      return nullptr;
  return &h;
}

} // namespace

bool loraFusedPrepare(Isa isa, const ExecContext &ctx, const Tensor &x,
                      int64_t N, int64_t hook, float *buf, size_t capacity,
                      LoraFused &f) {
  f.hook = nullptr;
  f.x = nullptr;
  f.t = nullptr;
  f.floats = 0;
  f.ready.store(false, std::memory_order_relaxed);
  if (!hasAvx2(isa) || !storageOk(&x) || x.dtype != DType::F32 || x.rank < 1 ||
      prodSizes(x.sizes, 0, x.rank - 1) != 1)
    return false;
  const std::vector<LoraHookTerms> *hooks = ctx.loraHooks();
  if (!hooks)
    return true; // none applied: the qlinear's output is the hook's
  const LoraHookTerms *h = runnableHook(*hooks, hook, x.sizes[x.rank - 1], N);
  if (!h)
    return false; // the lora node runs (and reports)
  size_t floats = 0;
  for (const LoraTerm &t : h->terms) {
    if (t.rank < 0)
      return false;
    floats += size_t(t.rank);
  }
  if (floats > capacity)
    return false;
  if (!h->terms.empty()) {
    f.hook = h;
    f.x = x.ptr<float>();
    f.t = buf;
    f.floats = floats;
  }
  return true;
}

void loraFusedCoefficients(LoraFused &f) {
#if ETLLM_CPU_X86
  if (f.hook) {
    const int64_t K = f.hook->inFeatures;
    float *t = f.t;
    for (const LoraTerm &term : f.hook->terms) {
      withLoraElementType(term.atType, [&](auto ta) {
        xAt(f.x, static_cast<const decltype(ta) *>(term.at), K, term.rank, t);
      });
      coefficients(term, term.rank, t);
      t += term.rank;
    }
  }
#endif
  f.ready.store(true, std::memory_order_release);
}

void loraFusedAddColumns(const LoraFused &f, int64_t n0, int64_t n1,
                         float *y) {
#if ETLLM_CPU_X86
  if (!f.hook || n0 >= n1)
    return;
  const int64_t N = f.hook->outFeatures;
  const float *t = f.t;
  for (const LoraTerm &term : f.hook->terms) {
    withLoraElementType(term.btType, [&](auto tb) {
      addProduct(t, static_cast<const decltype(tb) *>(term.bt), term.rank, N,
                 n0, n1, y);
    });
    t += term.rank;
  }
#else
  (void)f;
  (void)n0;
  (void)n1;
  (void)y;
#endif
}

Status loraKernel(const KernelArgs &a, Isa isa, bool &handled) {
  handled = false;
#if ETLLM_CPU_X86
  if (!hasAvx2(isa) || !a.ctx || a.inputs.size != 2 || a.outputs.size != 1)
    return Status();
  const Tensor *x = a.inputs[0], *base = a.inputs[1];
  Tensor *out = a.outputs[0];
  if (!storageOk(x) || !storageOk(base) || !out || x->dtype != DType::F32 ||
      base->dtype != DType::F32 || out->dtype != DType::F32 || x->rank < 1 ||
      x->rank != base->rank || a.ints.size != 1)
    return Status();
  const int64_t K = x->sizes[x->rank - 1], N = base->sizes[base->rank - 1];
  const int64_t M = prodSizes(x->sizes, 0, x->rank - 1);
  if (prodSizes(base->sizes, 0, base->rank - 1) != M)
    return Status();
  const std::vector<LoraHookTerms> *hooks = a.ctx->loraHooks();
  const LoraHookTerms *ph = hooks ? runnableHook(*hooks, a.ints[0], K, N)
                                  : nullptr;
  if (!ph)
    return Status(); // none applied: the portable copy; or declined
  const LoraHookTerms &h = *ph;
  int64_t maxRank = 0;
  for (const LoraTerm &t : h.terms)
    maxRank = std::max(maxRank, t.rank);
  handled = true;
  ETLLM_RETURN_IF_ERROR(resizeLike(opName(OpId::Lora), *out, *base, N));
  float *po = out->ptr<float>();
  if (out->data != base->data)
    std::memcpy(po, base->data, size_t(M * N) * sizeof(float));
  if (h.terms.empty() || M == 0)
    return Status();
  float *tmp =
      static_cast<float *>(a.ctx->scratch(size_t(M * maxRank) * sizeof(float)));
  const float *px = x->ptr<float>();
  for (const LoraTerm &t : h.terms) {
    withLoraElementTypes(t, [&](auto ta, auto tb) {
      addTerm<decltype(ta), decltype(tb)>(a.ctx, t, px, M, K, N, tmp, po);
    });
  }
  return Status();
#else
  (void)a;
  (void)isa;
  return Status();
#endif
}

} // namespace etllm::rt::cpu
