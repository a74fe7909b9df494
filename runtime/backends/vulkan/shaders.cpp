//===- shaders.cpp - The SPIR-V of every (kernel, variant, mode) ----------===//
//
// The build compiles each shader variant with glslc, validates it with
// spirv-val and embeds it (CMakeLists.txt, embed_spirv.cmake: the table
// kGeneratedShaders). shaderName is the one place that turns a dispatch's
// kernel, variant and mode into the name the build gave the variant.
//
//===----------------------------------------------------------------------===//
#include "context.h"

#include <cstring>

namespace etllm::rt::vulkan {

extern const ShaderBlob kGeneratedShaders[];
extern const size_t kNumGeneratedShaders;

static const char *formatSuffix(WeightFormat f) {
  switch (f) {
  case WeightFormat::F32:
    return "_wf32";
  case WeightFormat::F16:
    return "_wf16";
  case WeightFormat::Q4:
    return "_wq4";
  }
  return "_w?";
}

std::string shaderName(KernelId kernel, uint32_t variant, uint32_t mode) {
  const std::string act = (variant & Variant::kActF16) ? "_a16" : "_a32";
  switch (kernel) {
  case KernelId::Copy:
    return std::string("copy") +
           ((variant & Variant::kSrcF16) ? "_s16" : "_s32") +
           ((variant & Variant::kDstF16) ? "_d16" : "_d32");
  case KernelId::Embedding:
    return "embedding" + act + formatSuffix(Variant::format(variant));
  case KernelId::Matmul:
    return std::string(mode == 0 ? "matmul_gemv" : "matmul_gemm") + act +
           formatSuffix(Variant::format(variant)) +
           ((variant & Variant::kOutF32) ? "_o32" : "");
  case KernelId::Rope:
    return "rope" + act + "_j" + std::to_string(Variant::jobs(variant));
  case KernelId::RmsNorm:
  case KernelId::Sdpa:
  case KernelId::SdpaCombine:
  case KernelId::Softmax:
  case KernelId::Elementwise:
    return kernelInfo(kernel).name + act;
  }
  return "?";
}

const ShaderBlob *findShader(const std::string &name) {
  for (size_t i = 0; i < kNumGeneratedShaders; ++i)
    if (name == kGeneratedShaders[i].name)
      return &kGeneratedShaders[i];
  return nullptr;
}

const ShaderBlob *allShaders(size_t &count) {
  count = kNumGeneratedShaders;
  return kGeneratedShaders;
}

} // namespace etllm::rt::vulkan
