//===- ModelConfigJson.cpp - ModelConfig as a JSON object of its fields ---===//
//
// The config as one JSON key per field, the keys and types of
// etllm/Models/ModelConfig.td (readFields/writeFields are generated from
// it). This is how a caller outside C++ hands a config to the library (the
// Python package writes a Meta checkpoint's config.json through it and
// toHfConfigJson); it is not a Hugging Face config.json.
//
//===----------------------------------------------------------------------===//

#include "Internal.h"
#include "etllm/Formats/ModelConfig.h"
#include "etllm/Models/Registry.h"

#include <nlohmann/json.hpp>

#include <iterator>

namespace etllm::formats {

namespace {
#define GET_CONFIG_JSON
#include "etllm/Models/ModelConfig.h.inc"
} // namespace

std::string modelConfigFieldsJson(const ModelConfig &config) {
  return writeFields(config).dump(2) + "\n";
}

Result<ModelConfig> modelConfigFromFieldsJson(const std::string &jsonText,
                                              const std::string &sourceName) {
  nlohmann::json j = nlohmann::json::parse(jsonText, nullptr,
                                           /*allow_exceptions=*/false);
  if (j.is_discarded())
    return Error(sourceName + ": not valid JSON");
  ModelConfig c;
  ETLLM_RETURN_IF_ERROR(readFields(c, j, sourceName));
  ETLLM_RETURN_IF_ERROR(applyArchitectureTraits(c));
  // The per-layer vectors the readers derive, when the object has none.
  bool sizedLayers = c.numLayers > 0 && c.numLayers <= detail::kMaxConfigDim;
  if (!j.contains("layer_sliding_window") && sizedLayers)
    c.layerUsesSlidingWindow.assign(static_cast<size_t>(c.numLayers), false);
  if (!j.contains("layer_moe") && sizedLayers)
    detail::applyMoeLayers(c, *familyOf(c));
  if (Status st = validate(c); !st.ok())
    return Error(sourceName + ": " + st.message());
  return c;
}

} // namespace etllm::formats
