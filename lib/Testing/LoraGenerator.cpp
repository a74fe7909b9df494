//===- LoraGenerator.cpp - Random LoRA adapters for a checkpoint ----------===//
//
// Writes a seeded random LoRA adapter for an existing checkpoint, as PEFT's
// save_pretrained writes it (adapter_config.json + adapter_model.safetensors)
// or as llama.cpp's convert_lora_to_gguf.py writes it (a GGUF with
// general.type = adapter). The values depend only on the seed, the HF module
// name and the element index, so both forms of one seed hold the same
// adapter: the GGUF only renames the tensors and, for families whose
// converter permutes q/k rows, permutes the rows of q/k's lora_b as the
// converter permutes the base weight's (LlamaModel.permute applied to B).
//
//===----------------------------------------------------------------------===//

#include "Internal.h"
#include "etllm/Testing/Generator.h"
#include "etllm/Formats/Gguf.h"
#include "etllm/Formats/Lora.h"
#include "etllm/Formats/Safetensors.h"
#include "etllm/Models/Registry.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <filesystem>
#include <set>

namespace etllm::formats {

namespace {

/// The module kind of an HF weight name inside a decoder layer
/// ("model.layers.3.self_attn.q_proj.weight" -> "q_proj"), or "".
std::string moduleKind(const std::string &name) {
  if (name.rfind("model.layers.", 0) != 0 || name.size() < 7 ||
      name.compare(name.size() - 7, 7, ".weight") != 0)
    return "";
  std::string module = name.substr(0, name.size() - 7);
  size_t dot = module.rfind('.');
  return dot == std::string::npos ? "" : module.substr(dot + 1);
}

std::vector<float> randomMatrix(const LoraGeneratorOptions &o,
                                const std::string &name, int64_t n) {
  // generatorValue draws N(0, 0.02^2); rescale to the adapter's deviation.
  const float k = static_cast<float>(o.stdev / 0.02);
  std::vector<float> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i)
    v[i] = k * generatorValue(o.seed, name, false, false, uint64_t(i));
  return v;
}

} // namespace

