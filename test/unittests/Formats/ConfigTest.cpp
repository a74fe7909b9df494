//===- ConfigTest.cpp - config.json parsing, validation, writing ----------===//

#include "etllm/Testing/Generator.h"
#include "etllm/Formats/ModelConfig.h"
#include "etllm/Models/Registry.h"
#include "TestUtil.h"

#include <cmath>

using namespace etllm::formats;
using namespace etllm::formats::testing;

namespace {

Result<ModelConfig> parse(const std::string &text) {
  return parseHfConfigText(text, "/models/x/config.json");
}

const char *kLlama32 = R"({
  "architectures": ["LlamaForCausalLM"], "attention_bias": false,
  "attention_dropout": 0.0, "bos_token_id": 128000,
  "eos_token_id": [128001, 128008, 128009], "head_dim": 64,
  "hidden_act": "silu", "hidden_size": 2048, "initializer_range": 0.02,
  "intermediate_size": 8192, "max_position_embeddings": 131072,
  "mlp_bias": false, "model_type": "llama", "num_attention_heads": 32,
  "num_hidden_layers": 16, "num_key_value_heads": 8, "pretraining_tp": 1,
  "rms_norm_eps": 1e-05,
  "rope_scaling": {"factor": 32.0, "high_freq_factor": 4.0,
    "low_freq_factor": 1.0, "original_max_position_embeddings": 8192,
    "rope_type": "llama3"},
  "rope_theta": 500000.0, "tie_word_embeddings": true,
  "torch_dtype": "bfloat16", "transformers_version": "4.45.0.dev0",
  "use_cache": true, "vocab_size": 128256})";

TEST(HfConfig, Llama32WithLlama3RopeScaling) {
  auto c = parse(kLlama32);
  ASSERT_TRUE(c.ok()) << c.message();
  EXPECT_EQ(c->architecture, "LlamaForCausalLM");
  EXPECT_EQ(c->headDim, 64);
  EXPECT_EQ(c->numKvHeads, 8);
  EXPECT_EQ(c->ropeScaling.type, "llama3");
  EXPECT_EQ(c->ropeScaling.factor, 32.0);
  EXPECT_EQ(c->ropeScaling.originalMaxPositionEmbeddings, 8192);
  EXPECT_EQ(c->eosTokenIds, (std::vector<int64_t>{128001, 128008, 128009}));
  EXPECT_TRUE(c->tieWordEmbeddings);
  EXPECT_EQ(c->torchDtype, "bfloat16");
  // HF's llama3 inv_freq equals base frequencies divided by llama.cpp's
  // rope_freqs factors.
  std::vector<double> inv = ropeInverseFrequencies(*c);
  std::vector<float> ff = llama3RopeFreqFactors(*c, 8192);
  ASSERT_EQ(inv.size(), 32u);
  ASSERT_EQ(ff.size(), 32u);
  for (size_t i = 0; i < inv.size(); ++i) {
    double base = 1.0 / std::pow(500000.0, (2.0 * i) / 64);
    EXPECT_NEAR(inv[i], base / ff[i], 1e-6 * base) << i;
  }
  EXPECT_EQ(ff.front(), 1.0f);
  EXPECT_EQ(ff.back(), 32.0f);
}

