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
#include "etllm/runtime/tokenizer.h"

#include <cstdint>

namespace etllm::fuzz {

/// The runtime's view of a GGUF file's tokenizer.ggml.* metadata, as a
/// program carries it. Ids outside int32 become -2 (out of range), so the
/// vocabulary check sees them.
inline rt::EmbeddedVocab vocabFromGguf(const formats::GgufTokenizerInfo &g) {
  rt::EmbeddedVocab v;
  v.model = g.model;
  v.pre = g.pre;
  v.tokens = g.tokens;
  v.scores = g.scores;
  v.types = g.tokenTypes;
  v.merges = g.merges;
  auto id32 = [](int64_t id) {
    return id >= -1 && id <= INT32_MAX ? static_cast<int32_t>(id) : -2;
  };
  v.bos = id32(g.bosTokenId);
  v.eos = id32(g.eosTokenId);
  v.unk = id32(g.unknownTokenId);
  v.pad = id32(g.paddingTokenId);
  v.eot = id32(g.eotTokenId);
  v.addBos = g.addBosToken.value_or(true);
  v.addSpacePrefix = g.addSpacePrefix.value_or(true);
  return v;
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
