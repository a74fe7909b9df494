//===- loader.h - The Vulkan entry points, loaded at run time ---*- C++ -*-===//
//
// The runtime does not link libvulkan: a program without a Vulkan delegate
// must run on a machine without a Vulkan loader. The first Vulkan delegate
// opens libvulkan.so.1 (dlopen) and loads the entry points it uses into one
// table; the errors name what is missing.
//
//===----------------------------------------------------------------------===//
#ifndef ETLLM_RUNTIME_VULKAN_LOADER_H
#define ETLLM_RUNTIME_VULKAN_LOADER_H

#ifndef VK_NO_PROTOTYPES
#define VK_NO_PROTOTYPES
#endif
#include <vulkan/vulkan.h>

#include "etllm/runtime/result.h"

namespace etllm::rt::vulkan {

#define ETLLM_VK_GLOBAL_FNS(X)                                                 \
  X(vkCreateInstance)                                                          \
  X(vkEnumerateInstanceExtensionProperties)                                    \
  X(vkEnumerateInstanceLayerProperties)                                        \
  X(vkEnumerateInstanceVersion)

#define ETLLM_VK_INSTANCE_FNS(X)                                               \
  X(vkDestroyInstance)                                                         \
  X(vkEnumeratePhysicalDevices)                                                \
  X(vkGetPhysicalDeviceProperties)                                             \
  X(vkGetPhysicalDeviceProperties2)                                            \
  X(vkGetPhysicalDeviceFeatures2)                                              \
  X(vkGetPhysicalDeviceQueueFamilyProperties)                                  \
  X(vkGetPhysicalDeviceMemoryProperties)                                       \
  X(vkEnumerateDeviceExtensionProperties)                                      \
  X(vkCreateDevice)                                                            \
  X(vkGetDeviceProcAddr)

// Optional (VK_EXT_debug_utils, only with validation).
#define ETLLM_VK_DEBUG_FNS(X)                                                  \
  X(vkCreateDebugUtilsMessengerEXT)                                            \
  X(vkDestroyDebugUtilsMessengerEXT)

#define ETLLM_VK_DEVICE_FNS(X)                                                 \
  X(vkDestroyDevice)                                                           \
  X(vkGetDeviceQueue)                                                          \
  X(vkCreateBuffer)                                                            \
  X(vkDestroyBuffer)                                                           \
  X(vkGetBufferMemoryRequirements)                                             \
  X(vkAllocateMemory)                                                          \
  X(vkFreeMemory)                                                              \
  X(vkBindBufferMemory)                                                        \
  X(vkMapMemory)                                                               \
  X(vkUnmapMemory)                                                             \
  X(vkCreateShaderModule)                                                      \
  X(vkDestroyShaderModule)                                                     \
  X(vkCreateDescriptorSetLayout)                                               \
  X(vkDestroyDescriptorSetLayout)                                              \
  X(vkCreatePipelineLayout)                                                    \
  X(vkDestroyPipelineLayout)                                                   \
  X(vkCreateComputePipelines)                                                  \
  X(vkDestroyPipeline)                                                         \
  X(vkCreateDescriptorPool)                                                    \
  X(vkDestroyDescriptorPool)                                                   \
  X(vkAllocateDescriptorSets)                                                  \
  X(vkUpdateDescriptorSets)                                                    \
  X(vkCreateCommandPool)                                                       \
  X(vkDestroyCommandPool)                                                      \
  X(vkAllocateCommandBuffers)                                                  \
  X(vkFreeCommandBuffers)                                                      \
  X(vkBeginCommandBuffer)                                                      \
  X(vkEndCommandBuffer)                                                        \
  X(vkCmdBindPipeline)                                                         \
  X(vkCmdBindDescriptorSets)                                                   \
  X(vkCmdPushConstants)                                                        \
  X(vkCmdDispatch)                                                             \
  X(vkCmdPipelineBarrier)                                                      \
  X(vkCmdFillBuffer)                                                           \
  X(vkCreateFence)                                                             \
  X(vkDestroyFence)                                                            \
  X(vkResetFences)                                                             \
  X(vkWaitForFences)                                                           \
  X(vkQueueSubmit)                                                             \
  X(vkQueueWaitIdle)                                                           \
  X(vkDeviceWaitIdle)

/// The Vulkan entry points the backend uses.
struct Vk {
#define ETLLM_VK_MEMBER(name) PFN_##name name = nullptr;
  PFN_vkGetInstanceProcAddr vkGetInstanceProcAddr = nullptr;
  ETLLM_VK_GLOBAL_FNS(ETLLM_VK_MEMBER)
  ETLLM_VK_INSTANCE_FNS(ETLLM_VK_MEMBER)
  ETLLM_VK_DEBUG_FNS(ETLLM_VK_MEMBER)
  ETLLM_VK_DEVICE_FNS(ETLLM_VK_MEMBER)
#undef ETLLM_VK_MEMBER

  /// Opens the Vulkan loader and loads the global entry points.
  Status loadGlobal();
  /// Loads the instance-level entry points (after vkCreateInstance).
  Status loadInstance(VkInstance instance);
  /// Loads the device-level entry points (after vkCreateDevice).
  Status loadDevice(VkDevice device);

private:
  void *library_ = nullptr;
};

/// A VkResult as text ("VK_ERROR_OUT_OF_DEVICE_MEMORY").
const char *resultName(VkResult r);

} // namespace etllm::rt::vulkan

#endif // ETLLM_RUNTIME_VULKAN_LOADER_H
