//===- gguf_vocab_test.cpp - GGUF-embedded vocabularies -------------------===//
#include "tokenizer_test_util.h"

#include <nlohmann/json.hpp>

#include <cmath>
#include <sstream>

namespace etllm::rt::test {
namespace {

/// tokenizer.ggml.* for Llama 2, from llama2.c's tokenizer.bin: types 0..2
/// control (<unk> = 0 unknown), <0xNN> byte, the rest normal.
EmbeddedVocab llamaVocab() {
  EmbeddedVocab v;
  v.model = "llama";
  readLlama2cAsSpm(sharedPath(kLlama2Bin), v.tokens, v.scores);
  v.types.assign(v.tokens.size(), 1);
  v.types[0] = 2;
  v.types[1] = v.types[2] = 3;
  for (size_t i = 3; i < v.tokens.size(); ++i)
    if (v.tokens[i].size() == 6 && v.tokens[i].rfind("<0x", 0) == 0)
      v.types[i] = 6;
  v.unk = 0;
  v.bos = 1;
  v.eos = 2;
  return v;
}

/// tokenizer.ggml.* for GPT-2, from vocab.json + merges.txt.
EmbeddedVocab gpt2Vocab() {
  EmbeddedVocab v;
  v.model = "gpt2";
  v.pre = "gpt-2";
  auto vocab = nlohmann::json::parse(readFile(sharedPath(kGpt2Vocab)));
  v.tokens.resize(vocab.size());
  for (auto it = vocab.begin(); it != vocab.end(); ++it)
    v.tokens[it->get<size_t>()] = it.key();
  v.types.assign(v.tokens.size(), 1);
  std::istringstream merges(readFile(sharedPath(kGpt2Merges)));
  for (std::string line; std::getline(merges, line);)
    if (!line.empty() && line.rfind("#version", 0) != 0)
      v.merges.push_back(line);
  v.types[50256] = 3; // <|endoftext|>
  v.bos = v.eos = 50256;
  v.addBos = false;
  return v;
}

/// tokenizer.ggml.* (model gpt2, all tokens normal) of Llama 3's tiktoken
/// ranks, byte-level, with the merges HF's converter derives from them (as
/// convert_hf_to_gguf writes them); no special tokens.
EmbeddedVocab llama3RanksVocab() {
  auto ranks = readTiktokenRanks(sharedPath(kLlama3Model));
  EmbeddedVocab v;
  v.model = "gpt2";
  for (const std::string &r : ranks)
    v.tokens.push_back(toByteLevel(r));
  v.types.assign(v.tokens.size(), 1);
  for (const auto &[l, r] : mergesFromRanks(ranks))
    v.merges.push_back(toByteLevel(l) + " " + toByteLevel(r));
  return v;
}

/// tokenizerFromVocab(v, name), which must succeed with `kind` and
/// `vocabSize` ids and match the shared test vectors `base` (null and a
/// failure when it cannot be made).
std::unique_ptr<Tokenizer> vocabMatchingVectors(const EmbeddedVocab &v,
                                                const std::string &name,
                                                TokenizerKind kind,
                                                int32_t vocabSize,
                                                const std::string &base) {
  auto tok = tokenizerFromVocab(v, name);
  EXPECT_TRUE(tok.ok()) << tok.message();
  if (!tok.ok())
    return nullptr;
  EXPECT_EQ((*tok)->kind(), kind);
  EXPECT_EQ((*tok)->vocabSize(), vocabSize);
  expectVectors(**tok, base);
  return std::move(tok).value();
}

TEST(GgufVocab, LlamaSpmVectors) {
  ETLLM_REQUIRE_SHARED(kLlama2Bin);
  ETLLM_REQUIRE_VECTORS(kSpmVectors);
  vocabMatchingVectors(llamaVocab(), "llama2-gguf", TokenizerKind::GgufSpm,
                       32000, kSpmVectors);
}

TEST(GgufVocab, LlamaSpecialsAndStreaming) {
  ETLLM_REQUIRE_SHARED(kLlama2Bin);
  auto r = tokenizerFromVocab(llamaVocab(), "llama2-gguf");
  ASSERT_TRUE(r.ok()) << r.message();
  const Tokenizer &tok = **r;
  auto ids = tok.encode("Hello world", true);
  ASSERT_TRUE(ids.ok());
  EXPECT_EQ(*ids, (std::vector<int32_t>{1, 15043, 3186}));
  EXPECT_EQ(tok.decodeToken(1, 15043), "Hello");
  EXPECT_EQ(tok.decodeToken(15043, 3186), " world");
  EXPECT_EQ(tok.decodeToken(3186, 13), "\n");
  EXPECT_EQ(tok.decodeToken(3186, 2), "");
  // Control text is parsed by encode (llama.cpp parse_special), and the
  // text after it gets the space prefix again.
  auto s = tok.encode("Hi</s>Hi", false);
  ASSERT_TRUE(s.ok());
  auto hi = tok.encode("Hi", false);
  ASSERT_TRUE(hi.ok());
  std::vector<int32_t> expected = *hi;
  expected.push_back(2);
  expected.insert(expected.end(), hi->begin(), hi->end());
  EXPECT_EQ(*s, expected);
  auto plain = tok.encodeOrdinary("</s>", false);
  ASSERT_TRUE(plain.ok());
  EXPECT_EQ(std::count(plain->begin(), plain->end(), 2), 0);
  // addBos in the metadata off: no BOS even when asked.
  EmbeddedVocab v = llamaVocab();
  v.addBos = false;
  auto noBos = tokenizerFromVocab(v, "no-bos");
  ASSERT_TRUE(noBos.ok());
  auto n = (*noBos)->encode("Hello", true);
  ASSERT_TRUE(n.ok());
  EXPECT_EQ(*n, (std::vector<int32_t>{15043}));
  // Invalid UTF-8 falls back to byte tokens and round-trips.
  expectRoundTrips(tok, kInvalidUtf8);
}

TEST(GgufVocab, Gpt2Vectors) {
  ETLLM_REQUIRE_SHARED(kGpt2Vocab);
  ETLLM_REQUIRE_VECTORS(kGpt2Vectors);
  auto tok = vocabMatchingVectors(gpt2Vocab(), "gpt2-gguf",
                                  TokenizerKind::GgufBpe, 50257, kGpt2Vectors);
  ASSERT_TRUE(tok);
  expectEncodes(*tok, "Hello<|endoftext|>", true, {15496, 50256}); // no BOS
  EXPECT_EQ(tok->stopIds(), (std::vector<int32_t>{50256}));
}

TEST(GgufVocab, SmolLmPreTokenizerSplitsEveryDigit) {
  // llama.cpp's pre-tokenizer "smollm" (SmolLM, SmolLM2): HF's Digits with
  // individual_digits, then ByteLevel's GPT-2 regex. The ids are those of
  // HF tokenizers' BPE over GPT-2's vocab.json and merges.txt with that
  // pre-tokenizer sequence (the space before a digit is a piece of its
  // own); GPT-2's own pre-tokenizer keeps " 2024" and " 12" whole.
  ETLLM_REQUIRE_SHARED(kGpt2Vocab);
  EmbeddedVocab v = gpt2Vocab();
  v.pre = "smollm";
  auto smol = tokenizerFromVocab(v, "smollm-gguf");
  ASSERT_TRUE(smol.ok()) << smol.message();
  const std::string text = "In 2024, it's  7 apples.\n\n 12";
  auto ids = (*smol)->encode(text, false);
  ASSERT_TRUE(ids.ok()) << ids.message();
  EXPECT_EQ(*ids, (std::vector<int32_t>{818, 220, 17, 15, 17, 19, 11, 340, 338,
                                        220, 220, 22, 22514, 13, 628, 220, 16,
                                        17}));
  EXPECT_EQ((*smol)->decode(*ids), text);
  auto gpt2 = tokenizerFromVocab(gpt2Vocab(), "gpt2-gguf");
  ASSERT_TRUE(gpt2.ok());
  auto whole = (*gpt2)->encode(text, false);
  ASSERT_TRUE(whole.ok());
  EXPECT_EQ(*whole, (std::vector<int32_t>{818, 48609, 11, 340, 338, 220, 767,
                                          22514, 13, 628, 1105}));
}

TEST(GgufVocab, Llama3BpeVectors) {
  // A Llama 3 GGUF vocabulary (model gpt2, pre llama-bpe), built from the
  // tiktoken ranks as convert_hf_to_gguf does via HF's converter.
  ETLLM_REQUIRE_SHARED(kLlama3Model);
  ETLLM_REQUIRE_VECTORS(kBpeVectors);
  EmbeddedVocab v = llama3RanksVocab();
  v.pre = "llama-bpe";
  for (const char *s : {"<|begin_of_text|>", "<|end_of_text|>"}) {
    v.tokens.push_back(s);
    v.types.push_back(3);
  }
  v.bos = 128000;
  v.eos = 128001;
  auto tok = tokenizerFromVocab(v, "llama3-gguf");
  ASSERT_TRUE(tok.ok()) << tok.message();
  expectVectors(**tok, kBpeVectors);
  auto ids = (*tok)->encode("Hi", true);
  ASSERT_TRUE(ids.ok());
  EXPECT_EQ(ids->front(), 128000);
}

TEST(GgufVocab, Qwen2PreTokenizerSplitsEveryDigit) {
  // The same Llama 3 vocabulary under llama.cpp's pre-tokenizer "qwen2":
  // Qwen2's regex makes every digit its own piece (Llama 3's groups up to
  // three) and uses the merges; contractions match in any case in both.
  ETLLM_REQUIRE_SHARED(kLlama3Model);
  EmbeddedVocab v = llama3RanksVocab();
  v.addBos = false;
  auto id = [&](const std::string &piece) {
    for (size_t i = 0; i < v.tokens.size(); ++i)
      if (v.tokens[i] == toByteLevel(piece))
        return int32_t(i);
    ADD_FAILURE() << "no token " << piece;
    return int32_t(-1);
  };
  for (const char *pre : {"qwen2", "deepseek-r1-qwen"}) {
    v.pre = pre;
    auto qwen = tokenizerFromVocab(v, "qwen2-gguf");
    ASSERT_TRUE(qwen.ok()) << qwen.message();
    auto ids = (*qwen)->encode("2024", false);
    ASSERT_TRUE(ids.ok()) << ids.message();
    EXPECT_EQ(*ids, (std::vector<int32_t>{id("2"), id("0"), id("2"), id("4")}))
        << pre;
    EXPECT_EQ((*qwen)->decode(*ids), "2024");
  }
  v.pre = "llama-bpe";
  auto llama3 = tokenizerFromVocab(v, "llama3-gguf");
  ASSERT_TRUE(llama3.ok()) << llama3.message();
  auto ids = (*llama3)->encode("2024", false);
  ASSERT_TRUE(ids.ok());
  EXPECT_EQ(*ids, (std::vector<int32_t>{id("202"), id("4")}));
  // "HE'S": the contraction is one piece, matched case-insensitively.
  v.pre = "qwen2";
  auto qwen = tokenizerFromVocab(v, "qwen2-gguf");
  ASSERT_TRUE(qwen.ok());
  auto he = (*qwen)->encode("HE'S", false);
  ASSERT_TRUE(he.ok());
  EXPECT_EQ(he->back(), id("'S"));
}

//===----------------------------------------------------------------------===//
// Inconsistent metadata.
//===----------------------------------------------------------------------===//

EmbeddedVocab tinyGpt2() {
  EmbeddedVocab v;
  v.model = "gpt2";
  v.tokens = {"a", "b", "ab"};
  v.merges = {"a b"};
  return v;
}

void expectError(const EmbeddedVocab &v, const std::string &needle) {
  auto tok = tokenizerFromVocab(v, "bad.gguf");
  ASSERT_FALSE(tok.ok()) << "expected an error mentioning " << needle;
  EXPECT_NE(tok.message().find("bad.gguf"), std::string::npos) << tok.message();
  EXPECT_NE(tok.message().find(needle), std::string::npos) << tok.message();
}

TEST(GgufVocab, Errors) {
  ASSERT_TRUE(tokenizerFromVocab(tinyGpt2(), "ok.gguf").ok());

  EmbeddedVocab v = tinyGpt2();
  v.pre = "deepseek-coder";
  expectError(v, "deepseek-coder");

  v = tinyGpt2();
  v.model = "bert";
  expectError(v, "bert");

  v = tinyGpt2();
  v.merges = {"a zz"};
  expectError(v, "unknown token 'zz'");

  v = tinyGpt2();
  v.merges = {"b a"}; // "ba" is no token
  expectError(v, "'ba'");

  v = tinyGpt2();
  v.merges = {"ab"};
  expectError(v, "not \"left right\"");

  v = tinyGpt2();
  v.merges.clear();
  expectError(v, "merges is empty");

  v = tinyGpt2();
  v.tokens.clear();
  expectError(v, "tokens is empty");

  v = tinyGpt2();
  v.scores = {1.0f};
  expectError(v, "scores has 1 entries for 3 tokens");

  v = tinyGpt2();
  v.types = {1, 1};
  expectError(v, "token_type has 2 entries");

  v = tinyGpt2();
  v.types = {1, 1, 9};
  expectError(v, "tokenizer.ggml.token_type: token 2 has invalid type 9");

  v = tinyGpt2();
  v.eos = 3;
  expectError(v, "tokenizer.ggml.eos_token_id: token id 3 is out of range");

  v = tinyGpt2();
  v.bos = -7;
  expectError(v, "tokenizer.ggml.bos_token_id: token id -7");

  EmbeddedVocab l;
  l.model = "llama";
  l.tokens = {"<unk>", "<s>", "</s>",
              "\xE2\x96\x81"
              "a"};
  l.scores = {0, 0, 0, std::nanf("")};
  expectError(l, "NaN");

  l.scores = {0, 0, 0, -1};
  l.types = {2, 3, 3, 6};
  expectError(l, "type BYTE but is not <0xNN>");
}

TEST(GgufVocab, TinyLlamaWithoutTypes) {
  // No token_type and no byte tokens: characters without a token become unk.
  EmbeddedVocab v;
  v.model = "llama";
  v.tokens = {"<unk>",
              "<s>",
              "</s>",
              "\xE2\x96\x81",
              "a",
              "b",
              "\xE2\x96\x81"
              "a",
              "\xE2\x96\x81"
              "ab"};
  v.scores = {0, 0, 0, -1, -2, -3, -4, -5};
  v.unk = 0;
  v.bos = 1;
  v.eos = 2;
  auto tok = tokenizerFromVocab(v, "tiny");
  ASSERT_TRUE(tok.ok()) << tok.message();
  auto ids = (*tok)->encode("ab z", true);
  ASSERT_TRUE(ids.ok());
  // "▁ab" "▁" then 'z' (no token, no byte tokens) -> unk.
  EXPECT_EQ(*ids, (std::vector<int32_t>{1, 7, 3, 0}));
}

} // namespace
} // namespace etllm::rt::test
