//===- plugin.h - Backends loaded from shared libraries ---------*- C++ -*-===//
//
// An out-of-tree backend's runtime half, built as a shared library and
// loaded by `etllm-run --plugin=FILE` (or any application calling
// loadBackendPlugin) before it loads programs that use the backend. The
// library defines one C entry point,
//
//   ETLLM_RUNTIME_BACKEND_PLUGIN("name", myRegisterFunction)
//
// reporting the plugin API version it was built against and a function that
// registers its backend (registerBackend). It links no runtime library of
// its own: the application exports the runtime's symbols (ENABLE_EXPORTS),
// so the plugin registers into the application's registry. The compiler
// half's counterpart is include/etllm/Target/Plugin.h. dlopen is POSIX
// (glibc, Android's bionic, Apple's libSystem); iOS apps cannot load code
// and link the backend in instead.
//
//===----------------------------------------------------------------------===//
#ifndef ETLLM_RUNTIME_PLUGIN_H
#define ETLLM_RUNTIME_PLUGIN_H

#include "etllm/runtime/result.h"

#include <cstdint>
#include <string>

/// Raised whenever Backend, DelegateInstance, Tensor or the registry change
/// in a way a built plugin would not survive.
#define ETLLM_RUNTIME_PLUGIN_API_VERSION 1

extern "C" {
/// What a runtime plugin's entry point returns.
struct EtllmRuntimePluginInfo {
  uint32_t apiVersion; ///< ETLLM_RUNTIME_PLUGIN_API_VERSION at its build
  const char *name;    ///< for messages
  void (*registerBackend)();
};
}

/// The name of the entry point a runtime plugin defines.
#define ETLLM_RUNTIME_PLUGIN_ENTRY "etllmGetRuntimePluginInfo"

/// Defines a runtime plugin's entry point.
#define ETLLM_RUNTIME_BACKEND_PLUGIN(NAME, REGISTER)                           \
  extern "C" __attribute__((visibility("default"))) EtllmRuntimePluginInfo     \
  etllmGetRuntimePluginInfo() {                                                \
    return {ETLLM_RUNTIME_PLUGIN_API_VERSION, NAME, REGISTER};                 \
  }

namespace etllm::rt {

/// Loads the plugin at `path` (once per path) and runs its registration.
/// Errors name the file: not loadable (the loader's message), no entry
/// point, or another API version.
Status loadBackendPlugin(const std::string &path);

} // namespace etllm::rt

#endif // ETLLM_RUNTIME_PLUGIN_H
