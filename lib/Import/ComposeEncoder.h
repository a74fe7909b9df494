//===- ComposeEncoder.h - A traced vision encoder composed with a decoder -===//
//
// `model.vision_encoder`: the IR etllm.export_llm writes for a
// torch.nn.Module vision encoder (forward(pixels) -> features), composed
// with a decoder checkpoint's graph as the `vision_encoder` method of a
// composite program. Internal to lib/Import.
//
//===----------------------------------------------------------------------===//
#ifndef ETLLM_LIB_IMPORT_COMPOSEENCODER_H
#define ETLLM_LIB_IMPORT_COMPOSEENCODER_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"
#include "llvm/Support/Error.h"

#include <string>

namespace etllm::import {

/// The encoder's IR, read and checked: one public `forward(pixels: f32
/// [1, 3, S, S]) -> features [1, N, hidden]`, parameters, no buffers.
struct TracedEncoder {
  mlir::OwningOpRef<mlir::ModuleOp> module;
  int64_t imageSize = 0; // S
  int64_t seqLen = 0;    // N
  /// The safetensors file its parameters are read from ("" when it has
  /// none: every value a constant).
  std::string weights;
};

/// Reads the IR file `path`; `hidden` is the decoder's hidden size. Every
/// error names the file.
llvm::Expected<TracedEncoder> loadTracedEncoder(mlir::MLIRContext *context,
                                                const std::string &path,
                                                int64_t hidden);

/// Moves the encoder into `module` as `vision_encoder`, its parameters and
/// module paths under "vision_tower.", its result cast to `dtype`, its
/// module classes into `classes`.
void composeEncoder(mlir::ModuleOp module, TracedEncoder &encoder,
                    mlir::Type dtype,
                    llvm::SmallVectorImpl<mlir::NamedAttribute> &classes);

} // namespace etllm::import

#endif // ETLLM_LIB_IMPORT_COMPOSEENCODER_H
