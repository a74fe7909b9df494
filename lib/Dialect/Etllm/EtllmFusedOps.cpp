//===- EtllmFusedOps.cpp - Inference and verifiers of level B ------------===//
//
// The fused, device-friendly ops of EtllmFusedOps.td (rms_norm, rope, sdpa,
// the KV-cache update, moe, ...); see EtllmOps.cpp.
//
//===----------------------------------------------------------------------===//
#include "OpInference.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/IR/TypeUtilities.h"

using namespace mlir;
using namespace mlir::etllm;
using namespace mlir::etllm::detail;

//===----------------------------------------------------------------------===//
// Level B
//===----------------------------------------------------------------------===//

static LogicalResult checkNormParam(std::optional<Location> loc, Value param,
                                    RankedTensorType in, StringRef what) {
  if (!param)
    return success();
  auto t = tensorOf(param);
  if (t.getRank() != 1 ||
      failed(mergeDim(t.getDimSize(0), in.getShape().back())))
    return fail(loc, what, " shape ", shapeStr(t.getShape()),
                " does not match the normalized dimension ",
                in.getShape().back());
  if (t.getElementType() != in.getElementType())
    return fail(loc, what, " element type ", t.getElementType(),
                " differs from the input's ", in.getElementType());
  return success();
}

/// What rms_norm and layer_norm check of their operands: an input of rank
/// >= 1, and a weight and a bias (either may be absent) of its last size.
static LogicalResult checkNormOperands(std::optional<Location> loc,
                                       RankedTensorType in, Value weight,
                                       Value bias) {
  if (in.getRank() < 1)
    return fail(loc, "input must have rank >= 1");
  if (failed(checkNormParam(loc, weight, in, "weight")) ||
      failed(checkNormParam(loc, bias, in, "bias")))
    return failure();
  return success();
}

LogicalResult RmsNormOp::inferReturnTypes(MLIRContext *,
                                          std::optional<Location> loc,
                                          Adaptor adaptor,
                                          SmallVectorImpl<Type> &inferred) {
  auto in = tensorOf(adaptor.getInput());
  if (failed(checkNormOperands(loc, in, adaptor.getWeight(), Value())))
    return failure();
  if (adaptor.getEps().convertToDouble() < 0)
    return fail(loc, "eps must be non-negative");
  inferred.push_back(in);
  return success();
}
ETLLM_COMPATIBLE_RETURN_TYPES(RmsNormOp)

LogicalResult LayerNormOp::inferReturnTypes(MLIRContext *,
                                            std::optional<Location> loc,
                                            Adaptor adaptor,
                                            SmallVectorImpl<Type> &inferred) {
  auto in = tensorOf(adaptor.getInput());
  if (failed(
          checkNormOperands(loc, in, adaptor.getWeight(), adaptor.getBias())))
    return failure();
  inferred.push_back(in);
  return success();
}
ETLLM_COMPATIBLE_RETURN_TYPES(LayerNormOp)

LogicalResult RopeOp::inferReturnTypes(MLIRContext *,
                                       std::optional<Location> loc,
                                       Adaptor adaptor,
                                       SmallVectorImpl<Type> &inferred) {
  auto in = tensorOf(adaptor.getInput());
  auto pos = tensorOf(adaptor.getPositions());
  auto freq = tensorOf(adaptor.getInvFreq());
  if (in.getRank() != 4)
    return fail(loc, "input must be [batch, heads, seq, head_dim], got rank ",
                in.getRank());
  if (pos.getRank() != 1 ||
      failed(mergeDim(pos.getDimSize(0), in.getDimSize(2))))
    return fail(loc, "positions ", shapeStr(pos.getShape()),
                " must be [seq] with seq = ", in.getDimSize(2));
  if (freq.getRank() != 1 || freq.isDynamicDim(0))
    return fail(loc, "inv_freq must be a static 1-D tensor");
  int64_t headDim = in.getDimSize(3);
  if (!ShapedType::isDynamic(headDim) && 2 * freq.getDimSize(0) > headDim)
    return fail(loc, "inv_freq has ", freq.getDimSize(0),
                " frequencies, more than half the head dimension ", headDim);
  inferred.push_back(in);
  return success();
}
ETLLM_COMPATIBLE_RETURN_TYPES(RopeOp)

