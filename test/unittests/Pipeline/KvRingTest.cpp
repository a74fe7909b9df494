//===- KvRingTest.cpp - Ring KV caches give the full cache's logits -------===//
//
// A Mistral-config model (sliding window 64) exported with ring caches
// (model.kv_ring_chunk) keeps 64 positions per layer instead of
// max_seq_len, gives the full-cache program's logits at every step up to
// max_seq_len, the same greedy text after a prompt fed in chunks, and
// generates 1,000 tokens. With attention sinks, stories260K generates four
// times its context with the same caches, and agrees with the plain
// program while the context fits.
//
//===----------------------------------------------------------------------===//
#include "PipelineTestUtil.h"
#include "etllm/Pipeline/Tester.h"
#include "etllm/runtime/llm/runner.h"
#include "etllm/runtime/program.h"

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <string>
#include <vector>

#include <unistd.h>

namespace {

namespace llm = etllm::rt::llm;
using etllm::test::loadWithStoriesTokenizer;
using etllm::test::writeBytes;

std::string shared() { return ETLLM_SHARED_DIR; }

struct TempDir {
  std::string path;
  explicit TempDir(const std::string &name)
      : path(testing::TempDir() + "/etllm_kvring_" + std::to_string(getpid()) +
             "_" + name) {
    std::filesystem::create_directories(path);
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
};

uint64_t bufferBytes(const std::string &bytes) {
  auto p = etllm::rt::Program::loadFromBuffer(
      reinterpret_cast<const uint8_t *>(bytes.data()), bytes.size(), "test");
  EXPECT_TRUE(p.ok()) << p.message();
  return p.ok() ? (*p)->plannedMemory().buffers : 0;
}

/// Every call's logits of `a` within 1e-5 + 1e-5 |b| of `b`'s.
void expectSameLogits(const std::vector<etllm::CallOutput> &a,
                      const std::vector<etllm::CallOutput> &b) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t c = 0; c < a.size(); ++c) {
    ASSERT_EQ(a[c].values.size(), b[c].values.size()) << "call " << c;
    double worst = 0;
    for (size_t i = 0; i < a[c].values.size(); ++i)
      worst = std::max(worst, std::fabs(a[c].values[i] - b[c].values[i]) -
                                  1e-5 * std::fabs(b[c].values[i]));
    ASSERT_LE(worst, 1e-5) << "call " << c << " (position " << c << ")";
  }
}

/// Greedy generation of `count` tokens after `prompt`; an end-of-text
/// token the random weights produce is fed back like any other. Returns
/// the last call's stats.
llm::Stats generateTokens(llm::Runner &r, std::vector<int32_t> sequence,
                          int32_t count, int32_t eos) {
  llm::GenerationConfig c;
  c.sampling.temperature = 0;
  llm::Stats last;
  int32_t generated = 0;
  r.resetCache();
  while (generated < count) {
    c.maxNewTokens = count - generated;
    auto s = r.continueWith(sequence, c, [](const std::string &) {});
    EXPECT_TRUE(s.ok()) << s.message();
    if (!s.ok())
      return last;
    last = *s;
    generated += int32_t(s->generatedTokens);
    if (s->stopReason != "eos") {
      EXPECT_EQ(s->stopReason, "max_new_tokens");
      break;
    }
    sequence = r.cachedTokens();
    sequence.push_back(eos);
    ++generated;
  }
  EXPECT_GE(generated, count);
  return last;
}

class KvRing : public ::testing::TestWithParam<const char *> {};

