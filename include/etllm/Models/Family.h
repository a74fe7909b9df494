//===- Family.h - One spec per model family ---------------------*- C++ -*-===//
//
// A model family (Llama, Qwen2, Gemma2, ...) is one FamilySpec, defined in
// one file under lib/Models/Families/ and found through the registry
// (etllm/Models/Registry.h). The spec is data — what the Hugging Face
// modeling code and llama.cpp's converter do for the family — and the
// readers, writers, generator and graph builder interpret it; nothing
// outside the registry compares architecture names.
//
// The shape follows llama.cpp's src/llama-arch.cpp (one table of GGUF keys
// and tensor names per architecture) and transformers' modular model files
// (a family says how it differs from the one it derives from: a spec may
// start from another family's spec and change fields).
//
// Nothing here depends on LLVM/MLIR.
//
//===----------------------------------------------------------------------===//
#ifndef ETLLM_MODELS_FAMILY_H
#define ETLLM_MODELS_FAMILY_H

#include <array>
#include <cstdint>
#include <cstddef>
#include <vector>

namespace etllm::formats {
struct ModelConfig;
} // namespace etllm::formats

namespace etllm::models {

//===----------------------------------------------------------------------===//
// Graph structure: which block builders the graph builder uses
//===----------------------------------------------------------------------===//

/// The attention block of a decoder layer (lib/Import/Blocks/Attention.cpp).
enum class AttentionBlock : uint8_t {
  /// q_proj, k_proj, v_proj and o_proj (Llama); optional biases and
  /// per-head q/k RMSNorm (Traits::qkNorm).
  Separate,
  /// One qkv_proj [(H + 2 KV) * D, hidden] sliced into q, k, v (Phi3).
  FusedQkv,
  /// Multi-head Latent Attention (DeepSeek-V2/V3, DeepSeek's
  /// modeling_deepseek.py and transformers' modeling_deepseek_v3.py):
  /// q from q_proj, or from q_a_proj -> q_a_layernorm -> q_b_proj when
  /// q_lora_rank is set; kv_a_proj_with_mqa gives the compressed latent
  /// (kv_lora_rank) and one shared rope key (qk_rope_head_dim);
  /// kv_a_layernorm, then kv_b_proj expands the latent into per-head
  /// k_nope and v; RoPE on the rope parts only, in DeepSeek's interleaved
  /// layout.
  Mla,
};

/// The MLP block of a decoder layer (lib/Import/Blocks/Mlp.cpp).
enum class MlpBlock : uint8_t {
  /// down_proj(act(gate_proj(x)) * up_proj(x)) (Llama).
  Gated,
  /// One gate_up_proj [2 * F, hidden], the first half the gate (Phi3).
  FusedGateUp,
  /// A sparse mixture-of-experts block (lib/Import/Blocks/Moe.cpp) in the
  /// layers the family's MoeSpec::layers rule makes sparse, the Gated MLP
  /// in the others: a router (softmax or sigmoid scores, top-k, optional
  /// renormalization, group-limited selection and score-correction bias, a
  /// scaling factor), the routed experts' gate/up/down projections and the
  /// shared experts (MixtralSparseMoeBlock, Qwen2MoeSparseMoeBlock,
  /// Qwen3MoeSparseMoeBlock, DeepseekV2Moe, DeepseekV3MoE).
  SparseMoe,
};

/// How a decoder layer wires norms, attention, MLP and residuals
/// (lib/Import/Blocks/DecoderLayer.cpp).
enum class DecoderLayerBlock : uint8_t {
  /// h += attn(input_layernorm(h)); h += mlp(post_attention_layernorm(h)).
  PreNorm,
  /// Gemma2: post_attention_layernorm on the attention output, and
  /// pre_/post_feedforward_layernorm around the MLP.
  Sandwich,
};

/// The block builders of a family. Rotary embedding, masks, embedding and
/// head have one builder each today.
struct Blocks {
  AttentionBlock attention = AttentionBlock::Separate;
  MlpBlock mlp = MlpBlock::Gated;
  DecoderLayerBlock decoderLayer = DecoderLayerBlock::PreNorm;
};

/// Variations inside the blocks.
struct Traits {
  /// Qwen3: RMSNorm over each head of q and k (weights [head_dim]).
  bool qkNorm = false;
  /// Gemma: RMSNorm computes x * (1 + w).
  bool normAddsOne = false;
  /// Gemma: embeddings are multiplied by sqrt(hidden_size).
  bool scaleEmbeddings = false;
};

//===----------------------------------------------------------------------===//
// Hugging Face modules and tensors
//===----------------------------------------------------------------------===//

/// A module of the Hugging Face modeling code, named by HfNames.
enum class HfModule : uint8_t {
  // Model-level modules: full paths.
  Model,
  Embed,
  Rotary,
  /// The rotary embedding of the sliding-window layers when they have
  /// their own RoPE base (Gemma 3's "rotary_emb_local").
  RotaryLocal,
  Layers,
  FinalNorm,
  LmHead,
  // Per-layer modules: paths relative to "<Layers>.<i>".
  InputNorm,
  Attention,
  QProj,
  KProj,
  VProj,
  QkvProj,
  OProj,
  QNorm,
  KNorm,
  PostAttentionNorm,
  PreFeedforwardNorm,
  PostFeedforwardNorm,
  Mlp,
  GateProj,
  UpProj,
  GateUpProj,
  DownProj,
  ActFn,
  // Mixture-of-experts blocks (MlpBlock::SparseMoe), relative to the layer.
  /// The sparse block ("mlp", Mixtral's "block_sparse_moe").
  Moe,
  /// Its router ("mlp.gate": a Linear, or DeepSeek-V3's TopkRouter).
  MoeRouter,
  /// DeepSeek-V3's e_score_correction_bias: a bare parameter of the router
  /// (the full tensor name, without ".weight"; isBareParameter).
  MoeRouterBias,
  /// The ModuleList of routed experts ("mlp.experts"); expert j is
  /// "<MoeExperts>.<j>".
  MoeExperts,
  /// Projections of one routed expert, relative to "<MoeExperts>.<j>"
  /// ("gate_proj", Mixtral's "w1"; isExpertModule).
  ExpertGateProj,
  ExpertUpProj,
  ExpertDownProj,
  ExpertActFn,
  /// The shared expert(s) ("mlp.shared_expert", DeepSeek's
  /// "mlp.shared_experts") and their projections.
  SharedExpert,
  SharedGateProj,
  SharedUpProj,
  SharedDownProj,
  SharedActFn,
  /// Qwen2-MoE's sigmoid gate of the shared expert ("mlp.shared_expert_gate").
  SharedExpertGate,
  // Multi-head Latent Attention (AttentionBlock::Mla).
  QAProj,
  QALayerNorm,
  QBProj,
  KvAProjWithMqa,
  KvALayerNorm,
  KvBProj,
};
inline constexpr int kNumHfModules = static_cast<int>(HfModule::KvBProj) + 1;

/// Module paths, indexed by HfModule.
using HfNames = std::array<const char *, kNumHfModules>;

/// The names of transformers' Llama modeling code, which every supported
/// family derives from (LlamaModel, LlamaDecoderLayer, ...).
inline constexpr HfNames kTransformersNames = {
    "model",
    "model.embed_tokens",
    "model.rotary_emb",
    "model.rotary_emb_local",
    "model.layers",
    "model.norm",
    "lm_head",
    "input_layernorm",
    "self_attn",
    "self_attn.q_proj",
    "self_attn.k_proj",
    "self_attn.v_proj",
    "self_attn.qkv_proj",
    "self_attn.o_proj",
    "self_attn.q_norm",
    "self_attn.k_norm",
    "post_attention_layernorm",
    "pre_feedforward_layernorm",
    "post_feedforward_layernorm",
    "mlp",
    "mlp.gate_proj",
    "mlp.up_proj",
    "mlp.gate_up_proj",
    "mlp.down_proj",
    "mlp.act_fn",
    // Qwen2-MoE / Qwen3-MoE / DeepSeek's MoE block.
    "mlp",
    "mlp.gate",
    "mlp.gate.e_score_correction_bias",
    "mlp.experts",
    "gate_proj",
    "up_proj",
    "down_proj",
    "act_fn",
    "mlp.shared_expert",
    "mlp.shared_expert.gate_proj",
    "mlp.shared_expert.up_proj",
    "mlp.shared_expert.down_proj",
    "mlp.shared_expert.act_fn",
    "mlp.shared_expert_gate",
    "self_attn.q_a_proj",
    "self_attn.q_a_layernorm",
    "self_attn.q_b_proj",
    "self_attn.kv_a_proj_with_mqa",
    "self_attn.kv_a_layernorm",
    "self_attn.kv_b_proj",
};

namespace detail {
constexpr bool sameName(const char *a, const char *b) {
  return *a == *b && (*a == '\0' || sameName(a + 1, b + 1));
}
} // namespace detail
// The table follows the enum: a module added to one and not at the same
// place in the other shifts every name after it.
static_assert(detail::sameName(
                  kTransformersNames[static_cast<std::size_t>(HfModule::Layers)],
                  "model.layers") &&
                  detail::sameName(kTransformersNames[static_cast<std::size_t>(
                                       HfModule::InputNorm)],
                                   "input_layernorm") &&
                  detail::sameName(kTransformersNames[static_cast<std::size_t>(
                                       HfModule::KvBProj)],
                                   "self_attn.kv_b_proj"),
              "kTransformersNames is out of step with HfModule");

//===----------------------------------------------------------------------===//
// GGUF (llama.cpp) keys and tensors
//===----------------------------------------------------------------------===//

/// A GGUF metadata key, spelled as llama.cpp's LLM_KV_* / gguf-py Keys
/// (ggufKeyName). Keys of the architecture are prefixed "<arch>.".
enum class GgufKey : uint8_t {
  None,
  ContextLength,         // {arch}.context_length
  EmbeddingLength,       // {arch}.embedding_length
  BlockCount,            // {arch}.block_count
  FeedForwardLength,     // {arch}.feed_forward_length
  HeadCount,             // {arch}.attention.head_count
  HeadCountKv,           // {arch}.attention.head_count_kv
  RmsEpsilon,            // {arch}.attention.layer_norm_rms_epsilon
  KeyLength,             // {arch}.attention.key_length
  ValueLength,           // {arch}.attention.value_length
  SlidingWindow,         // {arch}.attention.sliding_window
  RopeFreqBase,          // {arch}.rope.freq_base
  RopeDimensionCount,    // {arch}.rope.dimension_count
  RopeScalingLinear,     // {arch}.rope.scaling.type + .factor (linear only)
  RopeScalingFactor,     // {arch}.rope.scaling.factor
  RopeScaleLinear,       // {arch}.rope.scale_linear (older files)
  RopeOriginalContext,   // {arch}.rope.scaling.original_context_length
  VocabSize,             // {arch}.vocab_size
  AttnLogitSoftcapping,  // {arch}.attn_logit_softcapping
  FinalLogitSoftcapping, // {arch}.final_logit_softcapping
  AttentionScale,        // {arch}.attention.scale
  EmbeddingScale,        // {arch}.embedding_scale
  ResidualScale,         // {arch}.residual_scale
  LogitScale,            // {arch}.logit_scale
  FileType,              // general.file_type
  // Mixture of experts (gguf-py Keys.LLM.EXPERT_*; llama.cpp's deepseek2
  // loader reads them even for a model whose layers are all dense).
  ExpertCount,                   // {arch}.expert_count
  ExpertUsedCount,               // {arch}.expert_used_count
  ExpertFeedForwardLength,       // {arch}.expert_feed_forward_length
  ExpertSharedFeedForwardLength, // {arch}.expert_shared_feed_forward_length
  ExpertSharedCount,             // {arch}.expert_shared_count
  ExpertWeightsScale,            // {arch}.expert_weights_scale
  ExpertWeightsNorm,             // {arch}.expert_weights_norm
  ExpertGatingFunc,              // {arch}.expert_gating_func
  ExpertGroupCount,              // {arch}.expert_group_count
  ExpertGroupUsedCount,          // {arch}.expert_group_used_count
  LeadingDenseBlockCount,        // {arch}.leading_dense_block_count
  // Multi-head Latent Attention (llama.cpp's deepseek2).
  QLoraRank,               // {arch}.attention.q_lora_rank
  KvLoraRank,              // {arch}.attention.kv_lora_rank
  KeyLengthMla,            // {arch}.attention.key_length_mla
  ValueLengthMla,          // {arch}.attention.value_length_mla
  RopeScalingYarnLogMul,   // {arch}.rope.scaling.yarn_log_multiplier
  RopeScalingYarnBetaFast, // {arch}.rope.scaling.yarn_beta_fast
  RopeScalingYarnBetaSlow, // {arch}.rope.scaling.yarn_beta_slow
};

/// A GGUF tensor, spelled as llama.cpp's LLM_TENSOR_* names
/// (ggufTensorName). Per-layer tensors are "blk.<i>.<name>".
enum class GgufTensor : uint8_t {
  TokenEmbd,    // token_embd
  OutputNorm,   // output_norm
  Output,       // output
  RopeFreqs,    // rope_freqs
  AttnNorm,     // attn_norm
  AttnQ,        // attn_q
  AttnK,        // attn_k
  AttnV,        // attn_v
  AttnQkv,      // attn_qkv
  AttnOut,      // attn_output
  AttnQNorm,    // attn_q_norm
  AttnKNorm,    // attn_k_norm
  AttnPostNorm, // post_attention_norm
  FfnNorm,      // ffn_norm
  FfnGate,      // ffn_gate
  FfnUp,        // ffn_up
  FfnDown,      // ffn_down
  FfnPostNorm,  // post_ffw_norm
  // Mixture of experts. The *_exps tensors stack every routed expert's
  // projection along a leading dimension [E, ...] (ggml ne[2]).
  FfnGateInp,      // ffn_gate_inp (the router)
  FfnGateExps,     // ffn_gate_exps
  FfnUpExps,       // ffn_up_exps
  FfnDownExps,     // ffn_down_exps
  FfnGateInpShexp, // ffn_gate_inp_shexp (the shared expert's gate)
  FfnGateShexp,    // ffn_gate_shexp
  FfnUpShexp,      // ffn_up_shexp
  FfnDownShexp,    // ffn_down_shexp
  FfnExpProbsB,    // exp_probs_b (".bias": e_score_correction_bias)
  // Multi-head Latent Attention (deepseek2).
  AttnQA,      // attn_q_a
  AttnQANorm,  // attn_q_a_norm
  AttnQB,      // attn_q_b
  AttnKvAMqa,  // attn_kv_a_mqa
  AttnKvANorm, // attn_kv_a_norm
  AttnKvB,     // attn_kv_b (the joint form of older converters)
  AttnKB,      // attn_k_b (the split form: kv_b_proj's key half, transposed)
  AttnVB,      // attn_v_b (the split form: kv_b_proj's value half)
};

/// One row of a family's tensor-name table: the llama.cpp tensor and the
/// Hugging Face module whose weight (and bias) it holds.
struct GgufTensorName {
  GgufTensor gguf;
  HfModule hf;
};

//===----------------------------------------------------------------------===//
// Config keys
//===----------------------------------------------------------------------===//

// models::ConfigField: the ModelConfig fields a family key reads and writes
// (generated from etllm/Models/ModelConfig.td: the fields marked familyKey).
#define GET_CONFIG_FIELD_ENUM
#include "etllm/Models/ModelConfig.h.inc"

/// What JSON value a key holds (the ModelConfig field stores it as a number,
/// except for lists).
enum class KeyType : uint8_t {
  Number,
  /// true / false; the field is 1 / 0. GGUF: a bool.
  Bool,
  /// One of ConfigKey::choices; the field is its index. GGUF: the u32 code
  /// ConfigKey::ggufCodes gives the index (llama.cpp's enum).
  Choice,
  /// A list of non-negative integers (ConfigField::MlpOnlyLayers).
  IntList,
};

/// The values a key accepts.
enum class KeyRange : uint8_t {
  NonNegative,
  Positive,
  /// A size: an integer in [1, kMaxConfigDim].
  Dim,
  /// A count: an integer in [0, kMaxConfigDim].
  Count,
};

/// What an unset (zero) field stands for, in the writer and when a format
/// cannot carry the key.
enum class KeyFallback : uint8_t {
  Zero,
  One,
  HeadDim,
  MaxPositionEmbeddings,
  IntermediateSize,
  /// intermediate_size / experts per token (llama.cpp's guess for a
  /// missing expert_feed_forward_length).
  IntermediatePerExpertUsed,
  NumLayers,
};

/// A config key only some families have, with its GGUF counterpart.
struct ConfigKey {
  /// The config.json key.
  const char *hf;
  /// The GGUF key holding the same value; None when GGUF cannot express it
  /// (the field is then `fallback`).
  GgufKey gguf = GgufKey::None;
  ConfigField field;
  /// Value when config.json lacks the key (the config class default).
  double hfDefault = 0;
  /// Value when the GGUF file lacks the key (what llama.cpp assumes).
  double ggufDefault = 0;
  /// config.json `null` means 0 ("off") instead of the default.
  bool nullIsZero = false;
  KeyRange range = KeyRange::NonNegative;
  KeyFallback fallback = KeyFallback::Zero;
  /// Writer: 0 becomes `null`.
  bool writeZeroAsNull = false;
  /// Writer: an integral value is written as an integer.
  bool writeIntegral = false;
  KeyType type = KeyType::Number;
  /// KeyType::Choice: the accepted strings (index = field value) and, when
  /// GGUF carries the key, llama.cpp's code for each.
  std::vector<const char *> choices = {};
  std::vector<uint32_t> ggufCodes = {};
  /// The value GGUF implies when `gguf` is None and the key is not the
  /// fallback's (llama.cpp hard-codes it for the architecture: Qwen3-MoE
  /// always renormalizes its top-k weights).
  bool ggufImplied = false;
};

/// A key the config class always writes with one value.
struct ConstantKey {
  enum class Kind : uint8_t { Null, Int, Double, String, Bool };
  const char *key;
  Kind kind;
  /// Int and Bool (0/1) values.
  int64_t intValue = 0;
  double doubleValue = 0;
  const char *stringValue = nullptr;
  /// The reader rejects a config.json whose key holds another value (a
  /// setting of the class that etllm does not build: DeepSeek's
  /// attention_bias true, rope_interleave false); a missing key is the
  /// class default, this value.
  bool enforced = false;
};

/// Which projections carry biases and how config.json says so.
enum class BiasRule : uint8_t {
  /// `attention_bias` on q, k, v and o (Llama, Qwen3, Gemma).
  AttentionBiasKey,
  /// Always on q, k, v; never on o (Qwen2).
  QkvOnly,
  /// None (Mistral, Phi3).
  None,
};

/// Which layers use `sliding_window` and how config.json says so (a
/// transformers 5 `layer_types` list overrides any of these).
enum class SlidingWindowRule : uint8_t {
  /// No sliding window (Llama, Gemma).
  None,
  /// Every layer when sliding_window is set (Mistral, Phi3).
  AllLayers,
  /// Layers from max_window_layers on, when use_sliding_window (Qwen2).
  FromMaxWindowLayers,
  /// Even layers (Gemma2).
  EvenLayers,
  /// Every layer but each `slidingWindowPattern`-th (Gemma 3: five local
  /// layers to one global, layers 5, 11, ... global).
  Pattern,
};

/// Where the config.json writer puts head_dim.
enum class HeadDimKey : uint8_t {
  Always,
  /// Only when it differs from hidden_size / num_attention_heads (Qwen2).
  IfNotDefault,
  /// Never: head_dim must be the default (Phi3).
  Never,
};

/// Whether config.json can say rope_scaling.
enum class RopeScalingKey : uint8_t {
  Always,
  /// Written only when set (Mistral).
  IfSet,
  Unsupported,
};

/// Which decoder layers have the sparse MoE block (MlpBlock::SparseMoe);
/// the others have the dense Gated MLP of intermediate_size.
enum class MoeLayerRule : uint8_t {
  /// Every layer (Mixtral).
  AllLayers,
  /// Layer i unless it is in mlp_only_layers, when (i + 1) %
  /// decoder_sparse_step == 0 (Qwen2-MoE, Qwen3-MoE).
  SparseStep,
  /// Layer i when i >= first_k_dense_replace and i % moe_layer_freq == 0
  /// (DeepSeek-V2/V3).
  FirstKDense,
};

/// The shared expert(s) of a MoE block, added to the routed experts' sum.
enum class SharedExpertKind : uint8_t {
  None,
  /// One gated MLP of shared_expert_intermediate_size, scaled by
  /// sigmoid(shared_expert_gate(x)) (Qwen2-MoE).
  SigmoidGated,
  /// One MLP of shared_expert_intermediate_size (DeepSeek: n_shared_experts
  /// * moe_intermediate_size; the family sets it), ungated.
  Plain,
};

// MoeScoring and MoeTopkMethod with their spellings (kMoeScoringNames,
// kMoeTopkMethodNames), generated from etllm/Models/ModelConfig.td.
#define GET_CONFIG_ENUMS
#include "etllm/Models/ModelConfig.h.inc"

/// How the router's logits are computed, i.e. which module scope
/// torch.export records for the routing.
enum class MoeRouterForm : uint8_t {
  /// `self.gate(x)`, an nn.Linear called as a module, in the model dtype;
  /// the scoring and selection in the block (Mixtral, Qwen-MoE).
  Linear,
  /// `F.linear(x.float(), self.gate.weight.float())` in the block
  /// (DeepseekV2Moe).
  Float32Linear,
  /// `self.gate(x)`, a router module of class MoeSpec::routerClass that
  /// computes the float32 logits and the whole routing (DeepseekV3TopkRouter).
  Module,
};

/// The mixture-of-experts structure of a family (MlpBlock::SparseMoe).
struct MoeSpec {
  MoeLayerRule layers = MoeLayerRule::AllLayers;
  SharedExpertKind sharedExpert = SharedExpertKind::None;
  /// The routing of a config that has no key for it (Mixtral always
  /// renormalizes its top-2 softmax weights).
  MoeScoring scoring = MoeScoring::Softmax;
  MoeTopkMethod topkMethod = MoeTopkMethod::Greedy;
  bool normTopkProb = false;
  MoeRouterForm router = MoeRouterForm::Linear;
  /// renormalization divides by sum + 1e-20 (DeepSeek) instead of sum.
  bool normEpsilon = false;
  /// Class names of the modeling code, after the family prefix: the
  /// sparse block ("SparseMoeBlock"), an expert ("MLP"; Mixtral
  /// "BlockSparseTop2MLP"), the shared expert ("MLP").
  const char *blockClass = "SparseMoeBlock";
  const char *expertClass = "MLP";
  const char *sharedClass = "MLP";
  /// MoeRouterForm::Module: the router's class ("TopkRouter").
  const char *routerClass = "TopkRouter";
};

/// The Hugging Face config class of the family.
struct HfConfigSpec {
  //--- Class defaults for keys config.json may omit.
  int64_t maxPositionEmbeddings = 2048;
  double rmsNormEps = 1e-6;
  bool tieWordEmbeddings = false;
  const char *hiddenAct = "silu";
  /// Special tokens; -1 means None.
  int64_t bosTokenId = -1, eosTokenId = -1, padTokenId = -1;
  /// head_dim when config.json has none; 0: hidden_size / heads.
  int64_t headDim = 0;
  /// The config.json key holding head_dim (DeepSeek: qk_rope_head_dim, the
  /// rotated part of a head, which transformers' DeepseekV2Config calls
  /// head_dim).
  const char *headDimKeyName = "head_dim";