LogicalResult SdpaOp::inferReturnTypes(MLIRContext *,
                                       std::optional<Location> loc,
                                       Adaptor adaptor,
                                       SmallVectorImpl<Type> &inferred) {
  auto q = tensorOf(adaptor.getQuery());
  // A quantized KV cache reads as float values of its shape.
  auto kv = [&](Value x) {
    if (auto qa = dyn_cast<QActType>(x.getType()))
      return qa.getDequantizedType(q.getElementType());
    return tensorOf(x);
  };
  auto k = kv(adaptor.getKey());
  auto v = kv(adaptor.getValue());
  if (q.getRank() != 4 || k.getRank() != 4 || v.getRank() != 4)
    return fail(loc, "query, key and value must be [batch, heads, seq, dim]");
  if (q.getElementType() != k.getElementType() ||
      q.getElementType() != v.getElementType())
    return fail(loc, "query, key and value element types differ");
  inferred.push_back(RankedTensorType::get(
      {q.getDimSize(0), q.getDimSize(1), q.getDimSize(2), v.getDimSize(3)},
      q.getElementType()));
  return success();
}
ETLLM_COMPATIBLE_RETURN_TYPES(SdpaOp)

LogicalResult SdpaOp::verify() {
  auto q = getQuery().getType();
  auto qk = dyn_cast<QActType>(getKey().getType()),
       qv = dyn_cast<QActType>(getValue().getType());
  if (bool(qk) != bool(qv))
    return emitOpError("key and value must both be float or both quantized "
                       "KV caches");
  for (QActType c : {qk, qv})
    if (c && failed(verifyKvCacheLayout(*this, c)))
      return failure();
  auto k = qk ? qk.getDequantizedType(q.getElementType())
              : cast<RankedTensorType>(getKey().getType());
  auto v = qv ? qv.getDequantizedType(q.getElementType())
              : cast<RankedTensorType>(getValue().getType());
  if (q.getRank() != 4 || k.getRank() != 4 || v.getRank() != 4)
    return emitOpError("query, key and value must be [batch, heads, seq, dim]");
  if (failed(mergeDim(q.getDimSize(3), k.getDimSize(3))))
    return emitOpError("query head dim ")
           << q.getDimSize(3) << " differs from the key head dim "
           << k.getDimSize(3);
  if (failed(mergeDim(k.getDimSize(1), v.getDimSize(1))) ||
      failed(mergeDim(k.getDimSize(2), v.getDimSize(2))))
    return emitOpError("key ")
           << shapeStr(k.getShape()) << " and value " << shapeStr(v.getShape())
           << " differ in heads or length";
  if (failed(mergeDim(q.getDimSize(0), k.getDimSize(0))))
    return emitOpError("query and key batch sizes differ");
  int64_t h = q.getDimSize(1), hkv = k.getDimSize(1);
  if (!ShapedType::isDynamic(h) && !ShapedType::isDynamic(hkv) &&
      (hkv == 0 || h % hkv != 0))
    return emitOpError("query heads ")
           << h << " are not a multiple of the key/value heads " << hkv;
  if (Value mask = getMask()) {
    auto m = cast<RankedTensorType>(mask.getType());
    SmallVector<int64_t> scores = {q.getDimSize(0), h, q.getDimSize(2),
                                   k.getDimSize(2)};
    bool ok = m.getRank() <= 4;
    for (int64_t i = 0; ok && i < m.getRank(); ++i) {
      int64_t md = m.getDimSize(m.getRank() - 1 - i);
      int64_t sd = scores[3 - i];
      ok = md == 1 || succeeded(mergeDim(md, sd));
    }
    if (!ok)
      return emitOpError("mask ")
             << shapeStr(m.getShape()) << " does not broadcast to the scores "
             << shapeStr(scores);
  }
  if (Value pos = getPositions()) {
    auto p = cast<RankedTensorType>(pos.getType());
    if (p.getRank() != 1 || failed(mergeDim(p.getDimSize(0), q.getDimSize(2))))
      return emitOpError("positions ")
             << shapeStr(p.getShape())
             << " must be [seq] with seq = " << q.getDimSize(2);
    if (!getCausal())
      return emitOpError("positions are only meaningful with causal");
  }
  if (getSlidingWindow() < 0)
    return emitOpError("sliding window must be non-negative");
  if (getSlidingWindow() > 0 && !getCausal())
    return emitOpError("a sliding window needs causal attention");
  if (getSoftcap().convertToDouble() < 0)
    return emitOpError("softcap must be non-negative");
  if (!(getScale().convertToDouble() > 0))
    return emitOpError("scale must be positive");
  return success();
}

