//===- sampler_test.cpp - Next-token sampling -----------------------------===//
#include "etllm/runtime/llm/sampler.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

using etllm::rt::llm::Sampler;
using etllm::rt::llm::SamplingConfig;

namespace {

std::vector<float> logits() { return {1.0f, 3.0f, 2.5f, -1.0f, 0.0f}; }

TEST(Sampler, GreedyIsTheFirstArgmax) {
  SamplingConfig c;
  c.temperature = 0;
  Sampler s(5, c);
  auto l = logits();
  EXPECT_EQ(s.sample(l.data(), {}), 1);
  std::vector<float> ties = {2, 5, 5, 1, 0};
  EXPECT_EQ(s.sample(ties.data(), {}), 1);
}

TEST(Sampler, TopKOneAndTinyTopPAndMinPOneAreGreedy) {
  for (int variant = 0; variant < 3; ++variant) {
    SamplingConfig c;
    c.temperature = 1.0f;
    c.topP = 1.0f;
    c.seed = 3;
    if (variant == 0)
      c.topK = 1;
    if (variant == 1)
      c.topP = 1e-6f;
    if (variant == 2)
      c.minP = 1.0f;
    Sampler s(5, c);
    for (int i = 0; i < 50; ++i) {
      auto l = logits();
      EXPECT_EQ(s.sample(l.data(), {}), 1) << "variant " << variant;
    }
  }
}

TEST(Sampler, FrequenciesFollowTheSoftmax) {
  SamplingConfig c;
  c.temperature = 1.0f;
  c.topP = 1.0f;
  c.seed = 42;
  Sampler s(5, c);
  std::vector<int> counts(5, 0);
  const int n = 20000;
  for (int i = 0; i < n; ++i) {
    auto l = logits();
    ++counts[s.sample(l.data(), {})];
  }
  auto base = logits();
  double sum = 0;
  for (float v : base)
    sum += std::exp(v);
  for (int i = 0; i < 5; ++i) {
    double p = std::exp(base[i]) / sum;
    // Binomial standard deviation, 5 sigma.
    double sd = std::sqrt(n * p * (1 - p));
    EXPECT_NEAR(counts[i], n * p, 5 * sd + 1) << "token " << i;
  }
}

TEST(Sampler, TopKRestrictsTheCandidates) {
  SamplingConfig c;
  c.temperature = 2.0f;
  c.topK = 2;
  c.topP = 1.0f;
  c.seed = 9;
  Sampler s(5, c);
  for (int i = 0; i < 500; ++i) {
    auto l = logits();
    int t = s.sample(l.data(), {});
    EXPECT_TRUE(t == 1 || t == 2) << t;
  }
}

TEST(Sampler, SameSeedSameSequence) {
  SamplingConfig c;
  c.temperature = 1.5f;
  c.seed = 1234;
  Sampler a(5, c), b(5, c);
  for (int i = 0; i < 100; ++i) {
    auto la = logits(), lb = logits();
    EXPECT_EQ(a.sample(la.data(), {}), b.sample(lb.data(), {}));
  }
}

TEST(Sampler, RepetitionPenaltyDiscouragesSeenTokens) {
  SamplingConfig c;
  c.temperature = 0;
  c.repetitionPenalty = 2.0f;
  Sampler s(5, c);
  auto l = logits();
  // Token 1 (logit 3) was seen: 3 / 2 = 1.5 < 2.5, so token 2 wins.
  EXPECT_EQ(s.sample(l.data(), {1}), 2);
  // A negative logit is multiplied (pushed down, never up): -1.5 * 2 = -3
  // falls below token 1's -2.
  std::vector<float> neg = {-1.5f, -2.0f, -3.5f, -4.0f, -5.0f};
  EXPECT_EQ(s.sample(neg.data(), {0}), 1);
}

} // namespace
