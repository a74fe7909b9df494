//===- EtllmFusedOps.td - level B: fused ops ---------------*- tablegen -*-===//
//
// Part of EtllmOps.td, which includes it in place (the order of the ops
// is the order of ops.def and of the op reference); not included
// anywhere else.
//
//===----------------------------------------------------------------------===//
#ifndef ETLLM_DIALECT_ETLLM_FUSEDOPS_TD
#define ETLLM_DIALECT_ETLLM_FUSEDOPS_TD

//===----------------------------------------------------------------------===//
// Level B: fused, device-friendly ops
//===----------------------------------------------------------------------===//

def Etllm_RmsNormOp : Etllm_Op<"rms_norm",
    [Pure, InferTypeOpAdaptorWithIsCompatible,
     Etllm_Kernel<"rms_norm", [],
                  [Etllm_Float<"eps">, Etllm_Float<"weight_offset">]>,
     Etllm_NonNegative<"eps">, Etllm_Finite<"weight_offset">]> {
  let summary = "RMSNorm over the last dimension";
  let description = [{
    `y = x * rsqrt(mean(x^2, -1) + eps) * (weight + weight_offset)`, with the
    statistics in float32. `weight_offset = 1.0` is Gemma's `(1 + w)`.

    ```mlir
    %y = etllm.rms_norm %x, %w eps 1.0e-05 : (tensor<1x?x64xf32>, tensor<64xf32>)
        -> tensor<1x?x64xf32>
    ```
  }];
  let arguments = (ins Etllm_FloatTensor:$input,
                       Optional<Etllm_FloatTensor>:$weight, F64Attr:$eps,
                       DefaultValuedAttr<F64Attr, "0.0">:$weight_offset);
  let results = (outs Etllm_FloatTensor:$result);
  let assemblyFormat = "$input (`,` $weight^)? `eps` $eps "
                       "(`offset` $weight_offset^)? attr-dict `:` "
                       "functional-type(operands, results)";
}

def Etllm_LayerNormOp : Etllm_Op<"layer_norm",
    [Pure, AttrSizedOperandSegments, InferTypeOpAdaptorWithIsCompatible,
     Etllm_Kernel<"layer_norm", [Etllm_Has<"weight">, Etllm_Has<"bias">],
                  [Etllm_Float<"eps">]>,
     Etllm_NonNegative<"eps">]> {
  let summary = "LayerNorm over the last dimension";
  let description = [{
    `y = (x - mean) * rsqrt(var + eps) * weight + bias`, statistics in
    float32; weight and bias optional.

    ```mlir
    %y = etllm.layer_norm %x weight %w bias %b eps 1.0e-05
        : (tensor<1x?x64xf32>, tensor<64xf32>, tensor<64xf32>) -> tensor<1x?x64xf32>
    ```
  }];
  let arguments = (ins Etllm_FloatTensor:$input,
                       Optional<Etllm_FloatTensor>:$weight,
                       Optional<Etllm_FloatTensor>:$bias, F64Attr:$eps);
  let results = (outs Etllm_FloatTensor:$result);
  let assemblyFormat = "$input (`weight` $weight^)? (`bias` $bias^)? `eps` $eps "
                       "attr-dict `:` functional-type(operands, results)";
}

def Etllm_RopeOp : Etllm_Op<"rope", [Pure, InferTypeOpAdaptorWithIsCompatible,
    Etllm_Kernel<"rope", [Etllm_Enum<"convention">],
                 [Etllm_Float<"attention_scaling">]>,
    Etllm_Finite<"attention_scaling">, Etllm_Rank<"input", 4>,
    Etllm_Rank<"positions", 1>, Etllm_Rank<"inv_freq", 1>]> {
  let summary = "rotary position embedding";
  let description = [{
    Rotates the first `2 * len(inv_freq)` entries of the last dimension of
    `input` ([batch, heads, seq, head_dim]) by the angles
    `positions[s] * inv_freq[i]`, pairing dimensions as `convention` says
    (rotate_half: i with i + r/2; interleaved: 2i with 2i + 1;
    deinterleave_rotate_half: input 2i with 2i + 1, the rotated pair written
    to i and i + r/2, as DeepSeek's `view(.., r/2, 2).transpose` followed by
    rotate_half computes it); the rest of the head passes through (partial
    rotary). Scaling schemes that change
    frequencies (linear, llama3) are baked into `inv_freq`;
    `attention_scaling` multiplies cos and sin (YaRN-style).

    ```mlir
    %q2 = etllm.rope %q, %pos, %inv_freq convention <rotate_half>
        : (tensor<1x8x?x8xf32>, tensor<?xi64>, tensor<4xf32>) -> tensor<1x8x?x8xf32>
    ```
  }];
  let arguments = (ins Etllm_FloatTensor:$input, Etllm_IndexTensor:$positions,
                       Etllm_TensorOf<[F32]>:$inv_freq,
                       Etllm_RopeConventionAttr:$convention,
                       DefaultValuedAttr<F64Attr, "1.0">:$attention_scaling);
  let results = (outs Etllm_FloatTensor:$result);
  let assemblyFormat = "$input `,` $positions `,` $inv_freq `convention` "
                       "$convention (`scaling` $attention_scaling^)? attr-dict "
                       "`:` functional-type(operands, results)";
}

