//===- Head.cpp - Final norm, lm_head and the logits ----------------------===//
//
// The model's final norm, then (at the *ForCausalLM level) lm_head — the
// embedding when tied — the logits scaling (Granite), final soft-capping
// (Gemma2), and the float32 cast.
//
//===----------------------------------------------------------------------===//
#include "Blocks.h"

using namespace mlir;
using namespace mlir::etllm;
using ::etllm::models::HfModule;

namespace etllm::import {

Value buildFinalNorm(GraphEmitter &e, Value h, bool addOne) {
  return e.rmsNorm(e.path(HfModule::FinalNorm), h, e.config.hiddenSize, addOne);
}

Value buildLmHead(GraphEmitter &e, Value h, bool lastOnly) {
  const formats::ModelConfig &c = e.config;
  Type f32 = e.b.getF32Type();
  if (lastOnly)
    h = e.slice(h, 1, -1, kEnd);
  Value logits;
  {
    std::string path = e.path(HfModule::LmHead);
    GraphEmitter::Scope s(e, path, "Linear");
    std::string wName = c.tieWordEmbeddings
                            ? e.path(HfModule::Embed) + ".weight"
                            : path + ".weight";
    logits = e.val<LinearOp>(h, e.param(wName, {c.vocabSize, c.hiddenSize}),
                             Value());
  }
  if (c.logitsScaling != 1.0)
    // Granite: logits / logits_scaling.
    logits = e.val<DivOp>(logits, e.scalar(c.logitsScaling, e.dtype));
  if (c.finalLogitSoftcapping > 0) {
    Value cap = e.scalar(c.finalLogitSoftcapping, e.dtype);
    logits = e.val<MulOp>(e.val<TanhOp>(e.val<DivOp>(logits, cap)), cap);
  }
  if (e.dtype != f32)
    logits = e.val<ConvertOp>(
        cast<RankedTensorType>(logits.getType()).clone(f32), logits);
  return logits;
}

} // namespace etllm::import
