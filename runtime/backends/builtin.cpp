//===- builtin.cpp - The backends built into this runtime -----------------===//
//
// Which backends: the one list in cmake/Backends.cmake, of which the build
// generates `registerListedBackends` (each backend whose runtime half this
// build has).
//
//===----------------------------------------------------------------------===//
#include "etllm/runtime/backend.h"

#include "builtin_backends.inc"

#include <mutex>

namespace etllm::rt {

void registerBuiltinBackends() {
  // Idempotent: the first call registers, later calls do nothing (so they
  // never replace a backend the application registered in between).
  static std::once_flag once;
  std::call_once(once, [] { registerListedBackends(); });
}

} // namespace etllm::rt
