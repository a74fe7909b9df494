//===- tiktoken_test.cpp - tiktoken ranks (Llama 3) -----------------------===//
#include "tokenizer_test_util.h"

namespace etllm::rt::test {
namespace {

TEST(Tiktoken, LlamaBpeVectorsEncode) {
  expectFileMatchesVectors(kLlama3Model, kBpeVectors, TokenizerKind::Tiktoken,
                           VectorDirection::Encode);
}

TEST(Tiktoken, LlamaBpeVectorsDecode) {
  expectFileMatchesVectors(kLlama3Model, kBpeVectors, TokenizerKind::Tiktoken,
                           VectorDirection::Decode);
}

TEST(Tiktoken, Llama3SpecialTokens) {
  ETLLM_REQUIRE_SHARED(kLlama3Model);
  auto tok = loadOrFail(sharedPath(kLlama3Model));
  ASSERT_TRUE(tok);
  // Stops: <|end_of_text|>, <|eom_id|>, <|eot_id|>.
  expectSpecialIds(*tok, 128256, 128000, 128001, {128001, 128008, 128009});
  EXPECT_EQ(tok->pieceToId("<|begin_of_text|>"), 128000);
  EXPECT_EQ(tok->pieceToId("<|end_of_text|>"), 128001);
  EXPECT_EQ(tok->pieceToId("<|start_header_id|>"), 128006);
  EXPECT_EQ(tok->pieceToId("<|end_header_id|>"), 128007);
  EXPECT_EQ(tok->pieceToId("<|eot_id|>"), 128009);
  EXPECT_EQ(tok->idToPiece(128255), "<|reserved_special_token_245|>");
  EXPECT_EQ(tok->idToPiece(128256), "");

  // A chat header: special text is matched whole, "system" is 9125 and
  // "\n\n" is 271 in Llama 3.
  auto ids = tok->encode(
      "<|start_header_id|>system<|end_header_id|>\n\nHi<|eot_id|>", true);
  ASSERT_TRUE(ids.ok());
  ASSERT_EQ(ids->size(), 7u) << idsToString(*ids);
  EXPECT_EQ((*ids)[0], 128000);
  EXPECT_EQ((*ids)[1], 128006);
  EXPECT_EQ((*ids)[2], 9125);
  EXPECT_EQ((*ids)[3], 128007);
  EXPECT_EQ((*ids)[4], 271);
  EXPECT_EQ((*ids)[6], 128009);
  EXPECT_EQ(tok->decode(*ids), "system\n\nHi"); // specials print nothing

  // encodeOrdinary: special text is ordinary text.
  auto plain = tok->encodeOrdinary("<|eot_id|>", false);
  ASSERT_TRUE(plain.ok());
  EXPECT_GT(plain->size(), 1u);
  EXPECT_EQ(std::count(plain->begin(), plain->end(), 128009), 0);
  EXPECT_EQ(tok->decode(*plain), "<|eot_id|>");
}

TEST(Tiktoken, ArbitraryBytesRoundTrip) {
  ETLLM_REQUIRE_SHARED(kLlama3Model);
  auto tok = loadOrFail(sharedPath(kLlama3Model));
  ASSERT_TRUE(tok);
  // Byte-level BPE is lossless even for invalid UTF-8 (gaps the regex cannot
  // match are encoded as raw bytes).
  expectRoundTrips(*tok, kInvalidUtf8 + " ok");
  // A partial UTF-8 sequence streams out as its raw bytes.
  auto euro = tok->encode("\xE2\x82\xAC\xE2\x82\xAC\xE2\x82\xAC", false);
  ASSERT_TRUE(euro.ok());
  std::string streamed;
  int32_t prev = tok->bosId();
  for (int32_t id : *euro) {
    streamed += tok->decodeToken(prev, id);
    prev = id;
  }
  EXPECT_EQ(streamed, "\xE2\x82\xAC\xE2\x82\xAC\xE2\x82\xAC");
}

} // namespace
} // namespace etllm::rt::test
