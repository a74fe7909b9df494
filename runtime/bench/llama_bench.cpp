//===- llama_bench.cpp - llama-bench's command line and output ------------===//
#include "etllm/runtime/bench/llama_bench.h"
#include "etllm/runtime/flags.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <numeric>
#include <sstream>
#include <thread>

#ifndef ETLLM_BENCH_VERSION
#define ETLLM_BENCH_VERSION "unknown"
#endif

namespace etllm::rt::bench {

const char *outputFormatName(OutputFormat f) {
  switch (f) {
  case OutputFormat::None:
    return "none";
  case OutputFormat::Csv:
    return "csv";
  case OutputFormat::Json:
    return "json";
  case OutputFormat::Jsonl:
    return "jsonl";
  case OutputFormat::Markdown:
    return "md";
  case OutputFormat::Sql:
    return "sql";
  }
  return "?";
}

bool parseOutputFormat(const std::string &s, OutputFormat &out) {
  for (OutputFormat f :
       {OutputFormat::None, OutputFormat::Csv, OutputFormat::Json,
        OutputFormat::Jsonl, OutputFormat::Markdown, OutputFormat::Sql})
    if (s == outputFormatName(f)) {
      out = f;
      return true;
    }
  return false;
}

namespace {

/// A non-negative decimal integer of at most 9 digits at s[i..]; advances i.
bool parseNumber(const std::string &s, size_t &i, long long &out) {
  size_t b = i;
  out = 0;
  while (i < s.size() && s[i] >= '0' && s[i] <= '9' && i - b < 10)
    out = out * 10 + (s[i++] - '0');
  return i > b && i - b <= 9;
}

std::vector<std::string> split(const std::string &s, char delim) {
  std::vector<std::string> out;
  std::string cur;
  std::istringstream is(s);
  while (std::getline(is, cur, delim))
    out.push_back(cur);
  if (!s.empty() && s.back() == delim)
    out.push_back("");
  return out;
}

// Generous upper bounds: a flag from the command line is hostile input.
constexpr long long kMaxValue = 1 << 24;
constexpr size_t kMaxListValues = 4096;

} // namespace

Result<std::vector<int>> parseIntRange(const std::string &s) {
  std::vector<int> result;
  if (s.empty())
    return Error("empty list");
  size_t i = 0;
  while (i < s.size()) {
    long long first, last, step = 1;
    char op = '+';
    if (!parseNumber(s, i, first))
      return Error("'" + s + "' is not a list of first[-last[(+|*)step]]");
    last = first;
    if (i < s.size() && s[i] == '-') {
      ++i;
      if (!parseNumber(s, i, last))
        return Error("'" + s + "' is not a list of first[-last[(+|*)step]]");
      if (i < s.size() && (s[i] == '+' || s[i] == '*')) {
        op = s[i++];
        if (!parseNumber(s, i, step))
          return Error("'" + s + "' is not a list of first[-last[(+|*)step]]");
      }
    }
    if (i < s.size()) {
      if (s[i] != ',' || i + 1 == s.size())
        return Error("'" + s + "' is not a list of first[-last[(+|*)step]]");
      ++i;
    }
    if (first > kMaxValue || last > kMaxValue)
      return Error("'" + s + "': values are at most " +
                   std::to_string(kMaxValue));
    for (long long v = first; v <= last;) {
      if (result.size() >= kMaxListValues)
        return Error("'" + s + "' has more than " +
                     std::to_string(kMaxListValues) + " values");
      result.push_back(int(v));
      long long next = op == '+' ? v + step : v * step;
      if (next <= v)
        return Error("'" + s + "': the range does not advance");
      v = next;
    }
  }
  return result;
}

const BenchParams &benchDefaults() {
  static const BenchParams d = [] {
    BenchParams p;
    p.nPrompt = {512};
    p.nGen = {128};
    p.nDepth = {0};
    p.nBatch = {2048};
    p.nThreads = {int(std::max(1u, std::thread::hardware_concurrency()))};
    return p;
  }();
  return d;
}

std::string benchUsage(const char *argv0) {
  const BenchParams &d = benchDefaults();
  std::ostringstream os;
  os << "usage: " << argv0 << " [options]\n\n"
     << "Measures etllm programs (.pte) the way llama.cpp's llama-bench "
        "measures GGUF models:\nthe same flags, tests and output formats "
        "(docs/Performance.md).\n\n"
     << "options:\n"
     << "  -h, --help\n"
     << "  -r, --repetitions <n>                 number of times to repeat "
        "each test (default: "
     << d.reps << ")\n"
     << "  --delay <0...N> (seconds)             delay between each test "
        "(default: 0)\n"
     << "  -o, --output <csv|json|jsonl|md|sql>  output format printed to "
        "stdout (default: md)\n"
     << "  -oe, --output-err <csv|json|jsonl|md|sql>  output format printed "
        "to stderr (default: none)\n"
     << "  -v, --verbose                         verbose output\n"
     << "  --progress                            print test progress "
        "indicators\n"
     << "  --no-warmup                           skip warmup runs before "
        "benchmarking\n"
     << "  --bandwidth-mib <n>                   memory read probe buffer "
        "(default: 16 x LLC, >= 256; 0: no probe)\n"
     << "  --max-memory <size>                   refuse a program that plans "
        "more (bytes, 512M, 2G; default: physical memory)\n"
     << "  --lora <file>[:<scale>]               apply a LoRA adapter file "
        "(repeatable; prints the time to switch adapters; default: none)\n"
     << "  --profile                             print each test's time per "
        "operator to stderr (markdown)\n"
     << "\ntest parameters:\n"
     << "  -m, --model <filename>                a program file (.pte)\n"
     << "  -p, --n-prompt <n>                    (default: 512)\n"
     << "  -n, --n-gen <n>                       (default: 128)\n"
     << "  -pg <pp,tg>                           (default: none)\n"
     << "  -d, --n-depth <n>                     (default: 0)\n"
     << "  -b, --batch-size <n>                  (default: 2048)\n"
     << "  -t, --threads <n>                     (default: " << d.nThreads[0]
     << ")\n"
     << "\nperplexity (llama-perplexity's definition):\n"
     << "  -f, --file <text file>                compute the perplexity of "
        "this text instead\n"
     << "  -c, --ctx-size <n>                    window length (default: "
        "512)\n"
     << "  --chunks <n>                          at most n windows (default: "
        "all)\n"
     << "  --tokenizer <file>                    tokenizer to use instead of "
        "the program's\n"
     << "\nimages (a composite model's program, e.g. LLaVA's):\n"
     << "  --image-encode                        time vision_encoder on one "
        "image per run\n"
     << "                                        (the threads of -t, -r runs)"
        "\n"
     << "\nMultiple values can be given for each parameter by separating "
        "them with ','\nor by specifying the parameter multiple times. "
        "Ranges can be given as\n'first-last' or 'first-last+step' or "
        "'first-last*mult'.\n";
  return os.str();
}

Result<BenchParams> parseBenchArgs(int argc, const char *const *argv,
                                   bool &help) {
  BenchParams p;
  p.nPrompt.clear();
  p.nGen.clear();
  p.nDepth.clear();
  p.nBatch.clear();
  p.nThreads.clear();
  help = false;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg.rfind("--", 0) == 0)
      std::replace(arg.begin(), arg.end(), '_', '-');
    auto value = [&]() -> Result<std::string> {
      if (i + 1 >= argc)
        return Error(arg + " needs a value");
      return std::string(argv[++i]);
    };
    auto list = [&](std::vector<int> &out, int min) -> Status {
      auto v = value();
      if (!v.ok())
        return v.error();
      auto r = parseIntRange(*v);
      if (!r.ok())
        return Error(arg + ": " + r.message());
      for (int x : *r)
        if (x < min)
          return Error(arg + ": " + std::to_string(x) + " is below " +
                       std::to_string(min));
      out.insert(out.end(), r->begin(), r->end());
      return Status();
    };
    auto integer = [&](long long min, long long max) -> Result<long long> {
      auto v = value();
      if (!v.ok())
        return v.error();
      size_t k = 0;
      long long x;
      bool neg = !v->empty() && (*v)[0] == '-';
      if (neg)
        k = 1;
      if (!parseNumber(*v, k, x) || k != v->size())
        return Error(arg + ": '" + *v + "' is not an integer");
      if (neg)
        x = -x;
      if (x < min || x > max)
        return Error(arg + ": " + *v + " is not in [" + std::to_string(min) +
                     ", " + std::to_string(max) + "]");
      return x;
    };
    Status st;
    if (arg == "-h" || arg == "--help") {
      help = true;
      return p;
    } else if (arg == "-m" || arg == "--model") {
      auto v = value();
      if (!v.ok())
        return v.error();
      for (const std::string &m : split(*v, ','))
        if (m.empty())
          return Error(arg + ": empty file name in '" + *v + "'");
        else
          p.models.push_back(m);
    } else if (arg == "-p" || arg == "--n-prompt") {
      st = list(p.nPrompt, 0);
    } else if (arg == "-n" || arg == "--n-gen") {
      st = list(p.nGen, 0);
    } else if (arg == "-pg") {
      auto v = value();
      if (!v.ok())
        return v.error();
      std::vector<std::string> parts = split(*v, ',');
      size_t k0 = 0, k1 = 0;
      long long a, b;
      if (parts.size() != 2 || !parseNumber(parts[0], k0, a) ||
          k0 != parts[0].size() || !parseNumber(parts[1], k1, b) ||
          k1 != parts[1].size() || a > kMaxValue || b > kMaxValue)
        return Error("-pg: '" + *v + "' is not <pp>,<tg>");
      p.nPg.push_back({int(a), int(b)});
    } else if (arg == "-d" || arg == "--n-depth") {
      st = list(p.nDepth, 0);
    } else if (arg == "-b" || arg == "--batch-size") {
      st = list(p.nBatch, 1);
    } else if (arg == "-t" || arg == "--threads") {
      st = list(p.nThreads, 1);
      for (int t : p.nThreads)
        if (t > 1024)
          return Error(arg + ": " + std::to_string(t) + " threads is too many");
    } else if (arg == "-r" || arg == "--repetitions") {
      auto v = integer(1, 1000000);
      if (!v.ok())
        return v.error();
      p.reps = int(*v);
    } else if (arg == "--delay") {
      auto v = integer(0, 86400);
      if (!v.ok())
        return v.error();
      p.delay = int(*v);
    } else if (arg == "-o" || arg == "--output" || arg == "-oe" ||
               arg == "--output-err") {
      auto v = value();
      if (!v.ok())
        return v.error();
      OutputFormat &f =
          arg == "-o" || arg == "--output" ? p.output : p.outputErr;
      if (!parseOutputFormat(*v, f))
        return Error(arg + ": '" + *v +
                     "' is not one of none, csv, json, jsonl, md, sql");
    } else if (arg == "-v" || arg == "--verbose") {
      p.verbose = true;
    } else if (arg == "--progress") {
      p.progress = true;
    } else if (arg == "--no-warmup") {
      p.noWarmup = true;
    } else if (arg == "--profile") {
      p.profile = true;
    } else if (arg == "--image-encode") {
      p.imageEncode = true;
    } else if (arg == "--bandwidth-mib") {
      auto v = integer(0, 1 << 20);
      if (!v.ok())
        return v.error();
      p.bandwidthMiB = *v;
    } else if (arg == "-f" || arg == "--file") {
      auto v = value();
      if (!v.ok())
        return v.error();
      p.perplexityFile = *v;
    } else if (arg == "-c" || arg == "--ctx-size") {
      auto v = integer(4, kMaxValue);
      if (!v.ok())
        return v.error();
      p.nCtx = *v;
    } else if (arg == "--chunks") {
      auto v = integer(-1, kMaxValue);
      if (!v.ok())
        return v.error();
      p.chunks = *v;
    } else if (arg == "--tokenizer") {
      auto v = value();
      if (!v.ok())
        return v.error();
      p.tokenizer = *v;
    } else if (arg == "--max-memory") {
      // The runtime's one flag parser (flags.h).
      Result<uint64_t> bytes =
          parseByteSize(arg, i + 1 < argc ? argv[++i] : nullptr);
      if (!bytes.ok())
        return bytes.error();
      if (*bytes == 0)
        return Error("--max-memory: 0 is out of range (at least 1 byte)");
      p.maxMemory = *bytes;
    } else if (arg == "--lora") {
      auto v = value();
      if (!v.ok())
        return v.error();
      auto spec = parsePathAndScale("--lora", *v);
      if (!spec.ok())
        return spec.error();
      p.loras.push_back(*spec);
    } else if (!arg.empty() && arg[0] == '-') {
      return Error("unknown argument '" + arg + "' (see --help)");
    } else {
      return Error("unexpected argument '" + arg +
                   "': programs are given with -m");
    }
    if (!st.ok())
      return Error(st.message());
  }
  const BenchParams &d = benchDefaults();
  if (p.nPrompt.empty())
    p.nPrompt = d.nPrompt;
  if (p.nGen.empty())
    p.nGen = d.nGen;
  if (p.nDepth.empty())
    p.nDepth = d.nDepth;
  if (p.nBatch.empty())
    p.nBatch = d.nBatch;
  if (p.nThreads.empty())
    p.nThreads = d.nThreads;
  if (p.models.empty())
    return Error("no program given (-m FILE.pte)");
  return p;
}

