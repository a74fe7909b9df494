//===- HostileTest.cpp - Malformed checkpoints give errors, not crashes ---===//
//
// Every case writes a bad file under testing::TempDir() and expects an Error
// whose message names the file and the problem. The mutation tests at the end
// truncate and corrupt valid files and only require that nothing crashes.
//
//===----------------------------------------------------------------------===//

#include "TestUtil.h"
#include "etllm/Testing/Generator.h"
#include "etllm/Formats/Gguf.h"
#include "etllm/Formats/Llama2c.h"
#include "etllm/Formats/Safetensors.h"

#include <random>

using namespace etllm::formats;
using namespace etllm::formats::testing;

namespace {

//===----------------------------------------------------------------------===//
// safetensors
//===----------------------------------------------------------------------===//

/// A safetensors file with the given JSON header (padded to 8) and data.
std::string stFile(const std::string &header, size_t dataBytes) {
  std::string h = header;
  while (h.size() % 8)
    h += ' ';
  Bytes b;
  b.put<uint64_t>(h.size()).raw(h).zeros(dataBytes);
  return b.data;
}

class SafetensorsHostile : public ::testing::Test {
protected:
  void SetUp() override { dir_ = freshTempDir("st_hostile"); }
  std::string write(const std::string &name, const std::string &bytes) {
    std::string p = dir_ + "/" + name;
    writeFile(p, bytes);
    return p;
  }
  std::string dir_;
};

TEST_F(SafetensorsHostile, TruncatedHeader) {
  std::string p = write("trunc.safetensors", "\x10\x00\x00");
  expectError(openSafetensors(p), {p, "truncated", "8-byte header length"});
  expectError(openCheckpoint(p), {p, "unrecognized"});
}

TEST_F(SafetensorsHostile, HeaderLengthPastEof) {
  Bytes b;
  b.put<uint64_t>(1000).raw("{\"a\":1}");
  std::string p = write("len.safetensors", b.data);
  expectError(openCheckpoint(p), {p, "header length 1000", "past the end"});
  Bytes huge;
  huge.put<uint64_t>(~0ull).raw("{}");
  p = write("huge.safetensors", huge.data);
  expectError(openSafetensors(p), {p, "header length", "past the end"});
}

TEST_F(SafetensorsHostile, OffsetsPastTheEnd) {
  std::string p = write(
      "off.safetensors",
      stFile(R"({"w":{"dtype":"F32","shape":[100],"data_offsets":[0,400]}})",
             16));
  expectError(openCheckpoint(p), {p, "'w'", "data_offsets", "past the end"});
  p = write(
      "order.safetensors",
      stFile(R"({"w":{"dtype":"F32","shape":[1],"data_offsets":[8,4]}})", 16));
  expectError(openSafetensors(p), {p, "'w'", "begin > end"});
  p = write(
      "neg.safetensors",
      stFile(R"({"w":{"dtype":"F32","shape":[1],"data_offsets":[-4,0]}})", 16));
  expectError(openSafetensors(p), {p, "'w'", "data_offsets"});
}

TEST_F(SafetensorsHostile, SizeInconsistentWithShape) {
  std::string p = write(
      "size.safetensors",
      stFile(R"({"w":{"dtype":"F16","shape":[2,3],"data_offsets":[0,8]}})",
             16));
  expectError(openSafetensors(p), {p, "'w'", "covers 8 bytes", "needs 12"});
}

TEST_F(SafetensorsHostile, AbsurdShapes) {
  std::string p =
      write("absurd.safetensors",
            stFile(R"({"w":{"dtype":"F32","shape":[4294967296,4294967296],)"
                   R"("data_offsets":[0,16]}})",
                   16));
  expectError(openSafetensors(p), {p, "'w'", "overflow"});
  p = write("bigdim.safetensors",
            stFile(R"({"w":{"dtype":"F32","shape":[18446744073709551615],)"
                   R"("data_offsets":[0,16]}})",
                   16));
  expectError(openSafetensors(p), {p, "'w'", "shape"});
  p = write(
      "float.safetensors",
      stFile(R"({"w":{"dtype":"F32","shape":[2.5],"data_offsets":[0,8]}})",
             16));
  expectError(openSafetensors(p), {p, "'w'", "non-integer"});
}

TEST_F(SafetensorsHostile, NegativeAndZeroSizes) {
  std::string p = write(
      "negdim.safetensors",
      stFile(R"({"w":{"dtype":"F32","shape":[-1,4],"data_offsets":[0,16]}})",
             16));
  expectError(openSafetensors(p), {p, "'w'", "negative"});
  // Zero-sized tensors are legal safetensors...
  p = write(
      "zero.safetensors",
      stFile(R"({"w":{"dtype":"F32","shape":[0,4],"data_offsets":[0,0]}})", 0));
  auto ok = openSafetensors(p);
  ASSERT_TRUE(ok.ok()) << ok.message();
  EXPECT_EQ((*ok)->find("w")->nbytes, 0u);
}

TEST_F(SafetensorsHostile, UnknownDType) {
  std::string p = write(
      "dtype.safetensors",
      stFile(R"({"w":{"dtype":"F8_E4M3","shape":[4],"data_offsets":[0,4]}})",
             4));
  expectError(openSafetensors(p), {p, "'w'", "unsupported dtype 'F8_E4M3'"});
  p = write("nodtype.safetensors",
            stFile(R"({"w":{"shape":[4],"data_offsets":[0,4]}})", 4));
  expectError(openSafetensors(p), {p, "'w'", "'dtype'"});
}

TEST_F(SafetensorsHostile, BadJson) {
  std::string p = write("json.safetensors", stFile("{\"w\": {\"dtype\": ", 4));
  expectError(openCheckpoint(p), {p, "invalid safetensors JSON"});
  p = write("notobj.safetensors", stFile(R"({"w": 5})", 4));
  expectError(openSafetensors(p), {p, "'w'", "not a JSON object"});
  p = write("meta.safetensors", stFile(R"({"__metadata__": {"k": 1}})", 0));
  expectError(openSafetensors(p), {p, "__metadata__", "'k'"});
  // Deeply nested JSON must not exhaust the stack (parse, message, free).
  std::string deep = std::string(R"({"w":{"dtype":"F32","shape":[)") +
                     std::string(200000, '[') + std::string(200000, ']') +
                     R"(],"data_offsets":[0,4]}})";
  p = write("deep.safetensors", stFile(deep, 4));
  expectError(openSafetensors(p), {p, "'w'", "non-integer dimension"});
  p = write("deep2.safetensors", stFile(std::string(300000, '['), 4));
  expectError(openCheckpoint(p), {p});
}

/// A generated tiny HF llama with one tensor left out or the config edited.
class HfDirHostile : public ::testing::Test {
protected:
  void SetUp() override {
    dir_ = freshTempDir("hf_hostile");
    GeneratorOptions o;
    o.output = dir_ + "/src";
    ASSERT_TRUE(generateCheckpoint(o).ok());
    auto ck = openCheckpoint(o.output);
    ASSERT_TRUE(ck.ok()) << ck.message();
    src_ = std::move(*ck);
  }
  /// Copies the generated model into `name`, dropping tensor `skip`.
  std::string copyWithout(const std::string &name, const std::string &skip,
                          const std::string &configText = "") {
    std::string out = dir_ + "/" + name;
    EXPECT_EQ(std::system(("mkdir -p '" + out + "'").c_str()), 0);
    writeFile(out + "/config.json", configText.empty()
                                        ? readFile(dir_ + "/src/config.json")
                                        : configText);
    SafetensorsWriter w;
    for (const TensorRef &t : src_->tensors())
      if (t.name != skip) {
        EXPECT_TRUE(w.addTensor(t.name, t.dtype, t.shape).ok());
      }
    EXPECT_TRUE(w.open(out + "/model.safetensors").ok());
    for (const TensorRef &t : src_->tensors())
      if (t.name != skip) {
        EXPECT_TRUE(w.write(t.data, t.nbytes).ok());
      }
    EXPECT_TRUE(w.finish().ok());
    return out;
  }
  std::string dir_;
  std::unique_ptr<Checkpoint> src_;
};

TEST_F(HfDirHostile, MissingTensor) {
  std::string d = copyWithout("missing", "model.layers.1.mlp.up_proj.weight");
  expectError(openCheckpoint(d),
              {d, "missing tensor 'model.layers.1.mlp.up_proj.weight'",
               "LlamaForCausalLM"});
  OpenOptions lax;
  lax.validateTensors = false;
  auto ck = openCheckpoint(d, lax);
  ASSERT_TRUE(ck.ok()) << ck.message();
  Status s = validateAgainstConfig(**ck, (*ck)->config());
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("model.layers.1.mlp.up_proj.weight"),
            std::string::npos);
}

