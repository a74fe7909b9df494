//===- StoriesTest.cpp - stories260K in three formats agree ---------------===//
//
// The key acceptance test of the readers: the llama2.c .bin, the GGUF and the
// Hugging Face directory of stories260K must give the same tensors (HF names,
// shapes) and, after undoing the interleaved q/k row order where flagged,
// byte-identical F32 data.
//
//===----------------------------------------------------------------------===//

#include "etllm/Formats/Checkpoint.h"
#include "etllm/Formats/Gguf.h"
#include "TestUtil.h"

#include <cmath>
#include <set>

using namespace etllm::formats;
using namespace etllm::formats::testing;

namespace {

struct Stories {
  std::unique_ptr<Checkpoint> bin, gguf, hf;
};

void openStories(Stories &s) {
  std::string bin = sharedFile("models/stories260K/stories260K.bin");
  std::string gguf = sharedFile("models/stories260K/stories260K.gguf");
  std::string hf = sharedFile("models/stories260K-hf");
  ASSERT_FALSE(bin.empty() || gguf.empty() || hf.empty());
  auto b = openCheckpoint(bin);
  ASSERT_TRUE(b.ok()) << b.message();
  auto g = openCheckpoint(gguf);
  ASSERT_TRUE(g.ok()) << g.message();
  auto h = openCheckpoint(hf);
  ASSERT_TRUE(h.ok()) << h.message();
  s.bin = std::move(*b);
  s.gguf = std::move(*g);
  s.hf = std::move(*h);
}

TEST(Stories260K, FormatsAreDetectedFromContent) {
  SKIP_IF_NO_SHARED(sharedFile("models/stories260K/stories260K.bin"));
  Stories s;
  openStories(s);
  if (HasFatalFailure())
    return;
  EXPECT_EQ(s.bin->format(), "llama2c");
  EXPECT_EQ(s.gguf->format(), "gguf");
  EXPECT_EQ(s.hf->format(), "safetensors");
  EXPECT_EQ(s.gguf->ggufVersion(), 3u);
  EXPECT_EQ(s.gguf->ggufAlignment(), 32u);
  EXPECT_FALSE(s.gguf->normWeightsIncludeOne());
  EXPECT_EQ(s.gguf->tensors().size(), 48u);
}

TEST(Stories260K, SameTensorsAndBytesInAllThreeFormats) {
  SKIP_IF_NO_SHARED(sharedFile("models/stories260K/stories260K.bin"));
  Stories s;
  openStories(s);
  if (HasFatalFailure())
    return;
  // HF: tied embeddings, so no lm_head.
  EXPECT_EQ(s.hf->find("lm_head.weight"), nullptr);
  ASSERT_EQ(s.hf->tensors().size(), 47u); // 1 + 5 * 9 + 1
  for (const Checkpoint *other : {s.bin.get(), s.gguf.get()}) {
    SCOPED_TRACE(other->format());
    std::set<std::string> names;
    for (const TensorRef &t : other->tensors())
      names.insert(t.name);
    for (const TensorRef &want : s.hf->tensors()) {
      SCOPED_TRACE(want.name);
      names.erase(want.name);
      const TensorRef *got = other->find(want.name);
      ASSERT_NE(got, nullptr);
      EXPECT_EQ(got->dtype, DType::F32);
      EXPECT_EQ(want.dtype, DType::F32);
      ASSERT_EQ(got->shape, want.shape);
      ASSERT_EQ(got->nbytes, want.nbytes);
      bool isQ = want.name.find("q_proj") != std::string::npos;
      bool isK = want.name.find("k_proj") != std::string::npos;
      EXPECT_EQ(got->qkPermuteHeads, isQ ? 8 : isK ? 4 : 0);
      EXPECT_EQ(want.qkPermuteHeads, 0);
      auto bytes = bytesInHfOrder(*got);
      ASSERT_TRUE(bytes.ok()) << bytes.message();
      EXPECT_EQ(0, std::memcmp(bytes->data(), want.data, want.nbytes))
          << "data differs from the HF safetensors";
      // Without the permutation the rows differ.
      if (isQ || isK) {
        EXPECT_NE(0, std::memcmp(got->data, want.data, want.nbytes));
      }
    }
    // The llama2.c file is tied too; llama.cpp's converter wrote a separate
    // output.weight into the GGUF, equal to the embedding.
    if (other == s.bin.get()) {
      EXPECT_TRUE(names.empty());
    } else {
      ASSERT_EQ(names, std::set<std::string>{"lm_head.weight"});
      const TensorRef *out = other->find("lm_head.weight");
      const TensorRef *emb = s.hf->find("model.embed_tokens.weight");
      ASSERT_EQ(out->shape, emb->shape);
      EXPECT_EQ(0, std::memcmp(out->data, emb->data, emb->nbytes));
      EXPECT_EQ(out->sourceName, "output.weight");
    }
  }
}

TEST(Stories260K, ConfigsAgree) {
  SKIP_IF_NO_SHARED(sharedFile("models/stories260K/stories260K.bin"));
  Stories s;
  openStories(s);
  if (HasFatalFailure())
    return;
  const ModelConfig &hf = s.hf->config();
  EXPECT_EQ(hf.architecture, "LlamaForCausalLM");
  EXPECT_EQ(hf.hiddenSize, 64);
  EXPECT_EQ(hf.intermediateSize, 172);
  EXPECT_EQ(hf.numLayers, 5);
  EXPECT_EQ(hf.numHeads, 8);
  EXPECT_EQ(hf.numKvHeads, 4);
  EXPECT_EQ(hf.headDim, 8);
  EXPECT_EQ(hf.vocabSize, 512);
  EXPECT_TRUE(hf.tieWordEmbeddings);
  expectConfigsEqual(s.bin->config(), hf, "llama2.c vs HF");
  // The GGUF says context 2048 and has an untied output; otherwise equal.
  ModelConfig g = s.gguf->config();
  EXPECT_EQ(g.maxPositionEmbeddings, 2048);
  EXPECT_FALSE(g.tieWordEmbeddings);
  g.maxPositionEmbeddings = hf.maxPositionEmbeddings;
  g.tieWordEmbeddings = true;
  expectConfigsEqual(g, hf, "GGUF vs HF", /*compareDtype=*/false);
}

TEST(Stories260K, GgufTokenizerMetadata) {
  SKIP_IF_NO_SHARED(sharedFile("models/stories260K/stories260K.gguf"));
  auto g = openCheckpoint(sharedFile("models/stories260K/stories260K.gguf"));
  ASSERT_TRUE(g.ok()) << g.message();
  const GgufTokenizerInfo *tok = (*g)->ggufTokenizer();
  ASSERT_NE(tok, nullptr);
  EXPECT_EQ(tok->model, "llama");
  ASSERT_EQ(tok->tokens.size(), 512u);
  EXPECT_EQ(tok->tokens[1], "<s>");
  EXPECT_EQ(tok->tokens[3], "<0x00>");
  EXPECT_EQ(tok->scores.size(), 512u);
  ASSERT_EQ(tok->tokenTypes.size(), 512u);
  EXPECT_EQ(tok->tokenTypes[0], 2);
  EXPECT_EQ(tok->tokenTypes[3], 6);
  EXPECT_EQ(tok->bosTokenId, 1);
  EXPECT_EQ(tok->eosTokenId, 2);
  EXPECT_EQ(tok->unknownTokenId, 0);
  EXPECT_EQ(tok->paddingTokenId, -1); // stored as 0xFFFFFFFF
  const GgufValue *name = (*g)->metadata("general.name");
  ASSERT_NE(name, nullptr);
  ASSERT_NE(name->toString(), nullptr);
  EXPECT_EQ(*name->toString(), "llama");
  const GgufValue *eps =
      (*g)->metadata("llama.attention.layer_norm_rms_epsilon");
  ASSERT_NE(eps, nullptr);
  EXPECT_EQ(eps->type(), GgufType::Float32);
}

TEST(TinyRandomLlama2, OpensF16GgufWithFullVocabulary) {
  std::string path =
      sharedFile("models/tiny-random-llama2/llama-2-tiny-random.gguf");
  SKIP_IF_NO_SHARED(path);
  auto g = openCheckpoint(path);
  ASSERT_TRUE(g.ok()) << g.message();
  const Checkpoint &c = **g;
  EXPECT_EQ(c.tensors().size(), 12u);
  const ModelConfig &cfg = c.config();
  EXPECT_EQ(cfg.hiddenSize, 8);
  EXPECT_EQ(cfg.numLayers, 1);
  EXPECT_EQ(cfg.numHeads, 2);
  EXPECT_EQ(cfg.headDim, 4);
  EXPECT_EQ(cfg.vocabSize, 32000);
  EXPECT_EQ(cfg.maxPositionEmbeddings, 4096);
  EXPECT_EQ(cfg.torchDtype, "float16");
  const TensorRef *emb = c.find("model.embed_tokens.weight");
  ASSERT_NE(emb, nullptr);
  EXPECT_EQ(emb->dtype, DType::F16);
  EXPECT_EQ(emb->shape, (std::vector<int64_t>{32000, 8}));
  EXPECT_EQ(c.find("model.norm.weight")->dtype, DType::F32);
  EXPECT_EQ(c.find("model.layers.0.self_attn.q_proj.weight")->qkPermuteHeads,
            2);
  auto f = toFloat32(*emb);
  ASSERT_TRUE(f.ok()) << f.message();
  ASSERT_EQ(f->size(), 256000u);
  for (float v : *f)
    ASSERT_TRUE(std::isfinite(v));
  ASSERT_NE(c.ggufTokenizer(), nullptr);
  EXPECT_EQ(c.ggufTokenizer()->tokens.size(), 32000u);
  // Tensors point into the mapping: no copies.
  const auto &file = *c.files().front();
  EXPECT_EQ(emb->data, file.data() + emb->fileOffset);
  EXPECT_EQ(emb->fileOffset % 32, 0u);
}

} // namespace
