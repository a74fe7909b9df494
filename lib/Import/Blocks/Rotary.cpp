//===- Rotary.cpp - The rotary embedding and its application --------------===//
//
// <Family>RotaryEmbedding: cos/sin [1, S, rotary_dim] from the config's
// inverse frequencies (with its rope scaling) for the input positions (the
// sliding-window layers' own, "rotary_emb_local", from ropeLocalTheta
// without scaling, when the family has one: Gemma 3); and
// apply_rotary_pos_emb with rotate_half, on the first rotary_dim dimensions
// of a head (partial rotary keeps the rest).
//
//===----------------------------------------------------------------------===//
#include "Blocks.h"

using namespace mlir;
using namespace mlir::etllm;

namespace etllm::import {

RotaryTables buildRotary(GraphEmitter &e, Value inputPos, bool local) {
  auto &b = e.b;
  Type f32 = b.getF32Type();
  const int64_t dyn = ShapedType::kDynamic;
  GraphEmitter::Scope s(e,
                        e.path(local ? models::HfModule::RotaryLocal
                                     : models::HfModule::Rotary),
                        e.cls("RotaryEmbedding"));
  // transformers' Gemma3 builds the local one from a copy of the config
  // with rope_theta = rope_local_base_freq and default rope scaling.
  formats::ModelConfig localConfig = e.config;
  if (local) {
    localConfig.ropeTheta = e.config.ropeLocalTheta;
    localConfig.ropeScaling = formats::RopeScaling();
  }
  const formats::ModelConfig &rc = local ? localConfig : e.config;
  std::vector<double> invFreq = formats::ropeInverseFrequencies(rc);
  std::vector<float> invFreqF(invFreq.begin(), invFreq.end());
  int64_t R = invFreqF.size();
  Value freqConst = e.val<ConstantOp>(DenseElementsAttr::get(
      e.tensorType({R}, f32), ArrayRef<float>(invFreqF)));
  Value invExp = e.reshape(freqConst, {1, R, 1});
  Value posF = e.val<ConvertOp>(e.tensorType({dyn}, f32), inputPos);
  Value posExp = e.reshape(posF, {1, 1, -1});
  Value freqs = e.transpose(e.val<MatmulOp>(invExp, posExp), 1, 2); // [1,S,R]
  Value emb = e.val<CatOp>(ValueRange{freqs, freqs}, b.getI64IntegerAttr(-1));
  RotaryTables t;
  t.cos = e.val<CosOp>(emb);
  t.sin = e.val<SinOp>(emb);
  if (double scaling = rc.ropeAttentionFactor(); scaling != 1.0) {
    // cos = emb.cos() * self.attention_scaling (YaRN's mscale ratio).
    t.cos = e.val<MulOp>(t.cos, e.scalar(scaling, f32));
    t.sin = e.val<MulOp>(t.sin, e.scalar(scaling, f32));
  }
  auto ct = cast<RankedTensorType>(t.cos.getType());
  if (e.dtype != f32) {
    t.cos = e.val<ConvertOp>(ct.clone(e.dtype), t.cos);
    t.sin = e.val<ConvertOp>(ct.clone(e.dtype), t.sin);
  }
  return t;
}

namespace {
/// HF rotate_half: cat(-x2, x1) on the last dimension.
Value rotateHalf(GraphEmitter &e, Value x) {
  int64_t d = cast<RankedTensorType>(x.getType()).getShape().back();
  Value x1 = e.slice(x, -1, 0, d / 2);
  Value x2 = e.slice(x, -1, d / 2, kEnd);
  return e.val<CatOp>(ValueRange{e.val<NegOp>(x2), x1},
                      e.b.getI64IntegerAttr(-1));
}
} // namespace

Value applyRope(GraphEmitter &e, Value x, Value cos, Value sin) {
  auto xt = cast<RankedTensorType>(x.getType());
  int64_t headDim = xt.getShape().back();
  int64_t rd = e.config.rotaryDim();
  Value xr = rd == headDim ? x : e.slice(x, -1, 0, rd);
  Value rot =
      e.val<AddOp>(e.val<MulOp>(xr, cos), e.val<MulOp>(rotateHalf(e, xr), sin));
  if (rd == headDim)
    return rot;
  Value pass = e.slice(x, -1, rd, kEnd);
  return e.val<CatOp>(ValueRange{rot, pass}, e.b.getI64IntegerAttr(-1));
}

} // namespace etllm::import
