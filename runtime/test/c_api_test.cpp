//===- c_api_test.cpp - The C API (etllm/runtime/c_api.h) -----------------===//
//
// Through the shared library etllm_c only, as an app calls it: creation
// with and without options, the memory budget (max_memory), struct_size
// versions, errors in etllm_last_error(), a short generation, and LoRA
// adapters applied, rescaled and removed at run time.
//
//===----------------------------------------------------------------------===//
#include "etllm/runtime/c_api.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>

namespace {

const std::string kProgram =
    std::string(ETLLM_FIXTURES_DIR) + "/tiny-llama-portable-v1.pte";

/// A llama2.c tokenizer.bin of 272 pieces (the fixture's vocabulary size):
/// <unk>, <s>, </s>, the 256 byte tokens, then 13 letters.
std::string writeTokenizer() {
  std::string path = ::testing::TempDir() + "c_api_test_tokenizer.bin";
  std::ofstream f(path, std::ios::binary);
  auto u32 = [&](uint32_t v) { f.write(reinterpret_cast<char *>(&v), 4); };
  auto piece = [&](const std::string &s) {
    float score = 0.0f;
    f.write(reinterpret_cast<char *>(&score), 4);
    u32(uint32_t(s.size()));
    f.write(s.data(), std::streamsize(s.size()));
  };
  u32(8);
  piece("<unk>");
  piece("<s>");
  piece("</s>");
  for (int b = 0; b < 256; ++b) {
    char buf[8];
    std::snprintf(buf, sizeof buf, "<0x%02X>", b);
    piece(buf);
  }
  for (char c = 'a'; c < 'a' + 13; ++c)
    piece(std::string(1, c));
  return path;
}

/// The planned bytes the error of a too-small budget reports.
uint64_t plannedBytes() {
  etllm_runner_options o;
  etllm_runner_options_init(&o);
  o.max_memory = 1;
  EXPECT_EQ(etllm_runner_create(kProgram.c_str(), &o), nullptr);
  const std::string err = etllm_last_error();
  const std::string key = "the program plans ";
  const size_t at = err.find(key);
  if (at == std::string::npos) {
    ADD_FAILURE() << err;
    return 0;
  }
  return std::stoull(err.substr(at + key.size()));
}

int collect(const char *text, size_t length, void *user) {
  static_cast<std::string *>(user)->append(text, length);
  return 0;
}

TEST(CApi, OptionsInitSetsTheSizeAndDefaults) {
  etllm_runner_options o;
  std::memset(&o, 0xff, sizeof o);
  etllm_runner_options_init(&o);
  EXPECT_EQ(o.struct_size, sizeof o);
  EXPECT_EQ(o.num_threads, 0);
  EXPECT_EQ(o.tokenizer_path, nullptr);
  EXPECT_EQ(o.max_memory, 0u);
  EXPECT_GE(ETLLM_C_API_VERSION, 2);
}

TEST(CApi, MaxMemoryRefusesAProgramThatNeedsMore) {
  etllm_runner_options o;
  etllm_runner_options_init(&o);
  o.max_memory = 4096;
  EXPECT_EQ(etllm_runner_create(kProgram.c_str(), &o), nullptr);
  const std::string err = etllm_last_error();
  EXPECT_NE(err.find(kProgram + ": the program plans "), std::string::npos)
      << err;
  EXPECT_NE(err.find("more than the memory limit of 4096 bytes"),
            std::string::npos)
      << err;
}

TEST(CApi, MaxMemoryIsTheExactBound) {
  const uint64_t need = plannedBytes();
  ASSERT_GT(need, 0u);
  const std::string tok = writeTokenizer();
  etllm_runner_options o;
  etllm_runner_options_init(&o);
  o.num_threads = 1;
  o.tokenizer_path = tok.c_str();
  o.max_memory = need - 1;
  EXPECT_EQ(etllm_runner_create(kProgram.c_str(), &o), nullptr);
  EXPECT_NE(std::string(etllm_last_error())
                .find("more than the memory limit of " +
                      std::to_string(need - 1) + " bytes"),
            std::string::npos)
      << etllm_last_error();
  o.max_memory = need;
  etllm_runner *r = etllm_runner_create(kProgram.c_str(), &o);
  ASSERT_NE(r, nullptr) << etllm_last_error();
  etllm_generation_config g;
  etllm_generation_config_init(&g);
  g.max_new_tokens = 4;
  g.temperature = 0;
  std::string text;
  EXPECT_EQ(etllm_runner_generate(r, "abc", &g, collect, &text), ETLLM_OK)
      << etllm_last_error();
  etllm_stats s;
  s.struct_size = sizeof s;
  ASSERT_EQ(etllm_runner_stats(r, &s), ETLLM_OK) << etllm_last_error();
  EXPECT_GT(s.generated_tokens, 0);
  etllm_runner_destroy(r);
}

TEST(CApi, AVersion1OptionsStructGetsTheDefaultBudget) {
  const std::string tok = writeTokenizer();
  // A caller compiled against version 1: its struct ends before
  // max_memory, whose bytes here must be ignored.
  etllm_runner_options o;
  etllm_runner_options_init(&o);
  o.struct_size = offsetof(etllm_runner_options, max_memory);
  o.num_threads = 1;
  o.tokenizer_path = tok.c_str();
  o.max_memory = 1; // not part of a version-1 struct
  etllm_runner *r = etllm_runner_create(kProgram.c_str(), &o);
  ASSERT_NE(r, nullptr) << etllm_last_error();
  etllm_runner_destroy(r);
  o.struct_size = offsetof(etllm_runner_options, max_memory) - 1;
  EXPECT_EQ(etllm_runner_create(kProgram.c_str(), &o), nullptr);
  EXPECT_NE(std::string(etllm_last_error()).find("struct_size is too small"),
            std::string::npos)
      << etllm_last_error();
}

TEST(CApi, ErrorsNameTheProblem) {
  EXPECT_EQ(etllm_runner_create(nullptr, nullptr), nullptr);
  EXPECT_NE(std::string(etllm_last_error()).find("program_path is NULL"),
            std::string::npos);
  EXPECT_EQ(etllm_runner_create("/nonexistent/x.pte", nullptr), nullptr);
  EXPECT_NE(std::string(etllm_last_error()).find("/nonexistent/x.pte"),
            std::string::npos)
      << etllm_last_error();
}

/// Greedy text of `n` tokens after "abc".
std::string greedy(etllm_runner *r, int n = 8) {
  etllm_generation_config g;
  etllm_generation_config_init(&g);
  g.max_new_tokens = n;
  g.temperature = 0;
  std::string text;
  EXPECT_EQ(etllm_runner_generate(r, "abc", &g, collect, &text), ETLLM_OK)
      << etllm_last_error();
  return text;
}

TEST(CApi, LoraAdaptersApplyRescaleAndRemove) {
  const std::string dir = std::string(ETLLM_FIXTURES_DIR) + "/";
  const std::string program = dir + "tiny-llama-lora-v1.pte";
  const std::string adapter = dir + "tiny-llama-lora-v1.etla";
  const std::string tok = writeTokenizer();
  etllm_runner_options o;
  etllm_runner_options_init(&o);
  o.num_threads = 1;
  o.tokenizer_path = tok.c_str();
  etllm_runner *r = etllm_runner_create(program.c_str(), &o);
  ASSERT_NE(r, nullptr) << etllm_last_error();
  const std::string base = greedy(r);
  ASSERT_FALSE(base.empty());

  etllm_lora *l = etllm_lora_load(r, adapter.c_str());
  ASSERT_NE(l, nullptr) << etllm_last_error();
  EXPECT_EQ(greedy(r), base) << "loading applies nothing";
  ASSERT_EQ(etllm_lora_apply(l, 8.0f), ETLLM_OK) << etllm_last_error();
  const std::string adapted = greedy(r);
  EXPECT_NE(adapted, base);
  // Rescaling: the same scale gives the same text, another one other text.
  ASSERT_EQ(etllm_lora_apply(l, -8.0f), ETLLM_OK) << etllm_last_error();
  EXPECT_NE(greedy(r), adapted);
  ASSERT_EQ(etllm_lora_apply(l, 8.0f), ETLLM_OK) << etllm_last_error();
  EXPECT_EQ(greedy(r), adapted);
  // A NaN scale is refused and changes nothing.
  EXPECT_EQ(etllm_lora_apply(l, NAN), ETLLM_INVALID_ARGUMENT);
  EXPECT_NE(std::string(etllm_last_error()).find("not a finite number"),
            std::string::npos)
      << etllm_last_error();
  EXPECT_EQ(greedy(r), adapted);
  // Removed: the base text again; removing twice is an error.
  ASSERT_EQ(etllm_lora_remove(l), ETLLM_OK) << etllm_last_error();
  EXPECT_EQ(greedy(r), base);
  EXPECT_EQ(etllm_lora_remove(l), ETLLM_ERROR);
  EXPECT_NE(std::string(etllm_last_error()).find("not applied"),
            std::string::npos)
      << etllm_last_error();
  // Destroying an applied adapter takes it off.
  ASSERT_EQ(etllm_lora_apply(l, 8.0f), ETLLM_OK) << etllm_last_error();
  etllm_lora_destroy(l);
  EXPECT_EQ(greedy(r), base);

  // Errors name the file; the runner keeps working.
  EXPECT_EQ(etllm_lora_load(r, "/nonexistent/a.etla"), nullptr);
  EXPECT_NE(std::string(etllm_last_error()).find("/nonexistent/a.etla"),
            std::string::npos)
      << etllm_last_error();
  EXPECT_EQ(etllm_lora_load(r, program.c_str()), nullptr);
  EXPECT_NE(std::string(etllm_last_error()).find(program), std::string::npos)
      << etllm_last_error();
  EXPECT_EQ(etllm_lora_load(nullptr, adapter.c_str()), nullptr);
  EXPECT_EQ(etllm_lora_apply(nullptr, 1.0f), ETLLM_INVALID_ARGUMENT);
  EXPECT_EQ(greedy(r), base);
  etllm_runner_destroy(r);

  // An adapter for another program.
  etllm_runner *other = etllm_runner_create(kProgram.c_str(), &o);
  ASSERT_NE(other, nullptr) << etllm_last_error();
  EXPECT_EQ(etllm_lora_load(other, adapter.c_str()), nullptr);
  EXPECT_NE(std::string(etllm_last_error()).find(adapter), std::string::npos)
      << etllm_last_error();
  etllm_runner_destroy(other);
}

} // namespace
