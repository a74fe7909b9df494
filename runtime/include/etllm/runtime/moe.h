//===- moe.h - Mixture-of-experts routing, shared by the kernels -*- C++
//-*-===//
//
// The `moe` operator of ops.def (etllm.moe): its attributes, checked once
// (MoeRouting::parse), and the routing of one token from its router logits
// (MoeRouting::route): scores, the selection of the configured method, the
// weights. Every kernel that implements `moe` routes through this, so the
// experts it selects and their weights are the same bit for bit whatever
// runs the experts. Implemented in the portable kernel library (moe.cpp).
//
//===----------------------------------------------------------------------===//
#ifndef ETLLM_RUNTIME_MOE_H
#define ETLLM_RUNTIME_MOE_H

#include "etllm/runtime/kernel.h"

#include <cstdint>

namespace etllm::rt {

/// The routing attributes of one `moe` call (ops.def's order).
struct MoeRouting {
  enum class Scoring : int64_t { Softmax = 0, Sigmoid = 1 };
  enum class Method : int64_t {
    Greedy = 0,
    GroupLimitedGreedy = 1,
    NoauxTc = 2
  };
  int64_t experts = 0, topK = 0, numGroups = 1, topkGroup = 1;
  Scoring scoring = Scoring::Softmax;
  Method method = Method::Greedy;
  bool normTopkProb = false;
  float scale = 1.0f, normEps = 0.0f;

  /// Reads and checks the attributes of `args` for `experts` experts, after
  /// the shape of the optional score bias (f32 [experts]).
  static Result<MoeRouting> parse(const KernelArgs &args, int64_t experts,
                                  const Tensor *scoreBias);

  /// Floats of scratch route() needs.
  int64_t scratchFloats() const { return 3 * experts + numGroups; }

  /// Routes one token from its router logits [experts] (f32): writes the
  /// top_k selected experts in selection order and their weights.
  /// `bias` ([experts] or null) is added to the scores for the selection
  /// only. `scratch` holds scratchFloats() floats.
  void route(const float *logits, const float *bias, float *scratch,
             int32_t *selected, float *weights) const;

  /// Groups the (token, slot) pairs of `tokens` routed tokens (selected
  /// and weights [tokens, top_k], as route() wrote them) by expert, tokens
  /// in order (a counting sort): expert e's pairs are [offsets[e],
  /// offsets[e + 1]) of tokenOf (the token) and weightOf (its weight).
  /// `offsets` holds experts + 1 entries.
  void groupByExpert(const int32_t *selected, const float *weights,
                     int64_t tokens, int32_t *offsets, int32_t *tokenOf,
                     float *weightOf) const;
};

} // namespace etllm::rt

#endif // ETLLM_RUNTIME_MOE_H
