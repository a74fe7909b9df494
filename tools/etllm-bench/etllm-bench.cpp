//===- etllm-bench.cpp - Measure a program's speed and memory -------------===//
//
//   etllm-bench MODEL.pte [--prompt-tokens N] [--gen-tokens N] [--threads N]
//               [--repeat R] [--warmup W] [--json]
//
// Runs the program the way the runner does (one prefill call over N prompt
// tokens, then one call per generated token, greedy on the program's own
// logits) R times after W warm-up runs, and reports load time, prefill and
// decode tokens per second (median and min..max over the runs), time to
// first token, planned memory and peak RSS. Part of the runtime: it links no
// LLVM/MLIR, so the RSS is the runtime's own.
//
//===----------------------------------------------------------------------===//
#include "etllm/runtime/backend.h"
#include "etllm/runtime/llm/runner.h"
#include "etllm/runtime/program.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

using namespace etllm::rt;
using Clock = std::chrono::steady_clock;

namespace {

int fail(const std::string &m) {
  std::fprintf(stderr, "etllm-bench: error: %s\n", m.c_str());
  return 1;
}

double ms(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double, std::milli>(b - a).count();
}

struct Run {
  double prefillMs = 0, decodeMs = 0;
  int64_t decoded = 0;
};

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

} // namespace