TEST_F(HfDirHostile, ConfigWeightMismatch) {
  std::string cfg = readFile(dir_ + "/src/config.json");
  size_t at = cfg.find("\"intermediate_size\": 128");
  ASSERT_NE(at, std::string::npos);
  cfg.replace(at, 24, "\"intermediate_size\": 96");
  std::string d = copyWithout("mismatch", "", cfg);
  expectError(openCheckpoint(d),
              {d + "/model.safetensors", "model.layers.0.mlp.gate_proj.weight",
               "[128, 64]", "[96, 64]"});
}

TEST_F(HfDirHostile, BadConfigJson) {
  std::string d = copyWithout("badjson", "", "{\"architectures\": [");
  expectError(openCheckpoint(d), {d + "/config.json", "invalid JSON"});
  d = copyWithout("badkey", "",
                  "{\"architectures\": [\"LlamaForCausalLM\"], "
                  "\"hidden_size\": 64, \"intermediate_size\": 128, "
                  "\"num_hidden_layers\": 2, \"num_attention_heads\": 4, "
                  "\"vocab_size\": -5}");
  expectError(openCheckpoint(d), {d + "/config.json", "'vocab_size'"});
}

//===----------------------------------------------------------------------===//
// GGUF
//===----------------------------------------------------------------------===//

