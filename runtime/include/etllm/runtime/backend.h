//===- backend.h - Runtime half of a backend --------------------*- C++ -*-===//
//
// A backend's runtime half turns the blob its compiler half produced into
// something it can run (init), runs it on the delegate call's tensors
// (execute) and frees it (the handle's destructor). The two halves share
// only the blob's bytes. Backends are registered explicitly
// (registerBuiltinBackends), never by static initializers.
//
//===----------------------------------------------------------------------===//
#ifndef ETLLM_RUNTIME_BACKEND_H
#define ETLLM_RUNTIME_BACKEND_H

#include "etllm/runtime/kernel.h"
#include "etllm/runtime/result.h"

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace etllm::rt {

/// Read-only access to the program's constants: weights a backend's
/// compiler half packed into its kernels' layouts at export time.
class ConstantTable {
public:
  virtual ~ConstantTable();
  virtual size_t size() const = 0;
  /// Bytes of constant `index` (64-byte aligned; valid while the Program
  /// lives), or an error for an index out of range.
  virtual Result<std::pair<const uint8_t *, size_t>>
  get(uint32_t index) const = 0;
  /// Tells the runtime that the delegate uses constant `index` (already
  /// obtained with get) only as a table it gathers one of `rows` rows from
  /// per indexed token (an embedding table), never in full. What a decode
  /// step reads is reported from this (bench::analyzeDecodeTraffic).
  virtual void noteGatherTable(uint32_t index, uint64_t rows) const {
    (void)index;
    (void)rows;
  }
};

/// The memory a Module may still allocate while its delegates initialize:
/// the memory limit (ModuleOptions::maxMemory) minus the program's planned
/// memory. A backend's init reserves, before allocating it, every
/// allocation whose size its blob decides (arenas, converted weights,
/// reserved scratch); a reservation beyond what is left fails with the
/// numbers, and init returns that error.
class MemoryBudget {
public:
  MemoryBudget(uint64_t limit, uint64_t used) : limit_(limit), used_(used) {}
  /// Takes `bytes` for `what` ("the internal values"), or an error
  /// naming both sizes and the limit when fewer bytes are left.
  Status reserve(uint64_t bytes, const std::string &what);
  uint64_t limit() const { return limit_; }
  uint64_t used() const { return used_; }
  uint64_t remaining() const { return used_ < limit_ ? limit_ - used_ : 0; }

private:
  uint64_t limit_, used_;
};

/// A compiled delegate subgraph, ready to run.
class DelegateInstance {
public:
  virtual ~DelegateInstance();
  /// Runs on `inputs`, writing `outputs` (resizing them within capacity).
  virtual Status execute(Span<Tensor *const> inputs,
                         Span<Tensor *const> outputs, ExecContext &ctx) = 0;
  /// Deterministic counters of the instance's work so far (name, value),
  /// for statistics (etllm-bench prints them). Default: none.
  virtual std::vector<std::pair<std::string, uint64_t>> counters() const;
};

/// The runtime half of a backend.
class Backend {
public:
  virtual ~Backend();
  /// The id the compiler half writes into the program ("cpu").
  virtual const char *id() const = 0;
  /// Ids this backend had in programs written before (a renamed backend's
  /// former names): a delegate of one runs on this backend. Default: none.
  virtual Span<const char *const> formerIds() const { return {}; }
  /// Builds an instance from the blob (which stays mapped while the
  /// Program lives). Must fully validate the blob: it comes from the file.
  /// Every allocation whose size the blob decides is taken from `budget`
  /// (MemoryBudget::reserve) before it is made.
  virtual Result<std::unique_ptr<DelegateInstance>>
  init(const uint8_t *blob, size_t size,
       const std::vector<std::pair<std::string, std::string>> &compileSpecs,
       const ConstantTable &constants, ExecContext &ctx,
       MemoryBudget &budget) = 0;
};

/// Registers a backend (replacing one with the same id).
void registerBackend(std::shared_ptr<Backend> backend);
/// The backend registered as `id`, or as one of its former ids, or null.
Backend *findBackend(const std::string &id);
/// The id of the backend findBackend(id) finds (a program's former id
/// becomes the backend's id: what tools print), or `id` when none is.
std::string canonicalBackendId(const std::string &id);
/// Registers the backends built into this runtime (cpu; vulkan when
/// built with it).
void registerBuiltinBackends();

} // namespace etllm::rt

#endif // ETLLM_RUNTIME_BACKEND_H