std::string TestInstance::name() const {
  std::string s;
  if (nPrompt > 0 && nGen == 0)
    s = "pp" + std::to_string(nPrompt);
  else if (nGen > 0 && nPrompt == 0)
    s = "tg" + std::to_string(nGen);
  else
    s = "pp" + std::to_string(nPrompt) + "+tg" + std::to_string(nGen);
  if (nDepth > 0)
    s += " @ d" + std::to_string(nDepth);
  return s;
}

std::vector<TestInstance> testInstances(const BenchParams &p) {
  std::vector<TestInstance> out;
  for (const std::string &m : p.models)
    for (int nb : p.nBatch)
      for (int nt : p.nThreads)
        for (int nd : p.nDepth) {
          TestInstance base;
          base.model = m;
          base.nBatch = nb;
          base.nThreads = nt;
          base.nDepth = nd;
          for (int n : p.nPrompt)
            if (n > 0) {
              TestInstance t = base;
              t.nPrompt = n;
              out.push_back(t);
            }
          for (int n : p.nGen)
            if (n > 0) {
              TestInstance t = base;
              t.nGen = n;
              out.push_back(t);
            }
          for (auto [pp, tg] : p.nPg)
            if (pp > 0 || tg > 0) {
              TestInstance t = base;
              t.nPrompt = pp;
              t.nGen = tg;
              out.push_back(t);
            }
        }
  return out;
}

