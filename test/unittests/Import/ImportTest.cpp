//===- ImportTest.cpp - One model, three formats, one graph ---------------===//
//
// stories260K from its llama2.c file, its GGUF and its Hugging Face
// directory imports to the same graph, and every parameter materializes to
// the same bytes once the Q/K row layouts are converted.
//
//===----------------------------------------------------------------------===//
#include "etllm/Dialect/Etllm/EtllmOps.h"
#include "etllm/Import/GraphBuilder.h"
#include "etllm/InitAll.h"
#include "etllm/Lowering/WeightStore.h"
#include "etllm/Formats/Checkpoint.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"
#include "llvm/Support/raw_ostream.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <regex>

using namespace mlir;

namespace {

std::string shared() { return ETLLM_SHARED_DIR; }

struct Imported {
  std::unique_ptr<::etllm::formats::Checkpoint> ckpt;
  OwningOpRef<ModuleOp> module;
};

Imported importModel(MLIRContext &ctx, const std::string &path) {
  Imported r;
  auto ckpt = ::etllm::formats::openCheckpoint(path);
  EXPECT_TRUE(ckpt.ok()) << ckpt.message();
  if (!ckpt.ok())
    return r;
  r.ckpt = std::move(ckpt.value());
  ::etllm::ImportOptions o;
  o.maxSeqLen = 512;
  auto m = ::etllm::buildExportedGraph(&ctx, *r.ckpt, o);
  EXPECT_TRUE(bool(m)) << (m ? "" : llvm::toString(m.takeError()));
  if (m)
    r.module = std::move(*m);
  return r;
}

/// The function body as text: what the graph computes, independent of where
/// the parameters come from.
std::string graphText(ModuleOp m) {
  std::string s;
  llvm::raw_string_ostream os(s);
  m.lookupSymbol<func::FuncOp>("forward").print(os);
  return os.str();
}

class Stories260K : public ::testing::Test {
protected:
  void SetUp() override {
    if (!std::filesystem::exists(shared() + "/models/stories260K"))
      GTEST_SKIP() << "../shared is absent (see README.md for the files)";
    DialectRegistry registry;
    ::etllm::registerAllDialects(registry);
    ctx = std::make_unique<MLIRContext>(registry);
    ctx->loadAllAvailableDialects();
  }
  std::unique_ptr<MLIRContext> ctx;
};

TEST_F(Stories260K, ThreeFormatsGiveTheSameGraph) {
  Imported bin =
      importModel(*ctx, shared() + "/models/stories260K/stories260K.bin");
  Imported hf = importModel(*ctx, shared() + "/models/stories260K-hf");
  Imported gguf =
      importModel(*ctx, shared() + "/models/stories260K/stories260K.gguf");
  ASSERT_TRUE(bin.module && hf.module && gguf.module);
  EXPECT_EQ(graphText(*bin.module), graphText(*hf.module));
  // The GGUF file stores its own copy of the (tied) output matrix: the graph
  // reads `lm_head.weight` where the others read the embedding.
  std::string g = graphText(*gguf.module);
  g = std::regex_replace(g, std::regex("@lm_head.weight"),
                         "@model.embed_tokens.weight");
  EXPECT_EQ(graphText(*bin.module), g);
}

TEST_F(Stories260K, SameWeightsAfterLayoutConversion) {
  Imported bin =
      importModel(*ctx, shared() + "/models/stories260K/stories260K.bin");
  Imported hf = importModel(*ctx, shared() + "/models/stories260K-hf");
  Imported gguf =
      importModel(*ctx, shared() + "/models/stories260K/stories260K.gguf");
  ASSERT_TRUE(bin.module && hf.module && gguf.module);
  ::etllm::WeightStore sb(*bin.module), sh(*hf.module), sg(*gguf.module);
  int compared = 0, permuted = 0;
  for (auto p : hf.module->getOps<mlir::etllm::ParameterOp>()) {
    auto pb =
        bin.module->lookupSymbol<mlir::etllm::ParameterOp>(p.getSymName());
    auto pg =
        gguf.module->lookupSymbol<mlir::etllm::ParameterOp>(p.getSymName());
    ASSERT_TRUE(pb && pg) << p.getSymName().str();
    auto wh = sh.materialize(p), wb = sb.materialize(pb),
         wg = sg.materialize(pg);
    ASSERT_TRUE(succeeded(wh) && succeeded(wb) && succeeded(wg));
    EXPECT_EQ(*wh, *wb) << p.getSymName().str() << " (llama2.c)";
    EXPECT_EQ(*wh, *wg) << p.getSymName().str() << " (GGUF)";
    permuted += pb.getQkPermuteHeads().has_value();
    ++compared;
  }
  EXPECT_EQ(compared, 47);
  EXPECT_EQ(permuted, 10); // q_proj and k_proj of 5 layers
  // GGUF's separate output matrix holds the embedding's bytes.
  auto lm =
      gguf.module->lookupSymbol<mlir::etllm::ParameterOp>("lm_head.weight");
  auto emb = hf.module->lookupSymbol<mlir::etllm::ParameterOp>(
      "model.embed_tokens.weight");
  ASSERT_TRUE(lm && emb);
  EXPECT_EQ(*sg.materialize(lm), *sh.materialize(emb));
}

TEST_F(Stories260K, ImportCopiesNoWeightBytesIntoTheIR) {
  Imported hf = importModel(*ctx, shared() + "/models/stories260K-hf");
  ASSERT_TRUE(hf.module);
  for (auto p : hf.module->getOps<mlir::etllm::ParameterOp>())
    EXPECT_FALSE(p.getValue().has_value()) << p.getSymName().str();
  std::string text;
  llvm::raw_string_ostream os(text);
  hf.module->print(os);
  // 47 tensors, ~1 MB of weights: the whole IR is a few tens of kB.
  EXPECT_LT(os.str().size(), 200000u);
}

} // namespace
