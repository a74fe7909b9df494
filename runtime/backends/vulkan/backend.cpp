//===- backend.cpp - The Vulkan delegate: verify, upload, prepare ---------===//
//
// init() trusts nothing in the blob: it runs the flatbuffers verifier, then
// checks every buffer (a constant's size, the arena, the caches, the RoPE
// tables), every input and output (role, dtypes, shapes, where they live in
// the arena), and every dispatch (kernel, variant, bindings inside their
// buffers, aligned and within the device's binding range, the kernel's
// parameters against its bindings for every sequence length up to the bound
// (contracts.cpp), no dispatch writing a weight or reading what it writes)
// and - unless a test turned it off - that the compiler's barriers cover
// every hazard (format.h needsBarrier). Then it uploads the weights, zeroes
// the caches, computes the RoPE tables, writes every descriptor set and
// builds every pipeline a bucket will use, so that execute() allocates and
// writes nothing but the call's data.
//
//===----------------------------------------------------------------------===//
#include "instance.h"

#include "etllm/runtime/flatbuffer_checks.h"
#include "etllm/runtime/half.h"
#include "etllm/schema/vulkan_generated.h"

#include <flatbuffers/flatbuffers.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <mutex>

namespace etllm::rt::vulkan {

namespace vfb = ::etllm::vulkan;

namespace {

Error blobError(const std::string &msg) { return Error("vulkan blob: " + msg); }

std::string dispatchName(size_t i, const DispatchDesc &d) {
  return "dispatch " + std::to_string(i) + " (" + kernelInfo(d.kernel).name +
         (d.label.empty() ? "" : ": " + d.label) + ")";
}

uint64_t alignUp64(uint64_t v, uint64_t a) { return (v + a - 1) / a * a; }

/// Reads and checks one input or output description.
Status readIo(const char *what, size_t i, const vfb::Io *io,
              const vfb::Graph &g, uint64_t arenaBytes, IoDesc &d) {
  const std::string name = std::string(what) + " " + std::to_string(i);
  if (!io)
    return blobError(name + " is missing");
  if (uint8_t(io->role()) > uint8_t(vfb::IoRole::CACHE))
    return blobError(name + ": invalid role");
  d.role = uint8_t(io->role());
  if (io->dtype() >= kNumDTypes || io->device_dtype() >= kNumDTypes)
    return blobError(name + ": invalid dtype");
  d.dtype = DType(io->dtype());
  d.deviceDtype = DType(io->device_dtype());
  const uint32_t rank = io->sizes() ? io->sizes()->size() : 0;
  if (rank > uint32_t(kMaxRank))
    return blobError(name + ": rank " + std::to_string(rank) + " > " +
                     std::to_string(kMaxRank));
  d.rank = int(rank);
  uint64_t n = 1;
  for (uint32_t k = 0; k < rank; ++k) {
    const int64_t s = io->sizes()->Get(k);
    if (s < 1 || s > (int64_t(1) << 31))
      return blobError(name + ": size " + std::to_string(s) +
                       " is out of range");
    d.sizes[k] = s;
    n *= uint64_t(s);
    if (n > (uint64_t(1) << 40))
      return blobError(name + " is too large");
  }
  d.dynamicDim = io->dynamic_dim();
  if (d.dynamicDim < -1 || d.dynamicDim >= int(rank))
    return blobError(name + ": invalid dynamic dimension");
  if (d.dynamicDim >= 0 && d.sizes[d.dynamicDim] != g.seq_bound())
    return blobError(name + ": the dynamic dimension's bound is not the "
                            "sequence bound");
  d.offset = io->offset();
  d.indexBound = io->index_bound();
  d.buffer = io->buffer();
  switch (vfb::IoRole(d.role)) {
  case vfb::IoRole::ACTIVATION:
    if ((d.dtype != DType::F32 && d.dtype != DType::F16) ||
        (d.deviceDtype != DType::F32 && d.deviceDtype != DType::F16))
      return blobError(name + ": activations are f32 or f16");
    break;
  case vfb::IoRole::INDICES:
  case vfb::IoRole::POSITIONS:
    if ((d.dtype != DType::I64 && d.dtype != DType::I32) ||
        d.deviceDtype != DType::I32)
      return blobError(name + ": indices are i64 or i32 on the host, i32 on "
                              "the device");
    if (d.indexBound < 1 || d.indexBound > (int64_t(1) << 31))
      return blobError(name + ": invalid index bound");
    break;
  case vfb::IoRole::CACHE:
    if (!g.buffers() || d.buffer >= g.buffers()->size() ||
        g.buffers()->Get(d.buffer)->kind() != vfb::BufferKind::CACHE)
      return blobError(name + ": does not name a cache buffer");
    return Status();
  }
  d.deviceBytes = n * elementSize(d.deviceDtype);
  if (d.offset % 4 || d.offset > arenaBytes ||
      d.deviceBytes > arenaBytes - d.offset)
    return blobError(name + ": [" + std::to_string(d.offset) + ", +" +
                     std::to_string(d.deviceBytes) +
                     ") is not inside the arena of " +
                     std::to_string(arenaBytes) + " bytes");
  return Status();
}

class VulkanBackend final : public Backend {
public:
  explicit VulkanBackend(BackendOptions o) : options_(o) {}
  const char *id() const override { return kBackendId; }
  Result<std::unique_ptr<DelegateInstance>>
  init(const uint8_t *blob, size_t size,
       const std::vector<std::pair<std::string, std::string>> &compileSpecs,
       const ConstantTable &constants, ExecContext &ctx,
       MemoryBudget &budget) override;