/// Hand-assembled GGUF bytes.
struct GgufBytes {
  uint32_t version = 3;
  std::vector<std::string> kvs;
  std::vector<std::string> infos;
  std::string data;
  uint64_t alignment = 32;
  std::optional<uint64_t> kvCount, tensorCount;

  GgufBytes &kv(const std::string &key, uint32_t type, const Bytes &value) {
    Bytes b;
    b.str(key).put(type).raw(value.data);
    kvs.push_back(b.data);
    return *this;
  }
  GgufBytes &u32(const std::string &key, uint32_t v) {
    return kv(key, 4, Bytes().put(v));
  }
  GgufBytes &f32(const std::string &key, float v) {
    return kv(key, 6, Bytes().put(v));
  }
  GgufBytes &str(const std::string &key, const std::string &v) {
    return kv(key, 8, Bytes().str(v));
  }
  GgufBytes &tensor(const std::string &name, std::vector<uint64_t> ne,
                    uint32_t type, uint64_t offset) {
    Bytes b;
    b.str(name).put<uint32_t>(static_cast<uint32_t>(ne.size()));
    for (uint64_t d : ne)
      b.put(d);
    b.put(type).put(offset);
    infos.push_back(b.data);
    return *this;
  }
  std::string build() const {
    Bytes b;
    b.raw("GGUF").put(version);
    b.put<uint64_t>(tensorCount.value_or(infos.size()));
    b.put<uint64_t>(kvCount.value_or(kvs.size()));
    for (const std::string &k : kvs)
      b.raw(k);
    for (const std::string &t : infos)
      b.raw(t);
    b.alignTo(alignment);
    b.raw(data);
    return b.data;
  }
};

