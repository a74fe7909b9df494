//===- MoeKeys.h - Config keys of mixture-of-experts families -*- C++ -*-===//
//
// Private to lib/Models: the ConfigKeys a MoE family's config class has,
// spelled once, with the GGUF key llama.cpp's converter writes for each
// (convert_hf_to_gguf.py TextModel.set_gguf_parameters: expert_count,
// expert_used_count, expert_gating_func; Qwen2MoeModel: expert_feed_forward
// and expert_shared_feed_forward_length; the DeepSeek converter:
// expert_shared_count, expert_weights_scale, expert_weights_norm,
// expert_group_count, expert_group_used_count, leading_dense_block_count).
// A family spec picks the keys its config class has and sets their
// transformers defaults.
//
//===----------------------------------------------------------------------===//
#ifndef ETLLM_LIB_MODELS_MOEKEYS_H
#define ETLLM_LIB_MODELS_MOEKEYS_H

#include "etllm/Models/Registry.h"

#include <algorithm>
#include <initializer_list>
#include <iterator>

namespace etllm::models::moe_keys {

inline ConfigKey dim(const char *hf, GgufKey gguf, ConfigField field,
                     double hfDefault) {
  ConfigKey k;
  k.hf = hf;
  k.gguf = gguf;
  k.field = field;
  k.hfDefault = hfDefault;
  k.range = KeyRange::Dim;
  return k;
}

/// Routed experts: Mixtral's num_local_experts, Qwen's num_experts,
/// DeepSeek's n_routed_experts (GGUF expert_count).
inline ConfigKey numExperts(const char *hf, double hfDefault) {
  return dim(hf, GgufKey::ExpertCount, ConfigField::NumExperts, hfDefault);
}
/// num_experts_per_tok (GGUF expert_used_count).
inline ConfigKey numExpertsPerTok(double hfDefault) {
  return dim("num_experts_per_tok", GgufKey::ExpertUsedCount,
             ConfigField::NumExpertsPerTok, hfDefault);
}
/// moe_intermediate_size (GGUF expert_feed_forward_length; llama.cpp
/// assumes feed_forward_length / expert_used_count without it). Read
/// after numExpertsPerTok.
inline ConfigKey moeIntermediateSize(double hfDefault) {
  ConfigKey k = dim("moe_intermediate_size", GgufKey::ExpertFeedForwardLength,
                    ConfigField::MoeIntermediateSize, hfDefault);
  k.fallback = KeyFallback::IntermediatePerExpertUsed;
  return k;
}
/// Qwen2-MoE's shared_expert_intermediate_size (GGUF
/// expert_shared_feed_forward_length; llama.cpp assumes
/// feed_forward_length without it).
inline ConfigKey sharedExpertIntermediateSize(double hfDefault) {
  ConfigKey k = dim("shared_expert_intermediate_size",
                    GgufKey::ExpertSharedFeedForwardLength,
                    ConfigField::SharedExpertIntermediateSize, hfDefault);
  k.fallback = KeyFallback::IntermediateSize;
  return k;
}
/// norm_topk_prob. `gguf` None: what llama.cpp hard-codes for the
/// architecture (`ggufValue`).
inline ConfigKey normTopkProb(bool hfDefault, GgufKey gguf, bool ggufValue) {
  ConfigKey k;
  k.hf = "norm_topk_prob";
  k.gguf = gguf;
  k.field = ConfigField::NormTopkProb;
  k.type = KeyType::Bool;
  k.hfDefault = hfDefault ? 1 : 0;
  k.ggufDefault = ggufValue ? 1 : 0;
  k.ggufImplied = gguf == GgufKey::None;
  return k;
}
/// Qwen's decoder_sparse_step (GGUF has none: llama.cpp's Qwen-MoE makes
/// every layer sparse, i.e. 1).
inline ConfigKey decoderSparseStep() {
  ConfigKey k = dim("decoder_sparse_step", GgufKey::None,
                    ConfigField::DecoderSparseStep, 1);
  k.ggufDefault = 1;
  k.ggufImplied = true;
  return k;
}
/// Qwen's mlp_only_layers (GGUF: the layers without a router tensor).
inline ConfigKey mlpOnlyLayers() {
  ConfigKey k;
  k.hf = "mlp_only_layers";
  k.field = ConfigField::MlpOnlyLayers;
  k.type = KeyType::IntList;
  return k;
}
/// DeepSeek's scoring_func (GGUF expert_gating_func: llama.cpp's
/// LLAMA_EXPERT_GATING_FUNC_TYPE_SOFTMAX = 1, _SIGMOID = 2). The choices
/// are MoeScoring's order.
inline ConfigKey scoringFunc(MoeScoring hfDefault) {
  ConfigKey k;
  k.hf = "scoring_func";
  k.gguf = GgufKey::ExpertGatingFunc;
  k.field = ConfigField::MoeScoring;
  k.type = KeyType::Choice;
  k.choices.assign(std::begin(kMoeScoringNames), std::end(kMoeScoringNames));
  k.ggufCodes = {1, 2};
  k.hfDefault = static_cast<double>(hfDefault);
  k.ggufDefault = k.hfDefault;
  return k;
}
/// DeepSeek's topk_method (MoeTopkMethod's order; GGUF has no key: the
/// family implies it).
inline ConfigKey topkMethod(MoeTopkMethod hfDefault, MoeTopkMethod gguf) {
  ConfigKey k;
  k.hf = "topk_method";
  k.field = ConfigField::MoeTopkMethod;
  k.type = KeyType::Choice;
  k.choices.assign(std::begin(kMoeTopkMethodNames),
                   std::end(kMoeTopkMethodNames));
  k.hfDefault = static_cast<double>(hfDefault);
  k.ggufDefault = static_cast<double>(gguf);
  k.ggufImplied = true;
  return k;
}
/// DeepSeek's n_group / topk_group (null: no groups; GGUF
/// expert_group_count / expert_group_used_count).
inline ConfigKey numExpertGroups(double hfDefault) {
  ConfigKey k;
  k.hf = "n_group";
  k.gguf = GgufKey::ExpertGroupCount;
  k.field = ConfigField::NumExpertGroups;
  k.hfDefault = hfDefault;
  k.range = KeyRange::Count; // an integer (GGUF u32)
  k.nullIsZero = true;
  k.writeZeroAsNull = true;
  k.writeIntegral = true;
  return k;
}
inline ConfigKey topkGroup(double hfDefault) {
  ConfigKey k = numExpertGroups(hfDefault);
  k.hf = "topk_group";
  k.gguf = GgufKey::ExpertGroupUsedCount;
  k.field = ConfigField::TopkGroup;
  return k;
}
/// routed_scaling_factor (GGUF expert_weights_scale).
inline ConfigKey routedScalingFactor(double hfDefault) {
  ConfigKey k;
  k.hf = "routed_scaling_factor";
  k.gguf = GgufKey::ExpertWeightsScale;
  k.field = ConfigField::RoutedScalingFactor;
  k.hfDefault = hfDefault;
  k.ggufDefault = 1.0;
  k.range = KeyRange::Positive;
  return k;
}
/// DeepSeek's n_shared_experts (GGUF expert_shared_count).
inline ConfigKey numSharedExperts(double hfDefault) {
  ConfigKey k;
  k.hf = "n_shared_experts";
  k.gguf = GgufKey::ExpertSharedCount;
  k.field = ConfigField::NumSharedExperts;
  k.hfDefault = hfDefault;
  k.nullIsZero = true;
  k.writeZeroAsNull = true;
  k.writeIntegral = true;
  return k;
}
/// DeepSeek's first_k_dense_replace (GGUF leading_dense_block_count).
inline ConfigKey firstKDenseReplace(double hfDefault) {
  ConfigKey k;
  k.hf = "first_k_dense_replace";
  k.gguf = GgufKey::LeadingDenseBlockCount;
  k.field = ConfigField::FirstKDenseReplace;
  k.hfDefault = hfDefault;
  k.writeIntegral = true;
  return k;
}
/// DeepSeek's moe_layer_freq (GGUF has none: llama.cpp's DeepSeek makes
/// every layer after the leading dense ones sparse, i.e. 1).
inline ConfigKey moeLayerFreq(double hfDefault) {
  ConfigKey k = dim("moe_layer_freq", GgufKey::None, ConfigField::MoeLayerFreq,
                    hfDefault);
  k.ggufDefault = 1;
  k.ggufImplied = true;
  return k;
}

/// The MoE tensors of llama.cpp's table for an architecture with a router
/// and stacked routed experts.
inline std::vector<GgufTensorName> routedExpertTensors() {
  return {
      {GgufTensor::FfnGateInp, HfModule::MoeRouter},
      {GgufTensor::FfnGateExps, HfModule::ExpertGateProj},
      {GgufTensor::FfnUpExps, HfModule::ExpertUpProj},
      {GgufTensor::FfnDownExps, HfModule::ExpertDownProj},
  };
}

/// The shared expert's tensors (Qwen2-MoE; DeepSeek without the gate).
inline std::vector<GgufTensorName> sharedExpertTensors(bool gated) {
  std::vector<GgufTensorName> t = {
      {GgufTensor::FfnGateShexp, HfModule::SharedGateProj},
      {GgufTensor::FfnUpShexp, HfModule::SharedUpProj},
      {GgufTensor::FfnDownShexp, HfModule::SharedDownProj},
  };
  if (gated)
    t.insert(t.begin(),
             {GgufTensor::FfnGateInpShexp, HfModule::SharedExpertGate});
  return t;
}

/// Inserts `keys` after `after` in a converter's metadata order (at the end
/// when `after` is not there).
inline void insertMetadataAfter(std::vector<GgufKey> &metadata, GgufKey after,
                                std::initializer_list<GgufKey> keys) {
  auto it = std::find(metadata.begin(), metadata.end(), after);
  metadata.insert(it == metadata.end() ? it : it + 1, keys);
}

/// Inserts the generic expert-count keys after `after` in a converter's
/// metadata order (TextModel writes them after the norm epsilon).
inline void insertExpertMetadata(std::vector<GgufKey> &metadata,
                                 GgufKey after = GgufKey::RmsEpsilon) {
  insertMetadataAfter(metadata, after,
                      {GgufKey::ExpertCount, GgufKey::ExpertUsedCount});
}

} // namespace etllm::models::moe_keys

#endif // ETLLM_LIB_MODELS_MOEKEYS_H
