//===- Attention.cpp - Attention blocks -----------------------------------===//
//
// <Family>Attention with a static cache, as torch.export shows it: the
// projections, the per-head view, q/k norms (Qwen3), RoPE, the functional
// cache update (index_copy into the k/v buffers, written back at the end),
// repeat_kv for GQA, and eager_attention_forward (scale, soft-cap, mask,
// softmax in float32), then o_proj. The blocks differ only in how q, k and v
// are projected. The cache update and eager_attention_forward are shared
// with the latent attention block (Mla.cpp).
//
//===----------------------------------------------------------------------===//
#include "Blocks.h"

using namespace mlir;
using namespace mlir::etllm;
using ::etllm::models::HfModule;

namespace etllm::import {

namespace {

/// repeat_kv: [1, Hkv, T, D] -> [1, H, T, D].
Value repeatKv(GraphEmitter &e, Value x, int64_t nRep) {
  if (nRep == 1)
    return x;
  auto t = cast<RankedTensorType>(x.getType());
  int64_t hkv = t.getDimSize(1), len = t.getDimSize(2), d = t.getDimSize(3);
  Value u = e.unsqueeze(x, 2);
  Value ex =
      e.val<ExpandOp>(u, e.b.getDenseI64ArrayAttr({1, hkv, nRep, len, d}));
  return e.reshape(ex, {1, hkv * nRep, len, d});
}

/// Everything after the projections: [1, S, H*D] q, [1, S, KV*D] k and v in,
/// the o_proj output out. Runs in the attention scope.
Value attend(GraphEmitter &e, const LayerContext &l, Value q, Value k,
             Value v) {
  const formats::ModelConfig &c = e.config;
  const int64_t D = c.hiddenSize, H = c.numHeads, Hkv = c.numKvHeads,
                Dh = c.headDim;
  q = e.reshape(q, {1, -1, H, Dh});
  k = e.reshape(k, {1, -1, Hkv, Dh});
  v = e.reshape(v, {1, -1, Hkv, Dh});
  if (e.family.traits.qkNorm) {
    // Gemma 3's are x * (1 + w) like its other norms; Qwen3's x * w.
    q = e.rmsNorm(e.path(HfModule::QNorm, l.index), q, Dh, l.normAddsOne);
    k = e.rmsNorm(e.path(HfModule::KNorm, l.index), k, Dh, l.normAddsOne);
  }
  q = e.transpose(q, 1, 2); // [1, H, S, Dh]
  k = e.transpose(k, 1, 2);
  v = e.transpose(v, 1, 2);
  Value cosU = e.unsqueeze(l.rotary.cos, 1),
        sinU = e.unsqueeze(l.rotary.sin, 1);
  q = applyRope(e, q, cosU, sinU);
  k = applyRope(e, k, cosU, sinU);

  int64_t nRep = H / Hkv;
  Value kAll = repeatKv(e, updateCache(e, l, "k_cache", l.cacheType, k), nRep);
  Value vAll =
      repeatKv(e, updateCache(e, l, "v_cache", l.valueCacheType, v), nRep);
  Value o = eagerAttention(e, l, q, kAll, vAll); // [1, H, S, Dh]
  o = e.reshape(e.transpose(o, 1, 2), {1, -1, H * Dh});
  return e.linear(e.path(HfModule::OProj, l.index), o, D, H * Dh, c.oProjBias);
}

} // namespace

Value updateCache(GraphEmitter &e, const LayerContext &l, const char *name,
                  RankedTensorType type, Value newVal) {
  // StaticCache.update: index_copy_ into the cache (functionalized).
  std::string sym = e.path(HfModule::Attention, l.index) + "." + name;
  Value cache = e.val<BufferReadOp>(type, FlatSymbolRefAttr::get(e.ctx, sym));
  Value updated =
      e.val<IndexCopyOp>(cache, e.b.getI64IntegerAttr(2), l.positions, newVal);
  e.cacheWrites.push_back({sym, updated});
  return updated;
}

Value eagerAttention(GraphEmitter &e, const LayerContext &l, Value q,
                     Value kAll, Value vAll) {
  const formats::ModelConfig &c = e.config;
  auto &b = e.b;
  Type f32 = b.getF32Type();
  Value scores = e.val<MatmulOp>(q, e.transpose(kAll, 2, 3));
  scores = e.val<MulOp>(scores, e.scalar(c.attentionScale(), e.dtype));
  if (c.attnLogitSoftcapping > 0) {
    Value cap = e.scalar(c.attnLogitSoftcapping, e.dtype);
    scores = e.val<MulOp>(e.val<TanhOp>(e.val<DivOp>(scores, cap)), cap);
  }
  scores = e.val<AddOp>(scores, l.mask);
  Value sf =
      e.dtype == f32
          ? scores
          : e.val<ConvertOp>(
                cast<RankedTensorType>(scores.getType()).clone(f32), scores);
  Value probs = e.val<SoftmaxOp>(sf, b.getI64IntegerAttr(-1));
  if (e.dtype != f32)
    probs = e.val<ConvertOp>(
        cast<RankedTensorType>(probs.getType()).clone(e.dtype), probs);
  return e.val<MatmulOp>(probs, vAll);
}

Value buildSeparateAttention(GraphEmitter &e, const LayerContext &l, Value x) {
  const formats::ModelConfig &c = e.config;
  const int64_t D = c.hiddenSize, H = c.numHeads, Hkv = c.numKvHeads,
                Dh = c.headDim;
  GraphEmitter::Scope attn(e, e.path(HfModule::Attention, l.index),
                           e.cls("Attention"));
  Value q =
      e.linear(e.path(HfModule::QProj, l.index), x, H * Dh, D, c.attentionBias);
  Value k = e.linear(e.path(HfModule::KProj, l.index), x, Hkv * Dh, D,
                     c.attentionBias);
  Value v = e.linear(e.path(HfModule::VProj, l.index), x, Hkv * Dh, D,
                     c.attentionBias);
  return attend(e, l, q, k, v);
}

Value buildFusedQkvAttention(GraphEmitter &e, const LayerContext &l, Value x) {
  const formats::ModelConfig &c = e.config;
  const int64_t D = c.hiddenSize, H = c.numHeads, Hkv = c.numKvHeads,
                Dh = c.headDim;
  GraphEmitter::Scope attn(e, e.path(HfModule::Attention, l.index),
                           e.cls("Attention"));
  Value qkv = e.linear(e.path(HfModule::QkvProj, l.index), x,
                       (H + 2 * Hkv) * Dh, D, c.attentionBias);
  Value q = e.slice(qkv, -1, 0, H * Dh);
  Value k = e.slice(qkv, -1, H * Dh, (H + Hkv) * Dh);
  Value v = e.slice(qkv, -1, (H + Hkv) * Dh, kEnd);
  return attend(e, l, q, k, v);
}

} // namespace etllm::import