/// A valid llama GGUF: 1 layer, hidden 32, vocab 8, one F32 tensor.
GgufBytes validGguf() {
  GgufBytes g;
  g.str("general.architecture", "llama")
      .u32("llama.context_length", 16)
      .u32("llama.embedding_length", 32)
      .u32("llama.block_count", 1)
      .u32("llama.feed_forward_length", 64)
      .u32("llama.attention.head_count", 2)
      .f32("llama.attention.layer_norm_rms_epsilon", 1e-5f)
      .u32("llama.vocab_size", 8);
  g.tensor("token_embd.weight", {32, 8}, 0, 0);
  g.data.assign(32 * 8 * 4, '\0');
  return g;
}

class GgufHostile : public ::testing::Test {
protected:
  void SetUp() override { dir_ = freshTempDir("gguf_hostile"); }
  std::string write(const std::string &name, const std::string &bytes) {
    std::string p = dir_ + "/" + name;
    writeFile(p, bytes);
    return p;
  }
  std::string dir_;
};

TEST_F(GgufHostile, ValidBaseOpens) {
  std::string p = write("ok.gguf", validGguf().build());
  auto ck = openGguf(p);
  ASSERT_TRUE(ck.ok()) << ck.message();
  EXPECT_EQ((*ck)->config().vocabSize, 8);
  // openCheckpoint validates against the config: the layers are missing.
  expectError(openCheckpoint(p),
              {p, "missing tensor 'model.layers.0.input_layernorm.weight'"});
}

TEST_F(GgufHostile, TruncatedHeader) {
  std::string p = write("t1.gguf", std::string("GGUF\x03\x00", 6));
  expectError(openCheckpoint(p), {p, "truncated GGUF header"});
  std::string full = validGguf().build();
  p = write("t2.gguf", full.substr(0, 40));
  expectError(openGguf(p), {p, "metadata count 8 cannot fit"});
  p = write("t2b.gguf", full.substr(0, 200));
  expectError(openGguf(p), {p, "metadata key #4", "past the end of the file"});
  p = write("t3.gguf", full.substr(0, full.size() - 100));
  expectError(openGguf(p), {p, "token_embd.weight", "past the end"});
}

TEST_F(GgufHostile, Versions) {
  GgufBytes g = validGguf();
  g.version = 1;
  std::string p = write("v1.gguf", g.build());
  expectError(openGguf(p), {p, "version 1"});
  g.version = 7;
  p = write("v7.gguf", g.build());
  expectError(openGguf(p), {p, "unsupported GGUF version 7"});
  g.version = 0x03000000;
  p = write("be.gguf", g.build());
  expectError(openGguf(p), {p, "big-endian"});
  g.version = 0;
  p = write("v0.gguf", g.build());
  expectError(openGguf(p), {p, "unsupported GGUF version 0"});
  g.version = 2; // v2 has the same layout as v3
  p = write("v2.gguf", g.build());
  auto v2 = openGguf(p);
  ASSERT_TRUE(v2.ok()) << v2.message();
  EXPECT_EQ((*v2)->ggufVersion(), 2u);
}

TEST_F(GgufHostile, HugeCounts) {
  GgufBytes g = validGguf();
  g.tensorCount = 1ull << 60;
  std::string p = write("tc.gguf", g.build());
  expectError(openGguf(p), {p, "tensor count", "cannot fit"});
  g = validGguf();
  g.kvCount = ~0ull;
  p = write("kc.gguf", g.build());
  expectError(openGguf(p), {p, "metadata count", "cannot fit"});
}

TEST_F(GgufHostile, HugeStringLength) {
  GgufBytes g = validGguf();
  Bytes v;
  v.put<uint64_t>(1ull << 62).raw("abc");
  g.kv("general.name", 8, v);
  std::string p = write("str.gguf", g.build());
  expectError(openGguf(p),
              {p, "'general.name'", "string length", "past the end"});
  // A huge key length.
  g = validGguf();
  Bytes k;
  k.put<uint64_t>(1ull << 40);
  g.kvs.push_back(k.data);
  p = write("key.gguf", g.build());
  expectError(openGguf(p), {p, "metadata key #8", "string length"});
}

