//===- GgufTest.cpp - GGUF writer/reader and name mapping -----------------===//

#include "etllm/Formats/Gguf.h"
#include "etllm/runtime/half.h"
#include "TestUtil.h"

#include <cmath>

using namespace etllm::formats;
using namespace etllm::formats::testing;

namespace {

/// Minimal llama metadata for a 1-layer model (hidden 32, 2 heads).
void setLlamaMetadata(GgufWriter &w) {
  w.set("general.architecture", GgufValue::str("llama"));
  w.set("llama.context_length", GgufValue::u32(64));
  w.set("llama.embedding_length", GgufValue::u32(32));
  w.set("llama.block_count", GgufValue::u32(1));
  w.set("llama.feed_forward_length", GgufValue::u32(64));
  w.set("llama.attention.head_count", GgufValue::u32(2));
  w.set("llama.attention.layer_norm_rms_epsilon", GgufValue::f32(1e-5f));
  w.set("llama.vocab_size", GgufValue::u32(100));
}

TEST(Gguf, WriterRoundTripsAllMetadataTypesAndTensorTypes) {
  std::string dir = freshTempDir("gguf_roundtrip");
  std::string path = dir + "/all.gguf";
  GgufWriter w(64);
  setLlamaMetadata(w);
  w.set("t.u8", GgufValue::u8(200));
  w.set("t.i8", GgufValue::i8(-100));
  w.set("t.u16", GgufValue::u16(60000));
  w.set("t.i16", GgufValue::i16(-30000));
  w.set("t.u32", GgufValue::u32(4000000000u));
  w.set("t.i32", GgufValue::i32(-2000000000));
  w.set("t.f32", GgufValue::f32(1.25f));
  w.set("t.bool", GgufValue::boolean(true));
  w.set("t.str", GgufValue::str("h\xC3\xA9llo"));
  w.set("t.u64", GgufValue::u64(1ull << 60));
  w.set("t.i64", GgufValue::i64(-(1ll << 60)));
  w.set("t.f64", GgufValue::f64(-2.5e300));
  GgufArray inner1, inner2, outer;
  inner1.elementType = inner2.elementType = GgufType::Int16;
  inner1.values = {GgufValue::i16(1), GgufValue::i16(2)};
  inner2.values = {GgufValue::i16(3)};
  outer.elementType = GgufType::Array;
  outer.values = {GgufValue::array(inner1), GgufValue::array(inner2)};
  w.set("t.nested", GgufValue::array(outer));
  w.set("t.empty", GgufValue::array(GgufArray{GgufType::String, {}}));

  std::vector<float> f32(2 * 32), quant(2 * 64);
  for (size_t i = 0; i < f32.size(); ++i)
    f32[i] = 0.01f * static_cast<float>(i) - 0.3f;
  for (size_t i = 0; i < quant.size(); ++i)
    quant[i] = std::sin(0.37f * static_cast<float>(i));
  struct T {
    const char *name;
    DType dtype;
    std::vector<int64_t> shape;
    const std::vector<float> *src;
  } tensors[] = {
      {"a.f32", DType::F32, {2, 32}, &f32},
      {"a.f16", DType::F16, {2, 32}, &f32},
      {"a.bf16", DType::BF16, {64}, &f32},
      {"a.q8_0", DType::Q8_0, {2, 64}, &quant},
      {"a.q4_0", DType::Q4_0, {4, 32}, &quant},
  };
  for (const T &t : tensors)
    ASSERT_TRUE(w.addTensor(t.name, t.dtype, t.shape).ok());
  ASSERT_TRUE(w.open(path).ok());
  std::vector<std::vector<uint8_t>> encoded;
  for (const T &t : tensors) {
    int64_t n = static_cast<int64_t>(numElements(t.shape).value());
    std::vector<uint8_t> bytes(byteSize(t.dtype, t.shape).value());
    ASSERT_TRUE(encodeFloats(t.dtype, t.src->data(), n, bytes.data()).ok());
    // Write in odd-sized chunks to exercise the streaming writer.
    for (size_t off = 0; off < bytes.size(); off += 7)
      ASSERT_TRUE(
          w.write(bytes.data() + off, std::min<size_t>(7, bytes.size() - off))
              .ok());
    encoded.push_back(std::move(bytes));
  }
  ASSERT_TRUE(w.finish().ok());

  auto ck = openGguf(path);
  ASSERT_TRUE(ck.ok()) << ck.message();
  const Checkpoint &c = **ck;
  EXPECT_EQ(c.ggufAlignment(), 64u);
  EXPECT_EQ(c.ggufVersion(), 3u);
  EXPECT_EQ(*c.metadata("t.u8")->toUInt(), 200u);
  EXPECT_EQ(*c.metadata("t.i8")->toInt(), -100);
  EXPECT_EQ(*c.metadata("t.u16")->toUInt(), 60000u);
  EXPECT_EQ(*c.metadata("t.i16")->toInt(), -30000);
  EXPECT_EQ(*c.metadata("t.u32")->toUInt(), 4000000000u);
  EXPECT_EQ(*c.metadata("t.i32")->toInt(), -2000000000);
  EXPECT_EQ(*c.metadata("t.f32")->toFloat(), 1.25);
  EXPECT_EQ(c.metadata("t.f32")->type(), GgufType::Float32);
  EXPECT_EQ(*c.metadata("t.bool")->toBool(), true);
  EXPECT_EQ(*c.metadata("t.str")->toString(), "h\xC3\xA9llo");
  EXPECT_EQ(*c.metadata("t.u64")->toUInt(), 1ull << 60);
  EXPECT_EQ(*c.metadata("t.i64")->toInt(), -(1ll << 60));
  EXPECT_EQ(*c.metadata("t.f64")->toFloat(), -2.5e300);
  const GgufArray *nested = c.metadata("t.nested")->toArray();
  ASSERT_NE(nested, nullptr);
  EXPECT_EQ(nested->elementType, GgufType::Array);
  ASSERT_EQ(nested->values.size(), 2u);
  EXPECT_EQ(nested->values[0].toArray()->values.size(), 2u);
  EXPECT_EQ(*nested->values[1].toArray()->values[0].toInt(), 3);
  EXPECT_EQ(c.metadata("t.empty")->toArray()->values.size(), 0u);
  EXPECT_EQ(c.metadata("missing"), nullptr);
  EXPECT_EQ(c.metadataEntries().front().first, "general.alignment");

  for (size_t i = 0; i < std::size(tensors); ++i) {
    const TensorRef *t = c.find(tensors[i].name);
    ASSERT_NE(t, nullptr) << tensors[i].name;
    EXPECT_EQ(t->dtype, tensors[i].dtype);
    EXPECT_EQ(t->shape, tensors[i].shape);
    EXPECT_EQ(t->fileOffset % 64, 0u);
    ASSERT_EQ(t->nbytes, encoded[i].size());
    EXPECT_EQ(0, std::memcmp(t->data, encoded[i].data(), t->nbytes));
    auto back = toFloat32(*t);
    ASSERT_TRUE(back.ok()) << back.message();
    for (size_t k = 0; k < back->size(); ++k)
      EXPECT_NEAR((*back)[k], (*tensors[i].src)[k],
                  tensors[i].dtype == DType::Q4_0 ? 0.15 : 0.01)
          << tensors[i].name << " " << k;
  }
  // Unknown names keep their GGUF name; the config came from metadata.
  EXPECT_EQ(c.config().hiddenSize, 32);
  EXPECT_EQ(c.config().headDim, 16);
  EXPECT_TRUE(c.config().tieWordEmbeddings); // no output.weight
}

TEST(Gguf, NameMappingPerArchitecture) {
  EXPECT_EQ(ggufNameToHf("llama", "blk.3.attn_q.weight"),
            "model.layers.3.self_attn.q_proj.weight");
  EXPECT_EQ(ggufNameToHf("qwen2", "blk.0.attn_k.bias"),
            "model.layers.0.self_attn.k_proj.bias");
  EXPECT_EQ(ggufNameToHf("llama", "blk.12.ffn_norm.weight"),
            "model.layers.12.post_attention_layernorm.weight");
  EXPECT_EQ(ggufNameToHf("gemma2", "blk.1.ffn_norm.weight"),
            "model.layers.1.pre_feedforward_layernorm.weight");
  EXPECT_EQ(ggufNameToHf("gemma2", "blk.1.post_attention_norm.weight"),
            "model.layers.1.post_attention_layernorm.weight");
  EXPECT_EQ(ggufNameToHf("gemma2", "blk.1.post_ffw_norm.weight"),
            "model.layers.1.post_feedforward_layernorm.weight");
  EXPECT_EQ(ggufNameToHf("phi3", "blk.0.ffn_up.weight"),
            "model.layers.0.mlp.gate_up_proj.weight");
  EXPECT_EQ(ggufNameToHf("phi3", "blk.0.attn_qkv.weight"),
            "model.layers.0.self_attn.qkv_proj.weight");
  EXPECT_EQ(ggufNameToHf("llama", "blk.0.ffn_up.weight"),
            "model.layers.0.mlp.up_proj.weight");
  EXPECT_EQ(ggufNameToHf("qwen3", "blk.2.attn_k_norm.weight"),
            "model.layers.2.self_attn.k_norm.weight");
  EXPECT_EQ(ggufNameToHf("llama", "token_embd.weight"),
            "model.embed_tokens.weight");
  EXPECT_EQ(ggufNameToHf("llama", "output.weight"), "lm_head.weight");
  EXPECT_EQ(ggufNameToHf("llama", "rope_freqs.weight"), "");
  EXPECT_EQ(ggufNameToHf("llama", "blk.01.attn_q.weight"), "");
  EXPECT_EQ(ggufNameToHf("llama", "blk.x.attn_q.weight"), "");
  for (const char *arch :
       {"llama", "qwen2", "qwen3", "phi3", "gemma", "gemma2", "gemma3"})
    for (const char *g : {"blk.4.attn_norm.weight", "blk.4.attn_output.weight",
                          "blk.4.ffn_down.weight", "blk.4.ffn_norm.weight",
                          "output_norm.weight"}) {
      std::string hf = ggufNameToHf(arch, g);
      ASSERT_FALSE(hf.empty()) << arch << " " << g;
      EXPECT_EQ(hfNameToGguf(arch, hf), g) << arch;
    }
  EXPECT_EQ(ggufArchForModelType("mistral"), "llama");
  EXPECT_EQ(ggufArchForModelType("falcon"), "");
}

TEST(Gguf, GgmlTypeNames) {
  EXPECT_EQ(ggmlTypeName(12), "Q4_K (type 12)");
  EXPECT_EQ(dtypeFromGgmlType(14).value(), DType::Q6_K);
  expectError(dtypeFromGgmlType(10), {"Q2_K"});
  expectError(dtypeFromGgmlType(16), {"IQ2_XXS"});
  expectError(dtypeFromGgmlType(1000), {"type 1000"});
  EXPECT_EQ(ggmlTypeFromDType(DType::BF16).value(), 30u);
  EXPECT_FALSE(ggmlTypeFromDType(DType::BOOL).ok());
}

} // namespace