LogicalResult
KvCacheUpdateOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                  Adaptor adaptor,
                                  SmallVectorImpl<Type> &inferred) {
  auto value = tensorOf(adaptor.getValue());
  if (auto q = dyn_cast<QActType>(adaptor.getCache().getType())) {
    // Float rows into a quantized cache: the shapes of a float update.
    if (!value || !isa<FloatType>(value.getElementType()))
      return fail(loc, "a quantized cache takes float values");
    SmallVector<Type> asFloat;
    if (failed(inferIndexWrite(loc,
                               q.getDequantizedType(value.getElementType()),
                               tensorOf(adaptor.getPositions()), value,
                               adaptor.getDim(), asFloat)))
      return failure();
    inferred.push_back(q);
    return success();
  }
  return inferIndexWrite(loc, tensorOf(adaptor.getCache()),
                         tensorOf(adaptor.getPositions()), value,
                         adaptor.getDim(), inferred);
}
ETLLM_COMPATIBLE_RETURN_TYPES(KvCacheUpdateOp)

// The result is the cache operand's storage, updated in place.
std::optional<unsigned> KvCacheUpdateOp::getTiedResultOperandIndex(unsigned) {
  return getCacheMutable().getOperandNumber();
}

LogicalResult KvCacheUpdateOp::verify() {
  if (auto q = dyn_cast<QActType>(getCache().getType())) {
    if (failed(verifyKvCacheLayout(*this, q)))
      return failure();
    // Rows are quantized along the head dimension: tokens are dimension 2.
    if (getDim() != 2 && getDim() != -2)
      return emitOpError("a quantized cache is updated along dimension 2 "
                         "(tokens), not ")
             << getDim();
  } else {
    auto cache = cast<RankedTensorType>(getCache().getType());
    if (!cache.hasStaticShape())
      return emitOpError("cache must have a static shape");
    if (cache.getElementType() != getValue().getType().getElementType())
      return emitOpError("value element type ")
             << getValue().getType().getElementType()
             << " differs from the cache's " << cache.getElementType();
  }
  // The tied-operand contract: the result is the cache's storage updated in
  // place, so nothing else may observe the cache value.
  if (!getCache().hasOneUse())
    return emitOpError("cache operand must have no other use (the update is "
                       "in place)");
  return success();
}

//===----------------------------------------------------------------------===//
// KvRingSlotsOp, KvRingMaskOp
//===----------------------------------------------------------------------===//

/// A ring cache of `size` slots needs at least one ring slot after its sinks.
static LogicalResult verifyRing(Operation *op, int64_t sinks, int64_t size) {
  if (sinks < 0)
    return op->emitOpError("sinks must not be negative, got ") << sinks;
  if (sinks >= size)
    return op->emitOpError("needs at least one ring slot: sinks ")
           << sinks << " >= size " << size;
  return success();
}

LogicalResult KvRingSlotsOp::verify() {
  return verifyRing(*this, getSinks(), getSize());
}

