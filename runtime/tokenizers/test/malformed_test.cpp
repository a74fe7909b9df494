//===- malformed_test.cpp - Hostile tokenizer files -----------------------===//
//
// Every malformed file must give an Error that names the file and the
// problem: never a crash or an escaping exception. The bad files are written
// under testing::TempDir() and loaded by path, as a user would.
//
//===----------------------------------------------------------------------===//
#include "tokenizer_test_util.h"

#include <chrono>
#include <cstdio>
#include <cstring>
#include <random>

namespace etllm::rt::test {
namespace {

/// Writes `bytes` to a temp file, loads it, and expects an error whose
/// message names the file and contains every `needles` entry.
void expectLoadError(const std::string &bytes,
                     std::initializer_list<std::string> needles,
                     const std::string &fileName = "bad.tok") {
  std::string path = tempPath(fileName);
  writeFile(path, bytes);
  auto tok = loadTokenizer(path);
  ASSERT_FALSE(tok.ok()) << "loaded a malformed file: "
                         << escape(bytes.substr(0, 80));
  EXPECT_NE(tok.message().find(path), std::string::npos) << tok.message();
  for (const std::string &n : needles)
    EXPECT_NE(tok.message().find(n), std::string::npos)
        << "missing '" << n << "' in: " << tok.message();
  std::remove(path.c_str());
}

std::string u32(uint32_t v) {
  std::string s(4, '\0');
  std::memcpy(s.data(), &v, 4);
  return s;
}
std::string f32(float v) {
  std::string s(4, '\0');
  std::memcpy(s.data(), &v, 4);
  return s;
}
std::string entry(float score, int32_t len, const std::string &bytes) {
  return f32(score) + u32(static_cast<uint32_t>(len)) + bytes;
}

TEST(Malformed, EmptyAndMissingFiles) {
  expectLoadError("", {"empty"});
  auto missing = loadTokenizer(tempPath("does-not-exist"));
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.message().find("does-not-exist"), std::string::npos);
  auto r = loadTokenizerFromBuffer(nullptr, 0, "nothing");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.message().find("nothing"), std::string::npos);
}

TEST(Malformed, UnrecognizedBytesListWhatWasTried) {
  expectLoadError(std::string("\x01\x02\x03", 3),
                  {"not a recognized tokenizer file", "llama2.c",
                   "SentencePiece", "tiktoken", "tokenizer.json"});
}

TEST(Malformed, Llama2c) {
  const std::string hdr = u32(8);
  const std::string good = hdr + entry(0, 1, "a") + entry(-1, 2, "bc");
  // Sanity: the well-formed version loads.
  {
    auto ok =
        loadTokenizerFromBuffer(reinterpret_cast<const uint8_t *>(good.data()),
                                good.size(), "good", TokenizerKind::Llama2c);
    ASSERT_TRUE(ok.ok()) << ok.message();
    EXPECT_EQ((*ok)->vocabSize(), 2);
  }
  auto kind = [](const std::string &bytes) {
    return loadTokenizerFromBuffer(
        reinterpret_cast<const uint8_t *>(bytes.data()), bytes.size(),
        "l2c.bin", TokenizerKind::Llama2c);
  };
  auto expectKindError = [&](const std::string &bytes, const std::string &n) {
    auto r = kind(bytes);
    ASSERT_FALSE(r.ok());
    EXPECT_NE(r.message().find("l2c.bin"), std::string::npos) << r.message();
    EXPECT_NE(r.message().find(n), std::string::npos) << r.message();
  };
  expectKindError(std::string("\x08\x00", 2), "too short");
  expectKindError(hdr, "no vocabulary entries");
  expectKindError(u32(0) + entry(0, 1, "a"), "max_token_length 0");
  expectKindError(u32(0xFFFFFFFFu) + entry(0, 1, "a"), "max_token_length");
  expectKindError(hdr + entry(0, -5, ""), "negative length -5");
  expectKindError(hdr + entry(0, 1, "a") + entry(0, 0x7FFFFFFF, "xyz"),
                  "exceeds max_token_length");
  expectKindError(u32(1000) + entry(0, 900, "xyz"), "past the end");
  expectKindError(good + std::string("\x00\x00\x80", 3), "truncated");
  expectKindError(hdr + entry(std::nanf(""), 1, "a"), "NaN");
  // Detection: max_token_length 123 starts the file with '{' but is still
  // llama2.c, not JSON.
  {
    std::string path = tempPath("brace.bin");
    writeFile(path, u32(123) + entry(0, 1, "a") + entry(-1, 2, "bc"));
    auto r = loadTokenizer(path);
    std::remove(path.c_str());
    ASSERT_TRUE(r.ok()) << r.message();
    EXPECT_EQ((*r)->kind(), TokenizerKind::Llama2c);
  }
  // Through detection the problem is reported too.
  expectLoadError(hdr + entry(0, -5, ""), {"negative length -5"});
  // Without byte tokens (ids 3..258) a vocabulary loads, and text of its
  // pieces encodes; a character that is no piece needs its byte token,
  // and the error names the file (issue 35).
  {
    auto r = kind(good + entry(0, 1, " ") + entry(0, 1, "h"));
    ASSERT_TRUE(r.ok()) << r.message();
    auto ids = (*r)->encode("h", false);
    ASSERT_TRUE(ids.ok()) << ids.message();
    EXPECT_EQ(*ids, (std::vector<int32_t>{2, 3}));
    ids = (*r)->encode("hi", false);
    ASSERT_FALSE(ids.ok());
    EXPECT_EQ(ids.message(),
              "l2c.bin: llama2.c tokenizer.bin: no byte token for byte 105, "
              "which the text needs (the byte tokens are ids 3..258; the "
              "vocabulary has 4 entries)");
  }
}

