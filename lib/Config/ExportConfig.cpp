//===- ExportConfig.cpp - export_config.yaml ------------------------------===//
#include "etllm/Config/ExportConfig.h"

#include "etllm/Config/RecipeAliases.h"
#include "etllm/Transforms/OptionEnums.h"

#include "etllm/runtime/flags.h"
#include "etllm/runtime/lora.h"

#include <yaml-cpp/depthguard.h>
#include <yaml-cpp/yaml.h>

#include <cstdlib>
#include <fstream>
#include <functional>
#include <sstream>

using etllm::rt::Error;
using etllm::rt::Result;
using etllm::rt::Status;

namespace etllm {

namespace {
/// An enum key's values: those of the option enum (OptionEnums.def), after
/// `pipeline` (the recipe's choice) for the keys that override a recipe.
template <typename E> std::vector<const char *> allowedOf(bool withPipeline) {
  std::vector<const char *> values;
  if (withPipeline)
    values.push_back("pipeline");
  for (const OptionEnumValue &v : optionEnumValues<E>())
    values.push_back(v.spelling);
  return values;
}
template <typename E>
void printOptionEnum(std::ostream &os, const char *type) {
  os << "## " << type << "\n\n" << optionEnumWhat<E>() << ":\n\n";
  for (const OptionEnumValue &v : optionEnumValues<E>())
    os << "- `" << v.spelling << "`: " << v.help << "\n";
  os << "\n";
}
} // namespace

const std::vector<ConfigKey> &exportConfigSchema() {
  static const std::vector<ConfigKey> schema = {
      {"model.max_seq_len",
       ConfigType::Int,
       "0",
       {},
       "KV-cache length and upper bound of the dynamic sequence dimension "
       "(prompt + generated tokens). 0 means min(max_position_embeddings, "
       "2048).",
       "512",
       0,
       1 << 20},
      {"model.dtype",
       ConfigType::Enum,
       "float32",
       {"float32", "float16", "bfloat16"},
       "Element type of activations and float weights in the graph.",
       "float32"},
      {"model.last_logits_only",
       ConfigType::Bool,
       "true",
       {},
       "Return only the last position's logits ([1, 1, vocab]) instead of "
       "every position's: what generation needs, and much cheaper in "
       "prefill.",
       "false"},
      {"model.mla_cache",
       ConfigType::Enum,
       "expanded",
       allowedOf<MlaCacheForm>(false),
       "Multi-head latent attention (DeepSeek): `expanded` caches every "
       "head's keys and values as the modeling code does; `latent` caches "
       "the compressed latent and the rotated shared key "
       "(kv_lora_rank + qk_rope_head_dim values per token and layer) and "
       "attends in the absorbed form. Other models ignore it.",
       "latent",
       INT64_MIN,
       INT64_MAX,
       {},
       false,
       /*writtenWhenDefault=*/false},
      {"model.kv_cache_dtype",
       ConfigType::Enum,
       "model",
       allowedOf<KvCacheDtype>(false),
       "Element type of the KV caches: `model` keeps the model's dtype; "
       "`int8` stores each token's key and value of each head as int8 with "
       "one f32 scale (head_dim + 8 bytes instead of 4 x head_dim in "
       "float32), quantized when written and read by the attention "
       "(etllm-quantize-kv-cache). Backends without int8 caches refuse it.",
       "int8",
       INT64_MIN,
       INT64_MAX,
       {},
       false,
       /*writtenWhenDefault=*/false},
      {"model.static_prefill_chunk",
       ConfigType::Int,
       "0",
       {},
       "Static shapes for backends that run nothing else (NPUs): 0 keeps "
       "the dynamic `forward`; C > 0 exports two methods with every shape "
       "fixed, `prefill` over C tokens (a prompt is fed in chunks, the last "
       "padded) and `decode` over one (etllm-static-methods). Each method "
       "returns its positions' logits (model.last_logits_only does not "
       "apply). At most max_seq_len.",
       "16",
       0,
       1 << 20,
       {},
       false,
       /*writtenWhenDefault=*/false},
      {"model.static_kv_cache",
       ConfigType::Enum,
       "io",
       allowedOf<StaticKvCache>(false),
       "KV caches of a static program (model.static_prefill_chunk > 0): "
       "`io` makes each cache an input of both methods and its new entries "
       "an output, the runner keeping the caches (ExecuTorch's static "
       "attention; float caches only); `in-place` keeps them the program's "
       "buffers, updated in place.",
       "in-place",
       INT64_MIN,
       INT64_MAX,
       {},
       false,
       /*writtenWhenDefault=*/false},
      {"model.kv_ring_chunk",
       ConfigType::Int,
       "0",
       {},
       "Ring KV caches (etllm-kv-ring): 0 keeps every cache max_seq_len "
       "positions; C > 0 has the runner feed at most C tokens per call, so "
       "that a sliding-window layer (Mistral, Gemma 2/3 local layers) keeps "
       "only window + C - 1 positions. In a static program it must be "
       "static_prefill_chunk, with static_kv_cache: in-place. At most "
       "max_seq_len.",
       "1",
       0,
       1 << 20,
       {},
       false,
       /*writtenWhenDefault=*/false},
      {"model.attention_sinks",
       ConfigType::Int,
       "0",
       {},
       "Attention sinks (StreamingLLM), with model.kv_ring_chunk: S > 0 keeps "
       "the first S positions of every cache for good and the rest a ring "
       "of the latest, so generation goes on past max_seq_len with the same "
       "memory instead of stopping or shifting the context. Each query sees "
       "the sinks and the latest max_seq_len - S - kv_ring_chunk + 1 "
       "positions.",
       "4",
       0,
       1 << 20,
       {},
       false,
       /*writtenWhenDefault=*/false},
      {"model.moe",
       ConfigType::Enum,
       "experts",
       allowedOf<MoeMode>(false),
       "Sparse mixture-of-experts blocks (Mixtral, Qwen-MoE): `experts` "
       "replaces each by one etllm.moe that computes only the experts each "
       "token selects (a decode step reads only their weights); `masked` "
       "keeps the exported graph's loop over every expert. Other models "
       "ignore it.",
       "masked",
       INT64_MIN,
       INT64_MAX,
       {},
       false,
       /*writtenWhenDefault=*/false},
      {"pipeline.name",
       ConfigType::Enum,
       "portable",
       {"portable", "cpu-fp32", "cpu-int4", "cpu-8da4w", "cpu-8sa4w", "cpu-gguf",
        "cpu-int8",
        "vulkan-fp32", "vulkan-fp16", "vulkan-int4", "vulkan-int4-mixed"},
       "The named recipe; the keys below override its options "
       "(docs/Pipelines.md). The former names of the `cpu-*` recipes, "
       "`xnnpack-*` (the CPU backend was called xnnpack), are aliases: "
       "`xnnpack-int4` is `cpu-int4`.",
       "cpu-8da4w",
       INT64_MIN,
       INT64_MAX,
       {},
       false,
       /*writtenWhenDefault=*/true,
       /*canonical=*/&canonicalRecipeName},
      {"model.mmproj",
       ConfigType::String,
       "",
       {},
       "A llama.cpp mmproj GGUF (a vision tower and projector: LLaVA's, "
       "projector type mlp, Gemma 3's, gemma3, or SmolVLM's, idefics3) "
       "composing the GGUF text "
       "model of `--model` into a composite program (vision_encoder, "
       "text_decoder). LLaVA's image processor is recorded as CLIP's "
       "(resize, center crop; llama.cpp pads to a square instead), Gemma "
       "3's and SmolVLM's as transformers' processors do.",
       "mmproj-model-f16.gguf",
       INT64_MIN,
       INT64_MAX,
       {},
       false,
       /*writtenWhenDefault=*/false},
      {"model.vision_encoder",
       ConfigType::String,
       "",
       {},
       "A vision encoder's IR (.mlir, as etllm.export_llm writes a traced "
       "torch.nn.Module: forward(pixels: f32 [1, 3, S, S]) -> features "
       "[1, N, hidden], its weights in the safetensors file the IR names) "
       "composed with the decoder of `--model` into a composite program "
       "(vision_encoder, text_decoder; docs/Python.md). Needs "
       "model.image_preprocessor.",
       "encoder.mlir",
       INT64_MIN,
       INT64_MAX,
       {},
       false,
       /*writtenWhenDefault=*/false},
      {"model.image_preprocessor",
       ConfigType::String,
       "",
       {},
       "With model.vision_encoder: the image processor's "
       "preprocessor_config.json (recorded in the program: how the runtime "
       "makes an image's pixels; its size must give the encoder's S x S).",
       "preprocessor_config.json",
       INT64_MIN,
       INT64_MAX,
       {},
       false,
       /*writtenWhenDefault=*/false},
      {"model.image_token_id",
       ConfigType::Int,
       "-1",
       {},
       "With model.vision_encoder: the token id that stands for an image's "
       "positions in the program's bookkeeping (never embedded; -1: 0).",
       "32000",
       -1,
       INT64_MAX,
       {},
       false,
       /*writtenWhenDefault=*/false},
      {"quantization.linear",
       ConfigType::Enum,
       "pipeline",
       allowedOf<LinearScheme>(true),
       "Linear-layer quantization: weight-only int4/int8 with float "
       "activations, or 8-bit dynamic per-token activations with int4/int8 "
       "weights, or `gguf`: each weight of a GGUF kept in its own type "
       "(blocks bit for bit). `pipeline` keeps the recipe's choice.",
       "int4"},
      {"quantization.group_size",
       ConfigType::Int,
       "0",
       {},
       "Weights per quantization group along the input dimension (32, 64, "
       "128, 256). 0 keeps the recipe's (32 for int4/8da4w, per-channel for "
       "int8/8da8w); -1 means per-channel (one group per row).",
       "64",
       2,
       1 << 16,
       {-1, 0},
       true},
      {"quantization.symmetric",
       ConfigType::Bool,
       "true",
       {},
       "Symmetric (signed, scale only) or asymmetric (unsigned, scale and "
       "offset) weight quantization.",
       "false"},
      {"quantization.scale_dtype",
       ConfigType::Enum,
       "pipeline",
       {"pipeline", "float32", "float16"},
       "Storage type of the scales (and offsets). `pipeline` keeps the "
       "recipe's (float16 for cpu-int4: Q4_0's 4.5 bits per weight; "
       "float32 otherwise).",
       "float16"},
      {"quantization.activations",
       ConfigType::Enum,
       "pipeline",
       {"pipeline", "float32", "int8-block", "int8-static"},
       "Activations of int4/int8 linear layers: float32 (weight-only), "
       "int8-block (quantized at run time to int8 per block of 32 values, "
       "symmetric, as llama.cpp does for Q4_0/Q8_0) or int8-static (int8 per "
       "tensor, symmetric, one scale per linear input fixed at export from "
       "quantization.calibration: what NPUs run; the 8da schemes too). "
       "`pipeline` keeps the recipe's (int8-block for cpu-int4, int8-static "
       "for cpu-8sa4w, float32 otherwise). Otherwise the 8da schemes "
       "quantize per token at run time.",
       "float32"},
      {"quantization.calibration",
       ConfigType::String,
       "",
       {},
       "Calibration text (UTF-8, at most 64 MiB) for int8-static "
       "activations: the float program runs on windows of it "
       "(etllm-calibrate) and each linear's scale is the largest |x| its "
       "input took / 127. Tokenized with the program's tokenizer "
       "(`tokenizer`, a GGUF's vocabulary).",
       "calibration.txt",
       INT64_MIN,
       INT64_MAX,
       {},
       false,
       /*writtenWhenDefault=*/false},
      {"quantization.calibration_samples",
       ConfigType::Int,
       "8",
       {},
       "Windows of the calibration text run, each from position 0 (fewer "
       "when the text ends first).",
       "32",
       1,
       4096,
       {},
       false,
       /*writtenWhenDefault=*/false},
      {"quantization.calibration_window",
       ConfigType::Int,
       "128",
       {},
       "Tokens per calibration window (at most model.max_seq_len).",
       "256",
       1,
       1 << 20,
       {},
       false,
       /*writtenWhenDefault=*/false},
      {"quantization.embedding",
       ConfigType::Enum,
       "pipeline",
       allowedOf<EmbeddingScheme>(true),
       "Token-embedding table quantization. `pipeline` keeps the recipe's "
       "(int4 group 32 for cpu-int4, int8 per row for cpu-8da4w and "
       "cpu-int8, the GGUF's own type for cpu-gguf, none "
       "otherwise).",
       "int8"},
      {"quantization.embedding_group_size",
       ConfigType::Int,
       "0",
       {},
       "Group size of the embedding quantization; -1 is one group per row, "
       "0 keeps the recipe's (32 for cpu-int4, whose embedding table is "
       "the tied lm_head's; one per row otherwise).",
       "32",
       2,
       1 << 16,
       {-1, 0},
       true},
      {"quantization.output_layer",
       ConfigType::Enum,
       "pipeline",
       allowedOf<OutputLayerScheme>(true),
       "Exception for the output layer (lm_head): `same` quantizes it like "
       "the other linears, e.g. `int8` keeps it at 8 bits. `pipeline` keeps "
       "the recipe's (8da8w per channel for cpu-8da4w, same otherwise).",
       "int8"},
      {"quantization.exclude",
       ConfigType::StringList,
       "[]",
       {},
       "Linear layers (module paths, `*` matches any run of characters) to "
       "keep in float.",
       "[\"model.layers.0.*\"]"},
      {"backends",
       ConfigType::StringList,
       "[]",
       {},
       "Backends in priority order for partitioning; empty keeps the "
       "recipe's. Operations no backend takes run on portable kernels.",
       "[cpu]"},
      {"backend_options",
       ConfigType::StringList,
       "[]",
       {},
       "Options of the backends' compiler halves, each "
       "`<backend>.<key>=<value>`, after the recipe's: `vulkan.precision` "
       "(f32, f16), `vulkan.max-binding-bytes` (the largest storage binding "
       "the target GPU takes; 128 MiB by default), `vulkan.exclude` (ops "
       "left to the next backend, `:`-separated, e.g. "
       "`etllm.rope:etllm.sdpa`) (docs/Pipelines.md).",
       "[\"vulkan.precision=f32\"]",
       INT64_MIN,
       INT64_MAX,
       {},
       false,
       /*writtenWhenDefault=*/false},
      {"lora",
       ConfigType::StringList,
       "[]",
       {},
       "LoRA adapters (PEFT directories: adapter_config.json + "
       "adapter_model.safetensors, or llama.cpp LoRA GGUF files) merged "
       "into the float weights before "
       "quantization, each `PATH` or `PATH:SCALE` (scale 1 by default); "
       "`--lora` adds more (docs/LoRA.md).",
       "[\"adapters/chat:0.5\"]",
       INT64_MIN,
       INT64_MAX,
       {},
       false,
       /*writtenWhenDefault=*/false},
      {"lora_runtime.targets",
       ConfigType::StringList,
       "[]",
       {},
       "Linear layers given hooks for LoRA adapters loaded at run time "
       "(`etllm-export-lora`, `etllm-run --lora`): module kinds, the last "
       "part of the module path (q_proj, k_proj, v_proj, o_proj, "
       "gate_proj, up_proj, down_proj; qkv_proj, gate_up_proj for fused "
       "projections). Empty: no hooks, the program is unchanged "
       "(docs/LoRA.md).",
       "[q_proj, v_proj]",
       INT64_MIN,
       INT64_MAX,
       {},
       false,
       /*writtenWhenDefault=*/false},
      {"lora_runtime.max_rank",
       ConfigType::Int,
       "64",
       {},
       "Largest rank of an adapter applied at run time to the hooks of "
       "`lora_runtime.targets`.",
       "16",
       1,
       rt::kMaxLoraRank,
       {},
       false,
       /*writtenWhenDefault=*/false},
      {"tokenizer",
       ConfigType::String,
       "",
       {},
       "Tokenizer file to embed in the program (tokenizer.bin, "
       "tokenizer.model, tokenizer.json or a tiktoken file); "
       "`--tokenizer` overrides it. GGUF models carry their own vocabulary.",
       "tokenizer.model"},
      {"output.dump_dir",
       ConfigType::String,
       "",
       {},
       "Write the IR after every stage as NN-<stage>.mlir into this "
       "directory (`--dump-dir`).",
       "/tmp/etllm-dump"},
  };
  return schema;
}

/// YAML::Load, with yaml-cpp's nesting bound reported as what it is. yaml-cpp
/// refuses documents nested 2000 levels deep (its DepthGuard keeps its
/// recursive parser off the end of the stack) but calls them a "bad file".
static Result<YAML::Node> loadYaml(const std::string &text,
                                   const std::string &what) {
  try {
    return YAML::Load(text);
  } catch (const YAML::DeepRecursion &e) {
    return Error(what + ": line " + std::to_string(e.mark.line + 1) +
                 ": YAML nested " + std::to_string(e.depth()) +
                 " levels deep, more than the parser allows (the keys of "
                 "export_config.yaml nest 2 levels)");
  } catch (const YAML::Exception &e) {
    return Error(what + ": invalid YAML at line " +
                 std::to_string(e.mark.line + 1) + ": " + e.msg);
  }
}

static const ConfigKey *findKey(const std::string &name) {
  for (const ConfigKey &k : exportConfigSchema())
    if (name == k.name)
      return &k;
  return nullptr;
}

static std::string knownKeys() {
  std::string s;
  for (const ConfigKey &k : exportConfigSchema())
    s += (s.empty() ? "" : ", ") + std::string(k.name);
  return s;
}

/// True if `s` is well-formed UTF-8 (no overlong forms, surrogates or code
/// points past U+10FFFF). Config strings must be: yaml-cpp's emitter
/// replaces invalid bytes, so toYaml() could not give the value back (found
/// by the export-config fuzzer). A few lines rather than LLVM's ConvertUTF:
/// this library links no LLVM.
static bool isUtf8(const std::string &s) {
  const auto *p = reinterpret_cast<const unsigned char *>(s.data());
  const unsigned char *end = p + s.size();
  while (p < end) {
    unsigned c = *p;
    int n = c < 0x80         ? 0
            : (c >> 5) == 6  ? 1
            : (c >> 4) == 14 ? 2
            : (c >> 3) == 30 ? 3
                             : -1;
    if (n < 0 || end - p <= n)
      return false;
    unsigned cp = n == 0 ? c : c & (0x3f >> n);
    for (int i = 1; i <= n; ++i) {
      if ((p[i] & 0xc0) != 0x80)
        return false;
      cp = (cp << 6) | (p[i] & 0x3f);
    }
    static const unsigned kMin[] = {0, 0x80, 0x800, 0x10000};
    if (cp < kMin[n] || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
      return false;
    p += n + 1;
  }
  return true;
}

/// The values an Int key allows, as text: "-1, 0 or a power of two in
/// [2, 65536]".
static std::string describeRange(const ConfigKey &key) {
  std::string s;
  for (size_t i = 0; i < key.special.size(); ++i)
    s += std::to_string(key.special[i]) +
         (i + 1 < key.special.size() ? ", " : " or ");
  s += key.powerOfTwo ? "a power of two in [" : "an integer in [";
  s += std::to_string(key.min) + ", " + std::to_string(key.max) + "]";
  return s;
}

/// What a value of type `t` is, for errors: "an integer", ...
static const char *valueKind(ConfigType t) {
  switch (t) {
  case ConfigType::Int:
    return "an integer";
  case ConfigType::Float:
    return "a number";
  case ConfigType::Bool:
    return "true or false";
  case ConfigType::String:
  case ConfigType::Enum:
    return "a string";
  case ConfigType::StringList:
    return "a list";
  }
  return "a value";
}

/// Checks `text` (a YAML scalar or flow sequence) against the key's type and
/// returns it normalized.
static Result<std::string> checkValue(const ConfigKey &key,
                                      const YAML::Node &node,
                                      const std::string &where) {
  auto bad = [&](const std::string &why) {
    return Error(where + ": key '" + key.name + "': " + why);
  };
  if (key.type == ConfigType::StringList) {
    if (node.IsNull())
      return std::string("[]");
    if (!node.IsSequence())
      return bad("expected a list of strings");
    YAML::Emitter out;
    out << YAML::Flow << YAML::BeginSeq;
    for (const YAML::Node &item : node) {
      if (!item.IsScalar())
        return bad("expected a list of strings");
      if (!isUtf8(item.Scalar()))
        return bad("a list item is not valid UTF-8");
      out << item.Scalar();
    }
    out << YAML::EndSeq;
    return std::string(out.c_str());
  }
  if (!node.IsDefined() || node.IsNull())
    return bad(std::string("the value is empty (expected ") +
               valueKind(key.type) + ")");
  if (!node.IsScalar())
    return bad("expected a single value, not a " +
               std::string(node.IsMap() ? "mapping" : "list"));
  std::string v = node.Scalar();
  try {
    switch (key.type) {
    case ConfigType::Int: {
      // The runtime's one number parser: digits only, in range.
      Result<int64_t> i =
          rt::parseInteger("value", v.c_str(), INT64_MIN, INT64_MAX);
      if (!i.ok())
        return bad("'" + v + "' is not an integer");
      for (int64_t s : key.special)
        if (*i == s)
          return std::to_string(*i);
      std::string allowed = describeRange(key);
      if (*i < key.min || *i > key.max ||
          (key.powerOfTwo && (*i & (*i - 1)) != 0))
        return bad(v + " is out of range (" + allowed + ")");
      return std::to_string(*i);
    }
    case ConfigType::Float: {
      Result<double> d =
          rt::parseNumber("value", v.c_str(), rt::NumberRange{-3.4e38, 3.4e38});
      if (!d.ok())
        return bad("'" + v + "' is not a finite number");
      return v;
    }
    case ConfigType::Bool:
      return std::string(node.as<bool>() ? "true" : "false");
    case ConfigType::String:
      if (!isUtf8(v))
        return bad("the value is not valid UTF-8");
      return v;
    case ConfigType::Enum: {
      std::string c = key.canonical ? key.canonical(v) : v;
      for (const char *a : key.allowed)
        if (c == a)
          return c;
      std::string allowed;
      for (const char *a : key.allowed)
        allowed += (allowed.empty() ? "" : ", ") + std::string(a);
      return bad("'" + v + "' is not one of: " + allowed);
    }
    case ConfigType::StringList:
      break;
    }
  } catch (const YAML::Exception &) {
    return bad("'" + v + "' is not " + valueKind(key.type));
  }
  return v;
}

ExportConfig::ExportConfig() {
  for (const ConfigKey &k : exportConfigSchema())
    values_[k.name] = k.defaultText;
}

Status ExportConfig::assign(const std::string &key,
                            const std::string &valueText,
                            const std::string &source) {
  const ConfigKey *k = findKey(key);
  if (!k)
    return Error(source + ": unknown key '" + key +
                 "' (known keys: " + knownKeys() + ")");
  std::string shown =
      valueText.size() > 40 ? valueText.substr(0, 40) + "..." : valueText;
  Result<YAML::Node> node = loadYaml(valueText, source + ": key '" + key +
                                                    "': value '" + shown + "'");
  if (!node.ok())
    return node.error();
  Result<std::string> v = checkValue(*k, *node, source);
  if (!v.ok())
    return v.error();
  values_[key] = *v;
  explicit_[key] = true;
  return Status();
}

Status ExportConfig::set(const std::string &assignment) {
  size_t eq = assignment.find('=');
  if (eq == std::string::npos || eq == 0)
    return Error("--set '" + assignment + "': expected key=value");
  return assign(assignment.substr(0, eq), assignment.substr(eq + 1), "--set");
}

Result<ExportConfig> ExportConfig::fromText(const std::string &text,
                                            const std::string &source) {
  ExportConfig config;
  Result<YAML::Node> parsed = loadYaml(text, source);
  if (!parsed.ok())
    return parsed.error();
  const YAML::Node &root = *parsed;
  if (root.IsNull())
    return config;
  if (!root.IsMap())
    return Error(source + ": expected a mapping of keys at the top level");
  // Walk nested mappings; a key is complete when it names a schema entry.
  std::function<Status(const YAML::Node &, const std::string &)> walk =
      [&](const YAML::Node &map, const std::string &prefix) -> Status {
    for (auto it = map.begin(); it != map.end(); ++it) {
      if (!it->first.IsScalar())
        return Error(source + ": keys must be strings");
      std::string key = prefix + it->first.Scalar();
      if (findKey(key)) {
        Result<std::string> v = checkValue(*findKey(key), it->second, source);
        if (!v.ok())
          return v.error();
        if (config.explicit_.count(key))
          return Error(source + ": key '" + key + "' is given twice");
        config.values_[key] = *v;
        config.explicit_[key] = true;
        continue;
      }
      bool isSection = false;
      for (const ConfigKey &k : exportConfigSchema())
        if (std::string(k.name).rfind(key + ".", 0) == 0)
          isSection = true;
      if (!isSection)
        return Error(source + ": unknown key '" + key +
                     "' (known keys: " + knownKeys() + ")");
      if (!it->second.IsMap())
        return Error(source + ": '" + key +
                     "' is a section: expected a "
                     "mapping of its keys");
      if (Status st = walk(it->second, key + "."); !st.ok())
        return st;
    }
    return Status();
  };
  if (Status st = walk(root, ""); !st.ok())
    return Error(st.message());
  return config;
}

Result<ExportConfig> ExportConfig::fromFile(const std::string &path) {
  std::ifstream in(path);
  if (!in)
    return Error(path + ": cannot open the export config");
  std::stringstream ss;
  ss << in.rdbuf();
  return fromText(ss.str(), path);
}

int64_t ExportConfig::getInt(const std::string &key) const {
  return std::strtoll(values_.at(key).c_str(), nullptr, 10);
}
double ExportConfig::getFloat(const std::string &key) const {
  return std::strtod(values_.at(key).c_str(), nullptr);
}
bool ExportConfig::getBool(const std::string &key) const {
  return values_.at(key) == "true";
}
std::string ExportConfig::getString(const std::string &key) const {
  return values_.at(key);
}
std::vector<std::string> ExportConfig::getList(const std::string &key) const {
  std::vector<std::string> out;
  YAML::Node n = YAML::Load(values_.at(key));
  for (const YAML::Node &item : n)
    out.push_back(item.Scalar());
  return out;
}

std::string ExportConfig::toYaml() const {
  std::ostringstream os;
  for (const ConfigKey &k : exportConfigSchema()) {
    std::string v = values_.at(k.name);
    if (!k.writtenWhenDefault && v == k.defaultText)
      continue;
    if (k.type == ConfigType::String) {
      // Quoted by yaml-cpp, so that any string (quotes, backslashes, line
      // breaks) reads back as itself; found by the export-config fuzzer.
      YAML::Emitter quoted;
      quoted << YAML::DoubleQuoted << v;
      v = quoted.c_str();
    }
    os << k.name << ": " << v << "\n";
  }
  return os.str();
}

std::string exportConfigReferenceMarkdown() {
  const char *typeNames[] = {"integer", "number", "bool",
                             "string",  "enum",   "list of strings"};
  std::ostringstream os;
  os << "<!-- Generated by `etllm-export --print-config-reference`; "
        "don't edit. -->\n"
     << "# export_config.yaml reference\n\n"
     << "Keys nest by their dots (`model.dtype` is `dtype:` under "
        "`model:`); `--set key=value` overrides any of them. Unknown keys "
        "and bad values are errors that name the key.\n\n";
  for (const ConfigKey &k : exportConfigSchema()) {
    os << "## `" << k.name << "`\n\n"
       << k.description << "\n\n"
       << "- type: " << typeNames[int(k.type)];
    if (k.type == ConfigType::Int && (k.min != INT64_MIN || k.max != INT64_MAX))
      os << " (" << describeRange(k) << ")";
    if (k.type == ConfigType::Enum) {
      os << " (";
      for (size_t i = 0; i < k.allowed.size(); ++i)
        os << (i ? ", " : "") << "`" << k.allowed[i] << "`";
      os << ")";
    }
    os << "\n- default: `" << (*k.defaultText ? k.defaultText : "\"\"")
       << "`\n- example: `--set " << k.name << "=" << k.example << "`\n\n";
  }
  // The enumerated values the passes' and recipes' options take, with what
  // each means (include/etllm/Transforms/OptionEnums.def).
  os << "# Option values\n\n"
     << "The values of the enumerated options of the passes "
        "(docs/generated/EtllmPasses.md) and the recipes, declared once in "
        "`include/etllm/Transforms/OptionEnums.def`; the keys above that "
        "take them list them too.\n\n";
#define ETLLM_OPTION_ENUM(Type, What) printOptionEnum<Type>(os, #Type);
#include "etllm/Transforms/OptionEnums.def"
  return os.str();
}

} // namespace etllm
