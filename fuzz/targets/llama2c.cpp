//===- llama2c.cpp - Fuzz target: llama2.c checkpoints --------------------===//
//
// openCheckpoint on a llama2.c .bin (header plausibility, exact file size,
// config, validation) and the tensors' float conversion.
//
//===----------------------------------------------------------------------===//
#include "CheckpointFuzz.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  etllm::fuzz::fuzzCheckpoint(etllm::fuzz::writeScratch(
      "model.bin",
      std::string_view(reinterpret_cast<const char *>(data), size)));
  return 0;
}
