//===- backend.cpp - Backend registry -------------------------------------===//
#include "etllm/runtime/backend.h"

#include <cstdio>
#include <mutex>

namespace etllm::rt {

ConstantTable::~ConstantTable() = default;
DelegateInstance::~DelegateInstance() = default;
std::vector<std::pair<std::string, uint64_t>>
DelegateInstance::counters() const {
  return {};
}
Backend::~Backend() = default;

namespace {
std::string bytesText(uint64_t b) {
  char buf[48];
  std::snprintf(buf, sizeof buf, " bytes (%.1f MiB)", double(b) / 1048576.0);
  return std::to_string(b) + buf;
}
} // namespace

Status MemoryBudget::reserve(uint64_t bytes, const std::string &what) {
  if (bytes > remaining())
    return Error(what + " needs " + bytesText(bytes) + ", more than the " +
                 bytesText(remaining()) + " left of the memory limit of " +
                 bytesText(limit_) + " (the program plans " + bytesText(used_) +
                 ")");
  used_ += bytes;
  return Status();
}

namespace {
std::mutex &registryMutex() {
  static std::mutex m;
  return m;
}
std::vector<std::shared_ptr<Backend>> &registry() {
  static std::vector<std::shared_ptr<Backend>> r;
  return r;
}
} // namespace

void registerBackend(std::shared_ptr<Backend> backend) {
  std::lock_guard<std::mutex> lock(registryMutex());
  for (auto &b : registry())
    if (std::string(b->id()) == backend->id()) {
      b = std::move(backend);
      return;
    }
  registry().push_back(std::move(backend));
}

Backend *findBackend(const std::string &id) {
  std::lock_guard<std::mutex> lock(registryMutex());
  for (auto &b : registry())
    if (id == b->id())
      return b.get();
  for (auto &b : registry())
    for (const char *former : b->formerIds())
      if (id == former)
        return b.get();
  return nullptr;
}

std::string canonicalBackendId(const std::string &id) {
  Backend *b = findBackend(id);
  return b ? b->id() : id;
}

} // namespace etllm::rt
