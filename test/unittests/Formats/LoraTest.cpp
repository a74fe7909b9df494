//===- LoraTest.cpp - LoRA adapter specs and the merge --------------------===//
#include "etllm/Formats/Lora.h"
#include "etllm/Formats/Gguf.h"
#include "etllm/Formats/GgufMetadata.h"
#include "etllm/Formats/Safetensors.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>

using namespace etllm::formats;

TEST(LoraSpec, PathAndScale) {
  auto a = parseLoraSpec("adapters/chat", "--lora");
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->path, "adapters/chat");
  EXPECT_EQ(a->scale, 1.0);
  auto b = parseLoraSpec("adapters/chat:-0.25", "--lora");
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(b->path, "adapters/chat");
  EXPECT_EQ(b->scale, -0.25);
  // A colon not followed by a number belongs to the path.
  auto c = parseLoraSpec("dir:with:colons", "--lora");
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->path, "dir:with:colons");
  for (const char *bad : {"a:nan", "a:inf", "a:-inf", "a:1e999", ":0.5", ""}) {
    auto r = parseLoraSpec(bad, "--lora");
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_NE(r.message().find("--lora"), std::string::npos) << r.message();
  }
}

namespace {
/// Writes a PEFT adapter with one target of shape [rows, cols], rank r.
std::string writeAdapter(const std::string &dir, int64_t rows, int64_t cols,
                         int64_t r, const std::vector<float> &a,
                         const std::vector<float> &b, double alpha) {
  std::filesystem::create_directories(dir);
  std::ofstream(dir + "/adapter_config.json")
      << "{\"peft_type\": \"LORA\", \"r\": " << r
      << ", \"lora_alpha\": " << alpha
      << ", \"target_modules\": [\"q_proj\"], \"bias\": \"none\"}";
  SafetensorsWriter w;
  const std::string m = "base_model.model.model.layers.0.self_attn.q_proj";
  EXPECT_TRUE(w.addTensor(m + ".lora_A.weight", DType::F32, {r, cols}).ok());
  EXPECT_TRUE(w.addTensor(m + ".lora_B.weight", DType::F32, {rows, r}).ok());
  EXPECT_TRUE(w.open(dir + "/adapter_model.safetensors").ok());
  EXPECT_TRUE(w.write(a.data(), a.size() * 4).ok());
  EXPECT_TRUE(w.write(b.data(), b.size() * 4).ok());
  EXPECT_TRUE(w.finish().ok());
  return dir;
}
} // namespace

TEST(LoraAdapter, MergeIsScaleTimesAlphaOverRankTimesBA) {
  std::string dir = testing::TempDir() + "/lora-merge";
  // A = [[1, 2, 3]], B = [[1], [-2]]: B A = [[1, 2, 3], [-2, -4, -6]].
  writeAdapter(dir, 2, 3, 1, {1, 2, 3}, {1, -2}, 4.0);
  auto adapter = LoraAdapter::open(dir);
  ASSERT_TRUE(adapter.ok()) << adapter.message();
  EXPECT_EQ((*adapter)->rank(), 1);
  EXPECT_EQ((*adapter)->format(), "peft");
  ASSERT_NE((*adapter)->find("model.layers.0.self_attn.q_proj.weight"),
            nullptr);
  EXPECT_EQ((*adapter)->find("model.layers.0.self_attn.q_proj.weight")->scaling,
            4.0);
  std::vector<float> w = {10, 10, 10, 10, 10, 10};
  const std::string name = "model.layers.0.self_attn.q_proj.weight";
  ASSERT_TRUE((*adapter)->mergeInto(name, 0.5, 2, 3, w.data()).ok());
  std::vector<float> want = {12, 14, 16, 6, 2, -2};
  EXPECT_EQ(w, want);
  // Other weights are untouched; a wrong shape is an error naming it.
  std::vector<float> v = {1, 2};
  ASSERT_TRUE(
      (*adapter)->mergeInto("model.norm.weight", 1, 1, 2, v.data()).ok());
  EXPECT_EQ(v, (std::vector<float>{1, 2}));
  auto bad = (*adapter)->mergeInto(name, 1, 3, 2, w.data());
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.message().find("q_proj"), std::string::npos);
}