TEST(HfConfig, ArchitectureTraitsAndWindows) {
  auto g2 = parse(R"({"architectures": ["Gemma2ForCausalLM"],
    "hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 5,
    "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 32,
    "vocab_size": 300, "sliding_window": 16, "query_pre_attn_scalar": 24,
    "hidden_activation": "gelu_pytorch_tanh", "hidden_act": "gelu"})");
  ASSERT_TRUE(g2.ok()) << g2.message();
  EXPECT_TRUE(g2->normAddsOne && g2->scaleEmbeddings && g2->sandwichNorms);
  EXPECT_EQ(g2->hiddenAct, "gelu_pytorch_tanh");
  EXPECT_EQ(g2->slidingWindow, 16);
  EXPECT_EQ(g2->layerUsesSlidingWindow,
            (std::vector<bool>{true, false, true, false, true}));
  EXPECT_EQ(g2->attnLogitSoftcapping, 50.0); // class defaults
  EXPECT_EQ(g2->finalLogitSoftcapping, 30.0);
  EXPECT_EQ(g2->queryPreAttnScalar, 24.0);
  EXPECT_DOUBLE_EQ(g2->attentionScale(), 1.0 / std::sqrt(24.0));
  EXPECT_TRUE(g2->tieWordEmbeddings);
  EXPECT_EQ(g2->bosTokenId, 2);

  auto q2 = parse(R"({"architectures": ["Qwen2ForCausalLM"],
    "hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 4,
    "num_attention_heads": 4, "num_key_value_heads": 2, "vocab_size": 300,
    "use_sliding_window": true, "sliding_window": 32, "max_window_layers": 2,
    "eos_token_id": 5})");
  ASSERT_TRUE(q2.ok()) << q2.message();
  EXPECT_TRUE(q2->attentionBias);
  EXPECT_FALSE(q2->oProjBias);
  EXPECT_EQ(q2->layerUsesSlidingWindow,
            (std::vector<bool>{false, false, true, true}));
  EXPECT_EQ(q2->bosTokenId, -1);

  auto q3 = parse(R"({"architectures": ["Qwen3ForCausalLM"],
    "hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 2,
    "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 32,
    "vocab_size": 300, "use_sliding_window": false, "sliding_window": 32})");
  ASSERT_TRUE(q3.ok()) << q3.message();
  EXPECT_TRUE(q3->qkNorm);
  EXPECT_EQ(q3->headDim, 32);
  EXPECT_EQ(q3->slidingWindow, 0);

  auto phi = parse(R"({"architectures": ["Phi3ForCausalLM"],
    "hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 2,
    "num_attention_heads": 4, "vocab_size": 300,
    "partial_rotary_factor": 0.75, "sliding_window": 2047,
    "original_max_position_embeddings": 4096, "rope_scaling": null})");
  ASSERT_TRUE(phi.ok()) << phi.message();
  EXPECT_TRUE(phi->fusedQkv && phi->fusedGateUp);
  EXPECT_EQ(phi->rotaryDim(), 12);
  EXPECT_EQ(phi->numKvHeads, 4);
  EXPECT_EQ(phi->slidingWindow, 2047);
  EXPECT_EQ(phi->rmsNormEps, 1e-5); // Phi3 class default

  auto mis = parse(R"({"architectures": ["MistralForCausalLM"],
    "hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 2,
    "num_attention_heads": 4, "num_key_value_heads": 1, "vocab_size": 300,
    "sliding_window": 4096})");
  ASSERT_TRUE(mis.ok()) << mis.message();
  EXPECT_EQ(mis->layerUsesSlidingWindow, (std::vector<bool>{true, true}));

  auto gem = parse(R"({"architectures": ["GemmaForCausalLM"],
    "hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 2,
    "num_attention_heads": 4, "num_key_value_heads": 1, "vocab_size": 300,
    "head_dim": 16, "hidden_act": "gelu_pytorch_tanh",
    "hidden_activation": null})");
  ASSERT_TRUE(gem.ok()) << gem.message();
  EXPECT_EQ(gem->hiddenAct, "gelu_pytorch_tanh");
  EXPECT_FALSE(gem->sandwichNorms);
}

TEST(HfConfig, Transformers5RopeParametersAndLayerTypes) {
  auto c = parse(R"({"architectures": ["Qwen3ForCausalLM"],
    "hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 3,
    "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 16,
    "vocab_size": 300, "dtype": "bfloat16", "sliding_window": 8,
    "layer_types": ["full_attention", "sliding_attention", "full_attention"],
    "rope_parameters": {"rope_type": "linear", "factor": 2.0,
                        "rope_theta": 1000000.0}})");
  ASSERT_TRUE(c.ok()) << c.message();
  EXPECT_EQ(c->ropeTheta, 1000000.0);
  EXPECT_EQ(c->ropeScaling.type, "linear");
  EXPECT_EQ(c->torchDtype, "bfloat16");
  EXPECT_EQ(c->layerUsesSlidingWindow, (std::vector<bool>{false, true, false}));
  EXPECT_EQ(c->slidingWindow, 8);
}

