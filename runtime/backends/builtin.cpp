//===- builtin.cpp - The backends built into this runtime -----------------===//
#include "etllm/runtime/backend.h"

namespace etllm::rt {

void registerBuiltinBackends() {
  // The optimized CPU backend ("xnnpack") registers here once built in.
}

} // namespace etllm::rt
