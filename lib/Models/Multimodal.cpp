//===- Multimodal.cpp - Vision encoders composed with a decoder -----------===//
//
// LLaVA (LlavaForConditionalGeneration) as transformers writes it. Hub
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

const std::vector<MultimodalSpec> &specs() {
  static const std::vector<MultimodalSpec> all = {
      {"llava",
       "LlavaForConditionalGeneration",
       {{"clip_vision_model", "clip"}, {"siglip_vision_model", "siglip"}},
       {
           {"language_model.model.", "model."},
           {"language_model.lm_head.", "lm_head."},
           {"model.language_model.", "model."},
           {"model.vision_tower.vision_model.", "vision_tower."},
           {"model.vision_tower.", "vision_tower."},
           {"vision_tower.vision_model.", "vision_tower."},
           {"model.multi_modal_projector.", "multi_modal_projector."},
       },
       {
           {"model.", "language_model.model."},
           {"lm_head.", "language_model.lm_head."},
           {"vision_tower.", "vision_tower.vision_model."},
       }},
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
