//===- Qwen2.cpp - Qwen2ForCausalLM (Qwen2, Qwen2.5) ----------------------===//
//
// transformers models/qwen2: biases on q/k/v (never on o), a sliding window
// on the layers from max_window_layers when use_sliding_window. llama.cpp
// LLM_ARCH_QWEN2 ("qwen2"), Qwen2Model (no q/k permutation).
//
//===----------------------------------------------------------------------===//
#include "FamilyList.h"

namespace etllm::models {

const FamilySpec &qwen2Family() {
  static const FamilySpec spec = [] {
    FamilySpec s;
    s.id = "qwen2";
    s.hfArchitecture = "Qwen2ForCausalLM";
    s.hfModelType = "qwen2";
    s.classPrefix = "Qwen2";

    s.hf.maxPositionEmbeddings = 32768;
    s.hf.rmsNormEps = 1e-6;
    s.hf.headDimKey = HeadDimKey::IfNotDefault;
    s.hf.bias = BiasRule::QkvOnly;
    s.hf.slidingWindow = SlidingWindowRule::FromMaxWindowLayers;

    s.gguf.arch = "qwen2";
    s.gguf.metadata = {
        GgufKey::BlockCount,        GgufKey::ContextLength,
        GgufKey::EmbeddingLength,   GgufKey::FeedForwardLength,
        GgufKey::HeadCount,         GgufKey::HeadCountKv,
        GgufKey::RopeScalingLinear, GgufKey::RopeFreqBase,
        GgufKey::RmsEpsilon,        GgufKey::KeyLength,
        GgufKey::ValueLength,       GgufKey::FileType,
    };
    s.gguf.tensors = llamaFamily().gguf.tensors;

    s.generator.vocab = SyntheticVocab::Qwen2Bpe;
    s.generator.tiny.tied = true;
    s.generator.tiny.ropeTheta = 1000000.0;
    s.generator.tiny.rmsEps = 1e-6;
    return s;
  }();
  return spec;
}

} // namespace etllm::models
