//===- ProgramConfig.h - What the serializer reads of the model config ----===//
//
// The one place lib/Serialize reads the module's model configuration: the
// sequence bound for memory planning and the metadata the runtime needs
// (vocabulary size, special token ids, the whole configuration as JSON).
//
//===----------------------------------------------------------------------===//
#ifndef ETLLM_LOWERING_PROGRAMCONFIG_H
#define ETLLM_LOWERING_PROGRAMCONFIG_H

#include "mlir/IR/BuiltinOps.h"

#include <cstdint>
#include <string>
#include <vector>

namespace etllm {

struct ProgramConfig {
  /// The bound of dynamic (sequence) dimensions; 0 when the model has none.
  int64_t maxSeqLen = 0;
  int64_t vocabSize = 0;
  int64_t bosTokenId = -1;
  std::vector<int64_t> eosTokenIds;
  /// Where the bound comes from, for diagnostics.
  std::string maxSeqLenSource;
  /// Ring KV caches (etllm-kv-ring; 0 without): the most tokens of a call,
  /// which then bounds the dynamic dimensions, and the attention sinks.
  int64_t ringChunk = 0, ringSinks = 0;
  /// The bound of the dynamic dimensions: the tokens of one call.
  int64_t callBound() const {
    return ringChunk > 0 && ringChunk < maxSeqLen ? ringChunk : maxSeqLen;
  }
};

/// The configuration of `module` (defaults when it has none).
ProgramConfig readProgramConfig(mlir::ModuleOp module);

/// The calibration text etllm-calibrate read (an input of the program),
/// or "" when none.
std::string calibrationFile(mlir::ModuleOp module);

/// The whole model configuration as JSON ("{}" when none).
std::string modelConfigJson(mlir::ModuleOp module);

} // namespace etllm

#endif // ETLLM_LOWERING_PROGRAMCONFIG_H