TEST(Malformed, TruncatedRealFiles) {
  ETLLM_REQUIRE_SHARED(kTok512);
  ETLLM_REQUIRE_SHARED(kLlama2Model);
  std::string tok512 = readFile(sharedPath(kTok512));
  expectLoadError(tok512.substr(0, tok512.size() - 3), {"llama2.c"},
                  "tok512-cut.bin");
  std::string spm = readFile(sharedPath(kLlama2Model));
  expectLoadError(spm.substr(0, spm.size() / 2), {"SentencePiece"},
                  "spm-cut.model");
  // The wrong explicit kind is an error, not a misparse.
  auto r = loadTokenizerFromBuffer(
      reinterpret_cast<const uint8_t *>(tok512.data()), tok512.size(),
      "tok512.bin", TokenizerKind::Tiktoken);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.message().find("tok512.bin"), std::string::npos);
  auto g = loadTokenizerFromBuffer(
      reinterpret_cast<const uint8_t *>(tok512.data()), tok512.size(),
      "tok512.bin", TokenizerKind::GgufSpm);
  ASSERT_FALSE(g.ok());
  EXPECT_NE(g.message().find("tokenizerFromVocab"), std::string::npos);
}

/// A minimal valid tiktoken file: the 256 single bytes, then `extra`.
std::string tiktokenBase() {
  static const char kB64[] =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  for (int b = 0; b < 256; ++b) {
    std::string enc;
    enc.push_back(kB64[b >> 2]);
    enc.push_back(kB64[(b & 3) << 4]);
    enc += "==";
    out += enc + " " + std::to_string(b) + "\n";
  }
  return out;
}

TEST(Malformed, Tiktoken) {
  const std::string base = tiktokenBase();
  {
    std::string path = tempPath("ok.tiktoken");
    writeFile(path, base + "YWI= 256\n"); // "ab"
    auto ok = loadTokenizer(path);
    std::remove(path.c_str());
    ASSERT_TRUE(ok.ok()) << ok.message();
    EXPECT_EQ((*ok)->kind(), TokenizerKind::Tiktoken);
    EXPECT_EQ((*ok)->vocabSize(), 257 + 256);
    auto ids = (*ok)->encode("abab", false);
    ASSERT_TRUE(ids.ok());
    EXPECT_EQ(*ids, (std::vector<int32_t>{256, 256}));
  }
  expectLoadError(base + "Y!I= 256\n", {"line 257", "invalid base64"});
  expectLoadError(base + "YWI 256\n", {"line 257", "invalid base64"});
  expectLoadError(base + "YWI= 255\n", {"line 257", "duplicate rank 255"});
  expectLoadError(base + "YQ== 256\n", {"repeats the token", "rank 97"});
  expectLoadError(base + "YWI= -3\n", {"line 257", "rank"});
  expectLoadError(base + "YWI= 12x\n", {"line 257", "rank"});
  expectLoadError(base + "YWI= 999999999\n", {"line 257", "rank"});
  expectLoadError(base + "YWI= 4000000\n", {"line 257", "rank 4000000"});
  expectLoadError(base + "YWI=256\n", {"line 257", "expected 'base64 rank'"});
  expectLoadError(base + "= 256\n", {"line 257"});
  // A byte without a rank: byte-level BPE could not encode it.
  std::string missing = base.substr(base.find('\n') + 1); // drop byte 0
  expectLoadError(missing, {"single byte 0"});
}

