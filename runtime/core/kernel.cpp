//===- kernel.cpp - Operator table and execution context ------------------===//
#include "etllm/runtime/kernel.h"

#include <pthreadpool.h>

#include <cstring>

namespace etllm::rt {

static const OpInfo kOps[] = {
#define ETLLM_OP(Name, Str, MinIn, MaxIn, Outs, Ints, Floats)                  \
  {OpId::Name, Str, MinIn, MaxIn, Outs, Ints, Floats},
#include "etllm/runtime/ops.def"
};
static_assert(sizeof(kOps) / sizeof(kOps[0]) == size_t(OpId::NumOps));

const OpInfo &opInfo(OpId id) { return kOps[size_t(id)]; }

const OpInfo *findOp(const char *name, size_t length) {
  for (const OpInfo &op : kOps)
    if (std::strlen(op.name) == length &&
        std::memcmp(op.name, name, length) == 0)
      return &op;
  return nullptr;
}

void *ExecContext::scratch(size_t bytes) {
  if (bytes > scratchSize_) {
    // Grows rarely (first call at a new maximum size), then is reused.
    scratchStorage_.reset(new uint8_t[bytes + 64]);
    scratchSize_ = bytes;
    uintptr_t p = reinterpret_cast<uintptr_t>(scratchStorage_.get());
    scratchAligned_ = reinterpret_cast<void *>((p + 63) & ~uintptr_t(63));
  }
  return scratchAligned_;
}

size_t ExecContext::numThreads() const {
  return pool_ ? pthreadpool_get_threads_count(pool_) : 1;
}

} // namespace etllm::rt
