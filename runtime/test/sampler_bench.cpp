//===- sampler_bench.cpp - Sampling cost per token ------------------------===//
//
// One sample() call over a vocabulary of realistic size with random
// logits, greedy and with the runner's defaults (temperature 0.8, top-p
// 0.9). Google Benchmark; not run by ctest.
//
//===----------------------------------------------------------------------===//
#include "etllm/runtime/llm/sampler.h"

#include <benchmark/benchmark.h>

#include <random>
#include <vector>

namespace {

void BM_Sample(benchmark::State &state) {
  const int32_t vocab = int32_t(state.range(0));
  etllm::rt::llm::SamplingConfig cfg;
  cfg.temperature = state.range(1) ? 0.8f : 0.0f;
  cfg.topP = 0.9f;
  cfg.seed = 1;
  etllm::rt::llm::Sampler sampler(vocab, cfg);
  std::mt19937 gen(1);
  std::normal_distribution<float> dist(0.0f, 2.5f);
  std::vector<float> source(vocab), logits(vocab);
  for (float &l : source)
    l = dist(gen);
  for (auto _ : state) {
    state.PauseTiming();
    logits = source; // sample() may modify the logits
    state.ResumeTiming();
    benchmark::DoNotOptimize(sampler.sample(logits.data(), {}));
  }
}
BENCHMARK(BM_Sample)
    ->ArgNames({"vocab", "topp"})
    ->Args({32000, 0})
    ->Args({32000, 1})
    ->Args({128256, 0})
    ->Args({128256, 1})
    ->Unit(benchmark::kMicrosecond);

} // namespace

BENCHMARK_MAIN();
