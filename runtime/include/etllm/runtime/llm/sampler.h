//===- sampler.h - Next-token sampling --------------------------*- C++ -*-===//
#ifndef ETLLM_RUNTIME_LLM_SAMPLER_H
#define ETLLM_RUNTIME_LLM_SAMPLER_H

#include <cstdint>
#include <random>
#include <vector>

namespace etllm::rt::llm {

/// How the next token is chosen from the logits.
struct SamplingConfig {
  /// 0 = greedy (argmax); otherwise logits are divided by it.
  float temperature = 0.8f;
  /// Keep only the k most likely tokens (0 = off).
  int32_t topK = 0;
  /// Keep the smallest set of tokens whose probability reaches p (1 = off).
  float topP = 0.9f;
  /// Drop tokens less likely than minP times the most likely (0 = off).
  float minP = 0.0f;
  /// > 1 discourages tokens already in the context (CTRL-style: positive
  /// logits are divided by it, negative ones multiplied).
  float repetitionPenalty = 1.0f;
  /// Seed of the random generator.
  uint64_t seed = 0;
};

/// Samples token ids. Buffers are allocated once (no allocation per token).
class Sampler {
public:
  Sampler(int32_t vocabSize, const SamplingConfig &config);
  /// Chooses the next token from `logits` (modified in place) given the
  /// tokens so far (for the repetition penalty).
  int32_t sample(float *logits, const std::vector<int32_t> &history);

private:
  int32_t vocab_;
  SamplingConfig config_;
  std::mt19937_64 rng_;
  std::vector<std::pair<float, int32_t>> candidates_;
  std::vector<uint8_t> seen_;
};

} // namespace etllm::rt::llm

#endif // ETLLM_RUNTIME_LLM_SAMPLER_H
