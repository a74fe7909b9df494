//===- SwapUtils.h - What the built-in source swaps share -------*- C++ -*-===//
//
// Private to lib/Transforms/: the built-in replacements etllm-swap-source registers
// (one file each: RmsNorm.cpp, Attention.cpp, Mla.cpp, Moe.cpp) and the
// helpers they share over a module instance.
//
//===----------------------------------------------------------------------===//
#ifndef ETLLM_PASSES_SOURCESWAPS_SWAPUTILS_H
#define ETLLM_PASSES_SOURCESWAPS_SWAPUTILS_H

#include "../Matchers.h"

#include "etllm/Dialect/Etllm/EtllmModelConfig.h"
#include "etllm/Dialect/Etllm/EtllmOps.h"
#include "etllm/Transforms/SourceSwap.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/Matchers.h"
#include "mlir/IR/SymbolTable.h"

namespace etllm::swaps {

using matchers::floatSplat;
using matchers::rankOf;
using matchers::splat;
using matchers::throughConverts;

/// Values defined inside the instance and used outside it.
llvm::SmallVector<mlir::Value> outputsOf(const ModuleInstance &inst);
/// Activation inputs: operands defined outside the instance that are not
/// constants or parameters (which may be shared after CSE).
llvm::SmallVector<mlir::Value> activationInputs(const ModuleInstance &inst);
/// Erases the instance's ops that have become dead (reverse order) and
/// drops them from the instance.
void eraseDead(ModuleInstance &inst, mlir::RewriterBase &rewriter,
               llvm::ArrayRef<mlir::Operation *> keep = {});
/// The instance's linear layer `<instance path>.<name>` (the last one
/// recorded at that path; null when there is none).
mlir::etllm::LinearOp linearAt(const ModuleInstance &inst,
                               llvm::StringRef name);
/// The instance's read of the buffer `<instance path>.<name>` (the last one;
/// null when there is none).
mlir::etllm::BufferReadOp cacheRead(const ModuleInstance &inst,
                                    llvm::StringRef name);
/// The path without its last component ("a.b.c" -> "a.b").
inline llvm::StringRef parentPath(llvm::StringRef p) {
  return p.rsplit('.').first;
}

/// RMSNorm: x * rsqrt(mean(x^2) + eps) * (w [+ 1]) -> rms_norm.
mlir::LogicalResult swapRmsNorm(ModuleInstance &inst,
                                mlir::RewriterBase &rewriter,
                                std::string &reason);
/// Attention with a static cache -> rope + kv_cache.update + sdpa.
mlir::LogicalResult swapAttention(ModuleInstance &inst,
                                  mlir::RewriterBase &rewriter,
                                  std::string &reason);
/// Multi-head latent attention with a latent cache (mla-cache=latent).
mlir::LogicalResult swapMlaAttention(ModuleInstance &inst,
                                     mlir::RewriterBase &rewriter,
                                     std::string &reason);
/// Multi-head latent attention with its expanded caches: only its RoPE.
mlir::LogicalResult fuseExpandedMlaRope(ModuleInstance &inst,
                                        mlir::RewriterBase &rewriter,
                                        std::string &reason);
/// A sparse mixture-of-experts block -> etllm.moe.
mlir::LogicalResult swapSparseMoe(ModuleInstance &inst,
                                  mlir::RewriterBase &rewriter,
                                  std::string &reason);

} // namespace etllm::swaps

#endif // ETLLM_PASSES_SOURCESWAPS_SWAPUTILS_H
