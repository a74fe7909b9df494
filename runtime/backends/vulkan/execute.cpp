//===- execute.cpp - The Vulkan delegate: record once, replay -------------===//
//
// A call copies its inputs into the arena (indices to i32, activations to
// the device's float type; positions checked against the caches and
// tables), writes the sequence length and the attention length into the
// globals uniform buffer, and replays the command buffer of its bucket
// (the smallest power of two >= S, or the bound): recorded on the first
// call of that bucket, never again. No descriptor is written and nothing is
// allocated after init.
//
//===----------------------------------------------------------------------===//
#include "instance.h"

#include "etllm/runtime/half.h"
#include "etllm/schema/vulkan_generated.h"

#include <algorithm>
#include <cstring>

namespace etllm::rt::vulkan {

namespace vfb = ::etllm::vulkan;

namespace {

void memoryBarrier(const Vk &vk, VkCommandBuffer cmd, VkPipelineStageFlags src,
                   VkAccessFlags srcAccess, VkPipelineStageFlags dst,
                   VkAccessFlags dstAccess) {
  VkMemoryBarrier b{VK_STRUCTURE_TYPE_MEMORY_BARRIER};
  b.srcAccessMask = srcAccess;
  b.dstAccessMask = dstAccess;
  vk.vkCmdPipelineBarrier(cmd, src, dst, 0, 1, &b, 0, nullptr, 0, nullptr);
}

/// Converts `n` floats of type `from` at `src` to type `to` at `dst`.
void convert(const uint8_t *src, DType from, uint8_t *dst, DType to,
             int64_t n) {
  if (from == to) {
    std::memcpy(dst, src, size_t(n) * elementSize(from));
  } else if (from == DType::F32) {
    const auto *f = reinterpret_cast<const float *>(src);
    auto *h = reinterpret_cast<uint16_t *>(dst);
    for (int64_t e = 0; e < n; ++e)
      h[e] = floatToHalf(f[e]);
  } else {
    const auto *h = reinterpret_cast<const uint16_t *>(src);
    auto *f = reinterpret_cast<float *>(dst);
    for (int64_t e = 0; e < n; ++e)
      f[e] = halfToFloat(h[e]);
  }
}

/// Copies an activation between the host (dense at the call's shape) and
/// the arena (dense at the bound's shape: the sequence dimension has its
/// bound's extent), converting between f32 and f16.
void copyActivation(const IoDesc &io, int64_t S, const uint8_t *src, DType from,
                    uint8_t *dst, DType to, bool toArena) {
  int64_t outer = 1, inner = 1;
  for (int k = 0; k < io.rank; ++k) {
    if (io.dynamicDim >= 0 && k < io.dynamicDim)
      outer *= io.sizes[k];
    else if (k != io.dynamicDim)
      inner *= io.sizes[k];
  }
  const int64_t run = (io.dynamicDim >= 0 ? S : 1) * inner;
  const int64_t arenaRun =
      (io.dynamicDim >= 0 ? io.sizes[io.dynamicDim] : 1) * inner;
  for (int64_t o = 0; o < outer; ++o) {
    const int64_t hostAt = o * run, arenaAt = o * arenaRun;
    const int64_t srcAt = toArena ? hostAt : arenaAt;
    const int64_t dstAt = toArena ? arenaAt : hostAt;
    convert(src + size_t(srcAt) * elementSize(from), from,
            dst + size_t(dstAt) * elementSize(to), to, run);
  }
}

std::string ioName(const char *what, size_t i) {
  return std::string(what) + " " + std::to_string(i);
}

} // namespace

Result<Recording *> VulkanInstance::record(uint64_t bucket) {
  const Vk &vk = ctx->vk();
  Recording rec;
  rec.layerDispatches.assign(size_t(numLayers), 0);
  rec.layerBarriers.assign(size_t(numLayers), 0);
  VkCommandBufferAllocateInfo ai{
      VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO};
  ai.commandPool = cmdPool;
  ai.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
  ai.commandBufferCount = 1;
  VkResult r = vk.vkAllocateCommandBuffers(ctx->device(), &ai, &rec.cmd);
  if (r != VK_SUCCESS)
    return Error(std::string("vulkan: vkAllocateCommandBuffers failed: ") +
                 resultName(r));
  VkCommandBufferBeginInfo bi{VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
  vk.vkBeginCommandBuffer(rec.cmd, &bi);
  // The inputs the host wrote and the previous call's writes, before any
  // dispatch reads or writes.
  memoryBarrier(vk, rec.cmd,
                VK_PIPELINE_STAGE_HOST_BIT |
                    VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT,
                VK_ACCESS_HOST_WRITE_BIT | VK_ACCESS_SHADER_WRITE_BIT,
                VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT,
                VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT |
                    VK_ACCESS_UNIFORM_READ_BIT);
  bool barrier = false; // a skipped dispatch's barrier is kept for the next
  for (size_t i = 0; i < dispatches.size(); ++i) {
    const DispatchDesc &d = dispatches[i];
    const Launch l = launchFor(d, uint32_t(bucket));
    barrier |= d.barrier && i > 0;
    if (l.skip)
      continue;
    if (barrier) {
      memoryBarrier(vk, rec.cmd, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT,
                    VK_ACCESS_SHADER_WRITE_BIT,
                    VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT,
                    VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT);
      ++rec.barriers;
      if (d.layer >= 0)
        ++rec.layerBarriers[size_t(d.layer)];
      barrier = false;
    }
    auto p = ctx->pipeline(d.kernel, d.variant, l.mode);
    if (!p.ok())
      return p.error();
    vk.vkCmdBindPipeline(rec.cmd, VK_PIPELINE_BIND_POINT_COMPUTE,
                         (*p)->pipeline);
    vk.vkCmdBindDescriptorSets(rec.cmd, VK_PIPELINE_BIND_POINT_COMPUTE,
                               (*p)->layout, 0, 1, &sets[i], 0, nullptr);
    PushConstants push{l.mode, uint32_t(bucket)};
    vk.vkCmdPushConstants(rec.cmd, (*p)->layout, VK_SHADER_STAGE_COMPUTE_BIT, 0,
                          sizeof(push), &push);
    vk.vkCmdDispatch(rec.cmd, l.groups[0], l.groups[1], l.groups[2]);
    ++rec.dispatches;
    if (d.layer >= 0)
      ++rec.layerDispatches[size_t(d.layer)];
  }
  // The outputs, for the host to read after the fence.
  memoryBarrier(vk, rec.cmd, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT,
                VK_ACCESS_SHADER_WRITE_BIT, VK_PIPELINE_STAGE_HOST_BIT,
                VK_ACCESS_HOST_READ_BIT);
  r = vk.vkEndCommandBuffer(rec.cmd);
  if (r != VK_SUCCESS)
    return Error(std::string("vulkan: recording the command buffer failed: ") +
                 resultName(r));
  ++stats.recordings;
  return &(recordings[bucket] = std::move(rec));
}

Status VulkanInstance::execute(Span<Tensor *const> in, Span<Tensor *const> out,
                               ExecContext &) {
  if (in.size != inputs.size() || out.size != outputs.size())
    return Error("vulkan: the subgraph takes " + std::to_string(inputs.size()) +
                 " inputs and " + std::to_string(outputs.size()) +
                 " outputs, got " + std::to_string(in.size) + " and " +
                 std::to_string(out.size));
  // The sequence length: every dynamic input dimension has it.
  int64_t S = -1;
  for (size_t i = 0; i < in.size; ++i) {
    const IoDesc &io = inputs[i];
    const Tensor *t = in[i];
    const std::string name = ioName("input", i);
    if (!t)
      return Error("vulkan: " + name + " is null");
    if (t->dtype != io.dtype || t->rank != io.rank)
      return Error("vulkan: " + name + " is " + dtypeName(t->dtype) + " " +
                   t->shapeString() + ", the subgraph expects " +
                   dtypeName(io.dtype) + " of rank " + std::to_string(io.rank));
    for (int k = 0; k < io.rank; ++k) {
      if (k == io.dynamicDim) {
        if (t->sizes[k] < 1 || t->sizes[k] > io.sizes[k])
          return Error("vulkan: " + name + " " + t->shapeString() +
                       " does not fit the bound " +
                       std::to_string(io.sizes[k]));
        if (S >= 0 && S != t->sizes[k])
          return Error("vulkan: " + name + " has sequence length " +
                       std::to_string(t->sizes[k]) + ", another input " +
                       std::to_string(S));
        S = t->sizes[k];
      } else if (t->sizes[k] != io.sizes[k]) {
        return Error("vulkan: " + name + " " + t->shapeString() +
                     " does not match the subgraph's shape");
      }
    }
    if (io.role != uint8_t(vfb::IoRole::CACHE) && t->numel() > 0 &&
        (!t->data || t->capacity < t->nbytes()))
      return Error("vulkan: " + name + " has no data");
  }
  if (S < 0)
    S = 1; // no dynamic dimension
  // Inputs into the arena.
  uint8_t *arenaPtr = buffers[arena].mapped;
  int64_t maxPos = -1;
  uint64_t hostBytes = 0;
  for (size_t i = 0; i < in.size; ++i) {
    const IoDesc &io = inputs[i];
    const Tensor &t = *in[i];
    const int64_t n = t.numel();
    uint8_t *dst = arenaPtr + io.offset;
    switch (vfb::IoRole(io.role)) {
    case vfb::IoRole::CACHE:
      break; // the device holds the cache
    case vfb::IoRole::ACTIVATION:
      copyActivation(io, S, static_cast<const uint8_t *>(t.data), io.dtype, dst,
                     io.deviceDtype, true);
      hostBytes += uint64_t(n) * elementSize(io.deviceDtype);
      break;
    case vfb::IoRole::INDICES:
    case vfb::IoRole::POSITIONS: {
      auto *d32 = reinterpret_cast<int32_t *>(dst);
      for (int64_t e = 0; e < n; ++e) {
        const int64_t v =
            t.dtype == DType::I64 ? t.ptr<int64_t>()[e] : t.ptr<int32_t>()[e];
        if (v < 0 || v >= io.indexBound)
          return Error("vulkan: " + ioName("input", i) + ": " +
                       (io.role == uint8_t(vfb::IoRole::POSITIONS) ? "position "
                                                                   : "index ") +
                       std::to_string(v) + " is outside [0, " +
                       std::to_string(io.indexBound) + ")");
        d32[e] = int32_t(v);
        if (io.role == uint8_t(vfb::IoRole::POSITIONS))
          maxPos = std::max(maxPos, v);
      }
      hostBytes += uint64_t(n) * 4;
      break;
    }
    }
  }
  Globals gl{uint32_t(S), uint32_t(maxPos >= 0 ? maxPos + 1 : S), 0, 0};
  std::memcpy(globals.mapped, &gl, sizeof(gl));

  // The bucket's command buffer, recorded once.
  const uint64_t bucket =
      *std::lower_bound(bucketSizes.begin(), bucketSizes.end(), uint64_t(S));
  auto it = recordings.find(bucket);
  Recording *rec = nullptr;
  if (it != recordings.end()) {
    rec = &it->second;
  } else {
    auto r = record(bucket);
    if (!r.ok())
      return r.error();
    rec = *r;
  }
  ETLLM_RETURN_IF_ERROR(ctx->submitAndWait(rec->cmd, fence));

  // Outputs out of the arena (caches stay on the device).
  for (size_t i = 0; i < out.size; ++i) {
    const IoDesc &io = outputs[i];
    Tensor *t = out[i];
    const std::string name = ioName("output", i);
    if (!t)
      return Error("vulkan: " + name + " is null");
    if (t->dtype != io.dtype || t->rank != io.rank)
      return Error("vulkan: " + name + " is " + dtypeName(t->dtype) +
                   " of rank " + std::to_string(t->rank) +
                   ", the subgraph writes " + dtypeName(io.dtype) +
                   " of rank " + std::to_string(io.rank));
    if (io.role == uint8_t(vfb::IoRole::CACHE))
      continue;
    int64_t sizes[kMaxRank];
    for (int k = 0; k < io.rank; ++k)
      sizes[k] = k == io.dynamicDim ? S : io.sizes[k];
    Status st = t->resize(sizes, io.rank);
    if (!st.ok())
      return Error("vulkan: " + name + ": " + st.message());
    const int64_t n = t->numel();
    copyActivation(io, S, arenaPtr + io.offset, io.deviceDtype,
                   static_cast<uint8_t *>(t->data), io.dtype, false);
    hostBytes += uint64_t(n) * elementSize(io.deviceDtype);
  }

  // Statistics: deterministic counts of this call.
  ++stats.calls;
  stats.dispatchesLastCall = rec->dispatches;
  stats.barriersLastCall = rec->barriers;
  stats.layerDispatches = rec->layerDispatches;
  stats.layerBarriers = rec->layerBarriers;
  // (The device traffic is derived when asked for: no per-call cost.)
  lastS = uint32_t(S);
  lastKvLen = gl.kvLen;
  lastBucket = uint32_t(bucket);
  stats.hostBytesLastCall = hostBytes;
  return Status();
}

void VulkanInstance::deriveTraffic() const {
  uint64_t bytes = 0;
  if (stats.calls > 0)
    for (const DispatchDesc &d : dispatches)
      bytes += dispatchBytes(d, lastS, lastKvLen, lastBucket);
  stats.bytesLastCall = bytes;
}

std::vector<std::pair<std::string, uint64_t>> VulkanInstance::counters() const {
  deriveTraffic();
  std::vector<std::pair<std::string, uint64_t>> c = {
      {"calls", stats.calls},
      {"recordings", stats.recordings},
      {"descriptor_writes", stats.descriptorWrites},
      {"dispatches", stats.dispatchesLastCall},
      {"barriers", stats.barriersLastCall},
      {"device_bytes", stats.bytesLastCall},
      {"host_bytes", stats.hostBytesLastCall},
      {"weight_bytes", stats.weightBytes},
      {"arena_bytes", stats.arenaBytes},
      {"cache_bytes", stats.cacheBytes},
      {"layers", uint64_t(numLayers)},
  };
  if (!stats.layerDispatches.empty()) {
    auto [dMin, dMax] = std::minmax_element(stats.layerDispatches.begin(),
                                            stats.layerDispatches.end());
    auto [bMin, bMax] = std::minmax_element(stats.layerBarriers.begin(),
                                            stats.layerBarriers.end());
    uint64_t inLayers = 0;
    for (uint32_t d : stats.layerDispatches)
      inLayers += d;
    c.push_back({"layer_dispatches_min", *dMin});
    c.push_back({"layer_dispatches_max", *dMax});
    c.push_back({"layer_barriers_min", *bMin});
    c.push_back({"layer_barriers_max", *bMax});
    c.push_back(
        {"dispatches_outside_layers", stats.dispatchesLastCall - inLayers});
  }
  return c;
}

} // namespace etllm::rt::vulkan
