//===- Metadata.h - The program's metadata table --------------------------===//
//
// What the program says about itself besides the graph: the model
// configuration, the tokenizer (an embedded file or the checkpoint's GGUF
// vocabulary), the provenance (version, pipeline, config, stages, inputs)
// and the chat template (ChatTemplateInfo.h).
//
//===----------------------------------------------------------------------===//
#ifndef ETLLM_LIB_SERIALIZE_METADATA_H
#define ETLLM_LIB_SERIALIZE_METADATA_H

#include "etllm/Serialize/ProgramWriter.h"
#include "etllm/runtime/tokenizer.h"
#include "etllm/schema/program_generated.h"

#include "llvm/Support/MemoryBuffer.h"

#include <functional>
#include <memory>
#include <string>

namespace etllm {

class LoweredProgram;

/// A tokenizer file to embed (SerializeOptions::tokenizerPath), loaded and
/// checked by the runtime's tokenizer loader.
struct EmbeddedTokenizer {
  std::unique_ptr<llvm::MemoryBuffer> file; ///< null: none
  std::unique_ptr<rt::Tokenizer> tokenizer; ///< the file, loaded
  std::string kind;
};

/// Loads the tokenizer `options` names (none when it names none). Errors
/// are emitted at `module`.
mlir::FailureOr<EmbeddedTokenizer>
loadTokenizer(mlir::ModuleOp module, const SerializeOptions &options);

/// Builds the metadata table. `tokenizerSegment` is the embedded file's
/// segment (-1: none). Fails (with a diagnostic) when a chat template cannot
/// be rendered or the module names a checkpoint that cannot be opened.
/// `digest(i)` is the hex SHA-256 of input `i`: the checkpoint's files in
/// order, then the tokenizer file, then each LoRA adapter's files (called
/// only when options.hashInputs).
mlir::FailureOr<flatbuffers::Offset<schema::Metadata>>
buildMetadata(flatbuffers::FlatBufferBuilder &fb, LoweredProgram &program,
              const SerializeOptions &options,
              const EmbeddedTokenizer &tokenizer, int32_t tokenizerSegment,
              const std::function<std::string(size_t)> &digest);

} // namespace etllm

#endif // ETLLM_LIB_SERIALIZE_METADATA_H
