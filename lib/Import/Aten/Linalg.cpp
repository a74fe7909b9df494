//===- Linalg.cpp - Matrix products, lookups and convolutions -------------===//
//
// ATen's matrix products (mm, bmm, matmul, addmm, linear), the embedding
// lookup, patch-embedding convolutions and scaled dot-product attention.
//
//===----------------------------------------------------------------------===//
#include "Importer.h"

namespace mlir::etllm::aten {

namespace {

LogicalResult mmOp(Importer &I, const json &) {
  FailureOr<RankedTensorType> rt = I.resultType();
  if (failed(rt))
    return failure();
  FailureOr<std::pair<Value, Value>> ab = I.operandPair(
      "self", I.arg("mat2") ? "mat2" : "other", rt->getElementType());
  if (failed(ab))
    return failure();
  auto [a, c] = *ab;
  if (typeOf(a).getRank() < 2 || typeOf(c).getRank() < 2)
    return I.fail("matmul of a vector (rank 1) is not supported");
  return I.setResult(I.emit<MatmulOp>(*rt, a, c));
}

/// addmm(bias, a, b, beta, alpha) = beta * bias + alpha * (a @ b).
LogicalResult addmmOp(Importer &I, const json &) {
  FailureOr<RankedTensorType> rt = I.resultType();
  if (failed(rt))
    return failure();
  SymShape outShape = I.lastResultShape;
  Type et = rt->getElementType();
  FailureOr<Value> bias = I.operand("self", et);
  FailureOr<Value> a = I.operand("mat1", et);
  FailureOr<Value> c = I.operand("mat2", et);
  if (failed(bias) || failed(a) || failed(c))
    return failure();
  FailureOr<double> beta = I.optionalNumberArg("beta", 1.0);
  FailureOr<double> alpha = I.optionalNumberArg("alpha", 1.0);
  if (failed(beta) || failed(alpha))
    return failure();
  Value m = I.emit<MatmulOp>(*rt, *a, *c);
  if (!m)
    return failure();
  Value bv = *bias;
  if (*alpha != 1.0)
    if (!(m = I.emit<MulOp>(*rt, m, I.scalar(*alpha, et))))
      return failure();
  if (*beta != 1.0)
    if (!(bv = I.emit<MulOp>(typeOf(bv), bv, I.scalar(*beta, et))))
      return failure();
  I.lastResultShape = outShape;
  return I.setResult(I.emit<AddOp>(*rt, m, bv));
}

LogicalResult linearOp(Importer &I, const json &) {
  FailureOr<RankedTensorType> rt = I.resultType();
  if (failed(rt))
    return failure();
  Type et = rt->getElementType();
  FailureOr<Value> x = I.operand("input", et);
  FailureOr<Value> w = I.operand("weight", et);
  if (failed(x) || failed(w))
    return failure();
  FailureOr<Value> bias = I.optionalOperand("bias", et);
  if (failed(bias))
    return failure();
  return I.setResult(I.emit<LinearOp>(*rt, *x, *w, *bias));
}

LogicalResult embeddingOp(Importer &I, const json &) {
  FailureOr<RankedTensorType> rt = I.resultType();
  if (failed(rt))
    return failure();
  FailureOr<Value> w = I.tensorArg("weight");
  FailureOr<Value> idx = I.tensorArg("indices");
  if (failed(w) || failed(idx))
    return failure();
  return I.setResult(I.emit<EmbeddingOp>(*rt, *w, *idx));
}

/// A 2-D convolution whose stride equals its kernel (patch embedding), as
/// patchify (reshape + permute) and a linear layer.
LogicalResult convolutionOp(Importer &I, const json &) {
  FailureOr<RankedTensorType> rt = I.resultType();
  if (failed(rt))
    return failure();
  FailureOr<Value> x = I.tensorArg("input");
  FailureOr<Value> w = I.tensorArg("weight");
  if (failed(x) || failed(w))
    return failure();
  auto xt = typeOf(*x), wt = typeOf(*w);
  FailureOr<SmallVector<int64_t>> stride = I.intListArg("stride");
  FailureOr<SmallVector<int64_t>> padding = I.intListArg("padding");
  FailureOr<SmallVector<int64_t>> dilation = I.intListArg("dilation");
  FailureOr<int64_t> groups = I.intArg("groups");
  if (failed(stride) || failed(padding) || failed(dilation) || failed(groups))
    return failure();
  if (xt.getRank() != 4 || wt.getRank() != 4 || !xt.hasStaticShape())
    return I.fail("only 2-D convolutions of static shape are supported");
  int64_t B = xt.getDimSize(0), C = xt.getDimSize(1), Hh = xt.getDimSize(2),
          W = xt.getDimSize(3), O = wt.getDimSize(0), kh = wt.getDimSize(2),
          kw = wt.getDimSize(3);
  bool patchify = !I.boolArg("transposed", false) && *groups == 1 &&
                  wt.getDimSize(1) == C &&
                  *stride == SmallVector<int64_t>{kh, kw} &&
                  llvm::all_of(*padding, [](int64_t p) { return p == 0; }) &&
                  llvm::all_of(*dilation, [](int64_t d) { return d == 1; }) &&
                  kh > 0 && kw > 0 && Hh % kh == 0 && W % kw == 0;
  if (!patchify)
    return I.fail("only patch-embedding convolutions (stride == kernel size, "
                  "no padding, dilation 1, groups 1) are supported");
  Type et = rt->getElementType();
  int64_t ph = Hh / kh, pw = W / kw, K = C * kh * kw;
  auto ty = [&](ArrayRef<int64_t> s) { return RankedTensorType::get(s, et); };
  auto arr = [&](ArrayRef<int64_t> s) { return I.b.getDenseI64ArrayAttr(s); };
  Value v = I.emit<ReshapeOp>(ty({B, C, ph, kh, pw, kw}), *x,
                              arr({B, C, ph, kh, pw, kw}));
  if (!v || !(v = I.emit<PermuteOp>(ty({B, ph, pw, C, kh, kw}), v,
                                    arr({0, 2, 4, 1, 3, 5}))))
    return failure();
  if (!(v = I.emit<ReshapeOp>(ty({B, ph * pw, K}), v, arr({B, ph * pw, K}))))
    return failure();
  Value wf = I.emit<ReshapeOp>(ty({O, K}), *w, arr({O, K}));
  if (!wf)
    return failure();
  FailureOr<Value> bias = I.optionalTensorArg("bias");
  if (failed(bias))
    return failure();
  if (!(v = I.emit<LinearOp>(ty({B, ph * pw, O}), v, wf, *bias)))
    return failure();
  if (!(v = I.emit<ReshapeOp>(ty({B, ph, pw, O}), v, arr({B, ph, pw, O}))))
    return failure();
  return I.setResult(I.emit<PermuteOp>(*rt, v, arr({0, 3, 1, 2})));
}

/// scaled_dot_product_attention(q, k, v, attn_mask, dropout_p, is_causal,
/// scale, enable_gqa) as etllm.sdpa (grouped-query attention is native). A
/// boolean mask (true: attend) becomes the additive float mask
/// where(mask, 0, lowest); fuse-sdpa later turns a causal one into
/// `causal positions`. is_causal is the top-left aligned causal mask
/// (key j <= query i), etllm.sdpa's `causal` without positions.
LogicalResult sdpaOp(Importer &I, const json &) {
  FailureOr<RankedTensorType> rt = I.resultType();
  if (failed(rt))
    return failure();
  SymShape outShape = I.lastResultShape;
  FailureOr<Value> q = I.tensorArg("query");
  FailureOr<Value> k = I.tensorArg("key");
  FailureOr<Value> v = I.tensorArg("value");
  if (failed(q) || failed(k) || failed(v))
    return failure();
  auto qt = typeOf(*q);
  if (qt.getRank() != 4 || typeOf(*k).getRank() != 4 ||
      typeOf(*v).getRank() != 4)
    return I.fail("only 4-D query, key and value ([B, H, S, D]) are "
                  "supported");
  FailureOr<double> dropout = I.optionalNumberArg("dropout_p", 0.0);
  if (failed(dropout))
    return failure();
  if (*dropout != 0.0)
    return I.fail("dropout_p is " + std::to_string(*dropout) +
                  "; inference programs need 0");
  double scale;
  if (I.isNone("scale")) {
    int64_t d = qt.getDimSize(3);
    if (ShapedType::isDynamic(d) || d <= 0)
      return I.fail("the query's head size is not static");
    scale = 1.0 / std::sqrt(double(d));
  } else {
    FailureOr<double> s = I.numberArg("scale");
    if (failed(s))
      return failure();
    scale = *s;
  }
  bool causal = I.boolArg("is_causal", false);
  Value mask;
  if (!I.isNone("attn_mask")) {
    if (causal)
      return I.fail("is_causal with an attn_mask");
    FailureOr<Value> m = I.tensorArg("attn_mask");
    if (failed(m))
      return failure();
    Type et = qt.getElementType();
    auto mt = typeOf(*m);
    if (mt.getElementType().isInteger(1)) {
      double lowest =
          -llvm::APFloat::getLargest(cast<FloatType>(et).getFloatSemantics())
               .convertToDouble();
      Value zero = I.scalar(0.0, et), low = I.scalar(lowest, et);
      if (!zero || !low)
        return failure();
      SymShape ms = I.symShapeOf(*m);
      mask = I.emit<WhereOp>(mt.clone(et), *m, zero, low);
      if (!mask)
        return failure();
      I.symShapes[mask] = ms;
    } else {
      mask = I.convert(*m, et);
      if (!mask)
        return failure();
    }
  }
  Value o =
      I.emit<SdpaOp>(*rt, *q, *k, *v, mask, Value(), I.b.getF64FloatAttr(scale),
                     causal ? I.b.getUnitAttr() : UnitAttr(),
                     I.b.getI64IntegerAttr(0), I.b.getF64FloatAttr(0.0));
  I.lastResultShape = outShape;
  return I.setResult(o);
}

} // namespace

void registerLinalgHandlers(HandlerTable &t) {
  t["aten.mm.default"] = mmOp;
  t["aten.bmm.default"] = mmOp;
  t["aten.matmul.default"] = mmOp;
  t["aten.addmm.default"] = addmmOp;
  t["aten.linear.default"] = linearOp;
  t["aten.embedding.default"] = embeddingOp;
  t["aten.convolution.default"] = convolutionOp;
  t["aten.conv2d.default"] = convolutionOp;
  t["aten.scaled_dot_product_attention.default"] = sdpaOp;
}

} // namespace mlir::etllm::aten
