//===- Llama2cTest.cpp - llama2.c v0 checkpoints --------------------------===//

#include "etllm/Formats/Llama2c.h"
#include "TestUtil.h"

using namespace etllm::formats;
using namespace etllm::formats::testing;

namespace {

/// A tiny llama2.c checkpoint with element values equal to their index.
std::string makeLlama2c(Llama2cHeader h, int64_t extraFloats = 0) {
  Bytes b;
  b.put(h);
  Result<uint64_t> size = llama2cExpectedFileSize(h, "x");
  EXPECT_TRUE(size.ok()) << size.message();
  uint64_t floats = (*size - 28) / 4 + static_cast<uint64_t>(extraFloats);
  for (uint64_t i = 0; i < floats; ++i)
    b.put(static_cast<float>(i));
  return b.data;
}

TEST(Llama2c, StoriesHeaderAndLayout) {
  std::string path = sharedFile("models/stories260K/stories260K.bin");
  SKIP_IF_NO_SHARED(path);
  auto ck = openLlama2c(path);
  ASSERT_TRUE(ck.ok()) << ck.message();
  const Checkpoint &c = **ck;
  EXPECT_EQ(c.tensors().size(), 1u + 5 * 9 + 1);
  EXPECT_EQ(c.tensors().front().name, "model.embed_tokens.weight");
  EXPECT_EQ(c.tensors().front().fileOffset, 28u);
  const TensorRef *wk = c.find("model.layers.2.self_attn.k_proj.weight");
  ASSERT_NE(wk, nullptr);
  EXPECT_EQ(wk->shape, (std::vector<int64_t>{32, 64}));
  EXPECT_EQ(wk->sourceName, "wk[2]");
  EXPECT_EQ(wk->qkPermuteHeads, 4);
  EXPECT_EQ(c.find("model.layers.0.mlp.gate_proj.weight")->sourceName, "w1[0]");
  EXPECT_EQ(c.find("model.layers.0.mlp.down_proj.weight")->shape,
            (std::vector<int64_t>{64, 172}));
  EXPECT_EQ(c.config().maxPositionEmbeddings, 512);
  EXPECT_TRUE(c.config().tieWordEmbeddings);
}

TEST(Llama2c, UntiedClassifierAndOffsets) {
  std::string dir = freshTempDir("l2c_untied");
  Llama2cHeader h{8, 16, 2, 2, 1, -10, 4};
  std::string path = dir + "/m.bin";
  writeFile(path, makeLlama2c(h));
  auto ck = openCheckpoint(path);
  ASSERT_TRUE(ck.ok()) << ck.message();
  const Checkpoint &c = **ck;
  EXPECT_EQ(c.format(), "llama2c");
  EXPECT_FALSE(c.config().tieWordEmbeddings);
  EXPECT_EQ(c.config().vocabSize, 10);
  EXPECT_EQ(c.config().numKvHeads, 1);
  const TensorRef *cls = c.find("lm_head.weight");
  ASSERT_NE(cls, nullptr);
  // wcls is last, after rms_final and the skipped freq_cis tables.
  EXPECT_EQ(cls->fileOffset + cls->nbytes, readFile(path).size());
  float first;
  std::memcpy(&first, cls->data, 4);
  EXPECT_EQ(first, static_cast<float>((cls->fileOffset - 28) / 4));
  // wq of layer 1 follows wq of layer 0 (kind-major order).
  const TensorRef *q0 = c.find("model.layers.0.self_attn.q_proj.weight");
  const TensorRef *q1 = c.find("model.layers.1.self_attn.q_proj.weight");
  EXPECT_EQ(q1->fileOffset, q0->fileOffset + q0->nbytes);
  EXPECT_EQ(q0->fileOffset, 28u + 4 * (10 * 8 + 2 * 8));
}

TEST(Llama2c, ConfigFromHeader) {
  auto c = configFromLlama2c({64, 172, 5, 8, 4, 512, 512});
  ASSERT_TRUE(c.ok()) << c.message();
  EXPECT_EQ(c->architecture, "LlamaForCausalLM");
  EXPECT_EQ(c->rmsNormEps, 1e-5);
  EXPECT_EQ(c->bosTokenId, 1);
  EXPECT_EQ(c->eosTokenIds, (std::vector<int64_t>{2}));
  expectError(configFromLlama2c({64, 172, 5, 6, 3, 512, 512}), {"n_heads"});
}

} // namespace
