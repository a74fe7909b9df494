//===- context.h - The Vulkan device the backend's instances share -*- C++
//-*-===//
//
// One Context per backend object: the Vulkan instance, the chosen physical
// device (its features and limits probed), a logical device with one compute
// queue, the pipelines of every (kernel, variant, mode) built on first use,
// host-visible memory, and - with validation on - the Khronos validation
// layer with synchronization validation and a messenger that counts what
// it reports. Delegate instances of every Module share it; submissions are
// serialized on the queue.
//
//===----------------------------------------------------------------------===//
#ifndef ETLLM_RUNTIME_VULKAN_CONTEXT_H
#define ETLLM_RUNTIME_VULKAN_CONTEXT_H

#include "loader.h"

#include "etllm/runtime/vulkan/backend.h"
#include "etllm/runtime/vulkan/format.h"

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <tuple>
#include <vector>

namespace etllm::rt::vulkan {

/// A compute pipeline and its layouts.
struct Pipeline {
  VkDescriptorSetLayout setLayout = VK_NULL_HANDLE;
  VkPipelineLayout layout = VK_NULL_HANDLE;
  VkPipeline pipeline = VK_NULL_HANDLE;
  uint32_t storageBindings = 0;
};

/// A buffer in host-visible memory, mapped for its whole life.
struct DeviceBuffer {
  VkBuffer buffer = VK_NULL_HANDLE;
  VkDeviceMemory memory = VK_NULL_HANDLE;
  uint8_t *mapped = nullptr;
  uint64_t size = 0;
};

/// Push constants of every kernel (common.glsl PushBlock).
struct PushConstants {
  uint32_t mode = 0;
  uint32_t bucket = 0;
};

class Context {
public:
  /// Opens the loader, creates the instance and the device. Errors name
  /// the missing piece (loader, device, compute queue, layer).
  static Result<std::shared_ptr<Context>> create(const BackendOptions &o);
  ~Context();
  Context(const Context &) = delete;
  Context &operator=(const Context &) = delete;

  const Vk &vk() const { return vk_; }
  VkDevice device() const { return device_; }
  const DeviceInfo &info() const { return info_; }

  /// The pipeline of (kernel, variant, mode), built on first use
  /// (pipelines of one kernel and variant share their layouts).
  Result<const Pipeline *> pipeline(KernelId kernel, uint32_t variant,
                                    uint32_t mode);
  /// A host-visible (device-local when possible), coherent buffer of
  /// `size` bytes, mapped. `usage` adds to storage-buffer usage.
  Result<DeviceBuffer> createBuffer(uint64_t size, VkBufferUsageFlags usage);
  void destroyBuffer(DeviceBuffer &b);

  /// Submits `cmd` and waits for it (the queue is shared: serialized).
  Status submitAndWait(VkCommandBuffer cmd, VkFence fence);
  uint32_t queueFamily() const { return queueFamily_; }

  /// Messages the validation layer reported so far (validation on).
  uint64_t validationMessages() const;
  std::vector<std::string> validationLog() const;
  void clearValidationLog();

private:
  Context() = default;
  Status init(const BackendOptions &o);
  static VKAPI_ATTR VkBool32 VKAPI_CALL
  onMessage(VkDebugUtilsMessageSeverityFlagBitsEXT severity,
            VkDebugUtilsMessageTypeFlagsEXT types,
            const VkDebugUtilsMessengerCallbackDataEXT *data, void *user);

  Vk vk_;
  VkInstance instance_ = VK_NULL_HANDLE;
  VkPhysicalDevice physical_ = VK_NULL_HANDLE;
  VkDevice device_ = VK_NULL_HANDLE;
  VkQueue queue_ = VK_NULL_HANDLE;
  uint32_t queueFamily_ = 0;
  uint32_t memoryType_ = 0;
  VkDebugUtilsMessengerEXT messenger_ = VK_NULL_HANDLE;
  DeviceInfo info_;

  std::mutex pipelinesMutex_;
  /// Layouts by (kernel, variant); pipelines by (kernel, variant, shader
  /// mode), sharing their layouts.
  std::map<std::pair<int, uint32_t>, std::unique_ptr<Pipeline>> layouts_;
  std::map<std::tuple<int, uint32_t, uint32_t>, std::unique_ptr<Pipeline>>
      pipelines_;
  std::mutex queueMutex_;
  mutable std::mutex logMutex_;
  uint64_t messages_ = 0;
  bool printMessages_ = false;
  std::vector<std::string> log_;
};

/// The name of the shader of (kernel, variant, mode), as the build names
/// its SPIR-V ("matmul_gemv_a16_wq4_o32").
std::string shaderName(KernelId kernel, uint32_t variant, uint32_t mode);

/// The SPIR-V compiled into the library for `name`, or null.
struct ShaderBlob {
  const char *name;
  const uint32_t *words;
  size_t bytes;
};
const ShaderBlob *findShader(const std::string &name);
/// Every shader compiled into the library.
const ShaderBlob *allShaders(size_t &count);

} // namespace etllm::rt::vulkan

#endif // ETLLM_RUNTIME_VULKAN_CONTEXT_H
