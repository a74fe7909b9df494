//===- export-config.cpp - Fuzz target: export_config.yaml and --set ------===//
//
// The input is an export_config.yaml, then optionally a line "--- set" and
// one `key=value` per line, applied as --set overrides are. Checks: a config
// that parses writes YAML (toYaml, the provenance a program records) that
// parses back to the same configuration; list values read back.
//
//===----------------------------------------------------------------------===//
#include "FuzzSupport.h"

#include "etllm/Config/ExportConfig.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::string_view input(reinterpret_cast<const char *>(data), size);
  auto parts = etllm::fuzz::split(input, "\n--- set\n", 2);
  auto config =
      etllm::ExportConfig::fromText(std::string(parts[0]), "fuzz.yaml");
  if (!config.ok())
    return 0;
  if (parts.size() == 2)
    for (std::string_view line : etllm::fuzz::split(parts[1], "\n", 64))
      (void)config->set(std::string(line));
  std::string yaml = config->toYaml();
  auto again = etllm::ExportConfig::fromText(yaml, "toYaml");
  ETLLM_FUZZ_CHECK(again.ok());
  ETLLM_FUZZ_CHECK(again->toYaml() == yaml);
  for (const etllm::ConfigKey &k : etllm::exportConfigSchema()) {
    if (k.type == etllm::ConfigType::StringList)
      ETLLM_FUZZ_CHECK(config->getList(k.name) == again->getList(k.name));
    else
      ETLLM_FUZZ_CHECK(config->getString(k.name) == again->getString(k.name));
  }
  return 0;
}
