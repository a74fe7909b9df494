//===- ExportConfig.h - export_config.yaml ----------------------*- C++ -*-===//
//
// The one place for user-facing export choices. Every key is declared once
// in a schema table (name, type, default, allowed values, description,
// example); parsing, `--set key=value` overrides, validation and the
// generated reference docs/generated/ExportConfig.md all come from it.
// Unknown keys and bad values are errors that name the key.
//
//===----------------------------------------------------------------------===//
#ifndef ETLLM_CONFIG_EXPORTCONFIG_H
#define ETLLM_CONFIG_EXPORTCONFIG_H

#include "etllm/runtime/result.h"

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace etllm {

/// The type of a configuration key.
enum class ConfigType { Int, Float, Bool, String, Enum, StringList };

/// One key of export_config.yaml.
struct ConfigKey {
  const char *name; // dotted: "quantization.group_size"
  ConfigType type;
  const char *defaultText;           // as a user would write it in YAML
  std::vector<const char *> allowed; // Enum: the values
  const char *description;
  const char *example;
  /// Int keys: the values allowed, [min, max] (checked by the runtime's
  /// one number parser, etllm/runtime/flags.h), plus `special` ones; with
  /// `powerOfTwo`, positive values must be powers of two.
  int64_t min = INT64_MIN;
  int64_t max = INT64_MAX;
  std::vector<int64_t> special = {};
  bool powerOfTwo = false;
  /// False for keys added after programs were first recorded: the resolved
  /// configuration a program embeds (toYaml) leaves such a key out while it
  /// holds its default, so a program that does not use it keeps its bytes.
  bool writtenWhenDefault = true;
  /// Enum keys: maps a value before it is checked against `allowed` (an
  /// alias to the value it stands for: pipeline.name's former recipe
  /// names, etllm/Config/RecipeAliases.h); the mapped value is the one stored.
  std::string (*canonical)(std::string_view) = nullptr;
};

/// Every key, in documentation order.
const std::vector<ConfigKey> &exportConfigSchema();

/// A parsed and validated configuration: every key of the schema has a
/// value (given or default), stored as its YAML text.
class ExportConfig {
public:
  /// Defaults only.
  ExportConfig();
  /// Parses `path` (YAML) on top of the defaults.
  static rt::Result<ExportConfig> fromFile(const std::string &path);
  /// Parses YAML text; `source` names it in messages.
  static rt::Result<ExportConfig> fromText(const std::string &text,
                                           const std::string &source);
  /// Applies one `key=value` override (value in YAML syntax).
  rt::Status set(const std::string &assignment);

  int64_t getInt(const std::string &key) const;
  double getFloat(const std::string &key) const;
  bool getBool(const std::string &key) const;
  std::string getString(const std::string &key) const;
  std::vector<std::string> getList(const std::string &key) const;
  /// True when the user gave the key (file or --set), false for defaults.
  bool isExplicit(const std::string &key) const {
    return explicit_.count(key) != 0;
  }
  /// The whole configuration as YAML (for provenance and --dump-config).
  std::string toYaml() const;

private:
  rt::Status assign(const std::string &key, const std::string &valueText,
                    const std::string &source);
  std::map<std::string, std::string> values_;
  std::map<std::string, bool> explicit_;
};

/// The Markdown reference of every key (docs/generated/ExportConfig.md).
std::string exportConfigReferenceMarkdown();

} // namespace etllm

#endif // ETLLM_CONFIG_EXPORTCONFIG_H
