//===- fixture_test.cpp - Program files of earlier formats still run ------===//
//
// The program format's compatibility rule, tested: a program file written
// by an earlier etllm (runtime/test/fixtures, never regenerated; README.md
// there says how each was made) loads, verifies and runs in this runtime
// and gives the output recorded when it was written. A change that makes
// an old file fail here breaks every program users already have.
//
// ETLLM_RECORD_FIXTURES=1 writes the .expected file of a fixture that has
// none yet (a fixture being added) from this runtime's output; it never
// rewrites a recorded one.
//
//===----------------------------------------------------------------------===//
#include "etllm/runtime/backend.h"
#include "etllm/runtime/lora.h"
#include "etllm/runtime/program.h"
#include "etllm/schema/program_generated.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <sstream>

using namespace etllm::rt;

namespace {

std::string fixture(const std::string &name) {
  return std::string(ETLLM_FIXTURES_DIR) + "/" + name;
}

/// The prompt in one call (prefill), then the fed tokens one call each
/// (decode steps through the KV caches): the last position's logits of
/// every call.
Result<std::vector<std::vector<float>>>
decode(Method &forward, const std::vector<int64_t> &prompt,
       const std::vector<int64_t> &feed) {
  std::vector<std::vector<float>> rows;
  std::vector<int64_t> input = prompt;
  int64_t pos = 0;
  for (size_t step = 0; step <= feed.size(); ++step) {
    int64_t n = int64_t(input.size());
    std::vector<int64_t> positions(n);
    for (int64_t i = 0; i < n; ++i)
      positions[i] = pos + i;
    int64_t tokSizes[2] = {1, n};
    ETLLM_RETURN_IF_ERROR(
        forward.setInput(0, DType::I64, tokSizes, 2, input.data()));
    ETLLM_RETURN_IF_ERROR(
        forward.setInput(1, DType::I64, &n, 1, positions.data()));
    ETLLM_RETURN_IF_ERROR(forward.execute());
    const Tensor &out = forward.output(0);
    if (out.dtype != DType::F32 || out.rank < 1)
      return Error("forward does not return f32 logits");
    int64_t vocab = out.dim(-1);
    const float *row = out.ptr<float>() + (out.numel() - vocab);
    rows.emplace_back(row, row + vocab);
    if (step == feed.size())
      break;
    pos += n;
    input = {feed[step]};
  }
  return rows;
}

struct Expected {
  std::vector<int64_t> prompt, feed;
  std::vector<std::vector<float>> logits;
};

Expected readExpected(const std::string &path) {
  Expected e;
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream ls(line);
    std::string key;
    ls >> key;
    if (key == "prompt:")
      for (int64_t t; ls >> t;)
        e.prompt.push_back(t);
    else if (key == "feed:")
      for (int64_t t; ls >> t;)
        e.feed.push_back(t);
    else if (key == "logits:") {
      e.logits.emplace_back();
      for (float f; ls >> f;)
        e.logits.back().push_back(f);
    }
  }
  return e;
}

void writeExpected(const std::string &path, const std::string &pte,
                   const Expected &e) {
  std::ofstream out(path);
  out << "# The output of " << pte
      << " (fixture_test.cpp): the prompt in one call, then\n"
         "# the fed tokens one call each; one logits line per call (the "
         "last position).\n";
  out << "prompt:";
  for (int64_t t : e.prompt)
    out << ' ' << t;
  out << "\nfeed:";
  for (int64_t t : e.feed)
    out << ' ' << t;
  out << "\n";
  char buf[32];
  for (const std::vector<float> &row : e.logits) {
    out << "logits:";
    for (float f : row) {
      std::snprintf(buf, sizeof buf, " %.9g", double(f));
      out << buf;
    }
    out << "\n";
  }
}

class Fixture : public ::testing::TestWithParam<const char *> {
protected:
  // The delegated fixtures need the backends built into this runtime.
  static void SetUpTestSuite() { registerBuiltinBackends(); }
};

