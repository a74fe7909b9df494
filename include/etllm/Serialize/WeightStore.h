//===- WeightStore.h - Parameter bytes, materialized lazily -----*- C++ -*-===//
//
// Parameters are declared in the IR by name and type; their bytes stay in
// the checkpoint (module attribute etllm.checkpoint) or inline. The store
// opens each checkpoint once (mapped, nothing copied) and produces the bytes
// of one parameter in the runtime layout of its declared type on request:
// converted (F16/BF16/ggml blocks -> float), permuted (interleaved RoPE rows
// -> rotate-half), quantized, or repacked exactly from GGUF blocks.
//
//===----------------------------------------------------------------------===//
#ifndef ETLLM_SERIALIZE_WEIGHTSTORE_H
#define ETLLM_SERIALIZE_WEIGHTSTORE_H

#include "mlir/IR/BuiltinOps.h"

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace mlir::etllm {
class ParameterOp;
} // namespace mlir::etllm

namespace etllm::formats {
class Checkpoint;
} // namespace etllm::formats

namespace etllm {

class WeightStore {
public:
  explicit WeightStore(mlir::ModuleOp module);
  ~WeightStore();

  /// The bytes of `param` in the runtime layout of its type. Errors are
  /// emitted at the parameter.
  mlir::FailureOr<std::vector<uint8_t>>
  materialize(mlir::etllm::ParameterOp param);
  /// The same values as float32 (dequantized source; for passes and tests).
  mlir::FailureOr<std::vector<float>>
  floatValues(mlir::etllm::ParameterOp param);
  /// Size in bytes of the materialized parameter (no data is read).
  mlir::FailureOr<uint64_t> byteSize(mlir::etllm::ParameterOp param);
  /// The checkpoint the module's parameters come from (opened on first use);
  /// null with an error emitted when it cannot be opened. materialize,
  /// floatValues and checkpoint may be called from several threads at once
  /// (the writer produces constants in parallel): they only read the IR and
  /// the mapped checkpoint.
  const formats::Checkpoint *checkpoint(mlir::Operation *forDiagnostics);
  /// Reads the parameters from `opened` (already open, e.g. by the import
  /// stage) when it is the checkpoint the module names; null: no effect.
  void useCheckpoint(std::shared_ptr<const formats::Checkpoint> opened);

private:
  mlir::ModuleOp module;
  std::shared_ptr<const formats::Checkpoint> ckpt;
  bool triedOpen = false;
  std::mutex openMutex;
};

} // namespace etllm

#endif // ETLLM_SERIALIZE_WEIGHTSTORE_H
