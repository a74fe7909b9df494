//===- Qwen2.cpp - Qwen2ForCausalLM (Qwen2, Qwen2.5) ----------------------===//
//
// transformers models/qwen2: biases on q/k/v (never on o), a sliding window
// on the layers from max_window_layers when use_sliding_window. llama.cpp
// LLM_ARCH_QWEN2 ("qwen2"), Qwen2Model (no q/k permutation).
//
//===----------------------------------------------------------------------===//
#include "../SpecTables.h"
#include "FamilyList.h"

namespace etllm::models {

FamilySpec makeQwen2Family() {
  FamilySpec s = renamed(FamilySpec(), "Qwen2ForCausalLM", "qwen2", "Qwen2");

  s.hf.maxPositionEmbeddings = 32768;
  s.hf.rmsNormEps = 1e-6;
  s.hf.headDimKey = HeadDimKey::IfNotDefault;
  s.hf.bias = BiasRule::QkvOnly;
  s.hf.slidingWindow = SlidingWindowRule::FromMaxWindowLayers;

  s.gguf.arch = "qwen2";
  s.gguf.metadata = textModelMetadata();
  s.gguf.tensors = llamaFamily().gguf.tensors;

  s.generator.vocab = SyntheticVocab::Qwen2Bpe;
  s.generator.tiny.tied = true;
  s.generator.tiny.ropeTheta = 1000000.0;
  s.generator.tiny.rmsEps = 1e-6;
  return s;
}

} // namespace etllm::models
