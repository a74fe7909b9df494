//===- InitAll.cpp --------------------------------------------------------===//
#include "etllm/InitAll.h"

#include "etllm/Dialect/Etllm/EtllmDialect.h"
#include "etllm/Pipeline/Pipelines.h"
#include "etllm/Transforms/Passes.h"
#include "etllm/Transforms/SourceSwap.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/Transforms/Passes.h"

#include <mutex>

// registerListedBackends(): the backends of cmake/Backends.cmake.
#include "BackendCompilers.inc"

void etllm::registerAllDialects(mlir::DialectRegistry &registry) {
  registry.insert<mlir::etllm::EtllmDialect, mlir::func::FuncDialect>();
}

void etllm::registerAllPasses() {
  static std::once_flag once;
  std::call_once(once, [] {
    // Upstream passes etllm pipelines use between stages.
    mlir::registerCanonicalizerPass();
    mlir::registerCSEPass();
    mlir::registerSymbolDCEPass();
    mlir::registerInlinerPass();
    // etllm passes, named recipes, source swaps, backends.
    registerEtllmPasses();
    registerRecipePipelines();
    registerBuiltinSourceSwaps();
    registerListedBackends();
  });
}
