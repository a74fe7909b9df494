//===- MoeActivations.h - The activations mark of etllm.moe -----*- C++ -*-===//
//
// A discardable attribute on an etllm.moe whose stacked experts the quantize
// stage quantized for int8 activations: "etllm.activations" = "int8-block"
// (a recipe with activations=int8-block: per block of 32, symmetric) or
// "int8-token" (an 8da scheme: per token, asymmetric). It lets an
// optimized kernel quantize the op's expert inputs (x and silu(gate) * up)
// as the recipe's qlinears are; the portable kernel keeps them in float.
// Absent: float activations. Set by lib/Transforms/Quantize.cpp,
// checked by the dialect (EtllmModelConfig.cpp), read by the cpu
// compiler.
//
//===----------------------------------------------------------------------===//
#ifndef ETLLM_DIALECT_ETLLM_MOEACTIVATIONS_H
#define ETLLM_DIALECT_ETLLM_MOEACTIVATIONS_H

#include "llvm/ADT/StringRef.h"

namespace mlir::etllm {

inline constexpr llvm::StringLiteral kMoeActivationsAttrName =
    "etllm.activations";
inline constexpr llvm::StringLiteral kMoeActivationsInt8Block = "int8-block";
inline constexpr llvm::StringLiteral kMoeActivationsInt8Token = "int8-token";

} // namespace mlir::etllm

#endif // ETLLM_DIALECT_ETLLM_MOEACTIVATIONS_H
