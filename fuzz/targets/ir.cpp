//===- ir.cpp - Fuzz target: etllm IR, parsed and verified as etllm-opt does
//-===//
//
// The nesting bound (etllm/Support/NestingDepth.h), then MLIR's parser with
// every etllm dialect registered (registerAllDialects), the verifier (run by
// the parser), and printing what verifies, in both forms. Check: the custom
// form printed parses back and verifies (IR round-trips).
//
//===----------------------------------------------------------------------===//
#include "FuzzSupport.h"

#include "etllm/InitAll.h"
#include "etllm/Support/NestingDepth.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "llvm/Support/raw_ostream.h"

namespace {
mlir::DialectRegistry *registry;
} // namespace

extern "C" int LLVMFuzzerInitialize(int *, char ***) {
  registry = new mlir::DialectRegistry();
  etllm::registerAllDialects(*registry);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  // MLIR's lexer relies on the NUL after the buffer that a MemoryBuffer
  // read from a file (what etllm-opt parses) or a std::string has: without
  // it, a comment running to the end of the input scans on past it. So the
  // input goes to the parser in a std::string, as etllm-opt's files do.
  // (Given libFuzzer's exact-size buffer, libMLIR read past it: ASan saw
  // heap-buffer-overflow and use-after-free of the previous input next to
  // it, fuzz/regressions/ir/ -- a harness artifact, not etllm-opt's.)
  const std::string source(reinterpret_cast<const char *>(data), size);
  llvm::StringRef text(source);
  if (etllm::findIrNestingViolation(text, etllm::kMaxIrNesting))
    return 0;
  // One context per input: no state leaks between inputs. No threads.
  mlir::MLIRContext context(*registry, mlir::MLIRContext::Threading::DISABLED);
  context.loadAllAvailableDialects();
  context.printOpOnDiagnostic(false);
  mlir::ScopedDiagnosticHandler quiet(
      &context, [](mlir::Diagnostic &) { return mlir::success(); });
  mlir::OwningOpRef<mlir::ModuleOp> module =
      mlir::parseSourceString<mlir::ModuleOp>(text, &context);
  if (!module)
    return 0;
  std::string printed, generic;
  llvm::raw_string_ostream os(printed), gos(generic);
  module->print(os);
  module->print(gos, mlir::OpPrintingFlags().printGenericOpForm());
  os.flush();
  mlir::OwningOpRef<mlir::ModuleOp> again =
      mlir::parseSourceString<mlir::ModuleOp>(printed, &context);
  ETLLM_FUZZ_CHECK(again);
  return 0;
}