TEST(HfConfig, ErrorsNameFileAndKey) {
  const std::string file = "/models/x/config.json";
  expectError(
      parse(R"({"architectures": ["GPT2LMHeadModel"],
    "model_type": "gpt2"})"),
      {file, "GPT2LMHeadModel", "LlamaForCausalLM", "Gemma2ForCausalLM"});
  expectError(parse(R"({"model_type": "bert"})"), {file, "bert", "supported"});
  expectError(parse(R"({"architectures": ["LlamaForCausalLM"],
    "intermediate_size": 8, "num_hidden_layers": 1,
    "num_attention_heads": 2, "vocab_size": 10})"),
              {file, "'hidden_size'", "missing"});
  expectError(parse(R"({"architectures": ["LlamaForCausalLM"],
    "hidden_size": "64", "intermediate_size": 8, "num_hidden_layers": 1,
    "num_attention_heads": 2, "vocab_size": 10})"),
              {file, "'hidden_size'", "integer", "string"});
  expectError(parse(R"({"architectures": ["LlamaForCausalLM"],
    "hidden_size": 64, "intermediate_size": 8, "num_hidden_layers": 1,
    "num_attention_heads": 6, "vocab_size": 10})"),
              {file, "'num_attention_heads'", "does not divide"});
  expectError(parse(R"({"architectures": ["LlamaForCausalLM"],
    "hidden_size": 64, "intermediate_size": 8, "num_hidden_layers": 1,
    "num_attention_heads": 8, "num_key_value_heads": 3, "vocab_size": 10})"),
              {file, "'num_key_value_heads'", "does not divide"});
  expectError(parse(R"({"architectures": ["LlamaForCausalLM"],
    "hidden_size": 64, "intermediate_size": 8, "num_hidden_layers": 0,
    "num_attention_heads": 8, "vocab_size": 10})"),
              {file, "'num_hidden_layers'", "positive"});
  expectError(parse(R"({"architectures": ["LlamaForCausalLM"],
    "hidden_size": 64, "intermediate_size": 8, "num_hidden_layers": 2,
    "num_attention_heads": 8, "vocab_size": 100000000})"),
              {file, "'vocab_size'", "absurd"});
  expectError(parse(R"({"architectures": ["LlamaForCausalLM"],
    "hidden_size": 64, "intermediate_size": 8, "num_hidden_layers": 2,
    "num_attention_heads": 8, "vocab_size": 10,
    "rope_scaling": {"rope_type": "yarn", "factor": 4.0}})"),
              {file, "'rope_scaling'", "yarn"});
  expectError(parse(R"({"architectures": ["LlamaForCausalLM"],
    "hidden_size": 64, "intermediate_size": 8, "num_hidden_layers": 2,
    "num_attention_heads": 8, "vocab_size": 10, "eos_token_id": 99})"),
              {file, "'eos_token_id'", "outside"});
  expectError(parse("{\"hidden_size\": 64,"), {file, "invalid JSON"});
  expectError(parse("[1, 2]"), {file, "object"});
  expectError(parse(std::string(100000, '[') + std::string(100000, ']')),
              {file, "object"});
  expectError(parse("{\"architectures\": [\"LlamaForCausalLM\"], "
                    "\"hidden_size\": " +
                    std::string(50000, '[') + std::string(50000, ']') + "}"),
              {file, "'hidden_size'", "array"});
  expectError(parseHfConfig("/nonexistent/dir/config.json"),
              {"/nonexistent/dir/config.json"});
}

TEST(HfConfig, WriterRoundTripsEveryGeneratorPreset) {
  for (const char *arch :
       {"llama", "qwen2", "qwen3", "mistral", "phi3", "gemma", "gemma2",
        "gemma3"}) {
    SCOPED_TRACE(arch);
    GeneratorOptions o;
    o.arch = arch;
    auto c = generatorConfig(o);
    ASSERT_TRUE(c.ok()) << c.message();
    auto text = toHfConfigJson(*c);
    ASSERT_TRUE(text.ok()) << text.message();
    auto back = parseHfConfigText(*text, arch);
    ASSERT_TRUE(back.ok()) << back.message() << "\n" << *text;
    expectConfigsEqual(*back, *c, arch);
  }
  GeneratorOptions big;
  big.preset = "llama-3.2-1b";
  auto c = generatorConfig(big);
  ASSERT_TRUE(c.ok()) << c.message();
  EXPECT_EQ(c->vocabSize, 128256);
  EXPECT_EQ(c->bosTokenId, 128000);
  EXPECT_EQ(c->primaryEosTokenId(), 128001);
  auto text = toHfConfigJson(*c);
  ASSERT_TRUE(text.ok());
  auto ref = parse(kLlama32);
  auto back = parseHfConfigText(*text, "gen");
  ASSERT_TRUE(back.ok()) << back.message();
  ModelConfig want = *ref;
  want.eosTokenIds = {128001};
  want.torchDtype = "float32";
  expectConfigsEqual(*back, want, "llama-3.2-1b preset");
}