  //--- Keys and how they map.
  /// Keys naming the MLP activation, read in order (messages name the
  /// first); the writer uses `activationWriteKey`.
  std::vector<const char *> activationKeys = {"hidden_act"};
  const char *activationWriteKey = "hidden_act";
  HeadDimKey headDimKey = HeadDimKey::Always;
  BiasRule bias = BiasRule::AttentionBiasKey;
  /// `mlp_bias` on gate/up/down.
  bool mlpBiasKey = false;
  RopeScalingKey ropeScaling = RopeScalingKey::Always;
  /// `partial_rotary_factor` may differ from 1 (Phi3).
  bool partialRotaryFactorKey = false;
  /// rope_scaling may be YaRN (DeepSeek: factor, original_max_position_
  /// embeddings, beta_fast, beta_slow, mscale, mscale_all_dim).
  bool yarnRopeScaling = false;
  SlidingWindowRule slidingWindow = SlidingWindowRule::None;
  /// sliding_window when config.json lacks the key (Gemma2: 4096).
  int64_t defaultSlidingWindow = 0;
  /// SlidingWindowRule::Pattern: every this-many-th layer is global
  /// (config.json `sliding_window_pattern`; llama.cpp hard-codes it per
  /// architecture).
  int64_t slidingWindowPattern = 0;
  /// rope_theta when config.json lacks the key (Mixtral: 1e6).
  double ropeTheta = 10000.0;
  /// Keys only this family has.
  std::vector<ConfigKey> keys;
  /// Keys its config class writes with a fixed value.
  std::vector<ConstantKey> constants;
};

/// What llama.cpp's converter (convert_hf_to_gguf.py) makes of the family.
struct GgufSpec {
  /// general.architecture; null: the family has no GGUF form.
  const char *arch = nullptr;
  /// A file of `arch` opens as this family. False when llama.cpp converts
  /// the family to another's architecture (Mistral to "llama").
  bool readsBack = true;
  /// q/k rows are permuted to interleaved RoPE pairs (LlamaModel.permute).
  bool permutesQk = false;
  /// Every norm weight is stored with the +1 of x * (1 + w) added (Gemma).
  bool normWeightsIncludeOne = false;
  /// lm_head is dropped (the output must be tied).
  bool dropsLmHead = false;
  /// DeepseekV2Model: kv_b_proj is written split per head into attn_k_b
  /// (the key half, transposed: [heads, kv_lora_rank, qk_nope_head_dim])
  /// and attn_v_b ([heads, v_head_dim, kv_lora_rank]), with head_count_kv 1
  /// and the MLA key/value lengths; older converters wrote the joint
  /// attn_kv_b. The reader accepts both.
  bool splitsKvB = false;
  /// When several families share `arch` (DeepSeek-V2 and V3 both convert
  /// to deepseek2), a file opens as the one whose `identityKey` holds
  /// `identityValue` (expert_gating_func: 1 softmax for V2, 2 sigmoid for
  /// V3); a file without the key opens as the family marked
  /// `identityDefault` (what llama.cpp assumes then). The generator writes
  /// the key.
  GgufKey identityKey = GgufKey::None;
  int64_t identityValue = 0;
  bool identityDefault = false;
  /// The metadata the converter writes, in its order. The reader also
  /// reads the family-specific ones among them (sliding window, ...).
  std::vector<GgufKey> metadata;
  /// A file of `arch` opens as this family only when it has this key (and
  /// as the family of `arch` without one otherwise): llama.cpp's "llama"
  /// with expert_count is Mixtral.
  GgufKey readsBackWithKey = GgufKey::None;
  /// llama.cpp's tensor-name table of the architecture (LLM_TENSOR_NAMES).
  std::vector<GgufTensorName> tensors;
};

//===----------------------------------------------------------------------===//
// Generator (etllm-gen-checkpoint)
//===----------------------------------------------------------------------===//

/// The synthetic tokenizer of a generated checkpoint.
enum class SyntheticVocab : uint8_t {
  /// The family's (GeneratorSpec::vocab).
  FamilyDefault,
  /// <unk> <s> </s>, byte tokens, words (Llama 2).
  SentencePiece,
  /// <pad> <eos> <bos> <unk>, byte tokens, words; no space prefix (Gemma).
  GemmaSentencePiece,
  /// Byte-level BPE with Qwen2's three specials.
  Qwen2Bpe,
  /// Byte-level BPE with Llama 3's 256 specials.
  Llama3Bpe,
};

/// The sizes of a generated model (--preset).
struct GeneratorPreset {
  const char *name = "tiny";
  int64_t hidden = 64, layers = 2, heads = 4, kvHeads = 2, headDim = 16,
          ffn = 128, vocabSize = 512, maxSeq = 128;
  bool tied = false;
  double ropeTheta = 10000.0, rmsEps = 1e-5;
  int64_t slidingWindow = 0;
  /// --rope-scaling when none is given ("": none).
  const char *ropeScaling = "";
  /// Multi-head Latent Attention (AttentionBlock::Mla; headDim is then
  /// qk_rope_head_dim): q_lora_rank (0: q_proj), kv_lora_rank,
  /// qk_nope_head_dim and v_head_dim.
  int64_t qLoraRank = 0, kvLoraRank = 0, qkNopeHeadDim = 0, vHeadDim = 0;
  /// Mixture of experts: routed experts, experts per token, DeepSeek's
  /// shared-expert count, the expert and shared-expert intermediate sizes.
  /// MlpBlock::SparseMoe builds them (DeepSeek's generated checkpoints
  /// have first_k_dense_replace 1). expertGroups / topkGroup: DeepSeek's
  /// n_group and topk_group (0: the family's default).
  int64_t experts = 0, expertsPerTok = 0, sharedExperts = 0, moeFfn = 0,
          sharedFfn = 0, expertGroups = 0, topkGroup = 0;
  SyntheticVocab vocab = SyntheticVocab::FamilyDefault;
};

struct GeneratorSpec {
  SyntheticVocab vocab = SyntheticVocab::SentencePiece;
  /// The "tiny" preset with the family's changes.
  GeneratorPreset tiny;
  /// More presets of this family.
  std::vector<GeneratorPreset> presets;
  /// --rope-scaling llama3 is allowed (llama.cpp stores it as rope_freqs).
  bool llama3RopeScaling = false;
  /// Sets the family's own fields after the sizes are known. Without it,
  /// each family key gets the value both formats agree on: its config-class
  /// default when GGUF carries the key (or, for a 0 default, its fallback),
  /// else its fallback.
  void (*configure)(formats::ModelConfig &config) = nullptr;
};

//===----------------------------------------------------------------------===//
// The spec
//===----------------------------------------------------------------------===//

struct FamilySpec {
  /// The family id: etllm-gen-checkpoint's --arch ("llama").
  const char *id = nullptr;
  /// transformers' class and model_type.
  const char *hfArchitecture = nullptr;
  const char *hfModelType = nullptr;
  /// Prefix of the module classes (LlamaAttention, LlamaRMSNorm, ...).
  const char *classPrefix = nullptr;
  /// Module paths of the modeling code.
  HfNames hfNames = kTransformersNames;

  Blocks blocks;
  Traits traits;
  /// MlpBlock::SparseMoe only.
  MoeSpec moe;
  HfConfigSpec hf;
  GgufSpec gguf;
  GeneratorSpec generator;

  /// llama2.c checkpoints (run.c's Llama) import as this family.
  bool llama2c = false;
};

} // namespace etllm::models

#endif // ETLLM_MODELS_FAMILY_H
