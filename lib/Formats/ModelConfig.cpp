//===- ModelConfig.cpp - HF config.json parsing and the tensor catalogue --===//

#include "etllm/Formats/ModelConfig.h"
#include "Internal.h"
#include "etllm/Models/Registry.h"

#include <nlohmann/json.hpp>

#include <cmath>
#include <optional>

namespace etllm::formats {

using json = nlohmann::json;
using rt::Error;
using rt::Result;
using rt::Status;

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

private:
  const json &root_;
  std::string source_;
};

Status parseRopeScaling(const ConfigReader &r, const json &obj,
                        const std::string &key, ModelConfig &c) {
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
  if (type != "linear" && type != "llama3")
    return r.error(key, "unsupported rope scaling type '" + type +
                            "' (supported: linear, llama3)");
  c.ropeScaling.type = type;
  std::optional<double> factor;
  ETLLM_ASSIGN_OR_RETURN(factor, num("factor"));
  if (!factor)
    return r.error(key + ".factor", "required for rope type '" + type + "'");
  c.ropeScaling.factor = *factor;
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

} // namespace

std::string supportedArchitectures() {
  return models::supportedArchitectures();
}

const FamilySpec *familyOf(const ModelConfig &c) {
  if (const FamilySpec *f = models::findByArchitecture(c.architecture))
    return f;
  if (c.architecture.empty())
    return models::findByModelType(c.modelType);
  return nullptr;
}

Status applyArchitectureTraits(ModelConfig &c) {
  const FamilySpec *f = familyOf(c);
  if (!f)
    return Error("unsupported architecture '" + c.architecture +
                 "' (supported: " + supportedArchitectures() + ")");
  c.architecture = f->hfArchitecture;
  c.modelType = f->hfModelType;
  c.fusedQkv = f->blocks.attention == models::AttentionBlock::FusedQkv;
  c.fusedGateUp = f->blocks.mlp == models::MlpBlock::FusedGateUp;
  c.qkNorm = f->traits.qkNorm;
  c.normAddsOne = f->traits.normAddsOne;
  c.scaleEmbeddings = f->traits.scaleEmbeddings;
  c.sandwichNorms =
      f->blocks.decoderLayer == models::DecoderLayerBlock::Sandwich;
  return Status();
}

int64_t ModelConfig::rotaryDim() const {
  int64_t d = static_cast<int64_t>(std::floor(headDim * partialRotaryFactor));
  return d - (d % 2);
}

double ModelConfig::attentionScale() const {
  double s = queryPreAttnScalar > 0 ? queryPreAttnScalar
                                    : static_cast<double>(headDim);
  return s > 0 ? 1.0 / std::sqrt(s) : 0.0;
}

