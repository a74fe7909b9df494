//===- Lora.cpp - LoRA adapters (PEFT) merged into float weights ----------===//

#include "etllm/Formats/Lora.h"
#include "Internal.h"

#include "etllm/Formats/Safetensors.h"

#include <nlohmann/json.hpp>

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <stdexcept>
#include <set>

namespace etllm::formats {

using json = nlohmann::json;

Result<LoraSpec> parseLoraSpec(std::string_view text, std::string_view what) {
  std::string w(what);
  if (text.empty())
    return Error(w + ": empty adapter path");
  LoraSpec spec;
  spec.path = std::string(text);
  size_t colon = text.rfind(':');
  if (colon != std::string_view::npos) {
    std::string tail(text.substr(colon + 1));
    char *end = nullptr;
    errno = 0;
    double v = tail.empty() ? 0 : std::strtod(tail.c_str(), &end);
    bool numeric = !tail.empty() && end == tail.c_str() + tail.size();
    if (numeric) {
      if (!std::isfinite(v) || errno == ERANGE)
        return Error(w + " '" + std::string(text) + "': the scale '" + tail +
                     "' is not a finite number");
      spec.path = std::string(text.substr(0, colon));
      spec.scale = v;
      if (spec.path.empty())
        return Error(w + " '" + std::string(text) + "': empty adapter path");
    }
  }
  return spec;
}

namespace {

/// Deepest nesting accepted in adapter_config.json (PEFT writes 2 levels).
constexpr int kMaxConfigDepth = 32;

Result<json> parseConfig(const std::string &path) {
  Result<std::string> text = detail::readTextFile(path, 16u << 20);
  if (!text)
    return text.error();
  json::parser_callback_t bound = [&](int depth, json::parse_event_t event,
                                      json &) {
    if ((event == json::parse_event_t::object_start ||
         event == json::parse_event_t::array_start) &&
        depth >= kMaxConfigDepth)
      throw std::runtime_error("JSON nested deeper than " +
                               std::to_string(kMaxConfigDepth) + " levels");
    return true;
  };
  try {
    json j = json::parse(*text, bound);
    if (!j.is_object())
      return Error(path + ": not a JSON object");
    return j;
  } catch (const std::exception &e) {
    return Error(path + ": invalid JSON: " + e.what());
  }
}

bool isFloatType(DType t) {
  return t == DType::F32 || t == DType::F16 || t == DType::BF16 ||
         t == DType::F64;
}

} // namespace

Result<std::unique_ptr<LoraAdapter>>
LoraAdapter::open(const std::string &path) {
  std::string dir = path, weights;
  if (detail::isDirectory(path)) {
    weights = detail::joinPath(path, "adapter_model.safetensors");
  } else {
    weights = path;
    size_t slash = path.find_last_of('/');
    dir = slash == std::string::npos ? "." : path.substr(0, slash);
  }
  std::string configPath = detail::joinPath(dir, "adapter_config.json");
  if (!detail::pathExists(configPath))
    return Error(path + ": not a LoRA adapter: no adapter_config.json in " +
                 dir + " (etllm reads PEFT adapters)");
  if (!detail::pathExists(weights))
    return Error(path + ": not a LoRA adapter: no " + weights);

  Result<json> cfgOr = parseConfig(configPath);
  if (!cfgOr)
    return cfgOr.error();
  const json &cfg = *cfgOr;
  auto bad = [&](const std::string &key, const std::string &why) {
    return Error(configPath + ": '" + key + "': " + why);
  };

  // What the adapter is.
  if (auto it = cfg.find("peft_type"); it != cfg.end())
    if (!it->is_string() || it->get<std::string>() != "LORA")
      return bad("peft_type",
                 "only LORA adapters are supported, not " + it->dump());
  // Keys that would change the math (refused, never ignored).
  auto refuseTrue = [&](const char *key, const char *what) -> Status {
    auto it = cfg.find(key);
    if (it != cfg.end() && it->is_boolean() && it->get<bool>())
      return bad(key, std::string(what) + " is not supported");
    if (it != cfg.end() && !it->is_boolean() && !it->is_null())
      return bad(key, "expected true or false");
    return Status();
  };
  ETLLM_RETURN_IF_ERROR(refuseTrue("use_dora", "DoRA"));
  ETLLM_RETURN_IF_ERROR(
      refuseTrue("fan_in_fan_out", "fan_in_fan_out (Conv1D weights)"));
  for (const char *key : {"rank_pattern", "alpha_pattern"}) {
    auto it = cfg.find(key);
    if (it != cfg.end() && !it->is_null() && !(it->is_object() && it->empty()))
      return bad(key, "per-module ranks or alphas are not supported");
  }
  if (auto it = cfg.find("bias"); it != cfg.end() && !it->is_null())
    if (!it->is_string() || it->get<std::string>() != "none")
      return bad("bias", "only \"none\" is supported");
  if (auto it = cfg.find("modules_to_save"); it != cfg.end())
    if (!it->is_null() && !(it->is_array() && it->empty()))
      return bad("modules_to_save", "full replacement modules are not "
                                    "supported");

  auto adapter = std::unique_ptr<LoraAdapter>(new LoraAdapter());
  adapter->path_ = path;
  adapter->files_ = {configPath, weights};
  auto r = cfg.find("r");
  if (r == cfg.end() || !r->is_number_integer())
    return bad("r", "missing or not an integer");
  adapter->rank_ = r->get<int64_t>();
  if (adapter->rank_ < 1 || adapter->rank_ > kMaxLoraRank)
    return bad("r", "rank " + std::to_string(adapter->rank_) +
                        " is outside 1.." + std::to_string(kMaxLoraRank));
  auto alpha = cfg.find("lora_alpha");
  if (alpha == cfg.end() || !alpha->is_number())
    return bad("lora_alpha", "missing or not a number");
  adapter->alpha_ = alpha->get<double>();
  if (!std::isfinite(adapter->alpha_))
    return bad("lora_alpha", "not a finite number");
  bool rslora = false;
  if (auto it = cfg.find("use_rslora"); it != cfg.end() && it->is_boolean())
    rslora = it->get<bool>();
  adapter->scaling_ = rslora
                          ? adapter->alpha_ / std::sqrt(double(adapter->rank_))
                          : adapter->alpha_ / double(adapter->rank_);
  // target_modules: a list of module names (cross-checked below) or a regex
  // string (not checked: the tensors say which modules are adapted).
  std::set<std::string> targetModules;
  if (auto it = cfg.find("target_modules"); it != cfg.end() && it->is_array())
    for (const json &m : *it) {
      if (!m.is_string())
        return bad("target_modules", "expected a list of module names");
      targetModules.insert(m.get<std::string>());
    }

  Result<std::unique_ptr<Checkpoint>> st = openSafetensors(weights);
  if (!st)
    return st.error();
  adapter->tensors_ = std::move(st.value());

  static const std::string kPrefix = "base_model.model.";
  for (const TensorRef &t : adapter->tensors_->tensors()) {
    auto badTensor = [&](const std::string &why) {
      return Error(weights + ": tensor '" + t.name + "': " + why);
    };
    std::string_view n = t.name;
    if (n.substr(0, kPrefix.size()) != kPrefix)
      return badTensor("not a PEFT LoRA tensor name (expected '" + kPrefix +
                       "<module>.lora_A.weight' or '.lora_B.weight')");
    n.remove_prefix(kPrefix.size());
    bool isA;
    std::string_view module;
    auto endsWith = [&](std::string_view s) {
      return n.size() > s.size() && n.substr(n.size() - s.size()) == s;
    };
    if (endsWith(".lora_A.weight")) {
      isA = true;
      module = n.substr(0, n.size() - 14);
    } else if (endsWith(".lora_B.weight")) {
      isA = false;
      module = n.substr(0, n.size() - 14);
    } else if (n.find("lora_embedding_") != std::string_view::npos) {
      return badTensor("LoRA on embeddings is not supported");
    } else {
      return badTensor("not a LoRA A/B weight (only linear layers can be "
                       "adapted; biases and saved modules are not supported)");
    }
    if (!isFloatType(t.dtype))
      return badTensor(std::string("dtype ") + dtypeName(t.dtype) +
                       " (expected F32, F16, BF16 or F64)");
    if (t.shape.size() != 2)
      return badTensor("shape " + shapeToString(t.shape) + " is not 2-D");
    int64_t rank = isA ? t.shape[0] : t.shape[1];
    if (rank != adapter->rank_)
      return badTensor(
          "rank " + std::to_string(rank) +
          " differs from the adapter's r = " + std::to_string(adapter->rank_));
    if (t.shape[0] < 1 || t.shape[1] < 1)
      return badTensor("empty shape " + shapeToString(t.shape));
    if (!targetModules.empty()) {
      size_t dot = module.rfind('.');
      std::string last(dot == std::string_view::npos ? module
                                                     : module.substr(dot + 1));
      if (!targetModules.count(last))
        return badTensor("module '" + last +
                         "' is not in the adapter's target_modules");
    }
    Target &target = adapter->targets_[std::string(module) + ".weight"];
    (isA ? target.a : target.b) = &t;
    target.rank = adapter->rank_;
  }
  if (adapter->targets_.empty())
    return Error(weights + ": the adapter has no LoRA tensors");
  for (const auto &[name, target] : adapter->targets_) {
    if (!target.a || !target.b)
      return Error(weights + ": '" + name + "' has lora_" +
                   (target.a ? "A" : "B") + " but no lora_" +
                   (target.a ? "B" : "A"));
  }
  return adapter;
}

const LoraAdapter::Target *
LoraAdapter::find(std::string_view weightName) const {
  auto it = targets_.find(weightName);
  return it == targets_.end() ? nullptr : &it->second;
}

Status LoraAdapter::checkAgainst(const Checkpoint &base) const {
  for (const auto &[name, target] : targets_) {
    const TensorRef *w = base.find(name);
    if (!w)
      return Error(path_ + ": adapter target '" + name + "' is not in " +
                   base.path());
    if (w->shape.size() != 2)
      return Error(path_ + ": adapter target '" + name + "' in " + base.path() +
                   " has shape " + shapeToString(w->shape) +
                   ", not a 2-D linear weight");
    std::vector<int64_t> want = {target.b->shape[0], target.a->shape[1]};
    if (w->shape != want)
      return Error(path_ + ": adapter target '" + name + "' has shape " +
                   shapeToString(w->shape) + " in " + base.path() +
                   ", the adapter's B A is " + shapeToString(want));
  }
  return Status();
}

Status LoraAdapter::mergeInto(std::string_view weightName, double scale,
                              int64_t rows, int64_t cols, float *w) const {
  const Target *t = find(weightName);
  if (!t)
    return Status();
  if (t->b->shape[0] != rows || t->a->shape[1] != cols)
    return Error(path_ + ": '" + std::string(weightName) + "' is [" +
                 std::to_string(rows) + ", " + std::to_string(cols) +
                 "], the adapter's B A is " +
                 shapeToString({t->b->shape[0], t->a->shape[1]}));
  Result<std::vector<float>> a = toFloat32(*t->a);
  if (!a)
    return a.error();
  Result<std::vector<float>> b = toFloat32(*t->b);
  if (!b)
    return b.error();
  for (const auto *m : {&*a, &*b})
    for (float v : *m)
      if (!std::isfinite(v))
        return Error(path_ + ": tensor '" +
                     (m == &*a ? t->a->name : t->b->name) +
                     "' holds NaN or infinity");
  const int64_t r = t->rank;
  const double s = scale * scaling_;
  std::vector<double> a64(a->begin(), a->end()), row(cols);
  for (int64_t i = 0; i < rows; ++i) {
    std::fill(row.begin(), row.end(), 0.0);
    for (int64_t k = 0; k < r; ++k) {
      double bik = (*b)[i * r + k];
      const double *ak = a64.data() + k * cols;
      for (int64_t j = 0; j < cols; ++j)
        row[j] += bik * ak[j];
    }
    float *wi = w + i * cols;
    for (int64_t j = 0; j < cols; ++j)
      wi[j] = float(double(wi[j]) + s * row[j]);
  }
  return Status();
}

} // namespace etllm::formats
