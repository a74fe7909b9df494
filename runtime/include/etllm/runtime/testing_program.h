//===- testing_program.h - Program files built by hand in tests -*- C++ -*-===//
//
// The file around a test's hand-built program flatbuffer: the header, the
// flatbuffer, then the segment data (64-byte aligned). Test-only.
//
//===----------------------------------------------------------------------===//
#ifndef ETLLM_RUNTIME_TESTING_PROGRAM_H
#define ETLLM_RUNTIME_TESTING_PROGRAM_H

#include "etllm/runtime/program.h"

#include <flatbuffers/flatbuffers.h>

#include <cstdint>
#include <cstring>
#include <vector>

namespace etllm::rt::testing {

/// A program file of format `version` holding the finished flatbuffer `fb`
/// and `segmentDataSize` bytes of segment data, zero; the data starts at the
/// header's segmentBase.
inline std::vector<uint8_t>
programFile(const flatbuffers::FlatBufferBuilder &fb, uint32_t version,
            uint64_t segmentDataSize) {
  FileHeader h{};
  std::memcpy(h.magic, kProgramMagic, 8);
  h.version = version;
  h.headerSize = sizeof h;
  h.flatbufferOffset = sizeof h;
  h.flatbufferSize = fb.GetSize();
  h.segmentAlignment = 64;
  h.segmentBase = (sizeof h + fb.GetSize() + 63) / 64 * 64;
  h.segmentDataSize = segmentDataSize;
  std::vector<uint8_t> file(h.segmentBase + segmentDataSize, 0);
  std::memcpy(file.data(), &h, sizeof h);
  std::memcpy(file.data() + sizeof h, fb.GetBufferPointer(), fb.GetSize());
  return file;
}

/// The offset of the segment data in a file of programFile.
inline uint64_t segmentBaseOf(const std::vector<uint8_t> &file) {
  FileHeader h;
  std::memcpy(&h, file.data(), sizeof h);
  return h.segmentBase;
}

} // namespace etllm::rt::testing

#endif // ETLLM_RUNTIME_TESTING_PROGRAM_H
