//===- tokenizer-hf-json.cpp - Fuzz target: Hugging Face tokenizer.json ===//
//
// Loading (HuggingFace, then by content detection) and everything a loaded
// tokenizer offers (TokenizerFuzz.h).
//
//===----------------------------------------------------------------------===//
#include "TokenizerFuzz.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  etllm::fuzz::fuzzTokenizerFile(data, size,
                                 etllm::rt::TokenizerKind::HuggingFace);
  return 0;
}
