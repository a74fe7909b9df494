//===- Multimodal.h - Vision encoders composed with a decoder ---*- C++ -*-===//
//
// A composite model (LLaVA, Gemma 3) is a decoder of the family registry plus a vision
// tower and a projector. Its spec says how its config.json nests the text
// model (`text_config`) and the tower (`vision_config`), and how its
// checkpoints name their tensors: the decoder's under a prefix that differs
// between transformers versions, mapped here onto the family's own names
// (model.layers.0...), so the decoder's graph and the GGUF/HF paths of the
// family apply unchanged. No LLVM/MLIR.
//
//===----------------------------------------------------------------------===//
#ifndef ETLLM_MODELS_MULTIMODAL_H
#define ETLLM_MODELS_MULTIMODAL_H

#include <string>
#include <string_view>
#include <vector>

namespace etllm::models {

/// A tensor-name prefix of a checkpoint and the canonical prefix it maps to.
struct TensorRename {
  const char *from;
  const char *to;
};

/// How the tower's features become decoder embeddings.
enum class VisionProjector {
  /// LlavaMultiModalProjector: linear_1, activation, linear_2.
  LlavaMlp,
  /// Gemma3MultiModalProjector: an average pool over the patch grid,
  /// mm_soft_emb_norm (RMSNorm, x * (1 + w)), a matmul by
  /// mm_input_projection_weight [vision hidden, hidden].
  Gemma3,
  /// Idefics3Connector / SmolVLMConnector: a pixel shuffle of scale_factor
  /// (each s x s block of patches one feature of s*s*d channels), then
  /// modality_projection.proj without a bias.
  PixelShuffle,
};

struct MultimodalSpec {
  /// config.json's top-level model_type ("llava") and class.
  const char *modelType;
  const char *hfArchitecture;
  /// etllm-gen-checkpoint's --arch for it.
  const char *generatorArch;
  /// text_config's model_type when it has none (the decoder family).
  const char *textModelType;
  VisionProjector projector;
  /// The projector's module class.
  const char *projectorClass;
  /// llama.cpp's mmproj `clip.projector_type` of it (null: not read).
  const char *ggufProjectorType;
  /// The tokens its vocabulary names the image placeholder and (null: none)
  /// the tokens around an image, as a GGUF text model's vocabulary spells
  /// them (the mmproj reader looks them up there).
  const char *imageToken;
  const char *imageBeginToken;
  const char *imageEndToken;
  /// The text its processor puts around an image (outside the begin/end
  /// tokens) and, for an image split into tiles, before each tile ("{row}"
  /// "{col}" 1-based), after each row and after the last row ("" none).
  const char *imageTextBefore = "";
  const char *imageTextAfter = "";
  const char *tileText = "";
  const char *rowEndText = "";
  const char *tilesEndText = "";
  /// The towers supported: vision_config.model_type and the
  /// ModelConfig::visionArch spelling of each.
  std::vector<TensorRename> towers;
  /// First match wins; a tensor that matches none keeps its name.
  std::vector<TensorRename> renames;
  /// Canonical prefixes to the names the hub's checkpoints use (what the
  /// generator writes).
  std::vector<TensorRename> hubNames;
};

/// The canonical module paths of the tower and the projector.
inline constexpr const char kVisionTowerPath[] = "vision_tower";
inline constexpr const char kProjectorPath[] = "multi_modal_projector";

const MultimodalSpec *findMultimodalByModelType(std::string_view modelType);
const MultimodalSpec *
findMultimodalByGeneratorArch(std::string_view generatorArch);
/// The spec of an mmproj's clip.projector_type (null: none).
const MultimodalSpec *findMultimodalByGgufProjector(std::string_view type);
/// "llava, gemma3-vision".
std::string multimodalGeneratorArchs();
const MultimodalSpec *
findMultimodalByArchitecture(std::string_view hfArchitecture);
/// "LlavaForConditionalGeneration, ...".
std::string supportedMultimodalArchitectures();
/// `name` with its prefix renamed by the spec's table.
std::string canonicalTensorName(const MultimodalSpec &spec,
                                std::string_view name);

/// vision_config.model_type of the tower `visionArch` (null: not one of
/// the spec's).
const char *towerModelType(const MultimodalSpec &spec,
                           std::string_view visionArch);
/// A canonical `name` as the hub's checkpoints spell it.
std::string hubTensorName(const MultimodalSpec &spec, std::string_view name);

} // namespace etllm::models

#endif // ETLLM_MODELS_MULTIMODAL_H
