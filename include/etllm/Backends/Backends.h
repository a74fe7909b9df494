//===- Backends.h - Backends built into the compiler ------------*- C++ -*-===//
#ifndef ETLLM_BACKENDS_BACKENDS_H
#define ETLLM_BACKENDS_BACKENDS_H

namespace etllm {

/// Registers the compiler halves of the built-in backends (xnnpack). The
/// portable kernels need no registration: whatever no backend takes runs on
/// them.
void registerBuiltinBackendCompilers();
/// Registers the Vulkan backend's compiler half and its pass
/// (lib/Backends/Vulkan).
void registerVulkanBackendCompiler();

} // namespace etllm

#endif // ETLLM_BACKENDS_BACKENDS_H
