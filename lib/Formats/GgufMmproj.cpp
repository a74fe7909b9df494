//===- GgufMmproj.cpp - A GGUF text model and its llama.cpp mmproj --------===//
//
// llama.cpp keeps a LLaVA's or a Gemma 3's vision tower and projector in a
// second GGUF, the "mmproj" (tools/mtmd/clip.cpp reads it; for LLaVA-1.5 its
// legacy converter writes projector type "mlp", for Gemma 3 its converter
// "gemma3"). attachMmproj completes a GGUF
// text model with one: the clip.vision.* keys fill the config's vision
// fields (the same ones a Hugging Face LLaVA's vision_config fills), and
// its tensors are renamed to the canonical vision names
// (etllm/Models/Multimodal.h), so the graph and the serializer treat it as
// the Hugging Face checkpoint of the same weights.
//
// What the mmproj does not say is taken as llama.cpp's LLaVA graph takes
// it: the feature layer is clip.vision.feature_layer (else the layer
// before the last of the file's block_count), the class token is dropped,
// the projector is linear / GELU (erf) / linear with biases. The image
// processor recorded is CLIP's as transformers applies it (resize the
// shortest edge, center crop, bicubic, the file's mean and std); llama.cpp
// pads the image to a square instead, so its pixels for a non-square image
// differ. A GGUF vocabulary has no image token: an image's positions are
// bookkept with token 0, which is never embedded.
//
//===----------------------------------------------------------------------===//
#include "Internal.h"
#include "etllm/Formats/Gguf.h"
#include "etllm/Formats/ModelConfig.h"
#include "etllm/Models/Multimodal.h"

#include <nlohmann/json.hpp>

#include <cmath>
#include <regex>

