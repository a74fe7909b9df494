//===- tokenizer-llama2c.cpp - Fuzz target: llama2.c tokenizer.bin ===//
//
// Loading (Llama2c, then by content detection) and everything a loaded
// tokenizer offers (TokenizerFuzz.h).
//
//===----------------------------------------------------------------------===//
#include "TokenizerFuzz.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  etllm::fuzz::fuzzTokenizerFile(data, size, etllm::rt::TokenizerKind::Llama2c);
  return 0;
}
