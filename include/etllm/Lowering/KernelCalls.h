//===- KernelCalls.h - etllm ops as runtime kernel calls --------*- C++ -*-===//
//
// An etllm op as a runtime operator of ops.def: its name and its
// integer/float attributes, as the op's kernel contract (declared in ODS
// with Etllm_Kernel, generated into KernelOpInterface and ops.def) says.
// Used by the program serializer and by backends that reuse the runtime's
// operator vocabulary in their blobs.
//
//===----------------------------------------------------------------------===//
#ifndef ETLLM_LOWERING_KERNELCALLS_H
#define ETLLM_LOWERING_KERNELCALLS_H

#include "etllm/runtime/dtype.h"
#include "etllm/runtime/tensor.h"

#include "mlir/IR/Operation.h"
#include "llvm/ADT/SmallVector.h"

#include <string>

namespace etllm {

struct KernelCall {
  std::string op;
  llvm::SmallVector<int64_t> ints;
  llvm::SmallVector<double> floats;
};

/// The runtime element type of a value of type `type` (tensors of f32, f16,
/// bf16, i64, i32, i8, i1; !etllm.qweight; !etllm.qact). Emits an error at
/// `op` for anything else.
mlir::FailureOr<rt::DType> runtimeDType(mlir::Operation *op, mlir::Type type);

/// The logical shape of a ranked tensor, !etllm.qweight or !etllm.qact.
llvm::ArrayRef<int64_t> shapeOf(mlir::Type type);

/// The runtime quantization parameters of a !etllm.qweight or !etllm.qact
/// (default QuantInfo for anything else).
rt::QuantInfo quantInfoOf(mlir::Type type);

/// Describes `op` as a kernel call (operands and results map one to one to
/// the kernel's inputs and outputs; the write-back's output is its buffer).
/// Fails for ops without a kernel contract (constants, parameters, buffer
/// reads, delegate calls, func ops).
mlir::FailureOr<KernelCall> describeKernelCall(mlir::Operation *op);

} // namespace etllm

#endif // ETLLM_LOWERING_KERNELCALLS_H
