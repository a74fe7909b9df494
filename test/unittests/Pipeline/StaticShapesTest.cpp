//===- StaticShapesTest.cpp - Static programs generate what dynamic ones do
//===//
//
// stories260K exported with static-shape methods (prefill over 16 tokens,
// decode over one; the KV caches as the methods' inputs and outputs, or as
// the program's buffers) prints the same greedy bytes as the dynamic
// program for prompts shorter than a chunk, of one chunk, one past it and
// of several chunks, through the portable and the CPU recipes; a chat's
// second turn (the cached prefix kept) too.
//
//===----------------------------------------------------------------------===//
#include "PipelineTestUtil.h"
#include "etllm/Pipeline/Tester.h"
#include "etllm/runtime/llm/runner.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include <unistd.h>

namespace {

namespace llm = etllm::rt::llm;
using etllm::test::loadWithStoriesTokenizer;
using etllm::test::writeBytes;

std::string shared() { return ETLLM_SHARED_DIR; }

struct Programs {
  std::string dir;
  std::string dynamic, staticIo, staticInPlace;
  ~Programs() {
    std::error_code ec;
    std::filesystem::remove_all(dir, ec);
  }
};

/// The three programs of `recipe`, with a context of 128 tokens.
void exportAll(const std::string &recipe, Programs &p) {
  p.dir = testing::TempDir() + "/etllm_static_" + std::to_string(getpid()) +
          "_" + recipe;
  std::filesystem::create_directories(p.dir);
  std::string model = shared() + "/models/stories260K/stories260K.bin";
  etllm::test::ExportForTest o;
  o.recipe = recipe;
  o.maxSeqLen = 128;
  std::string bytes = etllm::test::exportBytes(model, o);
  ASSERT_FALSE(bytes.empty());
  p.dynamic = writeBytes(p.dir + "/dynamic.pte", bytes);
  o.staticPrefillChunk = 16;
  bytes = etllm::test::exportBytes(model, o);
  ASSERT_FALSE(bytes.empty());
  p.staticIo = writeBytes(p.dir + "/io.pte", bytes);
  o.staticKvCache = etllm::StaticKvCache::InPlace;
  bytes = etllm::test::exportBytes(model, o);
  ASSERT_FALSE(bytes.empty());
  p.staticInPlace = writeBytes(p.dir + "/inplace.pte", bytes);
}

/// Greedy text after `prompt` (token ids), then after a second turn that
/// keeps the first turn's tokens and adds `more`.
std::string greedy(llm::Runner &r, const std::vector<int32_t> &prompt,
                   const std::vector<int32_t> &more) {
  llm::GenerationConfig c;
  c.maxNewTokens = 20;
  c.sampling.temperature = 0;
  std::string text;
  auto onText = [&](const std::string &s) { text += s; };
  r.resetCache();
  auto first = r.continueWith(prompt, c, onText);
  EXPECT_TRUE(first.ok()) << first.message();
  text += "|";
  std::vector<int32_t> next = r.cachedTokens();
  next.insert(next.end(), more.begin(), more.end());
  auto second = r.continueWith(next, c, onText);
  EXPECT_TRUE(second.ok()) << second.message();
  if (second.ok()) { // the first turn's tokens stay in the cache
    EXPECT_EQ(size_t(second->cachedTokens), next.size() - more.size());
  }
  return text;
}

class StaticShapes : public ::testing::TestWithParam<const char *> {};

TEST_P(StaticShapes, SameGreedyBytesAsTheDynamicProgram) {
  Programs p;
  ASSERT_NO_FATAL_FAILURE(exportAll(GetParam(), p));
  auto dynamic = loadWithStoriesTokenizer(p.dynamic),
       io = loadWithStoriesTokenizer(p.staticIo),
       inPlace = loadWithStoriesTokenizer(p.staticInPlace);
  ASSERT_TRUE(dynamic && io && inPlace);
  auto text = dynamic->tokenizer().encode(
      "Once upon a time, there was a little girl named Lily. She loved to "
      "play outside in the sun with her big red ball and her dog Max.",
      true);
  ASSERT_TRUE(text.ok());
  ASSERT_GE(text->size(), 40u);
  const std::vector<int32_t> more(text->begin() + 3, text->begin() + 21);
  for (size_t n : {1u, 15u, 16u, 17u, 40u}) {
    SCOPED_TRACE("prompt of " + std::to_string(n) + " tokens");
    std::vector<int32_t> prompt(text->begin(), text->begin() + n);
    std::string want = greedy(*dynamic, prompt, more);
    EXPECT_GT(want.size(), 40u);
    EXPECT_EQ(greedy(*io, prompt, more), want);
    EXPECT_EQ(greedy(*inPlace, prompt, more), want);
  }
}

/// The Tester gates the static stage like any other: every later stage's
/// program (static methods, in-place caches, partitioned) agrees with the
/// exported graph's, call by call (a prefill of 6 tokens in chunks of 4,
/// then decode steps), within 1e-5.
TEST_P(StaticShapes, EveryStageAgreesWithTheExportedGraph) {
  for (etllm::StaticKvCache kv :
       {etllm::StaticKvCache::Io, etllm::StaticKvCache::InPlace}) {
    etllm::ImportOptions io;
    io.maxSeqLen = 32;
    io.lastLogitsOnly = false;
    etllm::Tester t(shared() + "/models/stories260K/stories260K.bin", io);
    t.import();
    etllm::RecipeOptions ro;
    ro.staticPrefillChunk = 4;
    ro.staticKvCache = kv;
    bool sawStatic = false;
    for (etllm::StageSpec &s : etllm::recipeStages(GetParam(), ro)) {
      t.runStage(s);
      t.runAndCompare(1e-5, 1e-5, "import");
      sawStatic |= s.name == "static-methods";
    }
    EXPECT_TRUE(sawStatic);
    EXPECT_TRUE(t.ok()) << t.report();
    mlir::ModuleOp m = t.currentIR();
    ASSERT_TRUE(m);
    EXPECT_TRUE(m.lookupSymbol("prefill") && m.lookupSymbol("decode") &&
                !m.lookupSymbol("forward"));
  }
}

INSTANTIATE_TEST_SUITE_P(Recipes, StaticShapes,
                         ::testing::Values("portable", "cpu-fp32"),
                         etllm::test::recipeTestName);

} // namespace
