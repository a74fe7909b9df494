//===- ModelConfig.h - Normalized decoder-only LLM config -------*- C++ -*-===//
//
// One struct that says everything a graph builder needs to emit the Hugging
// Face modeling code of a supported family, whichever checkpoint format it
// came from. The families, and how each one's config.json and GGUF metadata
// map onto these fields, are the specs of etllm/Models/Registry.h.
//
//===----------------------------------------------------------------------===//
#ifndef ETLLM_FORMATS_MODEL_CONFIG_H
#define ETLLM_FORMATS_MODEL_CONFIG_H

#include "etllm/Models/Family.h"
#include "etllm/runtime/result.h"

#include <cstdint>
#include <string>
#include <vector>

namespace etllm::formats {

// The members of RopeScaling and ModelConfig are generated from their
// declarations in etllm/Models/ModelConfig.td (one record per field: key,
// member, type, default, documentation); see docs/AddingAModel.md, "Adding
// a config field".

/// RoPE frequency scaling (HF `rope_scaling`).
struct RopeScaling {
#define GET_ROPE_SCALING_MEMBERS
#include "etllm/Models/ModelConfig.h.inc"
};

/// The normalized configuration.
struct ModelConfig {
#define GET_MODEL_CONFIG_MEMBERS
#include "etllm/Models/ModelConfig.h.inc"

  /// Number of rotated dimensions per head: floor(headDim * partial) rounded
  /// down to even.
  int64_t rotaryDim() const;
  /// The attention softmax scale HF uses (MLA: (qk_nope + qk_rope)^-0.5,
  /// times the YaRN mscale(factor, mscale_all_dim)^2).
  double attentionScale() const;
  /// The intermediate size of one routed expert.
  int64_t expertIntermediateSize() const {
    return moeIntermediateSize > 0 ? moeIntermediateSize : intermediateSize;
  }
  /// True when layer `i` has the sparse MoE block.
  bool isMoeLayer(int64_t i) const {
    return i >= 0 && i < static_cast<int64_t>(layerIsMoe.size()) &&
           layerIsMoe[static_cast<size_t>(i)];
  }
  /// True when some layer has the sparse MoE block (the model "has
  /// experts"; only then does #etllm.model_config carry the MoE fields).
  bool hasMoeLayers() const {
    for (bool b : layerIsMoe)
      if (b)
        return true;
    return false;
  }
  /// The factor cos and sin are multiplied by (YaRN's attention scaling;
  /// 1 for every other rope).
  double ropeAttentionFactor() const;
  /// True for a vision encoder composed with this decoder (LLaVA).
  bool hasVision() const { return !multimodalType.empty(); }
  /// The features (positions in the text) the vision tower gives an image:
  /// its patches, CLIP's class token, less the first feature when the
  /// `default` strategy drops it (what image_seq_len must be).
  int64_t visionFeatures() const;
  /// True for a Multi-head Latent Attention config.
  bool isMla() const { return kvLoraRank > 0; }
  /// MLA: qk_nope_head_dim + qk_rope_head_dim.
  int64_t qkHeadDim() const { return qkNopeHeadDim + headDim; }
  /// Every eos id, first one the primary.
  int64_t primaryEosTokenId() const {
    return eosTokenIds.empty() ? -1 : eosTokenIds.front();
  }
};

/// Supported HF architectures, for messages: "LlamaForCausalLM, ...".
std::string supportedArchitectures();

/// The family of config.architecture (or, when empty, of config.modelType),
/// or null when no family has it (etllm/Models/Registry.h).
const models::FamilySpec *familyOf(const ModelConfig &config);

/// Sets the trait fields (fusedQkv, ...) from the family of
/// config.architecture and the matching modelType. Errors for unsupported
/// architectures.
rt::Status applyArchitectureTraits(ModelConfig &config);

/// Parses a Hugging Face config.json. Unknown architecture, a missing required
/// key, a wrong JSON type or a nonsensical value gives an error naming the
/// file and the key. Accepts both the transformers 4.x keys (rope_theta,
/// rope_scaling, torch_dtype) and 5.x (rope_parameters, dtype).
rt::Result<ModelConfig> parseHfConfig(const std::string &configJsonPath);

/// Same, from JSON text; `sourceName` is used in messages.
rt::Result<ModelConfig> parseHfConfigText(const std::string &jsonText,
                                          const std::string &sourceName);

/// Checks internal consistency (positive sizes <= 1e7, heads divisible by kv
/// heads, even rotary dimension, per-layer vectors sized numLayers, ...).
rt::Status validate(const ModelConfig &config);

/// The config.json transformers would write for this config (sorted keys,
/// 2-space indent, the keys of that architecture's config class).
rt::Result<std::string> toHfConfigJson(const ModelConfig &config);

/// The config as a JSON object with one key per field (the keys of
/// etllm/Models/ModelConfig.td; rope_scaling a nested object). Not a
/// config.json: toHfConfigJson writes those.
std::string modelConfigFieldsJson(const ModelConfig &config);

/// A config from such an object (`sourceName` in messages): absent keys keep
/// their defaults; an unknown key or a value of the wrong JSON type is an
/// error naming the key. What the readers derive and the object leaves out
/// is derived the same way: the traits of the architecture's family, no
/// sliding layers and the family's sparse layers. The result is validated.
rt::Result<ModelConfig> modelConfigFromFieldsJson(const std::string &jsonText,
                                                  const std::string &sourceName);

/// A tensor an architecture needs.
struct ExpectedTensor {
  std::string name;
  std::vector<int64_t> shape;
  /// An RMSNorm weight (initialized around 1, or 0 for (1 + w) norms).
  bool isNorm = false;
  /// A bias vector.
  bool isBias = false;
  /// A tensor the graph never reads that the format's files may leave out
  /// (a LLaVA tower's post_layernorm: llama.cpp's mmproj has none).
  bool optional = false;
};

/// Every tensor (HF name and shape) the HF modeling code of config's
/// architecture loads, in HF order: embed_tokens, layers..., norm, lm_head
/// (only when untied).
rt::Result<std::vector<ExpectedTensor>>
expectedTensors(const ModelConfig &config);

/// The RoPE inverse frequencies (rotaryDim()/2 values) HF computes for this
/// config, including linear/llama3 scaling or GGUF freqFactors.
std::vector<double> ropeInverseFrequencies(const ModelConfig &config);

/// llama.cpp's rope_freqs factors for llama3 scaling (what its converter
/// writes), computed with `originalContext` as the old context length.
std::vector<float> llama3RopeFreqFactors(const ModelConfig &config,
                                         int64_t originalContext);

} // namespace etllm::formats

#endif // ETLLM_FORMATS_MODEL_CONFIG_H
