//===- flatbuffer_checks.h - Checks on the runtime flatbuffers --*- C++ -*-===//
//
// What the program loader and the cpu and Vulkan delegates check alike
// before they read a flatbuffer: a delegate blob's format, identifier,
// alignment and verification, and the alignment of 8-byte vectors.
//
//===----------------------------------------------------------------------===//
#ifndef ETLLM_RUNTIME_FLATBUFFER_CHECKS_H
#define ETLLM_RUNTIME_FLATBUFFER_CHECKS_H

#include <flatbuffers/flatbuffers.h>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace etllm::rt {

/// What is wrong with the flatbuffer blob of a delegate of format `format`
/// ("a"/"an" `article` in messages), or "" (the caller adds its prefix): a
/// "format" compile spec naming another format; no file identifier
/// (hasIdentifier); a blob not 8-aligned in the program file (the Verifier
/// checks alignment relative to the blob's start, and not the elements of
/// vectors of 8-byte values: reading those would be a misaligned load); a
/// flatbuffer the Verifier (verify) refuses.
inline std::string checkDelegateBlob(
    const uint8_t *blob, size_t size,
    const std::vector<std::pair<std::string, std::string>> &compileSpecs,
    const char *format, const char *article,
    bool (*hasIdentifier)(const void *),
    bool (*verify)(flatbuffers::Verifier &)) {
  for (const auto &kv : compileSpecs)
    if (kv.first == "format" && kv.second != format)
      return "unsupported format '" + kv.second + "' (" + format + " expected)";
  if (!blob || size < 8 || !hasIdentifier(blob))
    return std::string("not ") + article + " " + format +
           " blob (missing file identifier)";
  if (reinterpret_cast<uintptr_t>(blob) % 8)
    return "the blob is not 8-byte aligned in the program file";
  flatbuffers::Verifier verifier(blob, size);
  if (!verify(verifier))
    return "the flatbuffer is malformed or truncated";
  return std::string();
}

/// True when the elements of the flatbuffer vector `v` of 8-byte values
/// are 8-aligned (absent or empty: nothing is read, and flatbuffers does not
/// align empty vectors).
template <typename T> bool aligned8(const flatbuffers::Vector<T> *v) {
  static_assert(sizeof(T) == 8);
  return !v || v->size() == 0 ||
         reinterpret_cast<uintptr_t>(v->data()) % 8 == 0;
}

} // namespace etllm::rt

#endif // ETLLM_RUNTIME_FLATBUFFER_CHECKS_H
