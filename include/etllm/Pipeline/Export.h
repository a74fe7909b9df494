//===- Export.h - The export flow of etllm-export ---------------*- C++ -*-===//
//
// What etllm-export runs, as a library function, so that every entry point
// (etllm-export, the Python package) runs the same stages with the same
// options:
//
//   [import]  checkpoint -> IR, only when the input is a checkpoint
//   <recipe>  the stages of `pipeline.name` with the config's overrides
//   serialize IR -> program file, when the output ends in .pte
//
// An .mlir output receives the IR after the last stage run
// (`stopAfterStage = "import"` gives the exported graph itself).
//
//===----------------------------------------------------------------------===//
#ifndef ETLLM_PIPELINE_EXPORT_H
#define ETLLM_PIPELINE_EXPORT_H

#include "etllm/Pipeline/Stage.h"

#include "llvm/Support/Error.h"

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace mlir {
class MLIRContext;
} // namespace mlir

namespace etllm {

class ExportConfig;

/// The graph builder's options a configuration asks for (`model.*`).
ImportOptions importOptionsFromConfig(const ExportConfig &config);
/// The recipe options a configuration asks for (`quantization.*`,
/// `backends`).
void applyConfigToRecipeOptions(const ExportConfig &config,
                                RecipeOptions &options);

/// One export besides its input and configuration.
struct ExportRequest {
  /// A program file (.pte) or IR (.mlir); anything else is an error.
  std::string outputPath;
  /// Overrides of the config keys `tokenizer` and `output.dump_dir` (empty:
  /// the config's).
  std::string tokenizerPath;
  std::string dumpDir;
  /// Stop after this stage; its IR goes to an .mlir output.
  std::string stopAfterStage;
  /// A chat template file to embed instead of the model's own, or none at
  /// all (SerializeOptions::chatTemplatePath / noChatTemplate).
  std::string chatTemplatePath;
  bool noChatTemplate = false;
  /// Threads producing the weights (SerializeOptions::threads; 0: every
  /// core). The program's bytes do not depend on it.
  unsigned threads = 0;
  /// LoRA adapters to merge, "PATH[:SCALE]" each (`--lora`), after those of
  /// the config's `lora` key.
  std::vector<std::string> lora;
  /// Progress lines ("stage import done", "writing weights 40%"); null for
  /// none.
  std::function<void(const std::string &)> progress;
  /// Bytes of weights written so far and in all, while the program is
  /// written; when set, it replaces the "writing weights N%" lines.
  std::function<void(uint64_t done, uint64_t total)> progressBytes;
};

/// Runs the export of `input` (a checkpoint, or IR that already is the
/// exported graph) as `config` says and writes `request.outputPath` (never a
/// partial file). Errors name the stage, flag or key at fault. The caller
/// registers passes, recipes and backends first (registerAllPasses, and any
/// plugin): libraries never register.
llvm::Error runExport(Artifact input, const ExportConfig &config,
                      const ExportRequest &request, mlir::MLIRContext &context);

} // namespace etllm

#endif // ETLLM_PIPELINE_EXPORT_H
