//===- ModelConfigValidation.cpp - Consistency and the tensor catalogue ---===//
//
// validate(): sizes, divisibility, RoPE, per-layer vectors and token ids of
// a config; expectedTensors(): the tensors (names and shapes) its family's
// blocks load, which checkpoints are validated against.
//
//===----------------------------------------------------------------------===//

#include "Internal.h"
#include "etllm/Formats/ModelConfig.h"
#include "etllm/Models/Registry.h"

#include <cmath>

namespace etllm::formats {

using models::FamilySpec;

namespace {

/// The mixture-of-experts fields: sizes, top-k within the experts, groups
/// that divide the experts and hold the top-k, per-layer flags.
Status validateMoe(const ModelConfig &c) {
  if (!c.layerIsMoe.empty() &&
      c.layerIsMoe.size() != static_cast<size_t>(c.numLayers))
    return Error("layerIsMoe has " + std::to_string(c.layerIsMoe.size()) +
                 " entries for " + std::to_string(c.numLayers) + " layers");
  bool anySparse = false;
  for (bool b : c.layerIsMoe)
    anySparse |= b;
  for (int64_t l : c.mlpOnlyLayers)
    if (l < 0 || l >= c.numLayers)
      return Error("mlp_only_layers: " + std::to_string(l) +
                   " is not a layer index");
  if (!anySparse)
    return Status();
  auto size = [](const char *name, int64_t v, int64_t lo) -> Status {
    if (v < lo || v > detail::kMaxConfigDim)
      return Error(std::string(name) + " = " + std::to_string(v) +
                   " is outside [" + std::to_string(lo) + ", " +
                   std::to_string(detail::kMaxConfigDim) + "]");
    return Status();
  };
  ETLLM_RETURN_IF_ERROR(size("num_experts", c.numExperts, 1));
  ETLLM_RETURN_IF_ERROR(size("num_experts_per_tok", c.numExpertsPerTok, 1));
  if (c.numExpertsPerTok > c.numExperts)
    return Error("num_experts_per_tok = " + std::to_string(c.numExpertsPerTok) +
                 " is more than the " + std::to_string(c.numExperts) +
                 " experts");
  ETLLM_RETURN_IF_ERROR(
      size("moe_intermediate_size", c.expertIntermediateSize(), 1));
  ETLLM_RETURN_IF_ERROR(size("shared_expert_intermediate_size",
                             c.sharedExpertIntermediateSize, 0));
  if (!(c.routedScalingFactor > 0) || !std::isfinite(c.routedScalingFactor))
    return Error("routed_scaling_factor must be positive");
  if (c.numExperts * c.expertIntermediateSize() > 64 * detail::kMaxConfigDim)
    return Error("num_experts * moe_intermediate_size is absurdly large");
  bool grouped = c.moeTopkMethod != models::MoeTopkMethod::Greedy;
  if (grouped) {
    const char *method = c.moeTopkMethod == models::MoeTopkMethod::NoauxTc
                             ? "noaux_tc"
                             : "group_limited_greedy";
    if (c.numExpertGroups < 1 || c.numExperts % c.numExpertGroups != 0)
      return Error(std::string("topk_method ") + method +
                   ": n_group = " + std::to_string(c.numExpertGroups) +
                   " must be positive and divide the " +
                   std::to_string(c.numExperts) + " experts");
    if (c.topkGroup < 1 || c.topkGroup > c.numExpertGroups)
      return Error(std::string("topk_method ") + method + ": topk_group = " +
                   std::to_string(c.topkGroup) + " must be in [1, n_group = " +
                   std::to_string(c.numExpertGroups) + "]");
    int64_t perGroup = c.numExperts / c.numExpertGroups;
    if (c.moeTopkMethod == models::MoeTopkMethod::NoauxTc && perGroup < 2)
      return Error("topk_method noaux_tc ranks groups by their two best "
                   "experts: n_group = " +
                   std::to_string(c.numExpertGroups) + " leaves " +
                   std::to_string(perGroup) + " per group");
    if (c.numExpertsPerTok > c.topkGroup * perGroup)
      return Error(
          "num_experts_per_tok = " + std::to_string(c.numExpertsPerTok) +
          " is more than the " + std::to_string(c.topkGroup * perGroup) +
          " experts of topk_group groups");
  }
  return Status();
}

} // namespace

Status validate(const ModelConfig &c) {
  auto dim = [](const char *name, int64_t v) -> Status {
    if (v <= 0 || v > detail::kMaxConfigDim)
      return Error(std::string(name) + " = " + std::to_string(v) +
                   " is outside [1, " + std::to_string(detail::kMaxConfigDim) +
                   "]");
    return Status();
  };
  ETLLM_RETURN_IF_ERROR(dim("hidden_size", c.hiddenSize));
  ETLLM_RETURN_IF_ERROR(dim("intermediate_size", c.intermediateSize));
  ETLLM_RETURN_IF_ERROR(dim("num_hidden_layers", c.numLayers));
  ETLLM_RETURN_IF_ERROR(dim("num_attention_heads", c.numHeads));
  ETLLM_RETURN_IF_ERROR(dim("num_key_value_heads", c.numKvHeads));
  ETLLM_RETURN_IF_ERROR(dim("head_dim", c.headDim));
  ETLLM_RETURN_IF_ERROR(dim("vocab_size", c.vocabSize));
  ETLLM_RETURN_IF_ERROR(
      dim("max_position_embeddings", c.maxPositionEmbeddings));
  if (c.numHeads % c.numKvHeads != 0)
    return Error("num_key_value_heads " + std::to_string(c.numKvHeads) +
                 " does not divide num_attention_heads " +
                 std::to_string(c.numHeads));
  if (c.numHeads * c.headDim > 64 * detail::kMaxConfigDim)
    return Error("num_attention_heads * head_dim is absurdly large");
  if (!(c.rmsNormEps > 0 && c.rmsNormEps < 1))
    return Error("rms_norm_eps must be in (0, 1)");
  if (!(c.ropeTheta > 0) || !std::isfinite(c.ropeTheta))
    return Error("rope_theta must be positive");
  if (!(c.ropeLocalTheta >= 0) || !std::isfinite(c.ropeLocalTheta))
    return Error("rope_local_base_freq must be positive");
  if (!(c.partialRotaryFactor > 0 && c.partialRotaryFactor <= 1))
    return Error("partial_rotary_factor must be in (0, 1]");
  if (c.rotaryDim() < 2)
    return Error("rotary dimension " + std::to_string(c.rotaryDim()) +
                 " (head_dim " + std::to_string(c.headDim) +
                 " * partial_rotary_factor) is smaller than 2");
  if (c.headDim % 2 != 0)
    return Error("head_dim " + std::to_string(c.headDim) + " is odd");
  const std::string &rt = c.ropeScaling.type;
  if (!rt.empty() && rt != "linear" && rt != "llama3" && rt != "yarn")
    return Error("unsupported rope scaling type '" + rt + "'");
  if (rt == "yarn" &&
      (c.ropeScaling.originalMaxPositionEmbeddings <= 0 ||
       !(c.ropeScaling.betaFast > 0) || !(c.ropeScaling.betaSlow > 0) ||
       !(c.ropeScaling.mscale >= 0) || !(c.ropeScaling.mscaleAllDim >= 0) ||
       !std::isfinite(c.ropeScaling.mscale) ||
       !std::isfinite(c.ropeScaling.mscaleAllDim)))
    return Error("yarn rope scaling needs a positive original context, "
                 "positive betas and non-negative mscales");
  if (!rt.empty() && !(c.ropeScaling.factor > 0))
    return Error("rope scaling factor must be positive");
  if (!c.ropeScaling.freqFactors.empty() &&
      c.ropeScaling.freqFactors.size() !=
          static_cast<size_t>(c.rotaryDim() / 2))
    return Error("rope frequency factors: " +
                 std::to_string(c.ropeScaling.freqFactors.size()) +
                 " values for a rotary dimension of " +
                 std::to_string(c.rotaryDim()));
  if (c.layerUsesSlidingWindow.size() != static_cast<size_t>(c.numLayers))
    return Error("layerUsesSlidingWindow has " +
                 std::to_string(c.layerUsesSlidingWindow.size()) +
                 " entries for " + std::to_string(c.numLayers) + " layers");
  if (c.slidingWindow < 0)
    return Error("sliding_window must not be negative");
  for (bool b : c.layerUsesSlidingWindow)
    if (b && c.slidingWindow == 0)
      return Error("a layer uses a sliding window but sliding_window is 0");
  if (c.attnLogitSoftcapping < 0 || c.finalLogitSoftcapping < 0 ||
      c.queryPreAttnScalar < 0)
    return Error("soft-capping and query_pre_attn_scalar must not be "
                 "negative");
  for (double m :
       {c.embeddingMultiplier, c.residualMultiplier, c.logitsScaling})
    if (!(m > 0) || !std::isfinite(m))
      return Error("embedding, residual and logits multipliers must be "
                   "positive");
  if (!(c.attentionMultiplier >= 0) || !std::isfinite(c.attentionMultiplier))
    return Error("the attention multiplier must not be negative");
  ETLLM_RETURN_IF_ERROR(validateMoe(c));
  auto tok = [&](const char *name, int64_t id) -> Status {
    if (id < -1 || id >= c.vocabSize)
      return Error(std::string(name) + " " + std::to_string(id) +
                   " is outside the vocabulary of " +
                   std::to_string(c.vocabSize));
    return Status();
  };
  ETLLM_RETURN_IF_ERROR(tok("bos_token_id", c.bosTokenId));
  ETLLM_RETURN_IF_ERROR(tok("pad_token_id", c.padTokenId));
  for (int64_t e : c.eosTokenIds) {
    ETLLM_RETURN_IF_ERROR(tok("eos_token_id", e));
    if (e < 0)
      return Error("eos_token_id must not be negative");
  }
  ModelConfig copy = c;
  Status traits = applyArchitectureTraits(copy);
  if (!traits.ok())
    return traits;
  const FamilySpec &family = *familyOf(copy);
  bool mlaBlock = family.blocks.attention == models::AttentionBlock::Mla;
  if (mlaBlock != c.isMla())
    return Error(c.isMla()
                     ? c.architecture + " has no latent attention "
                                        "(kv_lora_rank must be 0)"
                     : "kv_lora_rank must be positive for " + c.architecture);
  if (c.isMla()) {
    ETLLM_RETURN_IF_ERROR(dim("kv_lora_rank", c.kvLoraRank));
    ETLLM_RETURN_IF_ERROR(dim("qk_nope_head_dim", c.qkNopeHeadDim));
    ETLLM_RETURN_IF_ERROR(dim("v_head_dim", c.vHeadDim));
    if (c.qLoraRank != 0)
      ETLLM_RETURN_IF_ERROR(dim("q_lora_rank", c.qLoraRank));
    if (c.numKvHeads != c.numHeads)
      return Error("multi-head latent attention needs num_key_value_heads "
                   "== num_attention_heads, got " +
                   std::to_string(c.numKvHeads) + " and " +
                   std::to_string(c.numHeads));
    if (c.partialRotaryFactor != 1.0)
      return Error("multi-head latent attention rotates the whole "
                   "qk_rope_head_dim (partial_rotary_factor must be 1)");
    if (family.blocks.mlp != models::MlpBlock::SparseMoe &&
        c.firstKDenseReplace < c.numLayers)
      return Error("first_k_dense_replace " +
                   std::to_string(c.firstKDenseReplace) +
                   " leaves mixture-of-experts layers, which are not "
                   "supported yet for " +
                   c.architecture);
    // DeepSeek-V2's MoEGate renormalizes only when top_k > 1, and then
    // skips routed_scaling_factor; the MoE block and etllm.moe do what
    // norm_topk_prob and the factor say. Only the configs on which both
    // agree are taken.
    if (family.moe.router == models::MoeRouterForm::Float32Linear &&
        c.hasMoeLayers() && c.normTopkProb) {
      if (c.routedScalingFactor != 1.0)
        return Error("norm_topk_prob true with routed_scaling_factor " +
                     std::to_string(c.routedScalingFactor) +
                     " is not supported (DeepSeek-V2's code then skips the "
                     "scaling)");
      if (c.numExpertsPerTok == 1)
        return Error("norm_topk_prob true with num_experts_per_tok 1 is not "
                     "supported (DeepSeek-V2's code then does not "
                     "renormalize)");
    }
  } else if (c.qLoraRank != 0 || c.qkNopeHeadDim != 0 || c.vHeadDim != 0) {
    return Error("q_lora_rank, qk_nope_head_dim and v_head_dim belong to "
                 "multi-head latent attention");
  }
  if (c.ropeScaling.type == "yarn" && !family.hf.yarnRopeScaling)
    return Error("unsupported rope scaling type 'yarn' for " + c.architecture);
  return detail::validateVision(c);
}

namespace {

/// The tensors of one sparse MoE block (MlpBlock::SparseMoe): the router
/// [E, hidden] (and DeepSeek-V3's score-correction bias [E]), every routed
/// expert's gate/up [F, hidden] and down [hidden, F], the shared expert's
/// projections and Qwen2-MoE's shared-expert gate [1, hidden].
template <typename Add>
void addMoeTensors(const FamilySpec &f, const ModelConfig &t, int64_t layer,
                   Add &add, int64_t &expert) {
  using models::HfModule;
  (void)layer;
  const int64_t h = t.hiddenSize, E = t.numExperts,
                fe = t.expertIntermediateSize(),
                fs = t.sharedExpertIntermediateSize;
  add(HfModule::MoeRouter, {E, h});
  if (t.moeTopkMethod == models::MoeTopkMethod::NoauxTc)
    add(HfModule::MoeRouterBias, {E});
  for (expert = 0; expert < E; ++expert) {
    add(HfModule::ExpertGateProj, {fe, h});
    add(HfModule::ExpertUpProj, {fe, h});
    add(HfModule::ExpertDownProj, {h, fe});
  }
  expert = -1;
  if (f.moe.sharedExpert != models::SharedExpertKind::None && fs > 0) {
    add(HfModule::SharedGateProj, {fs, h});
    add(HfModule::SharedUpProj, {fs, h});
    add(HfModule::SharedDownProj, {h, fs});
    if (f.moe.sharedExpert == models::SharedExpertKind::SigmoidGated)
      add(HfModule::SharedExpertGate, {1, h});
  }
}

} // namespace

Result<std::vector<ExpectedTensor>> expectedTensors(const ModelConfig &c) {
  ETLLM_RETURN_IF_ERROR(validate(c));
  const FamilySpec &f = *familyOf(c);
  ModelConfig t = c;
  ETLLM_RETURN_IF_ERROR(applyArchitectureTraits(t));
  std::vector<ExpectedTensor> out;
  using models::HfModule;
  int64_t layer = -1, expert = -1;
  auto add = [&](HfModule m, std::vector<int64_t> shape, bool isNorm = false,
                 bool bias = false) {
    std::string base = models::hfPath(f, m, layer, expert);
    if (models::isBareParameter(m)) {
      out.push_back({base, shape, false, true});
      return;
    }
    out.push_back({base + ".weight", shape, isNorm, false});
    if (bias)
      out.push_back({base + ".bias", {shape[0]}, false, true});
  };
  const int64_t h = t.hiddenSize, q = t.numHeads * t.headDim,
                kv = t.numKvHeads * t.headDim, ffn = t.intermediateSize;
  add(HfModule::Embed, {t.vocabSize, h});
  for (layer = 0; layer < t.numLayers; ++layer) {
    add(HfModule::InputNorm, {h}, true);
    switch (f.blocks.attention) {
    case models::AttentionBlock::FusedQkv:
      add(HfModule::QkvProj, {q + 2 * kv, h}, false, t.attentionBias);
      break;
    case models::AttentionBlock::Separate:
      add(HfModule::QProj, {q, h}, false, t.attentionBias);
      add(HfModule::KProj, {kv, h}, false, t.attentionBias);
      add(HfModule::VProj, {kv, h}, false, t.attentionBias);
      break;
    case models::AttentionBlock::Mla: {
      // DeepseekV2Attention's modules in their order (no biases).
      const int64_t qk = t.numHeads * t.qkHeadDim();
      if (t.qLoraRank == 0) {
        add(HfModule::QProj, {qk, h});
      } else {
        add(HfModule::QAProj, {t.qLoraRank, h});
        add(HfModule::QALayerNorm, {t.qLoraRank}, true);
        add(HfModule::QBProj, {qk, t.qLoraRank});
      }
      add(HfModule::KvAProjWithMqa, {t.kvLoraRank + t.headDim, h});
      add(HfModule::KvALayerNorm, {t.kvLoraRank}, true);
      add(HfModule::KvBProj,
          {t.numHeads * (t.qkNopeHeadDim + t.vHeadDim), t.kvLoraRank});
      break;
    }
    }
    add(HfModule::OProj,
        {h, f.blocks.attention == models::AttentionBlock::Mla
                ? t.numHeads * t.vHeadDim
                : q},
        false, t.oProjBias);
    if (f.traits.qkNorm) {
      add(HfModule::QNorm, {t.headDim}, true);
      add(HfModule::KNorm, {t.headDim}, true);
    }
    add(HfModule::PostAttentionNorm, {h}, true);
    if (f.blocks.decoderLayer == models::DecoderLayerBlock::Sandwich) {
      add(HfModule::PreFeedforwardNorm, {h}, true);
      add(HfModule::PostFeedforwardNorm, {h}, true);
    }
    switch (f.blocks.mlp) {
    case models::MlpBlock::FusedGateUp:
      add(HfModule::GateUpProj, {2 * ffn, h}, false, t.mlpBias);
      add(HfModule::DownProj, {h, ffn}, false, t.mlpBias);
      break;
    case models::MlpBlock::SparseMoe:
      if (t.isMoeLayer(layer)) {
        addMoeTensors(f, t, layer, add, expert);
        break;
      }
      [[fallthrough]];
    case models::MlpBlock::Gated:
      add(HfModule::GateProj, {ffn, h}, false, t.mlpBias);
      add(HfModule::UpProj, {ffn, h}, false, t.mlpBias);
      add(HfModule::DownProj, {h, ffn}, false, t.mlpBias);
      break;
    }
  }
  layer = -1;
  add(HfModule::FinalNorm, {h}, true);
  if (!t.tieWordEmbeddings)
    add(HfModule::LmHead, {t.vocabSize, h});
  detail::appendVisionTensors(t, out);
  return out;
}

} // namespace etllm::formats
