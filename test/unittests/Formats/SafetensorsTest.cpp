//===- SafetensorsTest.cpp - safetensors files and HF directories ---------===//

#include "etllm/Testing/Generator.h"
#include "etllm/Formats/Safetensors.h"
#include "TestUtil.h"

using namespace etllm::formats;
using namespace etllm::formats::testing;

namespace {

TEST(Safetensors, WriterRoundTripAndBareFileDetection) {
  std::string dir = freshTempDir("st_roundtrip");
  std::string path = dir + "/weights.bin"; // extension is irrelevant
  SafetensorsWriter w;
  w.setMetadata("format", "pt");
  ASSERT_TRUE(w.addTensor("b", DType::I64, {3}).ok());
  ASSERT_TRUE(w.addTensor("a", DType::BF16, {2, 2}).ok());
  ASSERT_TRUE(w.addTensor("flag", DType::BOOL, {1}).ok());
  EXPECT_FALSE(w.addTensor("a", DType::F32, {1}).ok());
  EXPECT_FALSE(w.addTensor("q", DType::Q8_0, {32}).ok());
  ASSERT_TRUE(w.open(path).ok());
  int64_t b[3] = {1, -2, 3};
  uint16_t a[4] = {0x3f80, 0x4000, 0xbf80, 0x0000};
  uint8_t flag = 1;
  ASSERT_TRUE(w.write(b, sizeof(b)).ok());
  ASSERT_TRUE(w.write(a, sizeof(a)).ok());
  ASSERT_TRUE(w.write(&flag, 1).ok());
  EXPECT_FALSE(w.write(&flag, 1).ok()); // more than declared
  ASSERT_TRUE(w.finish().ok());
  std::string bytes = readFile(path);
  uint64_t headerLen;
  std::memcpy(&headerLen, bytes.data(), 8);
  EXPECT_EQ(headerLen % 8, 0u);

  auto ck = openCheckpoint(path);
  ASSERT_TRUE(ck.ok()) << ck.message();
  EXPECT_EQ((*ck)->format(), "safetensors");
  EXPECT_FALSE((*ck)->hasConfig());
  ASSERT_EQ((*ck)->tensors().size(), 3u);
  EXPECT_EQ((*ck)->tensors()[0].name, "b"); // file order
  const TensorRef *ta = (*ck)->find("a");
  ASSERT_NE(ta, nullptr);
  EXPECT_EQ(ta->dtype, DType::BF16);
  EXPECT_EQ(toFloat32(*ta).value(), (std::vector<float>{1, 2, -1, 0}));
  EXPECT_EQ(toFloat32(*(*ck)->find("b")).value(),
            (std::vector<float>{1, -2, 3}));
  EXPECT_EQ((*ck)->find("flag")->nbytes, 1u);
}

TEST(Safetensors, ShardedDirectory) {
  std::string dir = freshTempDir("st_sharded");
  GeneratorOptions o;
  o.arch = "llama";
  o.output = dir + "/single";
  ASSERT_TRUE(generateCheckpoint(o).ok());
  auto single = openCheckpoint(o.output);
  ASSERT_TRUE(single.ok()) << single.message();

  // Re-shard the tensors into two files plus an index.
  std::string sharded = dir + "/sharded";
  ASSERT_EQ(std::system(("mkdir -p '" + sharded + "' && cp '" + o.output +
                         "/config.json' '" + sharded + "/'")
                            .c_str()),
            0);
  const auto &all = (*single)->tensors();
  std::string weightMap;
  for (int shard = 0; shard < 2; ++shard) {
    std::string name =
        "model-0000" + std::to_string(shard + 1) + "-of-00002.safetensors";
    SafetensorsWriter w;
    for (size_t i = shard; i < all.size(); i += 2) {
      ASSERT_TRUE(w.addTensor(all[i].name, all[i].dtype, all[i].shape).ok());
      weightMap += std::string(weightMap.empty() ? "" : ",") + "\"" +
                   all[i].name + "\": \"" + name + "\"";
    }
    ASSERT_TRUE(w.open(sharded + "/" + name).ok());
    for (size_t i = shard; i < all.size(); i += 2)
      ASSERT_TRUE(w.write(all[i].data, all[i].nbytes).ok());
    ASSERT_TRUE(w.finish().ok());
  }
  writeFile(sharded + "/model.safetensors.index.json",
            "{\"metadata\": {\"total_size\": 1}, \"weight_map\": {" +
                weightMap + "}}");
  auto ck = openCheckpoint(sharded);
  ASSERT_TRUE(ck.ok()) << ck.message();
  EXPECT_EQ((*ck)->files().size(), 2u);
  ASSERT_EQ((*ck)->tensors().size(), all.size());
  for (const TensorRef &t : all) {
    const TensorRef *s = (*ck)->find(t.name);
    ASSERT_NE(s, nullptr) << t.name;
    EXPECT_EQ(0, std::memcmp(s->data, t.data, t.nbytes));
  }

  // A weight_map entry the shard lacks is an error naming both files.
  writeFile(sharded + "/model.safetensors.index.json",
            "{\"weight_map\": {" + weightMap +
                ", \"extra.weight\": \"model-00001-of-00002.safetensors\"}}");
  expectError(openCheckpoint(sharded),
              {"model-00001-of-00002.safetensors", "extra.weight",
               "model.safetensors.index.json"});
  writeFile(sharded + "/model.safetensors.index.json",
            "{\"weight_map\": {\"x\": \"../escape.safetensors\"}}");
  expectError(openCheckpoint(sharded), {"invalid shard file"});
  writeFile(sharded + "/model.safetensors.index.json", "{\"weight_map\": 3}");
  expectError(openCheckpoint(sharded),
              {"model.safetensors.index.json", "weight_map"});
}

TEST(Safetensors, DirectoryWithoutWeights) {
  std::string dir = freshTempDir("st_noweights");
  GeneratorOptions o;
  o.output = dir + "/m";
  ASSERT_TRUE(generateCheckpoint(o).ok());
  ASSERT_EQ(std::remove((o.output + "/model.safetensors").c_str()), 0);
  writeFile(o.output + "/pytorch_model.bin", "x");
  expectError(openCheckpoint(o.output),
              {o.output, "model.safetensors", "PyTorch"});
  ASSERT_EQ(std::remove((o.output + "/config.json").c_str()), 0);
  expectError(openCheckpoint(o.output), {o.output, "config.json"});
}

} // namespace
