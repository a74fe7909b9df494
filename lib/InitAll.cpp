//===- InitAll.cpp --------------------------------------------------------===//
#include "etllm/InitAll.h"

#include "etllm/Dialect/Etllm/EtllmDialect.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/Transforms/Passes.h"

void etllm::registerAllDialects(mlir::DialectRegistry &registry) {
  registry.insert<mlir::etllm::EtllmDialect, mlir::func::FuncDialect>();
}

void etllm::registerAllPasses() {
  // Upstream passes etllm pipelines use between stages.
  mlir::registerCanonicalizerPass();
  mlir::registerCSEPass();
  mlir::registerSymbolDCEPass();
  mlir::registerInlinerPass();
}