TEST(Malformed, HuggingFaceJson) {
  auto minimal = [](const std::string &model) {
    return "{\"model\": " + model + "}";
  };
  const std::string okModel =
      R"({"type": "BPE", "vocab": {"a": 0, "b": 1, "ab": 2}, "merges": ["a b"]})";
  {
    std::string path = tempPath("ok.json");
    writeFile(path, minimal(okModel));
    auto ok = loadTokenizer(path);
    std::remove(path.c_str());
    ASSERT_TRUE(ok.ok()) << ok.message();
    auto ids = (*ok)->encode("abab", false);
    ASSERT_TRUE(ids.ok());
    EXPECT_EQ(*ids, (std::vector<int32_t>{2, 2}));
  }
  expectLoadError("{\"model\": {\"type\": \"BPE\", ", {"invalid JSON"});
  expectLoadError("{\"model\": {\"type\": \"BP\xC3\x28\"}}",
                  {"invalid JSON"}); // invalid UTF-8
  expectLoadError("{\"version\": \"1.0\"}", {"no \"model\""});
  expectLoadError("{\"model\": 5}", {"\"model\" must be an object"});
  expectLoadError(minimal(R"({"type": "WordPiece", "vocab": {"a": 0}})"),
                  {"WordPiece", "not supported"});
  expectLoadError(minimal(R"({"type": "Unigram", "vocab": [["a", 0.0]]})"),
                  {"Unigram", "not supported"});
  expectLoadError(minimal(R"({"type": "BPE", "vocab": {"a": "x"}})"),
                  {"must be an integer id"});
  expectLoadError(minimal(R"({"type": "BPE", "vocab": {"a": -1}})"),
                  {"out of range"});
  expectLoadError(minimal(R"({"type": "BPE", "vocab": {"a": 99999999}})"),
                  {"out of range"});
  expectLoadError(minimal(R"({"type": "BPE", "vocab": {"a": 0, "b": 0}})"),
                  {"id 0 is used by both"});
  expectLoadError(
      minimal(R"({"type": "BPE", "vocab": {"a": 0}, "merges": ["a zz"]})"),
      {"merges[0]", "unknown token 'zz'"});
  expectLoadError(
      minimal(R"({"type": "BPE", "vocab": {"a": 0}, "merges": ["a a"]})"),
      {"merges[0]", "'aa'"});
  expectLoadError(
      minimal(R"({"type": "BPE", "vocab": {"a": 0}, "merges": [7]})"),
      {"merges[0]"});
  expectLoadError(minimal(R"({"type": "BPE", "vocab": {"a": 0},
                              "unk_token": "<unk>"})"),
                  {"unk_token"});
  expectLoadError(R"({"normalizer": {"type": "NFC"}, "model": )" + okModel +
                      "}",
                  {"NFC", "not supported"});
  expectLoadError(
      R"({"pre_tokenizer": {"type": "Split", "pattern": {"Regex": "(("},
                      "behavior": "Isolated"}, "model": )" +
          okModel + "}",
      {"regex"});
  expectLoadError(R"({"decoder": {"type": "WordPiece"}, "model": )" + okModel +
                      "}",
                  {"WordPiece"});
  expectLoadError(
      R"({"added_tokens": [{"id": -4, "content": "x"}], "model": )" + okModel +
          "}",
      {"added_tokens[0]"});
  expectLoadError(R"({"added_tokens": [{"id": 3}], "model": )" + okModel + "}",
                  {"added_tokens[0].content"});
  expectLoadError("[1, 2, 3]", {"not a recognized tokenizer file"});
  // Deep nesting is refused while parsing, before a DOM exists (no stack
  // overflow, no memory growing with the square of the depth); 64 levels
  // are accepted.
  const size_t depth = 200000;
  expectLoadError("{\"model\": " + std::string(depth, '[') +
                      std::string(depth, ']') + "}",
                  {"JSON nested deeper than 64 levels"});
  expectLoadError("{\"model\": " + std::string(63, '[') + std::string(63, ']') +
                      "}",
                  {"\"model\" must be an object"});
  expectLoadError("{\"model\": " + std::string(64, '[') + std::string(64, ']') +
                      "}",
                  {"JSON nested deeper than 64 levels"});
  // A post_processor / normalizer nested 100,000 levels deep (these walks
  // recursed).
  std::string deepPost = "{\"type\": \"Sequence\", \"processors\": [";
  std::string deep;
  for (int i = 0; i < 100000; ++i)
    deep += deepPost;
  for (int i = 0; i < 100000; ++i)
    deep += "]}";
  expectLoadError("{\"post_processor\": " + deep + ", \"model\": " + okModel +
                      "}",
                  {"JSON nested deeper than 64 levels"});
}

