//===- kernel.h - Kernel interface and registry -----------------*- C++ -*-===//
//
// A kernel implements one operator of ops.def. It receives its input and
// output tensors and the operator's integer/float attributes, computes the
// output shape (resizing outputs within their planned capacity) and writes
// the outputs. Kernels never allocate on the hot path: scratch memory comes
// from the ExecContext.
//
//===----------------------------------------------------------------------===//
#ifndef ETLLM_RUNTIME_KERNEL_H
#define ETLLM_RUNTIME_KERNEL_H

#include "etllm/runtime/result.h"
#include "etllm/runtime/tensor.h"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

struct pthreadpool;

namespace etllm::rt {

/// Operator ids, one per ops.def entry.
enum class OpId : uint16_t {
#define ETLLM_OP(Name, Str, MinIn, MaxIn, Outs, Ints, Floats) Name,
#include "etllm/runtime/ops.def"
  NumOps
};

/// The static description of an operator (from ops.def).
struct OpInfo {
  OpId id;
  const char *name;
  int minInputs, maxInputs; // maxInputs -1: variadic
  int outputs;              // -1: variadic (at least 1)
  int numInts;              // -1: variadic
  int numFloats;
};
const OpInfo &opInfo(OpId id);
/// Looks an operator up by its program-file name; nullptr when unknown.
const OpInfo *findOp(const char *name, size_t length);

/// A minimal span (C++17 has no std::span).
template <typename T> struct Span {
  T *data = nullptr;
  size_t size = 0;
  T &operator[](size_t i) const { return data[i]; }
  T *begin() const { return data; }
  T *end() const { return data + size; }
};

/// Per-execution resources: the thread pool and a scratch buffer that
/// grows on first use and is then reused (no per-token allocation).
class ExecContext {
public:
  ExecContext() = default;
  explicit ExecContext(pthreadpool *pool) : pool_(pool) {}
  pthreadpool *threadPool() const { return pool_; }
  /// At least `bytes` of 64-byte-aligned scratch, valid until the next call.
  void *scratch(size_t bytes);
  /// Number of threads kernels may use (1 without a pool).
  size_t numThreads() const;

private:
  pthreadpool *pool_ = nullptr;
  std::unique_ptr<uint8_t[]> scratchStorage_;
  size_t scratchSize_ = 0;
  void *scratchAligned_ = nullptr;
};

/// Everything a kernel gets.
struct KernelArgs {
  Span<Tensor *const> inputs;
  Span<Tensor *const> outputs;
  Span<const int64_t> ints;
  Span<const double> floats;
  ExecContext *ctx = nullptr;
};

using KernelFn = Status (*)(const KernelArgs &);

/// The kernels to run each operator with. The portable set is the
/// reference; optimized sets override entries and are tested against it.
class KernelTable {
public:
  KernelFn get(OpId id) const { return fns_[size_t(id)]; }
  void set(OpId id, KernelFn fn) { fns_[size_t(id)] = fn; }

private:
  KernelFn fns_[size_t(OpId::NumOps)] = {};
};

/// The portable (scalar, reference) kernels: every operator.
const KernelTable &portableKernels();

} // namespace etllm::rt

#endif // ETLLM_RUNTIME_KERNEL_H
