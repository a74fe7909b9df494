//===- ModelConfig.h - Normalized decoder-only LLM config -------*- C++ -*-===//
//
// One struct that says everything a graph builder needs to emit the Hugging
// Face modeling code of a supported family, whichever checkpoint format it
// came from. The families, and how each one's config.json and GGUF metadata
// map onto these fields, are the specs of etllm/Models/Registry.h.
//
//===----------------------------------------------------------------------===//
#ifndef ETLLM_FORMATS_MODEL_CONFIG_H
#define ETLLM_FORMATS_MODEL_CONFIG_H

#include "etllm/Models/Family.h"
#include "etllm/runtime/result.h"

#include <cstdint>
#include <string>
#include <vector>

namespace etllm::formats {

/// RoPE frequency scaling (HF `rope_scaling`).
struct RopeScaling {
  /// "" (none), "linear", "llama3" or "yarn" (DeepSeek).
  std::string type;
  /// linear and llama3: frequencies are divided by `factor` (llama3: only the
  /// low frequencies, smoothly); yarn: the interpolated frequencies are.
  double factor = 1.0;
  /// llama3 only.
  double lowFreqFactor = 1.0;
  double highFreqFactor = 4.0;
  /// llama3 and yarn.
  int64_t originalMaxPositionEmbeddings = 0;
  /// yarn only (DeepseekV2YarnRotaryEmbedding): the rotation counts that
  /// bound the interpolation ramp, and the magnitude scales. cos/sin are
  /// multiplied by mscale(factor, mscale) / mscale(factor, mscale_all_dim)
  /// and the softmax scale by mscale(factor, mscale_all_dim)^2 (when
  /// mscale_all_dim is not 0), mscale(s, m) = 0.1 m ln(s) + 1.
  double betaFast = 32.0;
  double betaSlow = 1.0;
  double mscale = 1.0;
  double mscaleAllDim = 0.0;
  /// GGUF only: llama.cpp's per-frequency divisors (the rope_freqs.weight
  /// tensor its converter writes for llama3 scaling), headDim*partial/2
  /// values; empty otherwise. When non-empty it is authoritative:
  /// inv_freq[i] = base^(-2i/d) / freqFactors[i].
  std::vector<float> freqFactors;
};

/// The normalized configuration.
struct ModelConfig {
  /// HF class name, e.g. "LlamaForCausalLM".
  std::string architecture;
  /// HF model_type, e.g. "llama".
  std::string modelType;

  int64_t hiddenSize = 0;
  int64_t intermediateSize = 0;
  int64_t numLayers = 0;
  int64_t numHeads = 0;
  int64_t numKvHeads = 0;
  /// Per-head dimension; may differ from hiddenSize / numHeads (Qwen3, Gemma).
  int64_t headDim = 0;
  int64_t vocabSize = 0;
  int64_t maxPositionEmbeddings = 0;
  double rmsNormEps = 1e-6;
  double ropeTheta = 10000.0;
  /// The RoPE base of the sliding-window layers, which then rotate with
  /// their own table and no rope scaling (Gemma 3's rope_local_base_freq);
  /// 0: every layer uses ropeTheta.
  double ropeLocalTheta = 0.0;
  RopeScaling ropeScaling;
  /// Fraction of each head that is rotated (Phi3 partial_rotary_factor).
  double partialRotaryFactor = 1.0;
  /// Phi3 original_max_position_embeddings (0 when not given).
  int64_t originalMaxPositionEmbeddings = 0;

  bool tieWordEmbeddings = false;
  /// q/k/v projections have a bias (Qwen2 always; Llama/Qwen3/Gemma per
  /// attention_bias).
  bool attentionBias = false;
  /// o_proj has a bias (Llama/Qwen3/Gemma: attention_bias; Qwen2: never).
  bool oProjBias = false;
  /// gate/up/down have biases (Llama mlp_bias).
  bool mlpBias = false;
  /// Activation of the gated MLP: "silu", "gelu_pytorch_tanh", "gelu", ...
  std::string hiddenAct = "silu";

  /// Sliding-window size in tokens; 0 = none.
  int64_t slidingWindow = 0;
  /// One entry per layer: true when that layer attends within slidingWindow.
  std::vector<bool> layerUsesSlidingWindow;