TEST(HfConfig, ExpectedTensorsPerArchitecture) {
  GeneratorOptions o;
  o.arch = "phi3";
  auto phi = generatorConfig(o);
  ASSERT_TRUE(phi.ok());
  auto t = expectedTensors(*phi);
  ASSERT_TRUE(t.ok());
  bool sawQkv = false, sawGateUp = false;
  for (const ExpectedTensor &e : *t) {
    if (e.name == "model.layers.0.self_attn.qkv_proj.weight") {
      sawQkv = true;
      EXPECT_EQ(e.shape, (std::vector<int64_t>{64 + 2 * 32, 64}));
    }
    if (e.name == "model.layers.1.mlp.gate_up_proj.weight") {
      sawGateUp = true;
      EXPECT_EQ(e.shape, (std::vector<int64_t>{256, 64}));
    }
    EXPECT_EQ(e.name.find("q_proj"), std::string::npos);
  }
  EXPECT_TRUE(sawQkv && sawGateUp);
  o.arch = "gemma2";
  auto g2 = generatorConfig(o);
  auto tg = expectedTensors(*g2);
  ASSERT_TRUE(tg.ok());
  EXPECT_EQ(tg->size(), 1u + 2 * 11 + 1); // tied: no lm_head
  o.arch = "qwen2";
  auto q2 = generatorConfig(o);
  auto tq = expectedTensors(*q2);
  int biases = 0;
  for (const ExpectedTensor &e : *tq)
    biases += e.isBias;
  EXPECT_EQ(biases, 2 * 3);
}

/// Gemma 3: five sliding layers to one global (sliding_window_pattern),
/// the local layers' own RoPE base, q/k norms, no soft-capping; and the
/// near misses: a pattern that is not positive, a negative local base, a
/// layer_types list that disagrees with the written pattern.
TEST(HfConfig, Gemma3PatternAndLocalRope) {
  const std::string base = R"({"architectures": ["Gemma3ForCausalLM"],
    "hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 13,
    "num_attention_heads": 4, "num_key_value_heads": 1, "head_dim": 32,
    "vocab_size": 300, "sliding_window": 16, "query_pre_attn_scalar": 32,
    "rope_theta": 1000000.0, "hidden_activation": "gelu_pytorch_tanh")";
  auto g3 = parse(base + R"(, "rope_local_base_freq": 20000.0,
    "sliding_window_pattern": 6})");
  ASSERT_TRUE(g3.ok()) << g3.message();
  EXPECT_TRUE(g3->normAddsOne && g3->scaleEmbeddings && g3->sandwichNorms);
  EXPECT_TRUE(g3->qkNorm);
  EXPECT_EQ(g3->slidingWindow, 16);
  std::vector<bool> sliding(13, true);
  sliding[5] = sliding[11] = false; // layers 5, 11 global
  EXPECT_EQ(g3->layerUsesSlidingWindow, sliding);
  EXPECT_EQ(g3->ropeTheta, 1e6);
  EXPECT_EQ(g3->ropeLocalTheta, 20000.0);
  EXPECT_EQ(g3->attnLogitSoftcapping, 0.0);
  EXPECT_EQ(g3->finalLogitSoftcapping, 0.0);
  EXPECT_DOUBLE_EQ(g3->attentionScale(), 1.0 / std::sqrt(32.0));

  // The class defaults: pattern 6, local base 10000.
  auto defaults = parse(base + "}");
  ASSERT_TRUE(defaults.ok()) << defaults.message();
  EXPECT_EQ(defaults->layerUsesSlidingWindow, sliding);
  EXPECT_EQ(defaults->ropeLocalTheta, 10000.0);

  // Another pattern moves the global layers.
  auto p3 = parse(base + R"(, "sliding_window_pattern": 3})");
  ASSERT_TRUE(p3.ok()) << p3.message();
  EXPECT_FALSE(p3->layerUsesSlidingWindow[2]);
  EXPECT_TRUE(p3->layerUsesSlidingWindow[3]);
  EXPECT_FALSE(p3->layerUsesSlidingWindow[5]);

  const std::string file = "/models/x/config.json";
  expectError(parse(base + R"(, "sliding_window_pattern": 0})"),
              {file, "sliding_window_pattern", "positive"});
  expectError(parse(base + R"(, "rope_local_base_freq": -1.0})"),
              {file, "rope_local_base_freq"});

  // The writer refuses layers that do not follow the pattern.
  ModelConfig bad = *g3;
  bad.layerUsesSlidingWindow[5] = true;
  auto text = toHfConfigJson(bad);
  ASSERT_FALSE(text.ok());
  EXPECT_NE(text.message().find("6th layer is global"), std::string::npos)
      << text.message();
}

