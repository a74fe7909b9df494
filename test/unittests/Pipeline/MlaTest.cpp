//===- MlaTest.cpp - DeepSeek's latent cache through the recipes ----------===//
//
// Level B of multi-head latent attention: with mla-cache=latent,
// etllm-swap-source turns every DeepSeek attention into the latent cache
// and the absorbed attention. Through portable and cpu-fp32, every
// stage's program agrees with the exported graph (level A, expanded
// caches) on the portable reference kernels, from HF and GGUF, for V2-Lite
// (q_proj) and V3 (q LoRA); the only caches left are the latent ones.
//
//===----------------------------------------------------------------------===//
#include "PipelineTestUtil.h"
#include "etllm/Pipeline/Tester.h"
#include "etllm/Testing/Generator.h"

#include "llvm/Support/raw_ostream.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <ostream>
#include <string>

#include <unistd.h>

namespace {

struct Case {
  std::string family, format;
};

[[maybe_unused]] void PrintTo(const Case &c, std::ostream *os) {
  *os << c.family << "/" << c.format;
}

class LatentCache : public ::testing::TestWithParam<Case> {};

TEST_P(LatentCache, EveryStageAgreesWithTheExportedGraph) {
  const Case &c = GetParam();
  // The process id keeps concurrent runs (other build trees) apart.
  std::string out = testing::TempDir() + "/etllm_mla_" +
                    std::to_string(::getpid()) + "_" + c.family +
                    (c.format == "hf" ? "" : ".gguf");
  etllm::test::RemoveOnExit cleanup{out};
  etllm::formats::GeneratorOptions o;
  o.arch = c.family;
  o.format = c.format;
  o.layers = 2;
  o.seed = 21;
  o.output = out;
  ASSERT_TRUE(etllm::test::generate(o));
  for (const char *recipe : {"portable", "cpu-fp32"}) {
    etllm::RecipeOptions ro;
    ro.mlaCache = etllm::MlaCacheForm::Latent;
    auto tester =
        etllm::test::stagesAgreeWithImport(out, recipe, ro, 1e-4, 1e-4);
    etllm::Tester &t = *tester;
    t.checkCount("etllm.sdpa", 2)
        .checkNot("etllm.softmax")
        .checkNot("etllm.buffer.write")
        .checkNot("etllm.index_copy");
    EXPECT_TRUE(t.ok()) << recipe << "\n" << t.report();
    std::string ir;
    llvm::raw_string_ostream os(ir);
    t.currentIR().print(os);
    EXPECT_NE(ir.find("self_attn.latent_cache : tensor<1x1x32x40xf32>"),
              std::string::npos)
        << recipe;
    EXPECT_EQ(ir.find("k_cache"), std::string::npos) << recipe;
  }
}

INSTANTIATE_TEST_SUITE_P(Deepseek, LatentCache,
                         ::testing::Values(Case{"deepseekv2", "hf"},
                                           Case{"deepseekv2", "gguf"},
                                           Case{"deepseekv3", "hf"},
                                           Case{"deepseekv3", "gguf"}),
                         [](const testing::TestParamInfo<Case> &info) {
                           return info.param.family + "_" + info.param.format;
                         });

} // namespace
