//===- GlobTest.cpp - The linear-time `*` glob matcher --------------------===//
#include "etllm/Support/Glob.h"

#include <gtest/gtest.h>

#include <chrono>
#include <random>
#include <string>

namespace {

/// The matcher quantization.exclude used before (lib/Transforms/Quantize.cpp):
/// exponential in the number of stars, kept here as the definition of the
/// semantics the linear one must keep.
bool oldGlobMatch(std::string_view pattern, std::string_view text) {
  if (pattern.empty())
    return text.empty();
  if (pattern.front() == '*') {
    for (size_t i = 0; i <= text.size(); ++i)
      if (oldGlobMatch(pattern.substr(1), text.substr(i)))
        return true;
    return false;
  }
  return !text.empty() && pattern.front() == text.front() &&
         oldGlobMatch(pattern.substr(1), text.substr(1));
}

TEST(Glob, Examples) {
  using etllm::globMatch;
  EXPECT_TRUE(globMatch("model.layers.0.*", "model.layers.0.mlp.down_proj"));
  EXPECT_FALSE(globMatch("model.layers.0.*", "model.layers.10.mlp"));
  EXPECT_TRUE(globMatch("*.mlp.*", "model.layers.3.mlp.up_proj"));
  EXPECT_TRUE(globMatch("lm_head", "lm_head"));
  EXPECT_FALSE(globMatch("lm_head", "lm_head2"));
  EXPECT_TRUE(globMatch("*", ""));
  EXPECT_TRUE(globMatch("**", "x"));
  EXPECT_FALSE(globMatch("", "x"));
  EXPECT_TRUE(globMatch("", ""));
  // Head and tail may not overlap.
  EXPECT_FALSE(globMatch("ab*ba", "aba"));
  EXPECT_TRUE(globMatch("ab*ba", "abba"));
  // `?`, `[` and `\` are ordinary characters, as they always were.
  EXPECT_TRUE(globMatch("a?[b]\\", "a?[b]\\"));
  EXPECT_FALSE(globMatch("a?", "ab"));
  // A middle segment found left-most leaves room for the rest.
  EXPECT_TRUE(globMatch("*aab*ab", "aaabab"));
  EXPECT_TRUE(globMatch("*abab*", "xxabaabababyy"));
}

TEST(Glob, AgreesWithTheOldMatcherOnRandomPatterns) {
  std::mt19937 rng(20240611);
  const char alphabet[] = {'a', 'b', '*', '.'};
  auto randomString = [&](size_t maxLen, bool stars) {
    std::uniform_int_distribution<size_t> len(0, maxLen);
    std::uniform_int_distribution<int> pick(0, stars ? 3 : 2);
    std::string s(len(rng), 'a');
    for (char &c : s) {
      c = alphabet[pick(rng)];
      if (!stars && c == '*')
        c = '.';
    }
    return s;
  };
  int matches = 0;
  for (int i = 0; i < 200000; ++i) {
    std::string pattern = randomString(9, true);
    std::string text = randomString(12, false);
    bool expected = oldGlobMatch(pattern, text);
    matches += expected;
    ASSERT_EQ(etllm::globMatch(pattern, text), expected)
        << "pattern '" << pattern << "' text '" << text << "'";
  }
  // Both outcomes are exercised.
  EXPECT_GT(matches, 5000);
  EXPECT_LT(matches, 195000);
}

TEST(Glob, ManyStarsAreLinear) {
  // 30 stars took the old matcher forever on a path that does not match.
  std::string pattern;
  for (int i = 0; i < 30; ++i)
    pattern += "*a";
  pattern += "*b";
  std::string text = "model." + std::string(5000, 'a') + ".q_proj";
  auto start = std::chrono::steady_clock::now();
  EXPECT_FALSE(etllm::globMatch(pattern, text));
  EXPECT_TRUE(etllm::globMatch(pattern, text + "b"));
  std::string stars(100000, '*');
  EXPECT_TRUE(etllm::globMatch(stars, text));
  EXPECT_FALSE(etllm::globMatch(stars + "x", text));
  double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  EXPECT_LT(seconds, 1.0); // microseconds in fact
}

} // namespace