TEST_F(GgufHostile, HugeArrayCount) {
  GgufBytes g = validGguf();
  Bytes v;
  v.put<uint32_t>(6).put<uint64_t>(1ull << 61).put(1.0f);
  g.kv("tokenizer.ggml.scores", 9, v);
  std::string p = write("arr.gguf", g.build());
  expectError(openGguf(p),
              {p, "'tokenizer.ggml.scores'", "array count", "cannot fit"});
  // A count that fits the file but would decode into too many values.
  g = validGguf();
  uint64_t many = (1ull << 22) + 8;
  Bytes big;
  big.put<uint32_t>(0).put<uint64_t>(many).zeros(many);
  g.kv("x.bytes", 9, big);
  p = write("many.gguf", g.build());
  expectError(openGguf(p), {p, "'x.bytes'", "more than"});
  // Nesting deeper than the limit.
  g = validGguf();
  Bytes deep;
  for (int i = 0; i < 20; ++i)
    deep.put<uint32_t>(9).put<uint64_t>(1);
  deep.put<uint32_t>(4).put<uint64_t>(0);
  g.kv("x.deep", 9, deep);
  p = write("deep.gguf", g.build());
  expectError(openGguf(p), {p, "'x.deep'", "nested deeper"});
}

TEST_F(GgufHostile, UnknownValueType) {
  GgufBytes g = validGguf();
  g.kv("x.weird", 99, Bytes().put<uint32_t>(0));
  std::string p = write("type.gguf", g.build());
  expectError(openGguf(p), {p, "'x.weird'", "unknown metadata value type 99"});
  g = validGguf();
  g.kv("x.arr", 9, Bytes().put<uint32_t>(13).put<uint64_t>(1));
  p = write("etype.gguf", g.build());
  expectError(openGguf(p), {p, "'x.arr'", "unknown array element type 13"});
  g = validGguf();
  g.kv("x.bool", 7, Bytes().put<uint8_t>(2));
  p = write("bool.gguf", g.build());
  expectError(openGguf(p), {p, "'x.bool'", "invalid bool"});
}

TEST_F(GgufHostile, BadAlignment) {
  GgufBytes g = validGguf();
  g.u32("general.alignment", 48);
  std::string p = write("align48.gguf", g.build());
  expectError(openGguf(p), {p, "general.alignment", "48", "power of two"});
  g = validGguf();
  g.u32("general.alignment", 0);
  p = write("align0.gguf", g.build());
  expectError(openGguf(p), {p, "general.alignment", "power of two"});
  g = validGguf();
  g.str("general.alignment", "32");
  p = write("alignstr.gguf", g.build());
  expectError(openGguf(p), {p, "general.alignment", "string"});
  // Offsets must respect the alignment.
  g = validGguf();
  g.infos.clear();
  g.tensor("token_embd.weight", {32, 8}, 0, 16);
  g.data.append(32, '\0');
  p = write("offalign.gguf", g.build());
  expectError(openGguf(p), {p, "'token_embd.weight'",
                            "multiple of the "
                            "alignment 32"});
}

