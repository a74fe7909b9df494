//===- ConfigTest.cpp - export_config.yaml parsing ------------------------===//
#include "etllm/Config/ExportConfig.h"
#include "etllm/Pipeline/Export.h"
#include "etllm/Pipeline/Pipelines.h"
#include "etllm/Transforms/OptionEnums.h"

#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include <functional>
#include <set>

using etllm::ExportConfig;

// The config library does not link the pipelines (no MLIR in it), so the
// allowed values of pipeline.name are a list of their own: it must name
// exactly the registered recipes, in their order.
TEST(ExportConfig, PipelineNamesAreTheRecipes) {
  std::vector<std::string> allowed;
  for (const etllm::ConfigKey &k : etllm::exportConfigSchema())
    if (std::string(k.name) == "pipeline.name")
      allowed.assign(k.allowed.begin(), k.allowed.end());
  EXPECT_EQ(allowed, etllm::recipeNames());
}

// The CPU backend's former recipe names (etllm/Config/RecipeAliases.h): an
// alias is stored as its recipe's name and builds the recipe's stages; a
// former name of no recipe is refused.
TEST(ExportConfig, FormerRecipeNamesAreAliases) {
  const auto &aliases = etllm::recipeAliases();
  ASSERT_EQ(aliases.size(), 6u); // one per cpu-* recipe
  for (const auto &[alias, recipe] : aliases) {
    SCOPED_TRACE(alias);
    EXPECT_EQ(alias.substr(0, 8), "xnnpack-");
    EXPECT_EQ(recipe, "cpu-" + alias.substr(8));
    ExportConfig c;
    ASSERT_TRUE(c.set("pipeline.name=" + alias).ok());
    EXPECT_EQ(c.getString("pipeline.name"), recipe);
    etllm::RecipeOptions o;
    std::vector<etllm::StageSpec> a = etllm::recipeStages(alias, o),
                                  r = etllm::recipeStages(recipe, o);
    ASSERT_FALSE(r.empty());
    ASSERT_EQ(a.size(), r.size());
    for (size_t i = 0; i < a.size(); ++i)
      EXPECT_EQ(a[i].name, r[i].name);
  }
  ExportConfig c;
  etllm::rt::Status st = c.set("pipeline.name=xnnpack-int5");
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("'xnnpack-int5' is not one of"),
            std::string::npos)
      << st.message();
  etllm::RecipeOptions o;
  EXPECT_TRUE(etllm::recipeStages("xnnpack-int5", o).empty());
  EXPECT_TRUE(etllm::recipeStages("xnnpack", o).empty());
}

// Two scheme keys keep export_config.yaml's dtype words (float32, float16)
// where the passes say f32/f16: every value of the key must map onto the
// recipe's choice or a value of the option enum, and every enum value must
// be reachable from the config. (The other scheme keys take their values
// from OptionEnums.def directly.)
template <typename E>
void expectKeyCoversEnum(
    const char *key,
    const std::function<std::string(const etllm::RecipeOptions &)> &get) {
  std::vector<const char *> allowed;
  for (const etllm::ConfigKey &k : etllm::exportConfigSchema())
    if (std::string(k.name) == key)
      allowed = k.allowed;
  ASSERT_FALSE(allowed.empty()) << key;
  std::set<std::string> reached;
  for (const char *value : allowed) {
    ExportConfig c;
    ASSERT_TRUE(c.set(std::string(key) + "=" + value).ok()) << key << value;
    etllm::RecipeOptions o;
    etllm::applyConfigToRecipeOptions(c, o);
    std::string mapped = get(o);
    if (mapped.empty() || mapped == "pipeline")
      continue; // the recipe's choice
    EXPECT_TRUE(etllm::parseOptionEnum<E>(mapped).has_value())
        << key << "=" << value << " maps to '" << mapped << "'";
    reached.insert(mapped);
  }
  for (const etllm::OptionEnumValue &v : etllm::optionEnumValues<E>())
    EXPECT_TRUE(reached.count(v.spelling))
        << key << " has no value for " << v.spelling;
}

TEST(ExportConfig, SchemeKeysMapOntoOptionEnums) {
  expectKeyCoversEnum<etllm::ScaleType>(
      "quantization.scale_dtype",
      [](const etllm::RecipeOptions &o) { return std::string(o.scaleType); });
  expectKeyCoversEnum<etllm::ActivationScheme>(
      "quantization.activations",
      [](const etllm::RecipeOptions &o) { return std::string(o.activations); });
  expectKeyCoversEnum<etllm::LinearScheme>(
      "quantization.linear",
      [](const etllm::RecipeOptions &o) { return std::string(o.linear); });
}

TEST(ExportConfig, DefaultsForEveryKey) {
  ExportConfig c;
  EXPECT_EQ(c.getString("pipeline.name"), "portable");
  EXPECT_EQ(c.getInt("model.max_seq_len"), 0);
  EXPECT_TRUE(c.getBool("model.last_logits_only"));
  EXPECT_EQ(c.getString("quantization.linear"), "pipeline");
  EXPECT_TRUE(c.getList("backends").empty());
  for (const etllm::ConfigKey &k : etllm::exportConfigSchema())
    EXPECT_FALSE(c.isExplicit(k.name)) << k.name;
}