/// Sliding window 64, one token per call: 64 positions per layer.
TEST_P(KvRing, SlidingWindowRingGivesTheFullCachesLogits) {
  TempDir dir(std::string("swa_") + GetParam());
  etllm::formats::GeneratorOptions g;
  g.arch = "mistral";
  g.maxSeq = 1100;
  g.output = dir.path + "/mistral";
  ASSERT_TRUE(etllm::test::generate(g));
  etllm::test::ExportForTest o;
  o.recipe = GetParam();
  o.maxSeqLen = 1100;
  o.lastLogitsOnly = true;
  const std::string full = etllm::test::exportBytes(g.output, o);
  o.kvRingChunk = 1;
  const std::string ring = etllm::test::exportBytes(g.output, o);
  o.kvRingChunk = 8;
  const std::string ring8 = etllm::test::exportBytes(g.output, o);
  ASSERT_FALSE(full.empty() || ring.empty() || ring8.empty());
  // 2 layers x (k, v) x [1, 2 kv heads, positions, 16] f32.
  const uint64_t perPosition = 2 * 2 * 2 * 16 * 4;
  EXPECT_EQ(bufferBytes(full), 1100 * perPosition);
  EXPECT_EQ(bufferBytes(ring), 64 * perPosition);
  EXPECT_EQ(bufferBytes(ring8), (64 + 8 - 1) * perPosition);

  // Every step up to max_seq_len, one token per call.
  std::vector<int64_t> tokens(1100);
  for (size_t i = 0; i < tokens.size(); ++i)
    tokens[i] = int64_t((i * 7919 + 13) % 509) + 3;
  auto want = etllm::runProgram(full, tokens, 1, 1);
  ASSERT_TRUE(bool(want)) << llvm::toString(want.takeError());
  auto got = etllm::runProgram(ring, tokens, 1, 1);
  ASSERT_TRUE(bool(got)) << llvm::toString(got.takeError());
  ASSERT_NO_FATAL_FAILURE(expectSameLogits(*got, *want));
  // A first call of 8 tokens into the ring of chunk 8.
  got = etllm::runProgram(ring8, tokens, 8, 1);
  ASSERT_TRUE(bool(got)) << llvm::toString(got.takeError());
  want = etllm::runProgram(full, tokens, 8, 1);
  ASSERT_TRUE(bool(want)) << llvm::toString(want.takeError());
  ASSERT_NO_FATAL_FAILURE(expectSameLogits(*got, *want));

  // The runner feeds a 300-token prompt to the chunk-8 ring in calls of 8
  // and generates what the full cache does; a second turn keeps the first.
  auto fullRunner =
      loadWithStoriesTokenizer(writeBytes(dir.path + "/full.pte", full));
  auto ringRunner =
      loadWithStoriesTokenizer(writeBytes(dir.path + "/ring8.pte", ring8));
  ASSERT_TRUE(fullRunner && ringRunner);
  std::vector<int32_t> prompt(tokens.begin(), tokens.begin() + 300);
  llm::GenerationConfig c;
  c.maxNewTokens = 16;
  c.sampling.temperature = 0;
  for (llm::Runner *r : {fullRunner.get(), ringRunner.get()}) {
    r->resetCache();
    auto s = r->continueWith(prompt, c, [](const std::string &) {});
    ASSERT_TRUE(s.ok()) << s.message();
  }
  EXPECT_EQ(ringRunner->cachedTokens(), fullRunner->cachedTokens());
  // Going back into the ring (a shorter prompt) rebuilds the state.
  std::vector<int32_t> shorter(tokens.begin(), tokens.begin() + 200);
  for (llm::Runner *r : {fullRunner.get(), ringRunner.get()}) {
    auto s = r->continueWith(shorter, c, [](const std::string &) {});
    ASSERT_TRUE(s.ok()) << s.message();
  }
  EXPECT_EQ(ringRunner->cachedTokens(), fullRunner->cachedTokens());

  // 1,000 generated tokens from a cache of 64 positions per layer.
  auto ring1 =
      loadWithStoriesTokenizer(writeBytes(dir.path + "/ring.pte", ring));
  ASSERT_TRUE(ring1);
  llm::Stats s = generateTokens(*ring1, {1}, 1000, 2);
  EXPECT_EQ(s.contextShifts, 0);
  EXPECT_GE(ring1->cachedTokens().size(), 1000u);
}

/// Attention sinks: 4 fixed positions and a ring over stories260K's
/// context of 128, calls of at most 16 tokens.
TEST_P(KvRing, SinksGenerateFourTimesTheContext) {
  TempDir dir(std::string("sinks_") + GetParam());
  const std::string model = shared() + "/models/stories260K/stories260K.bin";
  etllm::test::ExportForTest o;
  o.recipe = GetParam();
  o.maxSeqLen = 128;
  o.lastLogitsOnly = true;
  const std::string plain = etllm::test::exportBytes(model, o);
  o.kvRingChunk = 16;
  o.attentionSinks = 4;
  const std::string sinks = etllm::test::exportBytes(model, o);
  ASSERT_FALSE(plain.empty() || sinks.empty());
  EXPECT_EQ(bufferBytes(sinks), bufferBytes(plain));

  // While the context fits the window (128 - 4 - 16 + 1 = 109 positions
  // past the sinks), the ring is the plain cache.
  std::vector<int64_t> tokens(113);
  for (size_t i = 0; i < tokens.size(); ++i)
    tokens[i] = int64_t((i * 131 + 7) % 500) + 3;
  auto want = etllm::runProgram(plain, tokens, 16, 1);
  ASSERT_TRUE(bool(want)) << llvm::toString(want.takeError());
  auto got = etllm::runProgram(sinks, tokens, 16, 1);
  ASSERT_TRUE(bool(got)) << llvm::toString(got.takeError());
  ASSERT_NO_FATAL_FAILURE(expectSameLogits(*got, *want));
  // A call of more than the chunk is refused, not run past the ring.
  auto tooLong = etllm::runProgram(sinks, tokens, 17, 1);
  EXPECT_FALSE(bool(tooLong));
  if (!tooLong)
    llvm::consumeError(tooLong.takeError());

  // Four contexts' worth of tokens without a context shift.
  auto runner =
      loadWithStoriesTokenizer(writeBytes(dir.path + "/sinks.pte", sinks));
  ASSERT_TRUE(runner);
  const uint64_t buffers = runner->module().bufferBytes();
  llm::Stats s = generateTokens(*runner, {1}, 4 * 128, 2);
  EXPECT_EQ(s.contextShifts, 0);
  EXPECT_GE(runner->cachedTokens().size(), 4u * 128u);
  EXPECT_EQ(runner->module().bufferBytes(), buffers);
  // The plain program stops at its context instead.
  auto plainRunner =
      loadWithStoriesTokenizer(writeBytes(dir.path + "/plain.pte", plain));
  ASSERT_TRUE(plainRunner);
  llm::GenerationConfig c;
  c.maxNewTokens = 4 * 128;
  c.sampling.temperature = 0;
  auto stopped = plainRunner->continueWith({1}, c, [](const std::string &) {});
  ASSERT_TRUE(stopped.ok()) << stopped.message();
  EXPECT_NE(stopped->stopReason, "max_new_tokens");
}

