//===- Gemma.cpp - GemmaForCausalLM ---------------------------------------===//
//
// transformers models/gemma: tanh GELU, RMSNorm x * (1 + w), embeddings
// scaled by sqrt(hidden_size), head_dim 256 by default, tied output.
// llama.cpp LLM_ARCH_GEMMA ("gemma"), GemmaModel: adds 1 to every norm
// weight and drops lm_head.
//
//===----------------------------------------------------------------------===//
#include "FamilyList.h"

namespace etllm::models {

FamilySpec makeGemmaFamily() {
  FamilySpec s = renamed(FamilySpec(), "GemmaForCausalLM", "gemma", "Gemma");
  s.traits.normAddsOne = true;
  s.traits.scaleEmbeddings = true;

  s.hf.maxPositionEmbeddings = 8192;
  s.hf.rmsNormEps = 1e-6;
  s.hf.tieWordEmbeddings = true;
  s.hf.hiddenAct = "gelu_pytorch_tanh";
  s.hf.bosTokenId = 2;
  s.hf.eosTokenId = 1;
  s.hf.padTokenId = 0;
  s.hf.headDim = 256;
  // GemmaConfig keeps the legacy hidden_act and a hidden_activation that
  // wins when set.
  s.hf.activationKeys = {"hidden_activation", "hidden_act"};
  s.hf.activationWriteKey = "hidden_act";
  s.hf.ropeScaling = RopeScalingKey::Unsupported;
  s.hf.constants = {{"hidden_activation", ConstantKey::Kind::Null}};

  s.gguf.arch = "gemma";
  s.gguf.normWeightsIncludeOne = true;
  s.gguf.dropsLmHead = true;
  s.gguf.metadata = {
      GgufKey::ContextLength, GgufKey::EmbeddingLength,
      GgufKey::BlockCount,    GgufKey::FeedForwardLength,
      GgufKey::HeadCount,     GgufKey::HeadCountKv,
      GgufKey::RmsEpsilon,    GgufKey::KeyLength,
      GgufKey::ValueLength,   GgufKey::FileType,
  };
  s.gguf.tensors = llamaFamily().gguf.tensors;

  s.generator.vocab = SyntheticVocab::GemmaSentencePiece;
  s.generator.tiny.headDim = 32;
  s.generator.tiny.tied = true;
  s.generator.tiny.rmsEps = 1e-6;
  return s;
}

} // namespace etllm::models