LogicalResult KvRingMaskOp::verify() {
  if (failed(verifyRing(*this, getSinks(), getSize())))
    return failure();
  if (getWindow() < 0 || getWindow() > getSize() - getSinks())
    return emitOpError("window ")
           << getWindow() << " is outside [0, the ring's "
           << getSize() - getSinks() << " slots]";
  auto pos = cast<RankedTensorType>(getPositions().getType());
  auto result = cast<RankedTensorType>(getResult().getType());
  SmallVector<int64_t> expected = {1, 1, pos.getDimSize(0), getSize()};
  if (result.getShape() != ArrayRef<int64_t>(expected))
    return emitOpError("result must be [1, 1, positions, size] = [1, 1, ")
           << (pos.isDynamicDim(0) ? std::string("?")
                                   : std::to_string(pos.getDimSize(0)))
           << ", " << getSize() << "], got " << result;
  return success();
}

//===----------------------------------------------------------------------===//
// MoeOp
//===----------------------------------------------------------------------===//

LogicalResult MoeOp::verify() {
  auto x = cast<RankedTensorType>(getInput().getType());
  if (x.getRank() < 1)
    return emitOpError("input must have rank >= 1");
  const int64_t D = x.getShape().back();
  ArrayRef<int64_t> r = weightShape(getRouter().getType());
  if (r.size() != 2 || failed(mergeDim(r[1], D)))
    return emitOpError("router must be [experts, ")
           << D << "], got " << shapeStr(r);
  const int64_t E = r[0];
  if (ShapedType::isDynamic(E) || E < 1)
    return emitOpError("router must have a static number of experts");
  ArrayRef<int64_t> g = weightShape(getGate().getType()),
                    u = weightShape(getUp().getType()),
                    d = weightShape(getDown().getType());
  if (g.size() != 3 || g[0] != E || failed(mergeDim(g[2], D)))
    return emitOpError("gate must be [")
           << E << ", F, " << D << "], got " << shapeStr(g);
  const int64_t F = g[1];
  if (u != g)
    return emitOpError("up must have gate's shape ")
           << shapeStr(g) << ", got " << shapeStr(u);
  if (d.size() != 3 || d[0] != E || failed(mergeDim(d[1], D)) || d[2] != F)
    return emitOpError("down must be [")
           << E << ", " << D << ", " << F << "], got " << shapeStr(d);
  for (Value w : {getGate(), getUp(), getDown()})
    if (auto t = dyn_cast<RankedTensorType>(w.getType());
        t && !t.hasStaticShape())
      return emitOpError("expert weights must have static shapes");
  const int64_t k = getTopK(), G = getNGroup(), tg = getTopkGroup();
  if (k < 1 || k > E)
    return emitOpError("top_k ") << k << " must be in [1, " << E << "]";
  if (G < 1 || E % G != 0)
    return emitOpError("n_group ")
           << G << " must divide the " << E << " experts";
  if (tg < 1 || tg > G)
    return emitOpError("topk_group ")
           << tg << " must be in [1, n_group = " << G << "]";
  const bool grouped = getTopkMethod() != RouterSelection::greedy;
  if (!grouped && (G != 1 || tg != 1))
    return emitOpError("greedy routing has no groups (n_group and "
                       "topk_group must be 1)");
  if (grouped && k > tg * (E / G))
    return emitOpError("top_k ") << k << " is more than the " << tg * (E / G)
                                 << " experts of the topk_group groups";
  if (getTopkMethod() == RouterSelection::noaux_tc && E / G < 2)
    return emitOpError("noaux_tc ranks groups by their two best experts: "
                       "each group needs at least 2");
  if (Value b = getScoreBias()) {
    auto bt = cast<RankedTensorType>(b.getType());
    if (bt.getRank() != 1 || bt.getDimSize(0) != E)
      return emitOpError("score_bias must be [")
             << E << "], got " << shapeStr(bt.getShape());
  }
  if (!(getRoutedScalingFactor().convertToDouble() > 0.0))
    return emitOpError("routed_scaling_factor must be positive");
  if (!(getNormEps().convertToDouble() >= 0.0))
    return emitOpError("norm_eps must be >= 0");
  return success();
}