/// Greedy text after `prompt` (token ids), `n` tokens.
std::string greedyText(llm::Runner &r, const std::vector<int32_t> &prompt,
                       int32_t n, llm::Stats *stats = nullptr) {
  llm::GenerationConfig c;
  c.maxNewTokens = n;
  c.sampling.temperature = 0;
  std::string text;
  r.resetCache();
  auto s = r.continueWith(prompt, c, [&](const std::string &t) { text += t; });
  EXPECT_TRUE(s.ok()) << s.message();
  if (s.ok() && stats)
    *stats = *s;
  return text;
}

/// A static program (prefill over 16 tokens, decode over one, in-place
/// caches) with the same rings and sinks: the dynamic ring program's text,
/// past four times the context, for a prompt shorter than the sinks, one
/// of a padded chunk and one of several chunks.
TEST_P(KvRing, StaticProgramWithSinksPrintsTheDynamicText) {
  TempDir dir(std::string("static_") + GetParam());
  const std::string model = shared() + "/models/stories260K/stories260K.bin";
  etllm::test::ExportForTest o;
  o.recipe = GetParam();
  o.maxSeqLen = 64;
  o.kvRingChunk = 16;
  o.attentionSinks = 4;
  const std::string dynamic = etllm::test::exportBytes(model, o);
  o.staticPrefillChunk = 16;
  o.staticKvCache = etllm::StaticKvCache::InPlace;
  const std::string fixed = etllm::test::exportBytes(model, o);
  ASSERT_FALSE(dynamic.empty() || fixed.empty());
  EXPECT_EQ(bufferBytes(fixed), bufferBytes(dynamic));
  auto d = loadWithStoriesTokenizer(writeBytes(dir.path + "/d.pte", dynamic));
  auto f = loadWithStoriesTokenizer(writeBytes(dir.path + "/f.pte", fixed));
  ASSERT_TRUE(d && f);
  auto text = d->tokenizer().encode(
      "Once upon a time, there was a little girl named Lily. She loved to "
      "play outside in the sun with her big red ball and her dog Max.",
      true);
  ASSERT_TRUE(text.ok());
  ASSERT_GE(text->size(), 40u);
  for (size_t n : {2u, 9u, 40u}) {
    SCOPED_TRACE("prompt of " + std::to_string(n) + " tokens");
    std::vector<int32_t> prompt(text->begin(), text->begin() + n);
    llm::Stats st;
    const std::string want = greedyText(*d, prompt, 256, &st);
    EXPECT_EQ(st.generatedTokens, 256);
    EXPECT_EQ(st.contextShifts, 0);
    EXPECT_EQ(greedyText(*f, prompt, 256), want);
  }
}

/// The Tester gates the ring stage like any other: with sinks over a
/// context of 32 (calls of 4, the window 25 positions), every stage agrees
/// with the exported graph on a prompt and decode steps that stay inside
/// the window.
TEST_P(KvRing, EveryStageAgreesWithTheExportedGraph) {
  etllm::ImportOptions io;
  io.maxSeqLen = 32;
  io.lastLogitsOnly = false;
  etllm::Tester t(shared() + "/models/stories260K/stories260K.bin", io);
  t.import();
  etllm::RecipeOptions ro;
  ro.kvRingChunk = 4;
  ro.attentionSinks = 4;
  bool sawRing = false;
  const std::vector<int64_t> tokens = {1,   403, 407, 261, 378, 395,
                                       280, 270, 300, 310, 320, 330};
  for (etllm::StageSpec &s : etllm::recipeStages(GetParam(), ro)) {
    t.runStage(s);
    // (1e-4 as for every cpu-fp32 stage: the delegate's SDPA sums the
    // ring's slots in another order than portable's.)
    t.runAndCompare(1e-4, 1e-4, "import", tokens, 4);
    sawRing |= s.name == "kv-ring";
  }
  EXPECT_TRUE(sawRing);
  EXPECT_TRUE(t.ok()) << t.report();
}

INSTANTIATE_TEST_SUITE_P(Recipes, KvRing,
                         ::testing::Values("portable", "cpu-fp32"),
                         etllm::test::recipeTestName);

} // namespace
