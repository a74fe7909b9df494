//===- EtllmModelConfig.h - the module's model configuration ----*- C++ -*-===//
//
// Typed access to `etllm.model_config` (a `#etllm.model_config<...>`,
// ModelConfigAttr, declared in EtllmModelConfig.td from the fields of
// etllm/Models/ModelConfig.td): every reader goes through these two
// functions, never through the attribute name.
//
//===----------------------------------------------------------------------===//
#ifndef ETLLM_DIALECT_ETLLM_ETLLMMODELCONFIG_H
#define ETLLM_DIALECT_ETLLM_ETLLMMODELCONFIG_H

#include "etllm/Dialect/Etllm/EtllmTypes.h"

#include "mlir/IR/BuiltinOps.h"
#include "llvm/ADT/SmallVector.h"

#include <string>

// The parameter structs of #etllm.model_config and its groups
// (ModelConfigParams, MlaConfigParams, MoeConfigParams), get/getChecked
// from them, and the hand-written rules between fields, generated from
// etllm/Models/ModelConfig.td.
#define GET_MODEL_CONFIG_ATTR_DECLS
#include "etllm/Dialect/Etllm/EtllmModelConfig.inc"

namespace mlir::etllm {

/// The model configuration of `module`, or null when it has none.
ModelConfigAttr getModelConfig(ModuleOp module);

/// Records `config` as the model configuration of `module`.
void setModelConfig(ModuleOp module, ModelConfigAttr config);

} // namespace mlir::etllm

#endif // ETLLM_DIALECT_ETLLM_ETLLMMODELCONFIG_H
