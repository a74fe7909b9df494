//===- etllm-translate.cpp - IR <-> program file --------------------------===//
//
//   etllm-translate --mlir-to-pte in.mlir -o out.pte
//   etllm-translate --pte-to-text in.pte
//   etllm-translate --aten-graph-to-mlir graph.json  (docs/Python.md)
//
//===----------------------------------------------------------------------===//
#include "etllm/Import/AtenImporter.h"
#include "etllm/InitAll.h"
#include "etllm/Serialize/ProgramWriter.h"
#include "etllm/Support/NestingDepth.h"
#include "etllm/runtime/program.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Tools/mlir-translate/MlirTranslateMain.h"
#include "mlir/Tools/mlir-translate/Translation.h"
#include "llvm/Support/SourceMgr.h"

using namespace mlir;

int main(int argc, char **argv) {
  etllm::registerAllPasses();
  // Parsed here rather than by TranslateFromMLIRRegistration so that the
  // nesting bound (docs/Security.md) runs before MLIR's recursive parser.
  TranslateRegistration toPte(
      "mlir-to-pte",
      "Serialize etllm IR (a module with `forward`) to a program file",
      [](const std::shared_ptr<llvm::SourceMgr> &sourceMgr,
         llvm::raw_ostream &os, MLIRContext *context) -> LogicalResult {
        llvm::StringRef text =
            sourceMgr->getMemoryBuffer(sourceMgr->getMainFileID())->getBuffer();
        if (auto violation =
                etllm::findIrNestingViolation(text, etllm::kMaxIrNesting)) {
          llvm::errs() << etllm::describeIrNestingViolation(
                              *violation,
                              sourceMgr
                                  ->getMemoryBuffer(sourceMgr->getMainFileID())
                                  ->getBufferIdentifier())
                       << "\n";
          return failure();
        }
        DialectRegistry registry;
        etllm::registerAllDialects(registry);
        context->appendDialectRegistry(registry);
        // A serialization error is about the module: say what is wrong, do
        // not print the whole module with it.
        context->printOpOnDiagnostic(false);
        OwningOpRef<ModuleOp> module =
            parseSourceFile<ModuleOp>(sourceMgr, context);
        if (!module)
          return failure();
        etllm::SerializeOptions options;
        options.pipeline = "etllm-translate";
        options.hashInputs = false;
        return etllm::writeProgram(*module, options, os);
      });
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
  TranslateToMLIRRegistration fromAten(
      "aten-graph-to-mlir",
      "Import an ATen graph description (the JSON etllm.export_llm writes "
      "for a traced torch.nn.Module) as the exported graph",
      [](const std::shared_ptr<llvm::SourceMgr> &sourceMgr,
         MLIRContext *context) -> OwningOpRef<Operation *> {
        const llvm::MemoryBuffer *buf =
            sourceMgr->getMemoryBuffer(sourceMgr->getMainFileID());
        auto module = etllm::importAtenGraph(context, buf->getBuffer(),
                                             buf->getBufferIdentifier());
        if (!module) {
          llvm::errs() << "etllm-translate: error: "
                       << llvm::toString(module.takeError()) << "\n";
          return nullptr;
        }
        return OwningOpRef<Operation *>(module->release());
      },
      [](DialectRegistry &registry) { etllm::registerAllDialects(registry); });
  return failed(mlirTranslateMain(argc, argv, "etllm translation driver"));
}
