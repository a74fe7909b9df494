//===- DeepseekTest.cpp - The DeepSeek families' config and GGUF forms ----===//
//
// DeepseekV2Config / DeepseekV3Config in config.json (the MLA sizes, YaRN,
// class defaults, and errors naming the key and the value for what etllm
// does not build), and llama.cpp's deepseek2 GGUF: its metadata (the split
// and the joint MLA forms, YaRN's log multiplier), the kv_b_proj assembled
// from attn_k_b/attn_v_b, and errors naming the key or the tensor.
//
//===----------------------------------------------------------------------===//

#include "../Formats/TestUtil.h"
#include "etllm/Testing/Generator.h"
#include "etllm/Formats/Gguf.h"

#include <cmath>

using namespace etllm::formats;
using namespace etllm::formats::testing;

namespace {

/// DeepSeek-V2-Lite's config.json with two layers, all dense (or
/// `firstDense` of them); `extra` adds keys.
std::string liteConfig(const std::string &extra,
                       const std::string &firstDense = "2") {
  return R"({"architectures": ["DeepseekV2ForCausalLM"],
    "model_type": "deepseek_v2", "attention_bias": false,
    "bos_token_id": 100000, "eos_token_id": 100001,
    "first_k_dense_replace": )" +
         firstDense + R"(, "hidden_act": "silu", "hidden_size": 2048,
    "intermediate_size": 10944, "kv_lora_rank": 512,
    "max_position_embeddings": 163840, "moe_intermediate_size": 1408,
    "moe_layer_freq": 1, "n_group": 1, "n_routed_experts": 64,
    "n_shared_experts": 2, "norm_topk_prob": false, "num_attention_heads": 16,
    "num_experts_per_tok": 6, "num_hidden_layers": 2, "num_key_value_heads": 16,
    "q_lora_rank": null, "qk_nope_head_dim": 128, "qk_rope_head_dim": 64,
    "rms_norm_eps": 1e-06, "rope_theta": 10000, "routed_scaling_factor": 1.0,
    "scoring_func": "softmax", "tie_word_embeddings": false,
    "topk_group": 1, "topk_method": "greedy", "v_head_dim": 128,
    "vocab_size": 102400)" +
         extra + "}";
}

const char *kLiteYarn = R"(, "rope_scaling": {"beta_fast": 32, "beta_slow": 1,
    "factor": 40, "mscale": 0.707, "mscale_all_dim": 0.707,
    "original_max_position_embeddings": 4096, "type": "yarn"})";

Result<ModelConfig> parse(const std::string &text) {
  return parseHfConfigText(text, "/m/config.json");
}

double mscale(double scale, double m) { return 0.1 * m * std::log(scale) + 1; }

