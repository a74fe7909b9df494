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

namespace detail {
inline constexpr const char *kOpNames[] = {
#define ETLLM_OP(Name, Str, MinIn, MaxIn, Outs, Ints, Floats) Str,
#include "etllm/runtime/ops.def"
};
} // namespace detail

/// The program-file name of operator `id` (ops.def, generated from the op's
/// ODS): kernels name their operator with it in messages, never with a
/// string of their own.
constexpr const char *opName(OpId id) {
  return detail::kOpNames[static_cast<size_t>(id)];
}

/// A minimal span (C++17 has no std::span).
template <typename T> struct Span {
  T *data = nullptr;
  size_t size = 0;
  T &operator[](size_t i) const { return data[i]; }
  T *begin() const { return data; }
  T *end() const { return data + size; }
};

/// How an operator reads one of its integer attributes (ops.def
/// ETLLM_OP_INT, generated from the op contracts).
enum class IntAttrKind : uint8_t {
  Value, ///< any integer
  Enum,  ///< an enum case, in [0, max]
  Flag,  ///< 0 or 1
  Input, ///< 0 or 1: whether the optional input it names is present
  List,  ///< this and every later integer, one per element
};

/// One integer attribute of an operator's contract.
struct IntAttrInfo {
  const char *name;
  IntAttrKind kind;
  int64_t max; ///< Enum: the largest case; Flag/Input: 1
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
/// The integer attributes of `id` in order (a List entry stands for every
/// integer from its index on).
Span<const IntAttrInfo> intAttrs(OpId id);
/// The names of the float attributes of `id`, in order.
Span<const char *const> floatAttrNames(OpId id);
/// Checks a kernel call's integer attributes against the contract: enums
/// and flags in range, and the input count the Input flags imply. The
/// counts themselves are the caller's to check (OpInfo).
Status checkIntAttrs(OpId id, size_t numInputs, Span<const int64_t> ints);

/// How a thread pool's workers have kept up (parallel.h): when they arrive
/// late to their jobs (the other cores are busy), kernels run on the
/// calling thread for a while instead of waiting for them.
struct PoolHealth {
  int64_t inlineUntilNs = 0; // steady-clock time until which to run inline
  int late = 0;              // consecutive late jobs
};

/// One LoRA adapter applied to a hook (lora.h): `out += scale * (x At) Bt`
/// with At [in, rank] and Bt [rank, out] row-major, each of them f32, IEEE
/// half bits or int8 (`atType`, `btType`: F32, F16 or I8; the adapter
/// file's bytes, read in place, valid while the adapter is applied). An
/// int8 matrix has one f32 scale per rank index k (`atScale`, `btScale`:
/// At[i, k] = q[i, k] * atScale[k], Bt[k, o] = q[k, o] * btScale[k]).
struct LoraTerm {
  const void *at = nullptr;
  const void *bt = nullptr;
  int64_t rank = 0;
  float scale = 0;
  DType atType = DType::F32, btType = DType::F32;
  const float *atScale = nullptr, *btScale = nullptr; // I8 only
};

/// The coefficient of Bt's stored row k, given (x At)[k] summed over At's
/// stored values: times At's int8 scale, the term's scale, Bt's int8 scale
/// (the one definition the LoRA kernels share).
inline float loraCoefficient(const LoraTerm &t, int64_t k, float xAt) {
  float c = xAt;
  if (t.atScale)
    c *= t.atScale[k];
  c *= t.scale;
  if (t.btScale)
    c *= t.btScale[k];
  return c;
}

/// Whether a term's factors are of a type the LoRA kernels read (F32, F16,
/// I8), each int8 factor with its scales and no other with any.
inline bool loraTermReadable(const LoraTerm &t) {
  for (DType d : {t.atType, t.btType})
    if (d != DType::F32 && d != DType::F16 && d != DType::I8)
      return false;
  return (t.atType == DType::I8) == (t.atScale != nullptr) &&
         (t.btType == DType::I8) == (t.btScale != nullptr);
}

/// Calls fn(E()) with the element type a LoRA factor of type `d` is stored
/// in: float (F32), uint16_t (F16: half bits) or int8_t (I8); `d` is one of
/// them (the kernels check first).
template <typename Fn> void withLoraElementType(DType d, const Fn &fn) {
  if (d == DType::F32)
    fn(float());
  else if (d == DType::F16)
    fn(uint16_t());
  else
    fn(int8_t());
}
/// fn(TA(), TB()) with the element types of a readable term's At and Bt.
template <typename Fn>
void withLoraElementTypes(const LoraTerm &t, const Fn &fn) {
  withLoraElementType(t.atType, [&](auto ta) {
    withLoraElementType(t.btType, [&](auto tb) { fn(ta, tb); });
  });
}
/// What the `lora` kernel of one hook adds: the hook's features and the
/// adapters applied to it, in the order they were applied.
struct LoraHookTerms {
  int64_t inFeatures = 0, outFeatures = 0;
  std::vector<LoraTerm> terms;
};

class OpProfile; // profile.h

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
  /// The pool's state (kernels receive a const context; the parallel loops
  /// update this).
  PoolHealth &poolHealth() const { return health_; }
  /// The LoRA adapters applied to the program's hooks, by hook index
  /// (Module::applyLora); null when the module has none applied.
  const std::vector<LoraHookTerms> *loraHooks() const { return lora_; }
  void setLoraHooks(const std::vector<LoraHookTerms> *hooks) { lora_ = hooks; }
  /// Where executions record their time per operator (profile.h), or null
  /// (the default: nothing is recorded).
  OpProfile *profile() const { return profile_; }
  void setProfile(OpProfile *profile) { profile_ = profile; }

private:
  pthreadpool *pool_ = nullptr;
  mutable PoolHealth health_;
  const std::vector<LoraHookTerms> *lora_ = nullptr;
  OpProfile *profile_ = nullptr;
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
