//===- backend.cpp - Backend registry -------------------------------------===//
#include "etllm/runtime/backend.h"

#include <mutex>

namespace etllm::rt {

ConstantTable::~ConstantTable() = default;
DelegateInstance::~DelegateInstance() = default;
Backend::~Backend() = default;

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
  return nullptr;
}

} // namespace etllm::rt
