//===- Mask.cpp - Causal masks over the static cache ----------------------===//
//
// [1, 1, S, T]: key j is masked (the dtype's lowest value) for the query at
// position p when j > p and, with a sliding window, when j <= p - window.
//
//===----------------------------------------------------------------------===//
#include "Blocks.h"

using namespace mlir;
using namespace mlir::etllm;

namespace etllm::import {

Masks buildMasks(GraphEmitter &e, Value inputPos, int64_t T) {
  const formats::ModelConfig &c = e.config;
  Type i64 = e.b.getI64Type();
  float minValue = -std::numeric_limits<float>::max();
  if (e.dtype.isF16())
    minValue = -65504.0f;
  else if (e.dtype.isBF16())
    minValue = -3.3895313892515355e+38f;
  auto buildMask = [&](int64_t window) -> Value {
    Value kpos =
        e.val<ArangeOp>(e.tensorType({T}, i64), e.b.getI64IntegerAttr(0),
                        e.b.getI64IntegerAttr(T), e.b.getI64IntegerAttr(1));
    Value qpos = e.reshape(inputPos, {-1, 1});
    Value masked = e.val<GtOp>(kpos, qpos); // [S, T]
    if (window > 0) {
      Value lower = e.val<SubOp>(qpos, e.scalar(double(window), i64));
      masked = e.val<LogicalOrOp>(masked, e.val<LeOp>(kpos, lower));
    }
    Value m = e.val<WhereOp>(masked, e.scalar(minValue, e.dtype),
                             e.scalar(0.0, e.dtype));
    return e.reshape(m, {1, 1, -1, T});
  };
  Masks masks;
  masks.full = buildMask(0);
  for (bool sliding : c.layerUsesSlidingWindow)
    if (sliding && !masks.sliding)
      masks.sliding = buildMask(c.slidingWindow);
  return masks;
}

} // namespace etllm::import
