//===- plugin.cpp - Backends loaded from shared libraries -----------------===//
#include "etllm/runtime/plugin.h"

#include <dlfcn.h>

#include <mutex>
#include <set>

namespace etllm::rt {

Status loadBackendPlugin(const std::string &path) {
  static std::mutex mutex;
  static std::set<std::string> loaded;
  std::lock_guard<std::mutex> lock(mutex);
  if (loaded.count(path))
    return Status::success();
  auto fail = [&](const std::string &what) {
    return Status(Error("--plugin " + path + ": " + what));
  };
  // dlopen searches the library path for a bare name; a plugin is named by
  // its file.
  if (path.find('/') == std::string::npos)
    return fail("name the file with a directory (e.g. ./" + path + ")");
  // Never unloaded, not even at exit (RTLD_NODELETE): the registry holds
  // objects whose code lives in the library and destroys them at exit.
  void *handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
  if (!handle) {
    const char *why = dlerror();
    return fail(std::string("cannot be loaded: ") + (why ? why : "unknown"));
  }
  void *entry = dlsym(handle, ETLLM_RUNTIME_PLUGIN_ENTRY);
  if (!entry) {
    dlclose(handle);
    return fail("not an etllm runtime plugin (no " ETLLM_RUNTIME_PLUGIN_ENTRY
                "; see etllm/runtime/plugin.h)");
  }
  EtllmRuntimePluginInfo info =
      reinterpret_cast<EtllmRuntimePluginInfo (*)()>(entry)();
  if (info.apiVersion != ETLLM_RUNTIME_PLUGIN_API_VERSION) {
    dlclose(handle);
    return fail("built for runtime plugin API version " +
                std::to_string(info.apiVersion) + ", this runtime has " +
                std::to_string(ETLLM_RUNTIME_PLUGIN_API_VERSION));
  }
  if (!info.registerBackend) {
    dlclose(handle);
    return fail("its plugin info has no registration function");
  }
  info.registerBackend();
  loaded.insert(path);
  return Status::success();
}

} // namespace etllm::rt
