//===- Mask.cpp - Causal masks over the static cache ----------------------===//
//
// [1, 1, S, T]: key j is masked (the dtype's lowest value) for the query at
// position p when j > p and, with a sliding window, when j <= p - window.
// Bidirectional (Gemma 3's image positions, one image a call): j > the
// call's last position instead of j > p; the window stays p's
// (transformers: AND(sliding window, OR(causal, same image))).
//
//===----------------------------------------------------------------------===//
#include "Blocks.h"

using namespace mlir;
using namespace mlir::etllm;

namespace etllm::import {

Masks buildMasks(GraphEmitter &e, Value inputPos, int64_t T,
                 bool bidirectional) {
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
    // The last key each query sees: its own position, or (an image's
    // positions in one call, seeing each other) the call's last position.
    Value seen = qpos;
    if (bidirectional) {
      Value last = e.val<AmaxOp>(inputPos, e.b.getDenseI64ArrayAttr({0}),
                                 e.b.getUnitAttr());
      seen = e.reshape(e.val<MaximumOp>(inputPos, last), {-1, 1});
    }
    Value masked = e.val<GtOp>(kpos, seen); // [S, T]
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
