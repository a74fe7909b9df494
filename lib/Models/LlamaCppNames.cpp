//===- LlamaCppNames.cpp - llama.cpp's spelling of keys and tensors -------===//
//
// One table each, as gguf-py/gguf/constants.py spells them (Keys.LLM,
// Keys.Attention, Keys.Rope and TENSOR_NAMES).
//
//===----------------------------------------------------------------------===//
#include "etllm/Models/Registry.h"

namespace etllm::models {

const char *ggufKeyName(GgufKey key) {
  switch (key) {
  case GgufKey::None:
    return "";
  case GgufKey::ContextLength:
    return "context_length";
  case GgufKey::EmbeddingLength:
    return "embedding_length";
  case GgufKey::BlockCount:
    return "block_count";
  case GgufKey::FeedForwardLength:
    return "feed_forward_length";
  case GgufKey::HeadCount:
    return "attention.head_count";
  case GgufKey::HeadCountKv:
    return "attention.head_count_kv";
  case GgufKey::RmsEpsilon:
    return "attention.layer_norm_rms_epsilon";
  case GgufKey::KeyLength:
    return "attention.key_length";
  case GgufKey::ValueLength:
    return "attention.value_length";
  case GgufKey::SlidingWindow:
    return "attention.sliding_window";
  case GgufKey::RopeFreqBase:
    return "rope.freq_base";
  case GgufKey::RopeDimensionCount:
    return "rope.dimension_count";
  case GgufKey::RopeScalingLinear:
    return "rope.scaling.type";
  case GgufKey::RopeScalingFactor:
    return "rope.scaling.factor";
  case GgufKey::RopeScaleLinear:
    return "rope.scale_linear";
  case GgufKey::RopeOriginalContext:
    return "rope.scaling.original_context_length";
  case GgufKey::VocabSize:
    return "vocab_size";
  case GgufKey::AttnLogitSoftcapping:
    return "attn_logit_softcapping";
  case GgufKey::FinalLogitSoftcapping:
    return "final_logit_softcapping";
  case GgufKey::AttentionScale:
    return "attention.scale";
  case GgufKey::EmbeddingScale:
    return "embedding_scale";
  case GgufKey::ResidualScale:
    return "residual_scale";
  case GgufKey::LogitScale:
    return "logit_scale";
  case GgufKey::FileType:
    return "general.file_type";
  case GgufKey::QLoraRank:
    return "attention.q_lora_rank";
  case GgufKey::KvLoraRank:
    return "attention.kv_lora_rank";
  case GgufKey::KeyLengthMla:
    return "attention.key_length_mla";
  case GgufKey::ValueLengthMla:
    return "attention.value_length_mla";
  case GgufKey::RopeScalingYarnLogMul:
    return "rope.scaling.yarn_log_multiplier";
  case GgufKey::RopeScalingYarnBetaFast:
    return "rope.scaling.yarn_beta_fast";
  case GgufKey::RopeScalingYarnBetaSlow:
    return "rope.scaling.yarn_beta_slow";
  case GgufKey::ExpertCount:
    return "expert_count";
  case GgufKey::ExpertUsedCount:
    return "expert_used_count";
  case GgufKey::ExpertFeedForwardLength:
    return "expert_feed_forward_length";
  case GgufKey::ExpertSharedFeedForwardLength:
    return "expert_shared_feed_forward_length";
  case GgufKey::ExpertSharedCount:
    return "expert_shared_count";
  case GgufKey::ExpertWeightsScale:
    return "expert_weights_scale";
  case GgufKey::ExpertWeightsNorm:
    return "expert_weights_norm";
  case GgufKey::ExpertGatingFunc:
    return "expert_gating_func";
  case GgufKey::ExpertGroupCount:
    return "expert_group_count";
  case GgufKey::ExpertGroupUsedCount:
    return "expert_group_used_count";
  case GgufKey::LeadingDenseBlockCount:
    return "leading_dense_block_count";
  }
  return "";
}

bool ggufKeyHasArchPrefix(GgufKey key) {
  return key != GgufKey::None && key != GgufKey::FileType;
}

const char *ggufTensorName(GgufTensor tensor) {
  switch (tensor) {
  case GgufTensor::TokenEmbd:
    return "token_embd";
  case GgufTensor::OutputNorm:
    return "output_norm";
  case GgufTensor::Output:
    return "output";
  case GgufTensor::RopeFreqs:
    return "rope_freqs";
  case GgufTensor::AttnNorm:
    return "attn_norm";
  case GgufTensor::AttnQ:
    return "attn_q";
  case GgufTensor::AttnK:
    return "attn_k";
  case GgufTensor::AttnV:
    return "attn_v";
  case GgufTensor::AttnQkv:
    return "attn_qkv";
  case GgufTensor::AttnOut:
    return "attn_output";
  case GgufTensor::AttnQNorm:
    return "attn_q_norm";
  case GgufTensor::AttnKNorm:
    return "attn_k_norm";
  case GgufTensor::AttnPostNorm:
    return "post_attention_norm";
  case GgufTensor::FfnNorm:
    return "ffn_norm";
  case GgufTensor::FfnGate:
    return "ffn_gate";
  case GgufTensor::FfnUp:
    return "ffn_up";
  case GgufTensor::FfnDown:
    return "ffn_down";
  case GgufTensor::FfnPostNorm:
    return "post_ffw_norm";
  case GgufTensor::FfnGateInp:
    return "ffn_gate_inp";
  case GgufTensor::FfnGateExps:
    return "ffn_gate_exps";
  case GgufTensor::FfnUpExps:
    return "ffn_up_exps";
  case GgufTensor::FfnDownExps:
    return "ffn_down_exps";
  case GgufTensor::FfnGateInpShexp:
    return "ffn_gate_inp_shexp";
  case GgufTensor::FfnGateShexp:
    return "ffn_gate_shexp";
  case GgufTensor::FfnUpShexp:
    return "ffn_up_shexp";
  case GgufTensor::FfnDownShexp:
    return "ffn_down_shexp";
  case GgufTensor::FfnExpProbsB:
    return "exp_probs_b";
  case GgufTensor::AttnQA:
    return "attn_q_a";
  case GgufTensor::AttnQANorm:
    return "attn_q_a_norm";
  case GgufTensor::AttnQB:
    return "attn_q_b";
  case GgufTensor::AttnKvAMqa:
    return "attn_kv_a_mqa";
  case GgufTensor::AttnKvANorm:
    return "attn_kv_a_norm";
  case GgufTensor::AttnKvB:
    return "attn_kv_b";
  case GgufTensor::AttnKB:
    return "attn_k_b";
  case GgufTensor::AttnVB:
    return "attn_v_b";
  }
  return "";
}

} // namespace etllm::models
