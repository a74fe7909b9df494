//===- ModelConfig.cpp - HF config.json parsing and the tensor catalogue --===//

#include "etllm/Formats/ModelConfig.h"
#include "Internal.h"

#include <nlohmann/json.hpp>

#include <cmath>
#include <optional>

namespace etllm::formats {

using json = nlohmann::json;
using rt::Error;
using rt::Result;
using rt::Status;

namespace {

/// Class defaults of a transformers config, for keys config.json may omit.
struct ArchDefaults {
  const char *architecture;
  const char *modelType;
  int64_t maxPositionEmbeddings;
  double rmsNormEps;
  bool tieWordEmbeddings;
  const char *hiddenAct;
  int64_t bos, eos, pad; // -1: None
};

constexpr ArchDefaults kArchs[] = {
    {"LlamaForCausalLM", "llama", 2048, 1e-6, false, "silu", 1, 2, -1},
    {"MistralForCausalLM", "mistral", 4096 * 32, 1e-6, false, "silu", 1, 2, -1},
    {"Qwen2ForCausalLM", "qwen2", 32768, 1e-6, false, "silu", -1, -1, -1},
    {"Qwen3ForCausalLM", "qwen3", 32768, 1e-6, false, "silu", -1, -1, -1},
    {"Phi3ForCausalLM", "phi3", 4096, 1e-5, false, "silu", 1, 32000, 32000},
    {"GemmaForCausalLM", "gemma", 8192, 1e-6, true, "gelu_pytorch_tanh", 2, 1,
     0},
    {"Gemma2ForCausalLM", "gemma2", 8192, 1e-6, true, "gelu_pytorch_tanh", 2, 1,
     0},
};

const ArchDefaults *findArch(const std::string &architecture,
                             const std::string &modelType) {
  for (const ArchDefaults &a : kArchs)
    if (architecture == a.architecture)
      return &a;
  if (architecture.empty())
    for (const ArchDefaults &a : kArchs)
      if (modelType == a.modelType)
        return &a;
  return nullptr;
}

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
  std::string s;
  for (const ArchDefaults &a : kArchs) {
    if (!s.empty())
      s += ", ";
    s += a.architecture;
  }
  return s;
}

Status applyArchitectureTraits(ModelConfig &c) {
  const ArchDefaults *a = findArch(c.architecture, c.modelType);
  if (!a)
    return Error("unsupported architecture '" + c.architecture +
                 "' (supported: " + supportedArchitectures() + ")");
  c.architecture = a->architecture;
  c.modelType = a->modelType;
  std::string mt = c.modelType;
  c.fusedQkv = c.fusedGateUp = mt == "phi3";
  c.qkNorm = mt == "qwen3";
  c.normAddsOne = c.scaleEmbeddings = mt == "gemma" || mt == "gemma2";
  c.sandwichNorms = mt == "gemma2";
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
      if (architecture.empty() && findArch(a.get<std::string>(), std::string()))
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
  const ArchDefaults *arch = findArch(c.architecture, c.modelType);
  if (!arch)
    return Error(source + ": unsupported or missing architecture (" +
                 (c.modelType.empty() ? std::string("no 'architectures'")
                                      : "model_type '" + c.modelType + "'") +
                 "; supported: " + supportedArchitectures() + ")");
  c.architecture = arch->architecture;
  if (!c.modelType.empty() && c.modelType != arch->modelType)
    return r.error("model_type", "'" + c.modelType + "' does not match " +
                                     c.architecture + " (expected '" +
                                     arch->modelType + "')");
  ETLLM_RETURN_IF_ERROR(applyArchitectureTraits(c));
  const std::string mt = c.modelType;

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
  if (!headDim && (mt == "gemma" || mt == "gemma2" || mt == "qwen3"))
    headDim = mt == "qwen3" ? 128 : 256; // Class defaults.
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
      r.intOr("max_position_embeddings", arch->maxPositionEmbeddings));
  ETLLM_RETURN_IF_ERROR(
      checkDim("max_position_embeddings", c.maxPositionEmbeddings));
  ETLLM_ASSIGN_OR_RETURN(c.rmsNormEps,
                         r.doubleOr("rms_norm_eps", arch->rmsNormEps));
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
  if (mt == "phi3") {
    ETLLM_ASSIGN_OR_RETURN(
        c.originalMaxPositionEmbeddings,
        r.intOr("original_max_position_embeddings", c.maxPositionEmbeddings));
    ETLLM_RETURN_IF_ERROR(checkDim("original_max_position_embeddings",
                                   c.originalMaxPositionEmbeddings));
  }

