//===- FamiliesTest.cpp - Every family of the registry, checked -----------===//
//
// What every FamilySpec must satisfy, checked over the registry, so that a
// new family (one file in lib/Models/Families) is covered without editing a
// test: unique names and working lookups, consistent GGUF tables, and a
// generated checkpoint of the family in both formats that reads back with
// the configuration it was generated from.
//
//===----------------------------------------------------------------------===//

#include "../Formats/TestUtil.h"
#include "etllm/Testing/Generator.h"
#include "etllm/Formats/Gguf.h"
#include "etllm/Models/Registry.h"

#include <cctype>
#include <set>

using namespace etllm::formats;
using namespace etllm::formats::testing;
using namespace etllm::models;

namespace {

TEST(Registry, NamesAreUniqueAndLookupsFindThem) {
  ASSERT_FALSE(families().empty());
  std::set<std::string> ids, archs, types, ggufArchs;
  int llama2c = 0;
  for (const FamilySpec *f : families()) {
    ASSERT_TRUE(f->id && f->hfArchitecture && f->hfModelType && f->classPrefix);
    SCOPED_TRACE(f->id);
    for (const char *c = f->id; *c; ++c)
      EXPECT_FALSE(std::isupper(static_cast<unsigned char>(*c)));
    EXPECT_TRUE(ids.insert(f->id).second);
    EXPECT_TRUE(archs.insert(f->hfArchitecture).second);
    EXPECT_TRUE(types.insert(f->hfModelType).second);
    EXPECT_EQ(findById(f->id), f);
    EXPECT_EQ(findByArchitecture(f->hfArchitecture), f);
    EXPECT_EQ(findByModelType(f->hfModelType), f);
    EXPECT_NE(etllm::models::supportedArchitectures().find(f->hfArchitecture),
              std::string::npos);
    EXPECT_NE(supportedIds().find(f->id), std::string::npos);
    if (f->gguf.arch) {
      EXPECT_EQ(ggufArchForModelType(f->hfModelType), f->gguf.arch);
      const FamilySpec *reader = findByGgufArch(f->gguf.arch);
      ASSERT_NE(reader, nullptr) << "no family opens " << f->gguf.arch;
      // A family that needs a key to read back (Mixtral: "llama" with
      // expert_count) is found with that key, the plain one without it.
      const GgufKey key = f->gguf.readsBackWithKey;
      if (key != GgufKey::None)
        reader = findByGgufArch(f->gguf.arch,
                                [&](GgufKey k) -> std::optional<int64_t> {
                                  if (k == key)
                                    return 1;
                                  return std::nullopt;
                                });
      if (f->gguf.readsBack && f->gguf.identityKey == GgufKey::None) {
        EXPECT_EQ(reader, f);
        EXPECT_TRUE(ggufArchs
                        .insert(std::string(f->gguf.arch) + "/" +
                                std::to_string(static_cast<int>(key)))
                        .second);
      } else if (f->gguf.readsBack) {
        // Families sharing an architecture: a file with the family's
        // identity value opens as it, one without the key as the default.
        EXPECT_EQ(findByGgufArch(f->gguf.arch,
                                 [&](GgufKey k) -> std::optional<int64_t> {
                                   if (k == f->gguf.identityKey)
                                     return f->gguf.identityValue;
                                   return std::nullopt;
                                 }),
                  f);
        EXPECT_TRUE(reader->gguf.identityDefault);
        EXPECT_EQ(f == reader, f->gguf.identityDefault);
      }
    }
    llama2c += f->llama2c;
  }
  EXPECT_EQ(llama2c, 1);
  EXPECT_EQ(&llama2cFamily(),
            findByArchitecture(llama2cFamily().hfArchitecture));
  EXPECT_EQ(findByArchitecture("GPT2LMHeadModel"), nullptr);
  EXPECT_EQ(findByModelType(""), nullptr);
  EXPECT_EQ(findByGgufArch("gpt2"), nullptr);
}

TEST(Registry, GgufTablesAreOneToOne) {
  for (const FamilySpec *f : families()) {
    if (!f->gguf.arch)
      continue;
    SCOPED_TRACE(f->id);
    std::set<GgufTensor> gguf;
    std::set<HfModule> hf;
    for (const GgufTensorName &row : f->gguf.tensors) {
      EXPECT_TRUE(gguf.insert(row.gguf).second) << ggufTensorName(row.gguf);
      EXPECT_TRUE(hf.insert(row.hf).second)
          << f->hfNames[static_cast<size_t>(row.hf)];
      EXPECT_NE(std::string(ggufTensorName(row.gguf)), "");
    }
    std::set<GgufKey> keys;
    for (GgufKey k : f->gguf.metadata) {
      EXPECT_TRUE(keys.insert(k).second) << ggufKeyName(k);
      EXPECT_NE(std::string(ggufKeyName(k)), "");
    }
  }
}

/// The generated configuration of a family.
ModelConfig generated(const FamilySpec &f) {
  GeneratorOptions o;
  o.arch = f.id;
  Result<ModelConfig> c = generatorConfig(o);
  EXPECT_TRUE(c.ok()) << c.message();
  return c.ok() ? *c : ModelConfig();
}

TEST(Families, EveryExpectedTensorHasOneGgufName) {
  for (const FamilySpec *f : families()) {
    if (!f->gguf.arch)
      continue;
    SCOPED_TRACE(f->id);
    ModelConfig c = generated(*f);
    auto tensors = expectedTensors(c);
    ASSERT_TRUE(tensors.ok()) << tensors.message();
    // The family's own table (Mixtral's GGUF arch is "llama", whose plain
    // reader is Llama); an expert's projection names its slice of the
    // stacked tensor.
    for (const ExpectedTensor &t : *tensors) {
      int64_t expert = -1;
      std::string g = hfNameToGguf(*f, t.name, &expert);
      ASSERT_FALSE(g.empty()) << t.name;
      EXPECT_EQ(ggufNameToHf(*f, g, expert), t.name) << g;
    }
  }
}

TEST(Families, ConfigJsonRoundTrips) {
  for (const FamilySpec *f : families()) {
    SCOPED_TRACE(f->id);
    ModelConfig c = generated(*f);
    auto text = toHfConfigJson(c);
    ASSERT_TRUE(text.ok()) << text.message();
    auto back = parseHfConfigText(*text, f->id);
    ASSERT_TRUE(back.ok()) << back.message() << "\n" << *text;
    expectConfigsEqual(*back, c, f->id);
  }
}

TEST(Families, GeneratedCheckpointsReadBack) {
  for (const FamilySpec *f : families()) {
    SCOPED_TRACE(f->id);
    std::string dir = freshTempDir(std::string("families_") + f->id);
    GeneratorOptions o;
    o.arch = f->id;
    o.layers = 3;
    o.seed = 9;
    auto expect = generatorConfig(o);
    ASSERT_TRUE(expect.ok()) << expect.message();
    o.format = "hf";
    o.output = dir + "/hf";
    Status s = generateCheckpoint(o);
    ASSERT_TRUE(s.ok()) << s.message();
    auto hf = openCheckpoint(o.output);
    ASSERT_TRUE(hf.ok()) << hf.message();
    expectConfigsEqual((*hf)->config(), *expect, "HF");
    if (!f->gguf.arch)
      continue;
    o.format = "gguf";
    o.output = dir + "/model.gguf";
    s = generateCheckpoint(o);
    ASSERT_TRUE(s.ok()) << s.message();
    auto gg = openCheckpoint(o.output);
    ASSERT_TRUE(gg.ok()) << gg.message();
    const ModelConfig &got = (*gg)->config();
    EXPECT_EQ((*gg)->normWeightsIncludeOne(), f->gguf.normWeightsIncludeOne);
    if (f->gguf.readsBack) {
      expectConfigsEqual(got, *expect, "GGUF");
    } else {
      // Converted to another family's architecture: the sizes survive.
      EXPECT_EQ(got.architecture, findByGgufArch(f->gguf.arch)->hfArchitecture);
      EXPECT_EQ(got.hiddenSize, expect->hiddenSize);
      EXPECT_EQ(got.numLayers, expect->numLayers);
      EXPECT_EQ(got.headDim, expect->headDim);
      EXPECT_EQ(got.vocabSize, expect->vocabSize);
    }
    for (const TensorRef &t : (*gg)->tensors()) {
      bool permuted = t.qkPermuteHeads > 0;
      bool qk = t.name.find(f->hfNames[static_cast<size_t>(HfModule::QProj)]) !=
                    std::string::npos ||
                t.name.find(f->hfNames[static_cast<size_t>(HfModule::KProj)]) !=
                    std::string::npos;
      EXPECT_EQ(permuted, f->gguf.permutesQk && qk) << t.name;
    }
  }
}

TEST(Families, GeneratorRejectsUnknownNames) {
  GeneratorOptions o;
  o.arch = "gpt2";
  expectError(generatorConfig(o), {"gpt2", supportedIds()});
  o.arch = families().front()->id;
  o.preset = "huge";
  expectError(generatorConfig(o), {"unknown preset 'huge'", "tiny"});
}

} // namespace
