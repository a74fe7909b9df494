//===- Multimodal.cpp - Vision encoders composed with a decoder -----------===//
//
// LLaVA (LlavaForConditionalGeneration) and Gemma 3
// (Gemma3ForConditionalGeneration) as transformers writes them. Hub
// checkpoints (llava-hf/*) and transformers 5's save_pretrained use
// `language_model.model.*`, `language_model.lm_head.*`,
// `vision_tower.vision_model.*` or `vision_tower.*` and
// `multi_modal_projector.*`; transformers 4.52+'s in-memory names put
// `model.` in front of the last three and drop `.model` from the first.
//
//===----------------------------------------------------------------------===//
#include "etllm/Models/Multimodal.h"

namespace etllm::models {
namespace {

// The checkpoint names of both kinds of composite, as transformers spells
// them (the hub's and transformers 5's).
const std::vector<TensorRename> kRenames = {
    {"language_model.model.", "model."},
    {"language_model.lm_head.", "lm_head."},
    {"model.language_model.", "model."},
    {"model.vision_tower.vision_model.", "vision_tower."},
    {"model.vision_tower.", "vision_tower."},
    {"vision_tower.vision_model.", "vision_tower."},
    {"model.multi_modal_projector.", "multi_modal_projector."},
};
const std::vector<TensorRename> kHubNames = {
    {"model.", "language_model.model."},
    {"lm_head.", "language_model.lm_head."},
    {"vision_tower.", "vision_tower.vision_model."},
};

// SmolVLM's and Idefics3's (the hub's and transformers 5's are the same).
const std::vector<TensorRename> kIdefics3Renames = {
    {"model.text_model.", "model."},
    {"model.vision_model.", "vision_tower."},
    {"model.connector.", "multi_modal_projector."},
};
const std::vector<TensorRename> kIdefics3HubNames = {
    {"model.", "model.text_model."},
    {"vision_tower.", "model.vision_model."},
    {"multi_modal_projector.", "model.connector."},
};

/// SmolVLM's and Idefics3's kind: a SigLIP-like tower (patch bias, learned
/// positions, post_layernorm), the pixel-shuffle connector, a llama
/// decoder; checkpoints name the parts model.vision_model,
/// model.connector, model.text_model.
MultimodalSpec idefics3Kind(const char *modelType, const char *hfArchitecture,
                            const char *connectorClass,
                            const char *ggufProjectorType,
                            const char *towerType) {
  return {modelType,
          hfArchitecture,
          modelType,
          "llama",
          VisionProjector::PixelShuffle,
          connectorClass,
          ggufProjectorType,
          "<image>",
          nullptr,
          nullptr,
          // Idefics3Processor / SmolVLMProcessor: each tile after its
          // <fake_token_around_image><row_R_col_C>, a newline after each
          // row and one more, then the global image between
          // <fake_token_around_image><global-img> and
          // <fake_token_around_image>.
          "<fake_token_around_image><global-img>",
          "<fake_token_around_image>",
          "<fake_token_around_image><row_{row}_col_{col}>",
          "\n",
          "\n",
          {{towerType, "siglip"}},
          kIdefics3Renames,
          kIdefics3HubNames};
}

const std::vector<MultimodalSpec> &specs() {
  static const std::vector<MultimodalSpec> all = {
      {"llava",
       "LlavaForConditionalGeneration",
       "llava",
       "llama",
       VisionProjector::LlavaMlp,
       "LlavaMultiModalProjector",
       "mlp",
       "<image>",
       nullptr,
       nullptr,
       "",
       "",
       "",
       "",
       "",
       {{"clip_vision_model", "clip"}, {"siglip_vision_model", "siglip"}},
       kRenames,
       kHubNames},
      // Gemma 3 (google/gemma-3-4b-it and larger): a SigLIP tower's
      // last_hidden_state, pooled to mm_tokens_per_image, the Gemma 3 text
      // decoder with image positions attending both ways.
      {"gemma3",
       "Gemma3ForConditionalGeneration",
       "gemma3-vision",
       "gemma3_text",
       VisionProjector::Gemma3,
       "Gemma3MultiModalProjector",
       "gemma3",
       "<image_soft_token>",
       "<start_of_image>",
       "<end_of_image>",
       // Gemma3Processor: "\n\n<start_of_image>", the image,
       // "<end_of_image>\n\n".
       "\n\n",
       "\n\n",
       "",
       "",
       "",
       {{"siglip_vision_model", "siglip"}},
       kRenames,
       kHubNames},
      // SmolVLM (HuggingFaceTB/SmolVLM-*) and Idefics3: one kind, two
      // class names (llama.cpp's converter writes both as "idefics3").
      idefics3Kind("smolvlm", "SmolVLMForConditionalGeneration",
                   "SmolVLMConnector", "idefics3", "smolvlm_vision"),
      idefics3Kind("idefics3", "Idefics3ForConditionalGeneration",
                   "Idefics3Connector", nullptr, "idefics3_vision"),
  };
  return all;
}

} // namespace

const char *towerModelType(const MultimodalSpec &spec,
                           std::string_view visionArch) {
  for (const TensorRename &t : spec.towers)
    if (visionArch == t.to)
      return t.from;
  return nullptr;
}

const MultimodalSpec *findMultimodalByModelType(std::string_view modelType) {
  for (const MultimodalSpec &s : specs())
    if (modelType == s.modelType)
      return &s;
  return nullptr;
}

const MultimodalSpec *
findMultimodalByGeneratorArch(std::string_view generatorArch) {
  for (const MultimodalSpec &s : specs())
    if (generatorArch == s.generatorArch)
      return &s;
  return nullptr;
}

const MultimodalSpec *findMultimodalByGgufProjector(std::string_view type) {
  for (const MultimodalSpec &s : specs())
    if (s.ggufProjectorType && type == s.ggufProjectorType)
      return &s;
  return nullptr;
}

std::string multimodalGeneratorArchs() {
  std::string out;
  for (const MultimodalSpec &s : specs())
    out += (out.empty() ? "" : ", ") + std::string(s.generatorArch);
  return out;
}

const MultimodalSpec *
findMultimodalByArchitecture(std::string_view hfArchitecture) {
  for (const MultimodalSpec &s : specs())
    if (hfArchitecture == s.hfArchitecture)
      return &s;
  return nullptr;
}

std::string supportedMultimodalArchitectures() {
  std::string out;
  for (const MultimodalSpec &s : specs())
    out += (out.empty() ? "" : ", ") + std::string(s.hfArchitecture);
  return out;
}

namespace {
std::string rename(const std::vector<TensorRename> &table,
                   std::string_view name) {
  for (const TensorRename &r : table) {
    std::string_view from = r.from;
    if (name.substr(0, from.size()) == from)
      return r.to + std::string(name.substr(from.size()));
  }
  return std::string(name);
}
} // namespace

std::string canonicalTensorName(const MultimodalSpec &spec,
                                std::string_view name) {
  return rename(spec.renames, name);
}

std::string hubTensorName(const MultimodalSpec &spec, std::string_view name) {
  return rename(spec.hubNames, name);
}

} // namespace etllm::models
