//===- kernel.cpp - Operator table and execution context ------------------===//
#include "etllm/runtime/kernel.h"

#include "op_tables.h"

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

// The attribute contracts, as parallel arrays: the operator of each entry,
// and the entries themselves (contiguous per operator, in order).
static const OpId kIntAttrOps[] = {
#define ETLLM_OP_INT(Name, Index, Str, Kind, Max) OpId::Name,
#include "etllm/runtime/ops.def"
};
static const IntAttrInfo kIntAttrInfos[] = {
#define ETLLM_OP_INT(Name, Index, Str, Kind, Max) {Str, IntAttrKind::Kind, Max},
#include "etllm/runtime/ops.def"
};
static const OpId kFloatAttrOps[] = {
#define ETLLM_OP_FLOAT(Name, Index, Str) OpId::Name,
#include "etllm/runtime/ops.def"
};
static const char *const kFloatAttrNames[] = {
#define ETLLM_OP_FLOAT(Name, Index, Str) Str,
#include "etllm/runtime/ops.def"
};

using detail::entriesOf;

Span<const IntAttrInfo> intAttrs(OpId id) {
  return entriesOf(kIntAttrOps, kIntAttrInfos, id);
}

Span<const char *const> floatAttrNames(OpId id) {
  return entriesOf(kFloatAttrOps, kFloatAttrNames, id);
}

Status checkIntAttrs(OpId id, size_t numInputs, Span<const int64_t> ints) {
  const OpInfo &op = opInfo(id);
  size_t present = 0;
  bool countsInputs = false;
  Span<const IntAttrInfo> attrs = intAttrs(id);
  for (size_t i = 0; i < attrs.size && i < ints.size; ++i) {
    const IntAttrInfo &a = attrs[i];
    if (a.kind == IntAttrKind::List)
      break;
    if (a.kind == IntAttrKind::Value)
      continue;
    if (ints[i] < 0 || ints[i] > a.max)
      return Error(std::string(op.name) + ": integer attribute " +
                   std::to_string(i) + " (" + a.name + ") is " +
                   std::to_string(ints[i]) + ", outside [0, " +
                   std::to_string(a.max) + "]");
    if (a.kind == IntAttrKind::Input) {
      countsInputs = true;
      present += size_t(ints[i]);
    }
  }
  if (countsInputs && numInputs != size_t(op.minInputs) + present)
    return Error(std::string(op.name) + ": " + std::to_string(numInputs) +
                 " inputs, but its has_* attributes say " +
                 std::to_string(size_t(op.minInputs) + present));
  return Status();
}

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
