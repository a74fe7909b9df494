//===- Mixtral.cpp - MixtralForCausalLM (Mixtral 8x7B, 8x22B) -------------===//
//
// transformers models/mixtral (MixtralConfig, modeling_mixtral.py 4.x):
// Mistral's attention and config, and in every layer a
// MixtralSparseMoeBlock ("block_sparse_moe") instead of the MLP: the router
// `gate` [num_local_experts, hidden], a softmax in float32 over the
// experts, the top num_experts_per_tok, always renormalized, and experts
// MixtralBlockSparseTop2MLP `w2(act_fn(w1(x)) * w3(x))`. rope_theta
// defaults to 1e6 and rms_norm_eps to 1e-5; a sliding window when
// sliding_window is set.
//
// llama.cpp converts it with LlamaModel (conversion/llama.py: q/k rows
// permuted, the experts stacked into blk.N.ffn_{gate,up,down}_exps) to
// arch "llama" with expert_count and expert_used_count; its llama graph
// routes with a softmax and renormalizes (build_moe_ffn norm_w = true). The
// sliding window is lost in GGUF, so a GGUF cannot carry one.
//
//===----------------------------------------------------------------------===//
#include "../MoeKeys.h"
#include "FamilyList.h"

namespace etllm::models {

FamilySpec makeMixtralFamily() {
  FamilySpec s =
      renamed(mistralFamily(), "MixtralForCausalLM", "mixtral", "Mixtral");
  s.blocks.mlp = MlpBlock::SparseMoe;
  auto name = [&](HfModule m, const char *n) {
    s.hfNames[static_cast<size_t>(m)] = n;
  };
  name(HfModule::Moe, "block_sparse_moe");
  name(HfModule::MoeRouter, "block_sparse_moe.gate");
  name(HfModule::MoeExperts, "block_sparse_moe.experts");
  name(HfModule::ExpertGateProj, "w1");
  name(HfModule::ExpertUpProj, "w3");
  name(HfModule::ExpertDownProj, "w2");
  s.moe.layers = MoeLayerRule::AllLayers;
  s.moe.normTopkProb = true;
  s.moe.expertClass = "BlockSparseTop2MLP";

  s.hf.rmsNormEps = 1e-5;
  s.hf.ropeTheta = 1e6;
  s.hf.keys = {moe_keys::numExperts("num_local_experts", 8),
               moe_keys::numExpertsPerTok(2)};
  s.hf.constants = {
      {"router_aux_loss_coef", ConstantKey::Kind::Double, 0, 0.001},
      {"router_jitter_noise", ConstantKey::Kind::Double, 0, 0.0}};

  // LlamaModel's conversion under "llama", with the expert counts after
  // the norm epsilon (TextModel.set_gguf_parameters).
  s.gguf = llamaFamily().gguf;
  s.gguf.readsBack = true;
  s.gguf.readsBackWithKey = GgufKey::ExpertCount;
  moe_keys::insertExpertMetadata(s.gguf.metadata);
  for (const GgufTensorName &t : moe_keys::routedExpertTensors())
    s.gguf.tensors.push_back(t);

  s.generator.vocab = SyntheticVocab::SentencePiece;
  s.generator.tiny.slidingWindow = 0;
  s.generator.tiny.ropeTheta = 1e6;
  s.generator.tiny.experts = 8;
  s.generator.tiny.expertsPerTok = 2;
  return s;
}

} // namespace etllm::models
