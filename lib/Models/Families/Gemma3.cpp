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

FamilySpec makeGemma3Family() {
  FamilySpec s =
      renamed(gemma2Family(), "Gemma3ForCausalLM", "gemma3_text", "Gemma3");
  s.traits.qkNorm = true;

  s.hf.maxPositionEmbeddings = 131072;
  s.hf.ropeTheta = 1000000.0;
  s.hf.slidingWindow = SlidingWindowRule::Pattern;
  s.hf.slidingWindowPattern = 6;
  s.hf.defaultSlidingWindow = 4096;
  // Gemma2's keys; no soft-capping (Gemma3TextConfig: null, and GGUF has
  // no key for it).
  for (ConfigKey &k : s.hf.keys)
    if (k.field == ConfigField::AttnLogitSoftcapping ||
        k.field == ConfigField::FinalLogitSoftcapping) {
      k.gguf = GgufKey::None;
      k.hfDefault = k.ggufDefault = 0;
    }
  ConfigKey localBase;
  localBase.hf = "rope_local_base_freq";
  localBase.field = ConfigField::RopeLocalTheta;
  localBase.hfDefault = localBase.ggufDefault = 10000.0;
  localBase.range = KeyRange::Positive;
  localBase.ggufImplied = true; // llama.cpp: rope_freq_base_train_swa
  s.hf.keys.push_back(localBase);
  s.hf.constants = {{"use_bidirectional_attention", ConstantKey::Kind::Bool, 0,
                     0, nullptr, /*enforced=*/true}};

  s.gguf.arch = "gemma3";
  s.gguf.metadata = gemmaFamily().gguf.metadata;
  s.gguf.metadata.push_back(GgufKey::RopeFreqBase);
  s.gguf.metadata.push_back(GgufKey::SlidingWindow);
  s.gguf.tensors.push_back({GgufTensor::AttnQNorm, HfModule::QNorm});
  s.gguf.tensors.push_back({GgufTensor::AttnKNorm, HfModule::KNorm});

  s.generator.tiny.slidingWindow = 64;
  s.generator.tiny.ropeTheta = 1000000.0;
  return s;
}

} // namespace etllm::models