Result<ModelConfig> parseHfConfigText(const std::string &text,
                                      const std::string &source) {
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

  // Architecture.
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
    return Error(source + ": unsupported or missing architecture (" +
                 (c.modelType.empty() ? std::string("no 'architectures'")
                                      : "model_type '" + c.modelType + "'") +
                 "; supported: " + supportedArchitectures() + ")");
  c.architecture = family->hfArchitecture;
  if (!c.modelType.empty() && c.modelType != family->hfModelType)
    return r.error("model_type", "'" + c.modelType + "' does not match " +
                                     c.architecture + " (expected '" +
                                     family->hfModelType + "')");
  ETLLM_RETURN_IF_ERROR(applyArchitectureTraits(c));
  const models::HfConfigSpec &hf = family->hf;

  // Sizes.
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
  ETLLM_ASSIGN_OR_RETURN(headDim, r.optInt("head_dim"));
  if (!headDim && hf.headDim > 0)
    headDim = hf.headDim; // The class default.
  if (headDim) {
    c.headDim = *headDim;
    ETLLM_RETURN_IF_ERROR(checkDim("head_dim", c.headDim));
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

  // RoPE: transformers 5 keeps theta and scaling in rope_parameters.
  if (const json *rp = r.get("rope_parameters")) {
    if (!rp->is_object())
      return r.error("rope_parameters", "expected an object");
    auto it = rp->find("rope_theta");
    std::optional<double> theta;
    if (it != rp->end())
      ETLLM_ASSIGN_OR_RETURN(theta,
                             r.optDouble("rope_parameters.rope_theta", &*it));
    c.ropeTheta = theta.value_or(10000.0);
    ETLLM_RETURN_IF_ERROR(parseRopeScaling(r, *rp, "rope_parameters", c));
    auto prf = rp->find("partial_rotary_factor");
    if (prf != rp->end()) {
      std::optional<double> f;
      ETLLM_ASSIGN_OR_RETURN(
          f, r.optDouble("rope_parameters.partial_rotary_factor", &*prf));
      if (f)
        c.partialRotaryFactor = *f;
    }
  } else {
    ETLLM_ASSIGN_OR_RETURN(c.ropeTheta, r.doubleOr("rope_theta", 10000.0));
    if (const json *rs = r.get("rope_scaling"))
      ETLLM_RETURN_IF_ERROR(parseRopeScaling(r, *rs, "rope_scaling", c));
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

  // The family's own keys.
  for (const models::ConfigKey &key : hf.keys) {
    double v = key.hfDefault;
    if (v == 0)
      v = detail::fallbackValue(c, key.fallback);
    if (root.contains(key.hf)) {
      if (key.range == models::KeyRange::Dim) {
        std::optional<int64_t> i;
        ETLLM_ASSIGN_OR_RETURN(i, r.optInt(key.hf));
        if (i)
          v = static_cast<double>(*i);
      } else {
        std::optional<double> d;
        ETLLM_ASSIGN_OR_RETURN(d, r.optDouble(key.hf));
        if (d)
          v = *d;
        else if (key.nullIsZero)
          v = 0;
      }
    }
    ETLLM_RETURN_IF_ERROR(
        detail::checkKeyRange(key, v, [&](const std::string &what) {
          return r.error(key.hf, what);
        }));
    detail::setField(c, key.field, v);
  }

  // Embeddings, biases, activation.
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

  // Sliding windows.
  c.layerUsesSlidingWindow.assign(static_cast<size_t>(c.numLayers), false);
  std::optional<int64_t> window;
  ETLLM_ASSIGN_OR_RETURN(window, r.optInt("sliding_window"));
  if (hf.defaultSlidingWindow > 0 && !window &&
      !root.contains("sliding_window"))
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

  // Special tokens.
  auto tokenId = [&](const char *key, int64_t dflt) -> Result<int64_t> {
    if (!root.contains(key)) // Class defaults may not fit a small vocab.
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

Status validate(const ModelConfig &c) {
  auto dim = [](const char *name, int64_t v) -> Status {
    if (v <= 0 || v > detail::kMaxConfigDim)
      return Error(std::string(name) + " = " + std::to_string(v) +
                   " is outside [1, " + std::to_string(detail::kMaxConfigDim) +
                   "]");
    return Status();
  };
  ETLLM_RETURN_IF_ERROR(dim("hidden_size", c.hiddenSize));
  ETLLM_RETURN_IF_ERROR(dim("intermediate_size", c.intermediateSize));
  ETLLM_RETURN_IF_ERROR(dim("num_hidden_layers", c.numLayers));
  ETLLM_RETURN_IF_ERROR(dim("num_attention_heads", c.numHeads));
  ETLLM_RETURN_IF_ERROR(dim("num_key_value_heads", c.numKvHeads));
  ETLLM_RETURN_IF_ERROR(dim("head_dim", c.headDim));
  ETLLM_RETURN_IF_ERROR(dim("vocab_size", c.vocabSize));
  ETLLM_RETURN_IF_ERROR(
      dim("max_position_embeddings", c.maxPositionEmbeddings));
  if (c.numHeads % c.numKvHeads != 0)
    return Error("num_key_value_heads " + std::to_string(c.numKvHeads) +
                 " does not divide num_attention_heads " +
                 std::to_string(c.numHeads));
  if (c.numHeads * c.headDim > 64 * detail::kMaxConfigDim)
    return Error("num_attention_heads * head_dim is absurdly large");
  if (!(c.rmsNormEps > 0 && c.rmsNormEps < 1))
    return Error("rms_norm_eps must be in (0, 1)");
  if (!(c.ropeTheta > 0) || !std::isfinite(c.ropeTheta))
    return Error("rope_theta must be positive");
  if (!(c.partialRotaryFactor > 0 && c.partialRotaryFactor <= 1))
    return Error("partial_rotary_factor must be in (0, 1]");
  if (c.rotaryDim() < 2)
    return Error("rotary dimension " + std::to_string(c.rotaryDim()) +
                 " (head_dim " + std::to_string(c.headDim) +
                 " * partial_rotary_factor) is smaller than 2");
  if (c.headDim % 2 != 0)
    return Error("head_dim " + std::to_string(c.headDim) + " is odd");
  const std::string &rt = c.ropeScaling.type;
  if (!rt.empty() && rt != "linear" && rt != "llama3")
    return Error("unsupported rope scaling type '" + rt + "'");
  if (!rt.empty() && !(c.ropeScaling.factor > 0))
    return Error("rope scaling factor must be positive");
  if (!c.ropeScaling.freqFactors.empty() &&
      c.ropeScaling.freqFactors.size() !=
          static_cast<size_t>(c.rotaryDim() / 2))
    return Error("rope frequency factors: " +
                 std::to_string(c.ropeScaling.freqFactors.size()) +
                 " values for a rotary dimension of " +
                 std::to_string(c.rotaryDim()));
  if (c.layerUsesSlidingWindow.size() != static_cast<size_t>(c.numLayers))
    return Error("layerUsesSlidingWindow has " +
                 std::to_string(c.layerUsesSlidingWindow.size()) +
                 " entries for " + std::to_string(c.numLayers) + " layers");
  if (c.slidingWindow < 0)
    return Error("sliding_window must not be negative");
  for (bool b : c.layerUsesSlidingWindow)
    if (b && c.slidingWindow == 0)
      return Error("a layer uses a sliding window but sliding_window is 0");
  if (c.attnLogitSoftcapping < 0 || c.finalLogitSoftcapping < 0 ||
      c.queryPreAttnScalar < 0)
    return Error("soft-capping and query_pre_attn_scalar must not be "
                 "negative");
  auto tok = [&](const char *name, int64_t id) -> Status {
    if (id < -1 || id >= c.vocabSize)
      return Error(std::string(name) + " " + std::to_string(id) +
                   " is outside the vocabulary of " +
                   std::to_string(c.vocabSize));
    return Status();
  };
  ETLLM_RETURN_IF_ERROR(tok("bos_token_id", c.bosTokenId));
  ETLLM_RETURN_IF_ERROR(tok("pad_token_id", c.padTokenId));
  for (int64_t e : c.eosTokenIds) {
    ETLLM_RETURN_IF_ERROR(tok("eos_token_id", e));
    if (e < 0)
      return Error("eos_token_id must not be negative");
  }
  ModelConfig copy = c;
  Status traits = applyArchitectureTraits(copy);
  if (!traits.ok())
    return traits;
  return Status();
}

//===----------------------------------------------------------------------===//
// Tensor catalogue
//===----------------------------------------------------------------------===//

Result<std::vector<ExpectedTensor>> expectedTensors(const ModelConfig &c) {
  ETLLM_RETURN_IF_ERROR(validate(c));
  const FamilySpec &f = *familyOf(c);
  ModelConfig t = c;
  ETLLM_RETURN_IF_ERROR(applyArchitectureTraits(t));
  std::vector<ExpectedTensor> out;
  using models::HfModule;
  int64_t layer = -1;
  auto add = [&](HfModule m, std::vector<int64_t> shape, bool isNorm = false,
                 bool bias = false) {
    std::string base = models::hfPath(f, m, layer);
    out.push_back({base + ".weight", shape, isNorm, false});
    if (bias)
      out.push_back({base + ".bias", {shape[0]}, false, true});
  };
  const int64_t h = t.hiddenSize, q = t.numHeads * t.headDim,
                kv = t.numKvHeads * t.headDim, ffn = t.intermediateSize;
  add(HfModule::Embed, {t.vocabSize, h});
  for (layer = 0; layer < t.numLayers; ++layer) {
    add(HfModule::InputNorm, {h}, true);
    switch (f.blocks.attention) {
    case models::AttentionBlock::FusedQkv:
      add(HfModule::QkvProj, {q + 2 * kv, h}, false, t.attentionBias);
      break;
    case models::AttentionBlock::Separate:
      add(HfModule::QProj, {q, h}, false, t.attentionBias);
      add(HfModule::KProj, {kv, h}, false, t.attentionBias);
      add(HfModule::VProj, {kv, h}, false, t.attentionBias);
      break;
    }
    add(HfModule::OProj, {h, q}, false, t.oProjBias);
    if (f.traits.qkNorm) {
      add(HfModule::QNorm, {t.headDim}, true);
      add(HfModule::KNorm, {t.headDim}, true);
    }
    add(HfModule::PostAttentionNorm, {h}, true);
    if (f.blocks.decoderLayer == models::DecoderLayerBlock::Sandwich) {
      add(HfModule::PreFeedforwardNorm, {h}, true);
      add(HfModule::PostFeedforwardNorm, {h}, true);
    }
    switch (f.blocks.mlp) {
    case models::MlpBlock::FusedGateUp:
      add(HfModule::GateUpProj, {2 * ffn, h}, false, t.mlpBias);
      break;
    case models::MlpBlock::Gated:
      add(HfModule::GateProj, {ffn, h}, false, t.mlpBias);
      add(HfModule::UpProj, {ffn, h}, false, t.mlpBias);
      break;
    }
    add(HfModule::DownProj, {h, ffn}, false, t.mlpBias);
  }
  layer = -1;
  add(HfModule::FinalNorm, {h}, true);
  if (!t.tieWordEmbeddings)
    add(HfModule::LmHead, {t.vocabSize, h});
  return out;
}

//===----------------------------------------------------------------------===//
// RoPE frequencies
//===----------------------------------------------------------------------===//

std::vector<double> ropeInverseFrequencies(const ModelConfig &c) {
  int64_t d = c.rotaryDim();
  std::vector<double> inv(static_cast<size_t>(std::max<int64_t>(d / 2, 0)));
  for (size_t i = 0; i < inv.size(); ++i)
    inv[i] = 1.0 / std::pow(c.ropeTheta, (2.0 * i) / d);
  const RopeScaling &s = c.ropeScaling;
  if (!s.freqFactors.empty() && s.freqFactors.size() == inv.size()) {
    for (size_t i = 0; i < inv.size(); ++i)
      inv[i] /= s.freqFactors[i];
    return inv;
  }
  if (s.type == "linear") {
    for (double &f : inv)
      f /= s.factor;
  } else if (s.type == "llama3") {
    double old = static_cast<double>(s.originalMaxPositionEmbeddings);
    double lowWavelen = old / s.lowFreqFactor;
    double highWavelen = old / s.highFreqFactor;
    for (double &f : inv) {
      double wavelen = 2 * M_PI / f;
      if (wavelen < highWavelen)
        continue;
      if (wavelen > lowWavelen) {
        f /= s.factor;
        continue;
      }
      double smooth = (old / wavelen - s.lowFreqFactor) /
                      (s.highFreqFactor - s.lowFreqFactor);
      f = (1 - smooth) * f / s.factor + smooth * f;
    }
  }
  return inv;
}

std::vector<float> llama3RopeFreqFactors(const ModelConfig &c,
                                         int64_t originalContext) {
  const RopeScaling &s = c.ropeScaling;
  int64_t dim = c.headDim;
  std::vector<float> out;
  double old = static_cast<double>(originalContext);
  double lowWavelen = old / s.lowFreqFactor;
  double highWavelen = old / s.highFreqFactor;
  for (int64_t i = 0; i < dim; i += 2) {
    float freq = static_cast<float>(
        1.0 /
        std::pow(c.ropeTheta, static_cast<double>(static_cast<float>(i) /
                                                  static_cast<float>(dim))));
    double wavelen = 2 * M_PI / freq;
    if (wavelen < highWavelen) {
      out.push_back(1.0f);
    } else if (wavelen > lowWavelen) {
      out.push_back(static_cast<float>(s.factor));
    } else {
      double smooth = (old / wavelen - s.lowFreqFactor) /
                      (s.highFreqFactor - s.lowFreqFactor);
      out.push_back(
          static_cast<float>(1.0 / ((1 - smooth) / s.factor + smooth)));
    }
  }
  return out;
}

//===----------------------------------------------------------------------===//
// config.json writer
//===----------------------------------------------------------------------===//

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
    j["head_dim"] = c.headDim;
    break;
  case models::HeadDimKey::IfNotDefault:
    if (!defaultHeadDim)
      j["head_dim"] = c.headDim;
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
    double v = detail::getField(c, key.field);
    if (v == 0)
      v = detail::fallbackValue(c, key.fallback);
    if (key.writeZeroAsNull && v == 0)
      j[key.hf] = json();
    else if (key.range == models::KeyRange::Dim ||
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
    }
  }

  if ((c.attentionBias || c.oProjBias) && hf.bias == models::BiasRule::None)
    return Error(c.architecture + " has no attention bias");
  if (c.mlpBias && !hf.mlpBiasKey)
    return Error(c.architecture + " has no mlp bias");
  return j.dump(2) + "\n";
}

} // namespace etllm::formats