TEST(HfConfig, ValidateRejectsInconsistentConfigs) {
  GeneratorOptions o;
  ModelConfig c = generatorConfig(o).value();
  EXPECT_TRUE(validate(c).ok());
  ModelConfig bad = c;
  bad.layerUsesSlidingWindow.pop_back();
  EXPECT_FALSE(validate(bad).ok());
  bad = c;
  bad.numKvHeads = 3;
  EXPECT_FALSE(validate(bad).ok());
  bad = c;
  bad.headDim = 15;
  EXPECT_FALSE(validate(bad).ok());
  bad = c;
  bad.architecture = "FalconForCausalLM";
  bad.modelType = "falcon";
  Status s = validate(bad);
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("Qwen3ForCausalLM"), std::string::npos);
}

} // namespace

namespace {

// The config as one JSON key per field (the keys of ModelConfig.td) reads
// back as the same config for every family's generated config, and writes
// the config.json the families' writer writes.
TEST(FieldsJson, EveryFamilyRoundTrips) {
  for (const etllm::models::FamilySpec *f : etllm::models::families()) {
    SCOPED_TRACE(f->id);
    GeneratorOptions o;
    o.arch = f->id;
    auto c = generatorConfig(o);
    ASSERT_TRUE(c.ok()) << c.message();
    std::string json = modelConfigFieldsJson(*c);
    auto back = modelConfigFromFieldsJson(json, "fields");
    ASSERT_TRUE(back.ok()) << back.message() << "\n" << json;
    EXPECT_EQ(modelConfigFieldsJson(*back), json);
    auto want = toHfConfigJson(*c);
    auto got = toHfConfigJson(*back);
    ASSERT_TRUE(want.ok() && got.ok());
    EXPECT_EQ(*got, *want);
  }
}

// What the readers derive is derived when the object leaves it out: the
// traits, the per-layer flags, the family's sparse layers.
TEST(FieldsJson, DerivesWhatTheReadersDerive) {
  auto c = modelConfigFromFieldsJson(
      R"({"architecture": "Qwen3ForCausalLM", "hidden_size": 64,
          "intermediate_size": 128, "num_hidden_layers": 3,
          "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 16,
          "vocab_size": 512, "max_position_embeddings": 128,
          "rope_scaling": {"type": "linear", "factor": 2.0}})",
      "fields");
  ASSERT_TRUE(c.ok()) << c.message();
  EXPECT_EQ(c->modelType, "qwen3");
  EXPECT_TRUE(c->qkNorm);
  EXPECT_EQ(c->layerUsesSlidingWindow, std::vector<bool>(3, false));
  EXPECT_EQ(c->ropeScaling.type, "linear");
  EXPECT_EQ(c->ropeScaling.factor, 2.0);
  EXPECT_EQ(c->rmsNormEps, 1e-6); // the field's default
}

TEST(FieldsJson, ErrorsNameTheKey) {
  expectError(modelConfigFromFieldsJson("{", "f"), {"f", "not valid JSON"});
  expectError(modelConfigFromFieldsJson(R"({"hidden": 4})", "f"),
              {"f", "no field 'hidden'"});
  expectError(modelConfigFromFieldsJson(R"({"hidden_size": 4.5})", "f"),
              {"f", "'hidden_size' must be an integer"});
  expectError(
      modelConfigFromFieldsJson(R"({"rope_scaling": {"factor": "x"}})", "f"),
      {"f.rope_scaling", "'factor' must be a number"});
  expectError(modelConfigFromFieldsJson(R"({"moe_scoring": "relu"})", "f"),
              {"f", "'moe_scoring' must be one of softmax or sigmoid"});
  expectError(modelConfigFromFieldsJson(
                  R"({"architecture": "GPT2LMHeadModel"})", "f"),
              {"unsupported architecture 'GPT2LMHeadModel'"});
}

} // namespace
