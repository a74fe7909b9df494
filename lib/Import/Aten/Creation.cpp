//===- Creation.cpp - Tensors made in forward -----------------------------===//
//
// ATen's tensor factories (arange, full, zeros, ones, ..._like,
// scalar_tensor) and triangular masks.
//
//===----------------------------------------------------------------------===//
#include "Importer.h"

namespace mlir::etllm::aten {

namespace {

LogicalResult arangeOp(Importer &I, const json &) {
  FailureOr<RankedTensorType> rt = I.resultType();
  if (failed(rt))
    return failure();
  int64_t start = 0;
  if (I.arg("start")) {
    FailureOr<int64_t> s = I.intArg("start");
    if (failed(s))
      return failure();
    start = *s;
  }
  FailureOr<int64_t> end = I.intArg("end");
  if (failed(end))
    return failure();
  FailureOr<int64_t> step = I.optionalIntArg("step", 1);
  if (failed(step))
    return failure();
  return I.setResult(I.emit<ArangeOp>(*rt, I.b.getI64IntegerAttr(start),
                                      I.b.getI64IntegerAttr(*end),
                                      I.b.getI64IntegerAttr(*step)));
}

/// The value of full, zeros, ones and their _like and new_ forms: 1 for
/// ones, the `fill_value` argument for full, 0 otherwise (zeros, empty).
FailureOr<double> fillValue(Importer &I) {
  StringRef t(I.target);
  if (t.contains("ones"))
    return 1.0;
  if (t.contains("full"))
    return I.numberArg("fill_value");
  return 0.0;
}

/// full, zeros, ones, new_zeros, new_ones, new_full, empty, new_empty.
LogicalResult fullOp(Importer &I, const json &) {
  FailureOr<RankedTensorType> rt = I.resultType();
  if (failed(rt))
    return failure();
  if (!rt->hasStaticShape())
    return I.fail("creates a tensor whose size depends on the sequence "
                  "length S; derive it from an input instead (e.g. "
                  "zeros_like, full_like)");
  FailureOr<SmallVector<int64_t>> size = I.intListArg("size");
  if (failed(size))
    return failure();
  FailureOr<double> value = fillValue(I);
  if (failed(value))
    return failure();
  return I.setResult(I.emit<FullOp>(*rt, I.b.getF64FloatAttr(*value)));
}

/// zeros_like, ones_like, full_like, empty_like.
LogicalResult fullLikeOp(Importer &I, RankedTensorType rt, Value x) {
  FailureOr<double> value = fillValue(I);
  if (failed(value))
    return failure();
  return I.setResult(I.emit<FullLikeOp>(rt, x, I.b.getF64FloatAttr(*value)));
}

LogicalResult scalarTensorOp(Importer &I, const json &) {
  FailureOr<RankedTensorType> rt = I.resultType();
  if (failed(rt))
    return failure();
  FailureOr<double> v = I.numberArg("s");
  if (failed(v))
    return failure();
  return I.setResult(I.scalar(*v, rt->getElementType()));
}

template <typename OpTy>
LogicalResult triOp(Importer &I, RankedTensorType rt, Value x) {
  FailureOr<int64_t> diag = I.optionalIntArg("diagonal", 0);
  if (failed(diag))
    return failure();
  return I.setResult(I.emit<OpTy>(rt, x, I.b.getI64IntegerAttr(*diag)));
}

} // namespace

void registerCreationHandlers(HandlerTable &t) {
  for (const char *n :
       {"aten.arange.default", "aten.arange.start", "aten.arange.start_step"})
    t[n] = arangeOp;
  for (const char *n : {"aten.full.default", "aten.zeros.default",
                        "aten.ones.default", "aten.new_zeros.default",
                        "aten.new_ones.default", "aten.new_full.default",
                        "aten.new_empty.default", "aten.empty.memory_format"})
    t[n] = fullOp;
  for (const char *n : {"aten.zeros_like.default", "aten.ones_like.default",
                        "aten.full_like.default", "aten.empty_like.default"})
    t[n] = withTensor(fullLikeOp);
  t["aten.scalar_tensor.default"] = scalarTensorOp;
  t["aten.triu.default"] = withTensor(triOp<TriuOp>);
  t["aten.tril.default"] = withTensor(triOp<TrilOp>);
}

} // namespace mlir::etllm::aten
