//===- etllm-bench.cpp - Speed, memory and quality of programs ------------===//
//
//   etllm-bench -m MODEL.pte[,MODEL2.pte] [-p N] [-n N] [-pg PP,TG] [-d N]
//               [-b N] [-t N,M] [-r N] [--delay S] [-o md|csv|json|jsonl|sql]
//               [--bandwidth-mib N] [--no-warmup] [--progress] [--profile] [-v]
//   etllm-bench -m MODEL.pte -f TEXT [-c N] [--chunks N] [-t N]
//
// Speaks llama.cpp's llama-bench (flags, tests, timing, output layouts; see
// etllm/runtime/bench/llama_bench.h), and adds what llama-bench does not
// report: load time, time to first token, peak RSS, and from the same run a
// memory-read bandwidth probe and the decode roofline ratio (tok/s x bytes a
// decode step reads, derived from the program, / measured bandwidth). With
// -f it computes the perplexity of a text with llama-perplexity's definition
// instead. Part of the runtime: it links no LLVM/MLIR, so the RSS is the
// runtime's own.
//
//===----------------------------------------------------------------------===//
#include "image_encode.h"

#include "etllm/runtime/backend.h"
#include "etllm/runtime/bench/bandwidth.h"
#include "etllm/runtime/bench/llama_bench.h"
#include "etllm/runtime/bench/traffic.h"
#include "etllm/runtime/llm/method_names.h"
#include "etllm/runtime/llm/perplexity.h"
#include "etllm/runtime/llm/runner.h"
#include "etllm/runtime/llm/static_methods.h"
#include "etllm/runtime/lora.h"
#include "etllm/runtime/profile.h"
#include "etllm/runtime/program.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

using namespace etllm::rt;
using namespace etllm::rt::bench;
using Clock = std::chrono::steady_clock;

namespace {

int fail(const std::string &m) {
  std::fprintf(stderr, "etllm-bench: error: %s\n", m.c_str());
  return 1;
}

double msSince(Clock::time_point t) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t).count();
}
uint64_t nsSince(Clock::time_point t) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - t)
      .count();
}

/// The CPU's name, as llama-bench's cpu_info shows it.
std::string cpuInfo() {
  std::ifstream f("/proc/cpuinfo");
  std::string line;
  while (std::getline(f, line))
    if (line.rfind("model name", 0) == 0) {
      size_t c = line.find(':');
      if (c != std::string::npos) {
        size_t b = line.find_first_not_of(" \t", c + 1);
        return b == std::string::npos ? "" : line.substr(b);
      }
    }
  return "unknown";
}

/// Peak RSS since the last resetPeakRss() (Linux VmHWM), else the
/// process's.
uint64_t peakRss() {
  std::ifstream f("/proc/self/status");
  std::string line;
  while (std::getline(f, line))
    if (line.rfind("VmHWM:", 0) == 0)
      return std::strtoull(line.c_str() + 6, nullptr, 10) * 1024;
  return llm::peakRssBytes();
}
void resetPeakRss() {
  std::ofstream f("/proc/self/clear_refs");
  if (f)
    f << "5";
}

/// Matrices of a dense decoder from the model config (the "params" column;
/// norms and biases are below its two decimals).
uint64_t paramsFromConfig(const std::string &json) {
  auto j = nlohmann::json::parse(json, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object())
    return 0;
  auto get = [&](const char *k) -> int64_t {
    auto it = j.find(k);
    return it != j.end() && it->is_number_integer() ? it->get<int64_t>() : 0;
  };
  int64_t v = get("vocab_size"), h = get("hidden_size"),
          l = get("num_hidden_layers"), nh = get("num_attention_heads"),
          nkv = get("num_key_value_heads"), hd = get("head_dim"),
          f = get("intermediate_size");
  if (hd == 0 && nh > 0)
    hd = h / nh;
  if (nkv == 0)
    nkv = nh;
  bool tied = j.value("tie_word_embeddings", false);
  int64_t perLayer = h * hd * (nh + 2 * nkv) + nh * hd * h + 3 * h * f;
  int64_t n = v * h * (tied ? 1 : 2) + l * perLayer;
  return n > 0 ? uint64_t(n) : 0;
}