  /// The device, opened by the first init.
  Result<std::shared_ptr<Context>> context() {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!ctx_) {
      auto c = Context::create(options_);
      if (!c.ok())
        return c.error();
      ctx_ = *c;
    }
    return ctx_;
  }
  std::shared_ptr<Context> existingContext() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return ctx_;
  }

private:
  BackendOptions options_;
  mutable std::mutex mutex_;
  std::shared_ptr<Context> ctx_;
};

/// The RoPE table of `rows` positions: (cos, sin) * scaling of p *
/// inv_freq[i], computed as the portable kernel computes them.
void fillRopeTable(const float *invFreq, size_t r, int64_t rows, float scaling,
                   float *out) {
  for (int64_t p = 0; p < rows; ++p)
    for (size_t i = 0; i < r; ++i) {
      const float angle = float(p) * invFreq[i];
      out[(p * r + i) * 2] = std::cos(angle) * scaling;
      out[(p * r + i) * 2 + 1] = std::sin(angle) * scaling;
    }
}

Result<std::unique_ptr<DelegateInstance>> VulkanBackend::init(
    const uint8_t *blob, size_t size,
    const std::vector<std::pair<std::string, std::string>> &compileSpecs,
    const ConstantTable &constants, ExecContext &, MemoryBudget &budget) {
  const std::string bad =
      checkDelegateBlob(blob, size, compileSpecs, kBlobFormat, "a",
                        vfb::GraphBufferHasIdentifier, vfb::VerifyGraphBuffer);
  if (!bad.empty())
    return blobError(bad);
  const vfb::Graph &g = *vfb::GetGraph(blob);
  if (g.seq_bound() < 1 || g.seq_bound() > (int64_t(1) << 24))
    return blobError("invalid sequence bound " + std::to_string(g.seq_bound()));
  if (g.act_dtype() != uint8_t(DType::F32) &&
      g.act_dtype() != uint8_t(DType::F16))
    return blobError("activations must be f32 or f16");
  const uint32_t numBuffers = g.buffers() ? g.buffers()->size() : 0;
  const uint32_t numDispatches = g.dispatches() ? g.dispatches()->size() : 0;
  if (numBuffers > kMaxBuffers || numDispatches > kMaxDispatches)
    return blobError("too many buffers or dispatches");

  // The device: a blob that cannot run here is an error naming what is
  // missing, before anything is allocated.
  auto c = context();
  if (!c.ok())
    return c.error();
  auto inst = std::make_unique<VulkanInstance>(*c);
  Context &cx = *inst->ctx;
  const DeviceInfo &dev = cx.info();
  inst->seqBound = uint64_t(g.seq_bound());
  inst->act = DType(g.act_dtype());
  inst->numLayers = std::max(0, g.num_layers());
  if (inst->act == DType::F16 && !dev.storage16)
    return Error("vulkan: the program computes in f16, and " + dev.name +
                 " has no storageBuffer16BitAccess");
  const uint32_t maxGroups = std::min({dev.maxComputeWorkGroupCount[0],
                                       dev.maxComputeWorkGroupCount[1],
                                       dev.maxComputeWorkGroupCount[2]});
  if (inst->seqBound > maxGroups)
    return Error("vulkan: the sequence bound " +
                 std::to_string(inst->seqBound) + " exceeds " + dev.name +
                 "'s workgroup count limit " + std::to_string(maxGroups));

  // Buffers.
  int arena = -1;
  uint64_t deviceBytes = 0;
  std::vector<std::pair<const uint8_t *, size_t>> constantData(numBuffers);
  for (uint32_t b = 0; b < numBuffers; ++b) {
    const vfb::Buffer *buf = g.buffers()->Get(b);
    const std::string what = "buffer " + std::to_string(b);
    if (!buf || uint8_t(buf->kind()) > uint8_t(vfb::BufferKind::ROPE_TABLE))
      return blobError(what + " is missing or of an unknown kind");
    if (buf->size() == 0 || buf->size() > (uint64_t(1) << 40))
      return blobError(what + ": invalid size " + std::to_string(buf->size()));
    switch (buf->kind()) {
    case vfb::BufferKind::ARENA:
      if (arena >= 0)
        return blobError(what + ": a second arena");
      arena = int(b);
      break;
    case vfb::BufferKind::CONSTANT: {
      auto k = constants.get(buf->constant());
      if (!k.ok())
        return blobError(what + ": " + k.message());
      if (k->second != buf->size())
        return blobError(what + ": constant " +
                         std::to_string(buf->constant()) + " holds " +
                         std::to_string(k->second) + " bytes, not " +
                         std::to_string(buf->size()));
      constantData[b] = *k;
      break;
    }
    case vfb::BufferKind::CACHE:
      break;
    case vfb::BufferKind::ROPE_TABLE: {
      auto k = constants.get(buf->constant());
      if (!k.ok())
        return blobError(what + ": " + k.message());
      const size_t r = k->second / 4;
      if (k->second % 4 || r == 0 || buf->rows() < 1 ||
          buf->rows() > (int64_t(1) << 24) ||
          buf->size() != uint64_t(buf->rows()) * r * 8 ||
          !std::isfinite(buf->scaling()))
        return blobError(what + ": a RoPE table of " +
                         std::to_string(buf->rows()) + " rows and " +
                         std::to_string(r) + " frequencies does not take " +
                         std::to_string(buf->size()) + " bytes");
      constantData[b] = *k;
      break;
    }
    }
    deviceBytes += alignUp64(buf->size(), 256);
  }
  if (arena < 0)
    return blobError("there is no arena");
  inst->arena = uint32_t(arena);
  const uint64_t arenaBytes = g.buffers()->Get(arena)->size();

  // Inputs and outputs.
  const uint32_t nin = g.inputs() ? g.inputs()->size() : 0;
  const uint32_t nout = g.outputs() ? g.outputs()->size() : 0;
  if (nin > 1024 || nout > 1024)
    return blobError("too many inputs or outputs");
  for (uint32_t i = 0; i < nin; ++i) {
    if (g.inputs()->Get(i) && !aligned8(g.inputs()->Get(i)->sizes()))
      return blobError("input sizes are not 8-byte aligned");
    inst->inputs.emplace_back();
    ETLLM_RETURN_IF_ERROR(readIo("input", i, g.inputs()->Get(i), g, arenaBytes,
                                 inst->inputs.back()));
  }
  for (uint32_t i = 0; i < nout; ++i) {
    if (g.outputs()->Get(i) && !aligned8(g.outputs()->Get(i)->sizes()))
      return blobError("output sizes are not 8-byte aligned");
    inst->outputs.emplace_back();
    IoDesc &o = inst->outputs.back();
    ETLLM_RETURN_IF_ERROR(
        readIo("output", i, g.outputs()->Get(i), g, arenaBytes, o));
    if (o.role != uint8_t(vfb::IoRole::ACTIVATION) &&
        o.role != uint8_t(vfb::IoRole::CACHE))
      return blobError("output " + std::to_string(i) +
                       ": outputs are activations or caches");
  }

  // Dispatches.
  const CheckContext check{inst->seqBound, maxGroups};
  std::vector<Access> pending;
  for (uint32_t i = 0; i < numDispatches; ++i) {
    const vfb::Dispatch *fd = g.dispatches()->Get(i);
    if (!fd)
      return blobError("dispatch " + std::to_string(i) + " is missing");
    DispatchDesc d;
    d.kernel = KernelId(uint16_t(fd->kernel()));
    d.variant = fd->variant();
    d.barrier = fd->barrier();
    d.layer = fd->layer();
    d.label = fd->label() ? fd->label()->str() : "";
    if (uint16_t(d.kernel) >= kNumKernels)
      return blobError("dispatch " + std::to_string(i) + ": unknown kernel " +
                       std::to_string(uint16_t(d.kernel)));
    const std::string what = dispatchName(i, d);
    if (!validVariant(d.kernel, d.variant))
      return blobError(what + ": invalid variant " + std::to_string(d.variant));
    if (((d.variant & Variant::kActF16) != 0) != (inst->act == DType::F16) &&
        d.kernel != KernelId::Copy)
      return blobError(what + ": its activation type is not the graph's");
    if (d.layer < -1 || d.layer >= inst->numLayers)
      return blobError(what + ": layer " + std::to_string(d.layer) +
                       " is out of range");
    const uint32_t nb = fd->bindings() ? fd->bindings()->size() : 0;
    if (nb != numBindings(d.kernel, d.variant))
      return blobError(what + " has " + std::to_string(nb) +
                       " bindings, the kernel takes " +
                       std::to_string(numBindings(d.kernel, d.variant)));
    std::vector<Access> accesses;
    for (uint32_t k = 0; k < nb; ++k) {
      const vfb::Binding *fb = fd->bindings()->Get(k);
      if (!fb)
        return blobError(what + ": binding " + std::to_string(k) +
                         " is missing");
      BoundRange r{fb->buffer(), fb->offset(), fb->size()};
      const std::string bw = what + ", binding " + std::to_string(k);
      if (r.buffer >= numBuffers)
        return blobError(bw + ": buffer " + std::to_string(r.buffer) +
                         " does not exist");
      const uint64_t bufSize = g.buffers()->Get(r.buffer)->size();
      if (r.size == 0 || r.offset > bufSize || r.size > bufSize - r.offset)
        return blobError(bw + ": [" + std::to_string(r.offset) + ", +" +
                         std::to_string(r.size) +
                         ") is not inside its buffer of " +
                         std::to_string(bufSize) + " bytes");
      if (r.offset % dev.minStorageBufferOffsetAlignment)
        return Error("vulkan: " + bw + ": offset " + std::to_string(r.offset) +
                     " is not a multiple of " + dev.name +
                     "'s minStorageBufferOffsetAlignment " +
                     std::to_string(dev.minStorageBufferOffsetAlignment));
      if (r.size > dev.maxStorageBufferRange || r.size >= (uint64_t(1) << 31))
        return Error("vulkan: " + bw + " spans " + std::to_string(r.size) +
                     " bytes, more than " + dev.name +
                     "'s maxStorageBufferRange " +
                     std::to_string(dev.maxStorageBufferRange) +
                     " (the compiler assumed " +
                     std::to_string(g.max_binding_bytes()) + ")");
      const bool write = writesBinding(d.kernel, d.variant, k);
      const vfb::BufferKind kind = g.buffers()->Get(r.buffer)->kind();
      if (write && (kind == vfb::BufferKind::CONSTANT ||
                    kind == vfb::BufferKind::ROPE_TABLE))
        return blobError(bw + " writes a constant");
      d.bindings.push_back(r);
      accesses.push_back({r.buffer, r.offset, r.offset + r.size, write});
    }
    if (!fd->params() || fd->params()->size() > 64)
      return blobError(what + ": missing or oversized parameters");
    d.params.assign(fd->params()->begin(), fd->params()->end());
    Status st = checkDispatch(d, check);
    if (!st.ok())
      return blobError(what + ": " + st.message());
    if (selfConflict(accesses))
      return blobError(what + " reads or writes bytes it writes through "
                              "another binding");
    if (d.barrier || i == 0)
      pending.clear();
    else if (options_.checkBarriers && needsBarrier(pending, accesses))
      return blobError(what + " needs a barrier before it: it touches bytes "
                              "an earlier dispatch since the last barrier "
                              "writes, or writes bytes one reads");
    pending.insert(pending.end(), accesses.begin(), accesses.end());
    inst->dispatches.push_back(std::move(d));
  }

  // Tables only gathered from (an embedding's, not the tied lm_head's):
  // a call reads one row per index, not the whole (bench traffic).
  for (uint32_t b = 0; b < numBuffers; ++b) {
    const vfb::Buffer *buf = g.buffers()->Get(b);
    if (buf->kind() != vfb::BufferKind::CONSTANT)
      continue;
    uint64_t rows = 0;
    bool gatherOnly = false, other = false;
    for (const DispatchDesc &d : inst->dispatches)
      for (size_t k = 0; k < d.bindings.size(); ++k) {
        if (d.bindings[k].buffer != b)
          continue;
        if (d.kernel == KernelId::Embedding && k == 1) {
          EmbeddingParams p;
          std::memcpy(&p, d.params.data(), sizeof(p));
          rows = p.rows;
          gatherOnly = true;
        } else {
          other = true;
        }
      }
    if (gatherOnly && !other)
      constants.noteGatherTable(buf->constant(), rows);
  }

  // Buckets: 1, 2, 4, ... below the bound, and the bound.
  for (uint64_t b = 1; b < inst->seqBound; b *= 2)
    inst->bucketSizes.push_back(b);
  inst->bucketSizes.push_back(inst->seqBound);

  // Parameters: each dispatch's block at an aligned offset of one buffer.
  const uint64_t ubAlign =
      std::max<uint64_t>(dev.minUniformBufferOffsetAlignment, 16);
  uint64_t paramBytes = 0;
  for (const DispatchDesc &d : inst->dispatches) {
    inst->paramOffsets.push_back(paramBytes);
    paramBytes += alignUp64(kernelInfo(d.kernel).paramBytes, ubAlign);
  }
  ETLLM_RETURN_IF_ERROR(budget.reserve(
      deviceBytes + paramBytes + 256,
      "vulkan: the device buffers (weights, arena, caches, tables)"));

  // Device buffers: weights uploaded once, caches zeroed, tables computed.
  for (uint32_t b = 0; b < numBuffers; ++b) {
    const vfb::Buffer *buf = g.buffers()->Get(b);
    auto db = cx.createBuffer(buf->size(), 0);
    if (!db.ok())
      return Error("vulkan: buffer " + std::to_string(b) + ": " + db.message());
    inst->buffers.push_back(*db);
    DeviceBuffer &d = inst->buffers.back();
    switch (buf->kind()) {
    case vfb::BufferKind::CONSTANT:
      std::memcpy(d.mapped, constantData[b].first, buf->size());
      inst->stats.weightBytes += buf->size();
      break;
    case vfb::BufferKind::ROPE_TABLE: {
      const size_t r = constantData[b].second / 4;
      std::vector<float> freq(r);
      std::memcpy(freq.data(), constantData[b].first, r * 4);
      fillRopeTable(freq.data(), r, buf->rows(), buf->scaling(),
                    reinterpret_cast<float *>(d.mapped));
      break;
    }
    case vfb::BufferKind::CACHE:
      std::memset(d.mapped, 0, buf->size());
      inst->stats.cacheBytes += buf->size();
      break;
    case vfb::BufferKind::ARENA:
      std::memset(d.mapped, 0, buf->size());
      inst->stats.arenaBytes = buf->size();
      break;
    }
  }
  auto gb =
      cx.createBuffer(sizeof(Globals), VK_BUFFER_USAGE_UNIFORM_BUFFER_BIT);
  if (!gb.ok())
    return gb.error();
  inst->globals = *gb;
  std::memset(inst->globals.mapped, 0, sizeof(Globals));
  auto pb = cx.createBuffer(std::max<uint64_t>(paramBytes, 16),
                            VK_BUFFER_USAGE_UNIFORM_BUFFER_BIT);
  if (!pb.ok())
    return pb.error();
  inst->params = *pb;
  for (size_t i = 0; i < inst->dispatches.size(); ++i)
    std::memcpy(inst->params.mapped + inst->paramOffsets[i],
                inst->dispatches[i].params.data(),
                inst->dispatches[i].params.size() * 4);

  // Pipelines of every bucket's launches, then one descriptor set per
  // dispatch, written once.
  const Vk &vk = cx.vk();
  std::vector<const Pipeline *> layoutOf;
  uint32_t storageDescriptors = 0;
  for (const DispatchDesc &d : inst->dispatches) {
    const Pipeline *first = nullptr;
    for (uint64_t bucket : inst->bucketSizes) {
      Launch l = launchFor(d, uint32_t(bucket));
      auto p = cx.pipeline(d.kernel, d.variant, l.mode);
      if (!p.ok())
        return p.error();
      if (!first)
        first = *p;
    }
    layoutOf.push_back(first);
    storageDescriptors += uint32_t(d.bindings.size());
  }
  if (!inst->dispatches.empty()) {
    VkDescriptorPoolSize sizes[2] = {
        {VK_DESCRIPTOR_TYPE_UNIFORM_BUFFER, 2 * numDispatches},
        {VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, std::max(1u, storageDescriptors)}};
    VkDescriptorPoolCreateInfo dp{
        VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO};
    dp.maxSets = numDispatches;
    dp.poolSizeCount = 2;
    dp.pPoolSizes = sizes;
    VkResult r =
        vk.vkCreateDescriptorPool(cx.device(), &dp, nullptr, &inst->pool);
    if (r != VK_SUCCESS)
      return Error(std::string("vulkan: vkCreateDescriptorPool failed: ") +
                   resultName(r));
    std::vector<VkDescriptorSetLayout> setLayouts;
    for (const Pipeline *p : layoutOf)
      setLayouts.push_back(p->setLayout);
    inst->sets.resize(numDispatches);
    VkDescriptorSetAllocateInfo da{
        VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO};
    da.descriptorPool = inst->pool;
    da.descriptorSetCount = numDispatches;
    da.pSetLayouts = setLayouts.data();
    r = vk.vkAllocateDescriptorSets(cx.device(), &da, inst->sets.data());
    if (r != VK_SUCCESS)
      return Error(std::string("vulkan: vkAllocateDescriptorSets failed: ") +
                   resultName(r));
    for (uint32_t i = 0; i < numDispatches; ++i) {
      const DispatchDesc &d = inst->dispatches[i];
      std::vector<VkDescriptorBufferInfo> infos(2 + d.bindings.size());
      infos[0] = {inst->globals.buffer, 0, sizeof(Globals)};
      infos[1] = {inst->params.buffer, inst->paramOffsets[i],
                  kernelInfo(d.kernel).paramBytes};
      for (size_t k = 0; k < d.bindings.size(); ++k)
        infos[2 + k] = {inst->buffers[d.bindings[k].buffer].buffer,
                        d.bindings[k].offset, d.bindings[k].size};
      std::vector<VkWriteDescriptorSet> writes(infos.size());
      for (size_t k = 0; k < infos.size(); ++k) {
        writes[k] = {VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET};
        writes[k].dstSet = inst->sets[i];
        writes[k].dstBinding = uint32_t(k);
        writes[k].descriptorCount = 1;
        writes[k].descriptorType = k < 2 ? VK_DESCRIPTOR_TYPE_UNIFORM_BUFFER
                                         : VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
        writes[k].pBufferInfo = &infos[k];
      }
      vk.vkUpdateDescriptorSets(cx.device(), uint32_t(writes.size()),
                                writes.data(), 0, nullptr);
      ++inst->stats.descriptorWrites;
    }
  }
  VkCommandPoolCreateInfo cp{VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO};
  cp.queueFamilyIndex = cx.queueFamily();
  VkResult r =
      vk.vkCreateCommandPool(cx.device(), &cp, nullptr, &inst->cmdPool);
  if (r != VK_SUCCESS)
    return Error(std::string("vulkan: vkCreateCommandPool failed: ") +
                 resultName(r));
  VkFenceCreateInfo fi{VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
  r = vk.vkCreateFence(cx.device(), &fi, nullptr, &inst->fence);
  if (r != VK_SUCCESS)
    return Error(std::string("vulkan: vkCreateFence failed: ") + resultName(r));
  inst->stats.numLayers = inst->numLayers;
  return std::unique_ptr<DelegateInstance>(std::move(inst));
}

} // namespace

