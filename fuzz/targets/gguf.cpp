//===- gguf.cpp - Fuzz target: GGUF files ---------------------------------===//
//
// openCheckpoint on a GGUF file (header, metadata, tensor infos, config from
// metadata, validation), the tensors' float conversion, and the embedded
// vocabulary's tokenizer as a program would build it.
//
//===----------------------------------------------------------------------===//
#include "CheckpointFuzz.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::string path = etllm::fuzz::writeScratch(
      "model.gguf",
      std::string_view(reinterpret_cast<const char *>(data), size));
  etllm::fuzz::fuzzCheckpoint(path);
  etllm::formats::OpenOptions options;
  options.validateTensors = false;
  auto ckpt = etllm::formats::openCheckpoint(path, options);
  if (!ckpt.ok() || !(*ckpt)->ggufTokenizer())
    return 0;
  etllm::rt::EmbeddedVocab v =
      etllm::fuzz::vocabFromGguf(*(*ckpt)->ggufTokenizer());
  auto tok = etllm::rt::tokenizerFromVocab(v, path);
  if (!tok.ok())
    return 0;
  auto ids = (*tok)->encode("Hello world, <s> once upon a time", true);
  if (ids.ok())
    (void)(*tok)->decode(*ids);
  return 0;
}
