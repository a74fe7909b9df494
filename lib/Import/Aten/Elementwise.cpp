//===- Elementwise.cpp - Element-wise operators ---------------------------===//
//
// ATen's unary, binary, comparison, logical and selection operators, mapped
// to etllm's element-wise ops in the result's element type.
//
//===----------------------------------------------------------------------===//
#include "Importer.h"

namespace mlir::etllm::aten {

namespace {

template <typename OpTy> H unary() {
  return withOperand([](Importer &I, RankedTensorType rt, Value x) {
    return I.setResult(I.emit<OpTy>(rt, x));
  });
}

/// add/sub with alpha: lhs op alpha * rhs, in the result's element type.
template <typename OpTy>
H binary(const char *lhs = "self", const char *rhs = "other",
         bool reversed = false) {
  return [=](Importer &I, const json &) -> LogicalResult {
    FailureOr<RankedTensorType> rt = I.resultType();
    if (failed(rt))
      return failure();
    Type et = rt->getElementType();
    FailureOr<std::pair<Value, Value>> ab = I.operandPair(lhs, rhs, et);
    if (failed(ab))
      return failure();
    auto [x, y] = *ab;
    if (const json *alpha = I.arg("alpha"); alpha && !alpha->is_null()) {
      FailureOr<double> al = I.numberArg("alpha");
      if (failed(al))
        return failure();
      if (*al != 1.0) {
        Value s = I.scalar(*al, et);
        if (!s)
          return failure();
        // alpha scales `other` (for rsub: `self`, the subtrahend).
        Value &scaled = reversed ? x : y;
        scaled = I.emit<MulOp>(typeOf(scaled), scaled, s);
        if (!scaled)
          return failure();
      }
    }
    if (reversed)
      std::swap(x, y);
    return I.setResult(I.emit<OpTy>(*rt, x, y));
  };
}

/// The element type both operands of a comparison are converted to.
Type promoteForCompare(Importer &I, const json *a, const json *c) {
  auto typeOfArg = [&](const json *j) -> Type {
    return j ? I.elementTypeOfRef(*j) : Type();
  };
  Type ta = typeOfArg(a), tc = typeOfArg(c);
  bool scalarFloat = (a && isFloatNumber(*a)) || (c && isFloatNumber(*c));
  Type t = ta ? ta : tc;
  if (ta && tc && ta != tc) {
    if (isa<FloatType>(ta) != isa<FloatType>(tc))
      t = isa<FloatType>(ta) ? ta : tc;
    else
      t = isa<FloatType>(ta) ? Type(I.b.getF32Type()) : Type(I.b.getI64Type());
  }
  if (t && !isa<FloatType>(t) && scalarFloat)
    t = I.b.getF32Type();
  if (t && t.isInteger(1))
    t = I.b.getI64Type(); // booleans compare as integers
  return t;
}

template <typename OpTy> H compare() {
  return [](Importer &I, const json &) -> LogicalResult {
    FailureOr<RankedTensorType> rt = I.resultType();
    if (failed(rt))
      return failure();
    Type t = promoteForCompare(I, I.arg("self"), I.arg("other"));
    if (!t)
      return I.poisonedUse ? failure() : I.fail("comparison without a tensor");
    FailureOr<std::pair<Value, Value>> ab = I.operandPair("self", "other", t);
    if (failed(ab))
      return failure();
    return I.setResult(I.emit<OpTy>(*rt, ab->first, ab->second));
  };
}

template <typename OpTy> H logical() {
  return [](Importer &I, const json &) -> LogicalResult {
    FailureOr<RankedTensorType> rt = I.resultType();
    if (failed(rt))
      return failure();
    if (!rt->getElementType().isInteger(1))
      return I.fail("only boolean logical/bitwise ops are supported");
    FailureOr<std::pair<Value, Value>> ab =
        I.operandPair("self", "other", rt->getElementType());
    if (failed(ab))
      return failure();
    return I.setResult(I.emit<OpTy>(*rt, ab->first, ab->second));
  };
}

LogicalResult geluOp(Importer &I, RankedTensorType rt, Value x) {
  std::string approx = I.stringArg("approximate", "none");
  if (approx != "none" && approx != "tanh")
    return I.fail("gelu approximate='" + approx + "' is not supported");
  return I.setResult(I.emit<GeluOp>(
      rt, x,
      GeluApproximationAttr::get(I.ctx, approx == "tanh"
                                            ? GeluApproximation::tanh
                                            : GeluApproximation::none)));
}

LogicalResult clampOp(Importer &I, RankedTensorType rt, Value x) {
  Type et = rt.getElementType();
  Value v = x;
  bool isMin = I.target == "aten.clamp_min.default",
       isMax = I.target == "aten.clamp_max.default";
  const char *lo = isMin ? "min" : isMax ? nullptr : "min";
  const char *hi = isMax ? "max" : isMin ? nullptr : "max";
  if (lo && !I.isNone(lo)) {
    FailureOr<Value> l = I.operand(lo, et);
    if (failed(l) || !(v = I.emit<MaximumOp>(rt, v, *l)))
      return failure();
  }
  if (hi && !I.isNone(hi)) {
    FailureOr<Value> h = I.operand(hi, et);
    if (failed(h) || !(v = I.emit<MinimumOp>(rt, v, *h)))
      return failure();
  }
  return I.setResult(v);
}

LogicalResult reciprocalOp(Importer &I, RankedTensorType rt, Value x) {
  Value one = I.scalar(1.0, rt.getElementType());
  if (!one)
    return failure();
  return I.setResult(I.emit<DivOp>(rt, one, x));
}

LogicalResult whereOp(Importer &I, const json &) {
  FailureOr<RankedTensorType> rt = I.resultType();
  if (failed(rt))
    return failure();
  Type et = rt->getElementType();
  FailureOr<Value> c = I.tensorArg("condition");
  if (failed(c))
    return failure();
  FailureOr<Value> a = I.operand("self", et);
  FailureOr<Value> o = I.operand("other", et);
  if (failed(a) || failed(o))
    return failure();
  if (!typeOf(*c).getElementType().isInteger(1))
    return I.fail("where with a non-boolean condition");
  return I.setResult(I.emit<WhereOp>(*rt, *c, *a, *o));
}

LogicalResult maskedFillOp(Importer &I, const json &) {
  FailureOr<RankedTensorType> rt = I.resultType();
  if (failed(rt))
    return failure();
  Type et = rt->getElementType();
  FailureOr<Value> x = I.operand("self", et);
  FailureOr<Value> m = I.tensorArg("mask");
  if (failed(x) || failed(m))
    return failure();
  const json *value = I.arg("value");
  if (value && asNumber(*value)) {
    FailureOr<double> v = I.numberArg("value");
    if (failed(v))
      return failure();
    return I.setResult(
        I.emit<MaskedFillOp>(*rt, *x, *m, I.b.getF64FloatAttr(*v)));
  }
  FailureOr<Value> v = I.operand("value", et);
  if (failed(v))
    return failure();
  return I.setResult(I.emit<WhereOp>(*rt, *m, *v, *x));
}

} // namespace

void registerElementwiseHandlers(HandlerTable &t) {
  t["aten.neg.default"] = unary<NegOp>();
  t["aten.abs.default"] = unary<AbsOp>();
  t["aten.rsqrt.default"] = unary<RsqrtOp>();
  t["aten.sqrt.default"] = unary<SqrtOp>();
  t["aten.exp.default"] = unary<ExpOp>();
  t["aten.log.default"] = unary<LogOp>();
  t["aten.cos.default"] = unary<CosOp>();
  t["aten.sin.default"] = unary<SinOp>();
  t["aten.tanh.default"] = unary<TanhOp>();
  t["aten.sigmoid.default"] = unary<SigmoidOp>();
  t["aten.silu.default"] = unary<SiluOp>();
  t["aten.relu.default"] = unary<ReluOp>();
  t["aten.gelu.default"] = withOperand(geluOp);
  t["aten.reciprocal.default"] = withOperand(reciprocalOp);
  t["aten.clamp.default"] = withOperand(clampOp);
  t["aten.clamp_min.default"] = withOperand(clampOp);
  t["aten.clamp_max.default"] = withOperand(clampOp);
  t["aten.logical_not.default"] = [](Importer &I,
                                     const json &) -> LogicalResult {
    FailureOr<RankedTensorType> rt = I.resultType();
    if (failed(rt))
      return failure();
    FailureOr<Value> x = I.tensorArg("self");
    if (failed(x))
      return failure();
    Value b = typeOf(*x).getElementType().isInteger(1)
                  ? *x
                  : Value(I.emit<NeOp>(
                        *rt, *x, I.scalar(0.0, typeOf(*x).getElementType())));
    if (!b)
      return failure();
    return I.setResult(I.emit<LogicalNotOp>(*rt, b));
  };
  t["aten.bitwise_not.default"] = [](Importer &I,
                                     const json &) -> LogicalResult {
    FailureOr<RankedTensorType> rt = I.resultType();
    if (failed(rt))
      return failure();
    if (!rt->getElementType().isInteger(1))
      return I.fail("bitwise_not of a non-boolean tensor");
    FailureOr<Value> x = I.tensorArg("self");
    if (failed(x))
      return failure();
    return I.setResult(I.emit<LogicalNotOp>(*rt, *x));
  };
  for (const char *n : {"aten.add.Tensor", "aten.add.Scalar"})
    t[n] = binary<AddOp>();
  for (const char *n : {"aten.sub.Tensor", "aten.sub.Scalar"})
    t[n] = binary<SubOp>();
  for (const char *n : {"aten.rsub.Scalar", "aten.rsub.Tensor"})
    t[n] = binary<SubOp>("self", "other", /*reversed=*/true);
  for (const char *n : {"aten.mul.Tensor", "aten.mul.Scalar"})
    t[n] = binary<MulOp>();
  for (const char *n : {"aten.div.Tensor", "aten.div.Scalar"})
    t[n] = binary<DivOp>();
  t["aten.pow.Tensor_Scalar"] = binary<PowOp>("self", "exponent");
  t["aten.pow.Tensor_Tensor"] = binary<PowOp>("self", "exponent");
  t["aten.maximum.default"] = binary<MaximumOp>();
  t["aten.minimum.default"] = binary<MinimumOp>();
  t["aten.logical_and.default"] = logical<LogicalAndOp>();
  t["aten.logical_or.default"] = logical<LogicalOrOp>();
  t["aten.bitwise_and.Tensor"] = logical<LogicalAndOp>();
  t["aten.bitwise_or.Tensor"] = logical<LogicalOrOp>();
  for (auto [name, h] : std::initializer_list<std::pair<const char *, H>>{
           {"eq", compare<EqOp>()},
           {"ne", compare<NeOp>()},
           {"lt", compare<LtOp>()},
           {"le", compare<LeOp>()},
           {"gt", compare<GtOp>()},
           {"ge", compare<GeOp>()}}) {
    t[std::string("aten.") + name + ".Tensor"] = h;
    t[std::string("aten.") + name + ".Scalar"] = h;
  }
  for (const char *n : {"aten.where.self", "aten.where.ScalarSelf",
                        "aten.where.ScalarOther", "aten.where.Scalar"})
    t[n] = whereOp;
  t["aten.masked_fill.Scalar"] = maskedFillOp;
  t["aten.masked_fill.Tensor"] = maskedFillOp;
  // Python's `&` and `|` on boolean tensors (masks).
  t["aten.__and__.Tensor"] = logical<LogicalAndOp>();
  t["aten.__or__.Tensor"] = logical<LogicalOrOp>();
}

} // namespace mlir::etllm::aten
