//===- TestUtil.h - Helpers for the etllm_formats tests ---------*- C++ -*-===//
#ifndef ETLLM_TEST_UNITTESTS_FORMATS_TEST_UTIL_H
#define ETLLM_TEST_UNITTESTS_FORMATS_TEST_UTIL_H

#include "etllm/Formats/Checkpoint.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

namespace etllm::formats::testing {

/// The shared test-data directory (models/, tokenizers/).
std::string sharedDir();
/// sharedDir()/relative, or "" when absent.
std::string sharedFile(const std::string &relative);

/// A fresh directory under ::testing::TempDir() for one test.
std::string freshTempDir(const std::string &name);

/// Writes bytes to a file (test fixture creation); fails the test on error.
void writeFile(const std::string &path, const std::string &bytes);
std::string readFile(const std::string &path);

/// Appends little-endian scalars/strings to a byte buffer.
struct Bytes {
  std::string data;
  template <typename T> Bytes &put(T v) {
    data.append(reinterpret_cast<const char *>(&v), sizeof(T));
    return *this;
  }
  Bytes &str(const std::string &s) { // GGUF string
    put<uint64_t>(s.size());
    data += s;
    return *this;
  }
  Bytes &raw(const std::string &s) {
    data += s;
    return *this;
  }
  Bytes &zeros(size_t n) {
    data.append(n, '\0');
    return *this;
  }
  Bytes &alignTo(size_t a) {
    while (data.size() % a)
      data += '\0';
    return *this;
  }
};

/// Expects `result` to be an error whose message contains every needle.
template <typename R>
void expectError(const R &result, const std::vector<std::string> &needles) {
  ASSERT_FALSE(result.ok()) << "expected an error containing '"
                            << (needles.empty() ? "" : needles[0]) << "'";
  for (const std::string &n : needles)
    EXPECT_NE(result.message().find(n), std::string::npos)
        << "message '" << result.message() << "' lacks '" << n << "'";
}

/// Field-by-field comparison of two configs (floats with relative tolerance,
/// because GGUF stores float32). `what` labels failures.
void expectConfigsEqual(const ModelConfig &a, const ModelConfig &b,
                        const std::string &what, bool compareDtype = true);

} // namespace etllm::formats::testing

#define SKIP_IF_NO_SHARED(path)                                                \
  do {                                                                         \
    if ((path).empty())                                                        \
      GTEST_SKIP() << "shared test data not found under " << sharedDir();      \
  } while (0)

#endif // ETLLM_TEST_UNITTESTS_FORMATS_TEST_UTIL_H
