//===- sampler_test.cpp - Next-token sampling -----------------------------===//
#include "etllm/runtime/llm/sampler.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
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

namespace {
/// The sampler's semantics with a full sort of the vocabulary (what it did
/// before sorting only the top-p nucleus): softmax, sort by probability
/// then id, min-p, top-p, then one uniform draw over the kept mass.
int32_t referenceSample(std::vector<float> logits, float temperature,
                        float topP, float minP, std::mt19937_64 &rng) {
  float mx = *std::max_element(logits.begin(), logits.end());
  std::vector<std::pair<float, int32_t>> c;
  double sum = 0;
  for (size_t i = 0; i < logits.size(); ++i) {
    float p = std::exp((logits[i] - mx) / temperature);
    c.push_back({p, int32_t(i)});
    sum += p;
  }
  for (auto &x : c)
    x.first = float(x.first / sum);
  std::sort(c.begin(), c.end(), [](const auto &a, const auto &b) {
    return a.first > b.first || (a.first == b.first && a.second < b.second);
  });
  size_t keep = c.size();
  if (minP > 0) {
    size_t k = 1;
    while (k < keep && c[k].first >= minP * c[0].first)
      ++k;
    keep = k;
  }
  if (topP < 1.0f) {
    double cum = 0;
    size_t k = 0;
    while (k < keep) {
      cum += c[k].first;
      ++k;
      if (cum >= topP)
        break;
    }
    keep = k;
  }
  double total = 0;
  for (size_t i = 0; i < keep; ++i)
    total += c[i].first;
  double r = std::uniform_real_distribution<double>(0.0, total)(rng);
  double cum = 0;
  for (size_t i = 0; i < keep; ++i) {
    cum += c[i].first;
    if (r < cum)
      return c[i].second;
  }
  return c[keep - 1].second;
}
} // namespace

// Top-p sorts only the tokens that can be in the nucleus: the choice must be
// the one a full sort gives, token for token, for flat and peaked logits,
// with and without min-p, and with ties.
TEST(Sampler, TopPMatchesAFullSort) {
  std::mt19937 gen(3);
  for (float topP : {0.05f, 0.5f, 0.9f, 0.999f})
    for (float minP : {0.0f, 0.01f})
      for (float spread : {0.01f, 1.0f, 8.0f}) {
        const int32_t vocab = 5000;
        std::normal_distribution<float> dist(0.0f, spread);
        SamplingConfig cfg;
        cfg.temperature = 0.8f;
        cfg.topP = topP;
        cfg.minP = minP;
        cfg.seed = 11;
        Sampler s(vocab, cfg);
        std::mt19937_64 rng(cfg.seed);
        for (int step = 0; step < 40; ++step) {
          std::vector<float> logits(vocab);
          for (float &l : logits)
            l = step % 5 == 0 ? std::round(dist(gen)) : dist(gen); // ties
          int32_t want =
              referenceSample(logits, cfg.temperature, topP, minP, rng);
          EXPECT_EQ(s.sample(logits.data(), {}), want)
              << "topP " << topP << " minP " << minP << " spread " << spread
              << " step " << step;
        }
      }
}
