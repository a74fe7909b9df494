//===- Plugin.h - Backends loaded from shared libraries ---------*- C++ -*-===//
//
// An out-of-tree backend's compiler half, built as a shared library and
// loaded by `etllm-export --plugin=FILE` (or any tool calling
// loadBackendPlugin): the library defines one C entry point,
//
//   ETLLM_BACKEND_PLUGIN(myRegisterFunction)
//
// which reports the plugin API version it was built against and a function
// that registers the backend's compiler (registerBackendCompiler) and its
// passes. The library links no etllm or MLIR library of its own: the tool
// that loads it exports its symbols (ENABLE_EXPORTS), so the plugin shares
// the tool's registries, dialect and type identities. The backend's runtime
// half registers with rt::registerBackend in the application that runs its
// programs. test/Backends/Example is such a plugin.
//
//===----------------------------------------------------------------------===//
#ifndef ETLLM_TARGET_PLUGIN_H
#define ETLLM_TARGET_PLUGIN_H

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <cstdint>

/// Raised whenever BackendCompiler, DelegateContext or the registry change
/// in a way a built plugin would not survive.
#define ETLLM_BACKEND_PLUGIN_API_VERSION 1

extern "C" {
/// What a plugin's entry point returns.
struct EtllmBackendPluginInfo {
  uint32_t apiVersion; ///< ETLLM_BACKEND_PLUGIN_API_VERSION at its build
  const char *name;    ///< for messages
  void (*registerBackend)();
};
}

/// The name of the entry point a plugin defines.
#define ETLLM_BACKEND_PLUGIN_ENTRY "etllmGetBackendPluginInfo"

/// Defines a plugin's entry point: `NAME` names the plugin in messages,
/// `REGISTER` registers its backend compiler and passes.
#define ETLLM_BACKEND_PLUGIN(NAME, REGISTER)                                   \
  extern "C" __attribute__((visibility("default"))) EtllmBackendPluginInfo     \
  etllmGetBackendPluginInfo() {                                                \
    return {ETLLM_BACKEND_PLUGIN_API_VERSION, NAME, REGISTER};                 \
  }

namespace etllm {

/// Loads the plugin at `path` and runs its registration, once per path.
/// Errors name the file: not loadable (the loader's message, e.g. an
/// undefined symbol), no entry point, another API version, or a plugin
/// that registered no backend.
llvm::Error loadBackendPlugin(llvm::StringRef path);

} // namespace etllm

#endif // ETLLM_TARGET_PLUGIN_H
