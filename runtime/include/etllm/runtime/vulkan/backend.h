//===- backend.h - The Vulkan backend's runtime half ------------*- C++ -*-===//
//
// The runtime half of the GPU backend ("vulkan"): it verifies a VKN1 blob
// (vulkan.fbs) against the program's constants and the device's limits,
// uploads the weights once, creates the KV caches in device memory and the
// activation arena the compiler planned, writes every descriptor set once,
// and replays a command buffer recorded once per sequence-length bucket
// (decode: 1; prefill: powers of two up to the bound), with the sequence
// length and the attention length in a uniform buffer.
//
// Built only when the Vulkan headers, glslc and spirv-val are found at
// configure time (runtime/backends/vulkan/CMakeLists.txt); libvulkan is
// opened at run time, so a machine without it runs every other program.
//
//===----------------------------------------------------------------------===//
#ifndef ETLLM_RUNTIME_VULKAN_BACKEND_H
#define ETLLM_RUNTIME_VULKAN_BACKEND_H

#include "etllm/runtime/backend.h"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace etllm::rt::vulkan {

/// How the backend opens its device.
struct BackendOptions {
  /// The Khronos validation layer with synchronization validation, its
  /// messages counted (validationMessages). Also on with the environment
  /// variable ETLLM_VULKAN_VALIDATION=1.
  bool validation = false;
  /// Reject blobs whose barriers miss a hazard (format.h needsBarrier).
  /// Only tests turn this off, to show that synchronization validation
  /// catches a missing barrier.
  bool checkBarriers = true;
  /// The physical device to use (-1: the first with a compute queue;
  /// ETLLM_VULKAN_DEVICE=N also chooses).
  int deviceIndex = -1;
};

/// What the backend found out about its device.
struct DeviceInfo {
  std::string name, driver;
  uint32_t apiVersion = 0;
  bool shaderInt8 = false, shaderFloat16 = false;
  bool storage8 = false, storage16 = false;
  bool subgroupArithmetic = false, subgroupShuffle = false,
       subgroupBallot = false;
  uint32_t subgroupSize = 0; // reported; no kernel assumes it
  uint64_t maxStorageBufferRange = 0;
  uint64_t minStorageBufferOffsetAlignment = 0;
  uint64_t minUniformBufferOffsetAlignment = 0;
  uint64_t maxUniformBufferRange = 0;
  uint64_t maxMemoryAllocationSize = 0;
  uint32_t maxComputeWorkGroupCount[3] = {};
  bool deviceLocalHostVisible = false; // the memory all buffers use
  /// One line per fact, for tools (`etllm-run --vulkan-info`).
  std::string summary() const;
};

/// A new Vulkan backend (the device is opened by the first init).
std::shared_ptr<Backend> makeVulkanBackend(BackendOptions options = {});
/// Registers the Vulkan backend (registerBuiltinBackends calls this).
void registerVulkanBackend();

/// Opens a device as the backend would and describes it, or says what is
/// missing.
Result<DeviceInfo> probeDevice(BackendOptions options = {});

/// Validation messages reported to the backend `b` made by
/// makeVulkanBackend (0 without validation or before its device exists),
/// and their text.
uint64_t validationMessages(const Backend &b);
std::vector<std::string> validationLog(const Backend &b);

/// Deterministic counters of one delegate instance (null for an instance
/// of another backend).
struct InstanceStats {
  uint64_t calls = 0;
  uint64_t recordings = 0;       ///< command buffers recorded (one a bucket)
  uint64_t descriptorWrites = 0; ///< descriptor sets written (all by init)
  uint64_t dispatchesLastCall = 0;
  uint64_t barriersLastCall = 0;
  uint64_t bytesLastCall = 0;     ///< device bytes read + written (estimate
                                  ///< from the kernels' access patterns)
  uint64_t hostBytesLastCall = 0; ///< bytes copied between host and arena
  uint64_t weightBytes = 0;       ///< bytes of the weights uploaded
  uint64_t arenaBytes = 0;
  uint64_t cacheBytes = 0;
  int numLayers = 0;
  /// Dispatches and barriers of the last call per decoder layer (index:
  /// layer; dispatches outside layers are not counted here).
  std::vector<uint32_t> layerDispatches, layerBarriers;
};
const InstanceStats *instanceStats(const DelegateInstance &instance);

} // namespace etllm::rt::vulkan

#endif // ETLLM_RUNTIME_VULKAN_BACKEND_H