  /// Gemma2: tanh soft-capping of attention scores / final logits; 0 = off.
  double attnLogitSoftcapping = 0.0;
  double finalLogitSoftcapping = 0.0;
  /// Gemma2: scores are scaled by queryPreAttnScalar^-0.5 instead of
  /// headDim^-0.5. 0 = use headDim.
  double queryPreAttnScalar = 0.0;

  /// Scalar multipliers some families apply (Granite; 1 = none): the
  /// embeddings are multiplied by embeddingMultiplier, each residual branch
  /// (attention and MLP output) by residualMultiplier before it is added, and
  /// the logits are divided by logitsScaling.
  double embeddingMultiplier = 1.0;
  double residualMultiplier = 1.0;
  double logitsScaling = 1.0;
  /// When positive, the attention scale itself (Granite's
  /// attention_multiplier), instead of the head-size rule. 0 = none.
  double attentionMultiplier = 0.0;

  /// Multi-head Latent Attention (DeepSeek-V2/V3; all 0 for other
  /// families). headDim is qk_rope_head_dim, the rotated part of each query
  /// and key head (as transformers' DeepseekV2Config.head_dim).
  /// q_lora_rank 0: q comes from q_proj (V2-Lite), else q_a_proj ->
  /// q_a_layernorm -> q_b_proj.
  int64_t qLoraRank = 0;
  int64_t kvLoraRank = 0;
  int64_t qkNopeHeadDim = 0;
  int64_t vHeadDim = 0;

  //===--- Mixture of experts (the family's MlpBlock::SparseMoe) ---------===//

  /// Routed experts per sparse layer (0: every layer is dense). DeepSeek's
  /// configs carry n_routed_experts & co. while all its layers are dense
  /// (first_k_dense_replace >= numLayers): layerIsMoe says which layers
  /// are sparse.
  int64_t numExperts = 0;
  /// Experts each token is routed to (top-k).
  int64_t numExpertsPerTok = 0;
  /// Intermediate size of one routed expert (0: intermediateSize, as
  /// Mixtral's experts).
  int64_t moeIntermediateSize = 0;
  /// Intermediate size of the shared expert MLP (0: none).
  int64_t sharedExpertIntermediateSize = 0;
  /// DeepSeek's n_shared_experts (its shared MLP is that many experts wide).
  int64_t numSharedExperts = 0;
  /// The top-k weights are divided by their sum.
  bool normTopkProb = false;
  /// The top-k weights are multiplied by this.
  double routedScalingFactor = 1.0;
  models::MoeScoring moeScoring = models::MoeScoring::Softmax;
  models::MoeTopkMethod moeTopkMethod = models::MoeTopkMethod::Greedy;
  /// DeepSeek's n_group and topk_group (0: no groups).
  int64_t numExpertGroups = 0;
  int64_t topkGroup = 0;
  /// Which layers are sparse (the family's MoeLayerRule over these).
  int64_t decoderSparseStep = 1;
  std::vector<int64_t> mlpOnlyLayers;
  int64_t firstKDenseReplace = 0;
  int64_t moeLayerFreq = 1;
  /// One entry per layer: true when the layer has the sparse block.
  std::vector<bool> layerIsMoe;

  int64_t bosTokenId = -1;
  /// eos_token_id may be a list in config.json.
  std::vector<int64_t> eosTokenIds;
  int64_t padTokenId = -1;
  /// "float32", "float16", "bfloat16", or "" when unknown.
  std::string torchDtype;

  //===--- Traits of the family (set from `architecture`) ---------------===//

  /// Phi3: one qkv_proj [(H + 2*KV) * D, hidden], split q, k, v.
  bool fusedQkv = false;
  /// Phi3: one gate_up_proj [2 * ffn, hidden], first half gate.
  bool fusedGateUp = false;
  /// Qwen3: RMSNorm over each head of q and k (weights [headDim]).
  bool qkNorm = false;
  /// Gemma/Gemma2: RMSNorm computes x * (1 + w).
  bool normAddsOne = false;
  /// Gemma/Gemma2: embeddings are multiplied by sqrt(hiddenSize) (in the
  /// embedding dtype).
  bool scaleEmbeddings = false;
  /// Gemma2: post_attention_layernorm on the attention output, and
  /// pre_/post_feedforward_layernorm around the MLP.
  bool sandwichNorms = false;

