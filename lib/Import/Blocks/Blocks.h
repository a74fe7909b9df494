//===- Blocks.h - The block builders of the exported graph ------*- C++ -*-===//
//
// Private to lib/Import. Each block emits, op for op, what torch.export shows
// for one module of the Hugging Face modeling code: the rotary embedding, the
// causal masks, the token embedding, an attention, an MLP, a decoder layer,
// and the head (final norm, lm_head, soft-capping). The graph builder
// (GraphBuilder.cpp) calls them in model order; which attention, MLP and
// decoder-layer builder a family uses is its spec's `blocks` (etllm/Models/
// Family.h), resolved by selectBlocks().
//
// Adding a block variant (a type-2 family: MoE experts, MLA attention) is one
// enumerator in Family.h, its tensors in the catalogue (expectedTensors), one
// builder here with the signature of its kind, and one case in
// selectBlocks() — whose switches have no default, so the compiler names any
// enumerator left without a builder.
//
//===----------------------------------------------------------------------===//
#ifndef ETLLM_LIB_IMPORT_BLOCKS_BLOCKS_H
#define ETLLM_LIB_IMPORT_BLOCKS_BLOCKS_H

#include "../GraphEmitter.h"

namespace etllm::import {

/// cos/sin [1, S, rotary_dim] in the graph dtype.
struct RotaryTables {
  mlir::Value cos, sin;
};

/// Additive causal masks [1, 1, S, T] (`sliding` null when no layer slides).
struct Masks {
  mlir::Value full, sliding;
};

/// What the blocks of one decoder layer share.
struct LayerContext {
  int64_t index;
  /// "model.layers.<index>".
  std::string path;
  /// Positions of the new tokens [S] (the forward's second argument).
  mlir::Value positions;
  RotaryTables rotary;
  /// The mask this layer attends with.
  mlir::Value mask;
  /// Key-cache type [1, KV, T, D] and value-cache type (the same, except
  /// for MLA's expanded caches: [1, H, T, qk_nope + qk_rope] and
  /// [1, H, T, v_head_dim]).
  mlir::RankedTensorType cacheType, valueCacheType;
  /// RMSNorms compute x * (1 + w) (Gemma, unless the file already added 1).
  bool normAddsOne;
};

/// Builds one block from its input; returns its output.
using AttentionBuilder = mlir::Value (*)(GraphEmitter &, const LayerContext &,
                                         mlir::Value x);
using MlpBuilder = mlir::Value (*)(GraphEmitter &, const LayerContext &,
                                   mlir::Value x);
struct BlockSet;
using DecoderLayerBuilder = mlir::Value (*)(GraphEmitter &,
                                            const LayerContext &,
                                            const BlockSet &, mlir::Value h);

/// The builders a family's spec selects.
struct BlockSet {
  AttentionBuilder attention;
  MlpBuilder mlp;
  DecoderLayerBuilder decoderLayer;
};

/// The builders of `blocks` (Blocks.cpp).
BlockSet selectBlocks(const models::Blocks &blocks);

//===--- Model-level blocks -------------------------------------------===//

/// The family's RotaryEmbedding: cos/sin from the inverse frequencies of
/// the config for `positions` (Rotary.cpp).
RotaryTables buildRotary(GraphEmitter &e, mlir::Value positions,
                         bool local = false);
/// q * cos + rotate_half(q) * sin on the first rotary_dim dims (Rotary.cpp).
mlir::Value applyRope(GraphEmitter &e, mlir::Value x, mlir::Value cos,
                      mlir::Value sin);

/// The causal masks over a cache of `cacheLen` (Mask.cpp).
Masks buildMasks(GraphEmitter &e, mlir::Value positions, int64_t cacheLen,
                 bool bidirectional = false);

/// embed_tokens(tokens), scaled as the family says (Embedding.cpp).
mlir::Value buildEmbedding(GraphEmitter &e, mlir::Value tokens);

/// The final norm, lm_head and logits post-processing; `lastOnly` keeps the
/// last position (Head.cpp). The final norm runs in the "model" scope,
/// which the caller has entered.
mlir::Value buildFinalNorm(GraphEmitter &e, mlir::Value h, bool addOne);
mlir::Value buildLmHead(GraphEmitter &e, mlir::Value h, bool lastOnly);

/// A composite model's image features [1, image_seq_len, hidden_size] of
/// `pixels` [1, 3, image_size, image_size] (float32): the vision tower and
/// the projector (Vision.cpp).
mlir::Value buildVisionEncoder(GraphEmitter &e, mlir::Value pixels);

//===--- Decoder-layer blocks (selected by the spec) -------------------===//

/// q/k/v/o projections, per-head q/k norms when the family has them
/// (Attention.cpp).
mlir::Value buildSeparateAttention(GraphEmitter &e, const LayerContext &l,
                                   mlir::Value x);
/// One qkv_proj sliced into q, k, v (Attention.cpp).
mlir::Value buildFusedQkvAttention(GraphEmitter &e, const LayerContext &l,
                                   mlir::Value x);

/// The module paths of one gated MLP (an expert's, the shared expert's,
/// a layer's).
struct GatedMlpPaths {
  std::string gate, up, down, act;
};
/// down(act(gate(x)) * up(x)) with intermediate size F, in the caller's
/// scope (Mlp.cpp).
mlir::Value gatedMlp(GraphEmitter &e, const GatedMlpPaths &paths, mlir::Value x,
                     int64_t F, bool bias);

/// Multi-head latent attention (DeepSeek, Mla.cpp).
mlir::Value buildMlaAttention(GraphEmitter &e, const LayerContext &l,
                              mlir::Value x);

/// StaticCache.update: reads the layer's cache buffer `name` of `type`,
/// index_copy's `value` in at the positions (dim 2) and records the
/// write-back (Attention.cpp).
mlir::Value updateCache(GraphEmitter &e, const LayerContext &l,
                        const char *name, mlir::RankedTensorType type,
                        mlir::Value value);
/// eager_attention_forward on [1, H, S, Dq] q and [1, H, T, *] k/v: scale,
/// soft-cap, mask, softmax (float32), @ v (Attention.cpp).
mlir::Value eagerAttention(GraphEmitter &e, const LayerContext &l,
                           mlir::Value q, mlir::Value k, mlir::Value v);

/// gate/up/down projections with the config's activation (Mlp.cpp).
mlir::Value buildGatedMlp(GraphEmitter &e, const LayerContext &l,
                          mlir::Value x);
/// One gate_up_proj, first half the gate (Mlp.cpp).
mlir::Value buildFusedGateUpMlp(GraphEmitter &e, const LayerContext &l,
                                mlir::Value x);

/// The sparse mixture-of-experts block in the layers the family makes
/// sparse (the router, top-k routing, every routed expert as a masked loop,
/// the shared expert), the gated MLP in the others (Moe.cpp).
mlir::Value buildSparseMoe(GraphEmitter &e, const LayerContext &l,
                           mlir::Value x);

/// Residual + attention(norm), residual + mlp(norm) (DecoderLayer.cpp).
mlir::Value buildPreNormLayer(GraphEmitter &e, const LayerContext &l,
                              const BlockSet &blocks, mlir::Value h);
/// With post-attention and pre/post-feedforward norms (DecoderLayer.cpp).
mlir::Value buildSandwichLayer(GraphEmitter &e, const LayerContext &l,
                               const BlockSet &blocks, mlir::Value h);

} // namespace etllm::import

#endif // ETLLM_LIB_IMPORT_BLOCKS_BLOCKS_H
