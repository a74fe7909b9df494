//===- DeepseekV2.cpp - DeepseekV2ForCausalLM (DeepSeek-V2, V2-Lite) ------===//
//
// DeepSeek's modeling_deepseek.py (deepseek-ai/DeepSeek-V2 and -V2-Lite on
// the hub) and transformers models/deepseek_v2: Llama's decoder with
// Multi-head Latent Attention (AttentionBlock::Mla): q from q_proj
// (V2-Lite, q_lora_rank null) or q_a_proj -> q_a_layernorm -> q_b_proj;
// kv_a_proj_with_mqa -> [latent | shared rope key], kv_a_layernorm,
// kv_b_proj -> per-head [k_nope | v]; decoupled RoPE on the rope parts in
// DeepSeek's interleaved layout; YaRN with mscale on the softmax scale.
// head_dim is qk_rope_head_dim (as DeepseekV2Config.head_dim).
//
// The MLP: DeepseekV2MLP for the first first_k_dense_replace layers and a
// mixture of experts after them. Only dense layers are built so far, so
// first_k_dense_replace must cover every layer (a legal DeepSeek config);
// the FFN is chosen here, in `blocks.mlp`, and the range of
// first_k_dense_replace (KeyRange::AtLeastNumLayers).
//
// llama.cpp LLM_ARCH_DEEPSEEK2 ("deepseek2", conversion/deepseek.py
// DeepseekV2Model): no q/k permutation (ggml's "normal" rope on the
// interleaved pairs is DeepSeek's layout), kv_b_proj split into attn_k_b /
// attn_v_b with head_count_kv 1 (older converters: the joint attn_kv_b),
// yarn_log_multiplier = 0.1 * mscale_all_dim.
//
//===----------------------------------------------------------------------===//
#include "../MoeKeys.h"
#include "FamilyList.h"

