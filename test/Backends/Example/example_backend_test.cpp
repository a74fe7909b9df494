//===- example_backend_test.cpp - The example backend end to end ----------===//
//
// Partition to the example backend, lower with its own pass, serialize its
// own blob, run it through its own runtime half, and compare with the same
// graph on portable kernels.
//
//===----------------------------------------------------------------------===//
#include "ExampleBackend.h"

#include "etllm/Pipeline/Tester.h"
#include "etllm/runtime/backend.h"

#include <gtest/gtest.h>

namespace {

// An LLM-shaped toy: forward(tokens, positions) -> logits, with a SwiGLU-like
// gate the example backend takes (silu, mul) and a linear it does not.
const char *kModel = R"mlir(
module attributes {etllm.model_config = #etllm.model_config<max_seq_len = 16, vocab_size = 8>} {
  etllm.parameter @embed : tensor<8x4xf32> = dense<[[0.1, -0.2, 0.3, 0.5], [1.0, 0.5, -0.5, 0.25], [0.0, 0.7, 0.2, -0.9], [0.4, 0.4, -0.1, 0.3], [-1.2, 0.6, 0.8, 0.1], [0.9, -0.3, 0.05, 0.6], [0.2, 0.2, 0.2, 0.2], [-0.5, 1.5, -0.7, 0.0]]> : tensor<8x4xf32>
  func.func @forward(%tokens: tensor<1x?xi64>, %pos: tensor<?xi64>) -> tensor<1x?x8xf32> {
    %e = etllm.parameter.get @embed : tensor<8x4xf32>
    %h = etllm.embedding %e, %tokens : (tensor<8x4xf32>, tensor<1x?xi64>) -> tensor<1x?x4xf32>
    %s = etllm.silu %h : tensor<1x?x4xf32>
    %g = etllm.mul %s, %h : (tensor<1x?x4xf32>, tensor<1x?x4xf32>) -> tensor<1x?x4xf32>
    %logits = etllm.linear %g, %e : (tensor<1x?x4xf32>, tensor<8x4xf32>) -> tensor<1x?x8xf32>
    return %logits : tensor<1x?x8xf32>
  }
}
)mlir";

class ExampleBackend : public ::testing::Test {
protected:
  static void SetUpTestSuite() {
    etllm::example::registerExampleBackend();
    etllm::example::registerExampleRuntimeBackend();
  }
};

TEST_F(ExampleBackend, PartitionsLowersSerializesAndRuns) {
  auto t = etllm::Tester::fromIR(kModel);
  t->runPasses("partition", "builtin.module(etllm-partition{backends=example})")
      .checkCount("etllm.delegate.call", 1)
      .checkCount("etllm.silu", 1) // inside the outlined function
      .runPasses("lower-backends", "builtin.module(etllm-lower-backends)")
      .checkNot("etllm.silu") // the example pass rewrote it
      .checkCount("etllm.sigmoid", 1)
      .runAndCompare(1e-6, 1e-6, "input",
                     /*tokens=*/{1, 2, 3, 4, 5, 6, 7}, /*prefill=*/4);
  EXPECT_TRUE(t->ok()) << t->report();
}

TEST_F(ExampleBackend, PriorityOrderDecidesWhoTakesAnOp) {
  // With the example backend first it takes silu and mul; cpu, second,
  // still gets the linear it alone can run: two subgraphs, one each.
  auto first = etllm::Tester::fromIR(kModel);
  first
      ->runPasses("partition",
                  "builtin.module(etllm-partition{backends=example,cpu})")
      .checkCount("etllm.delegate.call", 2);
  EXPECT_TRUE(first->ok()) << first->report();
  mlir::ModuleOp m = first->currentIR();
  int example = 0, cpu = 0;
  m.walk([&](mlir::Operation *op) {
    if (auto b = op->getAttrOfType<mlir::StringAttr>("etllm.backend")) {
      example += b.getValue() == "example";
      cpu += b.getValue() == "cpu";
    }
  });
  EXPECT_EQ(example, 1);
  EXPECT_EQ(cpu, 1);
}

TEST_F(ExampleBackend, RuntimeRejectsAMalformedBlob) {
  etllm::rt::Backend *b = etllm::rt::findBackend("example");
  ASSERT_NE(b, nullptr);
  struct NoConstants : etllm::rt::ConstantTable {
    size_t size() const override { return 0; }
    etllm::rt::Result<std::pair<const uint8_t *, size_t>>
    get(uint32_t) const override {
      return etllm::rt::Error("none");
    }
  } constants;
  etllm::rt::ExecContext ctx;
  etllm::rt::MemoryBudget budget(UINT64_MAX, 0);
  for (std::string blob :
       {std::string("not a blob"), std::string("example-blob 1\nmul 0 7 9\n"),
        std::string("example-blob 1\ninput 0 0\nsigmoid 5 0\n"),
        std::string("example-blob 1\ninput 0 -3\n")}) {
    auto r = b->init(reinterpret_cast<const uint8_t *>(blob.data()),
                     blob.size(), {}, constants, ctx, budget);
    EXPECT_FALSE(r.ok()) << blob;
  }
}

} // namespace
