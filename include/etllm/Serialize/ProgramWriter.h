//===- ProgramWriter.h - IR to program file (.pte) --------------*- C++ -*-===//
//
// Lowers the `forward` function of a module to the runtime's value table and
// instruction list (Lowering.h), plans memory (MemoryPlan.h), and writes the
// program file: header, flatbuffer, then the aligned data segments (weights
// converted or quantized from the checkpoint as the parameter types say,
// delegate blobs, an embedded tokenizer), streamed one tensor at a time.
//
//===----------------------------------------------------------------------===//
#ifndef ETLLM_SERIALIZE_PROGRAMWRITER_H
#define ETLLM_SERIALIZE_PROGRAMWRITER_H

#include "etllm/Lowering/MemoryPlan.h"

#include "mlir/IR/BuiltinOps.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace etllm {

namespace formats {
class Checkpoint;
} // namespace formats

class WeightStore;

/// Inputs of the writer besides the IR.
struct SerializeOptions {
  /// Provenance: the pipeline name, the resolved config (YAML), stages run.
  std::string pipeline;
  std::string configYaml;
  std::vector<std::string> stages;
  /// A tokenizer file to embed (empty: none; a GGUF model's vocabulary is
  /// embedded from the checkpoint automatically).
  std::string tokenizerPath;
  /// Hash the input files for the provenance (SHA-256); off in tests.
  bool hashInputs = true;
  /// Threads producing the weights (0: every core). The program's bytes do
  /// not depend on it.
  unsigned threads = 0;
  /// The checkpoint the module's etllm.checkpoint names, already open (the
  /// import stage's); null: the writer opens it.
  std::shared_ptr<const formats::Checkpoint> checkpoint;
  /// Called with a fraction in [0, 1] while weights are written.
  std::function<void(double)> progress;
  /// Called with the weight bytes written so far and their total: once
  /// with 0 before the first, then after each tensor.
  std::function<void(uint64_t done, uint64_t total)> progressBytes;
  /// A chat template file to embed instead of the checkpoint's (Jinja text,
  /// or a tokenizer_config.json), and whether to embed one at all.
  std::string chatTemplatePath;
  bool noChatTemplate = false;
};

/// Writes the program file for `module` to `os`, with the memory plan
/// recorded on `forward` (MemoryPlan.h) or, when it has none, planned here.
/// Errors are emitted as MLIR diagnostics at the offending op.
mlir::LogicalResult writeProgram(mlir::ModuleOp module,
                                 const SerializeOptions &options,
                                 llvm::raw_ostream &os,
                                 MemoryReport *report = nullptr);

/// The memory plan writeProgram would use (the recorded one, else planned
/// here), without touching weights or delegate blobs.
mlir::FailureOr<MemoryReport> planProgramMemory(mlir::ModuleOp module);

} // namespace etllm

#endif // ETLLM_SERIALIZE_PROGRAMWRITER_H
