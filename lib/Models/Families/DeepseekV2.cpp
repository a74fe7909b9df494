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
// The MLP: DeepseekV2MLP in layer i when i < first_k_dense_replace or
// i % moe_layer_freq != 0, DeepseekV2Moe otherwise (MoeLayerRule::
// FirstKDense): the router `mlp.gate` applied as F.linear(x.float(),
// gate.weight.float()), a softmax, greedy or group_limited_greedy top-k
// (n_group, topk_group), renormalized (+ 1e-20) when norm_topk_prob, times
// routed_scaling_factor; experts `mlp.experts.{j}` and the ungated
// `mlp.shared_experts` (a DeepseekV2MLP of n_shared_experts *
// moe_intermediate_size) added to their sum. DeepSeek's MoEGate skips the
// scaling when it renormalizes and renormalizes only for top_k > 1, so
// norm_topk_prob true with a routed_scaling_factor other than 1 or with
// top_k 1 is refused (ModelConfigValidation).
//
// llama.cpp LLM_ARCH_DEEPSEEK2 ("deepseek2", conversion/deepseek.py
// DeepseekV2Model): no q/k permutation (ggml's "normal" rope on the
// interleaved pairs is DeepSeek's layout), kv_b_proj split into attn_k_b /
// attn_v_b with head_count_kv 1 (older converters: the joint attn_kv_b),
// yarn_log_multiplier = 0.1 * mscale_all_dim.
//
//===----------------------------------------------------------------------===//
#include "../MoeKeys.h"
#include "../SpecTables.h"
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

FamilySpec makeDeepseekV2Family() {
  FamilySpec s = renamed(FamilySpec(), "DeepseekV2ForCausalLM", "deepseek_v2",
                         "DeepseekV2");
  s.blocks.attention = AttentionBlock::Mla;
  s.blocks.mlp = MlpBlock::SparseMoe;
  s.moe.layers = MoeLayerRule::FirstKDense;
  s.moe.sharedExpert = SharedExpertKind::Plain;
  s.moe.router = MoeRouterForm::Float32Linear;
  s.moe.normEpsilon = true;
  s.moe.blockClass = "Moe";
  s.hfNames[static_cast<size_t>(HfModule::SharedExpert)] = "mlp.shared_experts";
  s.hfNames[static_cast<size_t>(HfModule::SharedGateProj)] =
      "mlp.shared_experts.gate_proj";
  s.hfNames[static_cast<size_t>(HfModule::SharedUpProj)] =
      "mlp.shared_experts.up_proj";
  s.hfNames[static_cast<size_t>(HfModule::SharedDownProj)] =
      "mlp.shared_experts.down_proj";
  s.hfNames[static_cast<size_t>(HfModule::SharedActFn)] =
      "mlp.shared_experts.act_fn";

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
  ConfigKey qLora =
      countKey("q_lora_rank", GgufKey::QLoraRank, ConfigField::QLoraRank, 1536);
  // A file without the key has no q LoRA (llama.cpp: n_lora_q 0).
  qLora.ggufDefault = 0;
  ConfigKey kvLora =
      dimKey("kv_lora_rank", GgufKey::KvLoraRank, ConfigField::KvLoraRank, 512);
  kvLora.ggufDefault = 0; // required in a file, as llama.cpp reads it
  ConfigKey nope = dimKey("qk_nope_head_dim", GgufKey::None,
                          ConfigField::QkNopeHeadDim, 128);
  ConfigKey vDim =
      dimKey("v_head_dim", GgufKey::None, ConfigField::VHeadDim, 128);
  // The expert keys, spelled once in MoeKeys.h; DeepSeek's config class
  // allows null counts (0).
  ConfigKey dense = moe_keys::firstKDenseReplace(0);
  dense.range = KeyRange::Count; // GGUF u32, as llama.cpp reads it
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
  // llama.cpp's expert_group_count selects V3's way (groups ranked by
  // their two best), not V2's group_limited_greedy, and DeepseekV2Model's
  // converter writes no group keys: a V2 GGUF routes greedily over
  // ungrouped experts.
  auto groups = [](ConfigKey k) {
    k.gguf = GgufKey::None;
    k.ggufDefault = 1;
    k.ggufImplied = true;
    return k;
  };
  // DeepseekV2Moe routes greedy or group_limited_greedy; noaux_tc (the
  // last choice) is V3's.
  ConfigKey v2TopkMethod =
      moe_keys::topkMethod(MoeTopkMethod::Greedy, MoeTopkMethod::Greedy);
  v2TopkMethod.choices.pop_back();
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
      v2TopkMethod,
      groups(moe_keys::numExpertGroups(1)),
      groups(moe_keys::topkGroup(1)),
      moe_keys::normTopkProb(false, GgufKey::ExpertWeightsNorm, false),
  };
  using K = ConstantKey::Kind;
  s.hf.constants = {
      {"attention_bias", K::Bool, 0, 0, nullptr, /*enforced=*/true},
      {"pretraining_tp", K::Int, 1},
      // DeepseekV2Moe scores with a softmax only.
      {"scoring_func", K::String, 0, 0, "softmax", /*enforced=*/true},
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
      GgufKey::BlockCount,
      GgufKey::ContextLength,
      GgufKey::EmbeddingLength,
      GgufKey::FeedForwardLength,
      GgufKey::HeadCount,
      GgufKey::HeadCountKv,
      GgufKey::RopeScalingLinear,
      GgufKey::RopeFreqBase,
      GgufKey::RmsEpsilon,
      GgufKey::ExpertCount,
      GgufKey::ExpertUsedCount,
      GgufKey::ExpertGatingFunc,
      GgufKey::FileType,
      GgufKey::LeadingDenseBlockCount,
      GgufKey::VocabSize,
      GgufKey::QLoraRank,
      GgufKey::KvLoraRank,
      GgufKey::KeyLength,
      GgufKey::ValueLength,
      GgufKey::KeyLengthMla,
      GgufKey::ValueLengthMla,
      GgufKey::ExpertFeedForwardLength,
      GgufKey::ExpertSharedCount,
      GgufKey::ExpertWeightsScale,
      GgufKey::ExpertWeightsNorm,
      GgufKey::RopeDimensionCount,
      GgufKey::RopeScalingYarnLogMul,
  };
  // Llama's table with MLA's projections for k and v.
  s.gguf.tensors = llamaFamily().gguf.tensors;
  replaceTensors(s.gguf.tensors, GgufTensor::AttnK, GgufTensor::AttnV,
                 {{GgufTensor::AttnQA, HfModule::QAProj},
                  {GgufTensor::AttnQANorm, HfModule::QALayerNorm},
                  {GgufTensor::AttnQB, HfModule::QBProj},
                  {GgufTensor::AttnKvAMqa, HfModule::KvAProjWithMqa},
                  {GgufTensor::AttnKvANorm, HfModule::KvALayerNorm},
                  {GgufTensor::AttnKvB, HfModule::KvBProj}});
  for (const GgufTensorName &t : moe_keys::routedExpertTensors())
    s.gguf.tensors.push_back(t);
  for (const GgufTensorName &t : moe_keys::sharedExpertTensors(false))
    s.gguf.tensors.push_back(t);

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
  GeneratorPreset lite = sizedPreset("deepseek-v2-lite", 2048, 27, 16, 16, 64,
                                     10944, 102400, 163840);
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
}

} // namespace etllm::models