TEST(Deepseek, LiteConfig) {
  auto c = parse(liteConfig(kLiteYarn));
  ASSERT_TRUE(c.ok()) << c.message();
  EXPECT_EQ(c->architecture, "DeepseekV2ForCausalLM");
  EXPECT_TRUE(c->isMla());
  EXPECT_EQ(c->qLoraRank, 0); // null: q_proj
  EXPECT_EQ(c->kvLoraRank, 512);
  EXPECT_EQ(c->qkNopeHeadDim, 128);
  EXPECT_EQ(c->headDim, 64); // qk_rope_head_dim
  EXPECT_EQ(c->rotaryDim(), 64);
  EXPECT_EQ(c->vHeadDim, 128);
  EXPECT_EQ(c->numKvHeads, 16);
  EXPECT_EQ(c->firstKDenseReplace, 2);
  EXPECT_EQ(c->ropeScaling.type, "yarn");
  EXPECT_EQ(c->ropeScaling.originalMaxPositionEmbeddings, 4096);
  EXPECT_EQ(c->ropeScaling.mscale, 0.707);
  // DeepseekV2Attention.softmax_scale: (128 + 64)^-0.5 * mscale(40, 0.707)^2,
  // and cos/sin unscaled (mscale == mscale_all_dim).
  double m = mscale(40, 0.707);
  EXPECT_DOUBLE_EQ(c->attentionScale(), m * m / std::sqrt(192.0));
  EXPECT_DOUBLE_EQ(c->ropeAttentionFactor(), 1.0);

  // V3's mscale 1 / mscale_all_dim 1; an mscale of its own scales cos/sin.
  auto v3 = parse(liteConfig(R"(, "rope_scaling": {"factor": 40,
      "mscale": 1.0, "mscale_all_dim": 0.5,
      "original_max_position_embeddings": 4096, "type": "yarn"})"));
  ASSERT_TRUE(v3.ok()) << v3.message();
  EXPECT_EQ(v3->ropeScaling.betaFast, 32); // DeepSeek's defaults
  EXPECT_EQ(v3->ropeScaling.betaSlow, 1);
  EXPECT_DOUBLE_EQ(v3->ropeAttentionFactor(),
                   mscale(40, 1.0) / mscale(40, 0.5));
  // Without rope scaling: the plain scale.
  auto plain = parse(liteConfig(""));
  ASSERT_TRUE(plain.ok()) << plain.message();
  EXPECT_DOUBLE_EQ(plain->attentionScale(), 1 / std::sqrt(192.0));
}

TEST(Deepseek, YarnFrequencies) {
  // DeepseekV2YarnRotaryEmbedding for rope 8, original context 32, factor
  // 4: the correction range is [0, 1], so the ramp keeps the first
  // frequency (extrapolated) and interpolates the other three.
  auto c = parse(liteConfig(R"(, "rope_scaling": {"factor": 4,
      "mscale": 1.0, "mscale_all_dim": 1.0,
      "original_max_position_embeddings": 32, "type": "yarn"})"));
  ASSERT_TRUE(c.ok()) << c.message();
  ModelConfig t = *c;
  t.headDim = 8;
  std::vector<double> inv = ropeInverseFrequencies(t);
  ASSERT_EQ(inv.size(), 4u);
  for (size_t i = 0; i < 4; ++i) {
    double extra = 1.0 / std::pow(10000.0, 2.0 * i / 8);
    EXPECT_DOUBLE_EQ(inv[i], i == 0 ? extra : extra / 4) << i;
  }
}

TEST(Deepseek, ClassDefaults) {
  // V2: q_lora_rank 1536 when absent; V3: first_k_dense_replace 3 and
  // q_lora_rank 1536.
  std::string noQ = liteConfig("");
  noQ.replace(noQ.find("\"q_lora_rank\": null, "), 21, "");
  auto c = parse(noQ);
  ASSERT_TRUE(c.ok()) << c.message();
  EXPECT_EQ(c->qLoraRank, 1536);
  auto v3 = parse(R"({"architectures": ["DeepseekV3ForCausalLM"],
      "hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 3,
      "num_attention_heads": 4, "vocab_size": 300})");
  ASSERT_TRUE(v3.ok()) << v3.message();
  EXPECT_EQ(v3->architecture, "DeepseekV3ForCausalLM");
  EXPECT_EQ(v3->firstKDenseReplace, 3);
  EXPECT_EQ(v3->qLoraRank, 1536);
  EXPECT_EQ(v3->kvLoraRank, 512);
  EXPECT_EQ(v3->headDim, 64);
  EXPECT_EQ(v3->numKvHeads, 4);
  EXPECT_EQ(v3->bosTokenId, 0);
  EXPECT_EQ(v3->primaryEosTokenId(), 1);
}

/// liteConfig with DeepSeek-V2-Lite's MoE layer 1 and `from` replaced by
/// `to` (one occurrence).
std::string liteMoe(const std::string &from = "", const std::string &to = "") {
  std::string s = liteConfig(kLiteYarn, "1");
  if (!from.empty())
    s.replace(s.find(from), from.size(), to);
  return s;
}

