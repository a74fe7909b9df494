//===- KernelCalls.cpp - etllm ops as runtime kernel calls ----------------===//
#include "etllm/Lowering/KernelCalls.h"

#include "etllm/Dialect/Etllm/EtllmOps.h"

using namespace mlir;
using namespace mlir::etllm;

namespace etllm {
ArrayRef<int64_t> shapeOf(Type t) {
  if (auto q = dyn_cast<QWeightType>(t))
    return q.getShape();
  if (auto q = dyn_cast<QActType>(t))
    return q.getShape();
  return cast<RankedTensorType>(t).getShape();
}

// The IR's schemes are the program's (runtime/schema/program.fbs QScheme,
// etllm::rt::QScheme), value for value: same count here, same names in
// serialize.QWeightSchemes.
static_assert(getMaxEnumValForQWeightScheme() + 1 == rt::kNumQSchemes,
              "QWeightScheme (ODS) and rt::QScheme differ");

rt::QuantInfo quantInfoOf(Type t) {
  rt::QuantInfo info;
  if (auto q = dyn_cast<QWeightType>(t)) {
    info.bits = q.getBits();
    info.groupSize = q.getGroupSize();
    info.symmetric = q.getSymmetric();
    info.scaleType = q.getScaleType().isF16() ? rt::DType::F16 : rt::DType::F32;
    info.scheme = static_cast<rt::QScheme>(q.getScheme());
  } else if (auto q = dyn_cast<QActType>(t)) {
    info.bits = q.getBits();
    info.symmetric = q.getSymmetric();
    info.perToken = q.getGranularity() != ActQuantGranularity::per_tensor;
    info.groupSize = q.getGranularity() == ActQuantGranularity::per_block
                         ? rt::kQActBlock
                         : 0;
    info.scaleType = rt::DType::F32;
  }
  return info;
}

FailureOr<rt::DType> runtimeDType(Operation *op, Type t) {
  if (isa<QWeightType>(t))
    return rt::DType::QWeight;
  if (isa<QActType>(t))
    return rt::DType::QAct;
  auto tt = dyn_cast<RankedTensorType>(t);
  if (!tt)
    return op->emitError("cannot serialize values of type ") << t;
  Type e = tt.getElementType();
  if (e.isF32())
    return rt::DType::F32;
  if (e.isF16())
    return rt::DType::F16;
  if (e.isBF16())
    return rt::DType::BF16;
  if (e.isInteger(64))
    return rt::DType::I64;
  if (e.isInteger(32))
    return rt::DType::I32;
  if (e.isInteger(8))
    return rt::DType::I8;
  if (e.isInteger(1))
    return rt::DType::Bool;
  return op->emitError("cannot serialize element type ") << e;
}

FailureOr<KernelCall> describeKernelCall(Operation *op) {
  // The contract is declared on the op in ODS (Etllm_Kernel) and generated.
  auto kernel = dyn_cast<KernelOpInterface>(op);
  if (!kernel)
    return failure();
  KernelCall call;
  call.op = kernel.getKernelContract().kernel;
  kernel.appendKernelAttributes(call.ints, call.floats);
  return call;
}
} // namespace etllm
