//===- llama2c_test.cpp - llama2.c tokenizer.bin --------------------------===//
#include "tokenizer_test_util.h"

namespace etllm::rt::test {
namespace {

TEST(Llama2c, Tok512OnceUponATime) {
  ETLLM_REQUIRE_SHARED(kTok512);
  auto tok = loadOrFail(sharedPath(kTok512));
  ASSERT_TRUE(tok);
  EXPECT_EQ(tok->kind(), TokenizerKind::Llama2c);
  expectSpecialIds(*tok, 512, 1, 2, {2});

  // Worked out by hand from tok512.bin, as run.c's encode() goes:
  // dummy prefix " " (410), then one token per character:
  //   ' '410 O441 n416 c429 e411 ' '410 u425 p427 o414 n416 ' '410 a412
  //   ' '410 t413 i417 m423 e411
  // then repeatedly the best-scoring adjacent pair whose concatenation is a
  // token (score in parentheses; ties would go left):
  //   " "+"t"->" t"259 (-0)    " "+"a"->" a"261 (-2)   "i"+"m"->"im"288 (-29)
  //   "o"+"n"->"on"289 (-30)   " "+"u"->" u"318 (-59)  " "+"O"->" O"319 (-60)
  //   " O"+"n"->" On"321 (-62) "c"+"e"->"ce"331 (-72)  " u"+"p"->" up"350 (-91)
  //   "im"+"e"->"ime"369 (-110) " t"+"ime"->" time"378 (-119)
  //   " On"+"ce"->" Once"403 (-144) " up"+"on"->" upon"407 (-148)
  EXPECT_EQ(tok->idToPiece(410), " ");
  EXPECT_EQ(tok->idToPiece(403), " Once");
  EXPECT_EQ(tok->idToPiece(407), " upon");
  EXPECT_EQ(tok->idToPiece(261), " a");
  EXPECT_EQ(tok->idToPiece(378), " time");
  auto ids = tok->encode("Once upon a time", /*addBos=*/true);
  ASSERT_TRUE(ids.ok()) << ids.message();
  EXPECT_EQ(*ids, (std::vector<int32_t>{1, 403, 407, 261, 378}));

  auto noBos = tok->encode("Once upon a time", /*addBos=*/false);
  ASSERT_TRUE(noBos.ok());
  EXPECT_EQ(*noBos, (std::vector<int32_t>{403, 407, 261, 378}));

  // Streaming decode: the leading space goes only after BOS.
  EXPECT_EQ(tok->decodeToken(1, 403), "Once");
  EXPECT_EQ(tok->decodeToken(403, 407), " upon");
  EXPECT_EQ(tok->decode(*ids), "Once upon a time");
  EXPECT_EQ(tok->decodeToken(1, 1), "");
  EXPECT_EQ(tok->decodeToken(5, 99999), "");
  EXPECT_EQ(tok->decodeToken(5, -3), "");
}

TEST(Llama2c, Tok512ByteFallbackAndEdges) {
  ETLLM_REQUIRE_SHARED(kTok512);
  auto tok = loadOrFail(sharedPath(kTok512));
  ASSERT_TRUE(tok);
  // "日" (E6 97 A5) is no token of the 512-entry vocabulary: its bytes become
  // byte tokens byte+3, after the dummy-prefix " " (410).
  auto ids = tok->encode("\xE6\x97\xA5", false);
  ASSERT_TRUE(ids.ok());
  EXPECT_EQ(*ids, (std::vector<int32_t>{410, 0xE6 + 3, 0x97 + 3, 0xA5 + 3}));
  EXPECT_EQ(tok->decodeToken(410, 0xE6 + 3), "\xE6");
  EXPECT_EQ(tok->decode(*ids), "\xE6\x97\xA5");

  // Empty text: no dummy prefix.
  auto empty = tok->encode("", true);
  ASSERT_TRUE(empty.ok());
  EXPECT_EQ(*empty, (std::vector<int32_t>{1}));
  auto none = tok->encode("", false);
  ASSERT_TRUE(none.ok());
  EXPECT_TRUE(none->empty());

  // Arbitrary bytes, including NUL, stray continuation bytes and overlong
  // runs of them, never crash and round-trip through the byte tokens.
  const std::string junk = bytesOf("a\x80\x80\x80\x80\x80\xFF\x00z\xC3");
  expectRoundTrips(*tok, junk);
}

TEST(Llama2c, Llama2Vocabulary) {
  ETLLM_REQUIRE_SHARED(kLlama2Bin);
  auto tok = loadOrFail(sharedPath(kLlama2Bin));
  ASSERT_TRUE(tok);
  EXPECT_EQ(tok->kind(), TokenizerKind::Llama2c);
  EXPECT_EQ(tok->vocabSize(), 32000);
  auto ids = tok->encode("Once upon a time", true);
  ASSERT_TRUE(ids.ok());
  EXPECT_EQ(*ids, (std::vector<int32_t>{1, 9038, 2501, 263, 931}));
  EXPECT_EQ(tok->decode(*ids), "Once upon a time");
  // "\n" is only a byte token in Llama 2: <0x0A> = 13.
  EXPECT_EQ(tok->decodeToken(29871, 13), "\n");
}

TEST(Llama2c, Llama2VocabularyMatchesSpmVectors) {
  // run.c's encode() is SentencePiece BPE for this vocabulary, so it gives
  // llama.cpp's llama-spm test-vector ids for every case.
  expectFileMatchesVectors(kLlama2Bin, kSpmVectors, TokenizerKind::Llama2c,
                           VectorDirection::Both);
}

} // namespace
} // namespace etllm::rt::test
