//===- HfVisionConfig.cpp - A vision encoder composed with a decoder ------===//
//
// A composite model's config.json (LLaVA, Gemma 3, SmolVLM / Idefics3:
// etllm/Models/Multimodal.h): the decoder's `text_config` goes through the
// family reader as any text config does; the vision tower's `vision_config`
// and the top-level keys of the composite class fill the `vision` fields of
// ModelConfig (what every checkpoint of the class shares comes from its
// spec: applyCompositeTraits). Also the tensors such a checkpoint holds
// beside the decoder's, the rules between the vision fields, and the
// config.json the generator writes. Defaults are those of transformers'
// configs of each class; every error names the file and the key.
//
//===----------------------------------------------------------------------===//
#include "Internal.h"
#include "etllm/Formats/ModelConfig.h"
#include "etllm/Models/Multimodal.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <limits>

namespace etllm::formats::detail {

using json = nlohmann::json;
using models::MultimodalSpec;

namespace {

/// Typed reads of one JSON object's keys; errors name `where` and the key.
class Keys {
public:
  Keys(const json &object, std::string where)
      : o_(object), where_(std::move(where)) {}

  Error error(const std::string &key, const std::string &what) const {
    return Error(where_ + ": key '" + key + "': " + what);
  }
  const json *get(const std::string &key) const {
    auto it = o_.find(key);
    return it == o_.end() || it->is_null() ? nullptr : &*it;
  }
  Result<int64_t> integer(const std::string &key, int64_t fallback,
                          int64_t lo, int64_t hi) const {
    const json *v = get(key);
    if (!v)
      return fallback;
    if (!v->is_number_integer())
      return error(key, std::string("expected an integer, got ") +
                            v->type_name());
    if (v->is_number_unsigned() &&
        v->get<uint64_t>() > uint64_t(std::numeric_limits<int64_t>::max()))
      return error(key, "out of range");
    int64_t x = v->get<int64_t>();
    if (x < lo || x > hi)
      return error(key, std::to_string(x) + " is outside [" +
                            std::to_string(lo) + ", " + std::to_string(hi) +
                            "]");
    return x;
  }
  Result<double> real(const std::string &key, double fallback) const {
    const json *v = get(key);
    if (!v)
      return fallback;
    if (!v->is_number() || !std::isfinite(v->get<double>()) ||
        v->get<double>() < 0)
      return error(key, "expected a finite non-negative number");
    return v->get<double>();
  }
  Result<std::string> string(const std::string &key,
                             const std::string &fallback) const {
    const json *v = get(key);
    if (!v)
      return fallback;
    if (!v->is_string())
      return error(key, std::string("expected a string, got ") +
                            v->type_name());
    return v->get<std::string>();
  }
  Result<bool> boolean(const std::string &key, bool fallback) const {
    const json *v = get(key);
    if (!v)
      return fallback;
    if (!v->is_boolean())
      return error(key, std::string("expected a boolean, got ") +
                            v->type_name());
    return v->get<bool>();
  }
  /// `key` must be one of `allowed`; names them otherwise.
  Result<std::string> choice(const std::string &key,
                             const std::string &fallback,
                             std::initializer_list<const char *> allowed) const {
    std::string s;
    ETLLM_ASSIGN_OR_RETURN(s, string(key, fallback));
    std::string list;
    for (const char *a : allowed) {
      if (s == a)
        return s;
      list += (list.empty() ? "" : ", ") + std::string(a);
    }
    return error(key, "'" + s + "' is not supported (supported: " + list + ")");
  }
  const json &object() const { return o_; }

private:
  const json &o_;
  std::string where_;
};

const MultimodalSpec *specOf(const json &root) {
  if (const json *a = root.contains("architectures") ? &root["architectures"]
                                                     : nullptr;
      a && a->is_array())
    for (const json &name : *a)
      if (name.is_string())
        if (auto *s = models::findMultimodalByArchitecture(
                name.get<std::string>()))
          return s;
  auto mt = root.find("model_type");
  if (mt != root.end() && mt->is_string())
    return models::findMultimodalByModelType(mt->get<std::string>());
  return nullptr;
}

Status readVisionTower(const Keys &v, const MultimodalSpec &spec,
                       ModelConfig &c) {
  // The first tower is LlavaConfig's default.
  std::string type, supported;
  ETLLM_ASSIGN_OR_RETURN(type, v.string("model_type", spec.towers[0].from));
  c.visionArch.clear();
  for (const models::TensorRename &t : spec.towers) {
    supported += (supported.empty() ? "" : ", ") + std::string(t.from);
    if (type == t.from)
      c.visionArch = t.to;
  }
  if (c.visionArch.empty())
    return v.error("model_type", "'" + type + "' is not supported for " +
                                     spec.hfArchitecture + " (supported: " +
                                     supported + ")");
  // The defaults of transformers' CLIPVisionConfig and SiglipVisionConfig.
  const bool clip = c.visionArch == "clip";
  ETLLM_ASSIGN_OR_RETURN(c.visionHiddenSize,
                         v.integer("hidden_size", 768, 1, kMaxConfigDim));
  ETLLM_ASSIGN_OR_RETURN(
      c.visionIntermediateSize,
      v.integer("intermediate_size", 3072, 1, kMaxConfigDim));
  ETLLM_ASSIGN_OR_RETURN(c.visionNumLayers,
                         v.integer("num_hidden_layers", 12, 1, 1024));
  ETLLM_ASSIGN_OR_RETURN(c.visionNumHeads,
                         v.integer("num_attention_heads", 12, 1, 1024));
  ETLLM_ASSIGN_OR_RETURN(c.visionImageSize,
                         v.integer("image_size", 224, 1, 4096));
  ETLLM_ASSIGN_OR_RETURN(c.visionPatchSize,
                         v.integer("patch_size", clip ? 32 : 16, 1, 4096));
  ETLLM_ASSIGN_OR_RETURN(c.visionLayerNormEps,
                         v.real("layer_norm_eps", clip ? 1e-5 : 1e-6));
  ETLLM_ASSIGN_OR_RETURN(
      c.visionHiddenAct,
      v.choice("hidden_act", clip ? "quick_gelu" : "gelu_pytorch_tanh",
               {"quick_gelu", "gelu", "gelu_pytorch_tanh"}));
  int64_t channels;
  ETLLM_ASSIGN_OR_RETURN(channels, v.integer("num_channels", 3, 1, 1024));
  if (channels != 3)
    return v.error("num_channels", std::to_string(channels) +
                                       " is not supported (RGB: 3)");
  return Status();
}

} // namespace

namespace {
Status readLlavaKeys(const Keys &top, ModelConfig &c);
Status readGemma3Keys(const Keys &top, ModelConfig &c);
Status readIdefics3Keys(const Keys &top, ModelConfig &c);
} // namespace

bool isMultimodalConfig(const std::string &jsonText) {
  try {
    json root = json::parse(jsonText);
    return root.is_object() && specOf(root);
  } catch (const json::exception &) {
    return false;
  }
}

Result<ModelConfig> parseMultimodalConfig(const std::string &jsonText,
                                          const std::string &source) {
  json root;
  try {
    root = json::parse(jsonText);
  } catch (const json::exception &e) {
    return Error(source + ": invalid JSON: " + e.what());
  }
  const MultimodalSpec *spec = specOf(root);
  if (!spec)
    return Error(source + ": not a composite model (supported: " +
                 models::supportedMultimodalArchitectures() + ")");
  Keys top(root, source);
  const json *text = top.get("text_config");
  if (!text || !text->is_object())
    return top.error("text_config", "missing or not an object (the decoder's "
                                    "configuration)");
  const json *vision = top.get("vision_config");
  if (!vision || !vision->is_object())
    return top.error("vision_config", "missing or not an object");
  if (specOf(*text))
    return top.error("text_config", "is itself a composite model");
  json textCopy = *text;
  if (!textCopy.contains("model_type")) // LlavaConfig's default: llama
    textCopy["model_type"] = spec->textModelType;
  ModelConfig c;
  ETLLM_ASSIGN_OR_RETURN(
      c, parseHfConfigText(textCopy.dump(), source + " (text_config)"));
  c.multimodalType = spec->modelType;
  ETLLM_RETURN_IF_ERROR(
      readVisionTower(Keys(*vision, source + " (vision_config)"), *spec, c));
  applyCompositeTraits(*spec, c);
  if (spec->projector == models::VisionProjector::Gemma3) {
    ETLLM_RETURN_IF_ERROR(readGemma3Keys(top, c));
  } else if (spec->projector == models::VisionProjector::PixelShuffle) {
    ETLLM_RETURN_IF_ERROR(readIdefics3Keys(top, c));
  } else {
    ETLLM_RETURN_IF_ERROR(readLlavaKeys(top, c));
  }
  Status s = validateVision(c);
  if (!s.ok())
    return Error(source + ": " + s.message());
  c.imageSeqLen = c.visionFeatures();
  if (top.get("image_seq_length")) {
    int64_t given;
    ETLLM_ASSIGN_OR_RETURN(given,
                           top.integer("image_seq_length", 0, 0, 1 << 24));
    if (given != c.imageSeqLen)
      return top.error("image_seq_length",
                       std::to_string(given) + " differs from the " +
                           std::to_string(c.imageSeqLen) +
                           " features the vision tower gives");
  }
  return c;
}

namespace {

/// LlavaConfig's keys: the feature layer and strategy, the projector.
Status readLlavaKeys(const Keys &top, ModelConfig &c) {
  // Which hidden state feeds the projector: hidden_states[k] is the output
  // of k layers (0: the embeddings), negative k counts from the end.
  if (const json *f = top.get("vision_feature_layer"); f && !f->is_number())
    return top.error("vision_feature_layer",
                     std::string("expected an integer, got ") +
                         f->type_name() + " (several feature layers are not "
                                          "supported)");
  int64_t layer;
  ETLLM_ASSIGN_OR_RETURN(layer, top.integer("vision_feature_layer", -2,
                                            -c.visionNumLayers - 1,
                                            c.visionNumLayers));
  c.visionLayersUsed = layer < 0 ? c.visionNumLayers + 1 + layer : layer;
  if (c.visionLayersUsed < 1)
    return top.error("vision_feature_layer",
                     std::to_string(layer) +
                         " selects the embeddings before any layer (not "
                         "supported)");
  std::string select;
  ETLLM_ASSIGN_OR_RETURN(select,
                         top.choice("vision_feature_select_strategy",
                                    "default", {"default", "full"}));
  c.visionDropClassToken = select == "default";
  ETLLM_ASSIGN_OR_RETURN(c.projectorHiddenAct,
                         top.choice("projector_hidden_act", "gelu", {"gelu"}));
  ETLLM_ASSIGN_OR_RETURN(c.projectorBias,
                         top.boolean("multimodal_projector_bias", true));
  const char *tokenKey =
      top.get("image_token_index") ? "image_token_index" : "image_token_id";
  ETLLM_ASSIGN_OR_RETURN(c.imageTokenId,
                         top.integer(tokenKey, 32000, 0, c.vocabSize - 1));
  return Status();
}

/// Gemma3Config's keys (its defaults): the tower's last hidden state after
/// post_layernorm, every patch, average-pooled to mm_tokens_per_image
/// (a square number whose side divides the patches of a side), the
/// boi/eoi tokens Gemma3Processor wraps an image in with two newlines on
/// either side, image positions attending each other both ways.
Status readGemma3Keys(const Keys &top, ModelConfig &c) {
  int64_t tokens;
  ETLLM_ASSIGN_OR_RETURN(tokens,
                         top.integer("mm_tokens_per_image", 256, 1, 1 << 20));
  const int64_t perSide = int64_t(std::llround(std::sqrt(double(tokens))));
  if (perSide * perSide != tokens)
    return top.error("mm_tokens_per_image",
                     std::to_string(tokens) + " is not a square number");
  if (c.visionPatchSize > 0 && c.visionImageSize % c.visionPatchSize == 0) {
    const int64_t patches = c.visionImageSize / c.visionPatchSize;
    if (patches % perSide != 0)
      return top.error("mm_tokens_per_image",
                       std::to_string(tokens) + " (" +
                           std::to_string(perSide) +
                           " a side) does not pool the tower's " +
                           std::to_string(patches) + " x " +
                           std::to_string(patches) + " patches evenly");
    c.visionPool = patches / perSide;
  }
  const int64_t last = c.vocabSize - 1;
  ETLLM_ASSIGN_OR_RETURN(c.imageBeginTokenId,
                         top.integer("boi_token_index", 255999, 0, last));
  ETLLM_ASSIGN_OR_RETURN(c.imageEndTokenId,
                         top.integer("eoi_token_index", 256000, 0, last));
  const char *tokenKey =
      top.get("image_token_index") ? "image_token_index" : "image_token_id";
  ETLLM_ASSIGN_OR_RETURN(c.imageTokenId,
                         top.integer(tokenKey, 262144, 0, last));
  return Status();
}

/// SmolVLMConfig's / Idefics3Config's keys: the tower's last hidden state
/// after post_layernorm, every patch, pixel-shuffled by scale_factor into
/// modality_projection.proj; the image wrapped as the processor does
/// (<fake_token_around_image><global-img>, the features,
/// <fake_token_around_image>; each tile of a split image after its
/// <fake_token_around_image><row_R_col_C>, a newline after each row, one
/// more before the global image).
Status readIdefics3Keys(const Keys &top, ModelConfig &c) {
  ETLLM_ASSIGN_OR_RETURN(c.visionPixelShuffle,
                         top.integer("scale_factor", 2, 1, 64));
  if (c.visionPatchSize > 0 && c.visionImageSize % c.visionPatchSize == 0) {
    const int64_t side = c.visionImageSize / c.visionPatchSize;
    if (side % c.visionPixelShuffle != 0)
      return top.error("scale_factor",
                       std::to_string(c.visionPixelShuffle) +
                           " does not divide the tower's " +
                           std::to_string(side) + " patches of a side");
  }
  ETLLM_ASSIGN_OR_RETURN(
      c.imageTokenId, top.integer("image_token_id", 128257, 0, c.vocabSize - 1));
  return Status();
}

} // namespace

/// The position ids SmolVLMVisionEmbeddings computes for a full image of n
/// patches a side (float32 coordinates i * (1/n) bucketized by
/// arange(1/n, 1, 1/n), right=True) are 0 .. n*n-1 only where i/n and the
/// boundary i/n round alike: certainly when n is a power of two (exact in
/// binary; SmolVLM's 512 / 16 = 32), not for every other n (torch gives
/// another bucket for n = 19, 25, 29, ...). The graph adds the learned
/// positions in order, so other grids are refused.
namespace {
bool positionBucketsAreTheIdentity(int64_t n) {
  return n > 0 && (n & (n - 1)) == 0;
}
} // namespace

void applyCompositeTraits(const models::MultimodalSpec &spec,
                          ModelConfig &c) {
  c.multimodalType = spec.modelType;
  c.imageTextBefore = spec.imageTextBefore;
  c.imageTextAfter = spec.imageTextAfter;
  c.imageTileText = spec.tileText;
  c.imageRowEndText = spec.rowEndText;
  c.imageTilesEndText = spec.tilesEndText;
  if (spec.projector == models::VisionProjector::LlavaMlp)
    return; // LLaVA's feature layer and strategy are its config's keys
  c.visionLayersUsed = c.visionNumLayers;
  c.visionDropClassToken = false;
  c.visionPostLayerNorm = true;
  c.projectorHiddenAct = "none";
  c.projectorBias = false;
  c.imageBidirectional = spec.projector == models::VisionProjector::Gemma3;
}

Status validateVision(const ModelConfig &c) {
  if (!c.hasVision())
    return Status();
  if (c.visionArch == "module") // a traced encoder: its IR was checked
    return c.imageTokenId >= 0 && c.imageTokenId < c.vocabSize
               ? Status()
               : Error("model.image_token_id " +
                       std::to_string(c.imageTokenId) +
                       " is not a token of the " +
                       std::to_string(c.vocabSize) + "-token vocabulary");
  if (c.visionHiddenSize % c.visionNumHeads != 0)
    return Error("vision_config.num_attention_heads " +
                 std::to_string(c.visionNumHeads) +
                 " does not divide hidden_size " +
                 std::to_string(c.visionHiddenSize));
  if (c.visionImageSize % c.visionPatchSize != 0)
    return Error("vision_config.patch_size " +
                 std::to_string(c.visionPatchSize) +
                 " does not divide image_size " +
                 std::to_string(c.visionImageSize));
  if (c.visionLayersUsed < 1 || c.visionLayersUsed > c.visionNumLayers)
    return Error("vision_feature_layer selects " +
                 std::to_string(c.visionLayersUsed) + " of " +
                 std::to_string(c.visionNumLayers) + " layers");
  if (c.visionPool > 1 &&
      (c.visionImageSize / c.visionPatchSize) % c.visionPool != 0)
    return Error("vision pool " + std::to_string(c.visionPool) +
                 " does not divide the " +
                 std::to_string(c.visionImageSize / c.visionPatchSize) +
                 " patches of a side");
  if (c.visionPixelShuffle > 0 &&
      !positionBucketsAreTheIdentity(c.visionImageSize / c.visionPatchSize))
    return Error("vision image_size / patch_size = " +
                 std::to_string(c.visionImageSize / c.visionPatchSize) +
                 " patches a side: SmolVLM's bucketized position ids are "
                 "exact only for a power of two (not supported)");
  if (c.visionPixelShuffle > 1 &&
      (c.visionImageSize / c.visionPatchSize) % c.visionPixelShuffle != 0)
    return Error("scale_factor " + std::to_string(c.visionPixelShuffle) +
                 " does not divide the " +
                 std::to_string(c.visionImageSize / c.visionPatchSize) +
                 " patches of a side");
  for (auto [key, id] : {std::pair{"boi_token_index", c.imageBeginTokenId},
                         std::pair{"eoi_token_index", c.imageEndTokenId}})
    if (id < -1 || id >= c.vocabSize)
      return Error(std::string(key) + " " + std::to_string(id) +
                   " is not a token of the " + std::to_string(c.vocabSize) +
                   "-token vocabulary");
  if (c.imageTokenId < 0 || c.imageTokenId >= c.vocabSize)
    return Error("image_token_index " + std::to_string(c.imageTokenId) +
                 " is not a token of the " + std::to_string(c.vocabSize) +
                 "-token vocabulary");
  return Status();
}

void appendVisionTensors(const ModelConfig &c,
                         std::vector<ExpectedTensor> &out) {
  // A traced encoder's tensors are its IR's parameters, not the config's.
  if (!c.hasVision() || c.visionArch == "module")
    return;
  const std::string tower = models::kVisionTowerPath;
  const std::string proj = models::kProjectorPath;
  const int64_t d = c.visionHiddenSize, f = c.visionIntermediateSize,
                p = c.visionPatchSize, side = c.visionImageSize / p;
  auto norm = [&](const std::string &path) {
    out.push_back({path + ".weight", {d}, true, false});
    out.push_back({path + ".bias", {d}, false, true});
  };
  auto linear = [&](const std::string &path, int64_t o, int64_t i,
                    bool bias) {
    out.push_back({path + ".weight", {o, i}, false, false});
    if (bias)
      out.push_back({path + ".bias", {o}, false, true});
  };
  const bool clip = c.visionArch == "clip";
  if (clip)
    out.push_back({tower + ".embeddings.class_embedding", {d}, false, true});
  out.push_back(
      {tower + ".embeddings.patch_embedding.weight", {d, 3, p, p}, false,
       false});
  if (!clip) // SigLIP's patch convolution has a bias
    out.push_back(
        {tower + ".embeddings.patch_embedding.bias", {d}, false, true});
  out.push_back({tower + ".embeddings.position_embedding.weight",
                 {side * side + (clip ? 1 : 0), d},
                 false,
                 false});
  if (clip)
    norm(tower + ".pre_layrnorm");
  for (int64_t i = 0; i < c.visionNumLayers; ++i) {
    std::string l = tower + ".encoder.layers." + std::to_string(i);
    for (const char *m : {"q_proj", "k_proj", "v_proj", "out_proj"})
      linear(l + ".self_attn." + m, d, d, true);
    norm(l + ".layer_norm1");
    linear(l + ".mlp.fc1", f, d, true);
    linear(l + ".mlp.fc2", d, f, true);
    norm(l + ".layer_norm2");
  }
  norm(tower + ".post_layernorm");
  if (!c.visionPostLayerNorm) // LLaVA's features come before it
    out[out.size() - 2].optional = out[out.size() - 1].optional = true;
  const MultimodalSpec *spec =
      models::findMultimodalByModelType(c.multimodalType);
  if (spec && spec->projector == models::VisionProjector::PixelShuffle) {
    const int64_t s = c.visionPixelShuffle;
    linear(proj + ".modality_projection.proj", c.hiddenSize, d * s * s,
           false);
    return;
  }
  if (spec && spec->projector == models::VisionProjector::Gemma3) {
    out.push_back({proj + ".mm_input_projection_weight",
                   {d, c.hiddenSize}, false, false});
    out.push_back({proj + ".mm_soft_emb_norm.weight", {d}, true, false});
    return;
  }
  linear(proj + ".linear_1", c.hiddenSize, d, c.projectorBias);
  linear(proj + ".linear_2", c.hiddenSize, c.hiddenSize, c.projectorBias);
}

Result<std::string> multimodalHfConfigJson(const ModelConfig &c,
                                           const std::string &textJson) {
  const MultimodalSpec *spec =
      models::findMultimodalByModelType(c.multimodalType);
  if (!spec)
    return Error("no composite model '" + c.multimodalType + "'");
  json text;
  try {
    text = json::parse(textJson);
  } catch (const json::exception &e) {
    return Error(std::string("internal: text config: ") + e.what());
  }
  json j;
  j["architectures"] = json::array({spec->hfArchitecture});
  j["model_type"] = spec->modelType;
  j["text_config"] = text;
  j["vision_config"] = {
      {"model_type", models::towerModelType(*spec, c.visionArch)},
      {"hidden_size", c.visionHiddenSize},
      {"intermediate_size", c.visionIntermediateSize},
      {"num_hidden_layers", c.visionNumLayers},
      {"num_attention_heads", c.visionNumHeads},
      {"image_size", c.visionImageSize},
      {"patch_size", c.visionPatchSize},
      {"layer_norm_eps", c.visionLayerNormEps},
      {"hidden_act", c.visionHiddenAct},
      {"num_channels", 3},
      {"projection_dim", c.visionHiddenSize},
  };
  if (c.visionArch == "siglip") // no attention-pooling head is written
    j["vision_config"]["vision_use_head"] = false;
  j["tie_word_embeddings"] = c.tieWordEmbeddings;
  if (spec->projector == models::VisionProjector::PixelShuffle) {
    j["scale_factor"] = c.visionPixelShuffle;
    j["image_token_id"] = c.imageTokenId;
    j["vision_config"].erase("projection_dim");
    j["vision_config"].erase("vision_use_head");
    return j.dump(2) + "\n";
  }
  if (spec->projector == models::VisionProjector::Gemma3) {
    const int64_t side = c.visionImageSize / c.visionPatchSize / c.visionPool;
    j["mm_tokens_per_image"] = side * side;
    j["boi_token_index"] = c.imageBeginTokenId;
    j["eoi_token_index"] = c.imageEndTokenId;
    j["image_token_index"] = c.imageTokenId;
    return j.dump(2) + "\n";
  }
  j["vision_feature_layer"] = c.visionLayersUsed - c.visionNumLayers - 1;
  j["vision_feature_select_strategy"] =
      c.visionDropClassToken ? "default" : "full";
  j["projector_hidden_act"] = c.projectorHiddenAct;
  j["multimodal_projector_bias"] = c.projectorBias;
  j["image_token_index"] = c.imageTokenId;
  j["image_seq_length"] = c.imageSeqLen;
  return j.dump(2) + "\n";
}

} // namespace etllm::formats::detail
