//===- ArchitecturesTest.cpp - GGUF's quantized blocks through recipes ----===//
//
// GGUF files whose weights arrive quantized go through the quantized
// recipes; every stage's program runs and agrees with the float program
// within each recipe's bound. (Every family through portable and cpu-fp32,
// from Hugging Face and GGUF: FamiliesTest.cpp.)
//
//===----------------------------------------------------------------------===//
#include "PipelineTestUtil.h"
#include "etllm/Pipeline/Tester.h"
#include "etllm/Testing/Generator.h"

#include <gtest/gtest.h>

#include <filesystem>

namespace {

/// Weights that arrive quantized (GGUF Q4_0 / Q8_0) keep their exact
/// values: the quantize stage changes no weight, so the quantized program
/// must agree with the float one to fp32 precision (unlike quantizing float
/// weights, which the Stories tests hold to a relative-error bound).
class GgufBlocks : public ::testing::TestWithParam<const char *> {};

TEST_P(GgufBlocks, QuantizeStageKeepsExactValues) {
  std::string type = GetParam();
  std::string out = testing::TempDir() + "/etllm_blocks_" + type + ".gguf";
  etllm::formats::GeneratorOptions o;
  o.arch = "llama";
  o.format = "gguf";
  o.layers = 2;
  o.seed = 5;
  o.ggufType = type == "q4_0" ? etllm::formats::DType::Q4_0
                              : etllm::formats::DType::Q8_0;
  o.output = out;
  etllm::test::RemoveOnExit cleanup{out};
  ASSERT_TRUE(etllm::test::generate(o));
  // cpu-int4 weight-only (f32 activations): exact weights, f32
  // arithmetic at every stage. With its default int8 activations (per
  // block) and with 8da4w's (per token) only the activations add error.
  for (int variant = 0; variant < 3; ++variant) {
    const char *recipe = variant < 2 ? "cpu-int4" : "cpu-8da4w";
    etllm::RecipeOptions ro;
    if (variant == 0)
      ro.activations = "f32";
    etllm::ImportOptions io;
    io.maxSeqLen = 32;
    etllm::Tester t(out, io);
    t.import();
    for (etllm::StageSpec &s : etllm::recipeStages(recipe, ro)) {
      t.runStage(s);
      if (variant == 0)
        t.runAndCompare(1e-4, 1e-4);
      else if (s.name == "quantize")
        t.runAndCompareRelative(0.05, 0.5);
    }
    EXPECT_TRUE(t.ok()) << recipe << " (variant " << variant << ")\n"
                        << t.report();
  }
}

INSTANTIATE_TEST_SUITE_P(Types, GgufBlocks, ::testing::Values("q4_0", "q8_0"));

/// ggml's other formats, kept as their own schemes by cpu-gguf: with f32
/// activations every stage agrees with the float program (the blocks'
/// dequantized values) to 1e-4, quantize and the delegate included; with the
/// recipe's int8 activations per block only they add error. Hidden 256 and
/// FFN 512 make the K-quant rows whole super-blocks (smaller rows take
/// llama.cpp's fallbacks, Q5_0, Q5_1, Q8_0, which the narrow projections
/// here do: k and v are 128 wide, but their rows are the hidden size).
class GgufKeptBlocks : public ::testing::TestWithParam<const char *> {};

TEST_P(GgufKeptBlocks, EveryStageAgreesWithTheFloatProgram) {
  std::string type = GetParam();
  std::string out = testing::TempDir() + "/etllm_kept_" + type + ".gguf";
  etllm::formats::GeneratorOptions o;
  o.arch = "llama";
  o.format = "gguf";
  o.layers = 2;
  o.hidden = 256;
  o.heads = 4;
  o.kvHeads = 2;
  o.ffn = 512;
  o.seed = 7;
  auto dt = etllm::formats::parseDType(type);
  ASSERT_TRUE(dt.ok());
  o.ggufType = *dt;
  o.output = out;
  etllm::test::RemoveOnExit cleanup{out};
  ASSERT_TRUE(etllm::test::generate(o));
  for (int variant = 0; variant < 2; ++variant) {
    etllm::RecipeOptions ro;
    if (variant == 0)
      ro.activations = "f32";
    etllm::ImportOptions io;
    io.maxSeqLen = 32;
    etllm::Tester t(out, io);
    t.import();
    for (etllm::StageSpec &s : etllm::recipeStages("cpu-gguf", ro)) {
      t.runStage(s);
      if (s.name == "quantize") // every weight kept in its blocks
        t.checkNot("etllm.linear").checkNot("etllm.embedding");
      if (variant == 0)
        t.runAndCompare(1e-4, 1e-4);
      else if (s.name == "quantize")
        t.runAndCompareRelative(0.05, 0.5);
    }
    EXPECT_TRUE(t.ok()) << type << " (variant " << variant << ")\n"
                        << t.report();
  }
}

INSTANTIATE_TEST_SUITE_P(Types, GgufKeptBlocks,
                         ::testing::Values("q5_0", "q5_1", "q4_k", "q5_k",
                                           "q6_k"));

} // namespace
