//===- loader.cpp - The Vulkan entry points, loaded at run time -----------===//
#include "loader.h"

#include <dlfcn.h>

#include <cstdlib>
#include <string>

namespace etllm::rt::vulkan {

Status Vk::loadGlobal() {
  // ETLLM_VULKAN_LIBRARY names another loader (tests use a missing one).
  const char *env = std::getenv("ETLLM_VULKAN_LIBRARY");
  const char *name = env && *env ? env : "libvulkan.so.1";
  library_ = dlopen(name, RTLD_NOW | RTLD_LOCAL);
  if (!library_) {
    const char *why = dlerror();
    return Error(std::string("cannot load the Vulkan loader ") + name + " (" +
                 (why ? why : "not found") +
                 "): install a Vulkan loader and a driver (on Debian: "
                 "libvulkan1 and mesa-vulkan-drivers)");
  }
  vkGetInstanceProcAddr = reinterpret_cast<PFN_vkGetInstanceProcAddr>(
      dlsym(library_, "vkGetInstanceProcAddr"));
  if (!vkGetInstanceProcAddr)
    return Error(std::string(name) + " has no vkGetInstanceProcAddr");
#define ETLLM_VK_LOAD(fn)                                                      \
  fn = reinterpret_cast<PFN_##fn>(vkGetInstanceProcAddr(nullptr, #fn));        \
  if (!fn && std::string(#fn) != "vkEnumerateInstanceVersion")                 \
    return Error(std::string("the Vulkan loader has no ") + #fn);
  ETLLM_VK_GLOBAL_FNS(ETLLM_VK_LOAD)
#undef ETLLM_VK_LOAD
  return Status();
}

Status Vk::loadInstance(VkInstance instance) {
#define ETLLM_VK_LOAD(fn)                                                      \
  fn = reinterpret_cast<PFN_##fn>(vkGetInstanceProcAddr(instance, #fn));       \
  if (!fn)                                                                     \
    return Error(std::string("the Vulkan instance has no ") + #fn +            \
                 " (Vulkan 1.1 is needed)");
  ETLLM_VK_INSTANCE_FNS(ETLLM_VK_LOAD)
#undef ETLLM_VK_LOAD
#define ETLLM_VK_LOAD_OPTIONAL(fn)                                             \
  fn = reinterpret_cast<PFN_##fn>(vkGetInstanceProcAddr(instance, #fn));
  ETLLM_VK_DEBUG_FNS(ETLLM_VK_LOAD_OPTIONAL)
#undef ETLLM_VK_LOAD_OPTIONAL
  return Status();
}

Status Vk::loadDevice(VkDevice device) {
#define ETLLM_VK_LOAD(fn)                                                      \
  fn = reinterpret_cast<PFN_##fn>(vkGetDeviceProcAddr(device, #fn));           \
  if (!fn)                                                                     \
    return Error(std::string("the Vulkan device has no ") + #fn);
  ETLLM_VK_DEVICE_FNS(ETLLM_VK_LOAD)
#undef ETLLM_VK_LOAD
  return Status();
}

const char *resultName(VkResult r) {
  switch (r) {
#define ETLLM_VK_CASE(x)                                                       \
  case x:                                                                      \
    return #x;
    ETLLM_VK_CASE(VK_SUCCESS)
    ETLLM_VK_CASE(VK_NOT_READY)
    ETLLM_VK_CASE(VK_TIMEOUT)
    ETLLM_VK_CASE(VK_INCOMPLETE)
    ETLLM_VK_CASE(VK_ERROR_OUT_OF_HOST_MEMORY)
    ETLLM_VK_CASE(VK_ERROR_OUT_OF_DEVICE_MEMORY)
    ETLLM_VK_CASE(VK_ERROR_INITIALIZATION_FAILED)
    ETLLM_VK_CASE(VK_ERROR_DEVICE_LOST)
    ETLLM_VK_CASE(VK_ERROR_MEMORY_MAP_FAILED)
    ETLLM_VK_CASE(VK_ERROR_LAYER_NOT_PRESENT)
    ETLLM_VK_CASE(VK_ERROR_EXTENSION_NOT_PRESENT)
    ETLLM_VK_CASE(VK_ERROR_FEATURE_NOT_PRESENT)
    ETLLM_VK_CASE(VK_ERROR_INCOMPATIBLE_DRIVER)
    ETLLM_VK_CASE(VK_ERROR_TOO_MANY_OBJECTS)
    ETLLM_VK_CASE(VK_ERROR_FORMAT_NOT_SUPPORTED)
    ETLLM_VK_CASE(VK_ERROR_FRAGMENTED_POOL)
    ETLLM_VK_CASE(VK_ERROR_OUT_OF_POOL_MEMORY)
#undef ETLLM_VK_CASE
  default:
    return "VK_ERROR_UNKNOWN";
  }
}

} // namespace etllm::rt::vulkan