int main(int argc, char **argv) {
  std::string path;
  int64_t promptTokens = 32, genTokens = 64;
  int repeat = 5, warmup = 1;
  size_t threads = std::max(1u, std::thread::hardware_concurrency());
  bool json = false;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto num = [&](int64_t &out) {
      if (i + 1 >= argc)
        return false;
      char *end;
      out = std::strtoll(argv[++i], &end, 10);
      return *end == '\0' && out >= 0;
    };
    int64_t v;
    if (a == "--prompt-tokens" && num(v) && v > 0)
      promptTokens = v;
    else if (a == "--gen-tokens" && num(v))
      genTokens = v;
    else if (a == "--threads" && num(v) && v > 0)
      threads = size_t(v);
    else if (a == "--repeat" && num(v) && v > 0)
      repeat = int(v);
    else if (a == "--warmup" && num(v))
      warmup = int(v);
    else if (a == "--json")
      json = true;
    else if (a == "-h" || a == "--help") {
      std::printf("usage: etllm-bench MODEL.pte [--prompt-tokens N] "
                  "[--gen-tokens N] [--threads N] [--repeat R] [--warmup W] "
                  "[--json]\n");
      return 0;
    } else if (a[0] != '-' && path.empty())
      path = a;
    else
      return fail("bad argument '" + a + "'");
  }
  if (path.empty())
    return fail("no program file given");

  registerBuiltinBackends();
  auto t0 = Clock::now();
  auto program = Program::load(path);
  if (!program.ok())
    return fail(program.message());
  ModuleOptions mo;
  mo.numThreads = threads;
  auto module = Module::create(*program, mo);
  if (!module.ok())
    return fail(module.message());
  auto method = (*module)->method("forward");
  if (!method.ok())
    return fail(method.message());
  double loadMs = ms(t0, Clock::now());
  Method &m = **method;
  int64_t maxSeq = m.input(0).sizes[1];
  if (promptTokens + genTokens > maxSeq)
    return fail("prompt + generated tokens (" +
                std::to_string(promptTokens + genTokens) +
                ") exceed the program's context of " + std::to_string(maxSeq));
  int64_t vocab = (*program)->metadata().vocabSize;
  if (vocab <= 0)
    vocab = m.output(0).sizes[m.output(0).rank - 1];

  auto call = [&](const std::vector<int64_t> &tokens, int64_t start) -> Status {
    int64_t n = tokens.size();
    std::vector<int64_t> pos(n);
    for (int64_t i = 0; i < n; ++i)
      pos[i] = start + i;
    int64_t ts[2] = {1, n};
    ETLLM_RETURN_IF_ERROR(m.setInput(0, DType::I64, ts, 2, tokens.data()));
    ETLLM_RETURN_IF_ERROR(m.setInput(1, DType::I64, &n, 1, pos.data()));
    return m.execute();
  };
  auto argmax = [&]() {
    const Tensor &o = m.output(0);
    const float *row = o.ptr<float>() + (o.numel() - vocab);
    return int64_t(std::max_element(row, row + vocab) - row);
  };
  std::vector<int64_t> prompt(promptTokens);
  for (int64_t i = 0; i < promptTokens; ++i)
    prompt[i] = (1 + 7 * i) % vocab;

  std::vector<Run> runs;
  for (int r = 0; r < warmup + repeat; ++r) {
    (*module)->resetState();
    Run run;
    auto a = Clock::now();
    if (Status st = call(prompt, 0); !st.ok())
      return fail(st.message());
    run.prefillMs = ms(a, Clock::now());
    int64_t next = argmax();
    auto d = Clock::now();
    for (int64_t g = 1; g < genTokens; ++g) {
      if (Status st = call({next}, promptTokens + g - 1); !st.ok())
        return fail(st.message());
      next = argmax();
      ++run.decoded;
    }
    run.decodeMs = ms(d, Clock::now());
    if (r >= warmup)
      runs.push_back(run);
  }
  std::vector<double> prefill, decode, ttft;
  for (const Run &r : runs) {
    prefill.push_back(promptTokens / (r.prefillMs / 1000.0));
    decode.push_back(r.decoded ? r.decoded / (r.decodeMs / 1000.0) : 0);
    ttft.push_back(r.prefillMs);
  }
  auto mn = [](const std::vector<double> &v) {
    return *std::min_element(v.begin(), v.end());
  };
  auto mx = [](const std::vector<double> &v) {
    return *std::max_element(v.begin(), v.end());
  };
  uint64_t rss = llm::peakRssBytes();
  size_t planned = m.plannedBytes() + (*module)->bufferBytes();
  if (json) {
    std::printf("{\"program\":\"%s\",\"file_bytes\":%zu,\"threads\":%zu,"
                "\"prompt_tokens\":%lld,\"gen_tokens\":%lld,\"runs\":%zu,"
                "\"load_ms\":%.3f,\"ttft_ms_median\":%.3f,"
                "\"prefill_tokens_per_second_median\":%.2f,"
                "\"decode_tokens_per_second_median\":%.2f,"
                "\"decode_tokens_per_second_min\":%.2f,"
                "\"decode_tokens_per_second_max\":%.2f,"
                "\"planned_bytes\":%zu,\"peak_rss_bytes\":%llu}\n",
                path.c_str(), (*program)->fileSize(), threads,
                (long long)promptTokens, (long long)genTokens, runs.size(),
                loadMs, median(ttft), median(prefill), median(decode),
                mn(decode), mx(decode), planned, (unsigned long long)rss);
  } else {
    std::printf("program      %s (%.1f MiB)\n", path.c_str(),
                (*program)->fileSize() / 1048576.0);
    std::printf("threads      %zu\n", threads);
    std::printf("load         %.2f ms\n", loadMs);
    std::printf("prefill      %lld tokens: %.1f tok/s median (%.1f .. %.1f), "
                "first token %.2f ms\n",
                (long long)promptTokens, median(prefill), mn(prefill),
                mx(prefill), median(ttft));
    std::printf("decode       %lld tokens: %.1f tok/s median (%.1f .. %.1f)\n",
                (long long)genTokens - 1, median(decode), mn(decode),
                mx(decode));
    std::printf("memory       planned %.1f MiB, peak RSS %.1f MiB\n",
                planned / 1048576.0, rss / 1048576.0);
    std::printf("runs         %zu (+%d warm-up)\n", runs.size(), warmup);
  }
  return 0;
}
