//===- ModelConfigTest.cpp - #etllm.model_config from and to JSON ---------===//
//
// The attribute's JSON reader (the ATen importer's `model_config`, generated
// from etllm/Models/ModelConfig.td) is the inverse of the metadata JSON the
// serializer writes: the groups' keys sit flat beside the core's and make
// the group. Unknown keys, wrong JSON types and configs the verifier
// refuses are errors naming the key.
//
//===----------------------------------------------------------------------===//
#include "etllm/Dialect/Etllm/EtllmModelConfig.h"
#include "etllm/InitAll.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"
#include "llvm/Support/JSON.h"

#include <gtest/gtest.h>

using namespace mlir;
using namespace mlir::etllm;

namespace {

class ModelConfigJson : public testing::Test {
protected:
  ModelConfigJson() : ctx(registry()) { ctx.loadAllAvailableDialects(); }
  static DialectRegistry registry() {
    DialectRegistry r;
    ::etllm::registerAllDialects(r);
    return r;
  }

  FailureOr<ModelConfigAttr> read(StringRef text, std::string &error) {
    llvm::Expected<llvm::json::Value> v = llvm::json::parse(text);
    EXPECT_TRUE(bool(v)) << llvm::toString(v.takeError());
    return ModelConfigAttr::fromJson(&ctx, *v->getAsObject(), error);
  }
  std::string errorOf(StringRef text) {
    std::string error;
    EXPECT_TRUE(failed(read(text, error))) << text.str();
    return error;
  }

  MLIRContext ctx;
};

TEST_F(ModelConfigJson, GroupsRoundTripThroughFlatKeys) {
  ModelConfigParams core;
  core.architecture = "DeepseekV2ForCausalLM";
  core.dtype = "float32";
  core.numHiddenLayers = 2;
  core.numAttentionHeads = core.numKeyValueHeads = 4;
  core.headDim = 8;
  core.vocabSize = 512;
  core.maxSeqLen = 64;
  core.rmsNormEps = 1e-6;
  core.eosTokenIds = {1};
  core.layerSlidingWindow = {false, false};
  MlaConfigParams mla;
  mla.kvLoraRank = 32;
  mla.qkNopeHeadDim = 16;
  mla.vHeadDim = 20;
  core.mla = getMlaConfigAttr(&ctx, mla);
  MoeConfigParams moe;
  moe.numExperts = 8;
  moe.numExpertsPerTok = 2;
  moe.moeScoring = "sigmoid";
  moe.moeTopkMethod = "noaux_tc";
  moe.nGroup = 4;
  moe.topkGroup = 2;
  moe.routedScalingFactor = 2.5;
  moe.layerMoe = {false, true};
  core.moe = getMoeConfigAttr(&ctx, moe);
  ModelConfigAttr attr = getModelConfigAttr(&ctx, core);

  // One flat object: the MoE keys the serializer writes are keys the
  // reader knows (they used to be refused).
  std::string json = attr.toJson();
  EXPECT_NE(json.find("\"kv_lora_rank\":32"), std::string::npos) << json;
  EXPECT_NE(json.find("\"moe_scoring\":\"sigmoid\""), std::string::npos);
  EXPECT_EQ(json.find("\"mla\""), std::string::npos);
  std::string error;
  FailureOr<ModelConfigAttr> back = read(json, error);
  ASSERT_TRUE(succeeded(back)) << error;
  EXPECT_EQ(*back, attr);
}

TEST_F(ModelConfigJson, DenseModelsHaveNoGroups) {
  std::string error;
  FailureOr<ModelConfigAttr> attr =
      read(R"({"num_attention_heads": 4, "max_seq_len": 8})", error);
  ASSERT_TRUE(succeeded(attr)) << error;
  EXPECT_FALSE(attr->getMla());
  EXPECT_FALSE(attr->getMoe());
  EXPECT_EQ(attr->toJson().find("num_experts"), std::string::npos);
  // One key of a group makes it (and its verifier runs).
  attr = read(R"({"num_experts": 4, "num_experts_per_tok": 2})", error);
  ASSERT_TRUE(succeeded(attr)) << error;
  ASSERT_TRUE(attr->getMoe());
  EXPECT_EQ(attr->getMoe().getNumExperts(), 4);
  EXPECT_EQ(attr->getMoe().getMoeScoring(), "softmax"); // the default
}

TEST_F(ModelConfigJson, BadKeysAndValuesAreRefusedByName) {
  EXPECT_EQ(errorOf(R"({"hidden": 4})").rfind(
                "model_config has no key 'hidden'", 0),
            0u);
  EXPECT_EQ(errorOf(R"({"mla": {}})").rfind("model_config has no key 'mla'", 0),
            0u);
  EXPECT_EQ(errorOf(R"({"vocab_size": "big"})"),
            "model_config key 'vocab_size' must be an integer");
  EXPECT_EQ(errorOf(R"({"tie_word_embeddings": 1})"),
            "model_config key 'tie_word_embeddings' must be a boolean");
  EXPECT_EQ(errorOf(R"({"layer_moe": [true, 2]})"),
            "model_config key 'layer_moe' must be a list of booleans");
  EXPECT_EQ(errorOf(R"({"rope_theta": "x"})"),
            "model_config key 'rope_theta' must be a number");
  // The verifiers: each field's generated check, then the rules.
  EXPECT_EQ(errorOf(R"({"max_seq_len": -4})"),
            "model_config: max_seq_len must not be negative, got -4");
  EXPECT_EQ(errorOf(R"({"moe_scoring": "relu", "num_experts": 2})"),
            "model_config: moe_scoring 'relu' is not softmax or sigmoid");
  EXPECT_EQ(errorOf(R"({"num_experts": 2, "num_experts_per_tok": 3})"),
            "model_config: num_experts_per_tok 3 is more than num_experts 2");
  EXPECT_EQ(errorOf(R"({"q_lora_rank": 8})"),
            "model_config: q_lora_rank, qk_nope_head_dim and v_head_dim need "
            "kv_lora_rank (multi-head latent attention)");
  EXPECT_EQ(errorOf(R"({"num_hidden_layers": 2, "num_experts": 2,
                        "layer_moe": [true]})"),
            "model_config: layer_moe has 1 entries for 2 layers");
}

} // namespace
