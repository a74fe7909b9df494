//===- sampler.cpp - Next-token sampling ----------------------------------===//
#include "etllm/runtime/llm/sampler.h"

#include <algorithm>
#include <cmath>

namespace etllm::rt::llm {

Sampler::Sampler(int32_t vocabSize, const SamplingConfig &config)
    : vocab_(vocabSize), config_(config), rng_(config.seed) {
  candidates_.reserve(vocabSize);
  seen_.assign(vocabSize, 0);
}

namespace {

using Candidate = std::pair<float, int32_t>;

/// Sorts only the candidates that can be in the top-p nucleus; false when
/// it cannot (the caller then sorts them all).
template <typename Less>
bool sortNucleusOnly(std::vector<Candidate> &candidates, float topP,
                     int32_t vocab, const Less &byProb) {
  // A full sort of a 128k vocabulary took 12.6 ms per token (3.9 ms with
  // this cut; etllm_sampler_bench, docs/Performance.md). With
  // top-p, a token below (1 - topP) / (V - 1) cannot be in the nucleus: all
  // such tokens together hold less than 1 - topP (llama2.c's cut). Sort the
  // others only, and fall back (false) unless they do reach topP when
  // summed in sorted order, exactly as the nucleus loop below sums them, so
  // the sampled token is the one the full sort would give.
  if (topP >= 1.0f || vocab < 2)
    return false;
  const float cutoff = (1.0f - topP) / float(vocab - 1);
  auto mid =
      std::partition(candidates.begin(), candidates.end(),
                     [&](const Candidate &c) { return c.first >= cutoff; });
  std::sort(candidates.begin(), mid, byProb);
  double cum = 0;
  for (auto it = candidates.begin(); it != mid; ++it) {
    cum += it->first;
    if (cum >= topP)
      return true; // the nucleus ends at or before `it`
  }
  return false;
}

} // namespace

int32_t Sampler::sample(float *logits, const std::vector<int32_t> &history) {
  if (config_.repetitionPenalty != 1.0f) {
    std::fill(seen_.begin(), seen_.end(), 0);
    for (int32_t t : history)
      if (t >= 0 && t < vocab_ && !seen_[t]) {
        seen_[t] = 1;
        float &l = logits[t];
        l = l > 0 ? l / config_.repetitionPenalty
                  : l * config_.repetitionPenalty;
      }
  }
  if (config_.temperature <= 0.0f) {
    // Greedy: the first maximum (as llama2.c's argmax).
    int32_t best = 0;
    for (int32_t i = 1; i < vocab_; ++i)
      if (logits[i] > logits[best])
        best = i;
    return best;
  }
  // Softmax of logits / temperature.
  float maxLogit = *std::max_element(logits, logits + vocab_);
  candidates_.clear();
  double sum = 0;
  for (int32_t i = 0; i < vocab_; ++i) {
    float p = std::exp((logits[i] - maxLogit) / config_.temperature);
    candidates_.push_back({p, i});
    sum += p;
  }
  for (auto &c : candidates_)
    c.first = float(c.first / sum);
  auto byProb = [](const std::pair<float, int32_t> &a,
                   const std::pair<float, int32_t> &b) {
    return a.first > b.first || (a.first == b.first && a.second < b.second);
  };
  size_t keep = candidates_.size();
  if (config_.topK > 0 && size_t(config_.topK) < keep) {
    std::partial_sort(candidates_.begin(), candidates_.begin() + config_.topK,
                      candidates_.end(), byProb);
    keep = config_.topK;
  } else if (!sortNucleusOnly(candidates_, config_.topP, vocab_, byProb)) {
    std::sort(candidates_.begin(), candidates_.end(), byProb);
  }
  if (config_.minP > 0) {
    float threshold = config_.minP * candidates_[0].first;
    size_t k = 1;
    while (k < keep && candidates_[k].first >= threshold)
      ++k;
    keep = k;
  }
  if (config_.topP < 1.0f) {
    double cum = 0;
    size_t k = 0;
    while (k < keep) {
      cum += candidates_[k].first;
      ++k;
      if (cum >= config_.topP)
        break;
    }
    keep = k;
  }
  double total = 0;
  for (size_t i = 0; i < keep; ++i)
    total += candidates_[i].first;
  double r = std::uniform_real_distribution<double>(0.0, total)(rng_);
  double cum = 0;
  for (size_t i = 0; i < keep; ++i) {
    cum += candidates_[i].first;
    if (r < cum)
      return candidates_[i].second;
  }
  return candidates_[keep - 1].second;
}

} // namespace etllm::rt::llm
