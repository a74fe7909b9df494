//===- EtllmTypes.h - etllm types and enums ---------------------*- C++ -*-===//
#ifndef ETLLM_DIALECT_ETLLM_ETLLMTYPES_H
#define ETLLM_DIALECT_ETLLM_ETLLMTYPES_H

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/DialectImplementation.h"

#include "etllm/Dialect/Etllm/EtllmEnums.h.inc"

namespace llvm::json {
class Object;
} // namespace llvm::json

#define GET_ATTRDEF_CLASSES
#include "etllm/Dialect/Etllm/EtllmAttrs.h.inc"

#define GET_TYPEDEF_CLASSES
#include "etllm/Dialect/Etllm/EtllmTypes.h.inc"

#endif // ETLLM_DIALECT_ETLLM_ETLLMTYPES_H
