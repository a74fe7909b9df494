//===- HfConfigReader.cpp - Hugging Face config.json to ModelConfig -------===//
//
// The common keys every transformers decoder config has, then what the
// family's spec says its config class does (defaults, head_dim, biases,
// activation keys, the sliding-window rule, its own keys). Every error names
// the file and the key.
//
//===----------------------------------------------------------------------===//

#include "Internal.h"
#include "etllm/Formats/ModelConfig.h"
#include "etllm/Models/Registry.h"

#include <nlohmann/json.hpp>

#include <cmath>
#include <optional>

namespace etllm::formats {

using json = nlohmann::json;
using models::FamilySpec;

namespace {

using models::FamilySpec;

const char *jsonTypeName(const json &j) { return j.type_name(); }

/// Typed access to config.json keys with messages naming file and key.
class ConfigReader {
public:
  ConfigReader(const json &root, std::string source)
      : root_(root), source_(std::move(source)) {}

  Error error(const std::string &key, const std::string &what) const {
    return Error(source_ + ": key '" + key + "': " + what);
  }

  const json *get(const std::string &key) const {
    auto it = root_.find(key);
    if (it == root_.end() || it->is_null())
      return nullptr;
    return &*it;
  }

  Result<std::optional<int64_t>> optInt(const std::string &key,
                                        const json *from = nullptr) const {
    const json *v = from ? from : get(key);
    if (!v || v->is_null())
      return std::optional<int64_t>();
    if (v->is_number_integer()) {
      if (v->is_number_unsigned() &&
          v->get<uint64_t>() > uint64_t(std::numeric_limits<int64_t>::max()))
        return error(key, "integer out of range");
      return std::optional<int64_t>(v->get<int64_t>());
    }
    if (v->is_number_float()) {
      double d = v->get<double>();
      if (std::isfinite(d) && std::floor(d) == d && std::fabs(d) < 9e15)
        return std::optional<int64_t>(static_cast<int64_t>(d));
      return error(key, "expected an integer, got " + v->dump());
    }
    return error(key,
                 std::string("expected an integer, got ") + jsonTypeName(*v));
  }

  Result<int64_t> requiredInt(const std::string &key) const {
    Result<std::optional<int64_t>> v = optInt(key);
    if (!v)
      return v.error();
    if (!*v)
      return error(key, "required key is missing");
    return **v;
  }

  Result<int64_t> intOr(const std::string &key, int64_t dflt) const {
    Result<std::optional<int64_t>> v = optInt(key);
    if (!v)
      return v.error();
    return v->value_or(dflt);
  }

  Result<std::optional<double>> optDouble(const std::string &key,
                                          const json *from = nullptr) const {
    const json *v = from ? from : get(key);
    if (!v || v->is_null())
      return std::optional<double>();
    if (!v->is_number())
      return error(key,
                   std::string("expected a number, got ") + jsonTypeName(*v));
    double d = v->get<double>();
    if (!std::isfinite(d))
      return error(key, "expected a finite number");
    return std::optional<double>(d);
  }

  Result<double> doubleOr(const std::string &key, double dflt) const {
    Result<std::optional<double>> v = optDouble(key);
    if (!v)
      return v.error();
    return v->value_or(dflt);
  }

  Result<bool> boolOr(const std::string &key, bool dflt) const {
    const json *v = get(key);
    if (!v)
      return dflt;
    if (!v->is_boolean())
      return error(key,
                   std::string("expected a boolean, got ") + jsonTypeName(*v));
    return v->get<bool>();
  }

  Result<std::optional<std::string>> optString(const std::string &key) const {
    const json *v = get(key);
    if (!v)
      return std::optional<std::string>();
    if (!v->is_string())
      return error(key,
                   std::string("expected a string, got ") + jsonTypeName(*v));
    return std::optional<std::string>(v->get<std::string>());
  }

