//===- builtin.cpp - The backends built into this runtime -----------------===//
#include "etllm/runtime/backend.h"
#include "etllm/runtime/xnnpack/backend.h"
#ifdef ETLLM_HAVE_VULKAN
#include "etllm/runtime/vulkan/backend.h"
#endif

#include <mutex>

namespace etllm::rt {

void registerBuiltinBackends() {
  // Idempotent: the first call registers, later calls do nothing (so they
  // never replace a backend the application registered in between).
  static std::once_flag once;
  std::call_once(once, [] {
    xnnpack::registerXnnpackBackend();
#ifdef ETLLM_HAVE_VULKAN
    vulkan::registerVulkanBackend();
#endif
  });
}

} // namespace etllm::rt
