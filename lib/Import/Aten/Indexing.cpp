//===- Indexing.cpp - Gathers and scatters --------------------------------===//
//
// ATen's indexing operators: index_select, advanced indexing on one
// dimension, index_put, index_copy (the functional KV-cache update) and
// gather.
//
//===----------------------------------------------------------------------===//
#include "Importer.h"

namespace mlir::etllm::aten {

namespace {

/// index_select and gather: `self` indexed by `index` along `dim`.
template <typename OpTy>
LogicalResult indexAlongDimOp(Importer &I, const json &) {
  FailureOr<RankedTensorType> rt = I.resultType();
  if (failed(rt))
    return failure();
  FailureOr<Value> x = I.tensorArg("self");
  FailureOr<Value> idx = I.tensorArg("index");
  if (failed(x) || failed(idx))
    return failure();
  FailureOr<int64_t> nd = I.dimArg("dim", typeOf(*x).getRank());
  if (failed(nd))
    return failure();
  return I.setResult(I.emit<OpTy>(*rt, *x, I.b.getI64IntegerAttr(*nd), *idx));
}

/// The one index tensor of the `indices` of aten.index and index_put (None
/// for the dimensions before it and after it) and the dimension it indexes;
/// a null index when there is none. `tooMany` is the error for a second one.
struct IndexTensor {
  Value index;
  int64_t dim = -1;
};
FailureOr<IndexTensor> singleIndexTensor(Importer &I, const char *tooMany) {
  FailureOr<SmallVector<Value>> indices = I.tensorListArg("indices", true);
  if (failed(indices))
    return failure();
  IndexTensor found;
  for (auto [i, v] : llvm::enumerate(*indices))
    if (v) {
      if (found.index)
        return I.fail(tooMany);
      found = {v, int64_t(i)};
    }
  return found;
}

/// aten.index.Tensor with one index tensor (advanced indexing on one
/// dimension): a 1-D index is index_select; an N-D index on dimension 0 is
/// index_select of the flattened index, reshaped.
LogicalResult indexOp(Importer &I, RankedTensorType rt, Value x) {
  SymShape outShape = I.lastResultShape;
  FailureOr<IndexTensor> found =
      singleIndexTensor(I, "indexing with more than one index tensor");
  if (failed(found))
    return failure();
  auto [idx, dim] = *found;
  if (!idx)
    return I.fail("indexing without an index tensor");
  if (dim >= typeOf(x).getRank())
    return I.fail("more indices than dimensions");
  Type it = typeOf(idx).getElementType();
  if (!it.isInteger(64) && !it.isInteger(32))
    return I.fail("indexing with a boolean mask is not supported");
  auto xt = typeOf(x);
  if (typeOf(idx).getRank() == 1)
    return I.setResult(
        I.emit<IndexSelectOp>(rt, x, I.b.getI64IntegerAttr(dim), idx));
  if (dim != 0)
    return I.fail("an index tensor of rank > 1 on a dimension other than 0");
  SymShape idxShape = I.symShapeOf(idx);
  int64_t n = 1;
  bool dyn = false;
  for (const SymDim &d : idxShape) {
    if (!d.isStatic())
      dyn = true;
    else
      n *= d.off;
  }
  auto flatType = RankedTensorType::get({dyn ? ShapedType::kDynamic : n}, it);
  Value flat = I.emit<ReshapeOp>(flatType, idx, I.b.getDenseI64ArrayAttr({-1}));
  if (!flat)
    return failure();
  SmallVector<int64_t> selShape(xt.getShape());
  selShape[0] = flatType.getDimSize(0);
  Value sel = I.emit<IndexSelectOp>(
      RankedTensorType::get(selShape, xt.getElementType()), x,
      I.b.getI64IntegerAttr(0), flat);
  if (!sel)
    return failure();
  I.lastResultShape = outShape;
  return I.setResult(I.reshapeTo(sel, rt, outShape));
}

/// index_put with one index tensor after leading Nones.
LogicalResult indexPutOp(Importer &I, RankedTensorType rt, Value x) {
  SymShape outShape = I.lastResultShape;
  FailureOr<IndexTensor> found = singleIndexTensor(
      I, "index_put with more than one index tensor (write the update as "
         "x.index_put_([None, ..., idx], v) or index_copy_)");
  if (failed(found))
    return failure();
  auto [idx, dim] = *found;
  if (!idx || typeOf(idx).getRank() != 1)
    return I.fail("index_put needs exactly one 1-D index tensor");
  if (dim >= typeOf(x).getRank())
    return I.fail("index_put with more indices than dimensions");
  FailureOr<Value> vals = I.operand("values", rt.getElementType());
  if (failed(vals))
    return failure();
  // values broadcast to the input's shape with `dim` replaced by the index.
  SymShape want = I.symShapeOf(x);
  want[dim] = I.symShapeOf(idx)[0];
  Value v = I.broadcastTo(*vals, want, "index_put values");
  if (!v)
    return failure();
  I.lastResultShape = outShape;
  return I.setResult(I.emit<IndexPutOp>(
      rt, x, I.b.getI64IntegerAttr(dim), idx, v,
      I.boolArg("accumulate", false) ? I.b.getUnitAttr() : UnitAttr()));
}

LogicalResult indexCopyOp(Importer &I, const json &) {
  FailureOr<RankedTensorType> rt = I.resultType();
  if (failed(rt))
    return failure();
  FailureOr<Value> x = I.tensorArg("self");
  FailureOr<Value> idx = I.tensorArg("index");
  if (failed(x) || failed(idx))
    return failure();
  FailureOr<Value> src = I.operand("source", rt->getElementType());
  if (failed(src))
    return failure();
  FailureOr<int64_t> nd = I.dimArg("dim", typeOf(*x).getRank());
  if (failed(nd))
    return failure();
  return I.setResult(
      I.emit<IndexCopyOp>(*rt, *x, I.b.getI64IntegerAttr(*nd), *idx, *src));
}

} // namespace

void registerIndexingHandlers(HandlerTable &t) {
  t["aten.index_select.default"] = indexAlongDimOp<IndexSelectOp>;
  t["aten.index.Tensor"] = withTensor(indexOp);
  t["aten.index_put.default"] = withTensor(indexPutOp);
  t["aten.index_copy.default"] = indexCopyOp;
  t["aten.gather.default"] = indexAlongDimOp<GatherOp>;
}

} // namespace mlir::etllm::aten