TEST(Deepseek, MoeLayers) {
  // V2-Lite: layer 0 dense, layer 1 a DeepseekV2Moe of 64 experts, top-6,
  // two shared experts (one MLP 2 * 1408 wide).
  auto c = parse(liteMoe());
  ASSERT_TRUE(c.ok()) << c.message();
  EXPECT_EQ(c->layerIsMoe, (std::vector<bool>{false, true}));
  EXPECT_EQ(c->numExperts, 64);
  EXPECT_EQ(c->numExpertsPerTok, 6);
  EXPECT_EQ(c->moeIntermediateSize, 1408);
  EXPECT_EQ(c->numSharedExperts, 2);
  EXPECT_EQ(c->sharedExpertIntermediateSize, 2 * 1408);
  EXPECT_EQ(c->moeTopkMethod, etllm::models::MoeTopkMethod::Greedy);
  EXPECT_FALSE(c->normTopkProb);
  // moe_layer_freq 2: only the even layers after the dense ones.
  std::string four = liteMoe("\"moe_layer_freq\": 1", "\"moe_layer_freq\": 2");
  four.replace(four.find("\"num_hidden_layers\": 2"), 22,
               "\"num_hidden_layers\": 4");
  c = parse(four);
  ASSERT_TRUE(c.ok()) << c.message();
  EXPECT_EQ(c->layerIsMoe, (std::vector<bool>{false, false, true, false}));
  // DeepSeek-V2's group_limited_greedy with its groups and scale.
  std::string grouped = liteMoe("\"topk_method\": \"greedy\"",
                                "\"topk_method\": \"group_limited_greedy\"");
  grouped.replace(grouped.find("\"n_group\": 1"), 12, "\"n_group\": 8");
  grouped.replace(grouped.find("\"topk_group\": 1"), 15, "\"topk_group\": 3");
  grouped.replace(grouped.find("\"routed_scaling_factor\": 1.0"), 28,
                  "\"routed_scaling_factor\": 16.0");
  c = parse(grouped);
  ASSERT_TRUE(c.ok()) << c.message();
  EXPECT_EQ(c->moeTopkMethod, etllm::models::MoeTopkMethod::GroupLimitedGreedy);
  EXPECT_EQ(c->numExpertGroups, 8);
  EXPECT_EQ(c->topkGroup, 3);
  EXPECT_EQ(c->routedScalingFactor, 16.0);
  // DeepSeek-V3 with DeepseekV3Config's defaults: layers 3.. are
  // DeepseekV3MoE (256 experts in 8 groups, the best 4, top-8, one shared
  // expert 2048 wide), sigmoid scores, noaux_tc, renormalized and times
  // 2.5.
  c = parse(R"({"architectures": ["DeepseekV3ForCausalLM"],
      "hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 4,
      "num_attention_heads": 4, "vocab_size": 300})");
  ASSERT_TRUE(c.ok()) << c.message();
  EXPECT_EQ(c->layerIsMoe, (std::vector<bool>{false, false, false, true}));
  EXPECT_EQ(c->numExperts, 256);
  EXPECT_EQ(c->numExpertsPerTok, 8);
  EXPECT_EQ(c->numExpertGroups, 8);
  EXPECT_EQ(c->topkGroup, 4);
  EXPECT_EQ(c->sharedExpertIntermediateSize, 2048);
  EXPECT_EQ(c->moeScoring, etllm::models::MoeScoring::Sigmoid);
  EXPECT_EQ(c->moeTopkMethod, etllm::models::MoeTopkMethod::NoauxTc);
  EXPECT_TRUE(c->normTopkProb);
  EXPECT_EQ(c->routedScalingFactor, 2.5);
  // DeepSeek's own config.json spells the routing out; V3 keeps the scale
  // with the renormalization (V2 would refuse it).
  c = parse(R"({"architectures": ["DeepseekV3ForCausalLM"],
      "hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 2,
      "first_k_dense_replace": 1, "num_attention_heads": 4,
      "vocab_size": 300, "n_routed_experts": 16, "n_group": 4,
      "topk_group": 2, "num_experts_per_tok": 4, "norm_topk_prob": true,
      "routed_scaling_factor": 1.5, "scoring_func": "sigmoid",
      "topk_method": "noaux_tc"})");
  ASSERT_TRUE(c.ok()) << c.message();
  EXPECT_EQ(c->layerIsMoe, (std::vector<bool>{false, true}));
  EXPECT_EQ(c->numExpertGroups, 4);
  EXPECT_EQ(c->routedScalingFactor, 1.5);
  // No shared experts (null).
  c = parse(liteMoe("\"n_shared_experts\": 2", "\"n_shared_experts\": null"));
  ASSERT_TRUE(c.ok()) << c.message();
  EXPECT_EQ(c->sharedExpertIntermediateSize, 0);
}