namespace etllm::formats::detail {

namespace {

/// The canonical name of an mmproj tensor ("" when it is not one the LLaVA
/// graph reads). `swapFfn`: the file names fc1 ffn_down and fc2 ffn_up
/// (llama.cpp's legacy converter), detected from the shapes.
std::string canonicalName(const std::string &gguf, bool swapFfn) {
  const std::string tower = std::string(models::kVisionTowerPath) + ".";
  const std::string proj = std::string(models::kProjectorPath) + ".";
  static const std::pair<const char *, const char *> kTop[] = {
      {"v.class_embd", "embeddings.class_embedding"},
      {"v.patch_embd.weight", "embeddings.patch_embedding.weight"},
      {"v.patch_embd.bias", "embeddings.patch_embedding.bias"},
      {"v.position_embd.weight", "embeddings.position_embedding.weight"},
      {"v.pre_ln.weight", "pre_layrnorm.weight"},
      {"v.pre_ln.bias", "pre_layrnorm.bias"},
      {"v.post_ln.weight", "post_layernorm.weight"},
      {"v.post_ln.bias", "post_layernorm.bias"},
  };
  for (auto [from, to] : kTop)
    if (gguf == from)
      return tower + to;
  if (gguf == "mm.model.fc.weight") // SmolVLM's / Idefics3's connector
    return proj + "modality_projection.proj.weight";
  if (gguf == "mm.input_projection.weight") // Gemma 3's
    return proj + "mm_input_projection_weight";
  if (gguf == "mm.soft_emb_norm.weight")
    return proj + "mm_soft_emb_norm.weight";
  static const std::regex kProj(R"(mm\.(0|2)\.(weight|bias))");
  std::smatch m;
  if (std::regex_match(gguf, m, kProj))
    return proj + (m[1] == "0" ? "linear_1." : "linear_2.") + m[2].str();
  static const std::regex kBlock(
      R"(v\.blk\.(0|[1-9][0-9]{0,3})\.([a-z_0-9]+)\.(weight|bias))");
  if (!std::regex_match(gguf, m, kBlock))
    return "";
  const std::string part = m[2];
  static const std::pair<const char *, const char *> kParts[] = {
      {"attn_q", "self_attn.q_proj"},   {"attn_k", "self_attn.k_proj"},
      {"attn_v", "self_attn.v_proj"},   {"attn_out", "self_attn.out_proj"},
      {"ln1", "layer_norm1"},           {"ln2", "layer_norm2"},
      {"ffn_up", "mlp.fc1"},            {"ffn_down", "mlp.fc2"},
  };
  for (auto [from, to] : kParts)
    if (part == from) {
      std::string hf = to;
      if (swapFfn && hf == "mlp.fc1")
        hf = "mlp.fc2";
      else if (swapFfn && hf == "mlp.fc2")
        hf = "mlp.fc1";
      return tower + "encoder.layers." + m[1].str() + "." + hf + "." +
             m[3].str();
    }
  return "";
}

} // namespace

namespace {
Status readLlavaMmproj(const Checkpoint &v, const std::string &path,
                       ModelConfig &c);
Status readGemma3Mmproj(const Checkpoint &v, const Checkpoint &text,
                        const models::MultimodalSpec &spec,
                        const std::string &path, ModelConfig &c);
Status readIdefics3Mmproj(const Checkpoint &v, const Checkpoint &text,
                          const models::MultimodalSpec &spec,
                          const std::string &path, ModelConfig &c);
Result<std::unique_ptr<Checkpoint>>
finishMmproj(std::unique_ptr<Checkpoint> text, const Checkpoint &v,
             ModelConfig c);
} // namespace

Result<std::unique_ptr<Checkpoint>>
attachMmproj(std::unique_ptr<Checkpoint> text, const std::string &path) {
  Result<std::unique_ptr<Checkpoint>> mm = openGgufMmproj(path);
  if (!mm)
    return mm.error();
  const Checkpoint &v = **mm;
  auto key = [&](const std::string &k) { return v.metadata(k); };
  auto error = [&](const std::string &k, const std::string &what) {
    return Error(path + ": metadata key '" + k + "': " + what);
  };
  auto uintKey = [&](const std::string &k, int64_t lo,
                     int64_t hi) -> Result<int64_t> {
    const GgufValue *x = key(k);
    if (!x)
      return error(k, "required key is missing");
    std::optional<uint64_t> u = x->toUInt();
    if (!u || *u < uint64_t(lo) || *u > uint64_t(hi))
      return error(k, "expected an integer in [" + std::to_string(lo) +
                          ", " + std::to_string(hi) + "]");
    return int64_t(*u);
  };
  auto floatList = [&](const std::string &k) -> Result<std::vector<double>> {
    const GgufValue *x = key(k);
    const GgufArray *a = x ? x->toArray() : nullptr;
    if (!a || a->values.size() != 3)
      return error(k, "expected 3 numbers");
    std::vector<double> out;
    for (const GgufValue &e : a->values) {
      std::optional<double> d = e.toFloat();
      if (!d || !std::isfinite(*d))
        return error(k, "expected 3 finite numbers");
      out.push_back(*d);
    }
    return out;
  };

  const GgufValue *proj = key("clip.projector_type");
  const models::MultimodalSpec *spec =
      proj && proj->toString()
          ? models::findMultimodalByGgufProjector(*proj->toString())
          : nullptr;
  if (!spec)
    return error("clip.projector_type",
                 std::string(proj && proj->toString()
                                 ? "'" + *proj->toString() + "'"
                                 : "missing") +
                     " is not supported (LLaVA's 'mlp', Gemma 3's "
                     "'gemma3', SmolVLM's 'idefics3')");
  const bool gemma3 = spec->projector == models::VisionProjector::Gemma3;
  const bool shuffle =
      spec->projector == models::VisionProjector::PixelShuffle;
  if (const GgufValue *h = key("clip.has_vision_encoder");
      h && !h->toBool().value_or(false))
    return error("clip.has_vision_encoder", "false: no vision tower");

  ModelConfig c = text->config();
  c.multimodalType = spec->modelType;
  // Projector type mlp: LLaVA-1.5's CLIP tower; gemma3 and idefics3: a
  // SigLIP(-like) one.
  c.visionArch = gemma3 || shuffle ? "siglip" : "clip";
  ETLLM_ASSIGN_OR_RETURN(c.visionHiddenSize,
                         uintKey("clip.vision.embedding_length", 1,
                                 kMaxConfigDim));
  ETLLM_ASSIGN_OR_RETURN(c.visionIntermediateSize,
                         uintKey("clip.vision.feed_forward_length", 1,
                                 kMaxConfigDim));
  ETLLM_ASSIGN_OR_RETURN(c.visionNumLayers,
                         uintKey("clip.vision.block_count", 1, 1024));
  ETLLM_ASSIGN_OR_RETURN(c.visionNumHeads,
                         uintKey("clip.vision.attention.head_count", 1, 1024));
  ETLLM_ASSIGN_OR_RETURN(c.visionImageSize,
                         uintKey("clip.vision.image_size", 1, 4096));
  ETLLM_ASSIGN_OR_RETURN(c.visionPatchSize,
                         uintKey("clip.vision.patch_size", 1, 4096));
  c.visionLayerNormEps = gemma3 ? 1e-6 : 1e-5; // the converters' defaults
  if (const GgufValue *e = key("clip.vision.attention.layer_norm_epsilon")) {
    std::optional<double> d = e->toFloat();
    if (!d || !std::isfinite(*d) || *d < 0)
      return error("clip.vision.attention.layer_norm_epsilon",
                   "expected a finite non-negative number");
    c.visionLayerNormEps = *d;
  }
  bool gelu = false;
  if (const GgufValue *g = key("clip.use_gelu"))
    gelu = g->toBool().value_or(false);
  if (const GgufValue *s = key("clip.use_silu");
      s && s->toBool().value_or(false))
    return error("clip.use_silu", "a SiLU tower is not supported");
  c.visionHiddenAct = gelu ? "gelu" : "quick_gelu";
  if ((gemma3 || shuffle) && !gelu)
    return error("clip.use_gelu",
                 std::string("false: ") + spec->hfArchitecture +
                     "'s tower uses GELU");
  applyCompositeTraits(*spec, c);
  if (gemma3) { // SigLIP's GELU (tanh), as clip.cpp's ggml_gelu
    c.visionHiddenAct = "gelu_pytorch_tanh";
    ETLLM_RETURN_IF_ERROR(readGemma3Mmproj(v, *text, *spec, path, c));
  } else if (shuffle) {
    c.visionHiddenAct = "gelu_pytorch_tanh";
    ETLLM_RETURN_IF_ERROR(readIdefics3Mmproj(v, *text, *spec, path, c));
  } else {
    ETLLM_RETURN_IF_ERROR(readLlavaMmproj(v, path, c));
  }
  if (c.visionImageSize % c.visionPatchSize != 0)
    return error("clip.vision.patch_size",
                 std::to_string(c.visionPatchSize) + " does not divide the "
                                                     "image size " +
                     std::to_string(c.visionImageSize));
  c.imageSeqLen = c.visionFeatures();
  std::vector<double> mean, stdev;
  ETLLM_ASSIGN_OR_RETURN(mean, floatList("clip.vision.image_mean"));
  ETLLM_ASSIGN_OR_RETURN(stdev, floatList("clip.vision.image_std"));
  for (double s : stdev)
    if (s <= 0)
      return error("clip.vision.image_std", "must be positive");
  // CLIP's processor (resize the shortest edge, center crop, bicubic),
  // Gemma 3's (resize to the square, bilinear) or SmolVLM's (the longest
  // edge to clip.vision.preproc_image_size, tiles of the tower's size and
  // the global image, Lanczos; llama.cpp slices images its own way).
  int64_t longest = c.visionImageSize;
  if (shuffle)
    if (const GgufValue *p = key("clip.vision.preproc_image_size")) {
      std::optional<uint64_t> u = p->toUInt();
      if (!u || *u < 1 || *u > 16384)
        return error("clip.vision.preproc_image_size",
                     "expected an integer in [1, 16384]");
      longest = int64_t(*u);
    }
  nlohmann::json pre =
      shuffle ? nlohmann::json{{"do_resize", true},
                               {"size", {{"longest_edge", longest}}},
                               {"max_image_size",
                                {{"longest_edge", c.visionImageSize}}},
                               {"do_image_splitting", true},
                               {"resample", 1}}
      : gemma3 ? nlohmann::json{{"do_resize", true},
                              {"size",
                               {{"height", c.visionImageSize},
                                {"width", c.visionImageSize}}},
                              {"resample", 2}}
             : nlohmann::json{{"do_resize", true},
                              {"size", {{"shortest_edge", c.visionImageSize}}},
                              {"resample", 3},
                              {"do_center_crop", true},
                              {"crop_size",
                               {{"height", c.visionImageSize},
                                {"width", c.visionImageSize}}}};
  pre["do_rescale"] = true;
  pre["rescale_factor"] = 1.0 / 255.0;
  pre["do_normalize"] = true;
  pre["image_mean"] = mean;
  pre["image_std"] = stdev;
  c.imagePreprocessor = pre.dump(2);
  if (Status s = validate(c); !s.ok())
    return Error(path + ": " + s.message());
  return finishMmproj(std::move(text), v, std::move(c));
}

namespace {

/// Projector type mlp (LLaVA-1.5): the feature layer, the class token
/// dropped, linear / GELU / linear with biases, no image token.
Status readLlavaMmproj(const Checkpoint &v, const std::string &path,
                       ModelConfig &c) {
  auto error = [&](const std::string &k, const std::string &what) {
    return Error(path + ": metadata key '" + k + "': " + what);
  };
  c.visionLayersUsed = c.visionNumLayers - 1;
  if (const GgufValue *f = v.metadata("clip.vision.feature_layer")) {
    const GgufArray *a = f->toArray();
    std::optional<int64_t> layer =
        a && a->values.size() == 1 ? a->values[0].toInt() : std::nullopt;
    if (!layer)
      return error("clip.vision.feature_layer",
                   "expected one layer (several feature layers are not "
                   "supported)");
    c.visionLayersUsed = *layer;
  }
  if (c.visionLayersUsed < 1 || c.visionLayersUsed > c.visionNumLayers)
    return error("clip.vision.feature_layer",
                 std::to_string(c.visionLayersUsed) +
                     " is not a layer of the file's " +
                     std::to_string(c.visionNumLayers));
  c.visionDropClassToken = true;
  c.projectorHiddenAct = "gelu";
  c.projectorBias = true;
  c.imageTokenId = 0;
  return Status();
}

/// The id of `token` in the GGUF text model's vocabulary (-1: absent).
int64_t vocabularyId(const Checkpoint &text, const char *token) {
  const GgufValue *tokens = text.metadata("tokenizer.ggml.tokens");
  const GgufArray *a = tokens ? tokens->toArray() : nullptr;
  if (!a || !token)
    return -1;
  for (size_t i = 0; i < a->values.size(); ++i)
    if (const std::string *s = a->values[i].toString(); s && *s == token)
      return int64_t(i);
  return -1;
}

/// clip.vision.projector.scale_factor (`fallback` when absent, at most
/// `hi`): the side of the blocks of patches one feature comes from (Gemma
/// 3's pool, SmolVLM's pixel shuffle); it must divide the patches of a
/// side.
Result<int64_t> gridFactor(const Checkpoint &v, const ModelConfig &c,
                           int64_t fallback, int64_t hi,
                           const std::string &path) {
  const char *key = "clip.vision.projector.scale_factor";
  int64_t factor = fallback;
  if (const GgufValue *f = v.metadata(key)) {
    std::optional<uint64_t> u = f->toUInt();
    if (!u || *u < 1 || *u > uint64_t(hi))
      return Error(path + ": metadata key '" + key +
                   "': expected an integer in [1, " + std::to_string(hi) +
                   "]");
    factor = int64_t(*u);
  }
  if (c.visionPatchSize > 0 && c.visionImageSize % c.visionPatchSize == 0 &&
      (c.visionImageSize / c.visionPatchSize) % factor != 0)
    return Error(path + ": metadata key '" + key + "': " +
                 std::to_string(factor) + " does not divide the " +
                 std::to_string(c.visionImageSize / c.visionPatchSize) +
                 " patches of a side");
  return factor;
}

/// Projector type gemma3: every layer, post_layernorm, the pool of
/// clip.vision.projector.scale_factor (clip.cpp's default 4), the image's
/// boi/eoi tokens from the text model's vocabulary, the soft token the
/// placeholder (else token 0, never embedded).
Status readGemma3Mmproj(const Checkpoint &v, const Checkpoint &text,
                        const models::MultimodalSpec &spec,
                        const std::string &path, ModelConfig &c) {
  ETLLM_ASSIGN_OR_RETURN(c.visionPool, gridFactor(v, c, 4, 4096, path));
  c.imageBeginTokenId = vocabularyId(text, spec.imageBeginToken);
  c.imageEndTokenId = vocabularyId(text, spec.imageEndToken);
  for (auto [name, id] : {std::pair{spec.imageBeginToken, c.imageBeginTokenId},
                          std::pair{spec.imageEndToken, c.imageEndTokenId}})
    if (id < 0)
      return Error(path + ": the text model's vocabulary has no '" +
                   std::string(name) + "' token (Gemma 3's image wrapping)");
  c.imageTokenId = std::max<int64_t>(vocabularyId(text, spec.imageToken), 0);
  return Status();
}

/// Projector type idefics3 (SmolVLM, Idefics3): every layer and post_ln,
/// the pixel shuffle of clip.vision.projector.scale_factor (the
/// converter's default 2), the processor's wrapping of an image and its
/// tiles (its tokens are text the program's tokenizer reads), the "<image>"
/// token of the text model's vocabulary the placeholder (else 0).
Status readIdefics3Mmproj(const Checkpoint &v, const Checkpoint &text,
                          const models::MultimodalSpec &spec,
                          const std::string &path, ModelConfig &c) {
  ETLLM_ASSIGN_OR_RETURN(c.visionPixelShuffle, gridFactor(v, c, 2, 64, path));
  c.imageTokenId = std::max<int64_t>(vocabularyId(text, spec.imageToken), 0);
  return Status();
}

/// The text model with the mmproj's files and tensors added under their
/// canonical names, and the config `c`.
Result<std::unique_ptr<Checkpoint>>
finishMmproj(std::unique_ptr<Checkpoint> text, const Checkpoint &v,
             ModelConfig c) {
  // fc1 is [F, D]: a file whose ffn_down has F rows names them the other way
  // round.
  bool swapFfn = false;
  if (const TensorRef *down = v.find("v.blk.0.ffn_down.weight"))
    swapFfn = !down->shape.empty() &&
              down->shape[0] == c.visionIntermediateSize &&
              c.visionIntermediateSize != c.visionHiddenSize;
  CheckpointBuilder b(std::move(text));
  for (const std::shared_ptr<rt::MappedFile> &f : v.files())
    b.addFile(f);
  for (const TensorRef &t : v.tensors()) {
    std::string name = canonicalName(t.name, swapFfn);
    if (name.empty())
      continue; // tensors other graphs read (v.post_ln of other towers, ...)
    TensorRef r = t;
    r.name = name;
    ETLLM_RETURN_IF_ERROR(b.addTensor(std::move(r)));
  }
  b.setConfig(std::move(c));
  return b.finish();
}

} // namespace

} // namespace etllm::formats::detail
