//===- FamiliesTest.cpp - Every family of the registry through recipes ----===//
//
// A random-weight model of every family the registry has (so a new family
// is covered without editing this file), from a Hugging Face directory and
// from a GGUF file, goes through the portable and cpu-fp32 recipes; every
// stage's program runs and agrees with the exported graph (level A) on the
// portable reference kernels.
//
//===----------------------------------------------------------------------===//
#include "PipelineTestUtil.h"
#include "etllm/Models/Registry.h"
#include "etllm/Pipeline/Tester.h"
#include "etllm/Testing/Generator.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <ostream>

namespace {

struct Case {
  std::string family, format;
};

[[maybe_unused]] void PrintTo(const Case &c, std::ostream *os) {
  *os << c.family << "/" << c.format;
}

std::vector<Case> cases() {
  std::vector<Case> out;
  for (const etllm::models::FamilySpec *f : etllm::models::families()) {
    out.push_back({f->id, "hf"});
    if (f->gguf.arch)
      out.push_back({f->id, "gguf"});
  }
  return out;
}

class Families : public ::testing::TestWithParam<Case> {};

TEST_P(Families, EveryStageAgreesWithTheExportedGraph) {
  const Case &c = GetParam();
  std::string out = testing::TempDir() + "/etllm_families_" + c.family +
                    (c.format == "hf" ? "" : ".gguf");
  etllm::test::RemoveOnExit cleanup{out};
  etllm::formats::GeneratorOptions o;
  o.arch = c.family;
  o.format = c.format;
  // Two layers, or one past the first global layer of a family whose
  // sliding-window layers follow a pattern (Gemma 3: layers 0-4 slide, 5 is
  // global, 6 slides again), so that both kinds of layer (their own RoPE
  // bases, their masks) are checked.
  const etllm::models::FamilySpec *spec = etllm::models::findById(c.family);
  ASSERT_NE(spec, nullptr);
  o.layers = 2;
  if (spec->hf.slidingWindow == etllm::models::SlidingWindowRule::Pattern)
    o.layers = spec->hf.slidingWindowPattern + 1;
  o.seed = 13;
  o.output = out;
  ASSERT_TRUE(etllm::test::generate(o));
  // The sparse layers of the generated config (DeepSeek-V2's layer 0 is
  // dense: first_k_dense_replace 1).
  auto config = etllm::formats::generatorConfig(o);
  ASSERT_TRUE(config.ok()) << config.message();
  int64_t moeLayers = 0;
  for (bool sparse : config->layerIsMoe)
    moeLayers += sparse;
  for (const char *recipe : {"portable", "cpu-fp32"}) {
    auto tester =
        etllm::test::stagesAgreeWithImport(out, recipe, {}, 1e-3, 1e-3);
    etllm::Tester &t = *tester;
    // The attention's softmax is fused into sdpa; a mixture-of-experts
    // block becomes one etllm.moe per layer (its router's softmax and
    // top-k inside it).
    if (moeLayers > 0)
      t.checkCount("etllm.moe", moeLayers);
    t.checkNot("etllm.softmax").checkNot("etllm.topk");
    t.check("etllm.sdpa").checkNot("etllm.buffer.write");
    EXPECT_TRUE(t.ok()) << recipe << "\n" << t.report();
  }
}

INSTANTIATE_TEST_SUITE_P(Registry, Families, ::testing::ValuesIn(cases()),
                         [](const testing::TestParamInfo<Case> &info) {
                           return info.param.family + "_" + info.param.format;
                         });

} // namespace