  const std::string &source() const { return source_; }
  /// True when the key is present, even as null.
  bool has(const std::string &key) const { return root_.contains(key); }

private:
  const json &root_;
  std::string source_;
};

Status parseRopeScaling(const ConfigReader &r, const json &obj,
                        const std::string &key, bool allowYarn,
                        ModelConfig &c) {
  if (!obj.is_object())
    return r.error(key,
                   std::string("expected an object, got ") + jsonTypeName(obj));
  std::string type;
  for (const char *k : {"rope_type", "type"}) {
    auto it = obj.find(k);
    if (it != obj.end() && !it->is_null()) {
      if (!it->is_string())
        return r.error(key + "." + k, "expected a string");
      type = it->get<std::string>();
      break;
    }
  }
  auto num = [&](const char *k) -> Result<std::optional<double>> {
    auto it = obj.find(k);
    if (it == obj.end())
      return std::optional<double>();
    return r.optDouble(key + "." + k, &*it);
  };
  if (type.empty() || type == "default")
    return Status();
  if (type != "linear" && type != "llama3" && (type != "yarn" || !allowYarn))
    return r.error(key, "unsupported rope scaling type '" + type +
                            "' (supported: linear, llama3" +
                            (allowYarn ? ", yarn" : "") + ")");
  c.ropeScaling.type = type;
  std::optional<double> factor;
  ETLLM_ASSIGN_OR_RETURN(factor, num("factor"));
  if (!factor)
    return r.error(key + ".factor", "required for rope type '" + type + "'");
  c.ropeScaling.factor = *factor;
  if (type == "yarn") {
    // DeepseekV2YarnRotaryEmbedding's parameters and defaults.
    auto it = obj.find("original_max_position_embeddings");
    std::optional<int64_t> orig;
    if (it != obj.end())
      ETLLM_ASSIGN_OR_RETURN(
          orig, r.optInt(key + ".original_max_position_embeddings", &*it));
    if (!orig || *orig <= 0)
      return r.error(key + ".original_max_position_embeddings",
                     "required (a positive integer) for yarn");
    c.ropeScaling.originalMaxPositionEmbeddings = *orig;
    struct {
      const char *name;
      double *field;
    } params[] = {{"beta_fast", &c.ropeScaling.betaFast},
                  {"beta_slow", &c.ropeScaling.betaSlow},
                  {"mscale", &c.ropeScaling.mscale},
                  {"mscale_all_dim", &c.ropeScaling.mscaleAllDim}};
    for (auto &p : params) {
      std::optional<double> v;
      ETLLM_ASSIGN_OR_RETURN(v, num(p.name));
      if (v)
        *p.field = *v;
    }
    if (!(c.ropeScaling.betaFast > 0) || !(c.ropeScaling.betaSlow > 0))
      return r.error(key, "yarn needs positive beta_fast and beta_slow");
    if (c.ropeScaling.mscale < 0 || c.ropeScaling.mscaleAllDim < 0)
      return r.error(key, "yarn's mscale and mscale_all_dim must not be "
                          "negative");
    for (const char *k : {"attention_factor", "attn_factor",
                          "extrapolation_factor", "truncate"})
      if (obj.contains(k))
        return r.error(key + "." + k, "is not supported (DeepSeek's YaRN "
                                      "has no such parameter)");
  }
  if (type == "llama3") {
    std::optional<double> v;
    ETLLM_ASSIGN_OR_RETURN(v, num("low_freq_factor"));
    if (!v)
      return r.error(key + ".low_freq_factor", "required for llama3");
    c.ropeScaling.lowFreqFactor = *v;
    ETLLM_ASSIGN_OR_RETURN(v, num("high_freq_factor"));
    if (!v)
      return r.error(key + ".high_freq_factor", "required for llama3");
    c.ropeScaling.highFreqFactor = *v;
    auto it = obj.find("original_max_position_embeddings");
    std::optional<int64_t> orig;
    if (it != obj.end())
      ETLLM_ASSIGN_OR_RETURN(
          orig, r.optInt(key + ".original_max_position_embeddings", &*it));
    if (!orig)
      return r.error(key + ".original_max_position_embeddings",
                     "required for llama3");
    c.ropeScaling.originalMaxPositionEmbeddings = *orig;
  }
  return Status();
}

/// architectures / model_type: the family (its names set in c).
Result<const FamilySpec *> readFamily(const ConfigReader &r, ModelConfig &c) {
  std::string architecture;
  if (const json *archs = r.get("architectures")) {
    if (!archs->is_array())
      return r.error("architectures", "expected an array of strings");
    for (const json &a : *archs) {
      if (!a.is_string())
        return r.error("architectures", "expected an array of strings");
      if (architecture.empty() &&
          models::findByArchitecture(a.get<std::string>()))
        architecture = a.get<std::string>();
    }
    if (architecture.empty() && !archs->empty())
      return r.error("architectures",
                     "unsupported architecture '" +
                         (*archs)[0].get<std::string>() +
                         "' (supported: " + supportedArchitectures() + ")");
  }
  std::optional<std::string> modelType;
  ETLLM_ASSIGN_OR_RETURN(modelType, r.optString("model_type"));
  c.architecture = architecture;
  c.modelType = modelType.value_or("");
  const FamilySpec *family = familyOf(c);
  if (!family)
    return Error(r.source() + ": unsupported or missing architecture (" +
                 (c.modelType.empty() ? std::string("no 'architectures'")
                                      : "model_type '" + c.modelType + "'") +
                 "; supported: " + supportedArchitectures() + ")");
  c.architecture = family->hfArchitecture;
  if (!c.modelType.empty() && c.modelType != family->hfModelType)
    return r.error("model_type", "'" + c.modelType + "' does not match " +
                                     c.architecture + " (expected '" +
                                     family->hfModelType + "')");
  ETLLM_RETURN_IF_ERROR(applyArchitectureTraits(c));
  return family;
}

/// The sizes, max_position_embeddings and rms_norm_eps.
Status readSizes(const ConfigReader &r, const models::HfConfigSpec &hf,
                 ModelConfig &c) {
  ETLLM_ASSIGN_OR_RETURN(c.hiddenSize, r.requiredInt("hidden_size"));
  ETLLM_ASSIGN_OR_RETURN(c.intermediateSize,
                         r.requiredInt("intermediate_size"));
  ETLLM_ASSIGN_OR_RETURN(c.numLayers, r.requiredInt("num_hidden_layers"));
  ETLLM_ASSIGN_OR_RETURN(c.numHeads, r.requiredInt("num_attention_heads"));
  ETLLM_ASSIGN_OR_RETURN(c.vocabSize, r.requiredInt("vocab_size"));
  auto checkDim = [&](const char *key, int64_t v) -> Status {
    if (v <= 0)
      return r.error(key, "must be positive, got " + std::to_string(v));
    if (v > detail::kMaxConfigDim)
      return r.error(key, "absurdly large value " + std::to_string(v) +
                              " (limit " +
                              std::to_string(detail::kMaxConfigDim) + ")");
    return Status();
  };
  ETLLM_RETURN_IF_ERROR(checkDim("hidden_size", c.hiddenSize));
  ETLLM_RETURN_IF_ERROR(checkDim("intermediate_size", c.intermediateSize));
  ETLLM_RETURN_IF_ERROR(checkDim("num_hidden_layers", c.numLayers));
  ETLLM_RETURN_IF_ERROR(checkDim("num_attention_heads", c.numHeads));
  ETLLM_RETURN_IF_ERROR(checkDim("vocab_size", c.vocabSize));
  ETLLM_ASSIGN_OR_RETURN(c.numKvHeads,
                         r.intOr("num_key_value_heads", c.numHeads));
  ETLLM_RETURN_IF_ERROR(checkDim("num_key_value_heads", c.numKvHeads));
  if (c.numHeads % c.numKvHeads != 0)
    return r.error("num_key_value_heads",
                   std::to_string(c.numKvHeads) +
                       " does not divide num_attention_heads " +
                       std::to_string(c.numHeads));
  std::optional<int64_t> headDim;
  ETLLM_ASSIGN_OR_RETURN(headDim, r.optInt(hf.headDimKeyName));
  if (!headDim && hf.headDim > 0)
    headDim = hf.headDim; // The class default.
  if (headDim) {
    c.headDim = *headDim;
    ETLLM_RETURN_IF_ERROR(checkDim(hf.headDimKeyName, c.headDim));
  } else {
    if (c.hiddenSize % c.numHeads != 0)
      return r.error(
          "num_attention_heads",
          std::to_string(c.numHeads) + " does not divide hidden_size " +
              std::to_string(c.hiddenSize) + " (and no head_dim is given)");
    c.headDim = c.hiddenSize / c.numHeads;
  }
  ETLLM_ASSIGN_OR_RETURN(
      c.maxPositionEmbeddings,
      r.intOr("max_position_embeddings", hf.maxPositionEmbeddings));
  ETLLM_RETURN_IF_ERROR(
      checkDim("max_position_embeddings", c.maxPositionEmbeddings));
  ETLLM_ASSIGN_OR_RETURN(c.rmsNormEps,
                         r.doubleOr("rms_norm_eps", hf.rmsNormEps));
  if (!(c.rmsNormEps > 0 && c.rmsNormEps < 1))
    return r.error("rms_norm_eps", "must be in (0, 1)");
  return Status();
}

/// rope_theta, rope_scaling (or transformers 5's rope_parameters) and
/// partial_rotary_factor.
Status readRope(const ConfigReader &r, const models::HfConfigSpec &hf,
                ModelConfig &c) {
  // transformers 5 keeps theta and scaling in rope_parameters.
  if (const json *rp = r.get("rope_parameters")) {
    if (!rp->is_object())
      return r.error("rope_parameters", "expected an object");
    auto it = rp->find("rope_theta");
    std::optional<double> theta;
    if (it != rp->end())
      ETLLM_ASSIGN_OR_RETURN(theta,
                             r.optDouble("rope_parameters.rope_theta", &*it));
    c.ropeTheta = theta.value_or(hf.ropeTheta);
    ETLLM_RETURN_IF_ERROR(
        parseRopeScaling(r, *rp, "rope_parameters", hf.yarnRopeScaling, c));
    auto prf = rp->find("partial_rotary_factor");
    if (prf != rp->end()) {
      std::optional<double> f;
      ETLLM_ASSIGN_OR_RETURN(
          f, r.optDouble("rope_parameters.partial_rotary_factor", &*prf));
      if (f)
        c.partialRotaryFactor = *f;
    }
  } else {
    ETLLM_ASSIGN_OR_RETURN(c.ropeTheta, r.doubleOr("rope_theta", hf.ropeTheta));
    if (const json *rs = r.get("rope_scaling"))
      ETLLM_RETURN_IF_ERROR(
          parseRopeScaling(r, *rs, "rope_scaling", hf.yarnRopeScaling, c));
  }
  if (!(c.ropeTheta > 0))
    return r.error("rope_theta", "must be positive");
  if (c.ropeScaling.type == "llama3" &&
      !(c.ropeScaling.highFreqFactor > c.ropeScaling.lowFreqFactor &&
        c.ropeScaling.lowFreqFactor > 0 &&
        c.ropeScaling.originalMaxPositionEmbeddings > 0))
    return r.error("rope_scaling", "llama3 needs high_freq_factor > "
                                   "low_freq_factor > 0 and a positive "
                                   "original_max_position_embeddings");
  if (!c.ropeScaling.type.empty() && !(c.ropeScaling.factor > 0))
    return r.error("rope_scaling.factor", "must be positive");
  if (r.get("partial_rotary_factor"))
    ETLLM_ASSIGN_OR_RETURN(c.partialRotaryFactor,
                           r.doubleOr("partial_rotary_factor", 1.0));
  if (!(c.partialRotaryFactor > 0 && c.partialRotaryFactor <= 1))
    return r.error("partial_rotary_factor", "must be in (0, 1]");
  return Status();
}

/// A KeyType::Choice key's string as its index; an error naming the key and
/// the value (and the accepted ones) otherwise.
Result<double> readChoice(const ConfigReader &r, const models::ConfigKey &key,
                          const std::string &value) {
  std::string accepted;
  for (size_t i = 0; i < key.choices.size(); ++i) {
    if (value == key.choices[i])
      return static_cast<double>(i);
    accepted += (i ? ", " : "") + std::string(key.choices[i]);
  }
  return r.error(key.hf, "unsupported value '" + value +
                             "' (supported: " + accepted + ")");
}

/// The keys only the family has (ConfigKey): config-class default when
/// absent, null as the key says, checked against its range.
Status readFamilyKeys(const ConfigReader &r, const models::HfConfigSpec &hf,
                      ModelConfig &c) {
  for (const models::ConfigKey &key : hf.keys) {
    if (key.type == models::KeyType::IntList) {
      std::vector<int64_t> *list = detail::listField(c, key.field);
      list->clear();
      const json *v = r.get(key.hf);
      if (!v)
        continue; // absent or null: the empty list (the class default)
      if (!v->is_array())
        return r.error(key.hf, "expected an array of integers");
      for (const json &e : *v) {
        std::optional<int64_t> i;
        ETLLM_ASSIGN_OR_RETURN(i, r.optInt(key.hf, &e));
        if (!i || *i < 0 || *i >= c.numLayers)
          return r.error(key.hf, "entries must be layer indices in [0, " +
                                     std::to_string(c.numLayers) + "), got " +
                                     e.dump());
        list->push_back(*i);
      }
      continue;
    }
    double v = key.hfDefault;
    if (v == 0 && key.type == models::KeyType::Number)
      v = detail::fallbackValue(c, key.fallback);
    if (r.has(key.hf)) {
      if (key.type == models::KeyType::Bool) {
        bool b;
        ETLLM_ASSIGN_OR_RETURN(b, r.boolOr(key.hf, v != 0));
        v = b ? 1 : 0;
      } else if (key.type == models::KeyType::Choice) {
        std::optional<std::string> str;
        ETLLM_ASSIGN_OR_RETURN(str, r.optString(key.hf));
        if (str)
          ETLLM_ASSIGN_OR_RETURN(v, readChoice(r, key, *str));
      } else if (detail::isIntegerKey(key)) {
        std::optional<int64_t> i;
        ETLLM_ASSIGN_OR_RETURN(i, r.optInt(key.hf));
        if (i)
          v = static_cast<double>(*i);
        else if (key.nullIsZero)
          v = 0;
      } else {
        std::optional<double> d;
        ETLLM_ASSIGN_OR_RETURN(d, r.optDouble(key.hf));
        if (d)
          v = *d;
        else if (key.nullIsZero)
          v = 0;
      }
    }
    ETLLM_RETURN_IF_ERROR(detail::checkKeyRange(
        key, v,
        [&](const std::string &what) { return r.error(key.hf, what); }));
    detail::setField(c, key.field, v);
  }
  return Status();
}

/// tie_word_embeddings, the biases as the family's rule says, and the MLP
/// activation.
Status readBiasesAndActivation(const ConfigReader &r,
                               const models::HfConfigSpec &hf, ModelConfig &c) {
  ETLLM_ASSIGN_OR_RETURN(c.tieWordEmbeddings,
                         r.boolOr("tie_word_embeddings", hf.tieWordEmbeddings));
  bool attentionBias;
  ETLLM_ASSIGN_OR_RETURN(attentionBias, r.boolOr("attention_bias", false));
  switch (hf.bias) {
  case models::BiasRule::QkvOnly:
    c.attentionBias = true;
    c.oProjBias = false;
    break;
  case models::BiasRule::None:
    c.attentionBias = c.oProjBias = false;
    break;
  case models::BiasRule::AttentionBiasKey:
    c.attentionBias = c.oProjBias = attentionBias;
    break;
  }
  if (hf.mlpBiasKey)
    ETLLM_ASSIGN_OR_RETURN(c.mlpBias, r.boolOr("mlp_bias", false));
  std::optional<std::string> act;
  for (const char *key : hf.activationKeys)
    if (!act)
      ETLLM_ASSIGN_OR_RETURN(act, r.optString(key));
  c.hiddenAct = act.value_or(hf.hiddenAct);
  static const char *kActs[] = {
      "silu",  "gelu_pytorch_tanh", "gelu", "gelu_new", "relu",
      "swish", "gelu_fast"};
  bool knownAct = false;
  for (const char *a : kActs)
    knownAct |= c.hiddenAct == a;
  if (!knownAct)
    return r.error(hf.activationKeys.front(),
                   "unsupported activation '" + c.hiddenAct + "'");
  if (c.hiddenAct == "swish")
    c.hiddenAct = "silu";
  return Status();
}

/// Which layers slide: the family's rule, or transformers 5's layer_types.
Status readSlidingWindows(const ConfigReader &r, const models::HfConfigSpec &hf,
                          ModelConfig &c) {
  c.layerUsesSlidingWindow.assign(static_cast<size_t>(c.numLayers), false);
  std::optional<int64_t> window;
  ETLLM_ASSIGN_OR_RETURN(window, r.optInt("sliding_window"));
  if (hf.defaultSlidingWindow > 0 && !window && !r.has("sliding_window"))
    window = hf.defaultSlidingWindow;
  if (window && *window < 0)
    return r.error("sliding_window", "must not be negative");
  switch (hf.slidingWindow) {
  case models::SlidingWindowRule::None:
    break;
  case models::SlidingWindowRule::AllLayers:
  case models::SlidingWindowRule::EvenLayers:
    if (window && *window > 0) {
      c.slidingWindow = *window;
      detail::applySlidingPattern(c, hf.slidingWindow);
    }
    break;
  case models::SlidingWindowRule::Pattern: {
    int64_t pattern;
    ETLLM_ASSIGN_OR_RETURN(
        pattern, r.intOr("sliding_window_pattern", hf.slidingWindowPattern));
    if (pattern <= 0)
      return r.error("sliding_window_pattern", "must be positive");
    if (window && *window > 0) {
      c.slidingWindow = *window;
      detail::applySlidingPattern(c, hf.slidingWindow, pattern);
    }
    break;
  }
  case models::SlidingWindowRule::FromMaxWindowLayers: {
    bool use;
    ETLLM_ASSIGN_OR_RETURN(use, r.boolOr("use_sliding_window", false));
    int64_t maxWindowLayers;
    ETLLM_ASSIGN_OR_RETURN(maxWindowLayers, r.intOr("max_window_layers", 28));
    if (use && window && *window > 0) {
      c.slidingWindow = *window;
      for (int64_t i = maxWindowLayers; i < c.numLayers; ++i)
        if (i >= 0)
          c.layerUsesSlidingWindow[static_cast<size_t>(i)] = true;
    }
    break;
  }
  }
  if (const json *lt = r.get("layer_types")) {
    if (!lt->is_array() || lt->size() != static_cast<size_t>(c.numLayers))
      return r.error("layer_types", "expected an array of " +
                                        std::to_string(c.numLayers) +
                                        " strings");
    for (size_t i = 0; i < lt->size(); ++i) {
      const json &t = (*lt)[i];
      if (!t.is_string())
        return r.error("layer_types", "expected strings");
      std::string s = t.get<std::string>();
      if (s == "sliding_attention")
        c.layerUsesSlidingWindow[i] = true;
      else if (s == "full_attention")
        c.layerUsesSlidingWindow[i] = false;
      else
        return r.error("layer_types", "unknown layer type '" + s + "'");
    }
    bool any = false;
    for (bool b : c.layerUsesSlidingWindow)
      any |= b;
    if (any && c.slidingWindow == 0) {
      if (!window || *window <= 0)
        return r.error("sliding_window", "layer_types has sliding layers "
                                         "but no sliding_window is set");
      c.slidingWindow = *window;
    }
  }
  return Status();
}

/// bos/pad/eos (eos may be a list); class defaults that do not fit the
/// vocabulary are dropped.
Status readSpecialTokens(const ConfigReader &r, const models::HfConfigSpec &hf,
                         ModelConfig &c) {
  auto tokenId = [&](const char *key, int64_t dflt) -> Result<int64_t> {
    if (!r.has(key)) // Class defaults may not fit a small vocab.
      return dflt < c.vocabSize ? dflt : -1;
    std::optional<int64_t> v;
    ETLLM_ASSIGN_OR_RETURN(v, r.optInt(key));
    if (v && (*v < 0 || *v >= c.vocabSize))
      return r.error(key, "token id " + std::to_string(*v) +
                              " outside the vocabulary [0, " +
                              std::to_string(c.vocabSize) + ")");
    return v.value_or(-1);
  };
  ETLLM_ASSIGN_OR_RETURN(c.bosTokenId, tokenId("bos_token_id", hf.bosTokenId));
  ETLLM_ASSIGN_OR_RETURN(c.padTokenId, tokenId("pad_token_id", hf.padTokenId));
  if (const json *eos = r.get("eos_token_id"); eos && eos->is_array()) {
    for (const json &e : *eos) {
      std::optional<int64_t> v;
      ETLLM_ASSIGN_OR_RETURN(v, r.optInt("eos_token_id", &e));
      if (!v || *v < 0 || *v >= c.vocabSize)
        return r.error("eos_token_id",
                       "list entries must be token ids in [0, " +
                           std::to_string(c.vocabSize) + ")");
      c.eosTokenIds.push_back(*v);
    }
  } else {
    int64_t eosId;
    ETLLM_ASSIGN_OR_RETURN(eosId, tokenId("eos_token_id", hf.eosTokenId));
    if (eosId >= 0)
      c.eosTokenIds.push_back(eosId);
  }
  return Status();
}

/// Keys the class writes with one value that etllm also requires (the
/// settings of the class it does not build).
Status readEnforcedConstants(const ConfigReader &r,
                             const models::HfConfigSpec &hf) {
  for (const models::ConstantKey &k : hf.constants) {
    if (!k.enforced || !r.has(k.key))
      continue;
    const json *v = r.get(k.key);
    json want;
    switch (k.kind) {
    case models::ConstantKey::Kind::Null:
      want = json();
      break;
    case models::ConstantKey::Kind::Int:
      want = k.intValue;
      break;
    case models::ConstantKey::Kind::Double:
      want = k.doubleValue;
      break;
    case models::ConstantKey::Kind::String:
      want = k.stringValue;
      break;
    case models::ConstantKey::Kind::Bool:
      want = k.intValue != 0;
      break;
    }
    json got = v ? *v : json();
    if (got != want)
      return r.error(k.key, got.dump() + " is not supported (only " +
                                want.dump() + ")");
  }
  return Status();
}

} // namespace

Result<ModelConfig> parseHfConfigText(const std::string &text,
                                      const std::string &source) {
  if (detail::isMultimodalConfig(text))
    return detail::parseMultimodalConfig(text, source);
  json root;
  try {
    root = json::parse(text);
  } catch (const json::exception &e) {
    return Error(source + ": invalid JSON: " + e.what());
  }
  if (!root.is_object())
    return Error(source + ": expected a JSON object at top level, got " +
                 jsonTypeName(root));
  ConfigReader r(root, source);
  ModelConfig c;

  const FamilySpec *family;
  ETLLM_ASSIGN_OR_RETURN(family, readFamily(r, c));
  const models::HfConfigSpec &hf = family->hf;
  ETLLM_RETURN_IF_ERROR(readSizes(r, hf, c));
  ETLLM_RETURN_IF_ERROR(readRope(r, hf, c));
  detail::applyMoeDefaults(c, *family);
  ETLLM_RETURN_IF_ERROR(readFamilyKeys(r, hf, c));
  detail::applyMoeLayers(c, *family);
  ETLLM_RETURN_IF_ERROR(readBiasesAndActivation(r, hf, c));
  ETLLM_RETURN_IF_ERROR(readSlidingWindows(r, hf, c));
  ETLLM_RETURN_IF_ERROR(readSpecialTokens(r, hf, c));
  ETLLM_RETURN_IF_ERROR(readEnforcedConstants(r, hf));
  if (family->blocks.attention == models::AttentionBlock::Mla &&
      c.numKvHeads != c.numHeads)
    // kv_b_proj expands the latent into every head's key and value.
    return r.error("num_key_value_heads",
                   std::to_string(c.numKvHeads) +
                       " differs from num_attention_heads " +
                       std::to_string(c.numHeads) +
                       " (multi-head latent attention has one key/value head "
                       "per query head)");
  std::optional<std::string> dtype;
  ETLLM_ASSIGN_OR_RETURN(dtype, r.optString("torch_dtype"));
  if (!dtype)
    ETLLM_ASSIGN_OR_RETURN(dtype, r.optString("dtype"));
  c.torchDtype = dtype.value_or("");

  Status s = validate(c);
  if (!s.ok())
    return Error(source + ": " + s.message());
  return c;
}

Result<ModelConfig> parseHfConfig(const std::string &path) {
  Result<std::string> text = detail::readTextFile(path);
  if (!text)
    return text.error();
  return parseHfConfigText(*text, path);
}

} // namespace etllm::formats
