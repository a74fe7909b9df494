//===- TestMain.cpp - main() of the compiler-side GoogleTests -------------===//
//
// Libraries never register passes or backends (only mains do): this main
// registers the compiler's passes, recipes and backends and the runtime's
// built-in backends, as etllm-export and etllm-run do, then runs the tests.
//
//===----------------------------------------------------------------------===//
#include "etllm/InitAll.h"
#include "etllm/runtime/backend.h"

#include <gtest/gtest.h>

int main(int argc, char **argv) {
  etllm::registerAllPasses();
  etllm::rt::registerBuiltinBackends();
  testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