def Etllm_SdpaOp : Etllm_Op<"sdpa",
    [Pure, AttrSizedOperandSegments, InferTypeOpAdaptorWithIsCompatible,
     Etllm_Kernel<"sdpa", [Etllm_Has<"mask">, Etllm_Has<"positions">,
                           Etllm_Flag<"causal">, Etllm_Int<"sliding_window">],
                  [Etllm_Float<"scale">, Etllm_Float<"softcap">]>,
     Etllm_Min<"sliding_window", 0>, Etllm_Finite<"scale">,
     Etllm_NonNegative<"softcap">, Etllm_Rank<"query", 4>,
     Etllm_Rank<"key", 4>, Etllm_Rank<"value", 4>]> {
  let summary = "scaled dot-product attention (with GQA)";
  let description = [{
    `softmax(softcap(q k^T * scale) + mask) v`, per head, in float32.
    `query` is [B, H, S, D], `key`/`value` [B, Hkv, T, D] with H a multiple
    of Hkv (grouped-query attention: query head h reads kv head
    h / (H / Hkv)). The result is [B, H, S, Dv].

    Masking: `mask` is an additive float mask broadcastable to
    [B, H, S, T]. `causal` lets query i see keys j <= positions[i] (or
    j <= i without `positions`); with `sliding_window` W > 0 also
    j > positions[i] - W. `softcap` > 0 applies `tanh(s / c) * c` to the
    scaled scores (Gemma 2).

    `key` and `value` may both be quantized KV caches
    (`!etllm.qact<[B, Hkv, T, D], i8, per_token, sym>`,
    `etllm-quantize-kv-cache`): each row is read as `scale * q` (its own
    scale per token and head), in float32.

    ```mlir
    %o = etllm.sdpa %q, %k, %v positions %pos causal scale 0.35355339059327373
        : (tensor<1x8x?x8xf32>, tensor<1x4x512x8xf32>, tensor<1x4x512x8xf32>,
           tensor<?xi64>) -> tensor<1x8x?x8xf32>
    ```
  }];
  let arguments = (ins Etllm_FloatTensor:$query, Etllm_KvType:$key,
                       Etllm_KvType:$value,
                       Optional<Etllm_FloatTensor>:$mask,
                       Optional<Etllm_IndexTensor>:$positions,
                       F64Attr:$scale, UnitAttr:$causal,
                       DefaultValuedAttr<Etllm_I64Attr, "0">:$sliding_window,
                       DefaultValuedAttr<F64Attr, "0.0">:$softcap);
  let results = (outs Etllm_FloatTensor:$result);
  let assemblyFormat = "$query `,` $key `,` $value (`mask` $mask^)? "
                       "(`positions` $positions^)? (`causal` $causal^)? "
                       "(`window` $sliding_window^)? (`softcap` $softcap^)? "
                       "`scale` $scale attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def Etllm_KvCacheUpdateOp : Etllm_Op<"kv_cache.update",
    [InferTypeOpAdaptorWithIsCompatible,
     Etllm_Kernel<"kv_cache_update", [Etllm_Int<"dim">]>,
     Etllm_Axis<"dim", "cache">,
     Etllm_SameElementType<["cache", "result"]>,
     DeclareOpInterfaceMethods<Etllm_TiedOpInterface>,
     MemoryEffects<[MemRead<Etllm_BufferResource>,
                    MemWrite<Etllm_BufferResource>]>]> {
  let summary = "in-place update of a KV cache";
  let description = [{
    Writes `value` ([B, Hkv, S, D]) into `cache` ([B, Hkv, T, D]) at
    sequence positions `positions` (along `dim`, default 2) and returns the
    cache. The result is tied to the `cache` operand: it is the same storage,
    updated in place (when the cache comes from `etllm.buffer.read`, the
    buffer itself). The cache operand must have no other use, so no one can
    observe the old value. A decode step writes only the new token's bytes.

    ```mlir
    %k2 = etllm.kv_cache.update %k[%pos], %new
        : (tensor<1x4x512x8xf32>, tensor<?xi64>, tensor<1x4x?x8xf32>) -> tensor<1x4x512x8xf32>
    ```

    `value` has the cache's element type, except that a quantized cache
    (`!etllm.qact<[B, Hkv, T, D], i8, per_token, sym>`, `dim` 2) takes float
    values: each row written (one token of one head) is quantized on its
    own, `scale = max|x| / 127` (1 for an all-zero row),
    `q = round_half_even(x / scale)` in [-127, 127], the bytes
    `etllm.quantize_dynamic` gives a per-token symmetric activation.

    ```mlir
    %k2 = etllm.kv_cache.update %k[%pos], %new
        : (!etllm.qact<1x4x512x8, i8, per_token, sym>, tensor<?xi64>,
           tensor<1x4x?x8xf32>) -> !etllm.qact<1x4x512x8, i8, per_token, sym>
    ```
  }];
  let arguments = (ins Etllm_BufferType:$cache, Etllm_IndexTensor:$positions,
                       Etllm_AnyTensor:$value,
                       DefaultValuedAttr<Etllm_I64Attr, "2">:$dim);
  let results = (outs Etllm_BufferType:$result);
  let assemblyFormat = "$cache `[` $positions `]` `,` $value "
                       "(`dim` $dim^)? attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}


def Etllm_KvRingSlotsOp : Etllm_Op<"kv_ring.slots",
    [Pure, SameOperandsAndResultType,
     Etllm_Kernel<"kv_ring_slots", [Etllm_Int<"sinks">, Etllm_Int<"size">]>,
     Etllm_Min<"sinks", 0>, Etllm_Min<"size", 1>,
     Etllm_Rank<"positions", 1>]> {
  let summary = "the slots of a ring KV cache that positions are written to";
  let description = [{
    A ring cache of `size` slots keeps positions 0 .. `sinks` - 1 in the
    first `sinks` slots for good (attention sinks) and every later position
    p in slot `sinks + (p - sinks) mod (size - sinks)`: the newest position
    overwrites the oldest one of the ring. The result gives each position
    its slot, to index `etllm.kv_cache.update` (`etllm-kv-ring`). A position
    must not be negative.

    ```mlir
    %slots = etllm.kv_ring.slots %pos sinks 4 size 68 : tensor<?xi64>
    %k2 = etllm.kv_cache.update %k[%slots], %new : ...
    ```
  }];
  let arguments = (ins Etllm_IndexTensor:$positions, Etllm_I64Attr:$sinks,
                       Etllm_I64Attr:$size);
  let results = (outs Etllm_IndexTensor:$result);
  let assemblyFormat = "$positions `sinks` $sinks `size` $size attr-dict `:` "
                       "type($positions)";
  let hasVerifier = 1;
}

def Etllm_KvRingMaskOp : Etllm_Op<"kv_ring.mask",
    [Pure,
     Etllm_Kernel<"kv_ring_mask", [Etllm_Int<"sinks">, Etllm_Int<"size">,
                                   Etllm_Int<"window">]>,
     Etllm_Min<"sinks", 0>, Etllm_Min<"size", 1>, Etllm_Min<"window", 0>,
     Etllm_Rank<"positions", 1>, Etllm_Rank<"result", 4>]> {
  let summary = "the attention mask over a ring KV cache";
  let description = [{
    The additive mask `etllm.sdpa` takes over a ring cache of `size` slots
    (`etllm.kv_ring.slots`) once one call's positions p0, p0 + 1, ..., pL
    (ascending by one; a call carries at most `size - sinks - window + 1`
    of them, so that no query's window has been overwritten) are written.
    Sink slot j < `sinks` holds position j; ring slot j holds the newest
    position q(j) <= pL that maps to it, `pL - ((pL - j) mod (size -
    sinks))`, and nothing while q(j) < `sinks`. Query i (position p) sees
    slot j (0, else -inf) when the slot holds a position q <= p and either
    j < `sinks` or `window` = 0 or q > p - `window`. The result is
    [1, 1, number of positions, size], f32.

    ```mlir
    %m = etllm.kv_ring.mask %pos sinks 0 size 64 window 64
        : (tensor<?xi64>) -> tensor<1x1x?x64xf32>
    %o = etllm.sdpa %q, %k2, %v2 mask %m scale 0.125 : ...
    ```
  }];
  let arguments = (ins Etllm_IndexTensor:$positions, Etllm_I64Attr:$sinks,
                       Etllm_I64Attr:$size, Etllm_I64Attr:$window);
  let results = (outs Etllm_TensorOf<[F32]>:$result);
  let assemblyFormat = "$positions `sinks` $sinks `size` $size `window` "
                       "$window attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def Etllm_MoeOp : Etllm_Op<"moe", [Pure, AllTypesMatch<["input", "result"]>,
    Etllm_Kernel<"moe", [Etllm_Int<"top_k">, Etllm_Enum<"scoring">,
                         Etllm_Enum<"topk_method">, Etllm_Int<"n_group">,
                         Etllm_Int<"topk_group">, Etllm_Flag<"norm_topk_prob">,
                         Etllm_Has<"score_bias">],
                 [Etllm_Float<"routed_scaling_factor">,
                  Etllm_Float<"norm_eps">]>,
    Etllm_Min<"top_k", 1>, Etllm_Min<"n_group", 1>, Etllm_Min<"topk_group", 1>,
    Etllm_NonNegative<"routed_scaling_factor">, Etllm_NonNegative<"norm_eps">,
    Etllm_MinRank<"input", 1>, Etllm_Rank<"router", 2>, Etllm_Rank<"gate", 3>,
    Etllm_Rank<"up", 3>, Etllm_Rank<"down", 3>, Etllm_Rank<"score_bias", 1>]> {
  let summary = "a mixture-of-experts MLP: router, routing, stacked experts";
  let description = [{
    The routed part of a sparse MoE block, for each token x (a row of
    `input` [..., D]):

    1. `logits = x router^T` (`router` [E, D]) in float32;
    2. `scores = softmax(logits)` or `sigmoid(logits)` (`scoring`);
    3. the `top_k` experts by `choice = scores + score_bias` (`score_bias`
       [E] when present, else the scores): `greedy` over all E; with
       `n_group` > 1 the E experts form `n_group` groups of consecutive
       experts, the `topk_group` groups ranked best are kept and the others
       count as 0 — ranked by their best choice (`group_limited_greedy`,
       DeepSeek-V2) or by the sum of their two best (`noaux_tc`,
       DeepSeek-V3). Order and ties as `etllm.topk` (largest first, the
       lower index first among equals);
    4. the weights: the selected experts' unbiased scores, divided by their
       sum (+ `norm_eps`) with `norm_topk_prob`, times
       `routed_scaling_factor`, rounded to the input's element type;
    5. `y = sum_e w_e * down[e](silu(gate[e] x) * up[e] x)` over the
       selected experts in ascending expert order, accumulated from 0 in
       float32.

    `gate` and `up` are [E, F, D], `down` [E, D, F]: every expert's
    projection stacked, float or `!etllm.qweight` (grouped along the last
    dimension). Only the selected experts are computed, so a decode step
    reads only their weights. This is exactly the level-A masked loop over
    every expert (`lib/Import/Blocks/Moe.cpp`), where an unselected expert
    is multiplied by 0. The router is never quantized (it has no
    `!etllm.qweight` form). A shared expert is not part of the op: it is
    an ordinary MLP beside it.

    ```mlir
    %y = etllm.moe %x, %router, %gate, %up, %down top_k 2 scoring <softmax>
        norm_topk_prob
        : (tensor<?x64xf32>, tensor<8x64xf32>, tensor<8x32x64xf32>,
           tensor<8x32x64xf32>, tensor<8x64x32xf32>) -> tensor<?x64xf32>
    ```
  }];
  let arguments = (ins
    Etllm_FloatTensor:$input,
    Etllm_FloatTensor:$router,
    AnyTypeOf<[Etllm_FloatTensor, Etllm_QWeight]>:$gate,
    AnyTypeOf<[Etllm_FloatTensor, Etllm_QWeight]>:$up,
    AnyTypeOf<[Etllm_FloatTensor, Etllm_QWeight]>:$down,
    Optional<Etllm_TensorOf<[F32]>>:$score_bias,
    Etllm_I64Attr:$top_k,
    Etllm_RouterScoringAttr:$scoring,
    DefaultValuedAttr<Etllm_RouterSelectionAttr,
                      "::mlir::etllm::RouterSelection::greedy">:$topk_method,
    DefaultValuedAttr<Etllm_I64Attr, "1">:$n_group,
    DefaultValuedAttr<Etllm_I64Attr, "1">:$topk_group,
    UnitAttr:$norm_topk_prob,
    DefaultValuedAttr<F64Attr, "1.0">:$routed_scaling_factor,
    DefaultValuedAttr<F64Attr, "0.0">:$norm_eps
  );
  let results = (outs Etllm_FloatTensor:$result);
  let assemblyFormat = [{
    $input `,` $router `,` $gate `,` $up `,` $down (`bias` $score_bias^)?
    `top_k` $top_k `scoring` $scoring (`method` $topk_method^)?
    (`groups` $n_group^)? (`topk_group` $topk_group^)?
    (`norm_topk_prob` $norm_topk_prob^)? (`norm_eps` $norm_eps^)?
    (`scale` $routed_scaling_factor^)?
    attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

#endif // ETLLM_DIALECT_ETLLM_FUSEDOPS_TD
