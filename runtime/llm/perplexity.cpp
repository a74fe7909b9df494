//===- perplexity.cpp - Perplexity over a token stream --------------------===//
#include "etllm/runtime/llm/perplexity.h"

#include "etllm/schema/program_generated.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <string>

namespace etllm::rt::llm {

namespace fbs = etllm::schema;

namespace {

/// -log p(tok) from one row of logits, as llama-perplexity computes it.
double negLogLikelihood(const float *logits, int64_t vocab, int32_t tok) {
  float maxLogit = logits[0];
  for (int64_t i = 1; i < vocab; ++i)
    maxLogit = std::max(maxLogit, logits[i]);
  double sumExp = 0;
  for (int64_t i = 0; i < vocab; ++i)
    sumExp += std::exp(logits[i] - maxLogit);
  return -(double(logits[tok] - maxLogit) - std::log(sumExp));
}

} // namespace

Result<PerplexityResult>
evaluatePerplexity(Module &module, Method &forward,
                   const std::vector<int32_t> &tokens,
                   const PerplexityOptions &options,
                   const std::function<void(int64_t, double)> &onChunk) {
  const Program &program = module.program();
  const std::string &name = program.name();
  if (forward.numInputs() != 2 || forward.numOutputs() != 1 ||
      forward.input(0).dtype != DType::I64 || forward.input(0).rank != 2 ||
      forward.input(1).dtype != DType::I64 || forward.input(1).rank != 1)
    return Error(name + ": `" + forward.name() +
                 "` is not forward(tokens: i64 [1, seq], input_pos: i64 "
                 "[seq]) -> logits");
  // The declared output (upper bounds): [.., S, V] with S > 1 when every
  // position's logits are returned.
  const fbs::Method *fm = nullptr;
  for (const fbs::Method *m : *program.schema().methods())
    if (m->name()->str() == forward.name())
      fm = m;
  const fbs::Tensor *out = fm && fm->outputs() && fm->outputs()->size() == 1
                               ? fm->values()->Get(fm->outputs()->Get(0))
                               : nullptr;
  if (!out || out->dtype() != fbs::DType::F32 || !out->sizes() ||
      out->sizes()->size() < 2)
    return Error(name + ": the output of `" + forward.name() +
                 "` is not f32 logits [.., seq, vocab]");
  uint32_t rank = out->sizes()->size();
  int64_t vocab = out->sizes()->Get(rank - 1);
  bool allPositions = out->sizes()->Get(rank - 2) > 1;

  int64_t nCtx = options.contextLength;
  // The declared bound of the token input (the Tensor's sizes are those of
  // the last call).
  const fbs::Tensor *in0 = fm->inputs() && fm->inputs()->size() == 2
                               ? fm->values()->Get(fm->inputs()->Get(0))
                               : nullptr;
  if (!in0 || !in0->sizes() || in0->sizes()->size() != 2)
    return Error(name + ": the token input of `" + forward.name() +
                 "` is not [1, seq]");
  int64_t maxSeq = in0->sizes()->Get(1);
  if (program.metadata().maxSeqLen > 0)
    maxSeq = std::min(maxSeq, program.metadata().maxSeqLen);
  if (nCtx < 4)
    return Error("the perplexity context (-c) must be at least 4 tokens, got " +
                 std::to_string(nCtx));
  if (nCtx > maxSeq)
    return Error("the perplexity context (-c " + std::to_string(nCtx) +
                 ") is longer than the program's context of " +
                 std::to_string(maxSeq));
  if (int64_t(tokens.size()) < 2 * nCtx)
    return Error("the text has " + std::to_string(tokens.size()) +
                 " tokens; perplexity with a context of " +
                 std::to_string(nCtx) + " needs at least " +
                 std::to_string(2 * nCtx));
  for (int32_t t : tokens)
    if (t < 0 || t >= vocab)
      return Error("token id " + std::to_string(t) +
                   " is outside the model's vocabulary of " +
                   std::to_string(vocab));
  if (options.bosId >= vocab)
    return Error("BOS id " + std::to_string(options.bosId) +
                 " is outside the model's vocabulary");

  int64_t nChunk = int64_t(tokens.size()) / nCtx;
  if (options.maxChunks >= 0)
    nChunk = std::min(nChunk, options.maxChunks);
  const int64_t first = nCtx / 2;

  PerplexityResult r;
  r.inputTokens = tokens.size();
  r.allPositionLogits = allPositions;
  auto start = std::chrono::steady_clock::now();
  std::vector<int64_t> ids, pos;
  ids.reserve(nCtx);
  pos.reserve(nCtx);
  // Runs tokens [b, e) of the window at positions b .. e - 1; returns the
  // logits and the number of rows they hold.
  auto call = [&](const std::vector<int64_t> &window, int64_t b,
                  int64_t e) -> Result<std::pair<const float *, int64_t>> {
    ids.assign(window.begin() + b, window.begin() + e);
    pos.resize(e - b);
    for (int64_t i = b; i < e; ++i)
      pos[i - b] = i;
    int64_t n = e - b;
    int64_t sizes[2] = {1, n};
    ETLLM_RETURN_IF_ERROR(
        forward.setInput(0, DType::I64, sizes, 2, ids.data()));
    ETLLM_RETURN_IF_ERROR(forward.setInput(1, DType::I64, &n, 1, pos.data()));
    ETLLM_RETURN_IF_ERROR(forward.execute());
    const Tensor &o = forward.output(0);
    if (o.dtype != DType::F32 || o.rank < 1 || o.dim(-1) != vocab ||
        o.numel() % vocab != 0)
      return Error(name + ": the output is not f32 logits over the vocabulary");
    return std::make_pair(o.ptr<float>(), o.numel() / vocab);
  };

  double nll = 0, nll2 = 0;
  int64_t count = 0;
  std::vector<int64_t> window(nCtx);
  for (int64_t c = 0; c < nChunk; ++c) {
    const int32_t *w = tokens.data() + c * nCtx;
    for (int64_t i = 0; i < nCtx; ++i)
      window[i] = w[i];
    if (options.bosId >= 0)
      window[0] = options.bosId;
    module.resetState();
    auto score = [&](const float *row, int64_t p) {
      // The logits at position p predict the token at p + 1.
      double v = negLogLikelihood(row, vocab, w[p + 1]);
      nll += v;
      nll2 += v * v;
      ++count;
    };
    if (allPositions) {
      auto logits = call(window, 0, nCtx);
      if (!logits.ok())
        return logits.error();
      if (logits->second != nCtx)
        return Error(name + ": " + std::to_string(nCtx) +
                     " tokens gave logits for " +
                     std::to_string(logits->second) + " positions");
      for (int64_t p = first; p < nCtx - 1; ++p)
        score(logits->first + size_t(p) * vocab, p);
    } else {
      auto logits = call(window, 0, first + 1);
      if (!logits.ok())
        return logits.error();
      score(logits->first + size_t(logits->second - 1) * vocab, first);
      for (int64_t p = first + 1; p < nCtx - 1; ++p) {
        logits = call(window, p, p + 1);
        if (!logits.ok())
          return logits.error();
        score(logits->first + size_t(logits->second - 1) * vocab, p);
      }
    }
    r.runningPpl.push_back(std::exp(nll / count));
    if (onChunk)
      onChunk(c, r.runningPpl.back());
  }
  r.chunks = nChunk;
  r.scoredTokens = count;
  r.meanNll = count ? nll / count : 0;
  r.meanNll2 = count ? nll2 / count : 0;
  r.ppl = std::exp(r.meanNll);
  double var = r.meanNll2 - r.meanNll * r.meanNll;
  r.pplUncertainty =
      var > 0 && count > 1 ? std::sqrt(var / (count - 1)) * r.ppl : 0;
  r.seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  return r;
}

} // namespace etllm::rt::llm
