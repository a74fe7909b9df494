//===- RmsNorm.cpp - RMSNorm to etllm.rms_norm ----------------------------===//
//
// The RMSNorm swap: x * rsqrt(mean(x^2) + eps) * (w [+ 1]) -> rms_norm.
//
//===----------------------------------------------------------------------===//
#include "SwapUtils.h"

using namespace mlir;
using namespace mlir::etllm;

namespace etllm::swaps {

/// RMSNorm: x * rsqrt(mean(x^2) + eps) * (w [+ 1]) -> rms_norm.
LogicalResult swapRmsNorm(ModuleInstance &inst, RewriterBase &rewriter,
                          std::string &reason) {
  SmallVector<Value> ins = activationInputs(inst);
  SmallVector<Value> outs = outputsOf(inst);
  if (ins.size() != 1 || outs.size() != 1) {
    reason = "expected one input and one output, found " +
             std::to_string(ins.size()) + " and " + std::to_string(outs.size());
    return failure();
  }
  Value w;
  double eps = -1, offset = 0;
  bool haveMean = false, haveRsqrt = false;
  for (Operation *op : inst.ops) {
    if (auto g = dyn_cast<ParameterGetOp>(op)) {
      if (w) {
        reason = "more than one parameter";
        return failure();
      }
      w = g.getResult();
    }
    haveMean |= isa<MeanOp>(op);
    haveRsqrt |= isa<RsqrtOp>(op);
    if (auto add = dyn_cast<AddOp>(op)) {
      std::optional<double> c = floatSplat(add.getRhs());
      if (c && add.getLhs().getDefiningOp<MeanOp>())
        eps = *c;
      else if (c && *c == 1.0)
        offset = 1.0;
    }
  }
  // A weight read outside the instance (shared after CSE) still counts.
  if (!w)
    for (Operation *op : inst.ops)
      for (Value v : op->getOperands())
        if (v.getDefiningOp<ParameterGetOp>())
          w = v;
  if (!haveMean || !haveRsqrt || eps < 0) {
    reason = "not an RMSNorm computation (mean, eps, rsqrt)";
    return failure();
  }
  // Prefer the configuration's exact eps when the graph's constant is its
  // rounding (the kernel adds eps in f32 either way).
  double cfgEps =
      inst.config ? inst.config.getRmsNormEps().convertToDouble() : 0.0;
  if (cfgEps > 0 && float(cfgEps) == float(eps))
    eps = cfgEps;
  Value x = ins.front();
  auto xt = cast<RankedTensorType>(x.getType());
  if (outs.front().getType() != xt) {
    reason = "output type differs from the input type";
    return failure();
  }
  if (w) {
    auto wt = cast<RankedTensorType>(w.getType());
    if (wt.getRank() != 1 || wt.getElementType() != xt.getElementType()) {
      reason = "weight does not match the normalized dimension";
      return failure();
    }
  }
  // Insert after the last op of the instance (dominates every output use).
  rewriter.setInsertionPointAfter(inst.ops.back());
  auto norm = rewriter.create<RmsNormOp>(inst.ops.back()->getLoc(), xt, x, w,
                                         rewriter.getF64FloatAttr(eps),
                                         rewriter.getF64FloatAttr(offset));
  setModulePath(norm, inst.path);
  rewriter.replaceAllUsesWith(outs.front(), norm.getResult());
  eraseDead(inst, rewriter);
  return success();
}

} // namespace etllm::swaps
