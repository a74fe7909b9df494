//===- Gemma2.cpp - Gemma2ForCausalLM -------------------------------------===//
//
// transformers models/gemma2: Gemma plus sandwich norms, tanh soft-capping of
// attention scores and logits, query_pre_attn_scalar, and a sliding window
// on even layers. llama.cpp LLM_ARCH_GEMMA2 ("gemma2"), Gemma2Model (which
// cannot store query_pre_attn_scalar: head_dim is assumed, right for 2B/9B).
//
//===----------------------------------------------------------------------===//
#include "../SpecTables.h"
#include "FamilyList.h"

namespace etllm::models {

FamilySpec makeGemma2Family() {
  FamilySpec s =
      renamed(gemmaFamily(), "Gemma2ForCausalLM", "gemma2", "Gemma2");
  s.blocks.decoderLayer = DecoderLayerBlock::Sandwich;

  s.hf.activationWriteKey = "hidden_activation";
  s.hf.slidingWindow = SlidingWindowRule::EvenLayers;
  s.hf.defaultSlidingWindow = 4096;
  ConfigKey attnCap;
  attnCap.hf = "attn_logit_softcapping";
  attnCap.gguf = GgufKey::AttnLogitSoftcapping;
  attnCap.field = ConfigField::AttnLogitSoftcapping;
  attnCap.hfDefault = attnCap.ggufDefault = 50.0;
  attnCap.nullIsZero = true;
  attnCap.writeZeroAsNull = true;
  ConfigKey finalCap = attnCap;
  finalCap.hf = "final_logit_softcapping";
  finalCap.gguf = GgufKey::FinalLogitSoftcapping;
  finalCap.field = ConfigField::FinalLogitSoftcapping;
  finalCap.hfDefault = finalCap.ggufDefault = 30.0;
  ConfigKey scalar;
  scalar.hf = "query_pre_attn_scalar";
  scalar.field = ConfigField::QueryPreAttnScalar;
  scalar.hfDefault = 256.0;
  scalar.nullIsZero = true;
  scalar.range = KeyRange::Positive;
  scalar.fallback = KeyFallback::HeadDim;
  scalar.writeIntegral = true;
  s.hf.keys = {attnCap, finalCap, scalar};
  s.hf.constants = {
      {"hidden_act", ConstantKey::Kind::String, 0, 0, "gelu_pytorch_tanh"},
      {"cache_implementation", ConstantKey::Kind::String, 0, 0, "hybrid"}};

  s.gguf.arch = "gemma2";
  s.gguf.metadata.push_back(GgufKey::AttnLogitSoftcapping);
  s.gguf.metadata.push_back(GgufKey::FinalLogitSoftcapping);
  s.gguf.metadata.push_back(GgufKey::SlidingWindow);
  // Gemma's (Llama's) table with the sandwich norms.
  replaceTensors(s.gguf.tensors, GgufTensor::FfnNorm, GgufTensor::FfnNorm,
                 {{GgufTensor::AttnPostNorm, HfModule::PostAttentionNorm},
                  {GgufTensor::FfnNorm, HfModule::PreFeedforwardNorm}});
  s.gguf.tensors.push_back(
      {GgufTensor::FfnPostNorm, HfModule::PostFeedforwardNorm});

  s.generator.tiny.slidingWindow = 64;
  return s;
}

} // namespace etllm::models
