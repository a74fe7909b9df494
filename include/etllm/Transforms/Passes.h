//===- Passes.h - etllm passes ----------------------------------*- C++ -*-===//
#ifndef ETLLM_TRANSFORMS_PASSES_H
#define ETLLM_TRANSFORMS_PASSES_H

#include "etllm/Transforms/OptionEnums.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"

#include <functional>
#include <memory>
#include <string>

namespace mlir::etllm {
class EtllmDialect;
} // namespace mlir::etllm

namespace etllm {

#define GEN_PASS_DECL
#include "etllm/Transforms/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "etllm/Transforms/Passes.h.inc"

} // namespace etllm

#endif // ETLLM_TRANSFORMS_PASSES_H
