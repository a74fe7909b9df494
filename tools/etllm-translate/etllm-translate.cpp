//===- etllm-translate.cpp - IR <-> program file --------------------------===//
//
//   etllm-translate --mlir-to-pte in.mlir -o out.pte
//   etllm-translate --pte-to-text in.pte
//
//===----------------------------------------------------------------------===//
#include "etllm/InitAll.h"
#include "etllm/Serialize/ProgramWriter.h"
#include "etllm/runtime/program.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/Tools/mlir-translate/MlirTranslateMain.h"
#include "mlir/Tools/mlir-translate/Translation.h"
#include "llvm/Support/SourceMgr.h"

using namespace mlir;

int main(int argc, char **argv) {
  etllm::registerAllPasses();
  TranslateFromMLIRRegistration toPte(
      "mlir-to-pte",
      "Serialize etllm IR (a module with `forward`) to a program file",
      [](ModuleOp module, llvm::raw_ostream &os) -> LogicalResult {
        etllm::SerializeOptions options;
        options.pipeline = "etllm-translate";
        options.hashInputs = false;
        return etllm::writeProgram(module, options, os);
      },
      [](DialectRegistry &registry) { etllm::registerAllDialects(registry); });
  TranslateRegistration toText(
      "pte-to-text", "Print a program file as readable text",
      [](const std::shared_ptr<llvm::SourceMgr> &sourceMgr,
         llvm::raw_ostream &os, MLIRContext *context) -> LogicalResult {
        const llvm::MemoryBuffer *buf =
            sourceMgr->getMemoryBuffer(sourceMgr->getMainFileID());
        auto program = etllm::rt::Program::loadFromBuffer(
            reinterpret_cast<const uint8_t *>(buf->getBufferStart()),
            buf->getBufferSize(), buf->getBufferIdentifier().str());
        if (!program.ok()) {
          llvm::errs() << "etllm-translate: error: " << program.message()
                       << "\n";
          return failure();
        }
        os << etllm::rt::dumpProgram(**program);
        return success();
      });
  return failed(mlirTranslateMain(argc, argv, "etllm translation driver"));
}