Status generateLoraAdapter(const LoraGeneratorOptions &o) {
  if (o.output.empty())
    return Error("no output path");
  if (o.format != "hf" && o.format != "gguf")
    return Error("--format '" + o.format + "' (hf or gguf)");
  if (o.rank < 1 || o.rank > kMaxLoraRank)
    return Error("--rank " + std::to_string(o.rank) + " is outside 1.." +
                 std::to_string(kMaxLoraRank));
  if (!std::isfinite(o.alpha) || o.alpha < 0)
    return Error("--alpha must be a finite number >= 0");
  if (!std::isfinite(o.stdev) || o.stdev <= 0)
    return Error("--lora-std must be a finite number > 0");
  DType type = o.format == "hf" ? o.dtype : o.ggufType.value_or(o.dtype);
  if (type != DType::F32 && type != DType::F16 && type != DType::BF16 &&
      !(o.format == "gguf" && type == DType::Q8_0))
    return Error(std::string("adapter tensors of type ") + dtypeName(type) +
                 " are not supported (f32, f16, bf16; q8_0 in GGUF)");

  Result<std::unique_ptr<Checkpoint>> base = openCheckpoint(o.base);
  if (!base)
    return base.error();
  const ModelConfig &config = (*base)->config();
  const models::FamilySpec *family = familyOf(config);
  if (!family)
    return Error(o.base + ": no model family for '" + config.architecture +
                 "'");
  std::set<std::string> wanted(o.targets.begin(), o.targets.end());
  if (wanted.empty())
    wanted = {"q_proj",       "k_proj",  "v_proj",    "o_proj",
              "gate_proj",    "up_proj", "down_proj", "qkv_proj",
              "gate_up_proj", "w1",      "w2",        "w3"};

  struct Pair {
    std::string module; ///< HF module path, without ".weight"
    int64_t out, in;
    std::string kind;
  };
  std::vector<Pair> pairs;
  std::set<std::string> kinds;
  for (const TensorRef &t : (*base)->tensors()) {
    std::string kind = moduleKind(t.name);
    if (kind.empty() || !wanted.count(kind) || t.shape.size() != 2)
      continue;
    // llama.cpp's adapters cannot hold per-expert pairs (its experts are
    // stacked tensors): experts are left out of both forms alike.
    if (t.name.find(".experts.") != std::string::npos)
      continue;
    pairs.push_back(
        {t.name.substr(0, t.name.size() - 7), t.shape[0], t.shape[1], kind});
    kinds.insert(kind);
  }
  for (const std::string &k : wanted)
    if (!o.targets.empty() && !kinds.count(k))
      return Error("--lora-targets: '" + k + "' is not a linear weight of " +
                   o.base);
  if (pairs.empty())
    return Error(o.base + ": no linear weight to adapt");

  auto values = [&](const Pair &p, bool isA) {
    return isA ? randomMatrix(o, p.module + ".lora_A", o.rank * p.in)
               : randomMatrix(o, p.module + ".lora_B", p.out * o.rank);
  };
  auto encoded =
      [&](const std::vector<float> &v) -> Result<std::vector<uint8_t>> {
    Result<uint64_t> bytes = byteSize(type, {int64_t(v.size())});
    if (!bytes)
      return bytes.error();
    std::vector<uint8_t> out(*bytes);
    ETLLM_RETURN_IF_ERROR(
        encodeFloats(type, v.data(), int64_t(v.size()), out.data()));
    return out;
  };

  if (o.format == "hf") {
    std::error_code ec;
    std::filesystem::create_directories(o.output, ec);
    if (ec)
      return Error(o.output + ": cannot create the directory: " + ec.message());
    nlohmann::json cfg = {{"peft_type", "LORA"},
                          {"r", o.rank},
                          {"lora_alpha", o.alpha},
                          {"target_modules", std::vector<std::string>(
                                                 kinds.begin(), kinds.end())},
                          {"lora_dropout", 0.0},
                          {"bias", "none"},
                          {"use_rslora", false},
                          {"use_dora", false},
                          {"fan_in_fan_out", false},
                          {"task_type", "CAUSAL_LM"},
                          {"base_model_name_or_path", o.base}};
    ETLLM_RETURN_IF_ERROR(detail::writeTextFile(
        detail::joinPath(o.output, "adapter_config.json"), cfg.dump(2) + "\n"));
    SafetensorsWriter w;
    w.setMetadata("format", "pt");
    for (const Pair &p : pairs) {
      ETLLM_RETURN_IF_ERROR(
          w.addTensor("base_model.model." + p.module + ".lora_A.weight", type,
                      {o.rank, p.in}));
      ETLLM_RETURN_IF_ERROR(
          w.addTensor("base_model.model." + p.module + ".lora_B.weight", type,
                      {p.out, o.rank}));
    }
    ETLLM_RETURN_IF_ERROR(
        w.open(detail::joinPath(o.output, "adapter_model.safetensors")));
    for (const Pair &p : pairs)
      for (bool isA : {true, false}) {
        Result<std::vector<uint8_t>> bytes = encoded(values(p, isA));
        if (!bytes)
          return bytes.error();
        ETLLM_RETURN_IF_ERROR(w.write(bytes->data(), bytes->size()));
      }
    return w.finish();
  }

  if (!family->gguf.arch)
    return Error(config.architecture + " has no GGUF form");
  const std::string qName =
      std::string(family->hfNames[size_t(models::HfModule::QProj)]);
  const std::string kName =
      std::string(family->hfNames[size_t(models::HfModule::KProj)]);
  GgufWriter w;
  w.set("general.architecture", GgufValue::str(family->gguf.arch));
  w.set("general.type", GgufValue::str("adapter"));
  w.set("general.name", GgufValue::str("etllm synthetic LoRA"));
  w.set("adapter.type", GgufValue::str("lora"));
  w.set("adapter.lora.alpha", GgufValue::f32(static_cast<float>(o.alpha)));
  std::vector<std::string> names;
  for (const Pair &p : pairs) {
    std::string g = hfNameToGguf(*family, p.module + ".weight");
    if (g.empty())
      return Error("'" + p.module + ".weight' has no GGUF name in '" +
                   family->gguf.arch + "'");
    names.push_back(g);
    ETLLM_RETURN_IF_ERROR(w.addTensor(g + ".lora_a", type, {o.rank, p.in}));
    ETLLM_RETURN_IF_ERROR(w.addTensor(g + ".lora_b", type, {p.out, o.rank}));
  }
  ETLLM_RETURN_IF_ERROR(w.open(o.output));
  for (const Pair &p : pairs)
    for (bool isA : {true, false}) {
      std::vector<float> v = values(p, isA);
      auto endsWith = [&](const std::string &suffix) {
        return p.module.size() > suffix.size() &&
               p.module.compare(p.module.size() - suffix.size(), suffix.size(),
                                suffix) == 0 &&
               p.module[p.module.size() - suffix.size() - 1] == '.';
      };
      int64_t heads = !family->gguf.permutesQk ? 0
                      : endsWith(qName)        ? config.numHeads
                      : endsWith(kName)        ? config.numKvHeads
                                               : 0;
      if (!isA && heads > 0) {
        std::vector<float> interleaved(v.size());
        ETLLM_RETURN_IF_ERROR(permuteQkRowsToInterleaved(
            DType::F32, {p.out, o.rank}, heads,
            reinterpret_cast<const uint8_t *>(v.data()),
            reinterpret_cast<uint8_t *>(interleaved.data())));
        v.swap(interleaved);
      }
      Result<std::vector<uint8_t>> bytes = encoded(v);
      if (!bytes)
        return bytes.error();
      ETLLM_RETURN_IF_ERROR(w.write(bytes->data(), bytes->size()));
    }
  return w.finish();
}

} // namespace etllm::formats