TEST(Deepseek, UnsupportedSettingsNameTheKeyAndValue) {
  // DeepSeek-V2's MoEGate skips the scale when it renormalizes, and
  // renormalizes only for top_k > 1.
  std::string normed =
      liteMoe("\"norm_topk_prob\": false", "\"norm_topk_prob\": true");
  std::string scaled = normed;
  scaled.replace(scaled.find("\"routed_scaling_factor\": 1.0"), 28,
                 "\"routed_scaling_factor\": 16.0");
  expectError(parse(scaled), {"/m/config.json",
                              "norm_topk_prob true with "
                              "routed_scaling_factor 16",
                              "not supported"});
  std::string top1 = normed;
  top1.replace(top1.find("\"num_experts_per_tok\": 6"), 24,
               "\"num_experts_per_tok\": 1");
  expectError(parse(top1), {"norm_topk_prob true with num_experts_per_tok 1",
                            "not supported"});
  EXPECT_TRUE(parse(normed).ok());
  expectError(parse(liteMoe("\"topk_method\": \"greedy\"",
                            "\"topk_method\": \"noaux_tc\"")),
              {"'topk_method'", "'noaux_tc'", "greedy, group_limited_greedy"});
  expectError(parse(liteMoe("\"scoring_func\": \"softmax\"",
                            "\"scoring_func\": \"sigmoid\"")),
              {"'scoring_func'", "\"sigmoid\" is not supported"});
  // DeepSeek-V3 routes by noaux_tc with sigmoid scores only.
  const std::string v3 = R"({"architectures": ["DeepseekV3ForCausalLM"],
      "hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 2,
      "first_k_dense_replace": 1, "num_attention_heads": 4,
      "vocab_size": 300)";
  expectError(parse(v3 + R"(, "scoring_func": "softmax"})"),
              {"/m/config.json", "'scoring_func'",
               "\"softmax\" is not supported", "sigmoid"});
  expectError(parse(v3 + R"(, "topk_method": "group_limited_greedy"})"),
              {"'topk_method'", "\"group_limited_greedy\" is not supported",
               "noaux_tc"});
  // Its groups: 256 experts in 8 groups by default; 3 groups do not
  // divide them, 256 groups leave one expert each.
  expectError(parse(v3 + R"(, "n_group": 3})"),
              {"noaux_tc: n_group = 3 must be positive and divide the 256"});
  expectError(parse(v3 + R"(, "n_group": 256, "topk_group": 4})"),
              {"ranks groups by their two best experts: n_group = 256 "
               "leaves 1 per group"});
  expectError(parse(v3 + R"(, "topk_group": 9})"),
              {"topk_group = 9 must be in [1, n_group = 8]"});
  expectError(parse(liteConfig(R"(, "attention_bias": true)")),
              {"'attention_bias'", "true is not supported", "false"});
  expectError(parse(R"({"architectures": ["DeepseekV3ForCausalLM"],
      "hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 2,
      "first_k_dense_replace": 2, "num_attention_heads": 4,
      "vocab_size": 300, "rope_interleave": false})"),
              {"'rope_interleave'", "false is not supported"});
  std::string gqa = liteConfig("");
  gqa.replace(gqa.find("\"num_key_value_heads\": 16"), 25,
              "\"num_key_value_heads\": 8");
  expectError(parse(gqa), {"'num_key_value_heads'", "8 differs from "
                                                    "num_attention_heads 16"});
  std::string noLatent = liteConfig("");
  noLatent.replace(noLatent.find("\"kv_lora_rank\": 512"), 19,
                   "\"kv_lora_rank\": 0");
  expectError(parse(noLatent), {"'kv_lora_rank'", "positive"});
  expectError(parse(liteConfig(R"(, "rope_scaling": {"type": "yarn",
      "factor": 40})")),
              {"'rope_scaling.original_max_position_embeddings'", "yarn"});
  expectError(parse(liteConfig(R"(, "rope_scaling": {"type": "dynamic",
      "factor": 2})")),
              {"'rope_scaling'", "'dynamic'", "yarn"});
  expectError(parse(liteConfig(R"(, "rope_scaling": {"type": "yarn",
      "factor": 4, "original_max_position_embeddings": 32,
      "attention_factor": 2})")),
              {"'rope_scaling.attention_factor'", "not supported"});
  // YaRN belongs to the DeepSeek families.
  expectError(parse(R"({"architectures": ["LlamaForCausalLM"],
      "hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 2,
      "num_attention_heads": 4, "vocab_size": 300, "rope_scaling":
      {"rope_type": "yarn", "factor": 4}})"),
              {"'rope_scaling'", "'yarn'", "linear, llama3)"});
}

