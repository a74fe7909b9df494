//===- Shapes.cpp - Aliases, copies and shapes ----------------------------===//
//
// ATen's views, reshapes, concatenations, splits and copies, mapped to
// etllm's shape ops (or to their input, for aliases and eval-mode copies).
//
//===----------------------------------------------------------------------===//
#include "Importer.h"

namespace mlir::etllm::aten {

namespace {

/// Ops that return their input (aliases, copies, eval-mode no-ops).
H identity(const char *input = "self") {
  return [=](Importer &I, const json &) -> LogicalResult {
    FailureOr<Value> x = I.tensorArg(input);
    if (failed(x))
      return failure();
    FailureOr<RankedTensorType> rt = I.resultType();
    if (succeeded(rt) && rt->getElementType() != typeOf(*x).getElementType())
      return I.fail("changes the element type");
    return I.setAlias(*x);
  };
}

/// view, _unsafe_view, _reshape_alias, reshape.
LogicalResult viewOp(Importer &I, RankedTensorType rt, Value x) {
  FailureOr<SmallVector<SymDim>> size = I.symListArg("size");
  if (failed(size))
    return failure();
  // A -1 whose size the capture knows statically (torch.export keeps the
  // -1 beside a size in S: view(x, [1, S, -1, 16])) is that size.
  if (size->size() == I.lastResultShape.size())
    for (auto [d, r] : llvm::zip(*size, I.lastResultShape))
      if (d.isStatic() && d.off == -1 && r.isStatic())
        d = r;
  FailureOr<SmallVector<int64_t>> target = I.reshapeTarget(*size);
  if (failed(target))
    return failure();
  return I.setResult(
      I.emit<ReshapeOp>(rt, x, I.b.getDenseI64ArrayAttr(*target)));
}

LogicalResult expandOp(Importer &I, RankedTensorType rt, Value x) {
  FailureOr<SmallVector<SymDim>> size = I.symListArg("size");
  if (failed(size))
    return failure();
  // -1 keeps the input's size.
  SymShape in = I.symShapeOf(x), want(size->begin(), size->end());
  int64_t lead = int64_t(want.size()) - int64_t(in.size());
  for (auto [i, d] : llvm::enumerate(want))
    if (d.isStatic() && d.off == -1) {
      if (int64_t(i) < lead)
        return I.fail("expand with -1 for a new dimension");
      d = in[i - lead];
    }
  return I.setResult(I.broadcastTo(x, want, "expand"));
}

LogicalResult sliceOp(Importer &I, RankedTensorType rt, Value x) {
  FailureOr<int64_t> dim = I.dimArg("dim", typeOf(x).getRank(), 0);
  if (failed(dim))
    return failure();
  FailureOr<int64_t> start = I.optionalIntArg("start", 0);
  if (failed(start))
    return failure();
  int64_t end = kEnd;
  if (!I.isNone("end")) {
    FailureOr<SymDim> e = I.symArg("end");
    if (failed(e))
      return failure();
    if (e->isStatic())
      end = e->off;
    else if (I.symShapeOf(x)[*dim] == *e)
      end = kEnd; // up to the (dynamic) end
    else
      return I.fail("slice end " + e->str() +
                    " depends on the sequence length S but is not the size "
                    "of the sliced dimension");
  }
  FailureOr<int64_t> step = I.optionalIntArg("step", 1);
  if (failed(step))
    return failure();
  return I.setResult(I.emit<SliceOp>(rt, x, *dim, *start, end, *step));
}

LogicalResult selectOp(Importer &I, RankedTensorType rt, Value x) {
  SymShape outShape = I.lastResultShape;
  FailureOr<int64_t> dim = I.dimArg("dim", typeOf(x).getRank());
  if (failed(dim))
    return failure();
  FailureOr<int64_t> index = I.intArg("index");
  if (failed(index))
    return failure();
  SmallVector<int64_t> s(typeOf(x).getShape());
  s[*dim] = 1;
  Value sl =
      I.emit<SliceOp>(RankedTensorType::get(s, rt.getElementType()), x, *dim,
                      *index, *index == -1 ? kEnd : *index + 1, int64_t(1));
  if (!sl)
    return failure();
  I.lastResultShape = outShape;
  return I.setResult(I.emit<SqueezeOp>(rt, sl, I.b.getI64IntegerAttr(*dim)));
}

LogicalResult transposeOp(Importer &I, RankedTensorType rt, Value x) {
  int64_t rank = typeOf(x).getRank();
  int64_t d0 = 0, d1 = 1;
  if (I.arg("dim0")) {
    FailureOr<int64_t> a = I.intArg("dim0"), c = I.intArg("dim1");
    if (failed(a) || failed(c))
      return failure();
    FailureOr<int64_t> na = I.normDim(*a, rank), nc = I.normDim(*c, rank);
    if (failed(na) || failed(nc))
      return failure();
    d0 = *na;
    d1 = *nc;
  } else if (rank < 2) { // aten.t of a vector
    return I.setAlias(x);
  }
  return I.setResult(I.emit<TransposeOp>(rt, x, I.b.getI64IntegerAttr(d0),
                                         I.b.getI64IntegerAttr(d1)));
}

LogicalResult permuteOp(Importer &I, RankedTensorType rt, Value x) {
  FailureOr<SmallVector<int64_t>> dims = I.dimsArg("dims", typeOf(x).getRank());
  if (failed(dims))
    return failure();
  return I.setResult(I.emit<PermuteOp>(rt, x, I.b.getDenseI64ArrayAttr(*dims)));
}

LogicalResult unsqueezeOp(Importer &I, RankedTensorType rt, Value x) {
  FailureOr<int64_t> nd = I.dimArg("dim", typeOf(x).getRank() + 1);
  if (failed(nd))
    return failure();
  return I.setResult(I.emit<UnsqueezeOp>(rt, x, I.b.getI64IntegerAttr(*nd)));
}

LogicalResult squeezeOp(Importer &I, RankedTensorType rt, Value x) {
  SymShape outShape = I.lastResultShape;
  SymShape in = I.symShapeOf(x);
  SmallVector<int64_t> dims;
  if (I.arg("dim")) {
    FailureOr<SmallVector<int64_t>> d = I.dimsArg("dim", in.size());
    if (failed(d))
      return failure();
    for (int64_t k : *d)
      if (in[k] == SymDim{0, 1})
        dims.push_back(k); // squeezing a non-1 dimension is a no-op
  } else {
    for (auto [k, d] : llvm::enumerate(in))
      if (d == SymDim{0, 1})
        dims.push_back(k);
  }
  Value v = x;
  SmallVector<int64_t> shape(typeOf(v).getShape());
  for (int64_t k : llvm::reverse(dims)) {
    shape.erase(shape.begin() + k);
    v = I.emit<SqueezeOp>(RankedTensorType::get(shape, rt.getElementType()), v,
                          I.b.getI64IntegerAttr(k));
    if (!v)
      return failure();
  }
  if (typeOf(v).getRank() != rt.getRank())
    return I.fail("squeeze result rank differs from the trace");
  I.lastResultShape = outShape;
  return I.setResult(v);
}

/// cat, and stack: a cat of the inputs unsqueezed at `dim`.
LogicalResult catOp(Importer &I, const json &) {
  bool stack = I.target == "aten.stack.default";
  FailureOr<RankedTensorType> rt = I.resultType();
  if (failed(rt))
    return failure();
  FailureOr<SmallVector<Value>> xs = I.tensorListArg("tensors");
  if (failed(xs))
    return failure();
  if (xs->empty())
    return I.fail(std::string(stack ? "stack" : "cat") + " of no tensors");
  FailureOr<int64_t> nd = I.dimArg("dim", rt->getRank(), 0);
  if (failed(nd))
    return failure();
  SmallVector<Value> ins;
  for (Value x : *xs) {
    Value c = I.convert(x, rt->getElementType());
    if (!c)
      return failure();
    if (stack) {
      SmallVector<int64_t> s(typeOf(c).getShape());
      s.insert(s.begin() + *nd, 1);
      c = I.emit<UnsqueezeOp>(RankedTensorType::get(s, rt->getElementType()), c,
                              I.b.getI64IntegerAttr(*nd));
      if (!c)
        return failure();
    }
    ins.push_back(c);
  }
  return I.setResult(I.emit<CatOp>(*rt, ins, I.b.getI64IntegerAttr(*nd)));
}

/// split.Tensor, split_with_sizes, unbind: a tuple of pieces.
LogicalResult splitOp(Importer &I, const json &) {
  FailureOr<Value> x = I.tensorArg("self");
  if (failed(x))
    return failure();
  auto xt = typeOf(*x);
  FailureOr<int64_t> nd = I.dimArg("dim", xt.getRank(), 0);
  if (failed(nd))
    return failure();
  int64_t size = xt.getDimSize(*nd);
  if (ShapedType::isDynamic(size))
    return I.fail("split along a dimension that depends on the sequence "
                  "length S");
  SmallVector<int64_t> sizes;
  bool unbind = I.target == "aten.unbind.int";
  constexpr int64_t kMaxPieces = 4096;
  if (unbind && size > kMaxPieces)
    return I.fail("unbind into more than " + std::to_string(kMaxPieces) +
                  " pieces");
  if (unbind) {
    sizes.assign(size, 1);
  } else if (I.arg("split_sizes")) {
    FailureOr<SmallVector<int64_t>> l = I.intListArg("split_sizes");
    if (failed(l))
      return failure();
    sizes = *l;
  } else {
    FailureOr<int64_t> each = I.intArg("split_size");
    if (failed(each))
      return failure();
    if (*each <= 0)
      return I.fail("split size must be positive");
    if (size / *each >= kMaxPieces)
      return I.fail("split into more than " + std::to_string(kMaxPieces) +
                    " pieces");
    for (int64_t at = 0; at < size; at += *each)
      sizes.push_back(std::min(*each, size - at));
  }
  int64_t total = 0;
  SmallVector<Type> types;
  for (int64_t s : sizes) {
    if (s < 0)
      return I.fail("negative split size");
    total += s;
    SmallVector<int64_t> shape(xt.getShape());
    shape[*nd] = s;
    types.push_back(RankedTensorType::get(shape, xt.getElementType()));
  }
  if (total != size || sizes.empty() || int64_t(sizes.size()) > kMaxPieces)
    return I.fail("split sizes do not add up to the dimension's " +
                  std::to_string(size));
  Operation *op =
      I.b.create<SplitOp>(I.loc, types, *x, I.b.getI64IntegerAttr(*nd),
                          I.b.getDenseI64ArrayAttr(sizes));
  if (!I.modulePath.empty())
    setModulePath(op, I.modulePath);
  if (failed(mlir::verify(op, false))) {
    op->erase();
    return I.fail("'etllm.split' rejects the mapping");
  }
  SmallVector<Value, 1> results(op->getResults().begin(),
                                op->getResults().end());
  if (unbind)
    for (Value &r : results) {
      SmallVector<int64_t> shape(typeOf(r).getShape());
      shape.erase(shape.begin() + *nd);
      r = I.emit<SqueezeOp>(RankedTensorType::get(shape, xt.getElementType()),
                            r, I.b.getI64IntegerAttr(*nd));
      if (!r)
        return failure();
    }
  return I.setResults(std::move(results));
}

LogicalResult getitemOp(Importer &I, const json &) {
  const json *self = I.arg("self");
  if (!self || !self->is_object() || !self->contains("node") ||
      !(*self)["node"].is_string())
    return I.fail("getitem of something that is not a node");
  std::string src = (*self)["node"].get<std::string>();
  if (I.poisoned.count(src)) {
    I.poisonedUse = true;
    return failure();
  }
  auto it = I.nodeValues.find(src);
  if (it == I.nodeValues.end())
    return I.fail("getitem of node '" + src + "', which is not defined before");
  FailureOr<int64_t> idx = I.intArg("index");
  if (failed(idx))
    return failure();
  if (*idx < 0 || *idx >= int64_t(it->second.size()))
    return I.fail("getitem index " + std::to_string(*idx) + " out of range");
  Value v = it->second[*idx];
  if (!v)
    return I.fail("output " + std::to_string(*idx) + " of node '" + src +
                  "' is not supported (only its first output is)");
  FailureOr<RankedTensorType> rt = I.resultType();
  if (succeeded(rt))
    I.symShapes[v] = I.lastResultShape;
  return I.setAlias(v);
}

LogicalResult toCopyOp(Importer &I, RankedTensorType rt, Value x) {
  if (typeOf(x).getElementType() == rt.getElementType())
    return I.setAlias(x);
  return I.setResult(I.emit<ConvertOp>(rt, x));
}

/// aten.copy (functional copy_): `src` broadcast into `self`'s shape and
/// dtype.
/// type_as(self, other): self converted to other's element type.
LogicalResult typeAsOp(Importer &I, RankedTensorType rt, Value x) {
  return I.setResult(I.convert(x, rt.getElementType()));
}

LogicalResult copyOp(Importer &I, RankedTensorType rt, Value dst) {
  SymShape outShape = I.lastResultShape;
  FailureOr<Value> src = I.tensorArg("src");
  if (failed(src))
    return failure();
  Value v = I.convert(*src, rt.getElementType());
  if (!v)
    return failure();
  v = I.broadcastTo(v, outShape, "copy");
  I.lastResultShape = outShape;
  return I.setResult(v);
}

} // namespace

void registerShapeHandlers(HandlerTable &t) {
  // Aliases, copies and eval-mode no-ops.
  for (const char *n :
       {"aten.detach.default", "aten.clone.default", "aten.alias.default",
        "aten.lift_fresh_copy.default", "aten.contiguous.default"})
    t[n] = identity();
  t["aten._to_copy.default"] = withTensor(toCopyOp);
  t["aten.type_as.default"] = withTensor(typeAsOp);
  t["aten.copy.default"] = withTensor(copyOp);
  t["getitem"] = getitemOp;
  for (const char *n : {"aten.view.default", "aten._unsafe_view.default",
                        "aten._reshape_alias.default", "aten.reshape.default"})
    t[n] = withTensor(viewOp);
  t["aten.expand.default"] = withTensor(expandOp);
  t["aten.slice.Tensor"] = withTensor(sliceOp);
  t["aten.select.int"] = withTensor(selectOp);
  t["aten.t.default"] = withTensor(transposeOp);
  t["aten.transpose.int"] = withTensor(transposeOp);
  t["aten.permute.default"] = withTensor(permuteOp);
  t["aten.unsqueeze.default"] = withTensor(unsqueezeOp);
  t["aten.squeeze.dim"] = withTensor(squeezeOp);
  t["aten.squeeze.default"] = withTensor(squeezeOp);
  t["aten.cat.default"] = catOp;
  t["aten.stack.default"] = catOp;
  t["aten.split.Tensor"] = splitOp;
  t["aten.split_with_sizes.default"] = splitOp;
  t["aten.unbind.int"] = splitOp;
}

} // namespace mlir::etllm::aten
