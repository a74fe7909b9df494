//===- Lora.cpp - LoRA adapters (PEFT, GGUF) merged into float weights ----===//

#include "etllm/Formats/Lora.h"
#include "GgufInternal.h"
#include "Internal.h"

#include "etllm/Formats/Safetensors.h"
#include "etllm/Models/Registry.h"
#include "etllm/runtime/flags.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <set>
#include <stdexcept>

namespace etllm::formats {

using json = nlohmann::json;

Result<LoraSpec> parseLoraSpec(std::string_view text, std::string_view what) {
  // The runtime's parser: `etllm-run --lora FILE[:SCALE]` reads the same.
  auto parsed = rt::parsePathAndScale(what, text);
  if (!parsed.ok())
    return parsed.error();
  return LoraSpec{parsed->first, parsed->second};
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

namespace {
bool isGgufFile(const std::string &path) {
  if (detail::isDirectory(path))
    return false;
  // A GGUF adapter starts with the magic; PEFT's safetensors with a u64.
  Result<std::shared_ptr<rt::MappedFile>> f = rt::MappedFile::open(path);
  return f && (*f)->size() >= 4 && std::memcmp((*f)->data(), "GGUF", 4) == 0;
}
} // namespace

Result<std::unique_ptr<LoraAdapter>> LoraAdapter::open(const std::string &path,
                                                       const Checkpoint *base) {
  if (!isGgufFile(path))
    return openPeft(path);
  if (!base || !base->hasConfig())
    return openGguf(path, nullptr);
  Base b;
  b.path = base->path();
  b.ggufArch = ggufArchForModelType(base->config().modelType);
  b.numHeads = base->config().numHeads;
  b.numKvHeads = base->config().numKvHeads;
  return openGguf(path, &b);
}

Result<std::unique_ptr<LoraAdapter>> LoraAdapter::open(const std::string &path,
                                                       const Base &base) {
  return isGgufFile(path) ? openGguf(path, &base) : openPeft(path);
}

Result<std::unique_ptr<LoraAdapter>>
LoraAdapter::openGguf(const std::string &path, const Base *base) {
  Result<std::unique_ptr<Checkpoint>> ck = openGgufLoraAdapter(path);
  if (!ck)
    return ck.error();
  auto adapter = std::unique_ptr<LoraAdapter>(new LoraAdapter());
  adapter->path_ = path;
  adapter->format_ = "gguf";
  adapter->files_ = {path};
  adapter->tensors_ = std::move(ck.value());
  const Checkpoint &c = *adapter->tensors_;
  detail::MetaReader meta(c);
  auto bad = [&](const std::string &key, const std::string &why) {
    return Error(path + ": metadata key '" + key + "': " + why);
  };
  // llama.cpp reads adapter.lora.alpha as f32 and takes a missing key as 0.
  Result<std::optional<double>> alpha = meta.optFloat("adapter.lora.alpha");
  if (!alpha)
    return alpha.error();
  adapter->alpha_ = alpha->value_or(0.0);
  if (adapter->alpha_ < 0)
    return bad("adapter.lora.alpha",
               "negative alpha " + std::to_string(adapter->alpha_));
  if (c.metadata("adapter.alora.invocation_tokens"))
    return bad("adapter.alora.invocation_tokens",
               "activated LoRA (aLoRA) is not supported");
  const std::string arch = *c.metadata("general.architecture")->toString();
  const models::FamilySpec *family = detail::ggufFamily(c, arch);
  // openGgufLoraAdapter refused unknown architectures.
  if (base && !base->ggufArch.empty() && base->ggufArch != arch)
    return bad("general.architecture", "the adapter is for '" + arch + "', " +
                                           base->path + " is a '" +
                                           base->ggufArch + "' model");
  const std::string qName =
      std::string(
          family->hfNames[static_cast<size_t>(models::HfModule::QProj)]) +
      ".weight";
  const std::string kName =
      std::string(
          family->hfNames[static_cast<size_t>(models::HfModule::KProj)]) +
      ".weight";

  for (const TensorRef &t : c.tensors()) {
    auto badTensor = [&](const std::string &why) {
      return Error(path + ": tensor '" + t.sourceName + "': " + why);
    };
    bool isA = t.name.size() > 7 &&
               t.name.compare(t.name.size() - 7, 7, ".lora_a") == 0;
    std::string weight = t.name.substr(0, t.name.size() - 7);
    if (weight == "model.embed_tokens.weight")
      return badTensor("LoRA on embeddings is not supported");
    if (t.dtype != DType::F32 && t.dtype != DType::F16 &&
        t.dtype != DType::BF16 && t.dtype != DType::Q8_0)
      return badTensor(std::string("type ") + dtypeName(t.dtype) +
                       " (expected F32, F16, BF16 or Q8_0)");
    if (t.shape.size() != 2)
      return badTensor("shape " + shapeToString(t.shape) + " is not 2-D");
    Target &target = adapter->targets_[weight];
    (isA ? target.a : target.b) = &t;
  }
  if (adapter->targets_.empty())
    return Error(path + ": the adapter has no LoRA tensors");
  for (auto &[name, target] : adapter->targets_) {
    if (!target.a || !target.b)
      return Error(path + ": '" + hfNameToGguf(*family, name) + "' has lora_" +
                   (target.a ? "a" : "b") + " but no lora_" +
                   (target.a ? "b" : "a"));
    // llama.cpp: a [r, in] (ne [in, r]), b [out, r] (ne [r, out]).
    int64_t rank = target.a->shape[0];
    if (target.b->shape[1] != rank)
      return Error(path + ": tensor '" + target.b->sourceName + "': shape " +
                   shapeToString(target.b->shape) + " does not match " +
                   target.a->sourceName + "'s " +
                   shapeToString(target.a->shape) + " (rank " +
                   std::to_string(rank) + ")");
    if (rank < 1 || rank > kMaxLoraRank)
      return Error(path + ": tensor '" + target.a->sourceName + "': rank " +
                   std::to_string(rank) + " is outside 1.." +
                   std::to_string(kMaxLoraRank));
    target.rank = rank;
    target.scaling =
        adapter->alpha_ != 0 ? adapter->alpha_ / double(rank) : 1.0;
    adapter->rank_ = std::max(adapter->rank_, rank);
    if (family->gguf.permutesQk) {
      auto endsWith = [&](const std::string &s) {
        return name.size() >= s.size() &&
               name.compare(name.size() - s.size(), s.size(), s) == 0;
      };
      bool q = endsWith(qName), k = endsWith(kName);
      if (q || k) {
        if (!base || (q ? base->numHeads : base->numKvHeads) <= 0)
          return Error(path + ": '" + hfNameToGguf(*family, name) +
                       "': the rows of a GGUF adapter's q/k lora_b are "
                       "permuted by head; their order needs the base model");
        target.qkPermuteHeads = q ? base->numHeads : base->numKvHeads;
        int64_t rows = target.b->shape[0], h = target.qkPermuteHeads;
        if (h <= 0 || rows % h != 0 || (rows / h) % 2 != 0)
          return Error(path + ": tensor '" + target.b->sourceName + "': " +
                       std::to_string(rows) + " rows cannot be split into " +
                       std::to_string(h) + " heads of even size");
      }
    }
  }
  return adapter;
}

Result<std::unique_ptr<LoraAdapter>>
LoraAdapter::openPeft(const std::string &path) {
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
  adapter->format_ = "peft";
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
  const double scaling =
      rslora ? adapter->alpha_ / std::sqrt(double(adapter->rank_))
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
    target.scaling = scaling;
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

Result<std::pair<std::vector<float>, std::vector<float>>>
LoraAdapter::factors(const Target &t) const {
  Result<std::vector<float>> a = toFloat32(*t.a);
  if (!a)
    return a.error();
  Result<std::vector<float>> b = toFloat32(*t.b);
  if (!b)
    return b.error();
  for (const auto *m : {&*a, &*b})
    for (float v : *m)
      if (!std::isfinite(v))
        return Error(path_ + ": tensor '" +
                     (m == &*a ? t.a->sourceName : t.b->sourceName) +
                     "' holds NaN or infinity");
  if (t.qkPermuteHeads > 0) {
    std::vector<float> hfOrder(b->size());
    ETLLM_RETURN_IF_ERROR(
        permuteQkRowsToRotateHalf(DType::F32, t.b->shape, t.qkPermuteHeads,
                                  reinterpret_cast<const uint8_t *>(b->data()),
                                  reinterpret_cast<uint8_t *>(hfOrder.data())));
    b->swap(hfOrder);
  }
  return std::make_pair(std::move(*a), std::move(*b));
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
  auto ab = factors(*t);
  if (!ab)
    return ab.error();
  const std::vector<float> *a = &ab->first, *b = &ab->second;
  const int64_t r = t->rank;
  const double s = scale * t->scaling;
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
