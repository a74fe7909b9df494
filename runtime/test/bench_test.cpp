//===- bench_test.cpp - etllm-bench's command line, output and probes -----===//
//
// llama-bench's flag grammar and test grid, the statistics every printer
// prints (checked against hand-computed values), the output formats parsed
// back (csv, json, jsonl, md), the bandwidth probe's contract and the decode
// traffic arithmetic.
//
//===----------------------------------------------------------------------===//
#include "etllm/runtime/bench/bandwidth.h"
#include "etllm/runtime/bench/llama_bench.h"
#include "etllm/runtime/bench/traffic.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cstdio>
#include <sstream>

using namespace etllm::rt;
using namespace etllm::rt::bench;

namespace {

Result<BenchParams> parse(std::vector<std::string> args, bool *help = nullptr) {
  std::vector<const char *> argv = {"etllm-bench"};
  for (const std::string &a : args)
    argv.push_back(a.c_str());
  bool h = false;
  auto r = parseBenchArgs(int(argv.size()), argv.data(), h);
  if (help)
    *help = h;
  return r;
}

void expectError(std::vector<std::string> args, const std::string &needle) {
  auto r = parse(args);
  ASSERT_FALSE(r.ok()) << "accepted: " << ::testing::PrintToString(args);
  EXPECT_NE(r.message().find(needle), std::string::npos)
      << "message: " << r.message();
}

TEST(BenchArgs, IntRanges) {
  EXPECT_EQ(parseIntRange("128").value(), std::vector<int>({128}));
  EXPECT_EQ(parseIntRange("1,2,4").value(), std::vector<int>({1, 2, 4}));
  EXPECT_EQ(parseIntRange("1-4").value(), std::vector<int>({1, 2, 3, 4}));
  EXPECT_EQ(parseIntRange("16-64+16").value(),
            std::vector<int>({16, 32, 48, 64}));
  EXPECT_EQ(parseIntRange("1-64*4").value(), std::vector<int>({1, 4, 16, 64}));
  EXPECT_EQ(parseIntRange("1-3,8").value(), std::vector<int>({1, 2, 3, 8}));
  EXPECT_EQ(parseIntRange("0").value(), std::vector<int>({0}));
  for (const char *bad :
       {"", "x", "1,", ",1", "1-", "1-x", "4-2+", "-1", "1+2", "1 2",
        "12345678901", "1-9*1", "0-4*2", "1-100000", "99999999"})
    EXPECT_FALSE(parseIntRange(bad).ok()) << bad;
  // A descending range is empty, as in llama-bench.
  EXPECT_TRUE(parseIntRange("4-2").value().empty());
}

TEST(BenchArgs, DefaultsAreLlamaBenchs) {
  auto p = parse({"-m", "a.pte"});
  ASSERT_TRUE(p.ok()) << p.message();
  EXPECT_EQ(p->models, std::vector<std::string>({"a.pte"}));
  EXPECT_EQ(p->nPrompt, std::vector<int>({512}));
  EXPECT_EQ(p->nGen, std::vector<int>({128}));
  EXPECT_EQ(p->nDepth, std::vector<int>({0}));
  EXPECT_EQ(p->nBatch, std::vector<int>({2048}));
  EXPECT_EQ(p->reps, 5);
  EXPECT_EQ(p->output, OutputFormat::Markdown);
  EXPECT_EQ(p->outputErr, OutputFormat::None);
  EXPECT_TRUE(p->nPg.empty());
  ASSERT_EQ(p->nThreads.size(), 1u);
  EXPECT_GE(p->nThreads[0], 1);
}

TEST(BenchArgs, ListsAccumulateAndReplaceTheDefault) {
  auto p = parse({"-m", "a.pte,b.pte", "--model",     "c.pte",
                  "-p", "32",          "--n-prompt",  "64",
                  "-n", "0",           "-t",          "1,2",
                  "-t", "4",           "-pg",         "16,8",
                  "-d", "0,128",       "-b",          "8",
                  "-r", "3",           "--delay",     "1",
                  "-o", "json",        "-oe",         "csv",
                  "-v", "--progress",  "--no_warmup", "--bandwidth-mib",
                  "64"});
  ASSERT_TRUE(p.ok()) << p.message();
  EXPECT_EQ(p->models, std::vector<std::string>({"a.pte", "b.pte", "c.pte"}));
  EXPECT_EQ(p->nPrompt, std::vector<int>({32, 64}));
  EXPECT_EQ(p->nGen, std::vector<int>({0}));
  EXPECT_EQ(p->nThreads, std::vector<int>({1, 2, 4}));
  EXPECT_EQ(p->nDepth, std::vector<int>({0, 128}));
  EXPECT_EQ(p->nBatch, std::vector<int>({8}));
  ASSERT_EQ(p->nPg.size(), 1u);
  EXPECT_EQ(p->nPg[0], std::make_pair(16, 8));
  EXPECT_EQ(p->reps, 3);
  EXPECT_EQ(p->delay, 1);
  EXPECT_EQ(p->output, OutputFormat::Json);
  EXPECT_EQ(p->outputErr, OutputFormat::Csv);
  EXPECT_TRUE(p->verbose && p->progress && p->noWarmup);
  EXPECT_EQ(p->bandwidthMiB, 64);
}

TEST(BenchArgs, PerplexityFlags) {
  auto p = parse({"-m", "a.pte", "-f", "t.txt", "-c", "128", "--chunks", "3",
                  "--tokenizer", "tok.bin"});
  ASSERT_TRUE(p.ok()) << p.message();
  EXPECT_EQ(p->perplexityFile, "t.txt");
  EXPECT_EQ(p->nCtx, 128);
  EXPECT_EQ(p->chunks, 3);
  EXPECT_EQ(p->tokenizer, "tok.bin");
}

TEST(BenchArgs, HelpStopsParsing) {
  bool help = false;
  auto p = parse({"--bogus", "-h"}, &help);
  EXPECT_FALSE(p.ok()); // --bogus comes first
  p = parse({"-h", "--bogus"}, &help);
  EXPECT_TRUE(p.ok());
  EXPECT_TRUE(help);
  EXPECT_NE(benchUsage("etllm-bench").find("-pg <pp,tg>"), std::string::npos);
}

TEST(BenchArgs, HostileArgumentsAreClearErrors) {
  expectError({}, "no program given");
  expectError({"-m"}, "-m needs a value");
  expectError({"-m", "a.pte,,b.pte"}, "empty file name");
  expectError({"a.pte"}, "programs are given with -m");
  expectError({"-m", "a.pte", "-x"}, "unknown argument '-x'");
  expectError({"-m", "a.pte", "-ngl", "99"}, "unknown argument '-ngl'");
  expectError({"-m", "a.pte", "-p", "1-"}, "-p:");
  expectError({"-m", "a.pte", "-t", "0"}, "-t: 0 is below 1");
  expectError({"-m", "a.pte", "-t", "2000"}, "too many");
  expectError({"-m", "a.pte", "-b", "0"}, "-b: 0 is below 1");
  expectError({"-m", "a.pte", "-r", "0"}, "-r: 0 is not in [1,");
  expectError({"-m", "a.pte", "-r", "five"}, "-r: 'five' is not an integer");
  expectError({"-m", "a.pte", "--delay", "-1"}, "--delay");
  expectError({"-m", "a.pte", "-o", "xml"}, "-o: 'xml' is not one of");
  expectError({"-m", "a.pte", "-pg", "16"}, "-pg: '16' is not <pp>,<tg>");
  expectError({"-m", "a.pte", "-pg", "16,8,4"}, "-pg");
  expectError({"-m", "a.pte", "-pg", "-1,8"}, "-pg");
  expectError({"-m", "a.pte", "-c", "3"}, "-c: 3 is not in [4,");
  expectError({"-m", "a.pte", "--bandwidth-mib", "-5"}, "--bandwidth-mib");
  expectError({"-m", "a.pte", "-n"}, "-n needs a value");
}

TEST(BenchTests, GridInLlamaBenchOrder) {
  auto p = parse({"-m", "a.pte,b.pte", "-p", "0,8", "-n", "4", "-pg", "8,2",
                  "-t", "1,2", "-d", "0,16"});
  ASSERT_TRUE(p.ok()) << p.message();
  std::vector<std::string> names;
  for (const TestInstance &t : testInstances(*p))
    names.push_back(t.model + " t" + std::to_string(t.nThreads) + " " +
                    t.name());
  std::vector<std::string> expected;
  for (const char *m : {"a.pte", "b.pte"})
    for (const char *t : {"t1", "t2"})
      for (const char *d : {"", " @ d16"})
        for (const char *test : {"pp8", "tg4", "pp8+tg2"})
          expected.push_back(std::string(m) + " " + t + " " + test + d);
  EXPECT_EQ(names, expected);
}

TestResult sampleResult() {
  TestResult r;
  r.inst.model = "m \"quoted\".pte";
  r.inst.nGen = 10;
  r.inst.nThreads = 2;
  r.inst.nBatch = 2048;
  r.modelType = "llama 1.0B cpu-8da4w";
  r.backends = "cpu";
  r.cpuInfo = "Some CPU, 2 cores";
  r.modelSize = 3u << 20;
  r.modelParams = 1234567;
  r.testTime = "2026-12-01T00:00:00Z";
  // 10 tokens in 1 s and in 0.5 s: 10 and 20 tok/s.
  r.samplesNs = {1000000000, 500000000};
  r.bytesPerToken = 1e8;
  r.bandwidth = 4e9;
  r.loadMs = 12.5;
  r.peakRssBytes = 5u << 20;
  return r;
}

TEST(BenchResults, StatisticsAreLlamaBenchs) {
  TestResult r = sampleResult();
  EXPECT_DOUBLE_EQ(r.avgNs(), 750000000);
  EXPECT_NEAR(r.stdevNs(), 353553390.6, 1);
  EXPECT_EQ(r.samplesTs(), std::vector<double>({10, 20}));
  EXPECT_DOUBLE_EQ(r.avgTs(), 15);
  EXPECT_NEAR(r.stdevTs(), 7.0710678, 1e-6);
  // 15 tok/s x 1e8 bytes / 4e9 bytes/s.
  EXPECT_DOUBLE_EQ(r.roofline(), 0.375);
  r.inst.nPrompt = 4; // a pp+tg test has no decode roofline
  EXPECT_EQ(r.roofline(), 0);
  EXPECT_EQ(TestResult::fields().size(), r.values().size());
}

std::string render(OutputFormat f, const std::vector<TestResult> &rs) {
  char *data = nullptr;
  size_t size = 0;
  FILE *mem = open_memstream(&data, &size);
  auto p = makePrinter(f);
  p->out = mem;
  BenchParams params = benchDefaults();
  p->header(params);
  for (const TestResult &r : rs)
    p->test(r);
  p->footer({"a note"});
  std::fclose(mem);
  std::string s(data, size);
  std::free(data);
  return s;
}

std::vector<std::string> lines(const std::string &s) {
  std::vector<std::string> out;
  std::istringstream is(s);
  std::string l;
  while (std::getline(is, l))
    out.push_back(l);
  return out;
}

TEST(BenchOutput, JsonParsesBack) {
  TestResult a = sampleResult(), b = sampleResult();
  b.inst.nGen = 0;
  b.inst.nPrompt = 64;
  b.ttftNs = {2000000, 4000000};
  auto j = nlohmann::json::parse(render(OutputFormat::Json, {a, b}));
  ASSERT_TRUE(j.is_array());
  ASSERT_EQ(j.size(), 2u);
  EXPECT_EQ(j[0]["model_filename"], a.inst.model);
  EXPECT_EQ(j[0]["n_gen"], 10);
  EXPECT_EQ(j[0]["n_threads"], 2);
  EXPECT_DOUBLE_EQ(j[0]["avg_ts"].get<double>(), 15);
  EXPECT_EQ(j[0]["samples_ns"], nlohmann::json::array({1000000000, 500000000}));
  EXPECT_EQ(j[0]["samples_ts"], nlohmann::json::array({10, 20}));
  EXPECT_DOUBLE_EQ(j[0]["roofline"].get<double>(), 0.375);
  EXPECT_DOUBLE_EQ(j[1]["ttft_ms"].get<double>(), 3);
  EXPECT_EQ(j[1]["n_prompt"], 64);
  for (const std::string &f : TestResult::fields())
    EXPECT_TRUE(j[1].contains(f)) << f;
  // jsonl: one object per line, the same values.
  std::vector<std::string> ls = lines(render(OutputFormat::Jsonl, {a, b}));
  ASSERT_EQ(ls.size(), 2u);
  auto l0 = nlohmann::json::parse(ls[0]);
  EXPECT_EQ(l0["model_type"], a.modelType);
  EXPECT_EQ(l0["samples_ts"], j[0]["samples_ts"]);
}

/// Splits one CSV line with llama-bench's quoting ("" inside quotes).
std::vector<std::string> csvFields(const std::string &line) {
  std::vector<std::string> out;
  std::string cur;
  bool quoted = false;
  for (size_t i = 0; i < line.size(); ++i) {
    char c = line[i];
    if (quoted) {
      if (c == '"' && i + 1 < line.size() && line[i + 1] == '"') {
        cur += '"';
        ++i;
      } else if (c == '"') {
        quoted = false;
      } else {
        cur += c;
      }
    } else if (c == '"') {
      quoted = true;
    } else if (c == ',') {
      out.push_back(cur);
      cur.clear();
    } else {
      cur += c;
    }
  }
  out.push_back(cur);
  return out;
}

TEST(BenchOutput, CsvParsesBack) {
  TestResult a = sampleResult();
  std::vector<std::string> ls = lines(render(OutputFormat::Csv, {a}));
  ASSERT_EQ(ls.size(), 2u);
  std::vector<std::string> head = csvFields(ls[0]), row = csvFields(ls[1]);
  ASSERT_EQ(head, TestResult::fields());
  ASSERT_EQ(row.size(), head.size());
  std::map<std::string, std::string> m;
  for (size_t i = 0; i < head.size(); ++i)
    m[head[i]] = row[i];
  EXPECT_EQ(m["model_filename"], a.inst.model); // quotes survive
  EXPECT_EQ(m["cpu_info"], a.cpuInfo);          // and commas
  EXPECT_EQ(m["n_gen"], "10");
  EXPECT_EQ(std::stod(m["avg_ts"]), 15);
  EXPECT_EQ(m["avg_ns"], "750000000");
}

TEST(BenchOutput, MarkdownHasLlamaBenchsColumns) {
  TestResult a = sampleResult(), b = sampleResult();
  b.inst.nGen = 0;
  b.inst.nPrompt = 64;
  b.inst.nDepth = 512;
  b.ttftNs = {2000000, 4000000};
  std::vector<std::string> ls = lines(render(OutputFormat::Markdown, {a, b}));
  ASSERT_GE(ls.size(), 6u);
  auto cells = [](const std::string &l) {
    std::vector<std::string> out;
    size_t b = 1;
    for (size_t e; (e = l.find(" |", b)) != std::string::npos; b = e + 2) {
      std::string c = l.substr(b, e - b);
      c.erase(0, c.find_first_not_of(' '));
      c.erase(c.find_last_not_of(' ') + 1);
      out.push_back(c);
    }
    return out;
  };
  std::vector<std::string> head = cells(ls[0]);
  EXPECT_EQ(head, std::vector<std::string>(
                      {"model", "size", "params", "backend", "threads", "test",
                       "t/s", "ttft ms", "load ms", "rss MiB", "roofline"}));
  EXPECT_EQ(ls[1].substr(0, 35), "| ------------------------------ | ");
  std::vector<std::string> r0 = cells(ls[2]), r1 = cells(ls[3]);
  ASSERT_EQ(r0.size(), head.size());
  EXPECT_EQ(r0[0], "llama 1.0B cpu-8da4w");
  EXPECT_EQ(r0[1], "3.00 MiB");
  EXPECT_EQ(r0[2], "1.23 M");
  EXPECT_EQ(r0[5], "tg10");
  EXPECT_EQ(r0[6], "15.00 ± 7.07");
  EXPECT_EQ(r0[7], "-");
  EXPECT_EQ(r0[8], "12.5");
  EXPECT_EQ(r0[9], "5.0");
  EXPECT_EQ(r0[10], "37.5%");
  EXPECT_EQ(r1[5], "pp64 @ d512");
  EXPECT_EQ(r1[7], "3.00");
  EXPECT_EQ(r1[10], "-");
  EXPECT_EQ(ls[4], "");
  EXPECT_EQ(ls[5], "a note");
  EXPECT_EQ(ls.back().rfind("build: etllm ", 0), 0u);
  // Every row has the header's width (the table lines up).
  EXPECT_EQ(ls[2].size() - 1, ls[0].size()); // "±" is two bytes
}

TEST(BenchOutput, SqlQuotes) {
  TestResult a = sampleResult();
  a.inst.model = "it's.pte";
  std::string s = render(OutputFormat::Sql, {a});
  EXPECT_NE(s.find("CREATE TABLE IF NOT EXISTS etllm_bench"),
            std::string::npos);
  EXPECT_NE(s.find("'it''s.pte'"), std::string::npos);
}

TEST(Bandwidth, ProbeContract) {
  auto r = measureReadBandwidth({1, 2}, 4u << 20, 2);
  ASSERT_TRUE(r.ok()) << r.message();
  ASSERT_EQ(r->size(), 2u);
  for (const BandwidthResult &b : *r) {
    EXPECT_EQ(b.bytes, 4u << 20);
    EXPECT_EQ(b.samples.size(), 2u);
    EXPECT_EQ(b.hugePageSamples.size(), 2u);
    EXPECT_GT(b.bestSmallPages, 0);
    EXPECT_GT(b.bestHugePages, 0);
    EXPECT_EQ(b.best, std::max(b.bestSmallPages, b.bestHugePages));
  }
  EXPECT_EQ((*r)[1].threads, 2u);
  EXPECT_FALSE(measureReadBandwidth({1}, 1000, 1).ok());
  EXPECT_FALSE(measureReadBandwidth({0}, 4u << 20, 1).ok());
  EXPECT_FALSE(measureReadBandwidth({1}, 4u << 20, 0).ok());
  EXPECT_GE(defaultProbeBytes(), std::min<size_t>(256u << 20, 1u << 30) / 4);
}

TEST(DecodeTraffic, MeanOverPositions) {
  DecodeTraffic t;
  t.weightBytes = 1000;
  t.otherBufferBytes = 10;
  t.kvBytesPerPosition = 4;
  EXPECT_EQ(t.bytesAt(0), 1014u);
  EXPECT_EQ(t.bytesAt(9), 1050u);
  // Positions 5, 6, 7 read 6, 7, 8 rows.
  EXPECT_DOUBLE_EQ(t.meanBytes(5, 3), 1010 + 4 * 7);
  EXPECT_EQ(t.meanBytes(0, 0), 0);
}

} // namespace
