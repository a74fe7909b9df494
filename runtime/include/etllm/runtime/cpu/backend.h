//===- backend.h - The cpu backend's runtime half ---------------*- C++ -*-===//
//
// The runtime half of the optimized CPU backend ("cpu"): it verifies an
// EXN1 blob (cpu.fbs) against the program's constants, plans the memory
// of the subgraph's internal values once, and runs the nodes with the
// optimized kernels (kernels.h), falling back to the portable ones.
//
//===----------------------------------------------------------------------===//
#ifndef ETLLM_RUNTIME_CPU_BACKEND_H
#define ETLLM_RUNTIME_CPU_BACKEND_H

#include "etllm/runtime/backend.h"
#include "etllm/runtime/cpu/kernels.h"

#include <memory>

namespace etllm::rt::cpu {

/// The backend id the compiler half writes into programs.
inline constexpr const char *kBackendId = "cpu";

/// The ids this backend had before, which programs written then carry:
/// "xnnpack", its name until etllm named it for what it is (its delegate
/// and EXN1 blob are otherwise unchanged). The one statement of the alias:
/// the runtime runs a delegate of a former id on this backend
/// (Backend::formerIds), the compiler takes one for this backend
/// (BackendCompiler::formerIds: `backends=xnnpack`) and a recipe named
/// after one is the recipe named after kBackendId (`xnnpack-int4` is
/// `cpu-int4`: etllm/Pipeline/Pipelines.h canonicalRecipeName).
inline constexpr const char *kFormerBackendIds[] = {"xnnpack"};

/// A new cpu backend whose instances run `isa`'s kernels (the CPU's
/// best by default; an unsupported ISA falls back to Isa::Generic).
std::shared_ptr<Backend> makeCpuBackend(Isa isa = detectIsa());

/// The bytes a cpu delegate instance planned for its internal values
/// (0 for an instance of another backend). For tests and statistics.
size_t plannedBytes(const DelegateInstance &instance);

/// Registers the cpu backend (registerBuiltinBackends calls this).
void registerCpuBackend();

} // namespace etllm::rt::cpu

#endif // ETLLM_RUNTIME_CPU_BACKEND_H
