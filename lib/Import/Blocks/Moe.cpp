//===- Moe.cpp - The sparse mixture-of-experts block ----------------------===//
//
// MlpBlock::SparseMoe: in a layer the family makes sparse (MoeSpec::layers),
// what torch.export shows for the modeling code's MoE block; in the other
// layers the family's gated MLP of intermediate_size.
//
// The routing follows the modeling code op for op:
//
//   Mixtral, Qwen-MoE (transformers 4.x MixtralSparseMoeBlock,
//   Qwen2MoeSparseMoeBlock, Qwen3MoeSparseMoeBlock):
//     router_logits = self.gate(hidden_states)               # [N, E]
//     routing_weights = F.softmax(router_logits, dim=1, dtype=torch.float)
//     routing_weights, selected_experts = torch.topk(routing_weights, k)
//     routing_weights /= routing_weights.sum(dim=-1, keepdim=True)  # if norm
//     routing_weights = routing_weights.to(hidden_states.dtype)
//   DeepseekV2Moe: the logits by F.linear in float32, a softmax, greedy or
//     group-limited top-k (groups ranked by their best score, the others
//     masked to 0), weights * routed_scaling_factor;
//   DeepseekV3TopkRouter (its own module): float32 logits, a sigmoid, the
//     choice scores + e_score_correction_bias, groups ranked by the sum of
//     their two best, top-k of the masked choice, weights gathered from the
//     unbiased scores, renormalized (+ 1e-20) and scaled.
//   The group mask `zeros_like(group_scores).scatter_(1, group_idx, 1)` is
//   built as the one-hot sum of group_idx (eq against arange(n_group)): the
//   same values, without a scatter op.
//
// The experts: the modeling code loops over the experts that received
// tokens and index_adds each one's output, a data-dependent loop
// torch.export cannot trace. The exported form is the masked loop over
// every expert, which computes the same sum:
//
//     final = zeros_like(hidden_states)
//     for e in range(E):
//         w_e = where(selected_experts == e, routing_weights, 0).sum(-1,
//         keepdim=True) final = final + experts[e](hidden_states) * w_e
//
// (for an unselected expert w_e = 0 and the add leaves `final` unchanged,
// so the floating-point result is the modeling code's; etllm.moe at level B
// computes only the selected experts). Then the shared expert: Qwen2-MoE's
// sigmoid(shared_expert_gate(x)) * shared_expert(x), DeepSeek's
// shared_experts(x).
//
//===----------------------------------------------------------------------===//
#include "Blocks.h"

using namespace mlir;
using namespace mlir::etllm;
using ::etllm::models::HfModule;
using ::etllm::models::MoeRouterForm;
using ::etllm::models::MoeScoring;
using ::etllm::models::MoeTopkMethod;
using ::etllm::models::SharedExpertKind;

