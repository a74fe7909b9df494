//===- DeepseekV3.cpp - DeepseekV3ForCausalLM (DeepSeek-V3, R1) -----------===//
//
// transformers models/deepseek_v3 (modeling_deepseek_v3.py): DeepSeek-V2's
// attention (q_lora_rank set: q_a_proj, q_a_layernorm, q_b_proj; the
// softmax scale times mscale(factor, mscale_all_dim)^2;
// apply_rotary_pos_emb_interleave, rope_interleave true), with V3's
// sigmoid-scored, bias-corrected expert routing in its MoE layers. Unlike
// V2, only dense layers are built so far: first_k_dense_replace must cover
// every layer (KeyRange::AtLeastNumLayers), and V2's MoE keys are read but
// V3's routing keys stay constants.
//
// llama.cpp converts V3 to "deepseek2" too; a file opens as V3 when its
// expert_gating_func is sigmoid (2), the converter's value for V3's
// scoring_func.
//
//===----------------------------------------------------------------------===//
#include "FamilyList.h"

namespace etllm::models {

const FamilySpec &deepseekV3Family() {
  static const FamilySpec spec = [] {
    FamilySpec s = deepseekV2Family();
    s.id = "deepseekv3";
    s.hfArchitecture = "DeepseekV3ForCausalLM";
    s.hfModelType = "deepseek_v3";
    s.classPrefix = "DeepseekV3";

    // DeepseekV3Config's defaults.
    s.hf.maxPositionEmbeddings = 4096;
    s.hf.bosTokenId = 0;
    s.hf.eosTokenId = 1;
    s.hf.mlpBiasKey = false;
    // Dense layers only (see above).
    s.blocks.mlp = MlpBlock::Gated;
    s.moe = MoeSpec();
    std::vector<ConfigKey> keys;
    for (ConfigKey k : s.hf.keys) {
      switch (k.field) {
      case ConfigField::MoeTopkMethod:
      case ConfigField::NumExpertGroups:
      case ConfigField::TopkGroup:
      case ConfigField::NormTopkProb:
        continue; // constants below
      default:
        break;
      }
      keys.push_back(k);
    }
    s.hf.keys = keys;
    for (ConfigKey &k : s.hf.keys) {
      switch (k.field) {
      case ConfigField::FirstKDenseReplace:
        k.hfDefault = 3;
        k.range = KeyRange::AtLeastNumLayers;
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
        {"topk_method", K::String, 0, 0, "noaux_tc"},
        {"n_group", K::Int, 1},
        {"topk_group", K::Int, 1},
        {"norm_topk_prob", K::Bool, 1},
        {"scoring_func", K::String, 0, 0, "sigmoid"},
    };

    s.gguf.identityValue = 2; // sigmoid
    s.gguf.identityDefault = false;

    // V3-like: q LoRA and V3's YaRN mscales (1, 1).
    s.generator.tiny.qLoraRank = 48;
    s.generator.tiny.ropeScaling = "yarn:4:32:1:1";
    s.generator.presets.clear();
    return s;
  }();
  return spec;
}

} // namespace etllm::models
