//===- image_encode.cpp - etllm-bench --image-encode ----------------------===//
//
// The time a composite model's program (LLaVA's) takes to encode one image:
// its `vision_encoder` method on random pixels of the program's image size
// (the encoder's cost does not depend on the values), -r timed runs after a
// warmup, for each program and thread count. What a user waits for before
// the image's first token is this plus the image's prefill (etllm-run
// --stats-json reports both).
//
//===----------------------------------------------------------------------===//
#include "image_encode.h"

#include "etllm/runtime/llm/method_names.h"
#include "etllm/runtime/llm/vision_methods.h"
#include "etllm/runtime/program.h"

#include <nlohmann/json.hpp>

#include <chrono>
#include <cstdio>
#include <random>

namespace etllm::rt::bench {

namespace {

struct Sample {
  std::string model;
  int threads = 0;
  int64_t imageSize = 0, tokens = 0;
  std::vector<double> ms;
  double mean() const { return sampleMean(ms); }
  double stdev() const { return sampleStdev(ms); }
};

} // namespace

Result<int> runImageEncode(const BenchParams &params) {
  if (params.output != OutputFormat::Markdown &&
      params.output != OutputFormat::Jsonl &&
      params.output != OutputFormat::Json)
    return Error(std::string("-o ") + outputFormatName(params.output) +
                 ": --image-encode prints md, json or jsonl");
  std::vector<Sample> samples;
  for (const std::string &path : params.models) {
    auto program = Program::load(path);
    if (!program.ok())
      return program.error();
    for (int threads : params.nThreads) {
      ModuleOptions mo;
      mo.numThreads = size_t(threads);
      mo.maxMemory = params.maxMemory;
      auto module = Module::create(*program, mo);
      if (!module.ok())
        return module.error();
      auto forward = (*module)->method(llm::kForwardMethod);
      if (!forward.ok())
        return forward.error();
      auto vision = llm::VisionMethods::open(
          **module, path, (*forward)->output(0).dim(-1));
      if (!vision.ok())
        return vision.error();
      if (!*vision)
        return llm::noVisionEncoder(path, "--image-encode: ");
      auto encoder = (*module)->method(llm::kVisionEncoderMethod);
      if (!encoder.ok())
        return encoder.error();
      Method &e = **encoder;
      const int64_t s = (*vision)->imageSize();
      std::vector<float> pixels(size_t(3 * s * s));
      std::mt19937 rng(1234);
      std::normal_distribution<float> normal;
      for (float &p : pixels)
        p = normal(rng);
      const int64_t sizes[4] = {1, 3, s, s};
      auto once = [&]() -> Result<double> {
        auto t0 = std::chrono::steady_clock::now();
        ETLLM_RETURN_IF_ERROR(
            e.setInput(0, DType::F32, sizes, 4, pixels.data()));
        ETLLM_RETURN_IF_ERROR(e.execute());
        return std::chrono::duration<double, std::milli>(
                   std::chrono::steady_clock::now() - t0)
            .count();
      };
      if (!params.noWarmup)
        if (auto w = once(); !w.ok())
          return w.error();
      Sample sample;
      sample.model = path;
      sample.threads = threads;
      sample.imageSize = s;
      sample.tokens = (*vision)->imageSeqLen();
      for (int r = 0; r < params.reps; ++r) {
        auto ms = once();
        if (!ms.ok())
          return ms.error();
        sample.ms.push_back(*ms);
      }
      samples.push_back(std::move(sample));
    }
  }
  if (params.output == OutputFormat::Markdown) {
    std::printf("| model | threads | image | features | encode ms | "
                "images/s |\n| --- | ---: | ---: | ---: | ---: | ---: |\n");
    for (const Sample &x : samples)
      std::printf("| %s | %d | %lld x %lld | %lld | %.2f ± %.2f | %.2f |\n",
                  x.model.c_str(), x.threads, (long long)x.imageSize,
                  (long long)x.imageSize, (long long)x.tokens, x.mean(),
                  x.stdev(), x.mean() > 0 ? 1000.0 / x.mean() : 0.0);
    return 0;
  }
  nlohmann::json all = nlohmann::json::array();
  for (const Sample &x : samples) {
    nlohmann::json j = {{"model_filename", x.model},
                        {"test", "image_encode"},
                        {"n_threads", x.threads},
                        {"image_size", x.imageSize},
                        {"image_tokens", x.tokens},
                        {"avg_ms", x.mean()},
                        {"stddev_ms", x.stdev()},
                        {"samples_ms", x.ms}};
    if (params.output == OutputFormat::Jsonl)
      std::printf("%s\n", j.dump().c_str());
    else
      all.push_back(j);
  }
  if (params.output == OutputFormat::Json)
    std::printf("%s\n", all.dump(2).c_str());
  return 0;
}

} // namespace etllm::rt::bench
