//===- HfConfigWriter.cpp - ModelConfig to Hugging Face config.json -------===//
//
// The config.json transformers would write: the common keys, then the
// family's (its spec's key rules, own keys and constant keys). A config
// its family cannot express is an error.
//
//===----------------------------------------------------------------------===//

#include "Internal.h"
#include "etllm/Formats/ModelConfig.h"
#include "etllm/Models/Registry.h"

#include <nlohmann/json.hpp>

#include <cmath>

namespace etllm::formats {

using json = nlohmann::json;
using models::FamilySpec;

Result<std::string> toHfConfigJson(const ModelConfig &config) {
  ModelConfig c = config;
  ETLLM_RETURN_IF_ERROR(applyArchitectureTraits(c));
  ETLLM_RETURN_IF_ERROR(validate(c));
  const FamilySpec &f = *familyOf(c);
  const models::HfConfigSpec &hf = f.hf;
  json j;
  j["architectures"] = json::array({c.architecture});
  j["model_type"] = c.modelType;
  j["vocab_size"] = c.vocabSize;
  j["hidden_size"] = c.hiddenSize;
  j["intermediate_size"] = c.intermediateSize;
  j["num_hidden_layers"] = c.numLayers;
  j["num_attention_heads"] = c.numHeads;
  j["num_key_value_heads"] = c.numKvHeads;
  j["max_position_embeddings"] = c.maxPositionEmbeddings;
  j["initializer_range"] = 0.02;
  j["rms_norm_eps"] = c.rmsNormEps;
  j["use_cache"] = true;
  j["rope_theta"] = c.ropeTheta;
  j["attention_dropout"] = 0.0;
  j["transformers_version"] = "4.51.3";
  j["torch_dtype"] = c.torchDtype.empty() ? json() : json(c.torchDtype);
  if (c.bosTokenId >= 0 || hf.bosTokenId >= 0)
    j["bos_token_id"] = c.bosTokenId >= 0 ? json(c.bosTokenId) : json();
  if (c.eosTokenIds.size() == 1)
    j["eos_token_id"] = c.eosTokenIds[0];
  else if (c.eosTokenIds.size() > 1)
    j["eos_token_id"] = c.eosTokenIds;
  else if (hf.eosTokenId >= 0)
    j["eos_token_id"] = json();
  if (c.padTokenId >= 0)
    j["pad_token_id"] = c.padTokenId;
  else if (hf.padTokenId >= 0)
    j["pad_token_id"] = json();
  // to_diff_dict writes tie_word_embeddings unless it equals both the base
  // default (true) and the class default.
  if (!(c.tieWordEmbeddings && hf.tieWordEmbeddings))
    j["tie_word_embeddings"] = c.tieWordEmbeddings;
  j[hf.activationWriteKey] = c.hiddenAct;

  bool defaultHeadDim = c.headDim * c.numHeads == c.hiddenSize;
  json ropeScaling;
  if (c.ropeScaling.type == "linear") {
    ropeScaling = {{"rope_type", "linear"}, {"factor", c.ropeScaling.factor}};
  } else if (c.ropeScaling.type == "yarn") {
    // DeepSeek's config.json spelling ("type"; its modeling code reads it).
    const RopeScaling &r = c.ropeScaling;
    ropeScaling = {
        {"type", "yarn"},
        {"factor", r.factor},
        {"original_max_position_embeddings", r.originalMaxPositionEmbeddings},
        {"beta_fast", r.betaFast},
        {"beta_slow", r.betaSlow},
        {"mscale", r.mscale},
        {"mscale_all_dim", r.mscaleAllDim}};
  } else if (c.ropeScaling.type == "llama3") {
    ropeScaling = {{"rope_type", "llama3"},
                   {"factor", c.ropeScaling.factor},
                   {"low_freq_factor", c.ropeScaling.lowFreqFactor},
                   {"high_freq_factor", c.ropeScaling.highFreqFactor},
                   {"original_max_position_embeddings",
                    c.ropeScaling.originalMaxPositionEmbeddings}};
  }
  auto requireUniformWindow = [&]() -> Status {
    for (bool b : c.layerUsesSlidingWindow)
      if (b != (c.slidingWindow > 0))
        return Error(c.architecture +
                     ": per-layer sliding windows cannot be expressed");
    return Status();
  };
  if (c.partialRotaryFactor != 1.0 && !hf.partialRotaryFactorKey)
    return Error(c.architecture + " has no partial_rotary_factor");
  if (!c.ropeScaling.type.empty() &&
      hf.ropeScaling == models::RopeScalingKey::Unsupported)
    return Error(c.architecture + ": rope scaling cannot be expressed");
  if (c.ropeScaling.type == "yarn" && !hf.yarnRopeScaling)
    return Error(c.architecture + " has no yarn rope scaling");

  // Sliding windows.
  json window = c.slidingWindow > 0 ? json(c.slidingWindow) : json();
  switch (hf.slidingWindow) {
  case models::SlidingWindowRule::None:
    if (c.slidingWindow != 0)
      return Error(c.architecture + " has no sliding window");
    break;
  case models::SlidingWindowRule::AllLayers:
    ETLLM_RETURN_IF_ERROR(requireUniformWindow());
    j["sliding_window"] = window;
    break;
  case models::SlidingWindowRule::EvenLayers:
    for (int64_t i = 0; i < c.numLayers; ++i)
      if (c.layerUsesSlidingWindow[static_cast<size_t>(i)] !=
          (c.slidingWindow > 0 && i % 2 == 0))
        return Error(c.architecture +
                     ": only even layers can use the sliding window");
    j["sliding_window"] = window;
    break;
  case models::SlidingWindowRule::Pattern:
    // The class's own pattern (sliding_window_pattern) and the list
    // transformers writes from it.
    for (int64_t i = 0; i < c.numLayers; ++i)
      if (c.layerUsesSlidingWindow[static_cast<size_t>(i)] !=
          (c.slidingWindow > 0 && (i + 1) % hf.slidingWindowPattern != 0))
        return Error(c.architecture + ": every " +
                     std::to_string(hf.slidingWindowPattern) +
                     "th layer is global, the others use the sliding window");
    j["sliding_window"] = window;
    j["sliding_window_pattern"] = hf.slidingWindowPattern;
    if (c.slidingWindow > 0) {
      json types = json::array();
      for (int64_t i = 0; i < c.numLayers; ++i)
        types.push_back(c.layerUsesSlidingWindow[static_cast<size_t>(i)]
                            ? "sliding_attention"
                            : "full_attention");
      j["layer_types"] = types;
    }
    break;
  case models::SlidingWindowRule::FromMaxWindowLayers: {
    int64_t firstSliding = c.numLayers;
    for (int64_t i = 0; i < c.numLayers; ++i)
      if (c.layerUsesSlidingWindow[static_cast<size_t>(i)]) {
        firstSliding = i;
        break;
      }
    for (int64_t i = firstSliding; i < c.numLayers; ++i)
      if (!c.layerUsesSlidingWindow[static_cast<size_t>(i)])
        return Error(c.architecture +
                     ": sliding layers must be a suffix of the layers");
    bool use = c.slidingWindow > 0 && firstSliding < c.numLayers;
    j["use_sliding_window"] = use;
    j["sliding_window"] = use ? json(c.slidingWindow) : json();
    j["max_window_layers"] = use ? firstSliding : c.numLayers;
    break;
  }
  }

  switch (hf.headDimKey) {
  case models::HeadDimKey::Always:
    j[hf.headDimKeyName] = c.headDim;
    break;
  case models::HeadDimKey::IfNotDefault:
    if (!defaultHeadDim)
      j[hf.headDimKeyName] = c.headDim;
    break;
  case models::HeadDimKey::Never:
    if (!defaultHeadDim)
      return Error(c.architecture + " requires head_dim * heads == hidden");
    break;
  }
  if (hf.ropeScaling == models::RopeScalingKey::Always ||
      (hf.ropeScaling == models::RopeScalingKey::IfSet &&
       !ropeScaling.is_null()))
    j["rope_scaling"] = ropeScaling;
  if (hf.partialRotaryFactorKey)
    j["partial_rotary_factor"] = c.partialRotaryFactor;
  if (hf.bias == models::BiasRule::AttentionBiasKey)
    j["attention_bias"] = c.attentionBias;
  if (hf.mlpBiasKey)
    j["mlp_bias"] = c.mlpBias;

  for (const models::ConfigKey &key : hf.keys) {
    if (key.type == models::KeyType::IntList) {
      j[key.hf] = *detail::listField(c, key.field);
      continue;
    }
    double v = detail::getField(c, key.field);
    if (key.type == models::KeyType::Bool) {
      j[key.hf] = v != 0;
      continue;
    }
    if (key.type == models::KeyType::Choice) {
      size_t i = static_cast<size_t>(v);
      if (i >= key.choices.size())
        return Error(c.architecture + ": no value of '" + key.hf + "' for " +
                     std::to_string(i));
      j[key.hf] = key.choices[i];
      continue;
    }
    if (v == 0)
      v = detail::fallbackValue(c, key.fallback);
    if (key.writeZeroAsNull && v == 0)
      j[key.hf] = json();
    else if (detail::isIntegerKey(key) ||
             (key.writeIntegral && v == std::floor(v) && std::fabs(v) < 1e15))
      j[key.hf] = static_cast<int64_t>(v);
    else
      j[key.hf] = v;
  }
  for (const models::ConstantKey &k : hf.constants) {
    switch (k.kind) {
    case models::ConstantKey::Kind::Null:
      j[k.key] = json();
      break;
    case models::ConstantKey::Kind::Int:
      j[k.key] = k.intValue;
      break;
    case models::ConstantKey::Kind::Double:
      j[k.key] = k.doubleValue;
      break;
    case models::ConstantKey::Kind::String:
      j[k.key] = k.stringValue;
      break;
    case models::ConstantKey::Kind::Bool:
      j[k.key] = k.intValue != 0;
      break;
    }
  }

  {
    ModelConfig layers = c;
    detail::applyMoeLayers(layers, f);
    bool same = true;
    for (int64_t i = 0; i < c.numLayers; ++i)
      same &= layers.isMoeLayer(i) == c.isMoeLayer(i);
    if (!same)
      return Error(c.architecture +
                   ": the sparse layers cannot be expressed by its "
                   "config keys");
  }
  if ((c.attentionBias || c.oProjBias) && hf.bias == models::BiasRule::None)
    return Error(c.architecture + " has no attention bias");
  if (c.mlpBias && !hf.mlpBiasKey)
    return Error(c.architecture + " has no mlp bias");
  if (c.hasVision())
    return detail::multimodalHfConfigJson(c, j.dump());
  return j.dump(2) + "\n";
}

} // namespace etllm::formats