/// Copies a GGUF with one metadata key replaced or dropped (nullopt) and
/// the tensors named in `dropTensors` left out (assembled tensors, which
/// the file does not hold, are skipped).
std::string rewrite(const Checkpoint &src, const std::string &out,
                    const std::string &key, std::optional<GgufValue> value,
                    const std::vector<std::string> &dropTensors = {}) {
  GgufWriter w(src.ggufAlignment());
  for (const auto &kv : src.metadataEntries())
    if (kv.first != key)
      w.set(kv.first, kv.second);
    else if (value)
      w.set(kv.first, *value);
  if (value && !src.metadata(key))
    w.set(key, *value);
  // One file tensor per source: a stacked expert tensor opens as slices
  // "<name>[j]", contiguous in the file, written back as one [E, ...].
  struct Kept {
    std::string name;
    const TensorRef *first;
    std::vector<int64_t> shape;
    uint64_t nbytes;
  };
  std::vector<Kept> kept;
  for (const TensorRef &t : src.tensors()) {
    if (!t.parts.empty() || std::find(dropTensors.begin(), dropTensors.end(),
                                      t.sourceName) != dropTensors.end())
      continue;
    std::string name = t.sourceName;
    bool slice = !name.empty() && name.back() == ']';
    if (slice)
      name = name.substr(0, name.rfind('['));
    if (slice && !kept.empty() && kept.back().name == name) {
      ++kept.back().shape[0];
      kept.back().nbytes += t.nbytes;
      continue;
    }
    std::vector<int64_t> shape = t.shape;
    if (slice)
      shape.insert(shape.begin(), 1);
    kept.push_back({name, &t, shape, t.nbytes});
  }
  for (const Kept &k : kept)
    EXPECT_TRUE(w.addTensor(k.name, k.first->dtype, k.shape).ok());
  EXPECT_TRUE(w.open(out).ok());
  for (const Kept &k : kept)
    EXPECT_TRUE(w.write(k.first->data, k.nbytes).ok());
  EXPECT_TRUE(w.finish().ok());
  return out;
}

