//===- ModelConfig.cpp - The model configuration of a captured module -----===//
//
// The typed `#etllm.model_config` attribute from the description's
// `model_config` object: the one place the ATen graph importer makes it.
// The keys, their types and the checks are the attribute's own
// (ModelConfigAttr::fromJson, generated from etllm/Models/ModelConfig.td):
// the same flat keys the serializer writes into a program's metadata.
//
//===----------------------------------------------------------------------===//
#include "Importer.h"

#include "llvm/Support/JSON.h"

namespace mlir::etllm::aten {

FailureOr<ModelConfigAttr> modelConfigAttr(Builder &b, const json &cfg,
                                           std::string &error) {
  if (!cfg.is_object()) {
    error = "model_config must be an object";
    return failure();
  }
  // nlohmann's object to llvm::json's, through its text (a few keys).
  llvm::Expected<llvm::json::Value> value = llvm::json::parse(cfg.dump());
  if (!value) {
    error = "model_config: " + llvm::toString(value.takeError());
    return failure();
  }
  return ModelConfigAttr::fromJson(b.getContext(), *value->getAsObject(),
                                   error);
}

} // namespace mlir::etllm::aten
