//===- verify_ops.h - Load-time checks of kernel calls ----------*- C++ -*-===//
//
// The contract of each operator of ops.def beyond its operand and attribute
// counts: what Program::load checks for every KernelCall (see
// runtime/core/verify_ops.cpp and docs/Security.md).
//
//===----------------------------------------------------------------------===//
#ifndef ETLLM_RUNTIME_VERIFY_OPS_H
#define ETLLM_RUNTIME_VERIFY_OPS_H

#include "etllm/runtime/dtype.h"
#include "etllm/runtime/kernel.h"
#include "etllm/runtime/result.h"

#include <cstddef>
#include <cstdint>
#include <vector>

namespace etllm::rt {

/// What the program file declares of a value: its element type and rank
/// (fixed; only the sizes of dynamic dimensions change at run time).
struct ValueDesc {
  DType dtype;
  int rank;
};

/// Checks one call of `op` whose operand and attribute counts match ops.def
/// (the caller checks those): enums and flags, axes against the operands'
/// ranks, ranges, operand counts the attributes imply, element types. The
/// error says what is wrong, without the instruction (the caller adds it).
Status verifyKernelCall(const OpInfo &op, const std::vector<ValueDesc> &inputs,
                        const std::vector<ValueDesc> &outputs,
                        const int64_t *ints, size_t numInts,
                        const double *floats, size_t numFloats);

} // namespace etllm::rt

#endif // ETLLM_RUNTIME_VERIFY_OPS_H
