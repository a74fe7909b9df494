//===- DecoderLayer.cpp - Decoder-layer blocks ----------------------------===//
//
// <Family>DecoderLayer: how norms, the attention and MLP blocks, and the
// residual adds are wired.
//
//===----------------------------------------------------------------------===//
#include "Blocks.h"

using namespace mlir;
using namespace mlir::etllm;
using ::etllm::models::HfModule;

namespace etllm::import {

namespace {
/// residual + branch, the branch first scaled by the config's residual
/// multiplier (Granite: `residual + hidden_states * residual_multiplier`).
Value addResidual(GraphEmitter &e, Value residual, Value branch) {
  double m = e.config.residualMultiplier;
  if (m != 1.0)
    branch = e.val<MulOp>(branch, e.scalar(m, e.dtype));
  return e.val<AddOp>(residual, branch);
}
} // namespace

Value buildPreNormLayer(GraphEmitter &e, const LayerContext &l,
                        const BlockSet &blocks, Value h) {
  const int64_t D = e.config.hiddenSize;
  GraphEmitter::Scope layer(e, l.path, e.cls("DecoderLayer"));
  Value residual = h;
  Value x =
      e.rmsNorm(e.path(HfModule::InputNorm, l.index), h, D, l.normAddsOne);
  h = addResidual(e, residual, blocks.attention(e, l, x));
  residual = h;
  x = e.rmsNorm(e.path(HfModule::PostAttentionNorm, l.index), h, D,
                l.normAddsOne);
  return addResidual(e, residual, blocks.mlp(e, l, x));
}

Value buildSandwichLayer(GraphEmitter &e, const LayerContext &l,
                         const BlockSet &blocks, Value h) {
  const int64_t D = e.config.hiddenSize;
  GraphEmitter::Scope layer(e, l.path, e.cls("DecoderLayer"));
  Value residual = h;
  Value x =
      e.rmsNorm(e.path(HfModule::InputNorm, l.index), h, D, l.normAddsOne);
  Value attnOut = blocks.attention(e, l, x);
  attnOut = e.rmsNorm(e.path(HfModule::PostAttentionNorm, l.index), attnOut, D,
                      l.normAddsOne);
  h = addResidual(e, residual, attnOut);
  residual = h;
  x = e.rmsNorm(e.path(HfModule::PreFeedforwardNorm, l.index), h, D,
                l.normAddsOne);
  Value mlpOut = blocks.mlp(e, l, x);
  mlpOut = e.rmsNorm(e.path(HfModule::PostFeedforwardNorm, l.index), mlpOut, D,
                     l.normAddsOne);
  return addResidual(e, residual, mlpOut);
}

} // namespace etllm::import
