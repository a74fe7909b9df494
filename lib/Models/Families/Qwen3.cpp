//===- Qwen3.cpp - Qwen3ForCausalLM ---------------------------------------===//
//
// transformers models/qwen3: Qwen2's config with an explicit head_dim
// (default 128), attention_bias, and a per-head RMSNorm on q and k before
// RoPE. llama.cpp LLM_ARCH_QWEN3 ("qwen3") with attn_q_norm/attn_k_norm.
//
//===----------------------------------------------------------------------===//
#include "FamilyList.h"

namespace etllm::models {

FamilySpec makeQwen3Family() {
  FamilySpec s = renamed(qwen2Family(), "Qwen3ForCausalLM", "qwen3", "Qwen3");
  s.traits.qkNorm = true;

  s.hf.headDim = 128;
  s.hf.headDimKey = HeadDimKey::Always;
  s.hf.bias = BiasRule::AttentionBiasKey;

  s.gguf.arch = "qwen3";
  s.gguf.tensors.push_back({GgufTensor::AttnQNorm, HfModule::QNorm});
  s.gguf.tensors.push_back({GgufTensor::AttnKNorm, HfModule::KNorm});

  s.generator.tiny.headDim = 32;
  return s;
}

} // namespace etllm::models
