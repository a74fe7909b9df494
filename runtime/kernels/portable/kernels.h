//===- kernels.h - The portable kernel functions ----------------*- C++ -*-===//
//
// Internal to runtime/kernels/portable: one function per ops.def entry,
// `kernel<Name>`. They assume the argument counts of ops.def (the registry
// wraps each in a check of the counts and of the input storage, see
// registry.cpp); everything else they validate themselves.
//
//===----------------------------------------------------------------------===//
#ifndef ETLLM_KERNELS_PORTABLE_KERNELS_H
#define ETLLM_KERNELS_PORTABLE_KERNELS_H

#include "etllm/runtime/kernel.h"

namespace etllm::rt::portable {

#define ETLLM_OP(Name, Str, MinIn, MaxIn, Outs, Ints, Floats)                  \
  Status kernel##Name(const KernelArgs &args);
#include "etllm/runtime/ops.def"

} // namespace etllm::rt::portable

#endif // ETLLM_KERNELS_PORTABLE_KERNELS_H
