//===- etllm-opt.cpp - The etllm optimizer driver -------------------------===//
//
// mlir-opt with every etllm dialect, pass and pipeline registered.
// `--pipeline=NAME[{options}]` is shorthand for
// `--pass-pipeline=builtin.module(NAME[{options}])`.
//
//===----------------------------------------------------------------------===//
#include "etllm/InitAll.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"

#include <string>
#include <vector>

int main(int argc, char **argv) {
  etllm::registerAllPasses();
  mlir::DialectRegistry registry;
  etllm::registerAllDialects(registry);

  // Rewrite --pipeline=NAME into the standard --pass-pipeline form so that
  // --mlir-print-ir-after-all, --dump-pass-pipeline etc. keep working.
  std::vector<std::string> storage;
  storage.reserve(argc); // pointers into storage must stay valid
  std::vector<char *> args(argv, argv + argc);
  for (char *&arg : args) {
    std::string a = arg;
    for (const char *prefix : {"--pipeline=", "-pipeline="}) {
      if (a.rfind(prefix, 0) == 0) {
        storage.push_back("--pass-pipeline=builtin.module(" +
                          a.substr(std::string(prefix).size()) + ")");
        arg = storage.back().data();
        break;
      }
    }
  }
  return mlir::asMainReturnCode(mlir::MlirOptMain(
      int(args.size()), args.data(), "etllm optimizer driver\n", registry));
}
