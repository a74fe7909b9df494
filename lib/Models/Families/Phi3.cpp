//===- Phi3.cpp - Phi3ForCausalLM (Phi-3, Phi-3.5, Phi-4-mini) ------------===//
//
// transformers models/phi3: one fused qkv_proj and one gate_up_proj, partial
// rotary, a sliding window on every layer, original_max_position_embeddings.
// llama.cpp LLM_ARCH_PHI3 ("phi3"), Phi3MiniModel (tensors kept fused).
//
//===----------------------------------------------------------------------===//
#include "../SpecTables.h"
#include "FamilyList.h"

namespace etllm::models {

FamilySpec makePhi3Family() {
  FamilySpec s = renamed(FamilySpec(), "Phi3ForCausalLM", "phi3", "Phi3");
  s.blocks.attention = AttentionBlock::FusedQkv;
  s.blocks.mlp = MlpBlock::FusedGateUp;

  s.hf.maxPositionEmbeddings = 4096;
  s.hf.rmsNormEps = 1e-5;
  s.hf.bosTokenId = 1;
  s.hf.eosTokenId = 32000;
  s.hf.padTokenId = 32000;
  s.hf.headDimKey = HeadDimKey::Never;
  s.hf.bias = BiasRule::None;
  s.hf.partialRotaryFactorKey = true;
  s.hf.slidingWindow = SlidingWindowRule::AllLayers;
  ConfigKey original;
  original.hf = "original_max_position_embeddings";
  original.gguf = GgufKey::RopeOriginalContext;
  original.field = ConfigField::OriginalMaxPositionEmbeddings;
  original.range = KeyRange::Dim;
  original.fallback = KeyFallback::MaxPositionEmbeddings;
  s.hf.keys = {original};
  s.hf.constants = {{"embd_pdrop", ConstantKey::Kind::Double},
                    {"resid_pdrop", ConstantKey::Kind::Double}};

  s.gguf.arch = "phi3";
  s.gguf.metadata = {
      GgufKey::ContextLength,      GgufKey::RopeOriginalContext,
      GgufKey::EmbeddingLength,    GgufKey::FeedForwardLength,
      GgufKey::BlockCount,         GgufKey::HeadCount,
      GgufKey::HeadCountKv,        GgufKey::RmsEpsilon,
      GgufKey::RopeDimensionCount, GgufKey::RopeFreqBase,
      GgufKey::FileType,           GgufKey::SlidingWindow,
  };
  // Llama's table with the fused projections (gate and up in ffn_up).
  s.gguf.tensors = llamaFamily().gguf.tensors;
  replaceTensors(s.gguf.tensors, GgufTensor::AttnQ, GgufTensor::AttnV,
                 {{GgufTensor::AttnQkv, HfModule::QkvProj}});
  replaceTensors(s.gguf.tensors, GgufTensor::FfnGate, GgufTensor::FfnUp,
                 {{GgufTensor::FfnUp, HfModule::GateUpProj}});

  s.generator.vocab = SyntheticVocab::SentencePiece;
  return s;
}

} // namespace etllm::models