std::unique_ptr<Checkpoint> generate(const std::string &dir,
                                     const std::string &arch,
                                     const std::string &format,
                                     const std::string &kvB = "split") {
  GeneratorOptions o;
  o.arch = arch;
  o.format = format;
  o.ggufKvB = kvB;
  o.seed = 3;
  o.output = dir + "/" + arch + "-" + kvB + (format == "gguf" ? ".gguf" : "");
  Status s = generateCheckpoint(o);
  EXPECT_TRUE(s.ok()) << s.message();
  auto c = openCheckpoint(o.output);
  EXPECT_TRUE(c.ok()) << c.message();
  return c.ok() ? std::move(*c) : nullptr;
}

TEST(Deepseek, GgufReadsBothFormsAndAssemblesKvB) {
  std::string dir = freshTempDir("deepseek_gguf");
  auto hf = generate(dir, "deepseekv2", "hf");
  auto split = generate(dir, "deepseekv2", "gguf", "split");
  auto joint = generate(dir, "deepseekv2", "gguf", "joint");
  ASSERT_TRUE(hf && split && joint);
  expectConfigsEqual(split->config(), hf->config(), "split");
  expectConfigsEqual(joint->config(), hf->config(), "joint");
  // yarn_log_multiplier is float32(0.1 * 0.707): read back as 0.707.
  EXPECT_EQ(split->config().ropeScaling.mscaleAllDim, 0.707);
  EXPECT_EQ(split->config().attentionScale(), hf->config().attentionScale());
  const std::string kvB = "model.layers.1.self_attn.kv_b_proj.weight";
  const TensorRef *assembled = split->find(kvB);
  ASSERT_NE(assembled, nullptr);
  EXPECT_EQ(assembled->parts.size(), 2u);
  EXPECT_EQ(assembled->sourceName,
            "blk.1.attn_k_b.weight+blk.1.attn_v_b.weight");
  EXPECT_EQ(assembled->parts[0].shape, (std::vector<int64_t>{4, 32, 16}));
  EXPECT_EQ(assembled->parts[1].shape, (std::vector<int64_t>{4, 20, 32}));
  auto want = toFloat32(*hf->find(kvB));
  auto got = toFloat32(*assembled);
  auto gotJoint = toFloat32(*joint->find(kvB));
  ASSERT_TRUE(want.ok() && got.ok() && gotJoint.ok()) << got.message();
  EXPECT_EQ(*got, *want);
  EXPECT_EQ(*gotJoint, *want);
  EXPECT_TRUE(joint->find(kvB)->parts.empty());
  auto bytes = bytesInHfOrder(*assembled);
  ASSERT_TRUE(bytes.ok());
  EXPECT_EQ(bytes->size(), want->size() * 4);

  // V3 converts to deepseek2 too: its expert_gating_func (2) opens it as V3;
  // without the key a file opens as V2 (llama.cpp's softmax default).
  auto v3 = generate(dir, "deepseekv3", "gguf");
  ASSERT_TRUE(v3);
  EXPECT_EQ(v3->config().architecture, "DeepseekV3ForCausalLM");
  EXPECT_EQ(v3->config().qLoraRank, 48);
  // expert_weights_norm (written only when true) is norm_topk_prob.
  EXPECT_EQ(split->metadata("deepseek2.expert_weights_norm"), nullptr);
  EXPECT_FALSE(split->config().normTopkProb);
  auto normed = openCheckpoint(rewrite(*split, dir + "/norm.gguf",
                                       "deepseek2.expert_weights_norm",
                                       GgufValue::boolean(true)));
  ASSERT_TRUE(normed.ok()) << normed.message();
  EXPECT_TRUE((*normed)->config().normTopkProb);
  EXPECT_EQ((*normed)->config().layerIsMoe, (std::vector<bool>{false, true}));
  // The counts are u32, as llama.cpp reads them (it refuses a float
  // leading_dense_block_count: "has wrong type f32").
  const GgufValue *dense = v3->metadata("deepseek2.leading_dense_block_count");
  const GgufValue *groups = v3->metadata("deepseek2.expert_group_count");
  ASSERT_TRUE(dense && groups);
  EXPECT_EQ(dense->type(), GgufType::UInt32);
  EXPECT_EQ(groups->type(), GgufType::UInt32);
  auto floatDense = openCheckpoint(
      rewrite(*v3, dir + "/floatdense.gguf",
              "deepseek2.leading_dense_block_count", GgufValue::f32(1.0f)));
  expectError(floatDense, {"floatdense.gguf",
                           "'deepseek2.leading_dense_block_count'",
                           "non-negative integer"});
  // V3's routing keys: its groups, the renormalization, the bias tensor.
  EXPECT_EQ(v3->config().moeScoring, etllm::models::MoeScoring::Sigmoid);
  EXPECT_EQ(v3->config().moeTopkMethod, etllm::models::MoeTopkMethod::NoauxTc);
  EXPECT_EQ(v3->config().numExpertGroups, 4);
  EXPECT_EQ(v3->config().topkGroup, 2);
  EXPECT_TRUE(v3->config().normTopkProb);
  EXPECT_EQ(v3->config().layerIsMoe, (std::vector<bool>{false, true}));
  // Without expert_gating_func the file opens as V2, whose GGUF form has
  // no groups: refused naming the key.
  auto noGate = openCheckpoint(
      rewrite(*v3, dir + "/nogate.gguf", "deepseek2.expert_gating_func", {}));
  expectError(noGate, {"nogate.gguf", "'deepseek2.expert_group_count'",
                       "not supported for DeepseekV2ForCausalLM"});
  // Without the group keys a V3 file has one group (llama.cpp: no
  // grouping).
  auto bestGroup = openCheckpoint(rewrite(
      *v3, dir + "/bestgroup.gguf", "deepseek2.expert_group_used_count", {}));
  ASSERT_TRUE(bestGroup.ok()) << bestGroup.message();
  EXPECT_EQ((*bestGroup)->config().numExpertGroups, 4);
  EXPECT_EQ((*bestGroup)->config().topkGroup, 1);
  auto oneGroup = openCheckpoint(rewrite(**bestGroup, dir + "/onegroup.gguf",
                                         "deepseek2.expert_group_count", {}));
  ASSERT_TRUE(oneGroup.ok()) << oneGroup.message();
  EXPECT_EQ((*oneGroup)->config().numExpertGroups, 1);
  EXPECT_EQ((*oneGroup)->config().topkGroup, 1);
  // The score-correction bias is required.
  auto noBias = openCheckpoint(rewrite(*v3, dir + "/nobias.gguf", "", {},
                                       {"blk.1.exp_probs_b.bias"}));
  expectError(noBias,
              {"nobias.gguf", "missing tensor "
                              "'model.layers.1.mlp.gate.e_score_correction_"
                              "bias' required by DeepseekV3ForCausalLM"});
}

