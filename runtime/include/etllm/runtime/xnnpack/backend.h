//===- backend.h - The xnnpack backend's runtime half -----------*- C++ -*-===//
//
// The runtime half of the optimized CPU backend ("xnnpack"): it verifies an
// EXN1 blob (xnnpack.fbs) against the program's constants, plans the memory
// of the subgraph's internal values once, and runs the nodes with the
// optimized kernels (kernels.h), falling back to the portable ones.
//
//===----------------------------------------------------------------------===//
#ifndef ETLLM_RUNTIME_XNNPACK_BACKEND_H
#define ETLLM_RUNTIME_XNNPACK_BACKEND_H

#include "etllm/runtime/backend.h"
#include "etllm/runtime/xnnpack/kernels.h"

#include <memory>

namespace etllm::rt::xnnpack {

/// The backend id the compiler half writes into programs.
inline constexpr const char *kBackendId = "xnnpack";

/// A new xnnpack backend whose instances run `isa`'s kernels (the CPU's
/// best by default; an unsupported ISA falls back to Isa::Generic).
std::shared_ptr<Backend> makeXnnpackBackend(Isa isa = detectIsa());

/// The bytes an xnnpack delegate instance planned for its internal values
/// (0 for an instance of another backend). For tests and statistics.
size_t plannedBytes(const DelegateInstance &instance);

/// Registers the xnnpack backend (registerBuiltinBackends calls this).
void registerXnnpackBackend();

} // namespace etllm::rt::xnnpack

#endif // ETLLM_RUNTIME_XNNPACK_BACKEND_H
