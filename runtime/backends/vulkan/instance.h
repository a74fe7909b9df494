//===- instance.h - One Vulkan delegate instance ----------------*- C++ -*-===//
//
// What init (backend.cpp) builds from a blob and execute (execute.cpp)
// replays: the device buffers (weights, the arena, the caches, the RoPE
// tables), the parameter and globals uniform buffers, one descriptor set
// per dispatch written once, and a command buffer per sequence-length
// bucket recorded on first use.
//
//===----------------------------------------------------------------------===//
#ifndef ETLLM_RUNTIME_VULKAN_INSTANCE_H
#define ETLLM_RUNTIME_VULKAN_INSTANCE_H

#include "context.h"
#include "contracts.h"

#include "etllm/runtime/tensor.h"
#include "etllm/runtime/vulkan/backend.h"

#include <map>
#include <memory>
#include <vector>

namespace etllm::rt::vulkan {

/// A delegate input or output as init checked it.
struct IoDesc {
  uint8_t role = 0; // vulkan.fbs IoRole
  DType dtype = DType::F32, deviceDtype = DType::F32;
  int rank = 0;
  int64_t sizes[kMaxRank] = {};
  int dynamicDim = -1;
  uint64_t offset = 0;
  int64_t indexBound = 0;
  uint32_t buffer = 0;
  uint64_t deviceBytes = 0; // at the upper-bound shape
};

/// What one bucket's command buffer holds.
struct Recording {
  VkCommandBuffer cmd = VK_NULL_HANDLE;
  uint64_t dispatches = 0, barriers = 0;
  std::vector<uint32_t> layerDispatches, layerBarriers;
};

class VulkanInstance final : public DelegateInstance {
public:
  explicit VulkanInstance(std::shared_ptr<Context> ctx) : ctx(std::move(ctx)) {}
  ~VulkanInstance() override;
  Status execute(Span<Tensor *const> inputs, Span<Tensor *const> outputs,
                 ExecContext &ctx) override;
  std::vector<std::pair<std::string, uint64_t>> counters() const override;

  std::shared_ptr<Context> ctx;
  uint64_t seqBound = 1;
  DType act = DType::F32;
  int numLayers = 0;
  std::vector<uint64_t> bucketSizes; // ascending; the last is seqBound
  std::vector<DeviceBuffer> buffers; // per blob buffer
  uint32_t arena = 0;                // the ARENA buffer's index
  DeviceBuffer globals, params;
  std::vector<uint64_t> paramOffsets; // per dispatch
  std::vector<DispatchDesc> dispatches;
  std::vector<IoDesc> inputs, outputs;
  VkDescriptorPool pool = VK_NULL_HANDLE;
  std::vector<VkDescriptorSet> sets;
  VkCommandPool cmdPool = VK_NULL_HANDLE;
  VkFence fence = VK_NULL_HANDLE;
  std::map<uint64_t, Recording> recordings; // by bucket
  /// The counters; bytesLastCall is derived on demand (deriveTraffic) from
  /// the last call's sequence length, attention length and bucket.
  mutable InstanceStats stats;
  uint32_t lastS = 0, lastKvLen = 0, lastBucket = 0;
  void deriveTraffic() const;

  /// Records the command buffer of `bucket`.
  Result<Recording *> record(uint64_t bucket);
};

} // namespace etllm::rt::vulkan

#endif // ETLLM_RUNTIME_VULKAN_INSTANCE_H
