//===- Safetensors.h - safetensors / Hugging Face directories ---*- C++ -*-===//
//
// safetensors: 8-byte little-endian header length N, N bytes of JSON
// {"name": {"dtype", "shape", "data_offsets": [begin, end]}, "__metadata__":
// {string: string}}, then the data area; offsets are relative to the data
// area. A Hugging Face directory is config.json plus model.safetensors or a
// sharded model.safetensors.index.json ({"weight_map": {name: shard}}).
//
//===----------------------------------------------------------------------===//
#ifndef ETLLM_FORMATS_SAFETENSORS_H
#define ETLLM_FORMATS_SAFETENSORS_H

#include "etllm/Formats/Checkpoint.h"

#include <cstdio>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace etllm::formats {

/// Opens one .safetensors file (no config: hasConfig() is false).
Result<std::unique_ptr<Checkpoint>> openSafetensors(const std::string &path);

/// Opens a Hugging Face model directory (config.json + model.safetensors, or
/// config.json + model.safetensors.index.json and its shards).
Result<std::unique_ptr<Checkpoint>> openHfDirectory(const std::string &dir);

/// The safetensors dtype string ("F32", "BF16", "BOOL", ...) of a DType;
/// error for ggml block types.
Result<std::string> safetensorsDTypeName(DType dtype);

/// Writes a .safetensors file, streaming: declare tensors (and optional
/// __metadata__), open() writes the header, write() appends tensor bytes in
/// declaration order (any chunking), finish() checks the byte count and
/// closes. The header is padded with spaces to a multiple of 8 bytes.
class SafetensorsWriter {
public:
  SafetensorsWriter();
  ~SafetensorsWriter();
  SafetensorsWriter(const SafetensorsWriter &) = delete;
  SafetensorsWriter &operator=(const SafetensorsWriter &) = delete;

  /// Adds a __metadata__ entry.
  void setMetadata(const std::string &key, const std::string &value);
  /// Declares a tensor (before open()).
  Status addTensor(const std::string &name, DType dtype,
                   const std::vector<int64_t> &shape);
  Status open(const std::string &path);
  Status write(const void *data, size_t size);
  Status finish();

private:
  struct PendingTensor {
    std::string name;
    DType dtype;
    std::vector<int64_t> shape;
    uint64_t begin, end;
  };
  std::map<std::string, std::string> metadata_;
  std::vector<PendingTensor> tensors_;
  uint64_t dataSize_ = 0;
  uint64_t written_ = 0;
  std::string path_;
  std::FILE *file_ = nullptr;
  bool opened_ = false;
  bool failed_ = false;
};

} // namespace etllm::formats

#endif // ETLLM_FORMATS_SAFETENSORS_H
