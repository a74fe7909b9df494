//===- ProgramTokenizerTest.cpp - Vocabularies carried by programs --------===//
//
// A GGUF model's vocabulary travels through export into the program file
// (TokenizerInfo), and the runtime rebuilds the tokenizer from it: the
// Llama 2 vocabulary of tiny-random-llama2.gguf must pass all llama-spm test
// vectors after that trip, encode and decode. An embedded tokenizer file
// (tok512.bin) comes back byte-identical.
//
//===----------------------------------------------------------------------===//
#include "PipelineTestUtil.h"
#include "etllm/InitAll.h"
#include "etllm/Pipeline/Stage.h"
#include "etllm/runtime/llm/runner.h"
#include "etllm/runtime/program.h"
#include "tokenizer_test_util.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

namespace {

using etllm::rt::test::readFile;

std::string shared() { return ETLLM_SHARED_DIR; }

/// Exports `model` with the portable recipe into program bytes.
std::string exportProgram(const std::string &model,
                          const std::string &tokenizer = "") {
  etllm::test::ExportForTest o;
  o.maxSeqLen = 32;
  o.tokenizer = tokenizer;
  return etllm::test::exportBytes(model, o);
}

TEST(ProgramTokenizer, GgufLlamaVocabularyPassesTheTestVectors) {
  std::string model =
      shared() + "/models/tiny-random-llama2/llama-2-tiny-random.gguf";
  if (!std::filesystem::exists(model))
    GTEST_SKIP() << "../shared is absent";
  std::string bytes = exportProgram(model);
  ASSERT_FALSE(bytes.empty());
  auto program = etllm::rt::Program::loadFromBuffer(
      reinterpret_cast<const uint8_t *>(bytes.data()), bytes.size(), "tiny");
  ASSERT_TRUE(program.ok()) << program.message();
  EXPECT_EQ((*program)->metadata().tokenizer.kind, "gguf-llama");
  auto tok = etllm::rt::llm::tokenizerForProgram(**program);
  ASSERT_TRUE(tok.ok()) << tok.message();
  EXPECT_EQ((*tok)->vocabSize(), 32000);

  etllm::rt::test::expectVectors(
      **tok, "tokenizers/test-vectors/ggml-vocab-llama-spm.gguf");
}

TEST(ProgramTokenizer, EmbeddedTokenizerFileComesBackIntact) {
  std::string model = shared() + "/models/stories260K/stories260K.bin";
  std::string tokFile = shared() + "/models/stories260K/tok512.bin";
  if (!std::filesystem::exists(model))
    GTEST_SKIP() << "../shared is absent";
  std::string bytes = exportProgram(model, tokFile);
  auto program = etllm::rt::Program::loadFromBuffer(
      reinterpret_cast<const uint8_t *>(bytes.data()), bytes.size(), "stories");
  ASSERT_TRUE(program.ok()) << program.message();
  const auto &t = (*program)->metadata().tokenizer;
  EXPECT_EQ(t.kind, "llama2c");
  std::string original = readFile(tokFile);
  ASSERT_EQ(t.fileSize, original.size());
  EXPECT_EQ(std::string(reinterpret_cast<const char *>(t.fileData), t.fileSize),
            original);
  auto tok = etllm::rt::llm::tokenizerForProgram(**program);
  ASSERT_TRUE(tok.ok()) << tok.message();
  auto ids = (*tok)->encode("Once upon a time", true);
  ASSERT_TRUE(ids.ok());
  EXPECT_EQ(*ids, (std::vector<int32_t>{1, 403, 407, 261, 378}));
}

TEST(ProgramTokenizer, ExportRejectsAnUnreadableTokenizer) {
  std::string model = shared() + "/models/stories260K/stories260K.bin";
  if (!std::filesystem::exists(model))
    GTEST_SKIP() << "../shared is absent";
  std::string bad = testing::TempDir() + "/etllm_bad_tokenizer.bin";
  std::ofstream(bad) << "not a tokenizer";
  mlir::DialectRegistry registry;
  etllm::registerAllDialects(registry);
  mlir::MLIRContext ctx(registry);
  ctx.loadAllAvailableDialects();
  etllm::StagePipeline p;
  p.add(etllm::makeImportStage({}));
  etllm::SerializeOptions so;
  so.tokenizerPath = bad;
  so.hashInputs = false;
  p.add(etllm::makeSerializeStage(so));
  auto out = p.run(etllm::Artifact::checkpoint(model), ctx);
  ASSERT_FALSE(bool(out));
  std::string msg = llvm::toString(out.takeError());
  std::filesystem::remove(bad);
  EXPECT_NE(msg.find("etllm_bad_tokenizer.bin"), std::string::npos) << msg;
}

} // namespace