namespace etllm::import {

namespace {

struct Routing {
  Value experts; // [N, k] i64
  Value weights; // [N, k] in the graph dtype
};

/// zeros_like(group_scores).scatter_(1, group_idx, 1) for group_idx [N, tg]
/// of distinct groups: sum over the tg slots of (group_idx == arange(G)).
Value groupMask(GraphEmitter &e, Value groupIdx, int64_t G) {
  Type i64 = e.b.getI64Type(), f32 = e.b.getF32Type();
  Value groups =
      e.val<ArangeOp>(e.tensorType({G}, i64), e.b.getI64IntegerAttr(0),
                      e.b.getI64IntegerAttr(G), e.b.getI64IntegerAttr(1));
  Value hit = e.val<EqOp>(e.unsqueeze(groupIdx, -1), groups); // [N, tg, G]
  auto ht = cast<RankedTensorType>(hit.getType());
  Value hitF = e.val<ConvertOp>(ht.clone(f32), hit);
  return e.val<SumOp>(hitF, e.b.getDenseI64ArrayAttr({1}), UnitAttr());
}

/// scores with the experts of groups outside `mask` [N, G] set to 0:
/// masked_fill(~score_mask.bool(), 0.0) with the mask expanded over each
/// group's experts.
Value maskGroups(GraphEmitter &e, Value scores, Value mask, int64_t G,
                 int64_t E) {
  Value m = e.val<ExpandOp>(e.unsqueeze(mask, -1),
                            e.b.getDenseI64ArrayAttr({-1, G, E / G}));
  m = e.reshape(m, {-1, E});
  auto mt = cast<RankedTensorType>(m.getType());
  Value keep = e.val<ConvertOp>(mt.clone(e.b.getI1Type()), m);
  return e.val<MaskedFillOp>(scores, e.val<LogicalNotOp>(keep),
                             e.b.getF64FloatAttr(0.0));
}

/// torch.topk(x, k) along the last dimension. etllm.topk always sorts;
/// DeepSeek's sorted=False (any order) gets the same sorted result.
std::pair<Value, Value> topk(GraphEmitter &e, Value x, int64_t k) {
  auto op =
      e.op<TopKOp>(x, e.b.getI64IntegerAttr(k), e.b.getI64IntegerAttr(-1));
  return {op.getValues(), op.getIndices()};
}

/// The router: logits, scores, selection, weights.
Routing route(GraphEmitter &e, const LayerContext &l, Value h) {
  const formats::ModelConfig &c = e.config;
  const ::etllm::models::MoeSpec &spec = e.family.moe;
  Type f32 = e.b.getF32Type();
  const int64_t E = c.numExperts, D = c.hiddenSize, k = c.numExpertsPerTok,
                G = c.numExpertGroups;
  const std::string routerPath = e.path(HfModule::MoeRouter, l.index);
  Value logits;
  std::optional<GraphEmitter::Scope> routerScope;
  switch (spec.router) {
  case MoeRouterForm::Linear:
    logits = e.castTo(e.linear(routerPath, h, E, D, false), f32);
    break;
  case MoeRouterForm::Module:
    routerScope.emplace(e, routerPath, e.cls(spec.routerClass));
    [[fallthrough]];
  case MoeRouterForm::Float32Linear: {
    Value w = e.param(routerPath + ".weight", {E, D});
    logits = e.val<LinearOp>(e.castTo(h, f32), e.castTo(w, f32), Value());
    break;
  }
  }
  Value scores = c.moeScoring == MoeScoring::Softmax
                     ? e.val<SoftmaxOp>(logits, e.b.getI64IntegerAttr(1))
                     : e.val<SigmoidOp>(logits);
  Value weights, experts;
  switch (c.moeTopkMethod) {
  case MoeTopkMethod::Greedy:
    std::tie(weights, experts) = topk(e, scores, k);
    break;
  case MoeTopkMethod::GroupLimitedGreedy: {
    Value grouped = e.reshape(scores, {-1, G, E / G});
    Value best =
        e.val<AmaxOp>(grouped, e.b.getDenseI64ArrayAttr({-1}), UnitAttr());
    Value groupIdx = topk(e, best, c.topkGroup).second;
    Value masked = maskGroups(e, scores, groupMask(e, groupIdx, G), G, E);
    std::tie(weights, experts) = topk(e, masked, k);
    break;
  }
  case MoeTopkMethod::NoauxTc: {
    Value bias =
        e.castTo(e.param(e.path(HfModule::MoeRouterBias, l.index), {E}), f32);
    Value choice =
        e.val<AddOp>(e.reshape(scores, {-1, E}), e.unsqueeze(bias, 0));
    Value top2 = topk(e, e.reshape(choice, {-1, G, E / G}), 2).first;
    Value groupScores =
        e.val<SumOp>(top2, e.b.getDenseI64ArrayAttr({-1}), UnitAttr());
    Value groupIdx = topk(e, groupScores, c.topkGroup).second;
    Value masked = maskGroups(e, choice, groupMask(e, groupIdx, G), G, E);
    experts = topk(e, masked, k).second;
    weights = e.val<GatherOp>(scores, e.b.getI64IntegerAttr(1), experts);
    break;
  }
  }
  if (c.normTopkProb) {
    Value sum = e.val<SumOp>(weights, e.b.getDenseI64ArrayAttr({-1}),
                             e.b.getUnitAttr());
    if (spec.normEpsilon)
      sum = e.val<AddOp>(sum, e.scalar(1e-20, f32));
    weights = e.val<DivOp>(weights, sum);
  }
  if (c.routedScalingFactor != 1.0)
    weights = e.val<MulOp>(weights, e.scalar(c.routedScalingFactor, f32));
  routerScope.reset();
  return {experts, e.castTo(weights, e.dtype)};
}

} // namespace

Value buildSparseMoe(GraphEmitter &e, const LayerContext &l, Value x) {
  const formats::ModelConfig &c = e.config;
  if (!c.isMoeLayer(l.index))
    return buildGatedMlp(e, l, x);
  const ::etllm::models::MoeSpec &spec = e.family.moe;
  const int64_t D = c.hiddenSize, E = c.numExperts,
                F = c.expertIntermediateSize();
  Type i64 = e.b.getI64Type();
  GraphEmitter::Scope block(e, e.path(HfModule::Moe, l.index),
                            e.cls(spec.blockClass));
  // hidden_states.view(-1, hidden_dim)
  Value h = e.reshape(x, {-1, D});
  Routing r = route(e, l, h);
  Value final = e.val<FullLikeOp>(h.getType(), h, e.b.getF64FloatAttr(0.0));
  Value zero = e.scalar(0.0, e.dtype);
  for (int64_t j = 0; j < E; ++j) {
    Value hit = e.val<EqOp>(r.experts, e.scalar(double(j), i64));
    Value w = e.val<SumOp>(e.val<WhereOp>(hit, r.weights, zero),
                           e.b.getDenseI64ArrayAttr({-1}), e.b.getUnitAttr());
    Value y;
    {
      std::string expert =
          e.path(HfModule::MoeExperts, l.index) + "." + std::to_string(j);
      GraphEmitter::Scope s(e, expert, e.cls(spec.expertClass));
      auto p = [&](HfModule m) {
        return models::hfPath(e.family, m, l.index, j);
      };
      y = gatedMlp(e,
                   {p(HfModule::ExpertGateProj), p(HfModule::ExpertUpProj),
                    p(HfModule::ExpertDownProj), p(HfModule::ExpertActFn)},
                   h, F, false);
    }
    final = e.val<AddOp>(final, e.val<MulOp>(y, w));
  }
  const int64_t Fs = c.sharedExpertIntermediateSize;
  auto shared = [&](Value in) {
    GraphEmitter::Scope s(e, e.path(HfModule::SharedExpert, l.index),
                          e.cls(spec.sharedClass));
    return gatedMlp(e,
                    {e.path(HfModule::SharedGateProj, l.index),
                     e.path(HfModule::SharedUpProj, l.index),
                     e.path(HfModule::SharedDownProj, l.index),
                     e.path(HfModule::SharedActFn, l.index)},
                    in, Fs, false);
  };
  if (spec.sharedExpert == SharedExpertKind::SigmoidGated && Fs > 0) {
    // shared_expert_output = F.sigmoid(self.shared_expert_gate(h)) *
    //                        self.shared_expert(h)
    Value out = shared(h);
    Value gate =
        e.linear(e.path(HfModule::SharedExpertGate, l.index), h, 1, D, false);
    final = e.val<AddOp>(final, e.val<MulOp>(e.val<SigmoidOp>(gate), out));
  }
  Value result = e.reshape(final, {1, -1, D});
  if (spec.sharedExpert == SharedExpertKind::Plain && Fs > 0)
    // hidden_states.view(*orig_shape) + self.shared_experts(residuals)
    result = e.val<AddOp>(result, shared(x));
  return result;
}

} // namespace etllm::import