VulkanInstance::~VulkanInstance() {
  const Vk &vk = ctx->vk();
  VkDevice dev = ctx->device();
  if (fence)
    vk.vkDestroyFence(dev, fence, nullptr);
  if (cmdPool)
    vk.vkDestroyCommandPool(dev, cmdPool, nullptr); // (frees its buffers)
  if (pool)
    vk.vkDestroyDescriptorPool(dev, pool, nullptr);
  for (DeviceBuffer &b : buffers)
    ctx->destroyBuffer(b);
  ctx->destroyBuffer(globals);
  ctx->destroyBuffer(params);
}

std::shared_ptr<Backend> makeVulkanBackend(BackendOptions options) {
  return std::make_shared<VulkanBackend>(options);
}

void registerVulkanBackend() { registerBackend(makeVulkanBackend()); }

Result<DeviceInfo> probeDevice(BackendOptions options) {
  auto c = Context::create(options);
  if (!c.ok())
    return c.error();
  return (*c)->info();
}

uint64_t validationMessages(const Backend &b) {
  const auto *v = dynamic_cast<const VulkanBackend *>(&b);
  std::shared_ptr<Context> c = v ? v->existingContext() : nullptr;
  return c ? c->validationMessages() : 0;
}

std::vector<std::string> validationLog(const Backend &b) {
  const auto *v = dynamic_cast<const VulkanBackend *>(&b);
  std::shared_ptr<Context> c = v ? v->existingContext() : nullptr;
  return c ? c->validationLog() : std::vector<std::string>();
}

const InstanceStats *instanceStats(const DelegateInstance &instance) {
  const auto *v = dynamic_cast<const VulkanInstance *>(&instance);
  if (!v)
    return nullptr;
  v->deriveTraffic();
  return &v->stats;
}

} // namespace etllm::rt::vulkan
