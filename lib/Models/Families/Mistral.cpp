//===- Mistral.cpp - MistralForCausalLM -----------------------------------===//
//
// transformers models/mistral: Llama's block, no biases, a sliding window on
// every layer. llama.cpp converts it with LlamaModel to arch "llama" (the
// window is lost), so a Mistral GGUF opens as a Llama.
//
//===----------------------------------------------------------------------===//
#include "FamilyList.h"

namespace etllm::models {

FamilySpec makeMistralFamily() {
  FamilySpec s =
      renamed(FamilySpec(), "MistralForCausalLM", "mistral", "Mistral");

  s.hf.maxPositionEmbeddings = 4096 * 32;
  s.hf.rmsNormEps = 1e-6;
  s.hf.bosTokenId = 1;
  s.hf.eosTokenId = 2;
  s.hf.bias = BiasRule::None;
  s.hf.ropeScaling = RopeScalingKey::IfSet;
  s.hf.slidingWindow = SlidingWindowRule::AllLayers;

  // LlamaModel's conversion, under arch "llama".
  s.gguf = llamaFamily().gguf;
  s.gguf.readsBack = false;

  s.generator.vocab = SyntheticVocab::SentencePiece;
  s.generator.tiny.slidingWindow = 64;
  return s;
}

} // namespace etllm::models
