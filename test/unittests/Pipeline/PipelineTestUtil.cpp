//===- PipelineTestUtil.cpp - What the pipeline tests share ---------------===//
#include "PipelineTestUtil.h"

#include "etllm/InitAll.h"
#include "etllm/Pipeline/Stage.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"
#include "llvm/Support/Error.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <system_error>

namespace etllm::test {

std::string writeBytes(const std::string &path, const std::string &bytes) {
  std::ofstream(path, std::ios::binary) << bytes;
  return path;
}

std::unique_ptr<rt::llm::Runner>
loadWithStoriesTokenizer(const std::string &path) {
  rt::llm::RunnerOptions ro;
  ro.tokenizerPath =
      std::string(ETLLM_SHARED_DIR) + "/models/stories260K/tok512.bin";
  auto r = rt::llm::Runner::load(path, ro);
  EXPECT_TRUE(r.ok()) << r.message();
  return r.ok() ? std::move(r.value()) : nullptr;
}

std::string recipeTestName(const ::testing::TestParamInfo<const char *> &info) {
  std::string s = info.param;
  for (char &c : s)
    if (c == '-')
      c = '_';
  return s;
}

RemoveOnExit::~RemoveOnExit() {
  std::error_code ec;
  std::filesystem::remove_all(path, ec);
}

bool generate(const formats::GeneratorOptions &o) {
  std::error_code ec;
  std::filesystem::remove_all(o.output, ec);
  rt::Status st = formats::generateCheckpoint(o);
  EXPECT_TRUE(st.ok()) << o.output << ": " << st.message();
  return st.ok();
}

std::string exportBytes(const std::string &checkpoint, const ExportForTest &o) {
  mlir::DialectRegistry registry;
  registerAllDialects(registry);
  registerAllPasses();
  mlir::MLIRContext ctx(registry);
  ctx.loadAllAvailableDialects();
  StagePipeline p;
  ImportOptions io;
  io.maxSeqLen = o.maxSeqLen;
  io.lastLogitsOnly = o.lastLogitsOnly;
  p.add(makeImportStage(io));
  RecipeOptions ro;
  ro.staticPrefillChunk = o.staticPrefillChunk;
  ro.staticKvCache = o.staticKvCache;
  ro.kvRingChunk = o.kvRingChunk;
  ro.attentionSinks = o.attentionSinks;
  for (StageSpec &s : recipeStages(o.recipe, ro))
    p.add(makePassStage(s));
  SerializeOptions so;
  so.hashInputs = o.hashInputs;
  so.threads = o.threads;
  so.tokenizerPath = o.tokenizer;
  so.pipeline = o.pipelineName;
  p.add(makeSerializeStage(so));
  auto out = p.run(Artifact::checkpoint(checkpoint), ctx);
  EXPECT_TRUE(bool(out)) << (out ? "" : llvm::toString(out.takeError()));
  return out ? out->program : std::string();
}

std::unique_ptr<Tester> stagesAgreeWithImport(const std::string &checkpoint,
                                              const std::string &recipe,
                                              const RecipeOptions &options,
                                              double atol, double rtol) {
  ImportOptions io;
  io.maxSeqLen = 32;
  auto t = std::make_unique<Tester>(checkpoint, io);
  t->import();
  for (StageSpec &s : recipeStages(recipe, options)) {
    t->runStage(s);
    t->runAndCompare(atol, rtol, "import");
  }
  return t;
}

} // namespace etllm::test
