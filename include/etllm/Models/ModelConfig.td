//===- ModelConfig.td - The model configuration, declared once -*- tablegen -*-===//
//
// Every field of the model configuration, declared once: its snake_case key,
// its member in `formats::ModelConfig`, its type, default and documentation,
// where it appears in the IR attribute `#etllm.model_config` (the core, or
// the nested `mla` and `moe` groups), whether family specs read and write it
// through a key of their own (`models::ConfigField`), and the range check
// the attribute's verifier applies.
//
// `etllm-tblgen` generates from these records (tools/etllm-tblgen/
// ModelConfigGen.cpp):
//   -gen-etllm-model-config        ModelConfig.h.inc: the enums, the
//                                  `ConfigField` enum, the members of
//                                  `formats::ModelConfig` and `RopeScaling`,
//                                  getField/setField/listField, and the
//                                  struct's JSON form (key per field);
//   -gen-etllm-model-config-attr   EtllmModelConfig.{h,cpp}.inc: the
//                                  attribute's parameter structs, its generic
//                                  verification (ranges, choices), its
//                                  metadata JSON in both directions (flat
//                                  keys) and the builder from
//                                  `formats::ModelConfig`.
// EtllmModelConfig.td builds the AttrDefs' `parameters` from the same
// records (`!foreach` over `ModelConfigFields`).
//
// Hand-written code keeps only the rules between fields (the heads divide,
// MLA needs both dimensions, ...): lib/Dialect/Etllm/EtllmModelConfig.cpp and
// lib/Formats/ModelConfigValidation.cpp.
//
// Adding a field is one record here plus its uses (docs/AddingAModel.md,
// "Adding a config field"). This file depends on nothing of MLIR.
//
//===----------------------------------------------------------------------===//
#ifndef ETLLM_MODELS_MODEL_CONFIG_TD
#define ETLLM_MODELS_MODEL_CONFIG_TD

//===----------------------------------------------------------------------===//
// Types
//===----------------------------------------------------------------------===//

/// The type of a field: its C++ type in the struct and its kind, which
/// decides its IR parameter, JSON form and checks.
class ConfigType<string cpp, string k> {
  string cppType = cpp;
  /// int, real, bool, string, choice, enum, int_list, bool_list,
  /// float_list, struct, nested.
  string kind = k;
  /// The spelling of the value a "" default stands for (an enum's first
  /// case).
  string defaultSpelling = "";
}
def CfgInt : ConfigType<"int64_t", "int">;
def CfgReal : ConfigType<"double", "real">;
def CfgBool : ConfigType<"bool", "bool">;
def CfgString : ConfigType<"std::string", "string">;
def CfgIntList : ConfigType<"std::vector<int64_t>", "int_list">;
def CfgBoolList : ConfigType<"std::vector<bool>", "bool_list">;
def CfgFloatList : ConfigType<"std::vector<float>", "float_list">;

/// A string that is one of `choices`, or "" (unknown). Stored as a string.
class CfgChoice<list<string> c> : ConfigType<"std::string", "choice"> {
  list<string> choices = c;
}

/// One case of a CfgEnum: its C++ enumerator and its spelling (config.json,
/// the IR attribute, the metadata JSON).
class ConfigEnumCase<string cpp, string s, string d = ""> {
  string cppName = cpp;
  string spelling = s;
  string description = d;
}

/// An `enum class <cpp> : uint8_t` of etllm::models (generated, with the
/// spellings in `k<cpp>Names`). The IR attribute stores the spelling.
class CfgEnum<string cpp, list<ConfigEnumCase> c, string d>
    : ConfigType<"models::" # cpp, "enum"> {
  string enumName = cpp;
  list<ConfigEnumCase> cases = c;
  string description = d;
  let defaultSpelling = !head(c).spelling;
}

/// A struct of fields (the fields whose `owner` it is), generated as
/// `struct <cpp>` members in etllm::formats.
class ConfigStruct<string cpp> : ConfigType<cpp, "struct"> {
  string structName = cpp;
}
def ModelConfigStruct : ConfigStruct<"ModelConfig">;
def RopeScalingStruct : ConfigStruct<"RopeScaling">;

