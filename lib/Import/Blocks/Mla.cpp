//===- Mla.cpp - Multi-head latent attention (DeepSeek-V2/V3) -------------===//
//
// DeepseekV2Attention / DeepseekV3Attention with a static cache, as
// torch.export shows DeepSeek's modeling code (modeling_deepseek.py of the
// DeepSeek-V2 repos; transformers' modeling_deepseek_v3.py with
// rope_interleave):
//
//   q       = q_proj(x) | q_b_proj(q_a_layernorm(q_a_proj(x)))
//   q       = q.view(1, S, H, nope + rope).transpose(1, 2)
//   q_nope, q_pe = split(q, [nope, rope])
//   kv      = kv_a_proj_with_mqa(x)                     # [1, S, lat + rope]
//   c, k_pe = split(kv, [lat, rope])                    # latent, shared key
//   kv      = kv_b_proj(kv_a_layernorm(c)).view(1, S, H, nope + v)
//   k_nope, v = split(kv.transpose(1, 2), [nope, v])
//   q_pe, k_pe = RoPE on the rope parts, each first permuted from DeepSeek's
//                interleaved pairs to halves (view(.., d/2, 2).transpose),
//                then rotate_half
//   q = cat(q_nope, q_pe); k = cat(k_nope, k_pe.expand(H))
//   StaticCache: k [1, H, T, nope + rope], v [1, H, T, v]
//   eager attention (softmax_scale with YaRN's mscale^2), o_proj
//
// The latent norms are DeepseekV2RMSNorm(rank) with the class's default eps
// (1e-6), not rms_norm_eps. The cache holds the expanded keys and values,
// as the modeling code's StaticCache does.
//
//===----------------------------------------------------------------------===//
#include "Blocks.h"

using namespace mlir;
using namespace mlir::etllm;
using ::etllm::models::HfModule;

namespace etllm::import {

namespace {

/// DeepseekV2RMSNorm(hidden_size, eps=1e-6): q_a_layernorm and
/// kv_a_layernorm are built without the config's rms_norm_eps.
constexpr double kLatentNormEps = 1e-6;

/// Splits the last dimension of x into [a, b] (torch.split).
std::pair<Value, Value> splitLast(GraphEmitter &e, Value x, int64_t a,
                                  int64_t b) {
  auto t = cast<RankedTensorType>(x.getType());
  SmallVector<int64_t> sa(t.getShape()), sb(t.getShape());
  sa.back() = a;
  sb.back() = b;
  auto split = e.op<SplitOp>(TypeRange{t.clone(sa), t.clone(sb)}, x,
                             e.b.getI64IntegerAttr(t.getRank() - 1),
                             e.b.getDenseI64ArrayAttr({a, b}));
  return {split.getResult(0), split.getResult(1)};
}

/// DeepSeek's apply_rotary_pos_emb on a [1, heads, S, rope] tensor: the
/// interleaved pairs to halves, then x * cos + rotate_half(x) * sin.
Value ropeInterleaved(GraphEmitter &e, Value x, Value cos, Value sin) {
  auto t = cast<RankedTensorType>(x.getType());
  const int64_t h = t.getDimSize(1), d = t.getDimSize(3);
  Value pairs = e.reshape(x, {1, h, -1, d / 2, 2});
  Value halves = e.reshape(e.transpose(pairs, 4, 3), {1, h, -1, d});
  return applyRope(e, halves, cos, sin);
}

} // namespace

Value buildMlaAttention(GraphEmitter &e, const LayerContext &l, Value x) {
  const formats::ModelConfig &c = e.config;
  const int64_t D = c.hiddenSize, H = c.numHeads, nope = c.qkNopeHeadDim,
                rope = c.headDim, vDim = c.vHeadDim, lat = c.kvLoraRank,
                qk = c.qkHeadDim();
  GraphEmitter::Scope attn(e, e.path(HfModule::Attention, l.index),
                           e.cls("Attention"));
  Value q;
  if (c.qLoraRank == 0) {
    q = e.linear(e.path(HfModule::QProj, l.index), x, H * qk, D, false);
  } else {
    Value qa =
        e.linear(e.path(HfModule::QAProj, l.index), x, c.qLoraRank, D, false);
    qa = e.rmsNorm(e.path(HfModule::QALayerNorm, l.index), qa, c.qLoraRank,
                   false, kLatentNormEps);
    q = e.linear(e.path(HfModule::QBProj, l.index), qa, H * qk, c.qLoraRank,
                 false);
  }
  q = e.transpose(e.reshape(q, {1, -1, H, qk}), 1, 2); // [1, H, S, qk]
  auto [qNope, qPe] = splitLast(e, q, nope, rope);

  Value compressed = e.linear(e.path(HfModule::KvAProjWithMqa, l.index), x,
                              lat + rope, D, false);
  auto [latent, kPe] = splitLast(e, compressed, lat, rope);
  Value kv = e.linear(e.path(HfModule::KvBProj, l.index),
                      e.rmsNorm(e.path(HfModule::KvALayerNorm, l.index), latent,
                                lat, false, kLatentNormEps),
                      H * (nope + vDim), lat, false);
  kv = e.transpose(e.reshape(kv, {1, -1, H, nope + vDim}), 1, 2);
  auto [kNope, v] = splitLast(e, kv, nope, vDim);
  kPe = e.reshape(kPe, {1, 1, -1, rope}); // k_pe.view(b, 1, s, rope)

  Value cosU = e.unsqueeze(l.rotary.cos, 1),
        sinU = e.unsqueeze(l.rotary.sin, 1);
  qPe = ropeInterleaved(e, qPe, cosU, sinU);
  kPe = ropeInterleaved(e, kPe, cosU, sinU);
  kPe = e.val<ExpandOp>(kPe, e.b.getDenseI64ArrayAttr({1, H, -1, -1}));
  Value query = e.val<CatOp>(ValueRange{qNope, qPe}, e.b.getI64IntegerAttr(-1));
  Value key = e.val<CatOp>(ValueRange{kNope, kPe}, e.b.getI64IntegerAttr(-1));

  Value kAll = updateCache(e, l, "k_cache", l.cacheType, key);
  Value vAll = updateCache(e, l, "v_cache", l.valueCacheType, v);
  Value o = eagerAttention(e, l, query, kAll, vAll); // [1, H, S, v]
  o = e.reshape(e.transpose(o, 1, 2), {1, -1, H * vDim});
  return e.linear(e.path(HfModule::OProj, l.index), o, D, H * vDim, false);
}

} // namespace etllm::import
