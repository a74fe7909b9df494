//===- lora.cpp - The LoRA hook: adapters applied at run time -------------===//
//
// out = base + sum over the adapters applied to the hook of
//       scale * (x At) Bt        (At = A^T [in, r], Bt = B^T [r, out])
// reading the adapters' matrices in place (docs/LoRA.md). With none applied
// (or no state at all: a program run without the LoRA API) out = base, bit
// for bit. The base weights are never touched: this runs after the linear.
//
// Both products are written as row updates over contiguous memory (t[0..r)
// += x[i] * At[i, 0..r); out[0..N) += t[k] * Bt[k, 0..N)), which the
// compiler vectorizes without reassociating a sum. x At is summed in fixed
// chunks of kChunk rows of At, the chunks' partial sums then added in
// order, so every row's result is the same whatever the thread count and
// whether it comes in a prefill or alone.
//
// The factors are f32 or IEEE half bits (LoraTerm's types), read in place;
// half values are converted exactly, so a half adapter gives the bits of
// the same values stored as f32. They are read once per row and the kernel
// is bound by reading them (docs/LoRA.md: a rank-16 adapter on all seven
// projections of a 1B model is 45 MB per token in f32, 22 MB in half; this
// reference converts half scalarly, the cpu backend with F16C). For one
// row (a decode step) both products are therefore split over the thread
// pool when they read enough to pay for waking it (kParallelFloats): x At
// by chunks, then (At x) Bt by tiles of output features. Several rows
// (prefill) run in parallel by row.
//
//===----------------------------------------------------------------------===//
#include "common.h"
#include "kernels.h"

#include "etllm/runtime/parallel.h"

#include <cstring>

