//===- tokenizer-tiktoken.cpp - Fuzz target: tiktoken rank files ===//
//
// Loading (Tiktoken, then by content detection) and everything a loaded
// tokenizer offers (TokenizerFuzz.h).
//
//===----------------------------------------------------------------------===//
#include "TokenizerFuzz.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  etllm::fuzz::fuzzTokenizerFile(data, size,
                                 etllm::rt::TokenizerKind::Tiktoken);
  return 0;
}