namespace etllm::models {

namespace {

ConfigKey countKey(const char *hf, GgufKey gguf, ConfigField field,
                   double dflt) {
  ConfigKey k;
  k.hf = hf;
  k.gguf = gguf;
  k.field = field;
  k.hfDefault = k.ggufDefault = dflt;
  k.range = KeyRange::Count;
  k.nullIsZero = true;
  k.writeZeroAsNull = true;
  return k;
}

ConfigKey dimKey(const char *hf, GgufKey gguf, ConfigField field, double dflt) {
  ConfigKey k;
  k.hf = hf;
  k.gguf = gguf;
  k.field = field;
  k.hfDefault = k.ggufDefault = dflt;
  k.range = KeyRange::Dim;
  return k;
}

} // namespace

const FamilySpec &deepseekV2Family() {
  static const FamilySpec spec = [] {
    FamilySpec s;
    s.id = "deepseekv2";
    s.hfArchitecture = "DeepseekV2ForCausalLM";
    s.hfModelType = "deepseek_v2";
    s.classPrefix = "DeepseekV2";
    s.blocks.attention = AttentionBlock::Mla;
    // Dense layers only (see above); the MoE block replaces this.
    s.blocks.mlp = MlpBlock::Gated;

    s.hf.maxPositionEmbeddings = 2048;
    s.hf.rmsNormEps = 1e-6;
    s.hf.bosTokenId = 1;
    s.hf.eosTokenId = 2;
    s.hf.headDim = 64;
    s.hf.headDimKeyName = "qk_rope_head_dim";
    s.hf.headDimKey = HeadDimKey::Always;
    s.hf.bias = BiasRule::None;
    // transformers' DeepseekV2MLP has mlp_bias (DeepSeek's own code none).
    s.hf.mlpBiasKey = true;
    s.hf.yarnRopeScaling = true;
    ConfigKey qLora = countKey("q_lora_rank", GgufKey::QLoraRank,
                               ConfigField::QLoraRank, 1536);
    // A file without the key has no q LoRA (llama.cpp: n_lora_q 0).
    qLora.ggufDefault = 0;
    ConfigKey kvLora = dimKey("kv_lora_rank", GgufKey::KvLoraRank,
                              ConfigField::KvLoraRank, 512);
    kvLora.ggufDefault = 0; // required in a file, as llama.cpp reads it
    ConfigKey nope = dimKey("qk_nope_head_dim", GgufKey::None,
                            ConfigField::QkNopeHeadDim, 128);
    ConfigKey vDim =
        dimKey("v_head_dim", GgufKey::None, ConfigField::VHeadDim, 128);
    // The expert keys, spelled once in MoeKeys.h; DeepSeek's config class
    // allows null counts (0) and, with dense layers only, requires
    // first_k_dense_replace to cover every layer.
    ConfigKey dense = moe_keys::firstKDenseReplace(0);
    dense.range = KeyRange::AtLeastNumLayers;
    auto count = [](ConfigKey k, double dflt) {
      k.hfDefault = k.ggufDefault = dflt;
      k.range = KeyRange::Count;
      k.nullIsZero = k.writeZeroAsNull = true;
      k.fallback = KeyFallback::Zero;
      return k;
    };
    ConfigKey moeFfn = moe_keys::moeIntermediateSize(1407);
    moeFfn.ggufDefault = 1407;
    moeFfn.fallback = KeyFallback::Zero;
    ConfigKey freq = moe_keys::moeLayerFreq(1);
    freq.fallback = KeyFallback::One;
    s.hf.keys = {
        qLora,
        kvLora,
        nope,
        vDim,
        dense,
        moeFfn,
        count(moe_keys::numExperts("n_routed_experts", 0), 64),
        count(moe_keys::numSharedExperts(0), 2),
        count(moe_keys::numExpertsPerTok(0), 0),
        moe_keys::routedScalingFactor(1.0),
        freq,
    };
    using K = ConstantKey::Kind;
    s.hf.constants = {
        {"attention_bias", K::Bool, 0, 0, nullptr, /*enforced=*/true},
        {"pretraining_tp", K::Int, 1},
        {"topk_method", K::String, 0, 0, "greedy"},
        {"n_group", K::Int, 1},
        {"topk_group", K::Int, 1},
        {"norm_topk_prob", K::Bool, 0},
        {"scoring_func", K::String, 0, 0, "softmax"},
        {"aux_loss_alpha", K::Double, 0, 0.001},
        {"seq_aux", K::Bool, 1},
    };

    s.gguf.arch = "deepseek2";
    s.gguf.splitsKvB = true;
    s.gguf.identityKey = GgufKey::ExpertGatingFunc;
    s.gguf.identityValue = 1; // softmax
    s.gguf.identityDefault = true;
    // TextModel's keys, then DeepseekV2Model's, in the converter's order.
    s.gguf.metadata = {
        GgufKey::BlockCount,         GgufKey::ContextLength,
        GgufKey::EmbeddingLength,    GgufKey::FeedForwardLength,
        GgufKey::HeadCount,          GgufKey::HeadCountKv,
        GgufKey::RopeScalingLinear,  GgufKey::RopeFreqBase,
        GgufKey::RmsEpsilon,         GgufKey::ExpertCount,
        GgufKey::ExpertUsedCount,    GgufKey::ExpertGatingFunc,
        GgufKey::FileType,           GgufKey::LeadingDenseBlockCount,
        GgufKey::VocabSize,          GgufKey::QLoraRank,
        GgufKey::KvLoraRank,         GgufKey::KeyLength,
        GgufKey::ValueLength,        GgufKey::KeyLengthMla,
        GgufKey::ValueLengthMla,     GgufKey::ExpertFeedForwardLength,
        GgufKey::ExpertSharedCount,  GgufKey::ExpertWeightsScale,
        GgufKey::RopeDimensionCount, GgufKey::RopeScalingYarnLogMul,
    };
    s.gguf.tensors = {
        {GgufTensor::TokenEmbd, HfModule::Embed},
        {GgufTensor::OutputNorm, HfModule::FinalNorm},
        {GgufTensor::Output, HfModule::LmHead},
        {GgufTensor::AttnNorm, HfModule::InputNorm},
        {GgufTensor::AttnQ, HfModule::QProj},
        {GgufTensor::AttnQA, HfModule::QAProj},
        {GgufTensor::AttnQANorm, HfModule::QALayerNorm},
        {GgufTensor::AttnQB, HfModule::QBProj},
        {GgufTensor::AttnKvAMqa, HfModule::KvAProjWithMqa},
        {GgufTensor::AttnKvANorm, HfModule::KvALayerNorm},
        {GgufTensor::AttnKvB, HfModule::KvBProj},
        {GgufTensor::AttnOut, HfModule::OProj},
        {GgufTensor::FfnNorm, HfModule::PostAttentionNorm},
        {GgufTensor::FfnGate, HfModule::GateProj},
        {GgufTensor::FfnUp, HfModule::UpProj},
        {GgufTensor::FfnDown, HfModule::DownProj},
    };

    s.generator.vocab = SyntheticVocab::SentencePiece;
    // V2-Lite-like: q_proj (no q LoRA), v_head_dim != qk_nope_head_dim,
    // YaRN with V2-Lite's mscale = mscale_all_dim = 0.707.
    GeneratorPreset &tiny = s.generator.tiny;
    tiny.heads = 4;
    tiny.kvHeads = 4;
    tiny.headDim = 8;
    tiny.rmsEps = 1e-6;
    tiny.kvLoraRank = 32;
    tiny.qkNopeHeadDim = 16;
    tiny.vHeadDim = 20;
    tiny.ropeScaling = "yarn:4:32:0.707:0.707";
    tiny.experts = 4;
    tiny.expertsPerTok = 2;
    tiny.sharedExperts = 1;
    tiny.moeFfn = 32;
    // DeepSeek-V2-Lite's shapes (config.json of deepseek-ai/
    // DeepSeek-V2-Lite); --layers picks fewer than its 27.
    GeneratorPreset lite;
    lite.name = "deepseek-v2-lite";
    lite.hidden = 2048;
    lite.layers = 27;
    lite.heads = 16;
    lite.kvHeads = 16;
    lite.headDim = 64;
    lite.ffn = 10944;
    lite.vocabSize = 102400;
    lite.maxSeq = 163840;
    lite.ropeTheta = 10000.0;
    lite.rmsEps = 1e-6;
    lite.ropeScaling = "yarn:40:4096:0.707:0.707";
    lite.kvLoraRank = 512;
    lite.qkNopeHeadDim = 128;
    lite.vHeadDim = 128;
    lite.experts = 64;
    lite.expertsPerTok = 6;
    lite.sharedExperts = 2;
    lite.moeFfn = 1408;
    s.generator.presets = {lite};
    return s;
  }();
  return spec;
}

} // namespace etllm::models