namespace etllm::rt::portable {
namespace {

/// Rows of At summed into one partial sum.
constexpr int64_t kChunk = 256;
/// A product reading at least this many floats of a factor (256 KiB) is
/// split over the thread pool when there is one row.
constexpr int64_t kParallelFloats = int64_t(1) << 16;

inline float element(const float *p, int64_t i) { return p[i]; }
inline float element(const uint16_t *p, int64_t i) { return halfToFloat(p[i]); }
inline float element(const int8_t *p, int64_t i) { return float(p[i]); }

/// t[0..r) = the coefficients of Bt's rows (loraCoefficient).
void coefficients(const LoraTerm &term, int64_t r, float *t) {
  for (int64_t k = 0; k < r; ++k)
    t[k] = loraCoefficient(term, k, t[k]);
}

/// partial[0..r) = sum over i in [i0, i1) of x[i] * At[i, 0..r), in order.
template <typename T>
void accumulateRows(const float *x, const T *at, int64_t r, int64_t i0,
                    int64_t i1, float *partial) {
  for (int64_t k = 0; k < r; ++k)
    partial[k] = 0;
  for (int64_t i = i0; i < i1; ++i) {
    const float xi = x[i];
    const T *ai = at + i * r;
    for (int64_t k = 0; k < r; ++k)
      partial[k] += xi * element(ai, k);
  }
}

/// out[n0..n1) += sum over k of t[k] * Bt[k, n0..n1), k in order.
template <typename T>
void addProduct(const float *t, const T *bt, int64_t r, int64_t N, int64_t n0,
                int64_t n1, float *out) {
  for (int64_t k = 0; k < r; ++k) {
    const float c = t[k];
    const T *bk = bt + k * N;
    for (int64_t n = n0; n < n1; ++n)
      out[n] += c * element(bk, n);
  }
}

/// Adds one term to out [M, N]; tmp holds the scratch sized below.
template <typename TA, typename TB>
void addTerm(const KernelArgs &a, const LoraTerm &t, const float *px, int64_t M,
             int64_t K, int64_t N, float *tmp, float *po) {
  const TA *at = static_cast<const TA *>(t.at);
  const TB *bt = static_cast<const TB *>(t.bt);
  const int64_t r = t.rank;
  const int64_t chunks = (K + kChunk - 1) / kChunk;
  if (M == 1) {
    // t = x At: the chunks' partial sums (in parallel when large), added
    // in chunk order.
    float *partials = tmp + r;
    auto chunk = [&](size_t c) {
      const int64_t i0 = int64_t(c) * kChunk;
      accumulateRows(px, at, r, i0, std::min(K, i0 + kChunk),
                     partials + int64_t(c) * r);
    };
    if (K * r >= kParallelFloats)
      parallelFor(a.ctx, size_t(chunks), chunk);
    else
      for (int64_t c = 0; c < chunks; ++c)
        chunk(size_t(c));
    for (int64_t k = 0; k < r; ++k)
      tmp[k] = 0;
    for (int64_t c = 0; c < chunks; ++c)
      for (int64_t k = 0; k < r; ++k)
        tmp[k] += partials[c * r + k];
    coefficients(t, r, tmp);
    // out += t Bt, by tiles of output features.
    const size_t tile =
        N * r >= kParallelFloats ? defaultTile(a.ctx, size_t(N)) : size_t(N);
    parallelForTiles(a.ctx, size_t(N), tile, [&](size_t n0, size_t n1) {
      addProduct(tmp, bt, r, N, int64_t(n0), int64_t(n1), po);
    });
    return;
  }
  parallelFor(a.ctx, size_t(M), [&](size_t m) {
    float *tm = tmp + 2 * int64_t(m) * r, *pm = tm + r;
    const float *xm = px + int64_t(m) * K;
    for (int64_t k = 0; k < r; ++k)
      tm[k] = 0;
    for (int64_t i0 = 0; i0 < K; i0 += kChunk) {
      accumulateRows(xm, at, r, i0, std::min(K, i0 + kChunk), pm);
      for (int64_t k = 0; k < r; ++k)
        tm[k] += pm[k];
    }
    coefficients(t, r, tm);
    addProduct(tm, bt, r, N, 0, N, po + int64_t(m) * N);
  });
}

} // namespace

Status kernelLora(const KernelArgs &a) {
  const char *op = opName(OpId::Lora);
  const Tensor &x = *a.inputs[0], &base = *a.inputs[1];
  Tensor &out = *a.outputs[0];
  if (x.dtype != DType::F32 || base.dtype != DType::F32 ||
      out.dtype != DType::F32)
    return unsupportedDTypes(op, x.dtype, base.dtype, out.dtype);
  if (x.rank < 1 || x.rank != base.rank)
    return opError(op, "expects input [..., in] and base [..., out], got " +
                           x.shapeString() + " and " + base.shapeString());
  const int64_t K = x.dim(-1), N = base.dim(-1);
  const int64_t M = prod(x.sizes, 0, x.rank - 1);
  if (prod(base.sizes, 0, base.rank - 1) != M)
    return opError(op, "input " + x.shapeString() + " and base " +
                           base.shapeString() + " have different rows");
  const int64_t hook = a.ints[0];
  const std::vector<LoraHookTerms> *hooks =
      a.ctx ? a.ctx->loraHooks() : nullptr;
  if (hooks && (hook < 0 || size_t(hook) >= hooks->size()))
    return opError(op, "hook " + std::to_string(hook) + " of " +
                           std::to_string(hooks->size()));
  const LoraHookTerms *h = hooks ? &(*hooks)[size_t(hook)] : nullptr;
  if (h && (h->inFeatures != K || h->outFeatures != N))
    return opError(op, "hook " + std::to_string(hook) + " is [" +
                           std::to_string(h->outFeatures) + ", " +
                           std::to_string(h->inFeatures) + "], its input " +
                           x.shapeString() + " and base " + base.shapeString());
  ETLLM_RETURN_IF_ERROR(resizeTo(op, out, Shape::of(base)));
  if (out.data != base.data)
    std::memcpy(out.data, base.data, size_t(M * N) * sizeof(float));
  if (!h || h->terms.empty() || M == 0)
    return Status();
  int64_t maxRank = 0;
  for (const LoraTerm &t : h->terms) {
    if (!loraTermReadable(t)) {
      for (DType d : {t.atType, t.btType})
        if (d != DType::F32 && d != DType::F16 && d != DType::I8)
          return opError(op, std::string("factors of type ") + dtypeName(d) +
                                 " (f32, f16 or i8)");
      return opError(op, "an int8 factor needs its scales (and only it)");
    }
    maxRank = std::max(maxRank, t.rank);
  }
  // Per row: t [r] and one chunk's partial sum [r]; for a single row the
  // partial sums of every chunk [chunks, r] instead.
  const int64_t chunks = (K + kChunk - 1) / kChunk;
  const size_t floats =
      size_t(M == 1 ? (1 + chunks) * maxRank : 2 * M * maxRank);
  void *scratch = nullptr;
  ETLLM_RETURN_IF_ERROR(getScratch(op, a, floats * sizeof(float), scratch));
  float *tmp = static_cast<float *>(scratch);
  const float *px = x.ptr<float>();
  float *po = out.ptr<float>();
  for (const LoraTerm &t : h->terms) {
    withLoraElementTypes(t, [&](auto ta, auto tb) {
      addTerm<decltype(ta), decltype(tb)>(a, t, px, M, K, N, tmp, po);
    });
  }
  return Status();
}

} // namespace etllm::rt::portable