//===----------------------------------------------------------------------===//
// Results
//===----------------------------------------------------------------------===//

namespace {
template <typename T> double mean(const std::vector<T> &v) {
  if (v.empty())
    return 0;
  double s = 0;
  for (T x : v)
    s += double(x);
  return s / double(v.size());
}
// llama-bench's sample standard deviation.
template <typename T> double stdev(const std::vector<T> &v) {
  if (v.size() <= 1)
    return 0;
  double m = mean(v), sq = 0;
  for (T x : v)
    sq += double(x) * double(x);
  double n = double(v.size());
  double var = sq / (n - 1) - m * m * n / (n - 1);
  return var > 0 ? std::sqrt(var) : 0;
}
} // namespace

double sampleMean(const std::vector<double> &v) { return mean(v); }
double sampleStdev(const std::vector<double> &v) { return stdev(v); }

double TestResult::avgNs() const { return mean(samplesNs); }
double TestResult::stdevNs() const { return stdev(samplesNs); }
std::vector<double> TestResult::samplesTs() const {
  std::vector<double> ts;
  int n = inst.nPrompt + inst.nGen;
  for (uint64_t ns : samplesNs)
    ts.push_back(ns ? 1e9 * n / double(ns) : 0);
  return ts;
}
double TestResult::avgTs() const { return mean(samplesTs()); }
double TestResult::stdevTs() const { return stdev(samplesTs()); }
double TestResult::avgTtftMs() const { return mean(ttftNs) / 1e6; }
double TestResult::roofline() const {
  if (inst.nPrompt != 0 || inst.nGen == 0 || bandwidth <= 0)
    return 0;
  return avgTs() * bytesPerToken / bandwidth;
}

