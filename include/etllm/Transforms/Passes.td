//===- Passes.td - etllm passes ----------------------------*- tablegen -*-===//
#ifndef ETLLM_TRANSFORMS_PASSES_TD
#define ETLLM_TRANSFORMS_PASSES_TD

include "mlir/Pass/PassBase.td"

def SwapSourcePass : Pass<"etllm-swap-source", "mlir::ModuleOp"> {
  let summary = "Replace whole modules (by class) with fused ops";
  let description = [{
    Module-level source swap, as ExecuTorch's source transforms do before
    export, but on the exported graph: for every module instance whose class
    has a registered replacement (the `etllm.module` attributes and the
    `etllm.module_classes` table say which ops came from which instance), the
    instance's ops are replaced by the fused form built from the instance's
    interface (its inputs, parameters and buffers) and the model
    configuration (`etllm.model_config`):

    * `*RMSNorm` -> `etllm.rms_norm` (the `(1 + w)` form of Gemma becomes
      `offset 1.0`, found from the instance's ops);
    * `*Attention` (every family's: LlamaAttention, Gemma2Attention, ...) ->
      `etllm.rope` on q and k, `etllm.kv_cache.update` on the caches and one
      `etllm.sdpa` (causal over the input positions, GQA, sliding window,
      soft-capping kept), with the projections untouched;
    * with `mla-cache=latent`, a multi-head latent attention (DeepSeek's
      `*Attention` with `kv_lora_rank` > 0) -> a latent cache of
      `kv_lora_rank + qk_rope_head_dim` values per token (the normalized
      latent and the rotated shared key, one `etllm.kv_cache.update`) and
      the absorbed form: `q_nope` multiplied through `kv_b_proj`'s key half,
      one `etllm.sdpa` over the latent cache as a single key/value head, the
      output multiplied through the value half, then `o_proj`; DeepSeek's
      decoupled RoPE on the rope parts (de-interleaved, then rotate_half)
      becomes `etllm.rope` with the `deinterleave_rotate_half` convention
      (a near miss stays decomposed, with a remark). With the
      default `mla-cache=expanded` such an instance is left alone (its
      expanded per-head k/v caches, fused by `etllm-fuse-sdpa`);
    * `*SparseMoeBlock` (Mixtral, Qwen2-MoE, Qwen3-MoE) -> one `etllm.moe`
      over stacked expert weights (`etllm.parameter ... {stack = [...]}`,
      [E, ...] from the per-expert tensors), matched structurally on the
      level-A form: the router linear, softmax or sigmoid, `etllm.topk`,
      the optional renormalization and scale, and the masked loop
      `acc + expert_j(h) * sum(where(selected == j, weights, 0))` over
      experts 0..E-1 with SiLU-gated experts without bias. The shared
      expert and its gate stay ordinary ops beside it. `moe=masked` keeps
      the loop.

    An instance that does not have the expected interface (a missing
    parameter or buffer, an unexpected input) is left alone with a remark.
    Backends extend the registry (`registerSourceSwap`).

    Before (one RMSNorm instance):

    ```mlir
    %sq = etllm.pow %x, %two {etllm.module = "model.norm"} : ...
    %m = etllm.mean %sq dims [-1] keepdim {etllm.module = "model.norm"} : ...
    ... rsqrt, mul, mul by the weight ...
    ```

    After:

    ```mlir
    %y = etllm.rms_norm %x, %w eps 1.000000e-05 {etllm.module = "model.norm"} : ...
    ```
  }];
  let options = [
    ListOption<"classes", "classes", "std::string",
               "Only swap these class suffixes (e.g. RMSNorm,Attention); "
               "default: every registered one">,
    Option<"mlaCache", "mla-cache", "::etllm::MlaCacheForm", "::etllm::MlaCacheForm::Expanded",
           "Multi-head latent attention cache (values: MlaCacheForm in docs/generated/ExportConfig.md)",
           "::etllm::optionValues<::etllm::MlaCacheForm>()">,
    Option<"moe", "moe", "::etllm::MoeMode", "::etllm::MoeMode::Experts",
           "Sparse mixture-of-experts blocks (values: MoeMode)",
           "::etllm::optionValues<::etllm::MoeMode>()">,
  ];
  let dependentDialects = ["::mlir::etllm::EtllmDialect"];
}

def FuseSdpaPass : Pass<"etllm-fuse-sdpa", "mlir::func::FuncOp"> {
  let summary = "Fuse decomposed attention into etllm.sdpa";
  let description = [{
    Pattern-level fusion for graphs without module information:

        matmul(q, transpose(k)) x scale (or / sqrt(d))
          [/ cap, tanh, x cap]               (soft-capping)
          + mask                              (additive, broadcastable)
          -> softmax(-1) [with an fp32 round trip]
          -> matmul(., v)

    becomes `etllm.sdpa %q, %k, %v mask %mask scale s softcap c`. When k and v
    come from repeat_kv (`unsqueeze -> expand -> reshape` over the kv heads)
    the repetition is folded into the op's grouped-query attention. A second
    pattern recognizes the causal mask the exported graph builds from the
    input positions (`where(arange(T) > pos, min, 0)`, optionally with the
    sliding-window term) and turns it into `causal` + `positions` (+ `window`).

    Near misses are left alone: softmax over another dimension, a non-splat
    or non-constant scale, a mask that does not broadcast, a second use of an
    intermediate value, mismatched heads.
  }];
  let dependentDialects = ["::mlir::etllm::EtllmDialect"];
}

def KvCacheInPlacePass : Pass<"etllm-kv-cache-in-place", "mlir::func::FuncOp"> {
  let summary = "Turn functional cache updates and write-backs into in-place updates";
  let description = [{
    The exported graph updates a cache functionally and copies the whole
    cache back at the end:

    ```mlir
    %k = etllm.buffer.read @k_cache : tensor<1x4x512x8xf32>
    %k2 = etllm.index_copy %k dim 2, %pos, %new : ...
    ... uses of %k2 ...
    etllm.buffer.write %k2 to @k_cache : tensor<1x4x512x8xf32>
    ```

    This pass proves the rewrite safe and makes it in place:

    ```mlir
    %k = etllm.buffer.read @k_cache : tensor<1x4x512x8xf32>
    %k2 = etllm.kv_cache.update %k[%pos], %new : ...
    ... uses of %k2 ...
    ```

    Safe means: the read has no other use (nobody observes the old value),
    the updated value is written back to the same buffer, and nothing
    between the read and the write-back reads or writes that buffer. The
    update op's tied result then *is* the buffer, so the write-back is
    dropped: a decode step writes only the new token's K/V. Anything else is
    left alone.
  }];
  let dependentDialects = ["::mlir::etllm::EtllmDialect"];
}

def QuantizeKvCachePass : Pass<"etllm-quantize-kv-cache", "mlir::ModuleOp"> {
  let summary = "Store the KV caches as int8 with one scale per token and head";
  let description = [{
    Turns every KV cache — a buffer updated in place by
    `etllm.kv_cache.update` and read by `etllm.sdpa` — into a quantized
    cache: int8 entries with an f32 scale per token and head
    (`!etllm.qact<[B, Hkv, T, D], i8, per_token, sym>`). The update
    quantizes the rows it writes; SDPA reads `scale * q`.

    ```mlir
    etllm.buffer @k_cache : tensor<1x4x512x8xf32>
    %k = etllm.buffer.read @k_cache : tensor<1x4x512x8xf32>
    %k2 = etllm.kv_cache.update %k[%pos], %new : (tensor<1x4x512x8xf32>, ...)
    %o = etllm.sdpa %q, %k2, %v2 ...
    ```

    becomes

    ```mlir
    etllm.buffer @k_cache : !etllm.qact<1x4x512x8, i8, per_token, sym>
    %k = etllm.buffer.read @k_cache : !etllm.qact<1x4x512x8, i8, per_token, sym>
    %k2 = etllm.kv_cache.update %k[%pos], %new : (!etllm.qact<...>, ...)
    %o = etllm.sdpa %q, %k2, %v2 ...
    ```

    A cache buffer is one that some `etllm.kv_cache.update` updates. Each of
    its reads must feed only that update along dimension 2, and the update
    only `etllm.sdpa`'s key and value (the caches of one attention both
    quantized); a float cache anything else reads cannot be quantized and
    is an error naming the reader. Per token and head, 8 bits: D values
    take D + 8 bytes (the scale and the layout's zero point) instead of
    4 D in f32. Run after `etllm-kv-cache-in-place`.
  }];
  let options = [
    Option<"dtype", "dtype", "::etllm::KvCacheDtype", "::etllm::KvCacheDtype::Int8",
           "Element type of the caches (values: KvCacheDtype; `model` leaves them)",
           "::etllm::optionValues<::etllm::KvCacheDtype>()">
  ];
  let dependentDialects = ["::mlir::etllm::EtllmDialect"];
}

def KvRingPass : Pass<"etllm-kv-ring", "mlir::ModuleOp"> {
  let summary = "Keep KV caches as rings: sliding-window layers bounded by their window, attention sinks";
  let description = [{
    Every call of the program carries at most `chunk` tokens (the runner
    feeds a longer prompt in chunks). Then a KV cache need not hold
    `max_seq_len` positions:

    - a **sliding-window** layer (`etllm.sdpa` with `window` W) keeps a ring
      of W + `chunk` - 1 positions (64 with W = 64 and `chunk` 1), when
      that is fewer than the cache's;
    - with **`sinks`** S > 0 (StreamingLLM), every other cache keeps its
      first S positions for good and its other slots as a ring of the
      latest positions; each query sees the sinks and the latest
      `max_seq_len - S - chunk + 1` positions, so generation goes on past
      `max_seq_len` with a cache that never grows.

    ```mlir
    %k = etllm.buffer.read @k_cache : tensor<1x4x512x8xf32>
    %k2 = etllm.kv_cache.update %k[%pos], %new : ...
    %o = etllm.sdpa %q, %k2, %v2 positions %pos causal window 64 scale 0.35 : ...
    ```

    becomes, with `chunk` 1,

    ```mlir
    %k = etllm.buffer.read @k_cache : tensor<1x4x64x8xf32>
    %slots = etllm.kv_ring.slots %pos sinks 0 size 64 : tensor<?xi64>
    %k2 = etllm.kv_cache.update %k[%slots], %new : ...
    %m = etllm.kv_ring.mask %pos sinks 0 size 64 window 64 : ...
    %o = etllm.sdpa %q, %k2, %v2 mask %m scale 0.35 : ...
    ```

    The module records `etllm.kv_ring = {chunk, sinks}`: the program's
    metadata tells the runner, and the dynamic dimensions (the tokens of a
    call) are bounded by `chunk`. Positions keep their values in the
    text (RoPE is applied when a key is written), so the sinks' distance
    to a query grows with the text; StreamingLLM's re-rotation of the keys
    to their place in the cache is not done.

    A cache is a buffer whose read feeds `etllm.kv_cache.update` (along
    dimension 2) and whose update feeds an `etllm.sdpa` with `causal` and
    `positions` and no `mask`; with `sinks` > 0 every such cache must
    become a ring, and an attention over a cache that cannot (an explicit
    mask) is an error naming it. Run after `etllm-kv-cache-in-place` and
    before `etllm-quantize-kv-cache`.
  }];
  let options = [
    Option<"chunk", "chunk", "int64_t", "16",
           "Most tokens per call (the ring keeps window + chunk - 1 positions)">,
    Option<"sinks", "sinks", "int64_t", "0",
           "Attention sinks: with S > 0 every cache keeps its first S positions and a ring">
  ];
  let dependentDialects = ["::mlir::etllm::EtllmDialect"];
}

def StaticMethodsPass : Pass<"etllm-static-methods", "mlir::ModuleOp"> {
  let summary = "Static-shape `prefill` and `decode` methods instead of `forward`";
  let description = [{
    For backends that run only static shapes (NPUs): replaces the dynamic
    `forward(tokens: [1, ?], input_pos: [?]) -> [1, ?, vocab]` by two
    methods with every shape fixed, `prefill` over `prefill-chunk` tokens
    and `decode` over one, each a copy of `forward` with its argument types
    set and every result type inferred again (an op without type inference
    whose result stays dynamic is an error naming it). A prompt is fed in
    chunks (the last one padded; the runner takes the logits of its last
    real token) and generation one token at a time, so `forward` must
    return every position's logits (`model.last_logits_only: false`).

    With `kv-cache=io` (ExecuTorch's static attention) each KV-cache buffer
    becomes an input of both methods (the whole cache, [1, Hkv, T, D]) and
    its update's new entries ([1, Hkv, S, D]) an output, in buffer order
    after the tokens and positions and after the logits: the runner owns the
    caches and writes the entries of the real tokens itself. The method
    updates its own copy of the cache input in place to attend over it.
    With `kv-cache=in-place` the caches stay the program's buffers, updated
    in place by both methods (a padded chunk writes entries past the
    prompt, which a later step overwrites before it attends to them).

    ```mlir
    func.func @forward(%tok: tensor<1x?xi64>, %pos: tensor<?xi64>) -> tensor<1x?x512xf32>
    ```

    becomes, with `prefill-chunk=16 kv-cache=io` and one cache,

    ```mlir
    func.func @prefill(%tok: tensor<1x16xi64>, %pos: tensor<16xi64>, %k: tensor<1x4x512x8xf32>)
        -> (tensor<1x16x512xf32>, tensor<1x4x16x8xf32>)
    func.func @decode(%tok: tensor<1x1xi64>, %pos: tensor<1xi64>, %k: tensor<1x4x512x8xf32>)
        -> (tensor<1x1x512xf32>, tensor<1x4x1x8xf32>)
    ```

    Run after `etllm-fuse-sdpa` and before `etllm-kv-cache-in-place` (the
    caches' write-backs mark what `kv-cache=io` turns into outputs); the
    chunk must fit the cache (`max_seq_len`).
  }];
  let options = [
    Option<"prefillChunk", "prefill-chunk", "int64_t", "16",
           "Tokens per `prefill` call (1 to max_seq_len)">,
    Option<"kvCache", "kv-cache", "::etllm::StaticKvCache", "::etllm::StaticKvCache::Io",
           "Where the KV caches live (values: StaticKvCache in docs/generated/ExportConfig.md)",
           "::etllm::optionValues<::etllm::StaticKvCache>()">
  ];
  let dependentDialects = ["::mlir::etllm::EtllmDialect", "::mlir::func::FuncDialect"];
}

def QuantizePass : Pass<"etllm-quantize", "mlir::ModuleOp"> {
  let summary = "Block-wise weight quantization and dynamic activation quantization";
  let description = [{
    Rewrites `etllm.linear` with a parameter weight into `etllm.qlinear` on a
    `!etllm.qweight` parameter (the serializer quantizes the bytes), and
    optionally `etllm.embedding` into `etllm.qembedding`. With `linear=8da4w`
    or `8da8w` the activation is quantized per token at run time
    (`etllm.quantize_dynamic`, int8 asymmetric) and the product is integer.
    With `int4`/`int8` and `activations=int8-block` the activation is
    quantized at run time per block of 32 values (symmetric int8, one f32
    scale per block: llama.cpp's Q8_0 activations for Q4_0/Q8_0 weights);
    with `activations=f32` the layer is weight-only. With
    `activations=int8-static` (any weight scheme, the 8da ones included) the
    activation is quantized with a scale fixed now, per tensor and
    symmetric (`etllm.quantize_static`, scale = the input's calibrated
    largest |x| / 127, the `etllm.act_absmax` attribute `etllm-calibrate`
    sets on each linear): what NPUs run. A linear to quantize without that
    attribute is an error naming it.

    * a group size that does not divide a layer's input features falls
      back to one group per row for that layer (remark);
    * weights that arrive quantized (GGUF Q4_0/Q8_0/Q4_1) keep their exact
      values: the pass picks the representation that holds them without
      loss (group 32, f16 scales) instead of re-quantizing;
    * `linear=gguf` (and `embedding=gguf`) keeps every weight in its GGUF
      type: Q4_0/Q8_0/Q4_1 as above, Q5_0, Q5_1, Q4_K, Q5_K and Q6_K as
      `!etllm.qweight<..., q4_k>` and the like (their blocks bit for bit),
      float weights in float (remark); the other schemes dequantize those
      five formats and quantize them as they ask;
    * `output-layer` overrides the scheme of `lm_head` (an 8-bit override,
      `int8` or `8da8w`, is per channel); `exclude` keeps the listed layers
      (module path patterns, `*` wildcard) in float.
  }];
  let options = [
    Option<"linear", "linear", "::etllm::LinearScheme", "::etllm::LinearScheme::Int4",
           "Linear scheme (values: LinearScheme in docs/generated/ExportConfig.md)",
           "::etllm::optionValues<::etllm::LinearScheme>()">,
    Option<"groupSize", "group-size", "int64_t", "32",
           "Group size along the input features; -1 = per channel">,
    Option<"symmetric", "symmetric", "bool", "true",
           "Symmetric (scale only) or asymmetric (scale + offset) weights">,
    Option<"scaleType", "scale-type", "::etllm::ScaleType", "::etllm::ScaleType::F32",
           "Storage type of scales (values: ScaleType)",
           "::etllm::optionValues<::etllm::ScaleType>()">,
    Option<"embedding", "embedding", "::etllm::EmbeddingScheme", "::etllm::EmbeddingScheme::None",
           "Embedding scheme (values: EmbeddingScheme)",
           "::etllm::optionValues<::etllm::EmbeddingScheme>()">,
    Option<"embeddingGroupSize", "embedding-group-size", "int64_t", "-1",
           "Embedding group size; -1 = per row">,
    Option<"outputLayer", "output-layer", "::etllm::OutputLayerScheme", "::etllm::OutputLayerScheme::Same",
           "Scheme of lm_head (values: OutputLayerScheme)",
           "::etllm::optionValues<::etllm::OutputLayerScheme>()">,
    Option<"activations", "activations", "::etllm::ActivationScheme", "::etllm::ActivationScheme::F32",
           "Activations of int4/int8 layers (values: ActivationScheme)",
           "::etllm::optionValues<::etllm::ActivationScheme>()">,
    ListOption<"exclude", "exclude", "std::string",
               "Linear layers (module path patterns) kept in float">,
  ];
  let dependentDialects = ["::mlir::etllm::EtllmDialect"];
}

def LoraHooksPass : Pass<"etllm-lora-hooks", "mlir::ModuleOp"> {
  let summary = "Give linear layers hooks for LoRA adapters loaded at run time";
  let description = [{
    After every linear layer (`etllm.linear` or `etllm.qlinear` with a
    parameter weight) whose module path ends in one of `targets` (module
    kinds: `q_proj`, `down_proj`, ...), inserts an `etllm.lora` hook that
    adds the adapters applied at run time to its output:

    ```mlir
    %y = etllm.qlinear %x, %w : ...
    %y2 = etllm.lora %x, %y {hook = 3 : i64,
        target = "model.layers.1.self_attn.q_proj"} : ...
    ```

    The hook reads the linear's float input (for a dynamically quantized
    input, the input of its `etllm.quantize_dynamic`). It is placed just
    before the output's first use, so the linears of one input (q, k, v;
    gate, up) stay next to each other (the CPU backend runs them as one
    group). Hooks are numbered in program order; the module gets
    `etllm.lora_max_rank`, the largest rank an adapter may have. A target
    that matches no linear is an error (a typo would otherwise give a
    program that silently ignores adapters).
  }];
  let options = [
    ListOption<"targets", "targets", "std::string",
               "Module kinds to hook (the last component of the module "
               "path: q_proj, k_proj, ...)">,
    Option<"maxRank", "max-rank", "int64_t", "64",
           "Largest adapter rank the program accepts at run time">,
  ];
  let dependentDialects = ["::mlir::etllm::EtllmDialect"];
}

def PartitionPass : Pass<"etllm-partition", "mlir::ModuleOp"> {
  let summary = "Outline maximal backend-legal subgraphs into delegate calls";
  let description = [{
    Asks each enabled backend's legality contract, in priority order, which
    ops of `forward` it can run, groups the ops each backend takes into
    maximal convex subgraphs (ops are scheduled so that runs of one backend
    stay together; data dependencies are preserved), outlines each into a
    private function marked `etllm.backend` and calls it with
    `etllm.delegate.call`. Ops no backend takes stay on portable kernels.
    Deterministic: the same input gives the same partitions and names.
  }];
  let options = [
    ListOption<"backends", "backends", "std::string",
               "Backends in priority order (ids of registered backends)">,
    Option<"minOps", "min-ops", "int64_t", "1",
           "Smallest subgraph worth a delegate call">,
    ListOption<"backendOptions", "backend-options", "std::string",
               "Options of the backends' compiler halves, each "
               "`<backend>.<key>=<value>` (e.g. vulkan.precision=f16); "
               "recorded on the module as etllm.backend_options, where "
               "legality and serialization read them">,
  ];
  let dependentDialects = ["::mlir::etllm::EtllmDialect",
                           "::mlir::func::FuncDialect"];
}

def LowerBackendsPass : Pass<"etllm-lower-backends", "mlir::ModuleOp"> {
  let summary = "Run each backend's lowering passes on its outlined subgraphs";
  let description = [{
    For every function marked `etllm.backend = "<id>"`, runs the pipeline
    the backend's compiler half declares (e.g. the example backend rewrites
    `silu` into its own form). Functions of backends without passes are
    untouched.
  }];
}

def PlanMemoryPass : Pass<"etllm-plan-memory", "mlir::ModuleOp"> {
  let summary = "Plan activation memory and record the plan in the IR";
  let description = [{
    The memory planning stage, the last IR step of every recipe. It lowers
    `forward` as the serializer does (the value table and the instruction
    list), gives views (ViewLikeOpInterface, when their source is writable)
    and tied results (TiedOpInterface) their operand's storage, computes
    every root value's lifetime over the instruction order (to the last use
    of any alias of it), places the planned values in one arena with the
    runtime's planner (greedy by size, 64-byte aligned) and records the
    result:

    * `etllm.plan` on every op of `forward` whose results are planned, one
      entry per result: `#etllm.slot<arena, offset, size, live [first, last]>`
      or `#etllm.alias<operand N>` (`unit` for a result stored elsewhere);
      on every argument of `forward`, its slot;
    * `etllm.memory = {arena_bytes, buffer_bytes, constant_bytes,
      naive_arena_bytes, aliases}` on `forward`.

    The serializer emits the recorded plan after checking that it still
    fits the IR; running the pass again replaces it. Dynamic dimensions are
    planned at their bound (`max_seq_len`, or the op's own bound through
    BoundedShapeOpInterface); a dynamic input without a bound, or a buffer
    written back while an earlier read of it is still used, is an error.

    ```mlir
    func.func @forward(%x: tensor<4xf32> {etllm.plan = #etllm.slot<arena 0, offset 0, size 64, live [0, 0]>}) -> tensor<4xf32>
        attributes {etllm.memory = {aliases = 0 : i64, arena_bytes = 128 : i64, ...}} {
      %a = etllm.exp %x {etllm.plan = [#etllm.slot<arena 0, offset 64, size 64, live [0, 1]>]} : tensor<4xf32>
      ...
    ```

    Every public function is a method and is planned on its own (one arena
    each); a module without one is left alone.
  }];
  // The plan's attributes are the dialect's, also for a module of func ops.
  let dependentDialects = ["::mlir::etllm::EtllmDialect"];
}

#endif // ETLLM_TRANSFORMS_PASSES_TD
