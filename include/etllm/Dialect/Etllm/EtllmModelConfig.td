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
include "etllm/Models/ModelConfig.td"

// The parameters of the config attributes are built from the fields of
// etllm/Models/ModelConfig.td (one record per field): each prints only when
// it differs from its default (the `struct` directive), and parses in any
// order. Their generic verification (ranges, choices), their JSON and the
// builder from formats::ModelConfig are generated from the same records
// (etllm-tblgen -gen-etllm-model-config-attr-*); lib/Dialect/Etllm/EtllmModelConfig.cpp
// keeps the rules between fields.

/// The IR parameter of a ConfigField.
class Etllm_ConfigParameter<ConfigField f>
    : AttrOrTypeParameter<
          !cond(!eq(f.type.kind, "int"): "int64_t",
                !eq(f.type.kind, "real"): "::llvm::APFloat",
                !eq(f.type.kind, "bool"): "bool",
                !eq(f.type.kind, "int_list"): "::llvm::ArrayRef<int64_t>",
                !eq(f.type.kind, "bool_list"): "::llvm::ArrayRef<bool>",
                !eq(f.type.kind, "nested"): f.type.cppType,
                // string, choice, enum: the spelling
                true: "::llvm::StringRef"),
          f.summary> {
  /// The field this parameter is (read by etllm-tblgen).
  ConfigField configField = f;
  defvar kind = f.type.kind;
  defvar isList = !or(!eq(kind, "int_list"), !eq(kind, "bool_list"));
  defvar element = !if(!eq(kind, "int_list"), "int64_t", "bool");
  defvar isString = !or(!eq(kind, "string"), !eq(kind, "choice"),
                        !eq(kind, "enum"));
  // An enum's default is its first case when none is given.
  defvar stringDefault = !if(!empty(f.attrDefault), f.type.defaultSpelling,
                             f.attrDefault);
  let cppStorageType = !cond(
      isString: "std::string",
      isList: "::llvm::SmallVector<" # element # ">",
      true: cppType);
  let allocator = !if(!or(isString, isList),
                      "$_dst = $_allocator.copyInto($_self);", "");
  let comparator = !cond(
      !eq(kind, "real"): "$_lhs.bitwiseIsEqual($_rhs)",
      isList: "::llvm::ArrayRef<" # element # ">($_lhs) == "
              "::llvm::ArrayRef<" # element # ">($_rhs)",
      true: "$_lhs == $_rhs");
  let defaultValue = !cond(
      !eq(kind, "int"): !if(!empty(f.attrDefault), "0", f.attrDefault),
      // A double (IEEE binary64), stored as an APFloat (doubles are not
      // hashable storage keys); the printer's form parses back bit-exactly.
      !eq(kind, "real"): "::llvm::APFloat("
                         # !if(!empty(f.attrDefault), "0.0", f.attrDefault)
                         # ")",
      !eq(kind, "bool"): !if(!empty(f.attrDefault), "false", f.attrDefault),
      isList: "::llvm::SmallVector<" # element # ">()",
      !eq(kind, "nested"): cppType # "()",
      true: "\"" # stringDefault # "\"");
  let parser = !cond(
      !eq(kind, "real"): "::mlir::etllm::ModelConfigAttr::parseF64($_parser)",
      !eq(kind, "bool"): "::mlir::etllm::ModelConfigAttr::parseBool($_parser)",
      isList: "::mlir::etllm::ModelConfigAttr::parseArray<" # element #
              ">($_parser)",
      true: "::mlir::FieldParser<" # cppStorageType # ">::parse($_parser)");
  let printer = !cond(
      !eq(kind, "bool"): "$_printer << ($_self ? \"true\" : \"false\")",
      isList: "::mlir::etllm::ModelConfigAttr::printArray($_printer, $_self)",
      isString: "$_printer.printString($_self)",
      !eq(kind, "nested"): "$_printer.printStrippedAttrOrType($_self)",
      true: "$_printer << $_self");
}

/// The parameters of the fields of `group`, in the order of ModelConfig.td.
class Etllm_ConfigParameters<ConfigAttrGroup group> {
  defvar fields = !filter(f, ModelConfigFields, !eq(f.attr, group));
  dag parameters = !dag(ins, !foreach(f, fields, Etllm_ConfigParameter<f>),
                        !foreach(f, fields, f.key));
}

/// A config attribute: the core one or a nested group.
class Etllm_ConfigAttr<ConfigAttrGroup group, string attrMnemonic>
    : AttrDef<Etllm_Dialect, group.cppName> {
  /// The group (read by etllm-tblgen).
  ConfigAttrGroup configGroup = group;
  let mnemonic = attrMnemonic;
  let parameters = Etllm_ConfigParameters<group>.parameters;
  let assemblyFormat = "`<` struct(params) `>`";
  let genVerifyDecl = 1;
  code configClassDeclaration = [{
    /// Adds the fields (and those of the groups present) to `json` under
    /// their keys: the program metadata's flat object (generated).
    void appendJson(::llvm::json::Object &json) const;
  }];
  let extraClassDeclaration = configClassDeclaration;
}

def Etllm_MlaConfigAttr : Etllm_ConfigAttr<MlaAttr, "mla_config"> {
  let summary = "multi-head latent attention fields of the model config";
  let description = [{
    The `mla` group of `#etllm.model_config` (DeepSeek-V2/V3), present only
    for a multi-head latent attention model: `kv_lora_rank` (the size of the
    compressed latent a latent cache holds per token, with the `head_dim` =
    qk_rope_head_dim rotated key), `q_lora_rank`, `qk_nope_head_dim` and
    `v_head_dim`. The model's `attention_scale` is then
    `(qk_nope_head_dim + head_dim)^-0.5` with YaRN's mscale applied.
  }];
}

def Etllm_MoeConfigAttr : Etllm_ConfigAttr<MoeAttr, "moe_config"> {
  let summary = "mixture-of-experts fields of the model config";
  let description = [{
    The `moe` group of `#etllm.model_config`, present only for a model with
    sparse layers: the routed experts and how many each token uses, the
    expert and shared-expert sizes, the routing (scores, selection, groups,
    renormalization, scaling) and which layers are sparse (`layer_moe`).
  }];
}

def Etllm_VisionConfigAttr : Etllm_ConfigAttr<VisionAttr, "vision_config"> {
  let summary = "vision encoder fields of the model config";
  let description = [{
    The `vision` group of `#etllm.model_config`, present only for a vision
    encoder composed with the decoder (LLaVA): the tower's sizes and
    activation, how many of its layers feed the projector and whether the
    class token's feature is dropped, the projector's activation and bias,
    the image placeholder token and how many positions an image takes, and
    the image processor's configuration (JSON text) the runtime applies.
  }];
}

def Etllm_ModelConfigAttr : Etllm_ConfigAttr<CoreAttr, "model_config"> {
  let summary = "the normalized model configuration of an imported graph";
  let description = [{
    What the importer knew about the model, typed: the Hugging Face class and
    model type, the graph's dtype, the sizes, the sequence bound
    (`max_seq_len`: the KV-cache length and the bound of every dynamic
    dimension), the attention scale, the sliding window (`sliding_window`
    tokens, used by the layers marked in `layer_sliding_window`),
    soft-capping, the special tokens, and the nested groups of multi-head
    latent attention (`mla = <...>`, `#etllm.mla_config`) and of the mixture
    of experts (`moe = <...>`, `#etllm.moe_config`). It rides on the module
    as `etllm.model_config`; passes read it through `getModelConfig(module)`,
    and the serializer copies it, as one flat JSON object with the same keys
    (the groups' keys beside the core's), into the program's metadata.

    The fields are declared once, in `etllm/Models/ModelConfig.td`, with the
    fields of `formats::ModelConfig`.

    Fields equal to their default are not printed and may be omitted:
    strings `""`, sizes `0` (unknown), `bos_token_id = -1`, empty arrays,
    `tie_word_embeddings = false`, `0.0` for the floating-point fields
    (`attention_scale = 0.0` means `head_dim^-0.5`, a zero soft-cap means
    none), and absent groups.

    Example:

    ```mlir
    module attributes {etllm.model_config = #etllm.model_config<
        architecture = "LlamaForCausalLM", model_type = "llama",
        dtype = "float32", hidden_size = 64, num_hidden_layers = 2,
        num_attention_heads = 4, num_key_value_heads = 2, head_dim = 16,
        vocab_size = 512, max_seq_len = 128, rms_norm_eps = 1.0e-05,
        layer_sliding_window = [false, false], eos_token_ids = [2]>} {}
    ```

    A DeepSeek-V2-Lite-like model adds its groups:

    ```mlir
    #etllm.model_config<..., mla = <kv_lora_rank = 32, qk_nope_head_dim = 16,
        v_head_dim = 16>, moe = <num_experts = 4, num_experts_per_tok = 2,
        moe_intermediate_size = 32, layer_moe = [false, true]>>
    ```
  }];
  let extraClassDeclaration = configClassDeclaration # [{
    /// The sliding window of `layer` in tokens (0 when the layer attends to
    /// the whole cache or the config does not say).
    int64_t getLayerWindow(int64_t layer) const;
    /// The attention scale, `head_dim^-0.5` when none is recorded (0 when
    /// head_dim is unknown too).
    double getAttentionScaleOrDefault() const;
    /// Whether `layer` has the sparse mixture-of-experts block.
    bool isMoeLayer(int64_t layer) const;

    /// The configuration as the JSON object the serializer writes into the
    /// program's metadata (every field, groups flattened, sorted keys).
    std::string toJson() const;
    /// The configuration from such an object (the ATen importer's
    /// `model_config`): absent keys keep their defaults, a group's key
    /// makes the group. An unknown key, a value of the wrong JSON type or a
    /// configuration the verifier refuses sets `error` (naming the key).
    static ::mlir::FailureOr<ModelConfigAttr>
    fromJson(::mlir::MLIRContext *context, const ::llvm::json::Object &json,
             std::string &error);

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
