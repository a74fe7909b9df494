//===- perplexity.h - Perplexity over a token stream ------------*- C++ -*-===//
//
// The definition of llama.cpp's llama-perplexity (tools/perplexity/
// perplexity.cpp, perplexity() without --ppl-stride), so that figures from
// the two can be put side by side on the same text:
//   - the text is tokenized once, with BOS in front when the tokenizer adds
//     one; at least 2 * n_ctx tokens are needed;
//   - it is cut into floor(tokens / n_ctx) windows of n_ctx tokens (the
//     tail is dropped); each window is evaluated from an empty KV cache at
//     positions 0 .. n_ctx - 1, its first token replaced by BOS (when the
//     tokenizer adds BOS);
//   - in each window, the logits at positions first = n_ctx / 2 .. n_ctx - 2
//     are scored against the next token: n_ctx - first - 1 tokens per
//     window;
//   - nll_i = log(sum_j exp(l_j - max)) - (l_tok - max) (max over the row in
//     float, the sum in double); PPL = exp(mean nll), and the uncertainty
//     printed as "+/-" is PPL * sqrt((mean(nll^2) - mean(nll)^2) /
//     (count - 1)).
// A program that returns the logits of every position is evaluated with one
// call per window; one that returns only the last position's logits (the
// default export) with a prefill of positions 0 .. first and one decode call
// per scored position after it. Both score the same logits.
//
//===----------------------------------------------------------------------===//
#ifndef ETLLM_RUNTIME_LLM_PERPLEXITY_H
#define ETLLM_RUNTIME_LLM_PERPLEXITY_H

#include "etllm/runtime/program.h"
#include "etllm/runtime/result.h"

#include <cstdint>
#include <functional>
#include <vector>

namespace etllm::rt::llm {

struct PerplexityOptions {
  /// Window length (llama-perplexity -c).
  int64_t contextLength = 512;
  /// At most this many windows (-1: all; llama-perplexity --chunks).
  int64_t maxChunks = -1;
  /// The BOS id that replaces each window's first token; -1: none (the
  /// tokenizer adds no BOS).
  int32_t bosId = -1;
};

struct PerplexityResult {
  double ppl = 0;
  /// The "+/-" llama-perplexity prints.
  double pplUncertainty = 0;
  /// Mean negative log-likelihood (nats) and its second moment.
  double meanNll = 0, meanNll2 = 0;
  int64_t chunks = 0;
  int64_t scoredTokens = 0;
  int64_t inputTokens = 0;
  /// After each window: the running PPL (llama-perplexity's "[i]x.xxxx").
  std::vector<double> runningPpl;
  /// True when the program returned every position's logits.
  bool allPositionLogits = false;
  double seconds = 0;
};

/// Evaluates `tokens` (the whole tokenized text) with `forward` of `module`
/// (forward(tokens: i64 [1, seq], input_pos: i64 [seq]) -> f32 logits).
/// `onChunk(i, runningPpl)` is called after window i (0-based).
Result<PerplexityResult>
evaluatePerplexity(Module &module, Method &forward,
                   const std::vector<int32_t> &tokens,
                   const PerplexityOptions &options,
                   const std::function<void(int64_t, double)> &onChunk = {});

} // namespace etllm::rt::llm

#endif // ETLLM_RUNTIME_LLM_PERPLEXITY_H
