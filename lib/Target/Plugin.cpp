//===- Plugin.cpp - Backends loaded from shared libraries -----------------===//
#include "etllm/Target/Plugin.h"

#include "etllm/Target/Backend.h"

#include "llvm/ADT/StringSet.h"
#include "llvm/Support/FileSystem.h"

#include <dlfcn.h>

#include <mutex>
#include <string>

namespace etllm {

namespace {
llvm::Error pluginError(llvm::StringRef path, const llvm::Twine &what) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                 "--plugin " + path + ": " + what);
}
} // namespace

llvm::Error loadBackendPlugin(llvm::StringRef path) {
  static std::mutex mutex;
  static llvm::StringSet<> loaded;
  std::lock_guard<std::mutex> lock(mutex);
  if (loaded.contains(path))
    return llvm::Error::success();
  if (!llvm::sys::fs::exists(path))
    return pluginError(path, "no such file");
  // Never unloaded, not even at exit (RTLD_NODELETE): the registry keeps
  // objects whose code lives in the library and destroys them after
  // LLVM's own list of loaded libraries would have closed it.
  void *handle =
      dlopen(path.str().c_str(), RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
  if (!handle) {
    const char *why = dlerror();
    return pluginError(path, "cannot be loaded: " +
                                 llvm::Twine(why ? why : "unknown"));
  }
  void *entry = dlsym(handle, ETLLM_BACKEND_PLUGIN_ENTRY);
  if (!entry)
    return pluginError(path, "not an etllm backend plugin (no " +
                                 llvm::Twine(ETLLM_BACKEND_PLUGIN_ENTRY) +
                                 "; see include/etllm/Target/Plugin.h)");
  EtllmBackendPluginInfo info =
      reinterpret_cast<EtllmBackendPluginInfo (*)()>(entry)();
  if (info.apiVersion != ETLLM_BACKEND_PLUGIN_API_VERSION)
    return pluginError(path, "built for backend plugin API version " +
                                 llvm::Twine(info.apiVersion) +
                                 ", this etllm has version " +
                                 llvm::Twine(ETLLM_BACKEND_PLUGIN_API_VERSION));
  if (!info.registerBackend)
    return pluginError(path, "its plugin info has no registration function");
  size_t before = registeredBackendCompilers().size();
  info.registerBackend();
  if (registeredBackendCompilers().size() == before)
    return pluginError(path, "plugin '" +
                                 llvm::Twine(info.name ? info.name : "?") +
                                 "' registered no new backend");
  loaded.insert(path);
  return llvm::Error::success();
}

} // namespace etllm
