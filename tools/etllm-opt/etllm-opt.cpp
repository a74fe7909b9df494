//===- etllm-opt.cpp - The etllm optimizer driver -------------------------===//
//
// mlir-opt with every etllm dialect, pass and pipeline registered.
// `--pipeline=NAME[{options}]` is shorthand for
// `--pass-pipeline=builtin.module(NAME[{options}])`.
//
// The input is checked for nesting deeper than etllm::kMaxIrNesting before
// MLIR's recursive parser sees it, and errors do not print the operation
// they are about (docs/Security.md); --mlir-print-op-on-diagnostic=true
// brings that back.
//
//===----------------------------------------------------------------------===//
#include "etllm/InitAll.h"
#include "etllm/Support/NestingDepth.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/Support/FileUtilities.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/ToolOutputFile.h"

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
  // An error on an operation does not print the operation (often a whole
  // function) unless asked: --mlir-print-op-on-diagnostic=true.
  bool opOnDiagnostic = false;
  for (char *arg : args)
    opOnDiagnostic |= llvm::StringRef(arg).ltrim('-').starts_with(
        "mlir-print-op-on-diagnostic");
  static char quietOps[] = "--mlir-print-op-on-diagnostic=false";
  if (!opOnDiagnostic)
    args.insert(args.begin() + 1, quietOps);
  int n = int(args.size());
  char **v = args.data();
  llvm::InitLLVM init(n, v);
  auto [inputFilename, outputFilename] = mlir::registerAndParseCLIOptions(
      n, v, "etllm optimizer driver\n", registry);
  mlir::MlirOptMainConfig config =
      mlir::MlirOptMainConfig::createFromCLOptions();
  // What mlir::MlirOptMain(argc, argv, ...) does, with the nesting check
  // between reading the input and parsing it.
  std::string error;
  std::unique_ptr<llvm::MemoryBuffer> file;
  if (config.shouldShowDialects())
    file = llvm::MemoryBuffer::getMemBuffer("");
  else if (!(file = mlir::openInputFile(inputFilename, &error))) {
    llvm::errs() << "etllm-opt: error: " << error << "\n";
    return 1;
  }
  if (auto violation = etllm::findIrNestingViolation(file->getBuffer(),
                                                     etllm::kMaxIrNesting)) {
    llvm::errs() << etllm::describeIrNestingViolation(
                        *violation, file->getBufferIdentifier())
                 << "\n";
    return 1;
  }
  auto output = mlir::openOutputFile(outputFilename, &error);
  if (!output) {
    llvm::errs() << "etllm-opt: error: " << error << "\n";
    return 1;
  }
  if (mlir::failed(
          mlir::MlirOptMain(output->os(), std::move(file), registry, config)))
    return 1;
  output->keep();
  return 0;
}