/// "llama 1.0B cpu-8da4w": like llama-bench's "llama 1B Q4_0".
std::string modelType(const Program &p, uint64_t params) {
  auto j = nlohmann::json::parse(p.metadata().modelConfigJson, nullptr, false);
  std::string arch = j.is_object() ? j.value("model_type", "") : "";
  if (arch.empty())
    arch = "?";
  char size[32];
  if (params >= 1000000000ull)
    std::snprintf(size, sizeof size, "%.1fB", params / 1e9);
  else if (params >= 1000000ull)
    std::snprintf(size, sizeof size, "%.0fM", params / 1e6);
  else
    std::snprintf(size, sizeof size, "%.0fK", params / 1e3);
  std::string recipe =
      p.metadata().pipeline.empty() ? std::string("?") : p.metadata().pipeline;
  return arch + " " + size + " " + recipe;
}

struct LoadedModel {
  std::string path;
  std::shared_ptr<Program> program;
  double programLoadMs = 0;
  std::string type, backends;
  uint64_t params = 0;
  int64_t maxSeq = 0, vocab = 0;
  int64_t bos = -1;
};

Result<LoadedModel> loadModel(const std::string &path) {
  LoadedModel m;
  m.path = path;
  auto t0 = Clock::now();
  auto program = Program::load(path);
  if (!program.ok())
    return program.error();
  m.programLoadMs = msSince(t0);
  m.program = *program;
  const ProgramMetadata &md = m.program->metadata();
  m.params = paramsFromConfig(md.modelConfigJson);
  m.type = modelType(*m.program, m.params);
  std::vector<std::string> ids = delegateBackends(*m.program);
  for (const std::string &id : ids)
    m.backends += (m.backends.empty() ? "" : ",") + id;
  if (m.backends.empty())
    m.backends = "portable";
  m.bos = md.bosId;
  return m;
}

/// A Module of a loaded model with its `forward` checked, or a static
/// program's `prefill` and `decode` (then `forward` is null).
struct Instance {
  std::unique_ptr<Module> module;
  Method *forward = nullptr;
  std::unique_ptr<llm::StaticMethods> statics;
  double createMs = 0;
  DecodeTraffic traffic;
};

std::string mib(double bytes) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.1f MiB", bytes / 1048576.0);
  return buf;
}

/// Applies the --lora adapters to a module and measures switching: the
/// mean time of removing and re-applying all of them (what changing
/// adapters between requests costs; the base is never reloaded).
Status applyLoras(Module &module, const LoadedModel &m,
                  const std::vector<std::pair<std::string, double>> &loras,
                  bool report) {
  if (loras.empty())
    return Status();
  std::vector<std::shared_ptr<const LoraAdapter>> adapters;
  auto t0 = Clock::now();
  for (const auto &[path, scale] : loras) {
    auto a = LoraAdapter::load(path, *m.program);
    if (!a.ok())
      return a.error();
    adapters.push_back(*a);
  }
  double loadMs = msSince(t0);
  for (size_t i = 0; i < adapters.size(); ++i)
    ETLLM_RETURN_IF_ERROR(module.applyLora(adapters[i], loras[i].second));
  constexpr int kSwitches = 20;
  t0 = Clock::now();
  for (int k = 0; k < kSwitches; ++k) {
    for (const auto &a : adapters)
      ETLLM_RETURN_IF_ERROR(module.removeLora(*a));
    for (size_t i = 0; i < adapters.size(); ++i)
      ETLLM_RETURN_IF_ERROR(module.applyLora(adapters[i], loras[i].second));
  }
  double switchMs = msSince(t0) / kSwitches;
  if (report) {
    size_t bytes = 0, targets = 0;
    for (const auto &a : adapters) {
      bytes += a->sizeBytes();
      targets += a->targets().size();
    }
    std::fprintf(stderr,
                 "etllm-bench: --lora: %zu adapter(s), %zu targets, %s, "
                 "loaded in %.3f ms; switch (remove + apply all) %.4f ms "
                 "(mean of %d)\n",
                 adapters.size(), targets, mib(double(bytes)).c_str(), loadMs,
                 switchMs, kSwitches);
  }
  return Status();
}

