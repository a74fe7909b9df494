//===- mapped_file.h - Read-only memory-mapped files ------------*- C++ -*-===//
#ifndef ETLLM_RUNTIME_MAPPED_FILE_H
#define ETLLM_RUNTIME_MAPPED_FILE_H

#include "etllm/runtime/result.h"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

namespace etllm::rt {

/// A whole file mapped read-only (MAP_PRIVATE). Weights and program files
/// are used in place from the mapping: nothing is copied at open.
class MappedFile {
public:
  /// How the mapping will be read.
  enum class Use {
    /// Read once or in small parts (tokenizers).
    Default,
    /// Weights: large, and read in full again and again (every decode step
    /// streams them). The kernel is asked to back the mapping with huge
    /// pages (madvise(MADV_HUGEPAGE)); where it can (Linux with large
    /// page-cache folios, as ext4 has since 6.16), pages it reads in from
    /// then on come in 2 MiB folios mapped by one TLB entry each. Pages
    /// already cached stay as they are. docs/Performance.md ("Huge pages
    /// for the weights") has the measurements.
    Weights,
  };
  /// Maps `path`. Errors name the path and the failing system call. The
  /// advice of `use` is best effort: a kernel that ignores it changes
  /// nothing else.
  static Result<std::shared_ptr<MappedFile>> open(const std::string &path,
                                                  Use use = Use::Default);
  ~MappedFile();
  MappedFile(const MappedFile &) = delete;
  MappedFile &operator=(const MappedFile &) = delete;

  const uint8_t *data() const { return data_; }
  size_t size() const { return size_; }
  const std::string &path() const { return path_; }

  /// True when [offset, offset + length) lies inside the file (no overflow).
  bool contains(uint64_t offset, uint64_t length) const {
    return offset <= size_ && length <= size_ - offset;
  }

private:
  MappedFile(std::string path, const uint8_t *data, size_t size)
      : path_(std::move(path)), data_(data), size_(size) {}
  std::string path_;
  const uint8_t *data_ = nullptr;
  size_t size_ = 0;
};

} // namespace etllm::rt

#endif // ETLLM_RUNTIME_MAPPED_FILE_H