TEST(LoraAdapter, NonFiniteValuesAreRefusedByName) {
  std::string dir = testing::TempDir() + "/lora-nan";
  writeAdapter(dir, 2, 3, 1, {1, NAN, 3}, {1, -2}, 1.0);
  auto adapter = LoraAdapter::open(dir);
  ASSERT_TRUE(adapter.ok()) << adapter.message();
  std::vector<float> w(6, 0.f);
  auto st = (*adapter)->mergeInto("model.layers.0.self_attn.q_proj.weight", 1,
                                  2, 3, w.data());
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("lora_A.weight' holds NaN or infinity"),
            std::string::npos)
      << st.message();
}

namespace {
/// Writes a llama.cpp LoRA GGUF for a Llama with one pair on `weight`
/// (a GGUF name such as "blk.0.attn_v.weight"), B [rows, r], A [r, cols].
std::string writeGgufAdapter(const std::string &path, const std::string &weight,
                             int64_t rows, int64_t cols, int64_t r,
                             const std::vector<float> &a,
                             const std::vector<float> &b, float alpha) {
  GgufWriter w;
  w.set("general.architecture", GgufValue::str("llama"));
  w.set("general.type", GgufValue::str("adapter"));
  w.set("adapter.type", GgufValue::str("lora"));
  w.set("adapter.lora.alpha", GgufValue::f32(alpha));
  EXPECT_TRUE(w.addTensor(weight + ".lora_a", DType::F32, {r, cols}).ok());
  EXPECT_TRUE(w.addTensor(weight + ".lora_b", DType::F32, {rows, r}).ok());
  EXPECT_TRUE(w.open(path).ok());
  EXPECT_TRUE(w.write(a.data(), a.size() * 4).ok());
  EXPECT_TRUE(w.write(b.data(), b.size() * 4).ok());
  EXPECT_TRUE(w.finish().ok());
  return path;
}
} // namespace

TEST(LoraAdapter, GgufScaleIsAlphaOverRankOrOneWhenAlphaIsZero) {
  const std::string v = "model.layers.0.self_attn.v_proj.weight";
  for (float alpha : {0.f, 6.f}) {
    std::string path = writeGgufAdapter(
        testing::TempDir() + "/lora-alpha.gguf", "blk.0.attn_v.weight", 2, 3, 2,
        {1, 0, 0, 0, 1, 0}, {1, 0, 0, 1}, alpha);
    auto adapter = LoraAdapter::open(path);
    ASSERT_TRUE(adapter.ok()) << adapter.message();
    EXPECT_EQ((*adapter)->format(), "gguf");
    EXPECT_EQ((*adapter)->files(), std::vector<std::string>{path});
    ASSERT_NE((*adapter)->find(v), nullptr);
    EXPECT_EQ((*adapter)->find(v)->scaling, alpha == 0 ? 1.0 : 3.0);
    // B A = [[1, 0, 0], [0, 1, 0]].
    std::vector<float> w(6, 0.f);
    ASSERT_TRUE((*adapter)->mergeInto(v, 1, 2, 3, w.data()).ok());
    float s = alpha == 0 ? 1.f : 3.f;
    EXPECT_EQ(w, (std::vector<float>{s, 0, 0, 0, s, 0}));
  }
}

TEST(LoraAdapter, GgufQueryRowsNeedTheBaseHeadCounts) {
  // q's lora_b rows are in the converter's interleaved order; without the
  // base model their order is unknown, which is an error naming the pair.
  std::string path = writeGgufAdapter(testing::TempDir() + "/lora-q.gguf",
                                      "blk.0.attn_q.weight", 4, 3, 1, {1, 2, 3},
                                      {1, 2, 3, 4}, 1);
  auto adapter = LoraAdapter::open(path);
  ASSERT_FALSE(adapter.ok());
  EXPECT_NE(adapter.message().find("blk.0.attn_q.weight"), std::string::npos)
      << adapter.message();
  EXPECT_NE(adapter.message().find("base model"), std::string::npos)
      << adapter.message();
}
