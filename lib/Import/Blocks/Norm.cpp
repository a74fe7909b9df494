//===- Norm.cpp - The family's RMSNorm ------------------------------------===//
//
// LlamaRMSNorm: weight * (x * rsqrt(mean(x^2) + eps)).to(dtype), computed in
// float32; GemmaRMSNorm: (x * rsqrt(...)) * (1 + w.float()), then cast.
//
//===----------------------------------------------------------------------===//
#include "../GraphEmitter.h"

using namespace mlir;
using namespace mlir::etllm;

namespace etllm::import {

Value GraphEmitter::rmsNorm(const std::string &path, Value x, int64_t dim,
                            bool addOne, std::optional<double> eps) {
  Scope s(*this, path, cls("RMSNorm"));
  Value w = param(path + ".weight", {dim});
  Type f32 = b.getF32Type();
  auto xt = cast<RankedTensorType>(x.getType());
  Value xf = xt.getElementType() == f32 ? x : val<ConvertOp>(xt.clone(f32), x);
  Value sq = val<PowOp>(xf, scalar(2.0, f32));
  Value var = val<MeanOp>(sq, b.getDenseI64ArrayAttr({-1}), b.getUnitAttr());
  Value r = val<RsqrtOp>(
      val<AddOp>(var, scalar(eps.value_or(config.rmsNormEps), f32)));
  Value n = val<MulOp>(xf, r);
  if (addOne) {
    // Gemma: (x * rsqrt(...)) * (1 + w.float()), then cast to x's dtype.
    Value wf =
        dtype == f32
            ? w
            : val<ConvertOp>(cast<RankedTensorType>(w.getType()).clone(f32), w);
    Value y = val<MulOp>(n, val<AddOp>(wf, scalar(1.0, f32)));
    return xt.getElementType() == f32 ? y : val<ConvertOp>(xt, y);
  }
  // Llama: weight * hidden.to(input_dtype)
  Value nc = xt.getElementType() == f32 ? n : val<ConvertOp>(xt, n);
  return val<MulOp>(w, nc);
}

} // namespace etllm::import
