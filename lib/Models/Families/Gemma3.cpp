//===- Gemma3.cpp - Gemma3ForCausalLM -------------------------------------===//
//
// transformers models/gemma3, the text decoder (Gemma3TextConfig,
// model_type "gemma3_text"): Gemma2's sandwich norms, GeGLU (tanh GELU),
// embeddings scaled by sqrt(hidden_size) and query_pre_attn_scalar, plus
// per-head RMSNorms on q and k (x * (1 + w), as every Gemma norm), no
// soft-capping, and five sliding-window layers to each global one
// (sliding_window_pattern 6: layers 5, 11, ... global) whose RoPE has its
// own base (rope_local_base_freq 10000, the table of "rotary_emb_local";
// the global layers use rope_theta, 1e6). llama.cpp LLM_ARCH_GEMMA3
// ("gemma3"), Gemma3Model: adds 1 to every norm weight, q/k norms included,
// drops lm_head, and hard-codes the pattern and the local base.
//
// Gemma 3's vision models reuse this family for their text decoder.
//
//===----------------------------------------------------------------------===//
#include "FamilyList.h"

namespace etllm::models {

const FamilySpec &gemma3Family() {
  static const FamilySpec spec = [] {
    FamilySpec s = gemma2Family();
    s.id = "gemma3";
    s.hfArchitecture = "Gemma3ForCausalLM";
    s.hfModelType = "gemma3_text";
    s.classPrefix = "Gemma3";
    s.traits.qkNorm = true;

    s.hf.maxPositionEmbeddings = 131072;
    s.hf.ropeTheta = 1000000.0;
    s.hf.slidingWindow = SlidingWindowRule::Pattern;
    s.hf.slidingWindowPattern = 6;
    s.hf.defaultSlidingWindow = 4096;
    // No soft-capping (Gemma3TextConfig: null); the scalar as Gemma2's.
    s.hf.keys.clear();
    ConfigKey attnCap;
    attnCap.hf = "attn_logit_softcapping";
    attnCap.field = ConfigField::AttnLogitSoftcapping;
    attnCap.nullIsZero = true;
    attnCap.writeZeroAsNull = true;
    ConfigKey finalCap = attnCap;
    finalCap.hf = "final_logit_softcapping";
    finalCap.field = ConfigField::FinalLogitSoftcapping;
    ConfigKey scalar;
    scalar.hf = "query_pre_attn_scalar";
    scalar.field = ConfigField::QueryPreAttnScalar;
    scalar.hfDefault = 256.0;
    scalar.nullIsZero = true;
    scalar.range = KeyRange::Positive;
    scalar.fallback = KeyFallback::HeadDim;
    scalar.writeIntegral = true;
    ConfigKey localBase;
    localBase.hf = "rope_local_base_freq";
    localBase.field = ConfigField::RopeLocalTheta;
    localBase.hfDefault = localBase.ggufDefault = 10000.0;
    localBase.range = KeyRange::Positive;
    localBase.ggufImplied = true; // llama.cpp: rope_freq_base_train_swa
    s.hf.keys = {attnCap, finalCap, scalar, localBase};
    s.hf.constants = {{"use_bidirectional_attention", ConstantKey::Kind::Bool,
                       0, 0, nullptr, /*enforced=*/true}};

    s.gguf.arch = "gemma3";
    s.gguf.metadata = gemmaFamily().gguf.metadata;
    s.gguf.metadata.push_back(GgufKey::RopeFreqBase);
    s.gguf.metadata.push_back(GgufKey::SlidingWindow);
    s.gguf.tensors.push_back({GgufTensor::AttnQNorm, HfModule::QNorm});
    s.gguf.tensors.push_back({GgufTensor::AttnKNorm, HfModule::KNorm});

    s.generator.tiny.slidingWindow = 64;
    s.generator.tiny.ropeTheta = 1000000.0;
    return s;
  }();
  return spec;
}

} // namespace etllm::models
