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

namespace {

/// act_fn(gate) * up, then down_proj. Runs in the MLP scope.
Value actAndDown(GraphEmitter &e, const LayerContext &l, Value gate, Value up) {
  const formats::ModelConfig &c = e.config;
  Value act;
  {
    bool tanhGelu = c.hiddenAct == "gelu_pytorch_tanh" ||
                    c.hiddenAct == "gelu_new" || c.hiddenAct == "gelu_fast";
    bool gelu = tanhGelu || c.hiddenAct == "gelu";
    GraphEmitter::Scope s(
        e, e.path(HfModule::ActFn, l.index),
        gelu ? (tanhGelu ? "PytorchGELUTanh" : "GELUActivation") : "SiLU");
    if (gelu)
      act = e.val<GeluOp>(gate, GeluApproximationAttr::get(
                                    e.ctx, tanhGelu ? GeluApproximation::tanh
                                                    : GeluApproximation::none));
    else
      act = e.val<SiluOp>(gate);
  }
  return e.linear(e.path(HfModule::DownProj, l.index), e.val<MulOp>(act, up),
                  c.hiddenSize, c.intermediateSize, c.mlpBias);
}

} // namespace

Value buildGatedMlp(GraphEmitter &e, const LayerContext &l, Value x) {
  const formats::ModelConfig &c = e.config;
  const int64_t D = c.hiddenSize, F = c.intermediateSize;
  GraphEmitter::Scope mlp(e, e.path(HfModule::Mlp, l.index), e.cls("MLP"));
  Value gate =
      e.linear(e.path(HfModule::GateProj, l.index), x, F, D, c.mlpBias);
  Value up = e.linear(e.path(HfModule::UpProj, l.index), x, F, D, c.mlpBias);
  return actAndDown(e, l, gate, up);
}

Value buildFusedGateUpMlp(GraphEmitter &e, const LayerContext &l, Value x) {
  const formats::ModelConfig &c = e.config;
  const int64_t D = c.hiddenSize, F = c.intermediateSize;
  GraphEmitter::Scope mlp(e, e.path(HfModule::Mlp, l.index), e.cls("MLP"));
  Value gu =
      e.linear(e.path(HfModule::GateUpProj, l.index), x, 2 * F, D, c.mlpBias);
  Value gate = e.slice(gu, -1, 0, F);
  Value up = e.slice(gu, -1, F, kEnd);
  return actAndDown(e, l, gate, up);
}

} // namespace etllm::import
