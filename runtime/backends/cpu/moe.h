//===- moe.h - etllm.moe on block-packed expert weights ---------*- C++ -*-===//
//
// Internal to runtime/backends/cpu: the delegate's moe kernel over
// stacked expert weights the compiler packed per expert
// (PackedQExpertsLayout, packing.h). See moe.cpp.
//
//===----------------------------------------------------------------------===//
#ifndef ETLLM_BACKENDS_CPU_MOE_H
#define ETLLM_BACKENDS_CPU_MOE_H

#include "qdot.h"

namespace etllm::rt::cpu {

/// One stacked weight [E, N, K] holding PackedQExpertsLayout bytes.
struct QDotExperts {
  PackedQExpertsLayout l;
  const uint8_t *base = nullptr;
  /// Expert e as a packed [N, K] weight.
  QDotWeight expert(int64_t e) const {
    QDotWeight w;
    w.l = l.expert;
    const uint8_t *p = base + size_t(e) * l.expertBytes;
    w.q = p + l.expert.qdataOff;
    w.scales = p + l.expert.scalesOff;
    w.offsets = l.expert.symmetric ? nullptr : p + l.expert.offsetsOff;
    return w;
  }
};

/// The packed stacked weight `wt` (a rank-3 QWeight), checked.
Result<QDotExperts> qdotExperts(const Tensor &wt);

/// How the kernel feeds the experts' projections.
enum class MoeActivations : uint8_t {
  F32 = 0,       ///< f32 rows, the weights dequantized (weight-only)
  Int8Block = 1, ///< rows quantized to int8 per block of 32 (Q8_0)
  Int8Token = 2, ///< rows quantized to int8 per token, asymmetric (8da)
};

/// The experts of one moe node.
struct MoeExperts {
  QDotExperts gate, up, down;
  MoeActivations acts = MoeActivations::F32;
};

/// Checks that gate [E, F, D], up [E, F, D] and down [E, D, F] fit together.
Status checkMoeExperts(const MoeExperts &w);

/// moe (inputs: x [..., D] f32, router [E, D] f32, gate, up, down, and
/// score_bias [E] f32 when has_score_bias) with the node's packed experts
/// (inputs 2..4 are not read).
Status moeRun(const KernelArgs &a, Isa isa, const MoeExperts &w);

/// The router logits of one token: logits[e] = sum_i x[i] router[e][i]
/// for router [E, D], summed as the portable kernel does (dotF32's order,
/// no FMA), so on every ISA path they are portable's bit for bit.
void moeRouterLogits(Isa isa, const float *x, const float *router, int64_t E,
                     int64_t D, float *logits);

/// The scratch bytes moeRun needs for M tokens and top_k `topK`.
size_t moeScratchBytes(const ExecContext *ctx, int64_t M, int64_t topK,
                       const MoeExperts &w);

} // namespace etllm::rt::cpu

#endif // ETLLM_BACKENDS_CPU_MOE_H