TEST_F(GgufHostile, BadTensorInfos) {
  auto withTensor = [&](const std::string &file, std::vector<uint64_t> ne,
                        uint32_t type, uint64_t offset) {
    GgufBytes g = validGguf();
    g.tensor("bad.weight", std::move(ne), type, offset);
    return write(file, g.build());
  };
  std::string p = withTensor("dims5.gguf", {1, 1, 1, 1, 1}, 0, 1024);
  expectError(openGguf(p), {p, "'bad.weight'", "n_dims 5"});
  p = withTensor("dim0.gguf", {4, 0}, 0, 1024);
  expectError(openGguf(p), {p, "'bad.weight'", "ne[1] = 0"});
  p = withTensor("overflow.gguf", {1ull << 32, 1ull << 32, 1ull << 32}, 0,
                 1024);
  expectError(openGguf(p), {p, "'bad.weight'", "overflow"});
  p = withTensor("q2k.gguf", {256}, 10, 1024);
  expectError(openGguf(p), {p, "'bad.weight'", "Q2_K", "unsupported"});
  p = withTensor("q8rows.gguf", {33, 2}, 8, 1024);
  expectError(openGguf(p), {p, "'bad.weight'", "multiple of the Q8_0 block"});
  p = withTensor("past.gguf", {4}, 0, 1ull << 40);
  expectError(openGguf(p), {p, "'bad.weight'", "past the end"});
  p = withTensor("wrap.gguf", {4}, 0, ~0ull - 31);
  expectError(openGguf(p), {p, "'bad.weight'", "past the end"});
  GgufBytes g = validGguf();
  g.tensor("token_embd.weight", {32, 8}, 0, 0);
  p = write("duptensor.gguf", g.build());
  expectError(openGguf(p), {p, "duplicate tensor 'model.embed_tokens.weight'"});
}

TEST_F(GgufHostile, MetadataProblems) {
  GgufBytes g = validGguf();
  g.str("general.architecture", "llama");
  std::string p = write("dupkey.gguf", g.build());
  expectError(openGguf(p), {p, "duplicate metadata key "
                               "'general.architecture'"});
  g = validGguf();
  g.kvs.erase(g.kvs.begin());
  p = write("noarch.gguf", g.build());
  expectError(openGguf(p), {p, "general.architecture", "missing"});
  g = validGguf();
  g.kvs[0] = GgufBytes().str("general.architecture", "gpt2").kvs[0];
  p = write("gpt2.gguf", g.build());
  expectError(openGguf(p),
              {p, "unsupported architecture 'gpt2'", "qwen3", "gemma2"});
  g = validGguf();
  g.kvs.erase(g.kvs.begin() + 2); // llama.embedding_length
  p = write("noembd.gguf", g.build());
  expectError(openGguf(p), {p, "'llama.embedding_length'", "missing"});
  g = validGguf();
  g.kvs[2] = GgufBytes().str("llama.embedding_length", "32").kvs[0];
  p = write("strembd.gguf", g.build());
  expectError(openGguf(p), {p, "'llama.embedding_length'", "string"});
  g = validGguf();
  g.kvs[5] = GgufBytes().u32("llama.attention.head_count", 3).kvs[0];
  p = write("heads.gguf", g.build());
  expectError(openGguf(p), {p, "'llama.attention.head_count'", "divide"});
  g = validGguf();
  g.kv("tokenizer.ggml.tokens", 9,
       Bytes().put<uint32_t>(8).put<uint64_t>(2).str("a").str("b"));
  g.kv("tokenizer.ggml.scores", 9,
       Bytes().put<uint32_t>(6).put<uint64_t>(1).put(0.0f));
  p = write("scores.gguf", g.build());
  expectError(openGguf(p), {p, "'tokenizer.ggml.scores'", "1 scores for 2"});
  g = validGguf();
  g.kv("tokenizer.ggml.tokens", 9,
       Bytes().put<uint32_t>(8).put<uint64_t>(2).str("a").str("b"));
  g.u32("tokenizer.ggml.bos_token_id", 5);
  p = write("bos.gguf", g.build());
  expectError(openGguf(p), {p, "'tokenizer.ggml.bos_token_id'", "outside"});
  g = validGguf();
  g.kv("tokenizer.ggml.tokens", 9,
       Bytes().put<uint32_t>(4).put<uint64_t>(1).put<uint32_t>(7));
  p = write("tokint.gguf", g.build());
  expectError(openGguf(p), {p, "'tokenizer.ggml.tokens'", "array of string"});
  g = validGguf();
  g.str("llama.rope.scaling.type", "yarn");
  p = write("yarn.gguf", g.build());
  expectError(openGguf(p), {p, "'llama.rope.scaling.type'", "yarn"});
}

