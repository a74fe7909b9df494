//===- WeightStore.h - Parameter bytes, materialized lazily -----*- C++ -*-===//
//
// Parameters are declared in the IR by name and type; their bytes stay in
// the checkpoint (module attribute etllm.checkpoint) or inline. The store
// opens each checkpoint once (mapped, nothing copied) and produces the bytes
// of one parameter in the runtime layout of its declared type on request:
// converted (F16/BF16/ggml blocks -> float), permuted (interleaved RoPE rows
// -> rotate-half), merged with the LoRA adapters of the module attribute
// etllm.lora (in float, before quantization), quantized, or repacked exactly
// from GGUF blocks (never for a weight an adapter changes).
//
//===----------------------------------------------------------------------===//
#ifndef ETLLM_LOWERING_WEIGHTSTORE_H
#define ETLLM_LOWERING_WEIGHTSTORE_H

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
class LoraAdapter;
struct TensorRef;
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
  /// The LoRA adapters of `etllm.lora` with their scales (opened on first
  /// use); failure with an error emitted when one cannot be opened.
  struct Adapter {
    std::unique_ptr<formats::LoraAdapter> adapter;
    double scale = 1.0;
  };
  mlir::FailureOr<const std::vector<Adapter> *>
  loraAdapters(mlir::Operation *forDiagnostics);

private:
  /// True when an adapter changes the parameter's weight.
  mlir::FailureOr<bool> hasLoraDelta(mlir::etllm::ParameterOp param);
  /// The checkpoint tensors of `param`: its source, or the parts of a
  /// stacked parameter (`stack`), each checked against the declared shape.
  mlir::FailureOr<std::vector<const formats::TensorRef *>>
  sourceTensors(mlir::etllm::ParameterOp param, const formats::Checkpoint &c);
  mlir::ModuleOp module;
  std::shared_ptr<const formats::Checkpoint> ckpt;
  bool triedOpen = false;
  std::mutex openMutex;
  std::vector<Adapter> adapters;
  bool triedAdapters = false;
  bool adaptersFailed = false;
  std::mutex loraMutex;
};

} // namespace etllm

#endif // ETLLM_LOWERING_WEIGHTSTORE_H
