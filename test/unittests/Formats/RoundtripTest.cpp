//===- RoundtripTest.cpp - generate every architecture, read it back ------===//
//
// For each architecture the generator writes a tiny HF directory and the GGUF
// llama.cpp's converter would make of it; both must open through
// openCheckpoint with the generated config and every expected tensor, and the
// GGUF data must equal the HF data once the converter's transforms (q/k row
// permutation, Gemma's +1) are undone.
//
//===----------------------------------------------------------------------===//

#include "etllm/Testing/Generator.h"
#include "etllm/Formats/Gguf.h"
#include "etllm/runtime/half.h"
#include "TestUtil.h"

#include <cmath>

using namespace etllm::formats;
using namespace etllm::formats::testing;

namespace {

const char *kArchs[] = {"llama", "qwen2", "qwen3",  "mistral",
                        "phi3",  "gemma", "gemma2", "gemma3"};

/// What a GGUF can say about a config llama.cpp's converter was given.
ModelConfig ggufView(ModelConfig c) {
  if (c.modelType == "mistral") { // converted as arch "llama"
    c.architecture = "LlamaForCausalLM";
    c.modelType = "llama";
    c.slidingWindow = 0;
    c.layerUsesSlidingWindow.assign(c.layerUsesSlidingWindow.size(), false);
  }
  return c;
}

void checkRoundTrip(const std::string &arch, DType dtype,
                    std::optional<DType> ggufType,
                    const std::string &ropeScaling = "") {
  SCOPED_TRACE(arch + " " + dtypeName(dtype) + " gguf " +
               (ggufType ? dtypeName(*ggufType) : "same") + " " + ropeScaling);
  std::string dir = freshTempDir("rt_" + arch);
  GeneratorOptions o;
  o.arch = arch;
  o.dtype = dtype;
  o.ggufType = ggufType;
  o.seed = 1234;
  o.ropeScaling = ropeScaling;
  auto want = generatorConfig(o);
  ASSERT_TRUE(want.ok()) << want.message();

  o.format = "hf";
  o.output = dir + "/hf";
  Status s = generateCheckpoint(o);
  ASSERT_TRUE(s.ok()) << s.message();
  o.format = "gguf";
  o.output = dir + "/model.gguf";
  s = generateCheckpoint(o);
  ASSERT_TRUE(s.ok()) << s.message();

  auto hf = openCheckpoint(dir + "/hf");
  ASSERT_TRUE(hf.ok()) << hf.message();
  auto gg = openCheckpoint(dir + "/model.gguf");
  ASSERT_TRUE(gg.ok()) << gg.message();
  expectConfigsEqual((*hf)->config(), *want, "HF config");
  DType qtype = ggufType.value_or(dtype);
  expectConfigsEqual((*gg)->config(), ggufView(*want), "GGUF config",
                     /*compareDtype=*/qtype == dtype);
  EXPECT_EQ((*gg)->normWeightsIncludeOne(), want->normAddsOne);
  ASSERT_NE((*gg)->ggufTokenizer(), nullptr);
  EXPECT_EQ((*gg)->ggufTokenizer()->tokens.size(),
            static_cast<size_t>(want->vocabSize));
  if (want->ropeScaling.type == "llama3") {
    std::vector<double> a = ropeInverseFrequencies((*hf)->config());
    std::vector<double> b = ropeInverseFrequencies((*gg)->config());
    ASSERT_EQ(a.size(), b.size());
    for (size_t i = 0; i < a.size(); ++i)
      EXPECT_NEAR(a[i], b[i], 1e-6 * a[i]);
    EXPECT_FALSE((*gg)->config().ropeScaling.freqFactors.empty());
  }

  auto expected = expectedTensors(*want);
  ASSERT_TRUE(expected.ok());
  size_t ggufExtra = want->ropeScaling.type == "llama3" ? 1 : 0;
  EXPECT_EQ((*hf)->tensors().size(), expected->size());
  EXPECT_EQ((*gg)->tensors().size(), expected->size() + ggufExtra);
  for (const ExpectedTensor &e : *expected) {
    SCOPED_TRACE(e.name);
    const TensorRef *h = (*hf)->find(e.name);
    const TensorRef *g = (*gg)->find(e.name);
    ASSERT_NE(h, nullptr);
    ASSERT_NE(g, nullptr);
    EXPECT_EQ(h->shape, e.shape);
    EXPECT_EQ(g->shape, e.shape);
    EXPECT_EQ(h->dtype, dtype);
    EXPECT_EQ(g->dtype, e.shape.size() == 1 ? DType::F32 : qtype);
    bool permuted = want->modelType == "llama" || want->modelType == "mistral";
    bool isQ = e.name.find("self_attn.q_proj") != std::string::npos;
    bool isK = e.name.find("self_attn.k_proj") != std::string::npos;
    EXPECT_EQ(g->qkPermuteHeads, permuted && isQ   ? want->numHeads
                                 : permuted && isK ? want->numKvHeads
                                                   : 0);
    auto hv = toFloat32(*h);
    ASSERT_TRUE(hv.ok()) << hv.message();
    // HF values are the generator's, rounded to the file dtype.
    for (size_t i = 0; i < hv->size(); i += 7) {
      float v = generatorValue(o.seed, e.name, e.isNorm, want->normAddsOne, i);
      if (dtype == DType::F16)
        v = etllm::rt::halfToFloat(etllm::rt::floatToHalf(v));
      else if (dtype == DType::BF16)
        v = etllm::rt::bf16ToFloat(etllm::rt::floatToBf16(v));
      ASSERT_EQ((*hv)[i], v) << i;
    }
    auto gb = bytesInHfOrder(*g);
    ASSERT_TRUE(gb.ok()) << gb.message();
    TensorRef hfOrder = *g;
    hfOrder.data = gb->data();
    hfOrder.qkPermuteHeads = 0;
    auto gv = toFloat32(hfOrder);
    ASSERT_TRUE(gv.ok()) << gv.message();
    ASSERT_EQ(gv->size(), hv->size());
    bool addOne = want->normAddsOne && e.isNorm;
    bool exact = g->dtype == DType::F32 || g->dtype == dtype;
    for (size_t i = 0; i < gv->size(); ++i) {
      float got = (*gv)[i], ref = (*hv)[i];
      if (addOne) {
        ASSERT_NEAR(got, ref + 1.0f, 1e-6f) << i;
      } else if (exact) {
        ASSERT_EQ(got, ref) << i;
      } else {
        ASSERT_NEAR(got, ref, g->dtype == DType::Q4_0 ? 1e-2f : 1e-3f)
            << i; // Q8_0 / Q4_0 / F16 rounding
      }
    }
  }
}

TEST(RoundTrip, EveryArchitectureF32) {
  for (const char *arch : kArchs)
    checkRoundTrip(arch, DType::F32, std::nullopt);
}

TEST(RoundTrip, EveryArchitectureQ8_0Gguf) {
  for (const char *arch : kArchs)
    checkRoundTrip(arch, DType::F32, DType::Q8_0);
}

TEST(RoundTrip, HalfPrecisionAndQ4_0) {
  checkRoundTrip("llama", DType::F16, std::nullopt);
  checkRoundTrip("qwen3", DType::BF16, DType::F32);
  checkRoundTrip("gemma2", DType::F16, DType::F32);
  checkRoundTrip("mistral", DType::F32, DType::Q4_0);
}

TEST(RoundTrip, RopeScaling) {
  checkRoundTrip("llama", DType::F32, std::nullopt, "llama3");
  checkRoundTrip("qwen2", DType::F32, std::nullopt, "linear:2.5");
}

TEST(RoundTrip, GeneratorRejectsWhatCannotBeWritten) {
  std::string dir = freshTempDir("rt_reject");
  GeneratorOptions o;
  o.arch = "gemma";
  o.format = "gguf";
  o.tied = false;
  o.output = dir + "/g.gguf";
  Status s = generateCheckpoint(o);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("lm_head"), std::string::npos);
  o = GeneratorOptions();
  o.arch = "gpt2";
  o.output = dir + "/x";
  s = generateCheckpoint(o);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("gemma2"), std::string::npos);
  o.arch = "qwen2";
  o.preset = "llama-3.2-1b";
  EXPECT_FALSE(generateCheckpoint(o).ok());
  o.preset = "tiny";
  o.vocab = 100;
  EXPECT_FALSE(generateCheckpoint(o).ok());
  o.vocab.reset();
  o.heads = 5;
  EXPECT_FALSE(generateCheckpoint(o).ok());
}

} // namespace