TEST(Deepseek, GgufErrorsNameTheKeyOrTensor) {
  std::string dir = freshTempDir("deepseek_gguf_errors");
  auto split = generate(dir, "deepseekv2", "gguf", "split");
  auto joint = generate(dir, "deepseekv2", "gguf", "joint");
  ASSERT_TRUE(split && joint);
  std::string p =
      rewrite(*split, dir + "/a.gguf", "deepseek2.attention.kv_lora_rank", {});
  expectError(openCheckpoint(p), {p, "'deepseek2.attention.kv_lora_rank'"});
  p = rewrite(*split, dir + "/b.gguf", "deepseek2.attention.head_count_kv",
              GgufValue::u32(4));
  expectError(openCheckpoint(p), {"'deepseek2.attention.head_count_kv'",
                                  "4 differs from 1", "one kv head"});
  p = rewrite(*split, dir + "/c.gguf", "deepseek2.attention.key_length",
              GgufValue::u32(24));
  expectError(openCheckpoint(p),
              {"'deepseek2.attention.key_length'", "24 differs from 40"});
  p = rewrite(*split, dir + "/d.gguf", "deepseek2.attention.value_length_mla",
              {});
  expectError(openCheckpoint(p),
              {"'deepseek2.attention.value_length_mla'", "required"});
  p = rewrite(*joint, dir + "/e.gguf", "deepseek2.attention.head_count_kv",
              GgufValue::u32(1));
  expectError(openCheckpoint(p),
              {"'deepseek2.attention.head_count_kv'", "1 differs from 4"});
  p = rewrite(*split, dir + "/f.gguf",
              "deepseek2.rope.scaling.yarn_log_multiplier", {});
  expectError(openCheckpoint(p),
              {"'deepseek2.rope.scaling.yarn_log_multiplier'", "required"});
  p = rewrite(*split, dir + "/g.gguf", "deepseek2.rope.scaling.yarn_ext_factor",
              GgufValue::f32(1.0f));
  expectError(openCheckpoint(p),
              {"'deepseek2.rope.scaling.yarn_ext_factor'", "not supported"});
  // llama.cpp's expert groups are V3's selection, not V2's.
  p = rewrite(*split, dir + "/g2.gguf", "deepseek2.expert_group_count",
              GgufValue::u32(2));
  expectError(openCheckpoint(p), {p, "'deepseek2.expert_group_count'",
                                  "2 is not supported for "
                                  "DeepseekV2ForCausalLM"});
  // The generated file's layer 1 is sparse: a metadata that makes it
  // dense disagrees with its router tensor.
  p = rewrite(*split, dir + "/h.gguf", "deepseek2.leading_dense_block_count",
              GgufValue::u32(2));
  expectError(openCheckpoint(p),
              {p, "layer 1 has the router tensor blk.1.ffn_gate_inp.weight",
               "makes it dense"});
  p = rewrite(*split, dir + "/i.gguf", "", {}, {"blk.0.attn_v_b.weight"});
  expectError(openCheckpoint(p),
              {"'blk.0.attn_v_b.weight' is missing", "attn_k_b and attn_v_b"});
  // A part of the wrong shape.
  p = rewrite(*split, dir + "/j.gguf", "deepseek2.attention.value_length_mla",
              GgufValue::u32(16));
  expectError(openCheckpoint(p), {"'blk.0.attn_v_b.weight' has shape "
                                  "[4, 20, 32], expected [4, 16, 32]"});
}

TEST(Deepseek, GeneratorErrors) {
  GeneratorOptions o;
  o.arch = "llama";
  o.qLoraRank = 8;
  expectError(generatorConfig(o), {"--q-lora-rank", "latent attention"});
  o = GeneratorOptions();
  o.arch = "deepseekv2";
  o.sharedFfn = 64;
  expectError(generatorConfig(o),
              {"--shared-ffn", "n_shared_experts * moe_intermediate_size"});
  o = GeneratorOptions();
  o.arch = "deepseekv2";
  o.format = "gguf";
  o.output = freshTempDir("deepseek_gen") + "/x.gguf";
  o.ggufKvB = "both";
  expectError(generateCheckpoint(o), {"--gguf-kv-b 'both'"});
  o.ggufKvB = "split";
  o.ropeScaling = "yarn:4:32:1:0.5";
  expectError(generateCheckpoint(o), {"mscale == mscale_all_dim"});
  o.ropeScaling = "yarn:4:32";
  expectError(generatorConfig(o), {"four numbers"});
  o.arch = "llama";
  o.ropeScaling = "yarn:4:32:1:1";
  expectError(generatorConfig(o), {"--rope-scaling yarn", "LlamaForCausalLM"});
}

} // namespace
