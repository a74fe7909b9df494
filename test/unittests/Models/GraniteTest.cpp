//===- GraniteTest.cpp - The Granite family's own keys --------------------===//
//
// GraniteConfig's multipliers in config.json (defaults, values, errors) and
// their GGUF keys (llama.cpp's defaults when a key is missing).
//
//===----------------------------------------------------------------------===//

#include "../Formats/TestUtil.h"
#include "etllm/Testing/Generator.h"
#include "etllm/Formats/Gguf.h"

#include <cmath>

using namespace etllm::formats;
using namespace etllm::formats::testing;

namespace {

/// A config.json with GraniteConfig's keys; `extra` is spliced in.
std::string graniteConfig(const std::string &extra) {
  return R"({"architectures": ["GraniteForCausalLM"], "model_type": "granite",
    "hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 2,
    "num_attention_heads": 4, "num_key_value_heads": 2, "vocab_size": 300,
    "attention_bias": false, "mlp_bias": false, "rms_norm_eps": 1e-05,
    "rope_theta": 10000.0, "tie_word_embeddings": true)" +
         extra + "}";
}

Result<ModelConfig> parse(const std::string &extra) {
  return parseHfConfigText(graniteConfig(extra), "/m/config.json");
}

TEST(Granite, ConfigMultipliers) {
  auto c = parse(R"(, "embedding_multiplier": 12.0, "residual_multiplier": 0.22,
    "attention_multiplier": 0.015625, "logits_scaling": 8.0)");
  ASSERT_TRUE(c.ok()) << c.message();
  EXPECT_EQ(c->architecture, "GraniteForCausalLM");
  EXPECT_EQ(c->embeddingMultiplier, 12.0);
  EXPECT_EQ(c->residualMultiplier, 0.22);
  EXPECT_EQ(c->logitsScaling, 8.0);
  EXPECT_EQ(c->attentionScale(), 0.015625); // replaces head_dim^-0.5
  EXPECT_EQ(c->headDim, 16);
  EXPECT_EQ(c->bosTokenId, 1); // class defaults
  EXPECT_EQ(c->primaryEosTokenId(), 2);

  // Missing keys take GraniteConfig's defaults: 1.0 each, so the attention
  // scale is 1.0, not head_dim^-0.5.
  auto d = parse("");
  ASSERT_TRUE(d.ok()) << d.message();
  EXPECT_EQ(d->embeddingMultiplier, 1.0);
  EXPECT_EQ(d->residualMultiplier, 1.0);
  EXPECT_EQ(d->logitsScaling, 1.0);
  EXPECT_EQ(d->attentionScale(), 1.0);
}

TEST(Granite, ConfigErrorsNameTheKey) {
  expectError(parse(R"(, "embedding_multiplier": -12.0)"),
              {"/m/config.json", "'embedding_multiplier'", "positive"});
  expectError(parse(R"(, "logits_scaling": 0)"),
              {"'logits_scaling'", "positive"});
  expectError(parse(R"(, "residual_multiplier": "x")"),
              {"'residual_multiplier'", "number", "string"});
  expectError(parse(R"(, "attention_multiplier": -1)"),
              {"'attention_multiplier'", "negative"});
  // GraniteConfig has no head_dim: the writer refuses a non-default one.
  auto c = parse(R"(, "head_dim": 32)");
  ASSERT_TRUE(c.ok()) << c.message();
  expectError(toHfConfigJson(*c), {"GraniteForCausalLM", "head_dim"});
}

/// Copies a GGUF, replacing or dropping (nullopt) one metadata key.
std::string rewrite(const Checkpoint &src, const std::string &out,
                    const std::string &key, std::optional<GgufValue> value) {
  GgufWriter w(src.ggufAlignment());
  for (const auto &kv : src.metadataEntries())
    if (kv.first != key)
      w.set(kv.first, kv.second);
    else if (value)
      w.set(kv.first, *value);
  for (const TensorRef &t : src.tensors())
    EXPECT_TRUE(w.addTensor(t.sourceName, t.dtype, t.shape).ok());
  EXPECT_TRUE(w.open(out).ok());
  for (const TensorRef &t : src.tensors())
    EXPECT_TRUE(w.write(t.data, t.nbytes).ok());
  EXPECT_TRUE(w.finish().ok());
  return out;
}

TEST(Granite, GgufKeys) {
  std::string dir = freshTempDir("granite_gguf");
  GeneratorOptions o;
  o.arch = "granite";
  o.format = "gguf";
  o.output = dir + "/g.gguf";
  ASSERT_TRUE(generateCheckpoint(o).ok());
  auto src = openCheckpoint(o.output);
  ASSERT_TRUE(src.ok()) << src.message();
  const ModelConfig &c = (*src)->config();
  EXPECT_NEAR(c.embeddingMultiplier, 12.0, 1e-6);
  EXPECT_NEAR(c.residualMultiplier, 0.22, 1e-6);
  EXPECT_NEAR(c.logitsScaling, 8.0, 1e-6);
  EXPECT_NEAR(c.attentionScale(), 1.0 / 16, 1e-9);

  // llama.cpp's defaults: no attention.scale is head_dim^-0.5, no
  // residual/embedding/logit scale is none.
  auto noAttn = openCheckpoint(
      rewrite(**src, dir + "/a.gguf", "granite.attention.scale", {}));
  ASSERT_TRUE(noAttn.ok()) << noAttn.message();
  EXPECT_DOUBLE_EQ((*noAttn)->config().attentionScale(), 0.25);
  auto noLogit = openCheckpoint(
      rewrite(**src, dir + "/l.gguf", "granite.logit_scale", {}));
  ASSERT_TRUE(noLogit.ok()) << noLogit.message();
  EXPECT_EQ((*noLogit)->config().logitsScaling, 1.0);
  std::string p = rewrite(**src, dir + "/r.gguf", "granite.residual_scale",
                          GgufValue::f32(0.0f));
  expectError(openCheckpoint(p), {p, "'granite.residual_scale'", "positive"});
  p = rewrite(**src, dir + "/s.gguf", "granite.embedding_scale",
              GgufValue::str("12"));
  expectError(openCheckpoint(p), {p, "'granite.embedding_scale'", "string"});
}

} // namespace
