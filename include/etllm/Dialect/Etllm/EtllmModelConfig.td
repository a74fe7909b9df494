//===- EtllmModelConfig.td - the typed model configuration -*- tablegen -*-===//
//
// `#etllm.model_config<...>`: the model configuration the importer records on
// the module (`etllm.model_config`), read by passes (source swap) and by the
// serializer (sequence bound, vocabulary, special tokens, the metadata JSON).
// Every field is typed and has a default, so a hand-written test module
// gives only the fields it needs.
//
//===----------------------------------------------------------------------===//
#ifndef ETLLM_DIALECT_ETLLM_MODEL_CONFIG_TD
#define ETLLM_DIALECT_ETLLM_MODEL_CONFIG_TD

include "etllm/Dialect/Etllm/EtllmBase.td"

// Parameters of the config attribute. Each prints only when it differs from
// its default (the `struct` directive), and parses in any order.
class Etllm_ConfigString<string desc>
    : StringRefParameter<desc, "\"\"">;
class Etllm_ConfigInt<string desc, string default = "0">
    : DefaultValuedParameter<"int64_t", default, desc>;
// A double (IEEE binary64), stored as an APFloat (doubles are not hashable
// storage keys); the printer's form parses back bit-exactly.
class Etllm_ConfigF64<string desc> : APFloatParameter<desc> {
  let defaultValue = "::llvm::APFloat(0.0)";
  let parser = "::mlir::etllm::ModelConfigAttr::parseF64($_parser)";
}
class Etllm_ConfigBool<string desc>
    : DefaultValuedParameter<"bool", "false", desc> {
  let parser = "::mlir::etllm::ModelConfigAttr::parseBool($_parser)";
  let printer = "$_printer << ($_self ? \"true\" : \"false\")";
}
class Etllm_ConfigArray<string element, string desc>
    : ArrayRefParameter<element, desc> {
  let defaultValue = "::llvm::SmallVector<" # element # ">()";
  let comparator = "::llvm::ArrayRef<" # element # ">($_lhs) == "
                   "::llvm::ArrayRef<" # element # ">($_rhs)";
  let parser = "::mlir::etllm::ModelConfigAttr::parseArray<" # element #
               ">($_parser)";
  let printer = "::mlir::etllm::ModelConfigAttr::printArray($_printer, $_self)";
}

