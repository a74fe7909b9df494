//===- DeepseekV3.cpp - DeepseekV3ForCausalLM (DeepSeek-V3, R1) -----------===//
//
// transformers models/deepseek_v3 (modeling_deepseek_v3.py): DeepSeek-V2's
// attention (q_lora_rank set: q_a_proj, q_a_layernorm, q_b_proj; the
// softmax scale times mscale(factor, mscale_all_dim)^2;
// apply_rotary_pos_emb_interleave, rope_interleave true) and DeepseekV3MoE
// in layer i when i >= first_k_dense_replace (and i % moe_layer_freq == 0,
// DeepSeek's own config key). Its router is a module, DeepseekV3TopkRouter
// (`mlp.gate`: weight [E, hidden] and the buffer e_score_correction_bias
// [E]): float32 logits, a sigmoid, the choice scores + bias, the topk_group
// best of n_group groups by the sum of their two best choices, top-k of the
// masked choice, weights gathered from the unbiased scores, renormalized
// (+ 1e-20) when norm_topk_prob and then always times
// routed_scaling_factor (unlike V2, which skips the factor when it
// renormalizes). DeepSeek's config.json spells the routing as
// scoring_func "sigmoid" and topk_method "noaux_tc"; transformers' config
// class has neither, so both are constants the reader enforces.
//
// llama.cpp converts V3 to "deepseek2" too; a file opens as V3 when its
// expert_gating_func is sigmoid (2), the converter's value for V3's
// scoring_func. Its groups are expert_group_count / expert_group_used_count
// (none: one group), the bias the tensor exp_probs_b.bias. llama.cpp masks
// the groups it drops with -inf where transformers masks the biased choice
// with 0; the two select the same experts unless fewer than top_k of the
// kept groups' choices are positive (a bias below minus the score), and
// the import follows transformers.
//
//===----------------------------------------------------------------------===//
#include "../MoeKeys.h"
#include "FamilyList.h"

namespace etllm::models {

FamilySpec makeDeepseekV3Family() {
  FamilySpec s = renamed(deepseekV2Family(), "DeepseekV3ForCausalLM",
                         "deepseek_v3", "DeepseekV3");

  // DeepseekV3Config's defaults.
  s.hf.maxPositionEmbeddings = 4096;
  s.hf.bosTokenId = 0;
  s.hf.eosTokenId = 1;
  s.hf.mlpBiasKey = false;
  s.moe.router = MoeRouterForm::Module;
  s.moe.routerClass = "TopkRouter";
  s.moe.blockClass = "MoE";
  s.moe.scoring = MoeScoring::Sigmoid;
  s.moe.topkMethod = MoeTopkMethod::NoauxTc;
  // V2's selection keys give way to V3's (topk_method is a constant).
  std::vector<ConfigKey> keys;
  for (ConfigKey k : s.hf.keys) {
    switch (k.field) {
    case ConfigField::MoeTopkMethod:
    case ConfigField::NumExpertGroups:
    case ConfigField::TopkGroup:
    case ConfigField::NormTopkProb:
      continue;
    default:
      break;
    }
    keys.push_back(k);
  }
  // n_group / topk_group: GGUF expert_group_count / _used_count, one
  // group when absent (llama.cpp: no grouping).
  for (ConfigKey k : {moe_keys::numExpertGroups(8), moe_keys::topkGroup(4)}) {
    k.ggufDefault = 1;
    keys.push_back(k);
  }
  keys.push_back(
      moe_keys::normTopkProb(true, GgufKey::ExpertWeightsNorm, false));
  s.hf.keys = keys;
  for (ConfigKey &k : s.hf.keys) {
    switch (k.field) {
    case ConfigField::FirstKDenseReplace:
      k.hfDefault = 3;
      break;
    case ConfigField::MoeIntermediateSize:
      k.hfDefault = 2048;
      break;
    case ConfigField::NumExperts:
      k.hfDefault = 256;
      break;
    case ConfigField::NumSharedExperts:
      k.hfDefault = 1;
      break;
    case ConfigField::NumExpertsPerTok:
      k.hfDefault = 8;
      break;
    case ConfigField::RoutedScalingFactor:
      k.hfDefault = 2.5;
      break;
    default:
      break;
    }
  }
  using K = ConstantKey::Kind;
  s.hf.constants = {
      {"attention_bias", K::Bool, 0, 0, nullptr, /*enforced=*/true},
      // DeepSeek's layout of the rope part (the only one llama.cpp has).
      {"rope_interleave", K::Bool, 1, 0, nullptr, /*enforced=*/true},
      {"pretraining_tp", K::Int, 1},
      // DeepseekV3TopkRouter's only routing (DeepSeek's config.json).
      {"topk_method", K::String, 0, 0, "noaux_tc", /*enforced=*/true},
      {"scoring_func", K::String, 0, 0, "sigmoid", /*enforced=*/true},
  };
  // After the gating function, in the converter's order.
  moe_keys::insertMetadataAfter(
      s.gguf.metadata, GgufKey::ExpertGatingFunc,
      {GgufKey::ExpertGroupCount, GgufKey::ExpertGroupUsedCount});
  s.gguf.tensors.push_back({GgufTensor::FfnExpProbsB, HfModule::MoeRouterBias});

  s.gguf.identityValue = 2; // sigmoid
  s.gguf.identityDefault = false;

  // V3-like: q LoRA and V3's YaRN mscales (1, 1).
  s.generator.tiny.qLoraRank = 48;
  s.generator.tiny.ropeScaling = "yarn:4:32:1:1";
  // 8 experts in 4 groups of 2 (noaux_tc ranks a group by its two best),
  // the 2 best groups kept, top-2.
  s.generator.tiny.experts = 8;
  s.generator.tiny.expertGroups = 4;
  s.generator.tiny.topkGroup = 2;
  s.generator.presets.clear();
  return s;
}

} // namespace etllm::models
