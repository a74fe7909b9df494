//===- contracts.h - What each Vulkan kernel needs and does -----*- C++ -*-===//
//
// The runtime's knowledge of each kernel beyond its interface (format.h):
// the checks that make a dispatch safe to run for every sequence length up
// to the bound (every element a shader can touch lies inside its binding),
// the shader variant and grid of a sequence-length bucket, and the bytes a
// call moves (statistics). One function per question, one case per kernel.
//
//===----------------------------------------------------------------------===//
#ifndef ETLLM_RUNTIME_VULKAN_CONTRACTS_H
#define ETLLM_RUNTIME_VULKAN_CONTRACTS_H

#include "etllm/runtime/dtype.h"
#include "etllm/runtime/result.h"
#include "etllm/runtime/vulkan/format.h"

#include <cstdint>
#include <string>
#include <vector>

namespace etllm::rt::vulkan {

/// One storage binding as init resolved it.
struct BoundRange {
  uint32_t buffer = 0;
  uint64_t offset = 0, size = 0;
};

/// A dispatch read from the blob.
struct DispatchDesc {
  KernelId kernel = KernelId::Copy;
  uint32_t variant = 0;
  std::vector<BoundRange> bindings;
  std::vector<uint32_t> params; // the parameter block's words
  bool barrier = false;
  int layer = -1;
  std::string label;
};

/// What a dispatch's checks need to know besides the dispatch.
struct CheckContext {
  uint64_t seqBound = 1;      ///< largest S
  uint32_t maxGroups = 65535; ///< the device's workgroup count limit
};

/// Checks a dispatch's parameters against its bindings: every element the
/// kernel can read or write, for every S in [1, seqBound], lies inside its
/// binding; sizes are within the kernels' limits. Errors name the field.
Status checkDispatch(const DispatchDesc &d, const CheckContext &c);

/// How a dispatch runs in the command buffer of bucket `bucket` (the
/// largest S of the calls it serves).
struct Launch {
  bool skip = false; ///< not recorded (SDPA_COMBINE after a direct SDPA)
  uint32_t mode = 0; ///< the shader mode (SDPA: 1 split-KV)
  uint32_t groups[3] = {1, 1, 1};
};
Launch launchFor(const DispatchDesc &d, uint32_t bucket);

/// Device bytes one call of S queries attending kvLen keys moves through
/// the dispatch (reads + writes, from the kernel's access pattern).
uint64_t dispatchBytes(const DispatchDesc &d, uint32_t S, uint32_t kvLen,
                       uint32_t bucket);

/// Element size of binding `i` of the dispatch (0: a weight or table
/// checked by bytes).
uint32_t bindingElementBytes(KernelId k, uint32_t variant, uint32_t i);

} // namespace etllm::rt::vulkan

#endif // ETLLM_RUNTIME_VULKAN_CONTRACTS_H