def Etllm_ModelConfigAttr : AttrDef<Etllm_Dialect, "ModelConfig"> {
  let mnemonic = "model_config";
  let summary = "the normalized model configuration of an imported graph";
  let description = [{
    What the importer knew about the model, typed: the Hugging Face class and
    model type, the graph's dtype, the sizes, the sequence bound
    (`max_seq_len`: the KV-cache length and the bound of every dynamic
    dimension), the attention scale, the sliding window (`sliding_window`
    tokens, used by the layers marked in `layer_sliding_window`),
    soft-capping, and the special tokens. It rides on the module as
    `etllm.model_config`; passes read it through `getModelConfig(module)`,
    and the serializer copies it, as JSON with the same keys, into the
    program's metadata.

    Fields equal to their default are not printed and may be omitted:
    strings `""`, sizes `0` (unknown), `bos_token_id = -1`, empty arrays,
    `tie_word_embeddings = false`, and `0.0` for the floating-point fields
    (`attention_scale = 0.0` means `head_dim^-0.5`, a zero soft-cap means
    none).

    Multi-head latent attention (DeepSeek) adds `kv_lora_rank` (the size of
    the compressed latent a latent cache holds per token, with the
    `head_dim` = qk_rope_head_dim rotated key), `q_lora_rank`,
    `qk_nope_head_dim` and `v_head_dim`; `attention_scale` is then
    `(qk_nope_head_dim + head_dim)^-0.5` with YaRN's mscale applied.

    Example:

    ```mlir
    module attributes {etllm.model_config = #etllm.model_config<
        architecture = "LlamaForCausalLM", model_type = "llama",
        dtype = "float32", hidden_size = 64, num_hidden_layers = 2,
        num_attention_heads = 4, num_key_value_heads = 2, head_dim = 16,
        vocab_size = 512, max_seq_len = 128, rms_norm_eps = 1.0e-05,
        layer_sliding_window = [false, false], eos_token_ids = [2]>} {}
    ```
  }];
  let parameters = (ins
    Etllm_ConfigString<"Hugging Face class, e.g. LlamaForCausalLM">:$architecture,
    Etllm_ConfigString<"Hugging Face model_type, e.g. llama">:$model_type,
    Etllm_ConfigString<"activation dtype: float32, float16 or bfloat16">:$dtype,
    Etllm_ConfigInt<"hidden size">:$hidden_size,
    Etllm_ConfigInt<"MLP intermediate size">:$intermediate_size,
    Etllm_ConfigInt<"number of decoder layers">:$num_hidden_layers,
    Etllm_ConfigInt<"query heads">:$num_attention_heads,
    Etllm_ConfigInt<"key/value heads">:$num_key_value_heads,
    Etllm_ConfigInt<"per-head dimension">:$head_dim,
    Etllm_ConfigInt<"vocabulary size">:$vocab_size,
    Etllm_ConfigInt<"KV-cache length, bound of dynamic dimensions">:$max_seq_len,
    Etllm_ConfigInt<"rotated dimensions per head">:$rotary_dim,
    Etllm_ConfigF64<"RMSNorm epsilon">:$rms_norm_eps,
    Etllm_ConfigF64<"RoPE base">:$rope_theta,
    Etllm_ConfigF64<"attention softmax scale (0: head_dim^-0.5)">:$attention_scale,
    Etllm_ConfigInt<"sliding-window size in tokens (0: none)">:$sliding_window,
    Etllm_ConfigF64<"tanh soft-cap of attention scores (0: none)">:$attn_logit_softcapping,
    Etllm_ConfigF64<"tanh soft-cap of the logits (0: none)">:$final_logit_softcapping,
    Etllm_ConfigBool<"lm_head shares the embedding">:$tie_word_embeddings,
    Etllm_ConfigInt<"beginning-of-sequence token (-1: none)", "-1">:$bos_token_id,
    Etllm_ConfigArray<"int64_t", "end-of-sequence tokens, primary first">:$eos_token_ids,
    Etllm_ConfigArray<"bool", "per layer: attends within sliding_window">:$layer_sliding_window,
    Etllm_ConfigInt<"MLA: query LoRA rank (0: q_proj)">:$q_lora_rank,
    Etllm_ConfigInt<"MLA: rank of the cached latent (0: no MLA)">:$kv_lora_rank,
    Etllm_ConfigInt<"MLA: non-rotated part of each query/key head">:$qk_nope_head_dim,
    Etllm_ConfigInt<"MLA: value head size">:$v_head_dim,
    Etllm_ConfigInt<"routed experts of a sparse layer (0: dense)">:$num_experts,
    Etllm_ConfigInt<"experts each token is routed to">:$num_experts_per_tok,
    Etllm_ConfigInt<"intermediate size of one routed expert">:$moe_intermediate_size,
    Etllm_ConfigInt<"intermediate size of the shared expert (0: none)">:$shared_expert_intermediate_size,
    Etllm_ConfigBool<"the top-k routing weights are renormalized">:$norm_topk_prob,
    Etllm_ConfigString<"router scores: softmax (\"\") or sigmoid">:$moe_scoring,
    Etllm_ConfigString<"expert selection: greedy (\"\"), group_limited_greedy or noaux_tc">:$moe_topk_method,
    Etllm_ConfigInt<"expert groups of group-limited selection (0: none)">:$n_group,
    Etllm_ConfigInt<"groups each token selects from">:$topk_group,
    Etllm_ConfigF64<"multiplier of the routing weights (0: 1)">:$routed_scaling_factor,
    Etllm_ConfigArray<"bool", "per layer: has the sparse mixture-of-experts block">:$layer_moe,
    Etllm_ConfigF64<"RoPE base of the sliding-window layers (0: rope_theta)">:$rope_local_theta
  );
  let assemblyFormat = "`<` struct(params) `>`";
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    /// The sliding window of `layer` in tokens (0 when the layer attends to
    /// the whole cache or the config does not say).
    int64_t getLayerWindow(int64_t layer) const;
    /// The attention scale, `head_dim^-0.5` when none is recorded (0 when
    /// head_dim is unknown too).
    double getAttentionScaleOrDefault() const;
    /// Whether `layer` has the sparse mixture-of-experts block.
    bool isMoeLayer(int64_t layer) const;
    /// routed_scaling_factor, 1 when none is recorded.
    double getRoutedScalingFactorOrDefault() const;

    /// The configuration as the JSON object the serializer writes into the
    /// program's metadata (every field, sorted keys).
    std::string toJson() const;

    /// Parser helpers of the parameters.
    static ::mlir::FailureOr<::llvm::APFloat>
    parseF64(::mlir::AsmParser &parser);
    static ::mlir::FailureOr<bool> parseBool(::mlir::AsmParser &parser);
    template <typename T>
    static ::mlir::FailureOr<::llvm::SmallVector<T>>
    parseArray(::mlir::AsmParser &parser);
    template <typename T>
    static void printArray(::mlir::AsmPrinter &printer,
                           ::llvm::ArrayRef<T> values);
  }];
}

#endif // ETLLM_DIALECT_ETLLM_MODEL_CONFIG_TD
