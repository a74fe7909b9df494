//===- builtin.cpp - The backends built into this runtime -----------------===//
#include "etllm/runtime/backend.h"
#include "etllm/runtime/xnnpack/backend.h"

#include <mutex>

namespace etllm::rt {

void registerBuiltinBackends() {
  // Idempotent: the first call registers, later calls do nothing (so they
  // never replace a backend the application registered in between).
  static std::once_flag once;
  std::call_once(once, [] { xnnpack::registerXnnpackBackend(); });
}

} // namespace etllm::rt
