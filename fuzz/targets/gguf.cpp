//===- gguf.cpp - Fuzz target: GGUF files ---------------------------------===//
//
// openCheckpoint on a GGUF file (header, metadata, tensor infos, config from
// metadata, validation), the tensors' float conversion, and the embedded
// vocabulary's tokenizer as a program would build it. The same bytes as a
// llama.cpp mmproj completing a tiny GGUF text model, a llama and a Gemma 3
// decoder (its keys into the vision config, its tensors renamed and checked
// against it).
//
//===----------------------------------------------------------------------===//
#include "CheckpointFuzz.h"

#include "etllm/Testing/Generator.h"

namespace {

/// A tiny GGUF text model for the input to complete as an mmproj (made
/// once; the generator's "tiny" llama, width 64 as the seeds' projectors).
const std::string &textModel() {
  static const std::string path = [] {
    etllm::formats::GeneratorOptions o;
    o.arch = "llama";
    o.format = "gguf";
    o.vocab = 512;
    o.output = etllm::fuzz::writeScratch("text.gguf", "");
    (void)etllm::formats::generateCheckpoint(o);
    return o.output;
  }();
  return path;
}

/// The same for a Gemma 3 mmproj: the tiny Gemma 3's decoder, whose
/// vocabulary names the image's tokens.
const std::string &gemma3TextModel() {
  static const std::string path = [] {
    etllm::formats::GeneratorOptions o;
    o.arch = "gemma3-vision";
    o.visionPreset = "gemma3-tiny";
    o.format = "gguf";
    o.vocab = 512;
    o.output = etllm::fuzz::writeScratch("gemma3-text.gguf", "");
    (void)etllm::formats::generateCheckpoint(o);
    return o.output;
  }();
  return path;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::string path = etllm::fuzz::writeScratch(
      "model.gguf",
      std::string_view(reinterpret_cast<const char *>(data), size));
  etllm::fuzz::fuzzCheckpoint(path);
  etllm::formats::OpenOptions options;
  options.mmproj = path;
  (void)etllm::formats::openCheckpoint(textModel(), options);
  (void)etllm::formats::openCheckpoint(gemma3TextModel(), options);
  options.mmproj.clear();
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
