//===- SourceSwap.h - Module-level replacements by class --------*- C++ -*-===//
//
// The registry etllm-swap-source consults: a class-name suffix (e.g.
// "RMSNorm", "Attention") maps to a function that replaces one module
// instance. Built-in replacements are registered by
// registerBuiltinSourceSwaps() (from InitAll); backends may add their own.
//
//===----------------------------------------------------------------------===//
#ifndef ETLLM_TRANSFORMS_SOURCESWAP_H
#define ETLLM_TRANSFORMS_SOURCESWAP_H

#include "etllm/Dialect/Etllm/EtllmTypes.h"
#include "etllm/Transforms/OptionEnums.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/PatternMatch.h"

#include <functional>
#include <string>
#include <vector>

namespace etllm {

/// One module instance of the exported graph.
struct ModuleInstance {
  std::string path;  // "model.layers.0.self_attn"
  std::string klass; // "LlamaAttention"
  /// Ops whose module path is `path` or lies under it, in block order.
  std::vector<mlir::Operation *> ops;
  /// The module's model configuration (etllm.model_config), may be null.
  mlir::etllm::ModelConfigAttr config;
  mlir::ModuleOp module;
  /// Multi-head latent attention: expanded (left to fuse-sdpa) or latent
  /// (etllm-swap-source's mla-cache option).
  MlaCacheForm mlaCache = MlaCacheForm::Expanded;
  /// Sparse MoE blocks: experts (etllm.moe) or masked (left alone;
  /// etllm-swap-source's moe option).
  MoeMode moe = MoeMode::Experts;
  /// True when `op` belongs to the instance (path equal or nested).
  bool contains(mlir::Operation *op) const;
};

/// Replaces `instance` in place and returns success, or leaves the IR
/// untouched and returns failure with `reason` set.
using SourceSwapFn = std::function<mlir::LogicalResult(
    ModuleInstance &instance, mlir::RewriterBase &rewriter,
    std::string &reason)>;

/// Registers a replacement for module classes ending in `classSuffix`.
void registerSourceSwap(llvm::StringRef classSuffix, SourceSwapFn fn);
/// The replacement for `klass` (longest matching suffix), or null.
const SourceSwapFn *findSourceSwap(llvm::StringRef klass,
                                   std::string *matchedSuffix = nullptr);
/// The built-in RMSNorm and Attention replacements.
void registerBuiltinSourceSwaps();

} // namespace etllm

#endif // ETLLM_TRANSFORMS_SOURCESWAP_H