Result<Instance>
instantiate(const LoadedModel &m, size_t threads, uint64_t maxMemory,
            const std::vector<std::pair<std::string, double>> &loras = {}) {
  Instance in;
  auto t0 = Clock::now();
  ModuleOptions mo;
  mo.numThreads = threads;
  mo.maxMemory = maxMemory; // --max-memory, checked before any allocation
  auto module = Module::create(m.program, mo);
  if (!module.ok())
    return module.error();
  in.module = std::move(module.value());
  auto statics = llm::StaticMethods::open(*in.module, m.program->name(),
                                          m.program->metadata().contextLimit());
  if (!statics.ok())
    return statics.error();
  in.statics = std::move(statics.value());
  if (!in.statics) {
    auto method = in.module->method(llm::kForwardMethod);
    if (!method.ok())
      return method.error();
    in.forward = *method;
  }
  in.createMs = msSince(t0);
  ETLLM_RETURN_IF_ERROR(applyLoras(*in.module, m, loras, true));
  if (in.forward) {
    const Method &f = *in.forward;
    if (f.numInputs() != 2 || f.numOutputs() != 1 ||
        f.input(0).dtype != DType::I64 || f.input(0).rank != 2 ||
        f.input(1).dtype != DType::I64 || f.input(1).rank != 1 ||
        f.output(0).dtype != DType::F32 || f.output(0).rank < 1)
      return Error(m.program->name() +
                   ": `forward` is not forward(tokens: i64 [1, seq], "
                   "input_pos: i64 [seq]) -> f32 logits");
  }
  // A decode step of a static program is its `decode`; with
  // static_kv_cache: io its caches are inputs, not buffers the analysis
  // finds: their bytes per position are added (a step attends to the
  // positions before it either way; the copies of the whole caches in and
  // of the new entries out are the io form's own cost, not in the model).
  auto traffic = analyzeDecodeTraffic(
      *in.module, in.forward ? llm::kForwardMethod : llm::kDecodeMethod);
  if (!traffic.ok())
    return traffic.error();
  in.traffic = *traffic;
  if (in.statics)
    in.traffic.kvBytesPerPosition += in.statics->cacheBytesPerPosition();
  return in;
}

int runPerplexity(const BenchParams &params) {
  if (params.profile)
    return fail("--profile: profiles the speed tests; perplexity (-f) has "
                "none");
  if (params.output != OutputFormat::Markdown &&
      params.output != OutputFormat::Json &&
      params.output != OutputFormat::Jsonl &&
      params.output != OutputFormat::None)
    return fail("-o " + std::string(outputFormatName(params.output)) +
                ": perplexity prints md, json or jsonl");
  std::ifstream f(params.perplexityFile, std::ios::binary);
  if (!f)
    return fail(params.perplexityFile + ": cannot open");
  std::stringstream ss;
  ss << f.rdbuf();
  std::string text = ss.str();
  if (text.empty())
    return fail(params.perplexityFile + ": the file is empty");
  nlohmann::json all = nlohmann::json::array();
  for (const std::string &path : params.models) {
    auto m = loadModel(path);
    if (!m.ok())
      return fail(m.message());
    auto in = instantiate(*m, size_t(params.nThreads.front()), params.maxMemory,
                          params.loras);
    if (!in.ok())
      return fail(in.message());
    if (!in->forward)
      return fail(path + ": perplexity (-f) takes a program with `forward`; "
                         "this one is a static program (prefill and decode)");
    Result<std::unique_ptr<Tokenizer>> tok =
        params.tokenizer.empty() ? llm::tokenizerForProgram(*m->program)
                                 : loadTokenizer(params.tokenizer);
    if (!tok.ok())
      return fail(tok.message());
    auto tokens = (*tok)->encodeOrdinary(text, /*addBos=*/true);
    if (!tokens.ok())
      return fail(params.perplexityFile + ": " + tokens.message());
    int32_t bos = (*tok)->bosId();
    llm::PerplexityOptions po;
    po.contextLength = params.nCtx;
    po.maxChunks = params.chunks;
    po.bosId =
        !tokens->empty() && bos >= 0 && tokens->front() == bos ? bos : -1;
    bool md = params.output == OutputFormat::Markdown;
    int64_t nChunk = int64_t(tokens->size()) / params.nCtx;
    if (params.chunks >= 0)
      nChunk = std::min(nChunk, params.chunks);
    if (md)
      std::printf("perplexity: %s: %zu tokens, calculating perplexity over "
                  "%lld chunks, n_ctx=%lld\n",
                  path.c_str(), tokens->size(), (long long)nChunk,
                  (long long)params.nCtx);
    auto r = llm::evaluatePerplexity(
        *in->module, *in->forward, *tokens, po, [&](int64_t i, double ppl) {
          if (md) {
            std::printf("[%lld]%.4lf,", (long long)(i + 1), ppl);
            std::fflush(stdout);
          }
        });
    if (!r.ok())
      return fail(path + ": " + r.message());
    if (md)
      std::printf("\nFinal estimate: PPL = %.4lf +/- %.5lf\n", r->ppl,
                  r->pplUncertainty);
    nlohmann::json j;
    j["model_filename"] = path;
    j["model_type"] = m->type;
    j["n_ctx"] = params.nCtx;
    j["n_chunks"] = r->chunks;
    j["n_tokens"] = r->inputTokens;
    j["n_scored"] = r->scoredTokens;
    j["n_threads"] = params.nThreads.front();
    j["add_bos"] = po.bosId >= 0;
    j["all_position_logits"] = r->allPositionLogits;
    j["ppl"] = r->ppl;
    j["ppl_uncertainty"] = r->pplUncertainty;
    j["mean_nll"] = r->meanNll;
    j["seconds"] = r->seconds;
    j["running_ppl"] = r->runningPpl;
    all.push_back(j);
  }
  if (params.output == OutputFormat::Json)
    std::printf("%s\n", all.dump(2).c_str());
  else if (params.output == OutputFormat::Jsonl)
    for (const auto &j : all)
      std::printf("%s\n", j.dump().c_str());
  return 0;
}

} // namespace

