//===- FamiliesTest.cpp - The graph builder agrees with the registry ------===//
//
// For every family of the registry, in both formats, the graph builder
// declares exactly the parameters expectedTensors() lists (the tensor
// catalogue the checkpoint readers validate against), with the same shapes,
// and names module classes with the family's prefix. The two are written in
// different places (the catalogue in lib/Formats, the block builders in
// lib/Import), so this is the check that they are one fact. The model
// config the graph records reads back from its metadata JSON.
//
//===----------------------------------------------------------------------===//
#include "etllm/Dialect/Etllm/EtllmModelConfig.h"
#include "etllm/Dialect/Etllm/EtllmOps.h"
#include "etllm/Formats/Checkpoint.h"
#include "etllm/Testing/Generator.h"
#include "etllm/Import/GraphBuilder.h"
#include "etllm/InitAll.h"
#include "etllm/Models/Registry.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"
#include "llvm/Support/JSON.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <map>

using namespace mlir;
namespace formats = ::etllm::formats;
namespace models = ::etllm::models;

namespace {

struct RemoveOnExit {
  std::string path;
  ~RemoveOnExit() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
};

void checkFamily(MLIRContext &ctx, const models::FamilySpec &f,
                 const std::string &format) {
  SCOPED_TRACE(std::string(f.id) + " " + format);
  std::string out = testing::TempDir() + "/etllm_family_" + f.id +
                    (format == "hf" ? "" : ".gguf");
  RemoveOnExit cleanup{out};
  formats::GeneratorOptions o;
  o.arch = f.id;
  o.format = format;
  o.layers = 2;
  o.output = out;
  std::filesystem::remove_all(out);
  auto st = formats::generateCheckpoint(o);
  ASSERT_TRUE(st.ok()) << st.message();
  auto ckpt = formats::openCheckpoint(out);
  ASSERT_TRUE(ckpt.ok()) << ckpt.message();
  ::etllm::ImportOptions io;
  io.maxSeqLen = 16;
  auto module = ::etllm::buildExportedGraph(&ctx, **ckpt, io);
  ASSERT_TRUE(bool(module)) << llvm::toString(module.takeError());

  auto expected = formats::expectedTensors((*ckpt)->config());
  ASSERT_TRUE(expected.ok()) << expected.message();
  std::map<std::string, std::vector<int64_t>> want, got;
  for (const formats::ExpectedTensor &t : *expected)
    want[t.name] = t.shape;
  for (auto p : (*module)->getOps<mlir::etllm::ParameterOp>()) {
    auto type = cast<RankedTensorType>(p.getType());
    got[p.getSymName().str()] =
        std::vector<int64_t>(type.getShape().begin(), type.getShape().end());
  }
  EXPECT_EQ(got, want);

  // Module classes: the family's (LlamaAttention, ...) or torch's.
  const models::FamilySpec *read = formats::familyOf((*ckpt)->config());
  ASSERT_NE(read, nullptr);
  auto classes = (**module)->getAttrOfType<DictionaryAttr>(
      mlir::etllm::EtllmDialect::kModuleClassesAttrName);
  ASSERT_TRUE(classes);
  for (NamedAttribute entry : classes) {
    StringRef cls = cast<StringAttr>(entry.getValue()).getValue();
    bool torch = cls == "Linear" || cls == "Embedding" || cls == "SiLU" ||
                 cls == "PytorchGELUTanh" || cls == "GELUActivation";
    EXPECT_TRUE(torch || cls.starts_with(read->classPrefix))
        << entry.getName().str() << " = " << cls.str();
  }
  auto cfg = mlir::etllm::getModelConfig(**module);
  ASSERT_TRUE(cfg);
  EXPECT_EQ(cfg.getArchitecture(), read->hfArchitecture);
  EXPECT_EQ(cfg.getNumHiddenLayers(), 2);
  EXPECT_EQ(cfg.getMaxSeqLen(), 16);
  // The groups are there exactly for the models that have them.
  const formats::ModelConfig &c = (*ckpt)->config();
  EXPECT_EQ(bool(cfg.getMla()), c.isMla());
  EXPECT_EQ(bool(cfg.getMoe()), c.hasMoeLayers());
  // The metadata JSON reads back as the same attribute (the ATen
  // importer's model_config reader is its inverse, groups included).
  llvm::Expected<llvm::json::Value> json = llvm::json::parse(cfg.toJson());
  ASSERT_TRUE(bool(json)) << llvm::toString(json.takeError());
  std::string error;
  FailureOr<mlir::etllm::ModelConfigAttr> back =
      mlir::etllm::ModelConfigAttr::fromJson(&ctx, *json->getAsObject(),
                                             error);
  ASSERT_TRUE(succeeded(back)) << error;
  EXPECT_EQ(*back, cfg);
}

TEST(Families, GraphParametersAreTheExpectedTensors) {
  DialectRegistry registry;
  ::etllm::registerAllDialects(registry);
  MLIRContext ctx(registry);
  ctx.loadAllAvailableDialects();
  for (const models::FamilySpec *f : models::families()) {
    checkFamily(ctx, *f, "hf");
    if (f->gguf.arch)
      checkFamily(ctx, *f, "gguf");
  }
}

} // namespace
