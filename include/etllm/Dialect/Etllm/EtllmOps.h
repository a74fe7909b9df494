//===- EtllmOps.h - etllm operations ----------------------------*- C++ -*-===//
#ifndef ETLLM_DIALECT_ETLLM_ETLLMOPS_H
#define ETLLM_DIALECT_ETLLM_ETLLMOPS_H

#include "etllm/Dialect/Etllm/EtllmDialect.h"
#include "etllm/Dialect/Etllm/EtllmInterfaces.h"
#include "etllm/Dialect/Etllm/EtllmTypes.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/CallInterfaces.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Interfaces/ViewLikeInterface.h"

namespace mlir::etllm {

/// The state of every `etllm.buffer`; buffer reads and writes are ordered
/// through this side-effect resource.
struct BufferResource : public SideEffects::Resource::Base<BufferResource> {
  StringRef getName() final { return "etllm.buffer"; }
};

/// Returns the innermost module path recorded on `op` (empty when none).
StringRef getModulePath(Operation *op);
/// Records `path` as the innermost module of `op`.
void setModulePath(Operation *op, StringRef path);

} // namespace mlir::etllm

#define GET_OP_CLASSES
#include "etllm/Dialect/Etllm/EtllmOps.h.inc"

#endif // ETLLM_DIALECT_ETLLM_ETLLMOPS_H