namespace {

using Counters = std::vector<std::pair<std::string, uint64_t>>;

uint64_t counterOf(const Counters &c, const char *name) {
  for (const auto &kv : c)
    if (kv.first == name)
      return kv.second;
  return 0;
}

bool hasCounter(const Counters &c, const char *name) {
  for (const auto &kv : c)
    if (kv.first == name)
      return true;
  return false;
}

/// What the delegates that count their work (the vulkan backend) did in a
/// generation test: per decoded token (the last call), per decoder layer,
/// and what changed during the timed runs (command-buffer recordings and
/// descriptor-set writes must not: a decode step replays). Deterministic:
/// counted, not timed.
void printDelegateCounters(const Module &mod,
                           const std::vector<Counters> &before,
                           const std::string &test, int tokens, int reps) {
  for (size_t i = 0; i < mod.numDelegates(); ++i) {
    Counters now = mod.delegateCounters(i);
    if (now.empty() || !hasCounter(now, "dispatches"))
      continue;
    const Counters &was = i < before.size() ? before[i] : Counters();
    const uint64_t layers = counterOf(now, "layers");
    std::string perLayer;
    if (layers > 0 && hasCounter(now, "layer_dispatches_min")) {
      auto range = [&](const char *lo, const char *hi) {
        uint64_t a = counterOf(now, lo), b = counterOf(now, hi);
        return a == b ? std::to_string(a)
                      : std::to_string(a) + ".." + std::to_string(b);
      };
      perLayer = " (" + range("layer_dispatches_min", "layer_dispatches_max") +
                 " dispatches and " +
                 range("layer_barriers_min", "layer_barriers_max") +
                 " barriers per layer over " + std::to_string(layers) +
                 " layers, " +
                 std::to_string(counterOf(now, "dispatches_outside_layers")) +
                 " dispatches outside them)";
    }
    const double weights = double(counterOf(now, "weight_bytes"));
    const double moved = double(counterOf(now, "device_bytes"));
    std::fprintf(
        stderr,
        "etllm-bench: delegate %zu (%s), %s: per decoded token %llu "
        "dispatches and %llu barriers%s; in the %d timed tokens x %d runs "
        "%llu command-buffer recordings and %llu descriptor-set writes (in "
        "all: %llu recordings, one per sequence bucket, and %llu descriptor "
        "sets written at load); device memory traffic %.3f MiB per token "
        "(weights in device memory %.3f MiB: %.2fx), %llu bytes between "
        "host and arena\n",
        i, mod.delegateBackend(i).c_str(), test.c_str(),
        (unsigned long long)counterOf(now, "dispatches"),
        (unsigned long long)counterOf(now, "barriers"), perLayer.c_str(),
        tokens, reps,
        (unsigned long long)(counterOf(now, "recordings") -
                             counterOf(was, "recordings")),
        (unsigned long long)(counterOf(now, "descriptor_writes") -
                             counterOf(was, "descriptor_writes")),
        (unsigned long long)counterOf(now, "recordings"),
        (unsigned long long)counterOf(now, "descriptor_writes"),
        moved / 1048576.0, weights / 1048576.0,
        weights > 0 ? moved / weights : 0.0,
        (unsigned long long)counterOf(now, "host_bytes"));
  }
}

} // namespace

