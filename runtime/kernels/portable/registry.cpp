//===- registry.cpp - The portable kernel table ---------------------------===//
//
// Every entry of ops.def maps to its portable kernel, wrapped in a check of
// the argument counts (against ops.def) and of the input tensors (shape and
// storage within their capacity), so that no kernel reads out of bounds on a
// malformed program.
//
//===----------------------------------------------------------------------===//
#include "common.h"
#include "kernels.h"

namespace etllm::rt {
namespace portable {
namespace {

Status checkCount(const OpInfo &info, const char *what, size_t n, int min,
                  int max) {
  if (n < size_t(min) || (max >= 0 && n > size_t(max)))
    return opError(info.name, "expected " +
                                  (max == min ? std::to_string(min)
                                   : max < 0 ? "at least " + std::to_string(min)
                                             : std::to_string(min) + " to " +
                                                   std::to_string(max)) +
                                  " " + what + ", got " + std::to_string(n));
  return Status();
}

Status checkArgs(OpId id, const KernelArgs &a) {
  const OpInfo &info = opInfo(id);
  ETLLM_RETURN_IF_ERROR(checkCount(info, "inputs", a.inputs.size,
                                   info.minInputs, info.maxInputs));
  ETLLM_RETURN_IF_ERROR(checkCount(info, "outputs", a.outputs.size,
                                   info.outputs < 0 ? 1 : info.outputs,
                                   info.outputs));
  if (info.numInts >= 0)
    ETLLM_RETURN_IF_ERROR(checkCount(info, "integer attributes", a.ints.size,
                                     info.numInts, info.numInts));
  ETLLM_RETURN_IF_ERROR(checkCount(info, "float attributes", a.floats.size,
                                   info.numFloats, info.numFloats));
  if ((a.ints.size && !a.ints.data) || (a.floats.size && !a.floats.data))
    return opError(info.name, "missing attribute storage");
  for (size_t i = 0; i < a.inputs.size; ++i) {
    const Tensor *t = a.inputs[i];
    if (!t)
      return opError(info.name, "input " + std::to_string(i) + " is null");
    Result<size_t> bytes = storageBytes(t->dtype, t->sizes, t->rank, t->quant);
    if (!bytes.ok())
      return opError(info.name,
                     "input " + std::to_string(i) + ": " + bytes.message());
    if (*bytes > t->capacity || (*bytes > 0 && !t->data))
      return opError(info.name, "input " + std::to_string(i) + " " +
                                    t->shapeString() +
                                    " does not fit its storage");
  }
  for (size_t i = 0; i < a.outputs.size; ++i) {
    const Tensor *t = a.outputs[i];
    if (!t)
      return opError(info.name, "output " + std::to_string(i) + " is null");
    if (t->capacity > 0 && !t->data)
      return opError(info.name,
                     "output " + std::to_string(i) + " has no storage");
  }
  return Status();
}

template <OpId Id, KernelFn Fn> Status checked(const KernelArgs &args) {
  Status s = checkArgs(Id, args);
  if (!s.ok())
    return s;
  return Fn(args);
}

KernelTable makeTable() {
  KernelTable table;
#define ETLLM_OP(Name, Str, MinIn, MaxIn, Outs, Ints, Floats)                  \
  table.set(OpId::Name, &checked<OpId::Name, &kernel##Name>);
#include "etllm/runtime/ops.def"
  return table;
}

} // namespace
} // namespace portable

const KernelTable &portableKernels() {
  static const KernelTable table = portable::makeTable();
  return table;
}

} // namespace etllm::rt
