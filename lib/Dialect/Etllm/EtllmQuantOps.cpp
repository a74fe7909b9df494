//===- EtllmQuantOps.cpp - Verifiers of level C --------------------------===//
//
// Quantization (EtllmQuantOps.td): quantize_dynamic, qlinear, qembedding,
// dequantize and the LoRA hook; see EtllmOps.cpp.
//
//===----------------------------------------------------------------------===//
#include "OpInference.h"

#include <cmath>

using namespace mlir;
using namespace mlir::etllm;
using namespace mlir::etllm::detail;

//===----------------------------------------------------------------------===//
// Level C
//===----------------------------------------------------------------------===//

/// A quantize op's result has its input's shape.
static LogicalResult verifySameShape(Operation *op, ShapedType in,
                                     QActType out) {
  if (in.getShape() != out.getShape())
    return op->emitOpError("result shape ")
           << shapeStr(out.getShape()) << " differs from the input shape "
           << shapeStr(in.getShape());
  return success();
}

LogicalResult QuantizeDynamicOp::verify() {
  return verifySameShape(*this, getInput().getType(),
                         cast<QActType>(getType()));
}

LogicalResult QuantizeStaticOp::verify() {
  auto out = cast<QActType>(getType());
  if (failed(verifySameShape(*this, getInput().getType(), out)))
    return failure();
  if (out.getBits() != 8 ||
      out.getGranularity() != ActQuantGranularity::per_tensor ||
      !out.getSymmetric())
    return emitOpError("result must be an 8-bit per-tensor symmetric "
                       "activation, got ")
           << out;
  const double scale = getScale().convertToDouble();
  if (!(scale > 0) || !std::isfinite(scale))
    return emitOpError("scale must be positive and finite, got ") << scale;
  return success();
}

LogicalResult LoraOp::verify() {
  auto x = cast<RankedTensorType>(getInput().getType());
  auto y = cast<RankedTensorType>(getBase().getType());
  if (getType() != y)
    return emitOpError("result type ")
           << getType() << " differs from the base's " << y;
  if (x.getElementType() != y.getElementType() || !x.getElementType().isF32())
    return emitOpError("input and base must be f32 tensors");
  if (x.getRank() != y.getRank() || x.getRank() < 1)
    return emitOpError("input and base must have the same rank");
  if (x.isDynamicDim(x.getRank() - 1) || y.isDynamicDim(y.getRank() - 1))
    return emitOpError("the feature dimensions must be static");
  for (int64_t d = 0; d + 1 < x.getRank(); ++d)
    if (failed(mergeDim(x.getDimSize(d), y.getDimSize(d))))
      return emitOpError("input ")
             << shapeStr(x.getShape()) << " and base " << shapeStr(y.getShape())
             << " differ outside the features";
  if (getHook() < 0)
    return emitOpError("hook index ") << getHook() << " is negative";
  if (getTarget().empty())
    return emitOpError("empty target module");
  return success();
}

LogicalResult QLinearOp::verify() {
  auto w = cast<QWeightType>(getWeight().getType());
  if (w.getRank() != 2)
    return emitOpError("weight must have rank 2, got ") << w.getRank();
  ArrayRef<int64_t> inShape;
  if (auto act = dyn_cast<QActType>(getInput().getType())) {
    inShape = act.getShape();
  } else {
    auto t = cast<RankedTensorType>(getInput().getType());
    inShape = t.getShape();
    if (t.getElementType() != getType().getElementType())
      return emitOpError("result element type differs from the input's");
  }
  if (failed(mergeDim(inShape.back(), w.getShape()[1])))
    return emitOpError("input features ")
           << inShape.back() << " do not match weight "
           << shapeStr(w.getShape());
  SmallVector<int64_t> expected(inShape);
  expected.back() = w.getShape()[0];
  if (!compatibleTypes(
          RankedTensorType::get(expected, getType().getElementType()),
          getType()))
    return emitOpError("result shape ") << shapeStr(getType().getShape())
                                        << " should be " << shapeStr(expected);
  if (Value bias = getBias()) {
    auto b = cast<RankedTensorType>(bias.getType());
    if (b.getRank() != 1 || b.getDimSize(0) != w.getShape()[0])
      return emitOpError("bias shape ")
             << shapeStr(b.getShape()) << " does not match the "
             << w.getShape()[0] << " output features";
  }
  return success();
}

LogicalResult QEmbeddingOp::verify() {
  auto w = cast<QWeightType>(getWeight().getType());
  if (w.getRank() != 2)
    return emitOpError("table must have rank 2, got ") << w.getRank();
  SmallVector<int64_t> expected(getIndices().getType().getShape());
  expected.push_back(w.getShape()[1]);
  if (!compatibleTypes(
          RankedTensorType::get(expected, getType().getElementType()),
          getType()))
    return emitOpError("result shape ") << shapeStr(getType().getShape())
                                        << " should be " << shapeStr(expected);
  return success();
}

LogicalResult DequantizeOp::verify() {
  auto w = cast<QWeightType>(getInput().getType());
  if (w.getShape() != getType().getShape())
    return emitOpError("result shape ")
           << shapeStr(getType().getShape()) << " differs from the weight's "
           << shapeStr(w.getShape());
  return success();
}