/// Rewrites a generated GGUF, dropping one tensor or overriding a key.
std::string rewriteGguf(const Checkpoint &src, const std::string &out,
                        const std::string &skipTensor,
                        const std::string &key = "",
                        std::optional<GgufValue> value = std::nullopt) {
  GgufWriter w(src.ggufAlignment());
  for (const auto &kv : src.metadataEntries())
    w.set(kv.first, kv.first == key && value ? *value : kv.second);
  for (const TensorRef &t : src.tensors())
    if (t.sourceName != skipTensor) {
      EXPECT_TRUE(w.addTensor(t.sourceName, t.dtype, t.shape).ok());
    }
  EXPECT_TRUE(w.open(out).ok());
  for (const TensorRef &t : src.tensors())
    if (t.sourceName != skipTensor) {
      EXPECT_TRUE(w.write(t.data, t.nbytes).ok());
    }
  EXPECT_TRUE(w.finish().ok());
  return out;
}

TEST_F(GgufHostile, MissingTensorAndConfigMismatch) {
  GeneratorOptions o;
  o.arch = "qwen2";
  o.format = "gguf";
  o.output = dir_ + "/src.gguf";
  ASSERT_TRUE(generateCheckpoint(o).ok());
  auto src = openCheckpoint(o.output);
  ASSERT_TRUE(src.ok()) << src.message();
  std::string p =
      rewriteGguf(**src, dir_ + "/nobias.gguf", "blk.1.attn_k.bias");
  expectError(openCheckpoint(p),
              {p, "missing tensor 'model.layers.1.self_attn.k_proj.bias'",
               "Qwen2ForCausalLM"});
  p = rewriteGguf(**src, dir_ + "/ffn.gguf", "", "qwen2.feed_forward_length",
                  GgufValue::u32(96));
  expectError(openCheckpoint(p),
              {p, "model.layers.0.mlp.gate_proj.weight",
               "'blk.0.ffn_gate.weight'", "[128, 64]", "[96, 64]"});
  // The rewritten-but-unchanged file opens fine.
  p = rewriteGguf(**src, dir_ + "/same.gguf", "");
  EXPECT_TRUE(openCheckpoint(p).ok());
}

//===----------------------------------------------------------------------===//
// llama2.c
//===----------------------------------------------------------------------===//

class Llama2cHostile : public ::testing::Test {
protected:
  void SetUp() override { dir_ = freshTempDir("l2c_hostile"); }
  std::string write(const std::string &name, const Llama2cHeader &h,
                    int64_t floats) {
    Bytes b;
    b.put(h);
    b.zeros(static_cast<size_t>(floats) * 4);
    std::string p = dir_ + "/" + name;
    writeFile(p, b.data);
    return p;
  }
  std::string dir_;
};

TEST_F(Llama2cHostile, SizeMismatch) {
  Llama2cHeader h{8, 16, 1, 2, 2, 10, 4};
  uint64_t size = llama2cExpectedFileSize(h, "x").value();
  int64_t floats = static_cast<int64_t>((size - 28) / 4);
  std::string ok = write("ok.bin", h, floats);
  EXPECT_TRUE(openCheckpoint(ok).ok());
  std::string p = write("long.bin", h, floats + 1);
  expectError(openCheckpoint(p),
              {p, "file size", "does not match", std::to_string(size)});
  p = write("short.bin", h, floats - 1);
  expectError(openLlama2c(p), {p, "does not match"});
}

