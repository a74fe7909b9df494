//===- Qwen2Moe.cpp - Qwen2MoeForCausalLM (Qwen1.5-MoE, Qwen2-57B-A14B) ---===//
//
// transformers models/qwen2_moe (Qwen2MoeConfig, modeling_qwen2_moe.py
// 4.x): Qwen2's attention (q/k/v biases, the sliding-window rule) and a
// Qwen2MoeSparseMoeBlock in layer i unless i is in mlp_only_layers, when
// (i + 1) % decoder_sparse_step == 0 (a Qwen2MoeMLP of intermediate_size
// otherwise): router `gate` [num_experts, hidden], softmax in float32, the
// top num_experts_per_tok, renormalized when norm_topk_prob, experts
// Qwen2MoeMLP of moe_intermediate_size, plus `shared_expert` (a Qwen2MoeMLP
// of shared_expert_intermediate_size) scaled by
// sigmoid(shared_expert_gate(x)).
//
// llama.cpp LLM_ARCH_QWEN2MOE ("qwen2moe", conversion/qwen.py
// Qwen2MoeModel): experts stacked into ffn_{gate,up,down}_exps, the shared
// expert as *_shexp and its gate as ffn_gate_inp_shexp, the sizes as
// expert_feed_forward_length and expert_shared_feed_forward_length. Its
// graph never renormalizes (norm_w = false) and makes every layer sparse,
// so a GGUF has norm_topk_prob false and its dense layers are the ones
// without ffn_gate_inp.
//
//===----------------------------------------------------------------------===//
#include "../MoeKeys.h"
#include "FamilyList.h"

namespace etllm::models {

FamilySpec makeQwen2MoeFamily() {
  FamilySpec s =
      renamed(qwen2Family(), "Qwen2MoeForCausalLM", "qwen2_moe", "Qwen2Moe");
  s.blocks.mlp = MlpBlock::SparseMoe;
  s.moe.layers = MoeLayerRule::SparseStep;
  s.moe.sharedExpert = SharedExpertKind::SigmoidGated;

  s.hf.maxPositionEmbeddings = 32768;
  s.hf.rmsNormEps = 1e-6;
  s.hf.keys = {
      moe_keys::numExperts("num_experts", 60),
      moe_keys::numExpertsPerTok(4),
      moe_keys::moeIntermediateSize(1408),
      moe_keys::sharedExpertIntermediateSize(5632),
      moe_keys::normTopkProb(false, GgufKey::None, false),
      moe_keys::decoderSparseStep(),
      moe_keys::mlpOnlyLayers(),
  };
  s.hf.constants = {
      {"router_aux_loss_coef", ConstantKey::Kind::Double, 0, 0.001}};

  s.gguf.arch = "qwen2moe";
  moe_keys::insertExpertMetadata(s.gguf.metadata);
  s.gguf.metadata.push_back(GgufKey::ExpertFeedForwardLength);
  s.gguf.metadata.push_back(GgufKey::ExpertSharedFeedForwardLength);
  for (const GgufTensorName &t : moe_keys::routedExpertTensors())
    s.gguf.tensors.push_back(t);
  for (const GgufTensorName &t : moe_keys::sharedExpertTensors(true))
    s.gguf.tensors.push_back(t);

  s.generator.tiny.experts = 8;
  s.generator.tiny.expertsPerTok = 4;
  s.generator.tiny.moeFfn = 32;
  s.generator.tiny.sharedFfn = 96;
  return s;
}

} // namespace etllm::models
