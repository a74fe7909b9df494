//===- mapped_file.cpp ----------------------------------------------------===//
#include "etllm/runtime/mapped_file.h"

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

namespace etllm::rt {

Result<std::shared_ptr<MappedFile>> MappedFile::open(const std::string &path,
                                                     Use use) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return Error(path + ": cannot open: " + std::strerror(errno));
  struct stat st;
  if (::fstat(fd, &st) != 0) {
    std::string msg = path + ": cannot stat: " + std::strerror(errno);
    ::close(fd);
    return Error(msg);
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    return Error(path + ": not a regular file");
  }
  size_t size = static_cast<size_t>(st.st_size);
  const uint8_t *data = nullptr;
  if (size > 0) {
    void *p = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
    if (p == MAP_FAILED) {
      std::string msg = path + ": cannot mmap: " + std::strerror(errno);
      ::close(fd);
      return Error(msg);
    }
    data = static_cast<const uint8_t *>(p);
#ifdef MADV_HUGEPAGE
    // Before the first access, so that readahead allocates huge folios.
    // Errors (EINVAL where the kernel has no transparent huge pages) leave
    // an ordinary mapping.
    if (use == Use::Weights && size >= (size_t(2) << 20))
      (void)::madvise(p, size, MADV_HUGEPAGE);
#endif
  }
  ::close(fd);
  return std::shared_ptr<MappedFile>(new MappedFile(path, data, size));
}

MappedFile::~MappedFile() {
  if (data_)
    ::munmap(const_cast<uint8_t *>(data_), size_);
}

} // namespace etllm::rt
