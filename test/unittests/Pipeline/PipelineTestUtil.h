//===- PipelineTestUtil.h - What the pipeline tests share -------*- C++ -*-===//
//
// Generated checkpoints removed when a test ends, a checkpoint exported
// into program bytes through a recipe, the stage-by-stage comparison with
// the exported graph that the architecture tests run, and the small
// helpers of the tests that run programs (a file written, a Runner with
// stories260K's tokenizer, recipe names as test names).
//
//===----------------------------------------------------------------------===//
#ifndef ETLLM_TEST_PIPELINE_PIPELINETESTUTIL_H
#define ETLLM_TEST_PIPELINE_PIPELINETESTUTIL_H

#include "etllm/Pipeline/Pipelines.h"
#include "etllm/Pipeline/Tester.h"
#include "etllm/Testing/Generator.h"
#include "etllm/runtime/llm/runner.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <string>

namespace etllm::test {

/// Writes `bytes` to the file `path`; returns `path`.
std::string writeBytes(const std::string &path, const std::string &bytes);

/// A Runner of the program at `path` with stories260K's tokenizer
/// (tok512.bin of the shared test data); null and a test failure on an
/// error.
std::unique_ptr<rt::llm::Runner>
loadWithStoriesTokenizer(const std::string &path);

/// A recipe parameter as a test name ("cpu-fp32" -> "cpu_fp32").
std::string recipeTestName(const ::testing::TestParamInfo<const char *> &info);

/// Removes a file or directory when the test ends.
struct RemoveOnExit {
  std::string path;
  ~RemoveOnExit();
};

/// Generates the checkpoint `o` describes at `o.output` (replacing what was
/// there); a failure fails the test and returns false.
bool generate(const formats::GeneratorOptions &o);

/// How exportBytes exports.
struct ExportForTest {
  std::string recipe = "portable";
  int64_t maxSeqLen = 128;
  bool lastLogitsOnly = false;
  /// The serializer's hasher (next to the producers) and its threads.
  bool hashInputs = false;
  unsigned threads = 0;
  /// A tokenizer file to embed ("": none).
  std::string tokenizer;
  /// Recorded as the program's pipeline ("": none).
  std::string pipelineName;
  /// Static-shape methods (RecipeOptions::staticPrefillChunk; 0: none; they
  /// need every position's logits: lastLogitsOnly false, the default).
  int64_t staticPrefillChunk = 0;
  StaticKvCache staticKvCache = StaticKvCache::Io;
  /// Ring KV caches (RecipeOptions::kvRingChunk, attentionSinks; 0: none).
  int64_t kvRingChunk = 0, attentionSinks = 0;
};

/// `checkpoint` through import, the recipe's stages and the serializer:
/// the program's bytes ("" and a test failure on an error).
std::string exportBytes(const std::string &checkpoint, const ExportForTest &o);

/// Runs every stage of `recipe` on `checkpoint` (max_seq_len 32), each
/// stage's program compared with the exported graph within atol/rtol;
/// returns the Tester for the caller's checks of the final IR.
std::unique_ptr<Tester> stagesAgreeWithImport(const std::string &checkpoint,
                                              const std::string &recipe,
                                              const RecipeOptions &options,
                                              double atol, double rtol);

} // namespace etllm::test

#endif // ETLLM_TEST_PIPELINE_PIPELINETESTUTIL_H
