//===- sentencepiece_test.cpp - SentencePiece models ----------------------===//
#include "tokenizer_test_util.h"

namespace etllm::rt::test {
namespace {

// llama.cpp's tests/test-tokenizer-0.cpp only checks the encode direction
// (it prints the detokenized text but does not compare it). Our decode
// direction is decode(expected ids) == input, with no case-specific rule:
// SentencePiece drops the dummy-prefix space of the first piece only, so
// inputs that begin with spaces (" Hello" = [29871 "▁", 15043 "▁Hello"])
// round-trip exactly, as do the empty and whitespace-only inputs.
TEST(SentencePiece, LlamaSpmVectorsEncode) {
  expectFileMatchesVectors(kLlama2Model, kSpmVectors,
                           TokenizerKind::SentencePiece,
                           VectorDirection::Encode);
}

TEST(SentencePiece, LlamaSpmVectorsDecode) {
  expectFileMatchesVectors(kLlama2Model, kSpmVectors,
                           TokenizerKind::SentencePiece,
                           VectorDirection::Decode);
}

TEST(SentencePiece, SpecialIdsAndStreaming) {
  ETLLM_REQUIRE_SHARED(kLlama2Model);
  auto tok = loadOrFail(sharedPath(kLlama2Model));
  ASSERT_TRUE(tok);
  expectSpecialIds(*tok, 32000, 1, 2, {2});
  expectEncodes(*tok, "Hello world", true, {1, 15043, 3186});
  // run.c streaming rules: leading space dropped only after BOS.
  EXPECT_EQ(tok->decodeToken(1, 15043), "Hello");
  EXPECT_EQ(tok->decodeToken(15043, 3186), " world");
  EXPECT_EQ(tok->decodeToken(3186, 13), "\n"); // <0x0A>
  EXPECT_EQ(tok->decodeToken(3186, 2), "");    // EOS prints nothing
  EXPECT_EQ(tok->decodeToken(3186, 32000), "");
  EXPECT_EQ(tok->idToPiece(15043), "\xE2\x96\x81Hello");
  EXPECT_EQ(tok->pieceToId("\xE2\x96\x81Hello"), 15043);
  EXPECT_EQ(tok->pieceToId("no such piece"), -1);
  // Special text is plain text for SentencePiece.
  auto s = tok->encode("<s>", false);
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(std::count(s->begin(), s->end(), 1), 0);
  // Out-of-range ids are skipped by decode.
  EXPECT_EQ(tok->decode({15043, -1, 99999, 3186}), "Hello world");
}

TEST(SentencePiece, InvalidUtf8DoesNotCrash) {
  ETLLM_REQUIRE_SHARED(kLlama2Model);
  auto tok = loadOrFail(sharedPath(kLlama2Model));
  ASSERT_TRUE(tok);
  auto ids = tok->encode(kInvalidUtf8, true);
  ASSERT_TRUE(ids.ok()) << ids.message();
  EXPECT_FALSE(ids->empty());
  (void)tok->decode(*ids);
}

} // namespace
} // namespace etllm::rt::test