//===----------------------------------------------------------------------===//
// The IR attribute and its groups
//===----------------------------------------------------------------------===//

/// Where a field appears in the IR: the core `#etllm.model_config`, or a
/// group nested in it (an attribute of its own, a parameter of the core
/// one, present only when `present` holds for the struct `c`).
class ConfigAttrGroup<string n, string cpp, string p> {
  /// The nested parameter's name ("" for the core).
  string name = n;
  /// The attribute class, without "Attr".
  string cppName = cpp;
  /// When the builder from formats::ModelConfig `c` makes the group.
  string present = p;
}
def NotInAttr : ConfigAttrGroup<"", "", "">;
def CoreAttr : ConfigAttrGroup<"", "ModelConfig", "true">;
def MlaAttr : ConfigAttrGroup<"mla", "MlaConfig", "c.isMla()">;
def MoeAttr : ConfigAttrGroup<"moe", "MoeConfig", "c.hasMoeLayers()">;
def VisionAttr : ConfigAttrGroup<"vision", "VisionConfig", "c.hasVision()">;

/// A group nested in the core attribute (a field of CoreAttr).
class CfgNested<ConfigAttrGroup g>
    : ConfigType<"::mlir::etllm::" # g.cppName # "Attr", "nested"> {
  ConfigAttrGroup group = g;
}

//===----------------------------------------------------------------------===//
// Checks the attribute's verifier applies
//===----------------------------------------------------------------------===//

class ConfigCheck<string n> {
  string name = n;
}
def NoCheck : ConfigCheck<"none">;
/// An integer >= 0.
def NonNegative : ConfigCheck<"non_negative">;
/// A finite double >= 0.
def FiniteNonNegative : ConfigCheck<"finite_non_negative">;
// (CfgChoice and CfgEnum values are checked against their choices.)

//===----------------------------------------------------------------------===//
// A field
//===----------------------------------------------------------------------===//

class ConfigField<string k, ConfigType t, string m, string s> {
  /// The snake_case key: the IR parameter, the program metadata's JSON key,
  /// the ATen importer's `model_config` key and the struct's JSON key.
  string key = k;
  ConfigType type = t;
  /// The member of `owner` ("" for a field only the IR attribute has).
  string member = m;
  /// One line (the IR parameter's summary; the member's doc when
  /// `description` is empty).
  string summary = s;
  /// The member's documentation, when more than `summary`.
  string description = "";
  ConfigStruct owner = ModelConfigStruct;
  /// The member's default as a value ("" = 0, false, empty): a number,
  /// true/false, a string's text, an enum's spelling.
  string default = "";
  ConfigAttrGroup attr = NotInAttr;
  /// The IR parameter's default, when it differs from `default`.
  string attrDefault = default;
  /// The IR value, as C++ over `c` (the formats::ModelConfig), `maxSeqLen`
  /// and `dtype` (the builder's arguments); "" = `c.<member>`.
  string attrValue = "";
  /// A family key reads and writes it (models::ConfigField::<Member>).
  bit familyKey = 0;
  /// The program metadata's JSON has the key only when the value is not 0
  /// (fields added after programs were first written: their bytes stay the
  /// same).
  bit jsonOnlyWhenSet = 0;
  ConfigCheck check = NoCheck;
}

/// Shorthands for the IR attribute's fields.
class CoreField<string k, ConfigType t, string m, string s>
    : ConfigField<k, t, m, s> {
  let attr = CoreAttr;
  let check = !cond(!eq(t.kind, "int"): NonNegative,
                    !eq(t.kind, "real"): FiniteNonNegative,
                    true: NoCheck);
}
class MlaField<string k, string m, string s> : CoreField<k, CfgInt, m, s> {
  let attr = MlaAttr;
  let familyKey = 1;
}
class MoeField<string k, ConfigType t, string m, string s>
    : CoreField<k, t, m, s> {
  let attr = MoeAttr;
  let familyKey = 1;
}
class VisionField<string k, ConfigType t, string m, string s>
    : CoreField<k, t, m, s> {
  let attr = VisionAttr;
}
/// A member of RopeScaling.
class RopeField<string k, ConfigType t, string m, string s>
    : ConfigField<k, t, m, s> {
  let owner = RopeScalingStruct;
}