int main(int argc, char **argv) {
  bool help = false;
  auto parsed = parseBenchArgs(argc, argv, help);
  if (help) {
    std::fputs(benchUsage(argv[0]).c_str(), stdout);
    return 0;
  }
  if (!parsed.ok())
    return fail(parsed.message());
  const BenchParams &params = *parsed;
  registerBuiltinBackends();
  if (!params.perplexityFile.empty())
    return runPerplexity(params);
  if (params.imageEncode) {
    auto rc = runImageEncode(params);
    return rc.ok() ? *rc : fail(rc.message());
  }

  std::vector<TestInstance> tests = testInstances(params);
  if (tests.empty())
    return fail("no tests: every -p, -n and -pg value is 0");

  // Every program loads and holds every test it is given (one clear error
  // before anything is measured or printed).
  for (const std::string &path : params.models) {
    auto m = loadModel(path);
    if (!m.ok())
      return fail(m.message());
    // A static program's context is its max_seq_len (StaticMethods checks
    // the rest when it is instantiated).
    const bool isStatic = llm::StaticMethods::inProgram(*m->program);
    auto context =
        isStatic ? Result<int64_t>(m->program->metadata().contextLimit())
                 : forwardContextLength(*m->program);
    if (!context.ok())
      return fail(context.message());
    int64_t ctx = *context;
    for (const TestInstance &t : tests)
      if (t.model == path && int64_t(t.nDepth) + t.nPrompt + t.nGen > ctx)
        return fail(path + ": test " + t.name() + " needs " +
                    std::to_string(int64_t(t.nDepth) + t.nPrompt + t.nGen) +
                    " positions, more than the program's context of " +
                    std::to_string(ctx) +
                    " (export with --set model.max_seq_len=N)");
  }

  // The bandwidth probe, before any model is loaded (its buffer is gone
  // before peak RSS is measured).
  std::vector<size_t> threadCounts;
  for (int t : params.nThreads)
    if (std::find(threadCounts.begin(), threadCounts.end(), size_t(t)) ==
        threadCounts.end())
      threadCounts.push_back(size_t(t));
  std::vector<BandwidthResult> bandwidth;
  std::vector<std::string> notes;
  if (params.bandwidthMiB != 0) {
    size_t bytes = params.bandwidthMiB < 0 ? defaultProbeBytes()
                                           : size_t(params.bandwidthMiB) << 20;
    auto bw = measureReadBandwidth(threadCounts, bytes);
    if (!bw.ok())
      return fail(bw.message());
    bandwidth = *bw;
    std::string note = "memory read bandwidth (" + std::to_string(bytes >> 20) +
                       " MiB buffer, best of " +
                       std::to_string(bandwidth.front().samples.size()) +
                       ", 4 KiB / huge pages):";
    for (const BandwidthResult &b : bandwidth) {
      char buf[128];
      std::snprintf(buf, sizeof buf, " %zu thread%s %.2f / %.2f GB/s;",
                    b.threads, b.threads == 1 ? "" : "s",
                    b.bestSmallPages / 1e9, b.bestHugePages / 1e9);
      note += buf;
    }
    note.pop_back();
    notes.push_back(note);
    if (params.verbose)
      std::fprintf(stderr, "etllm-bench: %s\n", note.c_str());
  }
  auto bandwidthAt = [&](int threads) {
    for (const BandwidthResult &b : bandwidth)
      if (b.threads == size_t(threads))
        return b.best;
    return 0.0;
  };

  std::unique_ptr<Printer> out = makePrinter(params.output);
  std::unique_ptr<Printer> err = makePrinter(params.outputErr);
  if (out) {
    out->out = stdout;
    out->header(params);
  }
  if (err) {
    err->out = stderr;
    err->header(params);
  }

  std::string cpu = cpuInfo();
  std::mt19937 rng(1234);
  std::unique_ptr<LoadedModel> model;
  std::unique_ptr<Instance> inst;
  int instThreads = 0;
  std::vector<int64_t> scratch, posScratch;
  size_t index = 0;
  for (const TestInstance &t : tests) {
    ++index;
    if (params.progress)
      std::fprintf(stderr, "etllm-bench: benchmark %zu/%zu: starting\n", index,
                   tests.size());
    if (!model || model->path != t.model) {
      inst.reset();
      model.reset();
      resetPeakRss();
      auto m = loadModel(t.model);
      if (!m.ok())
        return fail(m.message());
      model = std::make_unique<LoadedModel>(std::move(m.value()));
      instThreads = 0;
    }
    if (!inst || instThreads != t.nThreads) {
      inst.reset();
      auto in = instantiate(*model, size_t(t.nThreads), params.maxMemory,
                            params.loras);
      if (!in.ok())
        return fail(in.message());
      inst = std::make_unique<Instance>(std::move(in.value()));
      instThreads = t.nThreads;
      const DecodeTraffic &tr = inst->traffic;
      std::string note = t.model + ": a decode step reads " +
                         mib(double(tr.weightBytes)) + " of constants (of " +
                         mib(double(tr.constantBytes)) + ") + " +
                         std::to_string(tr.kvBytesPerPosition) +
                         " bytes of KV cache per position";
      if (std::find(notes.begin(), notes.end(), note) == notes.end())
        notes.push_back(note);
      if (params.verbose)
        std::fprintf(stderr, "etllm-bench: %s\n", note.c_str());
    }
    Method *f = inst->forward;
    llm::StaticMethods *statics = inst->statics.get();
    Module &mod = *inst->module;
    int64_t vocab = f ? f->output(0).dim(-1) : statics->vocab();
    // A static program's calls: the tokens of a prompt in its padded chunks,
    // a generated token by `decode` (StaticMethods::forward).
    auto runStatic = [&](int64_t start) -> Status {
      auto logits = statics->forward(scratch, start);
      return logits.ok() ? Status() : Status(logits.error());
    };
    std::uniform_int_distribution<int64_t> randomToken(0, vocab - 1);
    int64_t bos = model->bos >= 0 && model->bos < vocab ? model->bos : -1;
    // llama-bench's test_prompt: BOS first (when the model has one), then
    // random tokens, in batches of n_batch.
    // Ring caches take at most their chunk of tokens a call.
    const int64_t ringChunk = inst->module->program().metadata().ringChunk;
    const int batch =
        ringChunk > 0 ? int(std::min<int64_t>(t.nBatch, ringChunk)) : t.nBatch;
    auto runPrompt = [&](int n, int64_t start) -> Status {
      for (int done = 0; done < n;) {
        int count = std::min(n - done, batch);
        scratch.resize(count);
        posScratch.resize(count);
        for (int i = 0; i < count; ++i) {
          scratch[i] = done == 0 && i == 0 && bos >= 0 ? bos : randomToken(rng);
          posScratch[i] = start + done + i;
        }
        if (statics) {
          ETLLM_RETURN_IF_ERROR(runStatic(start + done));
          done += count;
          continue;
        }
        int64_t sizes[2] = {1, count};
        int64_t n64 = count;
        ETLLM_RETURN_IF_ERROR(
            f->setInput(0, DType::I64, sizes, 2, scratch.data()));
        ETLLM_RETURN_IF_ERROR(
            f->setInput(1, DType::I64, &n64, 1, posScratch.data()));
        ETLLM_RETURN_IF_ERROR(f->execute());
        done += count;
      }
      return Status();
    };
    // llama-bench's test_gen: one token per call, BOS first.
    auto runGen = [&](int n, int64_t start) -> Status {
      int64_t token = bos >= 0 ? bos : randomToken(rng);
      int64_t one = 1, sizes[2] = {1, 1};
      for (int i = 0; i < n; ++i) {
        int64_t pos = start + i;
        if (statics) {
          scratch.assign(1, token);
          ETLLM_RETURN_IF_ERROR(runStatic(pos));
        } else {
          ETLLM_RETURN_IF_ERROR(f->setInput(0, DType::I64, sizes, 2, &token));
          ETLLM_RETURN_IF_ERROR(f->setInput(1, DType::I64, &one, 1, &pos));
          ETLLM_RETURN_IF_ERROR(f->execute());
        }
        token = randomToken(rng);
      }
      return Status();
    };
    auto check = [&](Status st) {
      if (!st.ok())
        std::exit(fail(t.model + ": " + t.name() + ": " + st.message()));
    };

    TestResult r;
    r.inst = t;
    r.cpuInfo = cpu;
    r.backends = model->backends;
    r.modelType = model->type;
    r.modelSize = inst->traffic.constantBytes;
    r.modelParams = model->params;
    r.fileSize = model->program->fileSize();
    r.loadMs = model->programLoadMs + inst->createMs;
    r.plannedBytes =
        (f ? f->plannedBytes() : statics->plannedBytes()) + mod.bufferBytes();
    if (t.nGen > 0)
      r.bytesPerToken =
          inst->traffic.meanBytes(int64_t(t.nDepth) + t.nPrompt, t.nGen);
    r.bandwidth = bandwidthAt(t.nThreads);
    {
      char buf[64];
      std::time_t now = std::time(nullptr);
      std::strftime(buf, sizeof buf, "%FT%TZ", std::gmtime(&now));
      r.testTime = buf;
    }
    if (params.delay > 0)
      std::this_thread::sleep_for(std::chrono::seconds(params.delay));
    // A new conversation: the Module's buffers and a static program's
    // caches.
    auto resetState = [&] {
      mod.resetState();
      if (statics)
        statics->reset();
    };
    if (!params.noWarmup) {
      resetState();
      if (t.nPrompt > 0) {
        if (params.progress)
          std::fprintf(stderr,
                       "etllm-bench: benchmark %zu/%zu: warmup prompt run\n",
                       index, tests.size());
        check(runPrompt(t.nPrompt, 0));
      }
      if (t.nGen > 0) {
        if (params.progress)
          std::fprintf(stderr,
                       "etllm-bench: benchmark %zu/%zu: warmup generation "
                       "run\n",
                       index, tests.size());
        check(runGen(1, t.nPrompt));
      }
    }
    OpProfile profile;
    std::vector<Counters> countersBefore;
    for (size_t i = 0; i < mod.numDelegates(); ++i)
      countersBefore.push_back(mod.delegateCounters(i));
    for (int rep = 0; rep < params.reps; ++rep) {
      resetState();
      if (t.nDepth > 0) {
        if (params.progress)
          std::fprintf(stderr,
                       "etllm-bench: benchmark %zu/%zu: depth run %d/%d\n",
                       index, tests.size(), rep + 1, params.reps);
        check(runPrompt(t.nDepth, 0));
      }
      // The timed runs only (not the depth's prompt).
      if (params.profile)
        mod.context().setProfile(&profile);
      auto t0 = Clock::now();
      if (t.nPrompt > 0) {
        if (params.progress)
          std::fprintf(stderr,
                       "etllm-bench: benchmark %zu/%zu: prompt run %d/%d\n",
                       index, tests.size(), rep + 1, params.reps);
        check(runPrompt(t.nPrompt, t.nDepth));
        r.ttftNs.push_back(nsSince(t0));
      }
      if (t.nGen > 0) {
        if (params.progress)
          std::fprintf(stderr,
                       "etllm-bench: benchmark %zu/%zu: generation run "
                       "%d/%d\n",
                       index, tests.size(), rep + 1, params.reps);
        check(runGen(t.nGen, int64_t(t.nDepth) + t.nPrompt));
      }
      r.samplesNs.push_back(nsSince(t0));
      mod.context().setProfile(nullptr);
    }
    if (params.profile)
      std::fprintf(stderr,
                   "\netllm-bench: profile of %s, %s, %d thread%s: %llu "
                   "executions in %d runs\n%s\n",
                   t.model.c_str(), t.name().c_str(), t.nThreads,
                   t.nThreads == 1 ? "" : "s",
                   static_cast<unsigned long long>(profile.executions()),
                   params.reps, profile.table().c_str());
    if (t.nGen > 0 && t.nPrompt == 0)
      printDelegateCounters(mod, countersBefore, t.name(), t.nGen, params.reps);
    r.peakRssBytes = peakRss();
    if (out)
      out->test(r);
    if (err)
      err->test(r);
  }
  if (out)
    out->footer(notes);
  if (err)
    err->footer(notes);
  return 0;
}
