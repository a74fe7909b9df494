//===- GraphBuilder.h - Checkpoint to exported-graph IR ---------*- C++ -*-===//
//
// Emits level-A etllm IR for a decoder-only transformer as torch.export
// captures the Hugging Face modeling code in eval mode with a static KV
// cache: decomposed attention/RMSNorm/RoPE, KV caches as mutable buffers
// updated functionally and written back, module boundaries kept. Weights
// stay in the checkpoint: parameters carry names and types only.
//
//===----------------------------------------------------------------------===//
#ifndef ETLLM_IMPORT_GRAPHBUILDER_H
#define ETLLM_IMPORT_GRAPHBUILDER_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"
#include "llvm/Support/Error.h"

#include "etllm/Formats/Lora.h"

#include <cstdint>
#include <string>
#include <vector>

namespace etllm::formats {
class Checkpoint;
} // namespace etllm::formats

namespace etllm {

/// Options of the graph builder (the `model` section of export_config.yaml).
struct ImportOptions {
  /// KV-cache length and the bound of the dynamic sequence dimension; 0 means
  /// min(max_position_embeddings, kDefaultMaxSeqLen).
  int64_t maxSeqLen = 0;
  /// Activation and weight dtype of the graph: "float32", "float16" or
  /// "bfloat16".
  std::string dtype = "float32";
  /// Return only the last position's logits ([1, 1, vocab]).
  bool lastLogitsOnly = false;
  /// LoRA adapters merged into the float weights before any quantization
  /// (`lora:` in export_config.yaml, `etllm-export --lora`). Each is opened
  /// and checked against the checkpoint here and recorded in the module
  /// attribute `etllm.lora`; the serializer's weight store merges them.
  std::vector<formats::LoraSpec> lora;
  /// A llama.cpp mmproj GGUF completing a GGUF text model (`model.mmproj`):
  /// recorded in the module attribute `etllm.mmproj` for the serializer.
  std::string mmproj;
  /// A traced vision encoder's IR composed with the decoder
  /// (`model.vision_encoder`), the image processor's configuration file
  /// (`model.image_preprocessor`) and the image's token id
  /// (`model.image_token_id`, -1: 0). The encoder becomes `vision_encoder`,
  /// its parameters "vision_tower.*", its weights' file is recorded in the
  /// module attribute `etllm.vision_weights` for the serializer.
  std::string visionEncoder;
  std::string imagePreprocessor;
  int64_t imageTokenId = -1;
};

inline constexpr int64_t kDefaultMaxSeqLen = 2048;

/// Builds the exported graph of `checkpoint`. The module records the
/// checkpoint path (`etllm.checkpoint`), the model configuration
/// (`etllm.model_config`) and the module classes (`etllm.module_classes`).
llvm::Expected<mlir::OwningOpRef<mlir::ModuleOp>>
buildExportedGraph(mlir::MLIRContext *context,
                   const formats::Checkpoint &checkpoint,
                   const ImportOptions &options);

} // namespace etllm

#endif // ETLLM_IMPORT_GRAPHBUILDER_H
