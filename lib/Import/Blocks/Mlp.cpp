//===- Mlp.cpp - MLP blocks -----------------------------------------------===//
//
// <Family>MLP: down_proj(act_fn(gate) * up), the activation from the config
// (SiLU, tanh or exact GELU, as transformers' ACT2FN module classes).
//
//===----------------------------------------------------------------------===//
#include "Blocks.h"

using namespace mlir;
using namespace mlir::etllm;
using ::etllm::models::HfModule;

namespace etllm::import {

/// act_fn(gate) * up, then down_proj: the activation module at `actPath`,
/// the down projection at `downPath`.
static Value actAndDown(GraphEmitter &e, const std::string &actPath,
                        const std::string &downPath, Value gate, Value up,
                        int64_t out, int64_t in, bool bias) {
  const formats::ModelConfig &c = e.config;
  Value act;
  {
    bool tanhGelu = c.hiddenAct == "gelu_pytorch_tanh" ||
                    c.hiddenAct == "gelu_new" || c.hiddenAct == "gelu_fast";
    bool gelu = tanhGelu || c.hiddenAct == "gelu";
    GraphEmitter::Scope s(
        e, actPath,
        gelu ? (tanhGelu ? "PytorchGELUTanh" : "GELUActivation") : "SiLU");
    if (gelu)
      act = e.val<GeluOp>(gate, GeluApproximationAttr::get(
                                    e.ctx, tanhGelu ? GeluApproximation::tanh
                                                    : GeluApproximation::none));
    else
      act = e.val<SiluOp>(gate);
  }
  return e.linear(downPath, e.val<MulOp>(act, up), out, in, bias);
}

Value gatedMlp(GraphEmitter &e, const GatedMlpPaths &p, Value x, int64_t F,
               bool bias) {
  const int64_t D = e.config.hiddenSize;
  Value gate = e.linear(p.gate, x, F, D, bias);
  Value up = e.linear(p.up, x, F, D, bias);
  return actAndDown(e, p.act, p.down, gate, up, D, F, bias);
}

Value buildGatedMlp(GraphEmitter &e, const LayerContext &l, Value x) {
  const formats::ModelConfig &c = e.config;
  GraphEmitter::Scope mlp(e, e.path(HfModule::Mlp, l.index), e.cls("MLP"));
  GatedMlpPaths p{
      e.path(HfModule::GateProj, l.index), e.path(HfModule::UpProj, l.index),
      e.path(HfModule::DownProj, l.index), e.path(HfModule::ActFn, l.index)};
  return gatedMlp(e, p, x, c.intermediateSize, c.mlpBias);
}

Value buildFusedGateUpMlp(GraphEmitter &e, const LayerContext &l, Value x) {
  const formats::ModelConfig &c = e.config;
  const int64_t D = c.hiddenSize, F = c.intermediateSize;
  GraphEmitter::Scope mlp(e, e.path(HfModule::Mlp, l.index), e.cls("MLP"));
  Value gu =
      e.linear(e.path(HfModule::GateUpProj, l.index), x, 2 * F, D, c.mlpBias);
  Value gate = e.slice(gu, -1, 0, F);
  Value up = e.slice(gu, -1, F, kEnd);
  return actAndDown(e, e.path(HfModule::ActFn, l.index),
                    e.path(HfModule::DownProj, l.index), gate, up, D, F,
                    c.mlpBias);
}

} // namespace etllm::import
