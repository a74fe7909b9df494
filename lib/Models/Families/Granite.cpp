//===- Granite.cpp - GraniteForCausalLM (IBM Granite 3.x dense) -----------===//
//
// transformers models/granite (modular_granite.py): Llama's modules with four
// scalar multipliers — embeddings * embedding_multiplier, each residual
// branch * residual_multiplier, the attention scale attention_multiplier,
// logits / logits_scaling. GraniteConfig has no head_dim (it is
// hidden_size / heads). llama.cpp LLM_ARCH_GRANITE ("granite"): GraniteModel
// (conversion/granite.py, a LlamaModel: q/k permuted, Llama's tensor names)
// stores the multipliers as {arch}.embedding_scale, .residual_scale,
// .attention.scale and .logit_scale.
//
//===----------------------------------------------------------------------===//
#include "FamilyList.h"
#include "etllm/Formats/ModelConfig.h"

namespace etllm::models {

FamilySpec makeGraniteFamily() {
  FamilySpec s =
      renamed(llamaFamily(), "GraniteForCausalLM", "granite", "Granite");
  s.llama2c = false;

  // GraniteConfig: Llama's defaults, no head_dim, no pretraining_tp.
  s.hf.headDimKey = HeadDimKey::Never;
  s.hf.constants.clear();
  auto multiplier = [](const char *hf, GgufKey gguf, ConfigField field) {
    ConfigKey k;
    k.hf = hf;
    k.gguf = gguf;
    k.field = field;
    k.hfDefault = k.ggufDefault = 1.0;
    k.range = KeyRange::Positive;
    return k;
  };
  ConfigKey attention =
      multiplier("attention_multiplier", GgufKey::AttentionScale,
                 ConfigField::AttentionMultiplier);
  // llama.cpp takes a missing attention.scale as head_dim^-0.5.
  attention.ggufDefault = 0;
  attention.range = KeyRange::NonNegative;
  s.hf.keys = {
      multiplier("embedding_multiplier", GgufKey::EmbeddingScale,
                 ConfigField::EmbeddingMultiplier),
      multiplier("logits_scaling", GgufKey::LogitScale,
                 ConfigField::LogitsScaling),
      multiplier("residual_multiplier", GgufKey::ResidualScale,
                 ConfigField::ResidualMultiplier),
      attention,
  };

  s.gguf.arch = "granite";
  s.gguf.readsBack = true;
  // LlamaModel's keys, then GraniteModel's.
  s.gguf.metadata.push_back(GgufKey::AttentionScale);
  s.gguf.metadata.push_back(GgufKey::EmbeddingScale);
  s.gguf.metadata.push_back(GgufKey::ResidualScale);
  s.gguf.metadata.push_back(GgufKey::LogitScale);

  s.generator.presets.clear();
  s.generator.llama3RopeScaling = false;
  s.generator.tiny.tied = true;
  // The multipliers of granite-3.1-2b (attention_multiplier 1/64 there,
  // 1/head_dim here).
  s.generator.configure = [](formats::ModelConfig &c) {
    c.embeddingMultiplier = 12.0;
    c.residualMultiplier = 0.22;
    c.logitsScaling = 8.0;
    c.attentionMultiplier = 1.0 / static_cast<double>(c.headDim);
  };
  return s;
}

} // namespace etllm::models
