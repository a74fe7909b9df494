//===- example-opt.cpp - etllm-opt plus the example backend ---------------===//
//
// What an out-of-tree backend ships: an opt driver that registers etllm and
// then its own backend and passes.
//
//===----------------------------------------------------------------------===//
#include "ExampleBackend.h"

#include "etllm/InitAll.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"

int main(int argc, char **argv) {
  etllm::registerAllPasses();
  etllm::example::registerExampleBackend();
  mlir::DialectRegistry registry;
  etllm::registerAllDialects(registry);
  return mlir::asMainReturnCode(mlir::MlirOptMain(
      argc, argv, "etllm optimizer driver with the example backend\n",
      registry));
}