// A tokenizer.json whose Split regex backtracks exponentially: encoding ends
// in an error naming the file and the pattern, quickly, instead of running
// for minutes (PCRE2 match limit with a per-call budget, kRegexFreeSteps).
TEST(Malformed, BacktrackingSplitRegexIsBounded) {
  const std::string vocab =
      R"({"type": "BPE", "vocab": {"a": 0, "!": 1, "b": 2}, "merges": []})";
  auto withSplit = [&](const std::string &regex) {
    return R"({"pre_tokenizer": {"type": "Split", "pattern": {"Regex": ")" +
           regex + R"("}, "behavior": "Isolated"}, "model": )" + vocab + "}";
  };
  std::string path = tempPath("evil-split.json");
  for (const char *regex : {"(a+)+$", "(a|a)+$", "(a|aa)+$"}) {
    writeFile(path, withSplit(regex));
    auto tok = loadTokenizer(path);
    ASSERT_TRUE(tok.ok()) << tok.message();
    for (size_t n : {33, 136, 4096}) {
      auto start = std::chrono::steady_clock::now();
      auto ids = (*tok)->encode(std::string(n, 'a') + "!", false);
      double s = std::chrono::duration<double>(
                     std::chrono::steady_clock::now() - start)
                     .count();
      ASSERT_FALSE(ids.ok()) << regex << " on " << n << " bytes";
      EXPECT_NE(ids.message().find(path), std::string::npos) << ids.message();
      EXPECT_NE(ids.message().find("PCRE2 match limit"), std::string::npos)
          << ids.message();
      EXPECT_NE(ids.message().find(regex), std::string::npos) << ids.message();
      // Milliseconds in fact; generous for sanitizer builds and a busy
      // machine.
      EXPECT_LT(s, 2.0) << regex << " on " << n << " bytes";
    }
  }
  // The same file with a pattern that does not backtrack encodes long text.
  writeFile(path, withSplit("a+"));
  auto tok = loadTokenizer(path);
  ASSERT_TRUE(tok.ok()) << tok.message();
  auto ids = (*tok)->encode(std::string(1 << 20, 'a') + "!", false);
  ASSERT_TRUE(ids.ok()) << ids.message();
  std::remove(path.c_str());
}

TEST(Malformed, RandomBytesNeverCrash) {
  // Deterministic fuzzing: random buffers and mutated real files. Loading
  // must return (ok or error); what loads must encode arbitrary bytes.
  std::mt19937 rng(1234);
  std::vector<std::string> seeds = {std::string("\x07\0\0\0", 4),
                                    tiktokenBase(), "{\"model\": {}}"};
  for (const char *rel : {kTok512, kGpt2Json})
    if (haveShared(rel))
      seeds.push_back(readFile(sharedPath(rel)));
  const std::string junkText =
      bytesOf("\xFF\xFE a\x80 \xE2\x82 hello <|x|> \x00");
  for (int iter = 0; iter < 120; ++iter) {
    std::string buf;
    if (iter < 20) {
      buf.resize(rng() % 64);
      for (char &c : buf)
        c = static_cast<char>(rng());
    } else {
      const std::string &seed = seeds[iter % seeds.size()];
      buf = seed.substr(0, rng() % (seed.size() + 1));
      for (int k = 0; k < 4 && !buf.empty(); ++k)
        buf[rng() % buf.size()] = static_cast<char>(rng());
    }
    auto tok = loadTokenizerFromBuffer(
        reinterpret_cast<const uint8_t *>(buf.data()), buf.size(), "fuzz");
    if (!tok.ok()) {
      EXPECT_NE(tok.message().find("fuzz"), std::string::npos) << tok.message();
      continue;
    }
    auto ids = (*tok)->encode(junkText, true);
    if (ids.ok())
      (void)(*tok)->decode(*ids);
  }
}

TEST(Malformed, InvalidUtf8TextAllKinds) {
  // Every loadable kind encodes arbitrary bytes without crashing.
  std::mt19937 rng(99);
  for (const char *rel : {kTok512, kLlama2Model, kGpt2Json, kLlama3Model}) {
    if (!haveShared(rel))
      continue;
    auto tok = loadOrFail(sharedPath(rel));
    ASSERT_TRUE(tok);
    for (int iter = 0; iter < 20; ++iter) {
      std::string text(rng() % 300, '\0');
      for (char &c : text)
        c = static_cast<char>(rng());
      auto ids = tok->encode(text, true);
      ASSERT_TRUE(ids.ok()) << rel << ": " << ids.message();
      for (int32_t id : *ids)
        ASSERT_TRUE(id >= 0 && id < tok->vocabSize()) << rel;
      (void)tok->decode(*ids);
    }
  }
}

} // namespace
} // namespace etllm::rt::test
