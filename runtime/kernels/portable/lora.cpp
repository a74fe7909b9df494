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
// compiler vectorizes without reassociating a sum; rows of the sequence run
// in parallel when there are several (prefill).
//
//===----------------------------------------------------------------------===//
#include "common.h"
#include "kernels.h"

#include "etllm/runtime/parallel.h"

#include <cstring>

namespace etllm::rt::portable {

Status kernelLora(const KernelArgs &a) {
  const char *op = "lora";
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
  for (const LoraTerm &t : h->terms)
    maxRank = std::max(maxRank, t.rank);
  void *scratch = nullptr;
  ETLLM_RETURN_IF_ERROR(
      getScratch(op, a, size_t(M * maxRank) * sizeof(float), scratch));
  float *tmp = static_cast<float *>(scratch);
  const float *px = x.ptr<float>();
  float *po = out.ptr<float>();
  for (const LoraTerm &t : h->terms) {
    const int64_t r = t.rank;
    auto row = [&](size_t m) {
      float *tm = tmp + int64_t(m) * r;
      const float *xm = px + int64_t(m) * K;
      float *om = po + int64_t(m) * N;
      for (int64_t k = 0; k < r; ++k)
        tm[k] = 0;
      for (int64_t i = 0; i < K; ++i) {
        const float xi = xm[i];
        const float *ai = t.at + i * r;
        for (int64_t k = 0; k < r; ++k)
          tm[k] += xi * ai[k];
      }
      for (int64_t k = 0; k < r; ++k) {
        const float c = t.scale * tm[k];
        const float *bk = t.bt + k * N;
        for (int64_t n = 0; n < N; ++n)
          om[n] += c * bk[n];
      }
    };
    if (M == 1)
      row(0);
    else
      parallelFor(a.ctx, size_t(M), row);
  }
  return Status();
}

} // namespace etllm::rt::portable