namespace {
enum class FieldType { String, Bool, Int, Float };

FieldType fieldType(const std::string &f) {
  static const char *ints[] = {"build_number", "model_size", "model_n_params",
                               "n_batch",      "n_threads",  "n_prompt",
                               "n_gen",        "n_depth",    "avg_ns",
                               "stddev_ns",    "file_size",  "peak_rss_bytes",
                               "planned_bytes"};
  static const char *floats[] = {"avg_ts",          "stddev_ts",
                                 "load_ms",         "ttft_ms",
                                 "bytes_per_token", "bandwidth_bytes_per_s",
                                 "roofline"};
  for (const char *s : ints)
    if (f == s)
      return FieldType::Int;
  for (const char *s : floats)
    if (f == s)
      return FieldType::Float;
  return FieldType::String;
}

std::string u64(double v) { return std::to_string(uint64_t(std::llround(v))); }

std::string join(const std::vector<std::string> &v, const std::string &d) {
  std::string s;
  for (size_t i = 0; i < v.size(); ++i)
    s += (i ? d : "") + v[i];
  return s;
}
} // namespace

const std::vector<std::string> &TestResult::fields() {
  // llama-bench's fields that apply, in its order, then etllm's.
  static const std::vector<std::string> f = {
      "build_commit",    "build_number",
      "cpu_info",        "gpu_info",
      "backends",        "model_filename",
      "model_type",      "model_size",
      "model_n_params",  "n_batch",
      "n_threads",       "n_prompt",
      "n_gen",           "n_depth",
      "test_time",       "avg_ns",
      "stddev_ns",       "avg_ts",
      "stddev_ts",       "file_size",
      "load_ms",         "ttft_ms",
      "peak_rss_bytes",  "planned_bytes",
      "bytes_per_token", "bandwidth_bytes_per_s",
      "roofline"};
  return f;
}