  // Embeddings, biases, activation.
  ETLLM_ASSIGN_OR_RETURN(
      c.tieWordEmbeddings,
      r.boolOr("tie_word_embeddings", arch->tieWordEmbeddings));
  bool attentionBias;
  ETLLM_ASSIGN_OR_RETURN(attentionBias, r.boolOr("attention_bias", false));
  if (mt == "qwen2") {
    c.attentionBias = true;
    c.oProjBias = false;
  } else if (mt == "mistral" || mt == "phi3") {
    c.attentionBias = c.oProjBias = false;
  } else {
    c.attentionBias = c.oProjBias = attentionBias;
  }
  if (mt == "llama")
    ETLLM_ASSIGN_OR_RETURN(c.mlpBias, r.boolOr("mlp_bias", false));
  std::optional<std::string> act;
  if (mt == "gemma" || mt == "gemma2")
    ETLLM_ASSIGN_OR_RETURN(act, r.optString("hidden_activation"));
  if (!act)
    ETLLM_ASSIGN_OR_RETURN(act, r.optString("hidden_act"));
  c.hiddenAct = act.value_or(arch->hiddenAct);
  static const char *kActs[] = {
      "silu",  "gelu_pytorch_tanh", "gelu", "gelu_new", "relu",
      "swish", "gelu_fast"};
  bool knownAct = false;
  for (const char *a : kActs)
    knownAct |= c.hiddenAct == a;
  if (!knownAct)
    return r.error(mt.rfind("gemma", 0) == 0 ? "hidden_activation"
                                             : "hidden_act",
                   "unsupported activation '" + c.hiddenAct + "'");
  if (c.hiddenAct == "swish")
    c.hiddenAct = "silu";

