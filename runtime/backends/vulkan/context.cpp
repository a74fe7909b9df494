//===- context.cpp - The Vulkan device the backend's instances share ------===//
#include "context.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <sstream>

namespace etllm::rt::vulkan {

namespace {

constexpr const char *kValidationLayer = "VK_LAYER_KHRONOS_validation";

Error vkError(const std::string &what, VkResult r) {
  return Error(what + " failed: " + resultName(r));
}

bool envFlag(const char *name) {
  const char *v = std::getenv(name);
  return v && *v && std::strcmp(v, "0") != 0;
}

} // namespace

std::string DeviceInfo::summary() const {
  std::ostringstream os;
  os << "device: " << name << " (" << driver << "), Vulkan "
     << VK_API_VERSION_MAJOR(apiVersion) << "."
     << VK_API_VERSION_MINOR(apiVersion) << "."
     << VK_API_VERSION_PATCH(apiVersion) << "\n"
     << "shaderInt8: " << shaderInt8 << ", shaderFloat16: " << shaderFloat16
     << ", 8-bit storage: " << storage8 << ", 16-bit storage: " << storage16
     << "\n"
     << "subgroup size: " << subgroupSize
     << " (not assumed), arithmetic: " << subgroupArithmetic
     << ", shuffle: " << subgroupShuffle << ", ballot: " << subgroupBallot
     << "\n"
     << "maxStorageBufferRange: " << maxStorageBufferRange
     << ", minStorageBufferOffsetAlignment: " << minStorageBufferOffsetAlignment
     << ", maxUniformBufferRange: " << maxUniformBufferRange
     << ", maxMemoryAllocationSize: " << maxMemoryAllocationSize << "\n"
     << "memory: host-visible"
     << (deviceLocalHostVisible ? ", device-local" : " (not device-local)")
     << "\n";
  return os.str();
}

VKAPI_ATTR VkBool32 VKAPI_CALL Context::onMessage(
    VkDebugUtilsMessageSeverityFlagBitsEXT severity,
    VkDebugUtilsMessageTypeFlagsEXT,
    const VkDebugUtilsMessengerCallbackDataEXT *data, void *user) {
  auto *self = static_cast<Context *>(user);
  std::lock_guard<std::mutex> lock(self->logMutex_);
  ++self->messages_;
  if (self->printMessages_)
    std::fprintf(stderr, "vulkan validation: %s\n",
                 data && data->pMessage ? data->pMessage : "?");
  if (self->log_.size() < 64)
    self->log_.push_back(
        std::string(severity >= VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT
                        ? "error: "
                        : "warning: ") +
        (data && data->pMessage ? data->pMessage : "?"));
  return VK_FALSE;
}

uint64_t Context::validationMessages() const {
  std::lock_guard<std::mutex> lock(logMutex_);
  return messages_;
}

std::vector<std::string> Context::validationLog() const {
  std::lock_guard<std::mutex> lock(logMutex_);
  return log_;
}

void Context::clearValidationLog() {
  std::lock_guard<std::mutex> lock(logMutex_);
  messages_ = 0;
  log_.clear();
}

Result<std::shared_ptr<Context>> Context::create(const BackendOptions &o) {
  std::shared_ptr<Context> c(new Context());
  Status st = c->init(o);
  if (!st.ok())
    return Error("vulkan: " + st.message());
  return c;
}

Status Context::init(const BackendOptions &options) {
  ETLLM_RETURN_IF_ERROR(vk_.loadGlobal());
  // Asked for by the environment (tools, end-to-end tests): the messages
  // also go to stderr.
  printMessages_ = envFlag("ETLLM_VULKAN_VALIDATION");
  const bool validation = options.validation || printMessages_;

  uint32_t apiVersion = VK_API_VERSION_1_0;
  if (vk_.vkEnumerateInstanceVersion)
    vk_.vkEnumerateInstanceVersion(&apiVersion);
  if (apiVersion < VK_API_VERSION_1_1)
    return Error("the Vulkan loader supports only Vulkan 1.0 (1.1 is needed)");

  std::vector<const char *> layers, extensions;
  VkValidationFeaturesEXT features{VK_STRUCTURE_TYPE_VALIDATION_FEATURES_EXT};
  const VkValidationFeatureEnableEXT enables[] = {
      VK_VALIDATION_FEATURE_ENABLE_SYNCHRONIZATION_VALIDATION_EXT};
  VkDebugUtilsMessengerCreateInfoEXT messengerInfo{
      VK_STRUCTURE_TYPE_DEBUG_UTILS_MESSENGER_CREATE_INFO_EXT};
  messengerInfo.messageSeverity =
      VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT |
      VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT;
  messengerInfo.messageType = VK_DEBUG_UTILS_MESSAGE_TYPE_GENERAL_BIT_EXT |
                              VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT |
                              VK_DEBUG_UTILS_MESSAGE_TYPE_PERFORMANCE_BIT_EXT;
  messengerInfo.pfnUserCallback = &Context::onMessage;
  messengerInfo.pUserData = this;
  const void *next = nullptr;
  if (validation) {
    uint32_t n = 0;
    vk_.vkEnumerateInstanceLayerProperties(&n, nullptr);
    std::vector<VkLayerProperties> props(n);
    vk_.vkEnumerateInstanceLayerProperties(&n, props.data());
    bool found = false;
    for (const VkLayerProperties &p : props)
      found |= std::strcmp(p.layerName, kValidationLayer) == 0;
    if (!found)
      return Error(std::string("validation was asked for, but the layer ") +
                   kValidationLayer +
                   " is not installed (Debian: vulkan-validationlayers)");
    layers.push_back(kValidationLayer);
    extensions.push_back(VK_EXT_DEBUG_UTILS_EXTENSION_NAME);
    extensions.push_back(VK_EXT_VALIDATION_FEATURES_EXTENSION_NAME);
    features.enabledValidationFeatureCount = 1;
    features.pEnabledValidationFeatures = enables;
    features.pNext = &messengerInfo;
    next = &features;
  }
  VkApplicationInfo app{VK_STRUCTURE_TYPE_APPLICATION_INFO};
  app.pApplicationName = "etllm";
  app.pEngineName = "etllm";
  app.apiVersion = VK_API_VERSION_1_1;
  VkInstanceCreateInfo ici{VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO};
  ici.pNext = next;
  ici.pApplicationInfo = &app;
  ici.enabledLayerCount = uint32_t(layers.size());
  ici.ppEnabledLayerNames = layers.data();
  ici.enabledExtensionCount = uint32_t(extensions.size());
  ici.ppEnabledExtensionNames = extensions.data();
  VkResult r = vk_.vkCreateInstance(&ici, nullptr, &instance_);
  if (r != VK_SUCCESS)
    return vkError("vkCreateInstance", r);
  ETLLM_RETURN_IF_ERROR(vk_.loadInstance(instance_));
  if (validation) {
    if (!vk_.vkCreateDebugUtilsMessengerEXT)
      return Error("the validation layer has no VK_EXT_debug_utils");
    r = vk_.vkCreateDebugUtilsMessengerEXT(instance_, &messengerInfo, nullptr,
                                           &messenger_);
    if (r != VK_SUCCESS)
      return vkError("vkCreateDebugUtilsMessengerEXT", r);
  }

  // The device: the chosen one, or the first with a compute queue.
  uint32_t count = 0;
  vk_.vkEnumeratePhysicalDevices(instance_, &count, nullptr);
  std::vector<VkPhysicalDevice> devices(count);
  vk_.vkEnumeratePhysicalDevices(instance_, &count, devices.data());
  if (count == 0)
    return Error("no Vulkan device: the loader found no driver (on Debian, "
                 "mesa-vulkan-drivers provides lavapipe, a CPU device)");
  int want = options.deviceIndex;
  if (const char *env = std::getenv("ETLLM_VULKAN_DEVICE"); env && *env)
    want = std::atoi(env);
  std::string rejected;
  for (uint32_t d = 0; d < count; ++d) {
    if (want >= 0 && uint32_t(want) != d)
      continue;
    VkPhysicalDeviceProperties props;
    vk_.vkGetPhysicalDeviceProperties(devices[d], &props);
    if (props.apiVersion < VK_API_VERSION_1_1) {
      rejected += std::string(" ") + props.deviceName + " (Vulkan 1.0)";
      continue;
    }
    uint32_t nq = 0;
    vk_.vkGetPhysicalDeviceQueueFamilyProperties(devices[d], &nq, nullptr);
    std::vector<VkQueueFamilyProperties> qf(nq);
    vk_.vkGetPhysicalDeviceQueueFamilyProperties(devices[d], &nq, qf.data());
    for (uint32_t q = 0; q < nq; ++q)
      if (qf[q].queueFlags & VK_QUEUE_COMPUTE_BIT) {
        physical_ = devices[d];
        queueFamily_ = q;
        break;
      }
    if (physical_)
      break;
    rejected += std::string(" ") + props.deviceName + " (no compute queue)";
  }
  if (!physical_)
    return Error(want >= 0 && uint32_t(want) >= count
                     ? "there is no Vulkan device " + std::to_string(want) +
                           " (" + std::to_string(count) + " found)"
                     : "no Vulkan device with Vulkan 1.1 and a compute "
                       "queue:" +
                           rejected);

  // Features and limits.
  VkPhysicalDeviceShaderFloat16Int8Features f16i8{
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_FLOAT16_INT8_FEATURES};
  VkPhysicalDevice8BitStorageFeatures s8{
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_8BIT_STORAGE_FEATURES};
  VkPhysicalDevice16BitStorageFeatures s16{
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_16BIT_STORAGE_FEATURES};
  VkPhysicalDeviceFeatures2 f2{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2};
  VkPhysicalDeviceProperties pr0;
  vk_.vkGetPhysicalDeviceProperties(physical_, &pr0);
  const bool v12 = pr0.apiVersion >= VK_API_VERSION_1_2;
  f2.pNext = &s16;
  if (v12) { // (promoted to 1.2; on 1.1 they need extensions we do not use)
    s16.pNext = &s8;
    s8.pNext = &f16i8;
  }
  vk_.vkGetPhysicalDeviceFeatures2(physical_, &f2);
  VkPhysicalDeviceSubgroupProperties sub{
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_PROPERTIES};
  VkPhysicalDeviceMaintenance3Properties m3{
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MAINTENANCE_3_PROPERTIES};
  sub.pNext = &m3;
  VkPhysicalDeviceProperties2 p2{
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2};
  p2.pNext = &sub;
  vk_.vkGetPhysicalDeviceProperties2(physical_, &p2);
  const VkPhysicalDeviceLimits &lim = p2.properties.limits;
  info_.name = p2.properties.deviceName;
  info_.apiVersion = p2.properties.apiVersion;
  info_.driver = "vendor 0x" + [&] {
    std::ostringstream os;
    os << std::hex << p2.properties.vendorID;
    return os.str();
  }();
  info_.shaderInt8 = v12 && f16i8.shaderInt8;
  info_.shaderFloat16 = v12 && f16i8.shaderFloat16;
  info_.storage8 = v12 && s8.storageBuffer8BitAccess;
  info_.storage16 = s16.storageBuffer16BitAccess;
  info_.subgroupSize = sub.subgroupSize;
  info_.subgroupArithmetic =
      sub.supportedOperations & VK_SUBGROUP_FEATURE_ARITHMETIC_BIT;
  info_.subgroupShuffle =
      sub.supportedOperations & VK_SUBGROUP_FEATURE_SHUFFLE_BIT;
  info_.subgroupBallot =
      sub.supportedOperations & VK_SUBGROUP_FEATURE_BALLOT_BIT;
  info_.maxStorageBufferRange = lim.maxStorageBufferRange;
  info_.minStorageBufferOffsetAlignment = lim.minStorageBufferOffsetAlignment;
  info_.minUniformBufferOffsetAlignment = lim.minUniformBufferOffsetAlignment;
  info_.maxUniformBufferRange = lim.maxUniformBufferRange;
  info_.maxMemoryAllocationSize = m3.maxMemoryAllocationSize;
  for (int i = 0; i < 3; ++i)
    info_.maxComputeWorkGroupCount[i] = lim.maxComputeWorkGroupCount[i];

  // Memory: host-visible and coherent (the arena is written and read by
  // the host every call), device-local when the device has such a type.
  VkPhysicalDeviceMemoryProperties mem;
  vk_.vkGetPhysicalDeviceMemoryProperties(physical_, &mem);
  const VkMemoryPropertyFlags need = VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT |
                                     VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;
  int best = -1;
  for (uint32_t t = 0; t < mem.memoryTypeCount; ++t) {
    VkMemoryPropertyFlags f = mem.memoryTypes[t].propertyFlags;
    if ((f & need) != need)
      continue;
    const bool local = f & VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT;
    if (best < 0 || (local && !info_.deviceLocalHostVisible)) {
      best = int(t);
      info_.deviceLocalHostVisible = local;
    }
  }
  if (best < 0)
    return Error(info_.name + " has no host-visible coherent memory");
  memoryType_ = uint32_t(best);

  // The logical device: one compute queue, 16-bit storage when there is
  // (f16 programs need it; init checks).
  const float priority = 1.0f;
  VkDeviceQueueCreateInfo qci{VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO};
  qci.queueFamilyIndex = queueFamily_;
  qci.queueCount = 1;
  qci.pQueuePriorities = &priority;
  VkPhysicalDevice16BitStorageFeatures enable16{
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_16BIT_STORAGE_FEATURES};
  enable16.storageBuffer16BitAccess = info_.storage16;
  VkPhysicalDeviceFeatures2 enable{
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2};
  enable.pNext = &enable16;
  VkDeviceCreateInfo dci{VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO};
  dci.pNext = &enable;
  dci.queueCreateInfoCount = 1;
  dci.pQueueCreateInfos = &qci;
  r = vk_.vkCreateDevice(physical_, &dci, nullptr, &device_);
  if (r != VK_SUCCESS)
    return vkError("vkCreateDevice on " + info_.name, r);
  ETLLM_RETURN_IF_ERROR(vk_.loadDevice(device_));
  vk_.vkGetDeviceQueue(device_, queueFamily_, 0, &queue_);
  return Status();
}

Context::~Context() {
  if (device_) {
    vk_.vkDeviceWaitIdle(device_);
    for (auto &entry : pipelines_)
      vk_.vkDestroyPipeline(device_, entry.second->pipeline, nullptr);
    for (auto &entry : layouts_) {
      vk_.vkDestroyPipelineLayout(device_, entry.second->layout, nullptr);
      vk_.vkDestroyDescriptorSetLayout(device_, entry.second->setLayout,
                                       nullptr);
    }
    vk_.vkDestroyDevice(device_, nullptr);
  }
  if (messenger_)
    vk_.vkDestroyDebugUtilsMessengerEXT(instance_, messenger_, nullptr);
  if (instance_)
    vk_.vkDestroyInstance(instance_, nullptr);
}

Result<const Pipeline *> Context::pipeline(KernelId kernel, uint32_t variant,
                                           uint32_t mode) {
  std::lock_guard<std::mutex> lock(pipelinesMutex_);
  // Only the matmul kernel has shaders per mode (GEMV, GEMM); the others
  // read the mode from their push constants.
  const uint32_t shaderMode = kernel == KernelId::Matmul ? mode : 0;
  auto key = std::make_tuple(int(kernel), variant, shaderMode);
  auto it = pipelines_.find(key);
  if (it != pipelines_.end())
    return static_cast<const Pipeline *>(it->second.get());
  const std::string name = shaderName(kernel, variant, shaderMode);
  const ShaderBlob *blob = findShader(name);
  if (!blob)
    return Error("vulkan: no shader '" + name + "' in this build");
  auto &lay = layouts_[std::make_pair(int(kernel), variant)];
  if (!lay) {
    auto l = std::make_unique<Pipeline>();
    l->storageBindings = numBindings(kernel, variant);
    std::vector<VkDescriptorSetLayoutBinding> bindings(2 + l->storageBindings);
    for (uint32_t i = 0; i < bindings.size(); ++i) {
      bindings[i].binding = i;
      bindings[i].descriptorType = i < 2 ? VK_DESCRIPTOR_TYPE_UNIFORM_BUFFER
                                         : VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
      bindings[i].descriptorCount = 1;
      bindings[i].stageFlags = VK_SHADER_STAGE_COMPUTE_BIT;
    }
    VkDescriptorSetLayoutCreateInfo dl{
        VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO};
    dl.bindingCount = uint32_t(bindings.size());
    dl.pBindings = bindings.data();
    VkResult r =
        vk_.vkCreateDescriptorSetLayout(device_, &dl, nullptr, &l->setLayout);
    if (r != VK_SUCCESS)
      return vkError("vkCreateDescriptorSetLayout", r);
    VkPushConstantRange push{VK_SHADER_STAGE_COMPUTE_BIT, 0,
                             sizeof(PushConstants)};
    VkPipelineLayoutCreateInfo pl{
        VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO};
    pl.setLayoutCount = 1;
    pl.pSetLayouts = &l->setLayout;
    pl.pushConstantRangeCount = 1;
    pl.pPushConstantRanges = &push;
    r = vk_.vkCreatePipelineLayout(device_, &pl, nullptr, &l->layout);
    if (r != VK_SUCCESS) {
      vk_.vkDestroyDescriptorSetLayout(device_, l->setLayout, nullptr);
      return vkError("vkCreatePipelineLayout", r);
    }
    lay = std::move(l);
  }
  auto p = std::make_unique<Pipeline>(*lay);
  VkShaderModuleCreateInfo sm{VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO};
  sm.codeSize = blob->bytes;
  sm.pCode = blob->words;
  VkShaderModule module = VK_NULL_HANDLE;
  VkResult r = vk_.vkCreateShaderModule(device_, &sm, nullptr, &module);
  if (r == VK_SUCCESS) {
    VkComputePipelineCreateInfo cp{
        VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO};
    cp.stage.sType = VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO;
    cp.stage.stage = VK_SHADER_STAGE_COMPUTE_BIT;
    cp.stage.module = module;
    cp.stage.pName = "main";
    cp.layout = p->layout;
    r = vk_.vkCreateComputePipelines(device_, VK_NULL_HANDLE, 1, &cp, nullptr,
                                     &p->pipeline);
    vk_.vkDestroyShaderModule(device_, module, nullptr);
  }
  if (r != VK_SUCCESS)
    return vkError("creating the pipeline of shader " + name, r);
  const Pipeline *out = p.get();
  pipelines_.emplace(key, std::move(p));
  return out;
}

Result<DeviceBuffer> Context::createBuffer(uint64_t size,
                                           VkBufferUsageFlags usage) {
  DeviceBuffer b;
  b.size = size;
  VkBufferCreateInfo bi{VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO};
  bi.size = size == 0 ? 4 : size;
  bi.usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT |
             VK_BUFFER_USAGE_TRANSFER_DST_BIT | usage;
  bi.sharingMode = VK_SHARING_MODE_EXCLUSIVE;
  VkResult r = vk_.vkCreateBuffer(device_, &bi, nullptr, &b.buffer);
  if (r != VK_SUCCESS)
    return vkError("vkCreateBuffer of " + std::to_string(size) + " bytes", r);
  VkMemoryRequirements req;
  vk_.vkGetBufferMemoryRequirements(device_, b.buffer, &req);
  if (!(req.memoryTypeBits & (1u << memoryType_))) {
    vk_.vkDestroyBuffer(device_, b.buffer, nullptr);
    return Error("vulkan: a buffer cannot use the host-visible memory type");
  }
  if (info_.maxMemoryAllocationSize &&
      req.size > info_.maxMemoryAllocationSize) {
    vk_.vkDestroyBuffer(device_, b.buffer, nullptr);
    return Error("vulkan: a buffer of " + std::to_string(req.size) +
                 " bytes is larger than the device's maxMemoryAllocationSize " +
                 std::to_string(info_.maxMemoryAllocationSize));
  }
  VkMemoryAllocateInfo ai{VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO};
  ai.allocationSize = req.size;
  ai.memoryTypeIndex = memoryType_;
  r = vk_.vkAllocateMemory(device_, &ai, nullptr, &b.memory);
  if (r != VK_SUCCESS) {
    vk_.vkDestroyBuffer(device_, b.buffer, nullptr);
    return vkError("vkAllocateMemory of " + std::to_string(req.size) + " bytes",
                   r);
  }
  void *mapped = nullptr;
  r = vk_.vkBindBufferMemory(device_, b.buffer, b.memory, 0);
  if (r == VK_SUCCESS)
    r = vk_.vkMapMemory(device_, b.memory, 0, VK_WHOLE_SIZE, 0, &mapped);
  if (r != VK_SUCCESS) {
    destroyBuffer(b);
    return vkError("binding and mapping a buffer", r);
  }
  b.mapped = static_cast<uint8_t *>(mapped);
  return b;
}

void Context::destroyBuffer(DeviceBuffer &b) {
  if (b.buffer)
    vk_.vkDestroyBuffer(device_, b.buffer, nullptr);
  if (b.memory)
    vk_.vkFreeMemory(device_, b.memory, nullptr); // (unmaps)
  b = DeviceBuffer();
}

Status Context::submitAndWait(VkCommandBuffer cmd, VkFence fence) {
  VkSubmitInfo si{VK_STRUCTURE_TYPE_SUBMIT_INFO};
  si.commandBufferCount = 1;
  si.pCommandBuffers = &cmd;
  {
    std::lock_guard<std::mutex> lock(queueMutex_);
    VkResult r = vk_.vkQueueSubmit(queue_, 1, &si, fence);
    if (r != VK_SUCCESS)
      return vkError("vkQueueSubmit", r);
  }
  VkResult r = vk_.vkWaitForFences(device_, 1, &fence, VK_TRUE, UINT64_MAX);
  if (r != VK_SUCCESS)
    return vkError("vkWaitForFences", r);
  r = vk_.vkResetFences(device_, 1, &fence);
  if (r != VK_SUCCESS)
    return vkError("vkResetFences", r);
  return Status();
}

} // namespace etllm::rt::vulkan