std::vector<std::string> TestResult::values() const {
  return {ETLLM_BENCH_VERSION,
          "0",
          cpuInfo,
          "",
          backends,
          inst.model,
          modelType,
          std::to_string(modelSize),
          std::to_string(modelParams),
          std::to_string(inst.nBatch),
          std::to_string(inst.nThreads),
          std::to_string(inst.nPrompt),
          std::to_string(inst.nGen),
          std::to_string(inst.nDepth),
          testTime,
          u64(avgNs()),
          u64(stdevNs()),
          std::to_string(avgTs()),
          std::to_string(stdevTs()),
          std::to_string(fileSize),
          std::to_string(loadMs),
          std::to_string(avgTtftMs()),
          std::to_string(peakRssBytes),
          std::to_string(plannedBytes),
          std::to_string(bytesPerToken),
          std::to_string(bandwidth),
          std::to_string(roofline())};
}

//===----------------------------------------------------------------------===//
// Printers (llama-bench's csv_printer, json_printer, jsonl_printer,
// markdown_printer, sql_printer)
//===----------------------------------------------------------------------===//

Printer::~Printer() = default;

namespace {

std::string escapeCsv(const std::string &s) {
  std::string e = "\"";
  for (char c : s) {
    if (c == '"')
      e += '"';
    e += c;
  }
  return e + "\"";
}

std::string escapeJson(const std::string &s) {
  std::string e;
  for (char c : s) {
    if (c == '"')
      e += "\\\"";
    else if (c == '\\')
      e += "\\\\";
    else if (static_cast<unsigned char>(c) <= 0x1f) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", c);
      e += buf;
    } else
      e += c;
  }
  return e;
}

std::string jsonValue(const std::string &field, const std::string &v) {
  switch (fieldType(field)) {
  case FieldType::String:
    return "\"" + escapeJson(v) + "\"";
  case FieldType::Bool:
    return v == "0" ? "false" : "true";
  default:
    return v;
  }
}

