//===- ExportConfig.cpp - export_config.yaml ------------------------------===//
#include "etllm/Config/ExportConfig.h"

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

const std::vector<ConfigKey> &exportConfigSchema() {
  static const std::vector<ConfigKey> schema = {
      {"model.max_seq_len",
       ConfigType::Int,
       "0",
       {},
       "KV-cache length and upper bound of the dynamic sequence dimension "
       "(prompt + generated tokens). 0 means min(max_position_embeddings, "
       "2048).",
       "512"},
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
      {"pipeline.name",
       ConfigType::Enum,
       "portable",
       {"portable", "xnnpack-fp32", "xnnpack-int4", "xnnpack-8da4w",
        "xnnpack-int8"},
       "The named recipe; the keys below override its options "
       "(docs/Pipelines.md).",
       "xnnpack-8da4w"},
      {"quantization.linear",
       ConfigType::Enum,
       "pipeline",
       {"pipeline", "none", "int4", "int8", "8da4w", "8da8w"},
       "Linear-layer quantization: weight-only int4/int8 with float "
       "activations, or 8-bit dynamic per-token activations with int4/int8 "
       "weights. `pipeline` keeps the recipe's choice.",
       "int4"},
      {"quantization.group_size",
       ConfigType::Int,
       "0",
       {},
       "Weights per quantization group along the input dimension (32, 64, "
       "128, 256). 0 keeps the recipe's (32 for int4/8da4w, per-channel for "
       "int8/8da8w); -1 means per-channel (one group per row).",
       "64"},
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
       "recipe's (float16 for xnnpack-int4: Q4_0's 4.5 bits per weight; "
       "float32 otherwise).",
       "float16"},
      {"quantization.activations",
       ConfigType::Enum,
       "pipeline",
       {"pipeline", "float32", "int8-block"},
       "Activations of int4/int8 linear layers: float32 (weight-only) or "
       "int8-block (quantized at run time to int8 per block of 32 values, "
       "symmetric, as llama.cpp does for Q4_0/Q8_0). `pipeline` keeps the "
       "recipe's (int8-block for xnnpack-int4, float32 otherwise). The 8da "
       "schemes always quantize per token.",
       "float32"},
      {"quantization.embedding",
       ConfigType::Enum,
       "pipeline",
       {"pipeline", "none", "int8", "int4"},
       "Token-embedding table quantization. `pipeline` keeps the recipe's "
       "(int4 group 32 for xnnpack-int4, int8 per row for xnnpack-8da4w and "
       "xnnpack-int8, none otherwise).",
       "int8"},
      {"quantization.embedding_group_size",
       ConfigType::Int,
       "0",
       {},
       "Group size of the embedding quantization; -1 is one group per row, "
       "0 keeps the recipe's (32 for xnnpack-int4, whose embedding table is "
       "the tied lm_head's; one per row otherwise).",
       "32"},
      {"quantization.output_layer",
       ConfigType::Enum,
       "pipeline",
       {"pipeline", "same", "none", "int8", "int4", "8da8w", "8da4w"},
       "Exception for the output layer (lm_head): `same` quantizes it like "
       "the other linears, e.g. `int8` keeps it at 8 bits. `pipeline` keeps "
       "the recipe's (8da8w per channel for xnnpack-8da4w, same otherwise).",
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
       "[xnnpack]"},
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
      out << item.Scalar();
    }
    out << YAML::EndSeq;
    return std::string(out.c_str());
  }
  if (!node.IsScalar())
    return bad("expected a single value, not a " +
               std::string(node.IsMap() ? "mapping" : "list"));
  std::string v = node.Scalar();
  try {
    switch (key.type) {
    case ConfigType::Int: {
      int64_t i = node.as<int64_t>();
      return std::to_string(i);
    }
    case ConfigType::Float:
      (void)node.as<double>();
      return v;
    case ConfigType::Bool:
      return std::string(node.as<bool>() ? "true" : "false");
    case ConfigType::String:
      return v;
    case ConfigType::Enum: {
      for (const char *a : key.allowed)
        if (v == a)
          return v;
      std::string allowed;
      for (const char *a : key.allowed)
        allowed += (allowed.empty() ? "" : ", ") + std::string(a);
      return bad("'" + v + "' is not one of: " + allowed);
    }
    case ConfigType::StringList:
      break;
    }
  } catch (const YAML::Exception &) {
    const char *types[] = {"an integer", "a number", "true or false",
                           "a string",   "a string", "a list"};
    return bad("'" + v + "' is not " + types[int(key.type)]);
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
    if (k.type == ConfigType::Enum) {
      os << " (";
      for (size_t i = 0; i < k.allowed.size(); ++i)
        os << (i ? ", " : "") << "`" << k.allowed[i] << "`";
      os << ")";
    }
    os << "\n- default: `" << (*k.defaultText ? k.defaultText : "\"\"")
       << "`\n- example: `--set " << k.name << "=" << k.example << "`\n\n";
  }
  return os.str();
}

} // namespace etllm
