//===- Reductions.cpp - Reductions and normalizations ---------------------===//
//
// ATen's reductions (mean, sum, amax, var), softmax and layer norm.
//
//===----------------------------------------------------------------------===//
#include "Importer.h"

namespace mlir::etllm::aten {

namespace {

template <typename OpTy> H reduce() {
  return withOperand(
      [](Importer &I, RankedTensorType rt, Value x) -> LogicalResult {
        FailureOr<SmallVector<int64_t>> dims =
            I.dimsArg("dim", typeOf(x).getRank());
        if (failed(dims))
          return failure();
        bool keep = I.boolArg("keepdim", false);
        return I.setResult(I.emit<OpTy>(rt, x, I.b.getDenseI64ArrayAttr(*dims),
                                        keep ? I.b.getUnitAttr() : UnitAttr()));
      });
}

LogicalResult softmaxOp(Importer &I, RankedTensorType rt, Value x) {
  SymShape outShape = I.lastResultShape;
  FailureOr<int64_t> d = I.intArg("dim");
  if (failed(d))
    return failure();
  Value s = I.emit<SoftmaxOp>(typeOf(x), x, I.b.getI64IntegerAttr(*d));
  if (!s)
    return failure();
  if (I.target == "aten._log_softmax.default")
    s = I.emit<LogOp>(typeOf(s), s);
  I.lastResultShape = outShape;
  return I.setResult(I.convert(s, rt.getElementType()));
}

/// native_layer_norm -> (layer_norm, mean, rstd), of which only the first is
/// mapped; layer_norm (torch.export keeps it) -> layer_norm.
LogicalResult layerNormOp(Importer &I, const json &) {
  FailureOr<RankedTensorType> rt = I.resultType(0);
  if (failed(rt))
    return failure();
  FailureOr<Value> x = I.tensorArg("input");
  if (failed(x))
    return failure();
  FailureOr<SmallVector<int64_t>> ns = I.intListArg("normalized_shape");
  if (failed(ns))
    return failure();
  auto xt = typeOf(*x);
  if (ns->size() != 1 || xt.getRank() < 1 ||
      xt.getShape().back() != ns->front())
    return I.fail("layer_norm over more than the last dimension");
  FailureOr<Value> w = I.optionalTensorArg("weight");
  if (failed(w))
    return failure();
  FailureOr<Value> bias = I.optionalTensorArg("bias");
  if (failed(bias))
    return failure();
  FailureOr<double> eps = I.numberArg("eps");
  if (failed(eps))
    return failure();
  Value y = I.emit<LayerNormOp>(*rt, *x, *w, *bias, I.b.getF64FloatAttr(*eps));
  if (!y)
    return failure();
  I.symShapes[y] = I.lastResultShape;
  // native_layer_norm returns (y, mean, rstd), layer_norm y alone.
  if (I.target == "aten.layer_norm.default")
    return I.setResult(y);
  return I.setResults({y, Value(), Value()});
}

/// var.correction: sum((x - mean)^2) / (N - correction).
LogicalResult varOp(Importer &I, const json &) {
  FailureOr<RankedTensorType> rt = I.resultType();
  if (failed(rt))
    return failure();
  SymShape outShape = I.lastResultShape;
  Type et = rt->getElementType();
  FailureOr<Value> x = I.operand("self", et);
  if (failed(x))
    return failure();
  auto xt = typeOf(*x);
  FailureOr<SmallVector<int64_t>> dims = I.dimsArg("dim", xt.getRank());
  if (failed(dims))
    return failure();
  FailureOr<double> correction = I.optionalNumberArg("correction", 1);
  if (failed(correction))
    return failure();
  int64_t n = 1;
  SmallVector<int64_t> keptShape(xt.getShape());
  for (int64_t d : *dims) {
    if (xt.isDynamicDim(d))
      return I.fail("variance over a dimension that depends on S");
    n *= xt.getDimSize(d);
    keptShape[d] = 1;
  }
  auto keptType = RankedTensorType::get(keptShape, et);
  auto dimsAttr = I.b.getDenseI64ArrayAttr(*dims);
  Value mean = I.emit<MeanOp>(keptType, *x, dimsAttr, I.b.getUnitAttr());
  if (!mean)
    return failure();
  Value diff = I.emit<SubOp>(xt, *x, mean);
  if (!diff)
    return failure();
  Value sq = I.emit<MulOp>(xt, diff, diff);
  if (!sq)
    return failure();
  bool keep = I.boolArg("keepdim", false);
  Value sum =
      I.emit<SumOp>(*rt, sq, dimsAttr, keep ? I.b.getUnitAttr() : UnitAttr());
  if (!sum)
    return failure();
  Value denom = I.scalar(double(n) - *correction, et);
  if (!denom)
    return failure();
  I.lastResultShape = outShape;
  return I.setResult(I.emit<DivOp>(*rt, sum, denom));
}

} // namespace

void registerReductionHandlers(HandlerTable &t) {
  t["aten.mean.dim"] = reduce<MeanOp>();
  t["aten.mean.default"] = reduce<MeanOp>();
  t["aten.sum.dim_IntList"] = reduce<SumOp>();
  t["aten.sum.default"] = reduce<SumOp>();
  t["aten.amax.default"] = reduce<AmaxOp>();
  t["aten.var.correction"] = varOp;
  t["aten._softmax.default"] = withTensor(softmaxOp);
  t["aten._log_softmax.default"] = withTensor(softmaxOp);
  t["aten.softmax.int"] = withTensor(softmaxOp);
  t["aten.log_softmax.int"] = withTensor(softmaxOp);
  t["aten.native_layer_norm.default"] = layerNormOp;
  t["aten.layer_norm.default"] = layerNormOp;
}

} // namespace mlir::etllm::aten
