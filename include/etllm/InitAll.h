//===- InitAll.h - Register everything etllm provides -----------*- C++ -*-===//
//
// The one place where dialects, passes, pipelines and backends are
// registered. Every tool calls these; nothing registers itself through static
// initializers.
//
//===----------------------------------------------------------------------===//
#ifndef ETLLM_INITALL_H
#define ETLLM_INITALL_H

namespace mlir {
class DialectRegistry;
} // namespace mlir

namespace etllm {

/// Adds the etllm dialect and the upstream dialects etllm IR uses.
void registerAllDialects(mlir::DialectRegistry &registry);

/// Registers every etllm pass and named pipeline with the MLIR pass
/// registry (so `--etllm-...` flags, `--pass-pipeline` and `--pipeline=`
/// find them) and every built-in backend with the backend registry.
void registerAllPasses();

} // namespace etllm

#endif // ETLLM_INITALL_H