// Like llama-bench's join(): operator<< formatting.
template <typename T> std::string joinNums(const std::vector<T> &v) {
  std::ostringstream os;
  for (size_t i = 0; i < v.size(); ++i)
    os << (i ? ", " : "") << v[i];
  return os.str();
}

class CsvPrinter : public Printer {
public:
  void header(const BenchParams &) override {
    std::fprintf(out, "%s\n", join(TestResult::fields(), ",").c_str());
  }
  void test(const TestResult &t) override {
    std::vector<std::string> v = t.values();
    for (std::string &s : v)
      s = escapeCsv(s);
    std::fprintf(out, "%s\n", join(v, ",").c_str());
  }
};

class JsonPrinter : public Printer {
public:
  void header(const BenchParams &) override { std::fprintf(out, "[\n"); }
  void test(const TestResult &t) override {
    std::fprintf(out, first ? "" : ",\n");
    first = false;
    std::fprintf(out, "  {\n");
    const auto &f = TestResult::fields();
    std::vector<std::string> v = t.values();
    for (size_t i = 0; i < f.size(); ++i)
      std::fprintf(out, "    \"%s\": %s,\n", f[i].c_str(),
                   jsonValue(f[i], v[i]).c_str());
    std::fprintf(out, "    \"samples_ns\": [ %s ],\n",
                 joinNums(t.samplesNs).c_str());
    std::fprintf(out, "    \"samples_ts\": [ %s ]\n",
                 joinNums(t.samplesTs()).c_str());
    std::fprintf(out, "  }");
    std::fflush(out);
  }
  void footer(const std::vector<std::string> &) override {
    std::fprintf(out, "\n]\n");
  }

private:
  bool first = true;
};

class JsonlPrinter : public Printer {
public:
  void test(const TestResult &t) override {
    std::fprintf(out, "{");
    const auto &f = TestResult::fields();
    std::vector<std::string> v = t.values();
    for (size_t i = 0; i < f.size(); ++i)
      std::fprintf(out, "\"%s\": %s, ", f[i].c_str(),
                   jsonValue(f[i], v[i]).c_str());
    std::fprintf(out, "\"samples_ns\": [ %s ],", joinNums(t.samplesNs).c_str());
    std::fprintf(out, "\"samples_ts\": [ %s ]",
                 joinNums(t.samplesTs()).c_str());
    std::fprintf(out, "}\n");
    std::fflush(out);
  }
};

