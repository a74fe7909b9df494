//===- Qwen3Moe.cpp - Qwen3MoeForCausalLM (Qwen3-30B-A3B, 235B-A22B) ------===//
//
// transformers models/qwen3_moe (Qwen3MoeConfig, modeling_qwen3_moe.py
// 4.x): Qwen3's attention (per-head q/k RMSNorm, attention_bias, head_dim
// from config.json, else hidden_size / heads) and Qwen2-MoE's sparse block
// without the shared expert: router `gate`, softmax in float32, top
// num_experts_per_tok, renormalized when norm_topk_prob, experts
// Qwen3MoeMLP of moe_intermediate_size; decoder_sparse_step and
// mlp_only_layers as Qwen2-MoE.
//
// llama.cpp LLM_ARCH_QWEN3MOE ("qwen3moe", Qwen3MoeModel): Qwen2-MoE's
// tensors without *_shexp, attn_{q,k}_norm; its graph always renormalizes
// (norm_w = true), so a GGUF has norm_topk_prob true, as Qwen3-30B-A3B's
// config.json says.
//
//===----------------------------------------------------------------------===//
#include "../MoeKeys.h"
#include "../SpecTables.h"
#include "FamilyList.h"

namespace etllm::models {

FamilySpec makeQwen3MoeFamily() {
  FamilySpec s =
      renamed(qwen3Family(), "Qwen3MoeForCausalLM", "qwen3_moe", "Qwen3Moe");
  s.blocks.mlp = MlpBlock::SparseMoe;
  s.moe.layers = MoeLayerRule::SparseStep;

  s.hf.headDim = 0; // getattr(config, "head_dim", hidden / heads)
  s.hf.maxPositionEmbeddings = 32768;
  s.hf.rmsNormEps = 1e-6;
  s.hf.keys = {
      moe_keys::numExperts("num_experts", 128),
      moe_keys::numExpertsPerTok(8),
      moe_keys::moeIntermediateSize(768),
      moe_keys::normTopkProb(false, GgufKey::None, true),
      moe_keys::decoderSparseStep(),
      moe_keys::mlpOnlyLayers(),
  };
  s.hf.constants = {
      {"router_aux_loss_coef", ConstantKey::Kind::Double, 0, 0.001}};

  s.gguf.arch = "qwen3moe";
  moe_keys::insertExpertMetadata(s.gguf.metadata);
  s.gguf.metadata.push_back(GgufKey::ExpertFeedForwardLength);
  for (const GgufTensorName &t : moe_keys::routedExpertTensors())
    s.gguf.tensors.push_back(t);

  s.generator.tiny.experts = 8;
  s.generator.tiny.expertsPerTok = 4;
  s.generator.tiny.moeFfn = 32;
  GeneratorPreset big =
      sizedPreset("qwen3-30b-a3b", 2048, 48, 32, 4, 128, 6144, 151936, 40960);
  big.tied = false;
  big.ropeTheta = 1e6;
  big.rmsEps = 1e-6;
  big.experts = 128;
  big.expertsPerTok = 8;
  big.moeFfn = 768;
  s.generator.presets = {big};
  return s;
}

} // namespace etllm::models
