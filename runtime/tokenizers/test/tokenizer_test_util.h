//===- tokenizer_test_util.h - Helpers for the tokenizer tests --*- C++ -*-===//
#ifndef ETLLM_RUNTIME_TOKENIZERS_TEST_TOKENIZER_TEST_UTIL_H
#define ETLLM_RUNTIME_TOKENIZERS_TEST_TOKENIZER_TEST_UTIL_H

#include "etllm/runtime/tokenizer.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

namespace etllm::rt::test {

/// The shared test-data directory (../shared of the checkout).
std::string sharedDir();
/// `sharedDir() + "/" + rel`.
std::string sharedPath(const std::string &rel);
/// True when `rel` exists under the shared directory.
bool haveShared(const std::string &rel);

/// Skips the current test when shared data `rel` is absent.
#define ETLLM_REQUIRE_SHARED(rel)                                              \
  do {                                                                         \
    if (!::etllm::rt::test::haveShared(rel))                                   \
      GTEST_SKIP() << "shared test data not found: "                           \
                   << ::etllm::rt::test::sharedPath(rel);                      \
  } while (0)

/// The shared data the tokenizer tests read (paths under sharedDir()).
inline constexpr const char *kTok512 = "models/stories260K/tok512.bin";
inline constexpr const char *kLlama2Bin = "tokenizers/llama2/tokenizer.bin";
inline constexpr const char *kLlama2Model = "tokenizers/llama2/tokenizer.model";
inline constexpr const char *kLlama3Model = "tokenizers/llama3/tokenizer.model";
inline constexpr const char *kGpt2Json = "tokenizers/gpt2/tokenizer.json";
inline constexpr const char *kGpt2Vocab = "tokenizers/gpt2/vocab.json";
inline constexpr const char *kGpt2Merges = "tokenizers/gpt2/merges.txt";
/// llama.cpp's test vectors (base names: readVocabCases adds .inp / .out).
inline constexpr const char *kSpmVectors =
    "tokenizers/test-vectors/ggml-vocab-llama-spm.gguf";
inline constexpr const char *kGpt2Vectors =
    "tokenizers/test-vectors/ggml-vocab-gpt-2.gguf";
inline constexpr const char *kBpeVectors =
    "tokenizers/test-vectors/ggml-vocab-llama-bpe.gguf";

/// Skips the current test when the shared test vectors `base` are absent.
#define ETLLM_REQUIRE_VECTORS(base)                                            \
  ETLLM_REQUIRE_SHARED(std::string(base) + ".inp")

/// The bytes of a string literal, embedded NULs included (no terminator).
template <size_t N> std::string bytesOf(const char (&literal)[N]) {
  return std::string(literal, N - 1);
}

/// Invalid UTF-8 between ASCII: stray continuation bytes, truncated
/// sequences and a NUL.
inline const std::string kInvalidUtf8 =
    bytesOf("\xFF\xFE\x80 abc \xC3\x28 \xE2\x82 \x00\xF0\x9F");

/// Whole file as bytes ("" when unreadable).
std::string readFile(const std::string &path);
/// Writes `bytes` to `path` (truncating).
void writeFile(const std::string &path, const std::string &bytes);
/// A fresh path under testing::TempDir().
std::string tempPath(const std::string &name);

/// One case of llama.cpp's ggml-vocab-*.gguf.{inp,out} test vectors.
struct VocabCase {
  std::string text;
  std::vector<int32_t> ids;
};

/// The number of cases in each shared ggml-vocab-*.gguf.{inp,out} pair.
///
/// The .inp file is the cases, each followed by "\n__ggml_vocab_test__\n"
/// (46 separators), so it ends with a separator; the .out file is one line
/// of space-separated ids per case, each ending with "\n" (46 lines). A naive
/// split of either file yields one extra, empty, trailing element (47 in
/// total): that is an artefact of the terminators, not a case. We parse as
/// llama.cpp's tests/test-tokenizer-0.cpp read_tests() does (a separator
/// ends a case; getline on .out), giving 46 cases, and check that both files
/// agree. (Case 3 is the genuinely empty input "", with no ids.)
constexpr size_t kVocabCaseCount = 46;

/// Reads `<base>.inp` and `<base>.out` (base e.g.
/// ".../ggml-vocab-llama-spm.gguf"). On a format problem adds a gtest
/// failure and returns what it could read.
std::vector<VocabCase> readVocabCases(const std::string &base);

/// Ids as "[1, 2, 3]" for messages.
std::string idsToString(const std::vector<int32_t> &ids);
/// Bytes with non-printable ones escaped, for messages.
std::string escape(const std::string &s);

/// Loads `path` and asserts success (nullptr + failure otherwise).
std::unique_ptr<Tokenizer> loadOrFail(const std::string &path);

/// Expects the tokenizer's vocabulary size, BOS and EOS ids and stop ids.
void expectSpecialIds(const Tokenizer &tok, int32_t vocabSize, int32_t bos,
                      int32_t eos, const std::vector<int32_t> &stops);
/// Expects encode(text, addBos) to succeed with `ids`.
void expectEncodes(const Tokenizer &tok, std::string_view text, bool addBos,
                   const std::vector<int32_t> &ids);

/// Expects encode(bytes, addBos=false) to succeed and decode to give `bytes`
/// back.
void expectRoundTrips(const Tokenizer &tok, const std::string &bytes);

/// Which directions of the test vectors a check covers.
enum class VectorDirection { Encode, Decode, Both };

/// Checks `tok` against the shared test vectors `base` (readVocabCases) in
/// `dir`: encode(text, addBos=false) == ids and decode(ids) == text for
/// every case, each a real EXPECT.
void expectVectors(const Tokenizer &tok, const std::string &base,
                   VectorDirection dir = VectorDirection::Both);

/// Loads the shared tokenizer file `model`, expects its kind to be `kind`
/// and checks it against the shared test vectors `base` in `dir`; skips the
/// test when either is absent. Call it last in a test: a skip or a fatal
/// failure returns from here only.
void expectFileMatchesVectors(const std::string &model, const std::string &base,
                              TokenizerKind kind, VectorDirection dir);

/// HF-style merges for a tiktoken rank table (what HF's tiktoken converter
/// does): for each multi-byte token, the last merge tiktoken's BPE makes
/// when only lower ranks may merge. `byRank[r]` = bytes of rank r. Returns
/// "left right" pairs (raw bytes) in rank order.
std::vector<std::pair<std::string, std::string>>
mergesFromRanks(const std::vector<std::string> &byRank);

/// Parses a tiktoken ranks file into byRank (test data is trusted).
std::vector<std::string> readTiktokenRanks(const std::string &path);

/// GPT-2 bytes_to_unicode applied to `bytes` (written independently of the
/// library's table).
std::string toByteLevel(const std::string &bytes);

/// Reads a llama2.c tokenizer.bin as SentencePiece pieces: " " back to "▁",
/// ids 0..2 named <unk>, <s>, </s> (test data is trusted).
void readLlama2cAsSpm(const std::string &path, std::vector<std::string> &pieces,
                      std::vector<float> &scores);

/// Splits UTF-8 text into characters (valid input).
std::vector<std::string> utf8Chars(const std::string &s);

} // namespace etllm::rt::test

#endif // ETLLM_RUNTIME_TOKENIZERS_TEST_TOKENIZER_TEST_UTIL_H