class MarkdownPrinter : public Printer {
public:
  void header(const BenchParams &params) override {
    fields = {"model", "size", "params", "backend", "threads"};
    if (params.nBatch.size() > 1 || params.nBatch != benchDefaults().nBatch)
      fields.push_back("n_batch");
    fields.insert(fields.end(),
                  {"test", "t/s", "ttft ms", "load ms", "rss MiB", "roofline"});
    std::fprintf(out, "|");
    for (const std::string &f : fields)
      std::fprintf(out, " %*s |", width(f), f.c_str());
    std::fprintf(out, "\n|");
    for (const std::string &f : fields) {
      int w = width(f);
      std::fprintf(out, " %s%s |", std::string(std::abs(w) - 1, '-').c_str(),
                   w > 0 ? ":" : "-");
    }
    std::fprintf(out, "\n");
  }
  void test(const TestResult &t) override {
    std::fprintf(out, "|");
    for (const std::string &f : fields) {
      char buf[128];
      std::string v;
      if (f == "model") {
        v = t.modelType;
      } else if (f == "size") {
        if (t.modelSize < (uint64_t(1) << 30))
          std::snprintf(buf, sizeof buf, "%.2f MiB", t.modelSize / 1048576.0);
        else
          std::snprintf(buf, sizeof buf, "%.2f GiB",
                        t.modelSize / 1073741824.0);
        v = buf;
      } else if (f == "params") {
        if (t.modelParams < 1000000000ull)
          std::snprintf(buf, sizeof buf, "%.2f M", t.modelParams / 1e6);
        else
          std::snprintf(buf, sizeof buf, "%.2f B", t.modelParams / 1e9);
        v = buf;
      } else if (f == "backend") {
        v = t.backends;
      } else if (f == "threads") {
        v = std::to_string(t.inst.nThreads);
      } else if (f == "n_batch") {
        v = std::to_string(t.inst.nBatch);
      } else if (f == "test") {
        v = t.inst.name();
      } else if (f == "t/s") {
        std::snprintf(buf, sizeof buf, "%.2f ± %.2f", t.avgTs(), t.stdevTs());
        v = buf;
      } else if (f == "ttft ms") {
        if (t.ttftNs.empty())
          v = "-";
        else {
          std::snprintf(buf, sizeof buf, "%.2f", t.avgTtftMs());
          v = buf;
        }
      } else if (f == "load ms") {
        std::snprintf(buf, sizeof buf, "%.1f", t.loadMs);
        v = buf;
      } else if (f == "rss MiB") {
        std::snprintf(buf, sizeof buf, "%.1f", t.peakRssBytes / 1048576.0);
        v = buf;
      } else if (f == "roofline") {
        if (t.roofline() <= 0)
          v = "-";
        else {
          std::snprintf(buf, sizeof buf, "%.1f%%", 100 * t.roofline());
          v = buf;
        }
      }
      int w = width(f);
      if (f == "t/s")
        w += 1; // llama-bench's hack: "±" is two bytes
      std::fprintf(out, " %*s |", w, v.c_str());
    }
    std::fprintf(out, "\n");
    std::fflush(out);
  }
  void footer(const std::vector<std::string> &notes) override {
    std::fprintf(out, "\n");
    for (const std::string &n : notes)
      std::fprintf(out, "%s\n", n.c_str());
    std::fprintf(out, "build: etllm %s\n", ETLLM_BENCH_VERSION);
  }

private:
  static int width(const std::string &f) {
    if (f == "model")
      return -30;
    if (f == "t/s")
      return 20;
    if (f == "size" || f == "params")
      return 10;
    if (f == "threads" || f == "n_batch")
      return 7;
    if (f == "test")
      return 15;
    if (f == "backend")
      return -10;
    return std::max<int>(f.size(), 10);
  }
  std::vector<std::string> fields;
};

class SqlPrinter : public Printer {
public:
  void header(const BenchParams &) override {
    const auto &f = TestResult::fields();
    std::fprintf(out, "CREATE TABLE IF NOT EXISTS etllm_bench (\n");
    for (size_t i = 0; i < f.size(); ++i) {
      const char *type = "TEXT";
      switch (fieldType(f[i])) {
      case FieldType::Int:
      case FieldType::Bool:
        type = "INTEGER";
        break;
      case FieldType::Float:
        type = "REAL";
        break;
      default:
        break;
      }
      std::fprintf(out, "  %s %s%s\n", f[i].c_str(), type,
                   i + 1 < f.size() ? "," : "");
    }
    std::fprintf(out, ");\n\n");
  }
  void test(const TestResult &t) override {
    std::fprintf(out, "INSERT INTO etllm_bench (%s) VALUES (",
                 join(TestResult::fields(), ", ").c_str());
    std::vector<std::string> v = t.values();
    for (size_t i = 0; i < v.size(); ++i) {
      std::string q;
      for (char c : v[i])
        q += c == '\'' ? std::string("''") : std::string(1, c);
      std::fprintf(out, "'%s'%s", q.c_str(), i + 1 < v.size() ? ", " : "");
    }
    std::fprintf(out, ");\n");
  }
};

} // namespace

std::unique_ptr<Printer> makePrinter(OutputFormat format) {
  switch (format) {
  case OutputFormat::None:
    return nullptr;
  case OutputFormat::Csv:
    return std::make_unique<CsvPrinter>();
  case OutputFormat::Json:
    return std::make_unique<JsonPrinter>();
  case OutputFormat::Jsonl:
    return std::make_unique<JsonlPrinter>();
  case OutputFormat::Markdown:
    return std::make_unique<MarkdownPrinter>();
  case OutputFormat::Sql:
    return std::make_unique<SqlPrinter>();
  }
  return nullptr;
}

} // namespace etllm::rt::bench
