//===- glob.cpp - Fuzz target: the quantization.exclude glob matcher ------===//
//
// Differential: etllm::globMatch (linear) against a dynamic-programming
// reference (quadratic, obviously right) on the pattern before the first
// newline and the text after it.
//
//===----------------------------------------------------------------------===//
#include "FuzzSupport.h"

#include "etllm/Support/Glob.h"

namespace {

/// dp[j]: pattern[0, i) matches text[0, j).
bool referenceMatch(std::string_view p, std::string_view t) {
  std::vector<char> dp(t.size() + 1, 0), next(t.size() + 1, 0);
  dp[0] = 1;
  for (char c : p) {
    if (c == '*') {
      next[0] = dp[0];
      for (size_t j = 1; j <= t.size(); ++j)
        next[j] = dp[j] || next[j - 1];
    } else {
      next[0] = 0;
      for (size_t j = 1; j <= t.size(); ++j)
        next[j] = dp[j - 1] && t[j - 1] == c;
    }
    dp.swap(next);
  }
  return dp[t.size()];
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::string_view input(reinterpret_cast<const char *>(data), size);
  auto parts = etllm::fuzz::split(input, "\n", 2);
  if (parts.size() != 2 || parts[0].size() * parts[1].size() > (1u << 22))
    return 0;
  ETLLM_FUZZ_CHECK(etllm::globMatch(parts[0], parts[1]) ==
                   referenceMatch(parts[0], parts[1]));
  return 0;
}
