//===- CheckpointFuzz.h - What the checkpoint targets do with a file --*- C++
//-*-===//
//
// Opens a checkpoint the way etllm-export does (openCheckpoint, detecting
// the format, validating the tensors against the config), then without the
// validation, and converts the small tensors to float32 (dequantization
// reads every block of a fuzzed file).
//
//===----------------------------------------------------------------------===//
#ifndef ETLLM_FUZZ_CHECKPOINTFUZZ_H
#define ETLLM_FUZZ_CHECKPOINTFUZZ_H

#include "FuzzSupport.h"

#include "etllm/Formats/Checkpoint.h"
#include "etllm/Formats/GgufEmbeddedVocab.h"
#include "etllm/runtime/tokenizer.h"

#include <cstdint>

namespace etllm::fuzz {

/// The runtime's view of a GGUF file's tokenizer.ggml.* metadata, as a
/// program carries it (the one etllm-export checks).
inline rt::EmbeddedVocab vocabFromGguf(const formats::GgufTokenizerInfo &g) {
  return formats::embeddedVocab(g);
}

inline void fuzzCheckpoint(const std::string &path) {
  for (bool validate : {true, false}) {
    formats::OpenOptions options;
    options.validateTensors = validate;
    auto ckpt = formats::openCheckpoint(path, options);
    if (!ckpt.ok()) {
      note(ckpt.message());
      continue;
    }
    note(std::string(validate ? "validated " : "opened ") + (*ckpt)->format() +
         " with " + std::to_string((*ckpt)->tensors().size()) + " tensors");
    if (validate)
      continue; // the unvalidated open below reads the tensors
    for (const formats::TensorRef &t : (*ckpt)->tensors())
      if (t.nbytes <= (1u << 20))
        (void)formats::toFloat32(t);
  }
}

} // namespace etllm::fuzz

#endif // ETLLM_FUZZ_CHECKPOINTFUZZ_H
