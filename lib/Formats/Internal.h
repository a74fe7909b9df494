//===- Internal.h - Helpers shared by the checkpoint readers -----*- C++
//-*-===//
//
// Private to lib/formats: the builder that fills a Checkpoint, checked
// arithmetic, little-endian loads and a bounds-checked byte cursor.
//
//===----------------------------------------------------------------------===//
#ifndef ETLLM_LIB_FORMATS_INTERNAL_H
#define ETLLM_LIB_FORMATS_INTERNAL_H

#include "etllm/Formats/Checkpoint.h"

#include <algorithm>
#include <cstring>
#include <limits>
#include <memory>
#include <string>
#include <utility>

namespace etllm::formats::detail {

/// Fills a Checkpoint (the only writer of its private state).
class CheckpointBuilder {
public:
  CheckpointBuilder(std::string format, std::string path)
      : checkpoint_(new Checkpoint()) {
    checkpoint_->format_ = std::move(format);
    checkpoint_->path_ = std::move(path);
  }

  Checkpoint &get() { return *checkpoint_; }

  void addFile(std::shared_ptr<rt::MappedFile> file) {
    checkpoint_->files_.push_back(std::move(file));
  }

  /// Adds a tensor; error if the HF name is already taken.
  Status addTensor(TensorRef tensor) {
    auto [it, inserted] =
        checkpoint_->index_.emplace(tensor.name, checkpoint_->tensors_.size());
    (void)it;
    if (!inserted)
      return Error(tensor.file + ": duplicate tensor '" + tensor.name + "'" +
                   (tensor.sourceName != tensor.name
                        ? " (from '" + tensor.sourceName + "')"
                        : std::string()));
    checkpoint_->tensors_.push_back(std::move(tensor));
    return Status();
  }

  /// Reorders tensors (and rebuilds the index).
  template <typename Less> void sortTensors(Less less) {
    std::stable_sort(checkpoint_->tensors_.begin(), checkpoint_->tensors_.end(),
                     less);
    checkpoint_->index_.clear();
    for (size_t i = 0; i < checkpoint_->tensors_.size(); ++i)
      checkpoint_->index_.emplace(checkpoint_->tensors_[i].name, i);
  }

  void setConfig(ModelConfig config) {
    checkpoint_->config_ = std::move(config);
    checkpoint_->hasConfig_ = true;
  }

  /// Adds a metadata entry; error on a duplicate key.
  bool addMetadata(std::string key, GgufValue value) {
    auto [it, inserted] =
        checkpoint_->metadataIndex_.emplace(key, checkpoint_->metadata_.size());
    (void)it;
    if (!inserted)
      return false;
    checkpoint_->metadata_.emplace_back(std::move(key), std::move(value));
    return true;
  }

  void setTokenizer(std::unique_ptr<GgufTokenizerInfo> info) {
    checkpoint_->tokenizer_ = std::move(info);
  }
  void setGgufInfo(uint32_t version, uint64_t alignment) {
    checkpoint_->ggufVersion_ = version;
    checkpoint_->ggufAlignment_ = alignment;
  }
  void setNormWeightsIncludeOne(bool value) {
    checkpoint_->normWeightsIncludeOne_ = value;
  }

  std::unique_ptr<Checkpoint> finish() { return std::move(checkpoint_); }

private:
  std::unique_ptr<Checkpoint> checkpoint_;
};

/// a * b, false on uint64 overflow.
inline bool mulOverflow(uint64_t a, uint64_t b, uint64_t &out) {
  return __builtin_mul_overflow(a, b, &out);
}
/// a + b, false on uint64 overflow.
inline bool addOverflow(uint64_t a, uint64_t b, uint64_t &out) {
  return __builtin_add_overflow(a, b, &out);
}

template <typename T> inline T loadLE(const uint8_t *p) {
  T v;
  std::memcpy(&v, p, sizeof(T));
  return v; // The supported hosts are little-endian.
}

static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
              "checkpoint readers assume a little-endian host");

/// Bounds-checked sequential reader over a byte range of a file.
class Cursor {
public:
  Cursor(const uint8_t *begin, uint64_t size) : base_(begin), size_(size) {}
  uint64_t offset() const { return pos_; }
  uint64_t remaining() const { return size_ - pos_; }
  bool has(uint64_t n) const { return n <= size_ - pos_; }
  template <typename T> bool read(T &out) {
    if (!has(sizeof(T)))
      return false;
    out = loadLE<T>(base_ + pos_);
    pos_ += sizeof(T);
    return true;
  }
  bool readBytes(uint64_t n, const uint8_t *&out) {
    if (!has(n))
      return false;
    out = base_ + pos_;
    pos_ += n;
    return true;
  }

private:
  const uint8_t *base_;
  uint64_t size_;
  uint64_t pos_ = 0;
};

/// The largest dimension or size any reader accepts for config values.
constexpr int64_t kMaxConfigDim = 10000000;

/// True if `path` is a directory.
bool isDirectory(const std::string &path);
/// True if `path` exists (any type).
bool pathExists(const std::string &path);
/// Joins a directory and a file name.
std::string joinPath(const std::string &dir, const std::string &name);
/// Reads a whole (small) file into a string; error names the path.
Result<std::string> readTextFile(const std::string &path,
                                 uint64_t maxBytes = 64u << 20);

/// Splits "model.layers.12.self_attn.q_proj.weight" into layer 12 and suffix
/// "self_attn.q_proj.weight"; false if not a layer tensor.
bool splitLayerName(const std::string &name, const std::string &prefix,
                    int64_t &layer, std::string &suffix);

} // namespace etllm::formats::detail

#endif // ETLLM_LIB_FORMATS_INTERNAL_H