  /// Number of rotated dimensions per head: floor(headDim * partial) rounded
  /// down to even.
  int64_t rotaryDim() const;
  /// The attention softmax scale HF uses (MLA: (qk_nope + qk_rope)^-0.5,
  /// times the YaRN mscale(factor, mscale_all_dim)^2).
  double attentionScale() const;
  /// The intermediate size of one routed expert.
  int64_t expertIntermediateSize() const {
    return moeIntermediateSize > 0 ? moeIntermediateSize : intermediateSize;
  }
  /// True when layer `i` has the sparse MoE block.
  bool isMoeLayer(int64_t i) const {
    return i >= 0 && i < static_cast<int64_t>(layerIsMoe.size()) &&
           layerIsMoe[static_cast<size_t>(i)];
  }
  /// True when some layer has the sparse MoE block (the model "has
  /// experts"; only then does #etllm.model_config carry the MoE fields).
  bool hasMoeLayers() const {
    for (bool b : layerIsMoe)
      if (b)
        return true;
    return false;
  }
  /// The factor cos and sin are multiplied by (YaRN's attention scaling;
  /// 1 for every other rope).
  double ropeAttentionFactor() const;
  /// True for a Multi-head Latent Attention config.
  bool isMla() const { return kvLoraRank > 0; }
  /// MLA: qk_nope_head_dim + qk_rope_head_dim.
  int64_t qkHeadDim() const { return qkNopeHeadDim + headDim; }
  /// Every eos id, first one the primary.
  int64_t primaryEosTokenId() const {
    return eosTokenIds.empty() ? -1 : eosTokenIds.front();
  }
};

/// Supported HF architectures, for messages: "LlamaForCausalLM, ...".
std::string supportedArchitectures();

/// The family of config.architecture (or, when empty, of config.modelType),
/// or null when no family has it (etllm/Models/Registry.h).
const models::FamilySpec *familyOf(const ModelConfig &config);

/// Sets the trait fields (fusedQkv, ...) from the family of
/// config.architecture and the matching modelType. Errors for unsupported
/// architectures.
rt::Status applyArchitectureTraits(ModelConfig &config);

/// Parses a Hugging Face config.json. Unknown architecture, a missing required
/// key, a wrong JSON type or a nonsensical value gives an error naming the
/// file and the key. Accepts both the transformers 4.x keys (rope_theta,
/// rope_scaling, torch_dtype) and 5.x (rope_parameters, dtype).
rt::Result<ModelConfig> parseHfConfig(const std::string &configJsonPath);

/// Same, from JSON text; `sourceName` is used in messages.
rt::Result<ModelConfig> parseHfConfigText(const std::string &jsonText,
                                          const std::string &sourceName);

/// Checks internal consistency (positive sizes <= 1e7, heads divisible by kv
/// heads, even rotary dimension, per-layer vectors sized numLayers, ...).
rt::Status validate(const ModelConfig &config);

/// The config.json transformers would write for this config (sorted keys,
/// 2-space indent, the keys of that architecture's config class).
rt::Result<std::string> toHfConfigJson(const ModelConfig &config);

/// A tensor an architecture needs.
struct ExpectedTensor {
  std::string name;
  std::vector<int64_t> shape;
  /// An RMSNorm weight (initialized around 1, or 0 for (1 + w) norms).
  bool isNorm = false;
  /// A bias vector.
  bool isBias = false;
};

/// Every tensor (HF name and shape) the HF modeling code of config's
/// architecture loads, in HF order: embed_tokens, layers..., norm, lm_head
/// (only when untied).
rt::Result<std::vector<ExpectedTensor>>
expectedTensors(const ModelConfig &config);

/// The RoPE inverse frequencies (rotaryDim()/2 values) HF computes for this
/// config, including linear/llama3 scaling or GGUF freqFactors.
std::vector<double> ropeInverseFrequencies(const ModelConfig &config);

/// llama.cpp's rope_freqs factors for llama3 scaling (what its converter
/// writes), computed with `originalContext` as the old context length.
std::vector<float> llama3RopeFreqFactors(const ModelConfig &config,
                                         int64_t originalContext);

} // namespace etllm::formats

#endif // ETLLM_FORMATS_MODEL_CONFIG_H
