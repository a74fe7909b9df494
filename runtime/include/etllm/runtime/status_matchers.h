//===- status_matchers.h - GoogleTest checks on Status ----------*- C++ -*-===//
//
// EXPECT_OK / ASSERT_OK / EXPECT_ERROR for the runtime's Status, shared by
// the runtime's test suites. Needs GoogleTest; not for the runtime itself.
//
//===----------------------------------------------------------------------===//
#ifndef ETLLM_RUNTIME_STATUS_MATCHERS_H
#define ETLLM_RUNTIME_STATUS_MATCHERS_H

#include "etllm/runtime/result.h"

#include <gtest/gtest.h>

#include <string>

#define EXPECT_OK(expr)                                                        \
  do {                                                                         \
    ::etllm::rt::Status s_ = (expr);                                           \
    EXPECT_TRUE(s_.ok()) << s_.message();                                      \
  } while (0)
#define ASSERT_OK(expr)                                                        \
  do {                                                                         \
    ::etllm::rt::Status s_ = (expr);                                           \
    ASSERT_TRUE(s_.ok()) << s_.message();                                      \
  } while (0)
/// Expects a failure whose message contains `substr`.
#define EXPECT_ERROR(expr, substr)                                             \
  do {                                                                         \
    ::etllm::rt::Status s_ = (expr);                                           \
    EXPECT_FALSE(s_.ok());                                                     \
    EXPECT_NE(s_.message().find(substr), std::string::npos) << s_.message();   \
  } while (0)

#endif // ETLLM_RUNTIME_STATUS_MATCHERS_H
