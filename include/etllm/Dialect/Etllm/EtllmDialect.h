//===- EtllmDialect.h - etllm dialect ---------------------------*- C++ -*-===//
#ifndef ETLLM_DIALECT_ETLLM_ETLLMDIALECT_H
#define ETLLM_DIALECT_ETLLM_ETLLMDIALECT_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Dialect.h"

#include "etllm/Dialect/Etllm/EtllmDialect.h.inc"

#endif // ETLLM_DIALECT_ETLLM_ETLLMDIALECT_H