TEST(ExportConfig, NestedYamlAndOverrides) {
  auto c = ExportConfig::fromText(R"yaml(
model:
  max_seq_len: 256
  dtype: float16
pipeline:
  name: cpu-8da4w
quantization:
  group_size: 64
  exclude: ["model.layers.0.*", lm_head]
backends: [cpu]
)yaml",
                                  "test.yaml");
  ASSERT_TRUE(c.ok()) << c.message();
  EXPECT_EQ(c->getInt("model.max_seq_len"), 256);
  EXPECT_EQ(c->getString("model.dtype"), "float16");
  EXPECT_EQ(c->getString("pipeline.name"), "cpu-8da4w");
  EXPECT_EQ(c->getList("quantization.exclude"),
            (std::vector<std::string>{"model.layers.0.*", "lm_head"}));
  EXPECT_TRUE(c->isExplicit("quantization.group_size"));
  ASSERT_TRUE(c->set("quantization.group_size=128").ok());
  EXPECT_EQ(c->getInt("quantization.group_size"), 128);
  ASSERT_TRUE(c->set("backends=[cpu, portable]").ok());
  EXPECT_EQ(c->getList("backends").size(), 2u);
}

TEST(ExportConfig, ErrorsNameTheKey) {
  struct Case {
    const char *yaml, *expected;
  } cases[] = {
      {"model:\n  max_seq_lenn: 3\n", "unknown key 'model.max_seq_lenn'"},
      {"modle:\n  dtype: float32\n", "unknown key 'modle'"},
      {"model:\n  max_seq_len: many\n",
       "key 'model.max_seq_len': 'many' is not an integer"},
      {"model:\n  dtype: float64\n", "key 'model.dtype': 'float64' is not one "
                                     "of: float32, float16, bfloat16"},
      {"model: 3\n", "'model' is a section"},
      {"model:\n  last_logits_only: maybe\n",
       "key 'model.last_logits_only': 'maybe' is not true or false"},
      {"backends: cpu\n", "key 'backends': expected a list of strings"},
      {"quantization:\n  group_size: [1, 2]\n",
       "key 'quantization.group_size': expected a single value"},
      {"model: {dtype: float32\n", "invalid YAML"},
      {"- a\n- b\n", "expected a mapping of keys"},
  };
  for (const Case &c : cases) {
    auto r = ExportConfig::fromText(c.yaml, "cfg.yaml");
    ASSERT_FALSE(r.ok()) << c.yaml;
    EXPECT_NE(r.message().find(c.expected), std::string::npos)
        << r.message() << "\nexpected: " << c.expected;
    EXPECT_EQ(r.message().rfind("cfg.yaml", 0), 0u) << r.message();
  }
  ExportConfig d;
  EXPECT_FALSE(d.set("nonsense").ok());
  EXPECT_FALSE(d.set("quantization.linear=int3").ok());
  EXPECT_FALSE(d.set("no.such.key=1").ok());
}

TEST(ExportConfig, ReferenceDocumentsEveryKey) {
  std::string md = etllm::exportConfigReferenceMarkdown();
  for (const etllm::ConfigKey &k : etllm::exportConfigSchema()) {
    EXPECT_NE(md.find(std::string("## `") + k.name + "`"), std::string::npos)
        << k.name;
  }
}

namespace {
// toYaml (the provenance a program records) reads back as the same
// configuration for any string value: quotes, backslashes and line breaks
// used to come out unquoted (found by the export-config fuzz target; its
// input is fuzz/regressions/export-config/).
TEST(ExportConfig, ToYamlReadsBackForAnyString) {
  for (const char *value :
       {"tokenizer.model", "a\"b", "back\\slash", "two\nlines", "'quoted'",
        " spaces ", "#not a comment", "x: y", "\xe2\x96\x81", ""}) {
    etllm::ExportConfig c;
    YAML::Emitter e;
    e << YAML::DoubleQuoted << value;
    ASSERT_TRUE(c.set(std::string("tokenizer=") + e.c_str()).ok()) << value;
    ASSERT_EQ(c.getString("tokenizer"), value);
    auto again = etllm::ExportConfig::fromText(c.toYaml(), "toYaml");
    ASSERT_TRUE(again.ok()) << again.message();
    EXPECT_EQ(again->getString("tokenizer"), value);
    EXPECT_EQ(again->toYaml(), c.toYaml());
  }
}
} // namespace

// A key added after programs were recorded (writtenWhenDefault false) is
// left out of the configuration a program embeds while it has its default
// (so the golden programs keep their bytes), and written once set.
TEST(ExportConfig, NewKeysAreWrittenOnlyWhenSet) {
  ExportConfig c;
  EXPECT_EQ(c.toYaml().find("model.mla_cache"), std::string::npos);
  EXPECT_NE(c.toYaml().find("model.last_logits_only: true"), std::string::npos);
  ASSERT_TRUE(c.set("model.mla_cache=latent").ok());
  EXPECT_NE(c.toYaml().find("model.mla_cache: latent\n"), std::string::npos);
  auto again = ExportConfig::fromText(c.toYaml(), "toYaml");
  ASSERT_TRUE(again.ok()) << again.message();
  EXPECT_EQ(again->getString("model.mla_cache"), "latent");
  ASSERT_FALSE(c.set("model.mla_cache=compressed").ok());
}
