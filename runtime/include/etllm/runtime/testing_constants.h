//===- testing_constants.h - A constant table for tests ---------*- C++ -*-===//
//
// The program constants a test owns and hands to Backend::init, 64-byte
// aligned as in a program file. Test-only (it allocates freely).
//
//===----------------------------------------------------------------------===//
#ifndef ETLLM_RUNTIME_TESTING_CONSTANTS_H
#define ETLLM_RUNTIME_TESTING_CONSTANTS_H

#include "etllm/runtime/backend.h"

#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace etllm::rt::testing {

/// Program constants a test owns (zero-padded, 64-byte aligned).
class TestConstants : public ConstantTable {
public:
  /// Adds a copy of `size` bytes at `data`; returns its index.
  uint32_t add(const void *data, size_t size) {
    storage_.emplace_back(new uint8_t[size + 64]());
    uint8_t *p = reinterpret_cast<uint8_t *>(
        (reinterpret_cast<uintptr_t>(storage_.back().get()) + 63) &
        ~uintptr_t(63));
    if (size)
      std::memcpy(p, data, size);
    items_.push_back({p, size});
    return uint32_t(items_.size() - 1);
  }
  uint32_t add(const std::vector<uint8_t> &b) {
    return add(b.data(), b.size());
  }
  uint32_t add(const std::vector<float> &f) {
    return add(f.data(), f.size() * 4);
  }
  /// The bytes of constant `index`, to change them (a test's mutation).
  uint8_t *mutableData(uint32_t index) { return items_[index].first; }
  size_t size() const override { return items_.size(); }
  Result<std::pair<const uint8_t *, size_t>>
  get(uint32_t index) const override {
    if (index >= items_.size())
      return Error("constant index " + std::to_string(index) +
                   " is out of range");
    return std::make_pair(static_cast<const uint8_t *>(items_[index].first),
                          items_[index].second);
  }

private:
  std::vector<std::unique_ptr<uint8_t[]>> storage_;
  std::vector<std::pair<uint8_t *, size_t>> items_;
};

} // namespace etllm::rt::testing

#endif // ETLLM_RUNTIME_TESTING_CONSTANTS_H