TEST_F(Llama2cHostile, TruncatedAndImplausibleHeaders) {
  std::string p = dir_ + "/tiny.bin";
  writeFile(p, std::string(12, '\x01'));
  expectError(openLlama2c(p), {p, "truncated llama2.c header"});
  expectError(openCheckpoint(p), {p, "unrecognized"});
  p = write("heads0.bin", {8, 16, 1, 0, 2, 10, 4}, 100);
  expectError(openLlama2c(p), {p, "'n_heads' = 0"});
  p = write("heads3.bin", {8, 16, 1, 3, 3, 10, 4}, 100);
  expectError(openLlama2c(p), {p, "'n_heads' = 3", "does not divide dim"});
  p = write("kv.bin", {8, 16, 1, 2, 4, 10, 4}, 100);
  expectError(openLlama2c(p), {p, "'n_kv_heads' = 4"});
  p = write("negdim.bin", {-8, 16, 1, 2, 2, 10, 4}, 100);
  expectError(openLlama2c(p), {p, "'dim' = -8"});
  p = write("huge.bin", {2147483647, 2147483647, 4096, 1, 1, 2147483647, 4},
            10);
  expectError(openLlama2c(p), {p, "'dim'", "10000000"});
  p = write("zerovocab.bin", {8, 16, 1, 2, 2, 0, 4}, 100);
  expectError(openLlama2c(p), {p, "'vocab_size' = 0"});
  p = write("ak42.bin", {0x616b3432, 1, 1, 1, 1, 1, 1}, 10);
  expectError(openLlama2c(p), {p, "version 1/2"});
  // Random bytes are recognized as nothing.
  std::string junk(100, '\0');
  for (size_t i = 0; i < junk.size(); ++i)
    junk[i] = static_cast<char>(i * 97 + 13);
  p = dir_ + "/junk.dat";
  writeFile(p, junk);
  expectError(openCheckpoint(p), {p, "unrecognized checkpoint format"});
}

//===----------------------------------------------------------------------===//
// Mutations: no crash on any truncation or corruption
//===----------------------------------------------------------------------===//

void mutateAndOpen(const std::string &dir, const std::string &name,
                   const std::string &original, size_t corruptPrefix) {
  std::mt19937 rng(42);
  std::string p = dir + "/" + name;
  // Truncations at ~300 points spread over the file (and every byte of the
  // first 64).
  std::vector<size_t> cuts;
  for (size_t i = 0; i < 64 && i < original.size(); ++i)
    cuts.push_back(i);
  for (size_t i = 0; i < 300; ++i)
    cuts.push_back(original.size() * i / 300);
  for (size_t cut : cuts) {
    writeFile(p, original.substr(0, cut));
    auto r = openCheckpoint(p);
    if (!r.ok()) {
      EXPECT_NE(r.message().find(p), std::string::npos) << r.message();
    }
  }
  // Random byte corruption within the header region.
  for (int i = 0; i < 300; ++i) {
    std::string bad = original;
    int flips = 1 + static_cast<int>(rng() % 4);
    for (int f = 0; f < flips; ++f)
      bad[rng() % std::min(bad.size(), corruptPrefix)] =
          static_cast<char>(rng());
    writeFile(p, bad);
    auto r = openCheckpoint(p);
    if (!r.ok())
      EXPECT_NE(r.message().find(p), std::string::npos) << r.message();
    else
      for (const TensorRef &t : (*r)->tensors())
        ASSERT_TRUE((*r)->files().front()->contains(t.fileOffset, t.nbytes));
  }
}

TEST(Mutations, NoCrashOnCorruptFiles) {
  std::string dir = freshTempDir("mutations");
  GeneratorOptions o;
  o.vocab = 300;
  o.hidden = 32;
  o.layers = 1;
  o.ffn = 64;
  o.heads = 2;
  o.kvHeads = 1;
  o.format = "gguf";
  o.output = dir + "/src.gguf";
  ASSERT_TRUE(generateCheckpoint(o).ok());
  std::string gguf = readFile(o.output);
  mutateAndOpen(dir, "m.gguf", gguf, gguf.size());

  o.format = "hf";
  o.output = dir + "/hf";
  ASSERT_TRUE(generateCheckpoint(o).ok());
  std::string st = readFile(o.output + "/model.safetensors");
  uint64_t headerLen;
  std::memcpy(&headerLen, st.data(), 8);
  mutateAndOpen(dir, "m.safetensors", st, 8 + headerLen);

  Llama2cHeader h{8, 16, 1, 2, 2, 10, 4};
  Bytes b;
  b.put(h).zeros(llama2cExpectedFileSize(h, "x").value() - 28);
  mutateAndOpen(dir, "m.bin", b.data, 28);
}

} // namespace
