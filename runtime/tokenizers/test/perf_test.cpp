//===- perf_test.cpp - Encoding speed on ordinary prompts -----------------===//
//
// A 4 KB prompt must encode in well under 100 ms with the 32000- and
// 128000-token vocabularies; the pathological single-word case too (the
// merge loop is O(n log n), not a rescan per merge). Timings are printed.
// The bound is multiplied by ETLLM_TIME_SCALE (scripts/sanitize.sh sets 5:
// the sanitizers make every run a few times slower).
//
//===----------------------------------------------------------------------===//
#include "tokenizer_test_util.h"

#include <chrono>
#include <cmath>
#include <cstdlib>

namespace etllm::rt::test {
namespace {

std::string prompt4k() {
  const std::string para =
      "Once upon a time, there was a little girl named Lily. She loved to "
      "play outside in the park with her friends, 3 dogs and 12 cats! "
      "\"Why?\" she asked; nobody knew. Größe, naïve café, 東京, emojis "
      "🦙🚀. ";
  std::string out;
  while (out.size() < 4096)
    out += para;
  out.resize(4096);
  // Do not cut a UTF-8 sequence in half.
  while (!out.empty() &&
         (static_cast<unsigned char>(out.back()) & 0xC0) == 0x80)
    out.pop_back();
  if (!out.empty() && static_cast<unsigned char>(out.back()) >= 0xC0)
    out.pop_back();
  return out;
}

/// 100 ms times ETLLM_TIME_SCALE (when it is a number >= 1).
double limitMs() {
  const char *env = std::getenv("ETLLM_TIME_SCALE");
  double scale = env ? std::strtod(env, nullptr) : 1.0;
  return 100.0 * (std::isfinite(scale) && scale >= 1.0 ? scale : 1.0);
}

/// Best of 3 runs, in milliseconds.
double timeEncode(const Tokenizer &tok, const std::string &text,
                  size_t *count) {
  double best = 1e9;
  for (int i = 0; i < 3; ++i) {
    auto t0 = std::chrono::steady_clock::now();
    auto ids = tok.encode(text, true);
    auto t1 = std::chrono::steady_clock::now();
    EXPECT_TRUE(ids.ok());
    if (ids.ok())
      *count = ids->size();
    best = std::min(best,
                    std::chrono::duration<double, std::milli>(t1 - t0).count());
  }
  return best;
}

void checkSpeed(const char *rel) {
  if (!haveShared(rel)) {
    GTEST_SKIP() << "shared test data not found: " << sharedPath(rel);
  }
  auto tok = loadOrFail(sharedPath(rel));
  ASSERT_TRUE(tok);
  size_t n = 0;
  const double limit = limitMs();
  const std::string text = prompt4k();
  double ms = timeEncode(*tok, text, &n);
  std::printf("[ timing ] %-40s %s: 4 KB prompt -> %zu ids in %.3f ms\n", rel,
              tokenizerKindName(tok->kind()), n, ms);
  EXPECT_LT(ms, limit) << rel;
  // One 4 KB "word" (no spaces): the worst case for pair merging.
  const std::string word(4096, 'a');
  double wordMs = timeEncode(*tok, word, &n);
  std::printf("[ timing ] %-40s %s: 4 KB single word -> %zu ids in %.3f ms\n",
              rel, tokenizerKindName(tok->kind()), n, wordMs);
  EXPECT_LT(wordMs, limit) << rel;
  // Inputs that stress the pre-tokenizer regexes' backtracking and the
  // merge loop: long runs of one character class.
  const std::string stress[] = {std::string(4096, ' '),
                                std::string(4096, '\n'),
                                std::string(4096, '7'),
                                std::string(4096, '!'),
                                std::string(2048, ' ') + "x" +
                                    std::string(2047, ' '),
                                [] {
                                  std::string s;
                                  while (s.size() < 4096)
                                    s += "\xE6\x97\xA5 \t";
                                  return s;
                                }()};
  double worst = 0;
  for (const std::string &s : stress)
    worst = std::max(worst, timeEncode(*tok, s, &n));
  std::printf("[ timing ] %-40s %s: worst 4 KB stress input %.3f ms\n", rel,
              tokenizerKindName(tok->kind()), worst);
  EXPECT_LT(worst, limit) << rel;
}

TEST(Perf, Llama2cTokenizerBin) {
  checkSpeed("tokenizers/llama2/tokenizer.bin");
}
TEST(Perf, SentencePieceModel) {
  checkSpeed("tokenizers/llama2/tokenizer.model");
}
TEST(Perf, TiktokenLlama3) { checkSpeed("tokenizers/llama3/tokenizer.model"); }
TEST(Perf, HuggingFaceGpt2) { checkSpeed("tokenizers/gpt2/tokenizer.json"); }

} // namespace
} // namespace etllm::rt::test