  // Sliding windows.
  c.layerUsesSlidingWindow.assign(static_cast<size_t>(c.numLayers), false);
  std::optional<int64_t> window;
  ETLLM_ASSIGN_OR_RETURN(window, r.optInt("sliding_window"));
  if (mt == "gemma2" && !window && !root.contains("sliding_window"))
    window = 4096;
  if (window && *window < 0)
    return r.error("sliding_window", "must not be negative");
  if (mt == "mistral" || mt == "phi3") {
    if (window && *window > 0) {
      c.slidingWindow = *window;
      c.layerUsesSlidingWindow.assign(static_cast<size_t>(c.numLayers), true);
    }
  } else if (mt == "qwen2" || mt == "qwen3") {
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
  } else if (mt == "gemma2") {
    if (window && *window > 0) {
      c.slidingWindow = *window;
      for (int64_t i = 0; i < c.numLayers; i += 2)
        c.layerUsesSlidingWindow[static_cast<size_t>(i)] = true;
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

  // Gemma2 extras.
  if (mt == "gemma2") {
    auto optOrDefault = [&](const char *key, double dflt) -> Result<double> {
      if (!root.contains(key))
        return dflt;
      std::optional<double> v;
      ETLLM_ASSIGN_OR_RETURN(v, r.optDouble(key));
      return v.value_or(0.0);
    };
    ETLLM_ASSIGN_OR_RETURN(c.attnLogitSoftcapping,
                           optOrDefault("attn_logit_softcapping", 50.0));
    ETLLM_ASSIGN_OR_RETURN(c.finalLogitSoftcapping,
                           optOrDefault("final_logit_softcapping", 30.0));
    ETLLM_ASSIGN_OR_RETURN(c.queryPreAttnScalar,
                           optOrDefault("query_pre_attn_scalar", 256.0));
    if (c.attnLogitSoftcapping < 0 || c.finalLogitSoftcapping < 0)
      return r.error("attn_logit_softcapping",
                     "soft-capping values must not be negative");
    if (!(c.queryPreAttnScalar > 0))
      return r.error("query_pre_attn_scalar", "must be positive");
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
  ETLLM_ASSIGN_OR_RETURN(c.bosTokenId, tokenId("bos_token_id", arch->bos));
  ETLLM_ASSIGN_OR_RETURN(c.padTokenId, tokenId("pad_token_id", arch->pad));
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
    ETLLM_ASSIGN_OR_RETURN(eosId, tokenId("eos_token_id", arch->eos));
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
  ModelConfig t = c;
  ETLLM_RETURN_IF_ERROR(applyArchitectureTraits(t));
  std::vector<ExpectedTensor> out;
  auto add = [&](std::string name, std::vector<int64_t> shape,
                 bool isNorm = false, bool isBias = false) {
    out.push_back({std::move(name), std::move(shape), isNorm, isBias});
  };
  const int64_t h = t.hiddenSize, q = t.numHeads * t.headDim,
                kv = t.numKvHeads * t.headDim, ffn = t.intermediateSize;
  add("model.embed_tokens.weight", {t.vocabSize, h});
  for (int64_t l = 0; l < t.numLayers; ++l) {
    std::string p = "model.layers." + std::to_string(l) + ".";
    add(p + "input_layernorm.weight", {h}, true);
    if (t.fusedQkv) {
      add(p + "self_attn.qkv_proj.weight", {q + 2 * kv, h});
      if (t.attentionBias)
        add(p + "self_attn.qkv_proj.bias", {q + 2 * kv}, false, true);
    } else {
      add(p + "self_attn.q_proj.weight", {q, h});
      if (t.attentionBias)
        add(p + "self_attn.q_proj.bias", {q}, false, true);
      add(p + "self_attn.k_proj.weight", {kv, h});
      if (t.attentionBias)
        add(p + "self_attn.k_proj.bias", {kv}, false, true);
      add(p + "self_attn.v_proj.weight", {kv, h});
      if (t.attentionBias)
        add(p + "self_attn.v_proj.bias", {kv}, false, true);
    }
    add(p + "self_attn.o_proj.weight", {h, q});
    if (t.oProjBias)
      add(p + "self_attn.o_proj.bias", {h}, false, true);
    if (t.qkNorm) {
      add(p + "self_attn.q_norm.weight", {t.headDim}, true);
      add(p + "self_attn.k_norm.weight", {t.headDim}, true);
    }
    add(p + "post_attention_layernorm.weight", {h}, true);
    if (t.sandwichNorms) {
      add(p + "pre_feedforward_layernorm.weight", {h}, true);
      add(p + "post_feedforward_layernorm.weight", {h}, true);
    }
    if (t.fusedGateUp) {
      add(p + "mlp.gate_up_proj.weight", {2 * ffn, h});
    } else {
      add(p + "mlp.gate_proj.weight", {ffn, h});
      if (t.mlpBias)
        add(p + "mlp.gate_proj.bias", {ffn}, false, true);
      add(p + "mlp.up_proj.weight", {ffn, h});
      if (t.mlpBias)
        add(p + "mlp.up_proj.bias", {ffn}, false, true);
    }
    add(p + "mlp.down_proj.weight", {h, ffn});
    if (t.mlpBias)
      add(p + "mlp.down_proj.bias", {h}, false, true);
  }
  add("model.norm.weight", {h}, true);
  if (!t.tieWordEmbeddings)
    add("lm_head.weight", {t.vocabSize, h});
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
  const ArchDefaults *arch = findArch(c.architecture, c.modelType);
  const std::string mt = c.modelType;
  json j;
  j["architectures"] = json::array({c.architecture});
  j["model_type"] = mt;
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
  if (c.bosTokenId >= 0 || arch->bos >= 0)
    j["bos_token_id"] = c.bosTokenId >= 0 ? json(c.bosTokenId) : json();
  if (c.eosTokenIds.size() == 1)
    j["eos_token_id"] = c.eosTokenIds[0];
  else if (c.eosTokenIds.size() > 1)
    j["eos_token_id"] = c.eosTokenIds;
  else if (arch->eos >= 0)
    j["eos_token_id"] = json();
  if (c.padTokenId >= 0)
    j["pad_token_id"] = c.padTokenId;
  else if (arch->pad >= 0)
    j["pad_token_id"] = json();
  // to_diff_dict writes tie_word_embeddings unless it equals both the base
  // default (true) and the class default.
  if (!(c.tieWordEmbeddings && arch->tieWordEmbeddings))
    j["tie_word_embeddings"] = c.tieWordEmbeddings;
  j["hidden_act"] = c.hiddenAct;

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
  auto requireNoSlidingWindow = [&]() -> Status {
    if (c.slidingWindow != 0)
      return Error(c.architecture + " has no sliding window");
    return Status();
  };
  auto requireDefaultHeadDim = [&]() -> Status {
    if (!defaultHeadDim)
      return Error(c.architecture + " requires head_dim * heads == hidden");
    return Status();
  };
  auto requireUniformWindow = [&](bool expectAll) -> Status {
    for (bool b : c.layerUsesSlidingWindow)
      if (b != (expectAll && c.slidingWindow > 0))
        return Error(c.architecture +
                     ": per-layer sliding windows cannot be expressed");
    return Status();
  };
  if (c.partialRotaryFactor != 1.0 && mt != "phi3")
    return Error(c.architecture + " has no partial_rotary_factor");
  if (!c.ropeScaling.type.empty() && mt != "llama" && mt != "qwen2" &&
      mt != "qwen3" && mt != "phi3" && mt != "mistral")
    return Error(c.architecture + ": rope scaling cannot be expressed");

  if (mt == "llama") {
    ETLLM_RETURN_IF_ERROR(requireNoSlidingWindow());
    j["attention_bias"] = c.attentionBias;
    j["mlp_bias"] = c.mlpBias;
    j["head_dim"] = c.headDim;
    j["pretraining_tp"] = 1;
    j["rope_scaling"] = ropeScaling;
  } else if (mt == "mistral") {
    ETLLM_RETURN_IF_ERROR(requireUniformWindow(true));
    j["head_dim"] = c.headDim;
    j["sliding_window"] = c.slidingWindow > 0 ? json(c.slidingWindow) : json();
    if (!ropeScaling.is_null())
      j["rope_scaling"] = ropeScaling;
  } else if (mt == "qwen2" || mt == "qwen3") {
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
    j["rope_scaling"] = ropeScaling;
    if (mt == "qwen3") {
      j["head_dim"] = c.headDim;
      j["attention_bias"] = c.attentionBias;
    } else {
      if (!defaultHeadDim)
        j["head_dim"] = c.headDim;
    }
  } else if (mt == "phi3") {
    ETLLM_RETURN_IF_ERROR(requireUniformWindow(true));
    ETLLM_RETURN_IF_ERROR(requireDefaultHeadDim());
    j["embd_pdrop"] = 0.0;
    j["resid_pdrop"] = 0.0;
    j["original_max_position_embeddings"] =
        c.originalMaxPositionEmbeddings > 0 ? c.originalMaxPositionEmbeddings
                                            : c.maxPositionEmbeddings;
    j["partial_rotary_factor"] = c.partialRotaryFactor;
    j["rope_scaling"] = ropeScaling;
    j["sliding_window"] = c.slidingWindow > 0 ? json(c.slidingWindow) : json();
  } else if (mt == "gemma") {
    ETLLM_RETURN_IF_ERROR(requireNoSlidingWindow());
    j["head_dim"] = c.headDim;
    j["attention_bias"] = c.attentionBias;
    j["hidden_activation"] = json();
  } else if (mt == "gemma2") {
    for (int64_t i = 0; i < c.numLayers; ++i)
      if (c.layerUsesSlidingWindow[static_cast<size_t>(i)] !=
          (c.slidingWindow > 0 && i % 2 == 0))
        return Error("Gemma2ForCausalLM: only even layers can use the "
                     "sliding window");
    j["head_dim"] = c.headDim;
    j["attention_bias"] = c.attentionBias;
    j["hidden_activation"] = c.hiddenAct;
    j["hidden_act"] = "gelu_pytorch_tanh";
    j["attn_logit_softcapping"] =
        c.attnLogitSoftcapping > 0 ? json(c.attnLogitSoftcapping) : json();
    j["final_logit_softcapping"] =
        c.finalLogitSoftcapping > 0 ? json(c.finalLogitSoftcapping) : json();
    double scalar = c.queryPreAttnScalar > 0 ? c.queryPreAttnScalar
                                             : static_cast<double>(c.headDim);
    if (scalar == std::floor(scalar) && scalar < 1e15)
      j["query_pre_attn_scalar"] = static_cast<int64_t>(scalar);
    else
      j["query_pre_attn_scalar"] = scalar;
    j["sliding_window"] = c.slidingWindow > 0 ? json(c.slidingWindow) : json();
    j["cache_implementation"] = "hybrid";
  }
  if ((c.attentionBias || c.oProjBias) && (mt == "mistral" || mt == "phi3"))
    return Error(c.architecture + " has no attention bias");
  if (c.mlpBias && mt != "llama")
    return Error(c.architecture + " has no mlp bias");
  return j.dump(2) + "\n";
}

} // namespace etllm::formats
