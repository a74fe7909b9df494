//===- etllm-run.cpp - Generate text with a program file ------------------===//
//
//   etllm-run MODEL.pte --prompt TEXT [--tokenizer PATH] [-n MAX_NEW_TOKENS]
//             [--temperature T] [--top-k K] [--top-p P] [--min-p P]
//             [--repetition-penalty R] [--seed S] [--stop STRING]
//             [--threads N] [--stats-json]
//
// stdout carries the prompt, the generated text and one final newline;
// everything else goes to stderr. Part of the runtime: no LLVM/MLIR.
//
//===----------------------------------------------------------------------===//
#include "etllm/runtime/backend.h"
#include "etllm/runtime/llm/runner.h"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>

using namespace etllm::rt;

namespace {

void usage() {
  std::fprintf(
      stderr,
      "usage: etllm-run MODEL.pte --prompt TEXT [options]\n"
      "  --tokenizer PATH        tokenizer file (default: the program's own)\n"
      "  -n, --max-new-tokens N  tokens to generate at most (default 128)\n"
      "  --temperature T         0 = greedy (default 0.8)\n"
      "  --top-k K               keep the K most likely tokens (default off)\n"
      "  --top-p P               nucleus sampling (default 0.9)\n"
      "  --min-p P               drop tokens below P x the best (default off)\n"
      "  --repetition-penalty R  > 1 discourages repeats (default 1)\n"
      "  --seed S                random seed (default: time)\n"
      "  --stop STRING           stop when the text contains STRING "
      "(repeatable)\n"
      "  --no-bos                do not prepend BOS to the prompt\n"
      "  --threads N             kernel threads (default: hardware threads)\n"
      "  --stats-json            print statistics as one JSON line on "
      "stderr\n");
}

int fail(const std::string &message) {
  std::fprintf(stderr, "etllm-run: error: %s\n", message.c_str());
  return 1;
}

bool parseNumber(const char *s, double &out) {
  char *end = nullptr;
  out = std::strtod(s, &end);
  return end && *end == '\0' && end != s;
}

} // namespace

int main(int argc, char **argv) {
  std::string model, prompt;
  bool havePrompt = false, statsJson = false;
  llm::RunnerOptions options;
  options.numThreads = std::max(1u, std::thread::hardware_concurrency());
  llm::GenerationConfig config;
  config.sampling.seed =
      uint64_t(std::chrono::steady_clock::now().time_since_epoch().count());
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&](double &out) -> bool {
      if (i + 1 >= argc || !parseNumber(argv[i + 1], out)) {
        fail("option " + a + " needs a number");
        return false;
      }
      ++i;
      return true;
    };
    double v;
    if (a == "-h" || a == "--help") {
      usage();
      return 0;
    } else if (a == "--prompt" && i + 1 < argc) {
      prompt = argv[++i];
      havePrompt = true;
    } else if (a == "--tokenizer" && i + 1 < argc) {
      options.tokenizerPath = argv[++i];
    } else if (a == "--stop" && i + 1 < argc) {
      config.stopStrings.push_back(argv[++i]);
    } else if (a == "-n" || a == "--max-new-tokens") {
      if (!value(v) || v < 0)
        return fail("-n needs a non-negative number");
      config.maxNewTokens = int32_t(v);
    } else if (a == "--temperature") {
      if (!value(v) || v < 0)
        return fail("--temperature needs a non-negative number");
      config.sampling.temperature = float(v);
    } else if (a == "--top-k") {
      if (!value(v) || v < 0)
        return fail("--top-k needs a non-negative number");
      config.sampling.topK = int32_t(v);
    } else if (a == "--top-p") {
      if (!value(v) || v <= 0 || v > 1)
        return fail("--top-p needs a number in (0, 1]");
      config.sampling.topP = float(v);
    } else if (a == "--min-p") {
      if (!value(v) || v < 0 || v > 1)
        return fail("--min-p needs a number in [0, 1]");
      config.sampling.minP = float(v);
    } else if (a == "--repetition-penalty") {
      if (!value(v) || v <= 0)
        return fail("--repetition-penalty needs a positive number");
      config.sampling.repetitionPenalty = float(v);
    } else if (a == "--seed") {
      if (!value(v) || v < 0)
        return fail("--seed needs a non-negative number");
      config.sampling.seed = uint64_t(v);
    } else if (a == "--threads") {
      if (!value(v) || v < 1)
        return fail("--threads needs a positive number");
      options.numThreads = size_t(v);
    } else if (a == "--no-bos") {
      config.addBos = false;
    } else if (a == "--stats-json") {
      statsJson = true;
    } else if (!a.empty() && a[0] == '-') {
      usage();
      return fail("unknown or incomplete option '" + a + "'");
    } else if (model.empty()) {
      model = a;
    } else {
      return fail("unexpected argument '" + a + "'");
    }
  }
  if (model.empty() || !havePrompt) {
    usage();
    return fail(model.empty() ? "no model file given" : "--prompt is required");
  }

  registerBuiltinBackends();
  auto runner = llm::Runner::load(model, options);
  if (!runner.ok())
    return fail(runner.message());
  std::fwrite(prompt.data(), 1, prompt.size(), stdout);
  std::fflush(stdout);
  auto stats = (*runner)->generate(prompt, config, [](const std::string &s) {
    std::fwrite(s.data(), 1, s.size(), stdout);
    std::fflush(stdout);
  });
  std::fputc('\n', stdout);
  std::fflush(stdout);
  if (!stats.ok())
    return fail(stats.message());
  if (statsJson)
    std::fprintf(stderr, "%s\n", stats->toJson().c_str());
  else
    std::fprintf(stderr,
                 "etllm-run: %lld prompt tokens, %lld generated (%s); load "
                 "%.1f ms, first token %.1f ms, prefill %.1f tok/s, decode "
                 "%.1f tok/s, peak RSS %.1f MiB\n",
                 (long long)stats->promptTokens,
                 (long long)stats->generatedTokens, stats->stopReason.c_str(),
                 stats->loadMs, stats->ttftMs, stats->prefillTokensPerSecond(),
                 stats->decodeTokensPerSecond(),
                 stats->peakRssBytes / 1048576.0);
  return 0;
}