TEST_P(Fixture, LoadsRunsAndGivesTheRecordedOutput) {
  std::string pte = fixture(std::string(GetParam()) + ".pte");
  std::string expectedPath = fixture(std::string(GetParam()) + ".expected");
  auto program = Program::load(pte);
  ASSERT_TRUE(program.ok()) << program.message();
  Expected expected = readExpected(expectedPath);
  bool record = std::getenv("ETLLM_RECORD_FIXTURES") != nullptr &&
                expected.prompt.empty();
  if (record) {
    expected.prompt = {1, 17, 33};
    expected.feed = {5, 250, 99, 7};
  }
  ASSERT_FALSE(expected.prompt.empty()) << "no prompt in " << expectedPath;

  // Twice, in two Modules: the second starts from fresh caches.
  for (int round = 0; round < 2; ++round) {
    SCOPED_TRACE("module " + std::to_string(round));
    auto module = Module::create(*program);
    ASSERT_TRUE(module.ok()) << module.message();
    // A fixture with LoRA hooks comes with an adapter file for it, applied
    // at scale 0.5 (the adapter format is under test too).
    std::string etla = fixture(std::string(GetParam()) + ".etla");
    if (std::ifstream(etla).good()) {
      auto adapter = LoraAdapter::load(etla, **program);
      ASSERT_TRUE(adapter.ok()) << adapter.message();
      Status st = (*module)->applyLora(*adapter, 0.5);
      ASSERT_TRUE(st.ok()) << st.message();
    }
    auto forward = (*module)->method("forward");
    ASSERT_TRUE(forward.ok()) << forward.message();
    auto rows = decode(**forward, expected.prompt, expected.feed);
    ASSERT_TRUE(rows.ok()) << rows.message();
    if (record) {
      expected.logits = *rows;
      writeExpected(expectedPath, std::string(GetParam()) + ".pte", expected);
      GTEST_SKIP() << "recorded " << expectedPath;
    }
    ASSERT_EQ(rows->size(), expected.logits.size());
    for (size_t r = 0; r < rows->size(); ++r) {
      ASSERT_EQ((*rows)[r].size(), expected.logits[r].size()) << "call " << r;
      // The format is what is tested, not the kernels' last bits: a kernel
      // may round differently, a misread program gives other numbers.
      for (size_t i = 0; i < expected.logits[r].size(); ++i)
        ASSERT_NEAR((*rows)[r][i], expected.logits[r][i],
                    1e-4 * (1 + std::fabs(expected.logits[r][i])))
            << "call " << r << ", logit " << i;
    }
  }
}

// The same adapter with its matrices stored as f16 (lora.fbs a_t_f16 /
// b_t_f16, etllm-export-lora --dtype f16): the recorded output of the f32
// file within the rounding of the factors to half precision.
TEST(AdapterFormat, HalfStoredFixtureGivesTheRecordedOutput) {
  auto program = Program::load(fixture("tiny-llama-lora-v1.pte"));
  ASSERT_TRUE(program.ok()) << program.message();
  Expected expected = readExpected(fixture("tiny-llama-lora-v1.expected"));
  ASSERT_FALSE(expected.prompt.empty());
  auto module = Module::create(*program);
  ASSERT_TRUE(module.ok()) << module.message();
  auto adapter =
      LoraAdapter::load(fixture("tiny-llama-lora-v1-f16.etla"), **program);
  ASSERT_TRUE(adapter.ok()) << adapter.message();
  ASSERT_TRUE((*module)->applyLora(*adapter, 0.5).ok());
  auto forward = (*module)->method("forward");
  ASSERT_TRUE(forward.ok()) << forward.message();
  auto rows = decode(**forward, expected.prompt, expected.feed);
  ASSERT_TRUE(rows.ok()) << rows.message();
  ASSERT_EQ(rows->size(), expected.logits.size());
  for (size_t r = 0; r < rows->size(); ++r)
    for (size_t i = 0; i < expected.logits[r].size(); ++i)
      ASSERT_NEAR((*rows)[r][i], expected.logits[r][i],
                  1e-3 * (1 + std::fabs(expected.logits[r][i])))
          << "call " << r << ", logit " << i;
}

// The CPU backend was called "xnnpack": a program written then carries that
// delegate id, which the runtime resolves to the backend's id ("cpu"; its
// former ids, etllm/runtime/cpu/backend.h). The id is the file's own (this
// is an old program, not a renamed one), and tools report "cpu".
TEST(ProgramFormat, FormerCpuBackendIdRunsOnTheCpuBackend) {
  registerBuiltinBackends();
  ASSERT_NE(findBackend("cpu"), nullptr);
  EXPECT_EQ(findBackend("xnnpack"), findBackend("cpu"));
  EXPECT_EQ(canonicalBackendId("xnnpack"), "cpu");
  EXPECT_EQ(canonicalBackendId("cpu"), "cpu");
  EXPECT_EQ(canonicalBackendId("no-such-backend"), "no-such-backend");
  EXPECT_EQ(findBackend("xnnpack-fp32"), nullptr);
  for (const char *name :
       {"tiny-llama-xnnpack-fp32-v1", "tiny-llama-xnnpack-int8-v1"}) {
    SCOPED_TRACE(name);
    auto program = Program::load(fixture(std::string(name) + ".pte"));
    ASSERT_TRUE(program.ok()) << program.message();
    const auto *delegates = (*program)->schema().delegates();
    ASSERT_NE(delegates, nullptr);
    ASSERT_GE(delegates->size(), 1u);
    for (uint32_t i = 0; i < delegates->size(); ++i)
      EXPECT_EQ(delegates->Get(i)->backend()->str(), "xnnpack");
    auto module = Module::create(*program);
    ASSERT_TRUE(module.ok()) << module.message();
    ASSERT_EQ((*module)->numDelegates(), delegates->size());
    for (size_t i = 0; i < (*module)->numDelegates(); ++i)
      EXPECT_EQ((*module)->delegateBackend(i), "cpu");
  }
}

INSTANTIATE_TEST_SUITE_P(ProgramFormat, Fixture,
                         ::testing::Values("tiny-llama-portable-v1",
                                           "tiny-llama-lora-v1",
                                           "tiny-llama-gguf-v3",
                                           "tiny-llama-kv-int8-v3",
                                           "tiny-llama-xnnpack-fp32-v1",
                                           "tiny-llama-xnnpack-int8-v1"));

} // namespace