//===----------------------------------------------------------------------===//
// Enumerations
//===----------------------------------------------------------------------===//

def MoeScoringEnum : CfgEnum<"MoeScoring", [
    ConfigEnumCase<"Softmax", "softmax">,
    ConfigEnumCase<"Sigmoid", "sigmoid">],
  "How the router scores experts (ModelConfig::moeScoring).">;

def MoeTopkMethodEnum : CfgEnum<"MoeTopkMethod", [
    ConfigEnumCase<"Greedy", "greedy", "top-k over all scores">,
    ConfigEnumCase<"GroupLimitedGreedy", "group_limited_greedy",
                   "within the topk_group best of n_group groups by their "
                   "highest score (DeepSeek-V2)">,
    ConfigEnumCase<"NoauxTc", "noaux_tc",
                   "by scores + e_score_correction_bias within the groups "
                   "ranked by the sum of their two highest, weights from the "
                   "unbiased scores (DeepSeek-V3)">],
  "How the router selects experts (ModelConfig::moeTopkMethod).">;

//===----------------------------------------------------------------------===//
// The fields, in the order of the struct and of the IR attribute
//===----------------------------------------------------------------------===//

defset list<ConfigField> ModelConfigFields = {

def : CoreField<"architecture", CfgString, "architecture",
                "Hugging Face class, e.g. LlamaForCausalLM">;
def : CoreField<"model_type", CfgString, "modelType",
                "Hugging Face model_type, e.g. llama">;
def : CoreField<"dtype", CfgChoice<["float32", "float16", "bfloat16"]>, "",
                "activation dtype: float32, float16 or bfloat16"> {
  let attrValue = "dtype";
}

def : CoreField<"hidden_size", CfgInt, "hiddenSize", "hidden size">;
def : CoreField<"intermediate_size", CfgInt, "intermediateSize",
                "MLP intermediate size">;
def : CoreField<"num_hidden_layers", CfgInt, "numLayers",
                "number of decoder layers">;
def : CoreField<"num_attention_heads", CfgInt, "numHeads", "query heads">;
def : CoreField<"num_key_value_heads", CfgInt, "numKvHeads",
                "key/value heads">;
def : CoreField<"head_dim", CfgInt, "headDim", "per-head dimension"> {
  let description = "Per-head dimension; may differ from hiddenSize / "
                    "numHeads (Qwen3, Gemma).";
}
def : CoreField<"vocab_size", CfgInt, "vocabSize", "vocabulary size">;
def : ConfigField<"max_position_embeddings", CfgInt, "maxPositionEmbeddings",
                  "the longest sequence the model was trained for">;
def : CoreField<"max_seq_len", CfgInt, "",
                "KV-cache length, bound of dynamic dimensions"> {
  let attrValue = "maxSeqLen";
}
def : CoreField<"rotary_dim", CfgInt, "", "rotated dimensions per head"> {
  let attrValue = "c.rotaryDim()";
}
def : CoreField<"rms_norm_eps", CfgReal, "rmsNormEps", "RMSNorm epsilon"> {
  let default = "1e-6";
  let attrDefault = "0.0"; // unknown in hand-written IR
}
def : CoreField<"rope_theta", CfgReal, "ropeTheta", "RoPE base"> {
  let default = "10000.0";
  let attrDefault = "0.0"; // unknown in hand-written IR
}
def : CoreField<"rope_local_theta", CfgReal, "ropeLocalTheta",
                "RoPE base of the sliding-window layers (0: rope_theta)"> {
  let description = "The RoPE base of the sliding-window layers, which then "
                    "rotate with their own table and no rope scaling (Gemma "
                    "3's rope_local_base_freq); 0: every layer uses "
                    "ropeTheta.";
  let familyKey = 1;
  let jsonOnlyWhenSet = 1;
}
def : ConfigField<"rope_scaling", RopeScalingStruct, "ropeScaling",
                  "RoPE frequency scaling (HF rope_scaling)">;
def : ConfigField<"partial_rotary_factor", CfgReal, "partialRotaryFactor",
                  "fraction of each head that is rotated (Phi3)"> {
  let default = "1.0";
}
def : ConfigField<"original_max_position_embeddings", CfgInt,
                  "originalMaxPositionEmbeddings",
                  "Phi3 original_max_position_embeddings (0 when not given)"> {
  let familyKey = 1;
}
def : CoreField<"attention_scale", CfgReal, "",
                "attention softmax scale (0: head_dim^-0.5)"> {
  let attrValue = "c.attentionScale()";
}
def : CoreField<"sliding_window", CfgInt, "slidingWindow",
                "sliding-window size in tokens (0: none)">;
def : CoreField<"attn_logit_softcapping", CfgReal, "attnLogitSoftcapping",
                "tanh soft-cap of attention scores (0: none)"> {
  let description = "Gemma2: tanh soft-capping of attention scores; 0 = off.";
  let familyKey = 1;
}
def : CoreField<"final_logit_softcapping", CfgReal, "finalLogitSoftcapping",
                "tanh soft-cap of the logits (0: none)"> {
  let description = "Gemma2: tanh soft-capping of the final logits; 0 = off.";
  let familyKey = 1;
}
def : ConfigField<"query_pre_attn_scalar", CfgReal, "queryPreAttnScalar",
                  "scores scaled by this^-0.5 instead of head_dim^-0.5"> {
  let description = "Gemma2: scores are scaled by queryPreAttnScalar^-0.5 "
                    "instead of headDim^-0.5. 0 = use headDim.";
  let familyKey = 1;
}
def : ConfigField<"embedding_multiplier", CfgReal, "embeddingMultiplier",
                  "the embeddings are multiplied by this (Granite)"> {
  let description = "Scalar multipliers some families apply (Granite; 1 = "
                    "none): the embeddings are multiplied by "
                    "embeddingMultiplier, each residual branch (attention "
                    "and MLP output) by residualMultiplier before it is "
                    "added, and the logits are divided by logitsScaling.";
  let default = "1.0";
  let familyKey = 1;
}
def : ConfigField<"residual_multiplier", CfgReal, "residualMultiplier",
                  "each residual branch is multiplied by this (Granite)"> {
  let default = "1.0";
  let familyKey = 1;
}
def : ConfigField<"logits_scaling", CfgReal, "logitsScaling",
                  "the logits are divided by this (Granite)"> {
  let default = "1.0";
  let familyKey = 1;
}
def : ConfigField<"attention_multiplier", CfgReal, "attentionMultiplier",
                  "the attention scale itself when positive (Granite)"> {
  let description = "When positive, the attention scale itself (Granite's "
                    "attention_multiplier), instead of the head-size rule. "
                    "0 = none.";
  let familyKey = 1;
}

def : CoreField<"tie_word_embeddings", CfgBool, "tieWordEmbeddings",
                "lm_head shares the embedding">;
def : ConfigField<"attention_bias", CfgBool, "attentionBias",
                  "q/k/v projections have a bias"> {
  let description = "q/k/v projections have a bias (Qwen2 always; "
                    "Llama/Qwen3/Gemma per attention_bias).";
}
def : ConfigField<"o_proj_bias", CfgBool, "oProjBias",
                  "o_proj has a bias"> {
  let description = "o_proj has a bias (Llama/Qwen3/Gemma: attention_bias; "
                    "Qwen2: never).";
}
def : ConfigField<"mlp_bias", CfgBool, "mlpBias",
                  "gate/up/down have biases (Llama mlp_bias)">;
def : ConfigField<"hidden_act", CfgString, "hiddenAct",
                  "activation of the gated MLP: silu, gelu_pytorch_tanh, "
                  "gelu, ..."> {
  let default = "silu";
}

def : CoreField<"bos_token_id", CfgInt, "bosTokenId",
                "beginning-of-sequence token (-1: none)"> {
  let default = "-1";
  let check = NoCheck; // within the vocabulary: a rule between fields
}
def : CoreField<"eos_token_ids", CfgIntList, "eosTokenIds",
                "end-of-sequence tokens, primary first"> {
  let description = "End-of-sequence tokens, primary first (eos_token_id "
                    "may be a list in config.json).";
}
def : ConfigField<"pad_token_id", CfgInt, "padTokenId",
                  "padding token (-1: none)"> {
  let default = "-1";
}
def : ConfigField<"torch_dtype", CfgString, "torchDtype",
                  "\"float32\", \"float16\", \"bfloat16\", or \"\" when "
                  "unknown">;
def : CoreField<"layer_sliding_window", CfgBoolList, "layerUsesSlidingWindow",
                "per layer: attends within sliding_window"> {
  let description = "One entry per layer: true when that layer attends "
                    "within slidingWindow.";
}

//===--- Multi-head Latent Attention (DeepSeek-V2/V3) ---------------------===//

def : CoreField<"mla", CfgNested<MlaAttr>, "",
                "multi-head latent attention (absent: none)">;
def : MlaField<"q_lora_rank", "qLoraRank", "MLA: query LoRA rank (0: q_proj)"> {
  let description = "Multi-head Latent Attention (DeepSeek-V2/V3; all 0 for "
                    "other families). headDim is qk_rope_head_dim, the "
                    "rotated part of each query and key head (as "
                    "transformers' DeepseekV2Config.head_dim). q_lora_rank "
                    "0: q comes from q_proj (V2-Lite), else q_a_proj -> "
                    "q_a_layernorm -> q_b_proj.";
}
def : MlaField<"kv_lora_rank", "kvLoraRank",
               "MLA: rank of the cached latent (0: no MLA)">;
def : MlaField<"qk_nope_head_dim", "qkNopeHeadDim",
               "MLA: non-rotated part of each query/key head">;
def : MlaField<"v_head_dim", "vHeadDim", "MLA: value head size">;

//===--- Mixture of experts (the family's MlpBlock::SparseMoe) ------------===//

def : CoreField<"moe", CfgNested<MoeAttr>, "",
                "mixture of experts (absent: every layer is dense)">;
def : MoeField<"num_experts", CfgInt, "numExperts",
               "routed experts of a sparse layer (0: dense)"> {
  let description = "Routed experts per sparse layer (0: every layer is "
                    "dense). DeepSeek's configs carry n_routed_experts & co. "
                    "while all its layers are dense (first_k_dense_replace "
                    ">= numLayers): layerIsMoe says which layers are sparse.";
}
def : MoeField<"num_experts_per_tok", CfgInt, "numExpertsPerTok",
               "experts each token is routed to">;
def : MoeField<"moe_intermediate_size", CfgInt, "moeIntermediateSize",
               "intermediate size of one routed expert"> {
  let description = "Intermediate size of one routed expert (0: "
                    "intermediateSize, as Mixtral's experts).";
  let attrValue = "c.expertIntermediateSize()";
}
def : MoeField<"shared_expert_intermediate_size", CfgInt,
               "sharedExpertIntermediateSize",
               "intermediate size of the shared expert (0: none)">;
def : ConfigField<"num_shared_experts", CfgInt, "numSharedExperts",
                  "DeepSeek's n_shared_experts (its shared MLP is that many "
                  "experts wide)"> {
  let familyKey = 1;
}
def : MoeField<"norm_topk_prob", CfgBool, "normTopkProb",
               "the top-k routing weights are renormalized">;
def : MoeField<"moe_scoring", MoeScoringEnum, "moeScoring",
               "router scores: softmax or sigmoid">;
def : MoeField<"moe_topk_method", MoeTopkMethodEnum, "moeTopkMethod",
               "expert selection: greedy, group_limited_greedy or noaux_tc">;
def : MoeField<"n_group", CfgInt, "numExpertGroups",
               "expert groups of group-limited selection (0: none)"> {
  let description = "DeepSeek's n_group (0: no groups).";
}
def : MoeField<"topk_group", CfgInt, "topkGroup",
               "groups each token selects from">;
def : MoeField<"routed_scaling_factor", CfgReal, "routedScalingFactor",
               "multiplier of the routing weights"> {
  let default = "1.0";
}
def : ConfigField<"decoder_sparse_step", CfgInt, "decoderSparseStep",
                  "Qwen-MoE: every decoder_sparse_step-th layer is sparse"> {
  let default = "1";
  let familyKey = 1;
}
def : ConfigField<"mlp_only_layers", CfgIntList, "mlpOnlyLayers",
                  "Qwen-MoE: layers that stay dense"> {
  let familyKey = 1;
}
def : ConfigField<"first_k_dense_replace", CfgInt, "firstKDenseReplace",
                  "DeepSeek: the first layers that stay dense"> {
  let familyKey = 1;
}
def : ConfigField<"moe_layer_freq", CfgInt, "moeLayerFreq",
                  "DeepSeek: every moe_layer_freq-th layer after those is "
                  "sparse"> {
  let default = "1";
  let familyKey = 1;
}
def : MoeField<"layer_moe", CfgBoolList, "layerIsMoe",
               "per layer: has the sparse mixture-of-experts block"> {
  let description = "One entry per layer: true when the layer has the sparse "
                    "block (the family's MoeLayerRule over the fields "
                    "above).";
  let familyKey = 0;
}

//===--- A vision encoder composed with the decoder -----------------------===//
// LLaVA, Gemma 3, SmolVLM / Idefics3, or a traced encoder (custom). Read
// from config.json's vision_config and top-level keys by
// lib/Formats/HfVisionConfig.cpp (an mmproj's by GgufMmproj.cpp); the graph
// builder emits the `vision_encoder`, `token_embedding` and `text_decoder`
// methods from them; the runner reads image_token_id, image_seq_len,
// image_preprocessor and the image's wrapping from the program's metadata.

def : CoreField<"vision", CfgNested<VisionAttr>, "",
                "vision encoder and projector (absent: text only)">;
def : VisionField<"multimodal_type",
                  CfgChoice<["llava", "gemma3", "smolvlm", "idefics3",
                             "custom"]>,
                  "multimodalType",
                  "the composite model's model_type (\"\": text only)">;
def : VisionField<"vision_arch", CfgChoice<["clip", "siglip", "module"]>,
                  "visionArch",
                  "the vision tower: clip (CLIPVisionModel: class token, "
                  "pre-LayerNorm), siglip (SiglipVisionModel: patch bias, "
                  "no class token) or module (a traced torch module, "
                  "multimodal_type custom: model.vision_encoder)">;
def : VisionField<"vision_hidden_size", CfgInt, "visionHiddenSize",
                  "vision_config.hidden_size">;
def : VisionField<"vision_intermediate_size", CfgInt,
                  "visionIntermediateSize",
                  "vision_config.intermediate_size">;
def : VisionField<"vision_num_layers", CfgInt, "visionNumLayers",
                  "vision_config.num_hidden_layers">;
def : VisionField<"vision_num_heads", CfgInt, "visionNumHeads",
                  "vision_config.num_attention_heads">;
def : VisionField<"vision_image_size", CfgInt, "visionImageSize",
                  "vision_config.image_size (the side of the square input)">;
def : VisionField<"vision_patch_size", CfgInt, "visionPatchSize",
                  "vision_config.patch_size">;
def : VisionField<"vision_layer_norm_eps", CfgReal, "visionLayerNormEps",
                  "vision_config.layer_norm_eps"> {
  let default = "1e-05";
}
def : VisionField<"vision_hidden_act",
                  CfgChoice<["quick_gelu", "gelu", "gelu_pytorch_tanh"]>,
                  "visionHiddenAct", "vision_config.hidden_act">;
def : VisionField<"vision_layers_used", CfgInt, "visionLayersUsed",
                  "encoder layers whose output the projector takes"> {
  let description = "The encoder layers run: vision_feature_layer -2 of a "
                    "24-layer tower is 23 (hidden_states[-2] is the output "
                    "of layer 23; the last layer and post_layernorm are "
                    "not used).";
}
def : VisionField<"vision_drop_class_token", CfgBool,
                  "visionDropClassToken",
                  "vision_feature_select_strategy default: the first "
                  "feature (CLIP's class token; a SigLIP tower's first "
                  "patch, as transformers drops it) is dropped">;
def : VisionField<"projector_hidden_act", CfgChoice<["gelu", "none"]>,
                  "projectorHiddenAct",
                  "the 2-layer projector's activation">;
def : VisionField<"projector_bias", CfgBool, "projectorBias",
                  "multimodal_projector_bias">;
def : VisionField<"image_token_id", CfgInt, "imageTokenId",
                  "image_token_index: the placeholder id of an image "
                  "position">;
def : VisionField<"image_seq_len", CfgInt, "imageSeqLen",
                  "positions one image takes in the text (the encoder's "
                  "features)">;
def : VisionField<"image_preprocessor", CfgString, "imagePreprocessor",
                  "preprocessor_config.json's text, as exported">;
def : VisionField<"vision_post_layernorm", CfgBool, "visionPostLayerNorm",
                  "the features are the tower's last_hidden_state, after "
                  "its post_layernorm (Gemma 3)"> {
  let jsonOnlyWhenSet = 1;
}
def : VisionField<"vision_pool", CfgInt, "visionPool",
                  "the side of the average pool over the patch grid before "
                  "the projector (Gemma 3: patches per side / "
                  "sqrt(mm_tokens_per_image)); 0: none"> {
  let jsonOnlyWhenSet = 1;
}
def : VisionField<"vision_pixel_shuffle", CfgInt, "visionPixelShuffle",
                  "the connector's pixel-shuffle scale (SmolVLM, Idefics3: "
                  "scale_factor; each s x s block of patches becomes one "
                  "feature); 0: none"> {
  let jsonOnlyWhenSet = 1;
}
def : VisionField<"image_bidirectional", CfgBool, "imageBidirectional",
                  "an image's positions attend to each other both ways in "
                  "`text_decoder` (Gemma 3's token_type_ids mask)"> {
  let jsonOnlyWhenSet = 1;
}
def : VisionField<"image_begin_token_id", CfgInt, "imageBeginTokenId",
                  "the token before an image's features (Gemma 3's "
                  "boi_token_index); -1: none"> {
  let default = "-1";
  let check = NoCheck;
  let jsonOnlyWhenSet = 1;
}
def : VisionField<"image_end_token_id", CfgInt, "imageEndTokenId",
                  "the token after an image's features (Gemma 3's "
                  "eoi_token_index); -1: none"> {
  let default = "-1";
  let check = NoCheck;
  let jsonOnlyWhenSet = 1;
}
def : VisionField<"image_text_before", CfgString, "imageTextBefore",
                  "text the processor puts before an image (Gemma 3: two "
                  "newlines)"> {
  let jsonOnlyWhenSet = 1;
}
def : VisionField<"image_text_after", CfgString, "imageTextAfter",
                  "text the processor puts after an image"> {
  let jsonOnlyWhenSet = 1;
}
def : VisionField<"image_tile_text", CfgString, "imageTileText",
                  "an image split into tiles (SmolVLM): the text before "
                  "each tile's features, {row} and {col} its 1-based "
                  "place"> {
  let jsonOnlyWhenSet = 1;
}
def : VisionField<"image_row_end_text", CfgString, "imageRowEndText",
                  "an image split into tiles: the text after each row of "
                  "tiles"> {
  let jsonOnlyWhenSet = 1;
}
def : VisionField<"image_tiles_end_text", CfgString, "imageTilesEndText",
                  "an image split into tiles: the text after the last row, "
                  "before the global image's image_text_before"> {
  let jsonOnlyWhenSet = 1;
}

//===--- Traits of the family (set from `architecture`) -------------------===//

def : ConfigField<"fused_qkv", CfgBool, "fusedQkv",
                  "Phi3: one qkv_proj [(H + 2*KV) * D, hidden], split q, k, v">;
def : ConfigField<"fused_gate_up", CfgBool, "fusedGateUp",
                  "Phi3: one gate_up_proj [2 * ffn, hidden], first half "
                  "gate">;
def : ConfigField<"qk_norm", CfgBool, "qkNorm",
                  "Qwen3: RMSNorm over each head of q and k (weights "
                  "[headDim])">;
def : ConfigField<"norm_adds_one", CfgBool, "normAddsOne",
                  "Gemma/Gemma2: RMSNorm computes x * (1 + w)">;
def : ConfigField<"scale_embeddings", CfgBool, "scaleEmbeddings",
                  "Gemma/Gemma2: embeddings are multiplied by "
                  "sqrt(hiddenSize) (in the embedding dtype)">;
def : ConfigField<"sandwich_norms", CfgBool, "sandwichNorms",
                  "Gemma2: post_attention_layernorm on the attention output, "
                  "and pre_/post_feedforward_layernorm around the MLP">;

//===--- RopeScaling (HF rope_scaling) ------------------------------------===//

def : RopeField<"type", CfgString, "type",
                "\"\" (none), \"linear\", \"llama3\" or \"yarn\" (DeepSeek)">;
def : RopeField<"factor", CfgReal, "factor",
                "the frequencies are divided by this"> {
  let description = "linear and llama3: frequencies are divided by `factor` "
                    "(llama3: only the low frequencies, smoothly); yarn: the "
                    "interpolated frequencies are.";
  let default = "1.0";
}
def : RopeField<"low_freq_factor", CfgReal, "lowFreqFactor", "llama3 only"> {
  let default = "1.0";
}
def : RopeField<"high_freq_factor", CfgReal, "highFreqFactor",
                "llama3 only"> {
  let default = "4.0";
}
def : RopeField<"original_max_position_embeddings", CfgInt,
                "originalMaxPositionEmbeddings", "llama3 and yarn">;
def : RopeField<"beta_fast", CfgReal, "betaFast", "yarn only"> {
  let description = "yarn only (DeepseekV2YarnRotaryEmbedding): the rotation "
                    "counts that bound the interpolation ramp, and the "
                    "magnitude scales. cos/sin are multiplied by "
                    "mscale(factor, mscale) / mscale(factor, mscale_all_dim) "
                    "and the softmax scale by mscale(factor, "
                    "mscale_all_dim)^2 (when mscale_all_dim is not 0), "
                    "mscale(s, m) = 0.1 m ln(s) + 1.";
  let default = "32.0";
}
def : RopeField<"beta_slow", CfgReal, "betaSlow", "yarn only"> {
  let default = "1.0";
}
def : RopeField<"mscale", CfgReal, "mscale", "yarn only"> {
  let default = "1.0";
}
def : RopeField<"mscale_all_dim", CfgReal, "mscaleAllDim", "yarn only">;
def : RopeField<"freq_factors", CfgFloatList, "freqFactors",
                "GGUF only: llama.cpp's per-frequency divisors"> {
  let description = "GGUF only: llama.cpp's per-frequency divisors (the "
                    "rope_freqs.weight tensor its converter writes for "
                    "llama3 scaling), headDim*partial/2 values; empty "
                    "otherwise. When non-empty it is authoritative: "
                    "inv_freq[i] = base^(-2i/d) / freqFactors[i].";
}

} // ModelConfigFields

#endif // ETLLM_MODELS_MODEL_CONFIG_TD
