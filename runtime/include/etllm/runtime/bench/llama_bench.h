//===- llama_bench.h - llama-bench's command line and output ----*- C++ -*-===//
//
// etllm-bench speaks llama-bench (llama.cpp tools/llama-bench/llama-bench.cpp,
// release v0.5.0): the same flags, the same test instances (pp<N>, tg<N>,
// pp<N>+tg<M>, "@ d<D>"), the same timing (a test's time runs from its first
// token to its last; t/s = (n_prompt + n_gen) / time, mean and standard
// deviation over the repetitions) and the same md / csv / json / jsonl / sql
// layouts, so the two tools' outputs read side by side. The fields llama-bench
// has no counterpart for (GPU layers, split modes, KV types, ...) are left
// out; etllm adds its own after llama-bench's (docs/Performance.md lists
// them).
//
//===----------------------------------------------------------------------===//
#ifndef ETLLM_RUNTIME_BENCH_LLAMA_BENCH_H
#define ETLLM_RUNTIME_BENCH_LLAMA_BENCH_H

#include "etllm/runtime/result.h"

#include <cstdint>
#include <cstdio>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace etllm::rt::bench {

enum class OutputFormat { None, Csv, Json, Jsonl, Markdown, Sql };

/// "none", "csv", "json", "jsonl", "md", "sql".
const char *outputFormatName(OutputFormat f);
bool parseOutputFormat(const std::string &s, OutputFormat &out);

/// llama-bench's integer lists: "first[-last[(+|*)step]]" separated by ','.
Result<std::vector<int>> parseIntRange(const std::string &s);

struct BenchParams {
  std::vector<std::string> models;
  std::vector<int> nPrompt, nGen, nDepth, nBatch, nThreads;
  std::vector<std::pair<int, int>> nPg;
  int reps = 5;
  int delay = 0;
  bool verbose = false, progress = false, noWarmup = false;
  OutputFormat output = OutputFormat::Markdown;
  OutputFormat outputErr = OutputFormat::None;
  // etllm additions.
  /// Bandwidth probe buffer in MiB (-1: automatic; 0: no probe).
  int64_t bandwidthMiB = -1;
  /// Perplexity mode: the text file (llama-perplexity -f), window (-c),
  /// maximum windows (--chunks), a tokenizer to use instead of the program's.
  std::string perplexityFile;
  int64_t nCtx = 512;
  int64_t chunks = -1;
  std::string tokenizer;
  /// --max-memory: the memory budget of each Module (ModuleOptions::
  /// maxMemory); 0 = the machine's physical memory.
  uint64_t maxMemory = 0;
  /// --lora FILE[:SCALE] (repeatable): LoRA adapter files applied to every
  /// Module (lora.h), for the decode overhead of adapters at run time.
  std::vector<std::pair<std::string, double>> loras;
  /// --profile: each test's time per operator over its timed runs
  /// (profile.h), printed to stderr after the test.
  bool profile = false;
  /// --image-encode: time a composite model's vision_encoder on one image
  /// per run instead of the text tests.
  bool imageEncode = false;
};

/// The defaults (llama-bench's: -p 512 -n 128 -b 2048 -r 5 -t <cores>).
const BenchParams &benchDefaults();

/// The mean of `v` (0 when empty) and llama-bench's sample standard
/// deviation (0 for fewer than two), as the tables report them.
double sampleMean(const std::vector<double> &v);
double sampleStdev(const std::vector<double> &v);

/// Parses argv; the lists left empty get their defaults. Errors name the
/// flag. `help` is set for -h/--help (nothing else is checked then).
Result<BenchParams> parseBenchArgs(int argc, const char *const *argv,
                                   bool &help);
/// The usage text.
std::string benchUsage(const char *argv0);

/// One test of one model (an instance of the parameter grid).
struct TestInstance {
  std::string model;
  int nPrompt = 0, nGen = 0, nDepth = 0, nBatch = 0, nThreads = 0;
  /// "pp512", "tg128", "pp512+tg128", with " @ d<D>" when nDepth > 0.
  std::string name() const;
};

/// The grid in llama-bench's order: per model, n_batch, threads and depth,
/// then the pp tests, the tg tests and the pp+tg tests.
std::vector<TestInstance> testInstances(const BenchParams &params);

/// One finished test: what every printer prints.
struct TestResult {
  TestInstance inst;
  std::string cpuInfo, backends, modelType, testTime;
  uint64_t modelSize = 0, modelParams = 0, fileSize = 0;
  std::vector<uint64_t> samplesNs;
  /// Per repetition: nanoseconds from the start to the prompt's logits
  /// (tests with a prompt).
  std::vector<uint64_t> ttftNs;
  double loadMs = 0;
  uint64_t peakRssBytes = 0, plannedBytes = 0;
  /// Mean bytes a decode step of this test reads (tg tests; else 0).
  double bytesPerToken = 0;
  /// The probe's bandwidth at this test's thread count (0: not measured).
  double bandwidth = 0;

  double avgNs() const;
  double stdevNs() const;
  std::vector<double> samplesTs() const;
  double avgTs() const;
  double stdevTs() const;
  /// tok/s x bytes per token / bandwidth (0 when not applicable).
  double roofline() const;
  double avgTtftMs() const;

  static const std::vector<std::string> &fields();
  std::vector<std::string> values() const;
};

class Printer {
public:
  virtual ~Printer();
  FILE *out = stdout;
  virtual void header(const BenchParams &params) {}
  virtual void test(const TestResult &t) = 0;
  /// `footer` lines are printed by the markdown printer only.
  virtual void footer(const std::vector<std::string> &notes) {}
};

/// A printer for `format` (null for None).
std::unique_ptr<Printer> makePrinter(OutputFormat format);

} // namespace etllm::rt::bench

#endif // ETLLM_RUNTIME_BENCH_LLAMA_BENCH_H
