//===- mutation_testing.h - Byte mutations of flatbuffer files --*- C++ -*-===//
//
// Helpers for the hostile-input tests of the runtime's flatbuffer formats
// (programs, LoRA adapters, delegate blobs): where a stored field lies in the
// file, and a copy of the file with a value written there. Needs GoogleTest;
// not for the runtime itself.
//
//===----------------------------------------------------------------------===//
#ifndef ETLLM_RUNTIME_MUTATION_TESTING_H
#define ETLLM_RUNTIME_MUTATION_TESTING_H

#include <flatbuffers/flatbuffers.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <vector>

namespace etllm::rt::testing {

/// The file offset of a scalar field of a flatbuffer table (the field must
/// be stored, i.e. differ from its default).
inline size_t scalarAt(const std::vector<uint8_t> &file, const void *table,
                       flatbuffers::voffset_t field) {
  const uint8_t *at =
      reinterpret_cast<const flatbuffers::Table *>(table)->GetAddressOf(field);
  EXPECT_NE(at, nullptr) << "field " << field << " is not stored";
  return at ? size_t(at - file.data()) : 0;
}

/// The file offset of `p`, a pointer into `file`.
inline size_t offsetIn(const std::vector<uint8_t> &file, const void *p) {
  return size_t(static_cast<const uint8_t *>(p) - file.data());
}

/// `bytes` with `value` written at offset `at`.
template <typename T>
std::vector<uint8_t> with(std::vector<uint8_t> bytes, size_t at, T value) {
  std::memcpy(bytes.data() + at, &value, sizeof value);
  return bytes;
}

} // namespace etllm::rt::testing

#endif // ETLLM_RUNTIME_MUTATION_TESTING_H
