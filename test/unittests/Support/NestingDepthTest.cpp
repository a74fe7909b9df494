//===- NestingDepthTest.cpp - The IR nesting bound ------------------------===//
#include "etllm/Support/NestingDepth.h"

#include <gtest/gtest.h>

#include <string>

namespace {

using etllm::findIrNestingViolation;

TEST(IrNesting, CountsBracketsOutsideStringsAndComments) {
  EXPECT_FALSE(findIrNestingViolation("func.func @f() { return }", 2));
  auto v = findIrNestingViolation("module {\n  a = [[[1]]]\n}", 3);
  ASSERT_TRUE(v);
  EXPECT_EQ(v->line, 2u);
  EXPECT_EQ(v->column, 9u); // the third '['
  EXPECT_EQ(v->offset, 17u);
  // Brackets in strings, escaped quotes and comments do not count.
  EXPECT_FALSE(findIrNestingViolation("x = \"[[[[\\\"[[[[\" // ((((\n", 1));
  // `->` and `>=` close nothing, `<=` opens nothing.
  EXPECT_FALSE(findIrNestingViolation("(a) -> (b) -> (c)", 1));
  EXPECT_TRUE(findIrNestingViolation("(a -> (b))", 1));
  EXPECT_FALSE(findIrNestingViolation("affine_set<(d0) : (d0 >= 0)>", 2));
  // Unbalanced closers give no credit for later openers.
  EXPECT_TRUE(findIrNestingViolation(")))))[[", 1));
}

TEST(IrNesting, RefusesDeepInputInLinearTime) {
  const size_t depth = 1000000;
  std::string deep = std::string(depth, '[') + std::string(depth, ']');
  auto v = findIrNestingViolation(deep, etllm::kMaxIrNesting);
  ASSERT_TRUE(v);
  EXPECT_EQ(v->offset, etllm::kMaxIrNesting);
  EXPECT_EQ(v->limit, etllm::kMaxIrNesting);
  std::string ok = std::string(etllm::kMaxIrNesting, '{') +
                   std::string(etllm::kMaxIrNesting, '}');
  EXPECT_FALSE(findIrNestingViolation(ok + ok, etllm::kMaxIrNesting));
  EXPECT_EQ(etllm::describeIrNestingViolation(*v, "deep.mlir"),
            "deep.mlir:1:257: error: IR nested deeper than 256 levels of "
            "brackets ((, [, {, <) is refused before parsing");
}

} // namespace
