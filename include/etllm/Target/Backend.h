//===- Backend.h - Compiler half of a backend -------------------*- C++ -*-===//
//
// A backend's compiler half answers the partitioner's legality questions,
// may add lowering passes for its outlined subgraphs, and serializes an
// outlined subgraph into the blob its runtime half (runtime/backend.h)
// executes. Backends are registered explicitly from InitAll (or, for
// out-of-tree backends, by whoever links them), never by static
// initializers. docs/AddingABackend.md walks through writing one.
//
//===----------------------------------------------------------------------===//
#ifndef ETLLM_TARGET_BACKEND_H
#define ETLLM_TARGET_BACKEND_H

#include "mlir/Support/LLVM.h"
#include "mlir/Support/LogicalResult.h"
#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace mlir {
class Operation;
class OpPassManager;
namespace func {
class FuncOp;
} // namespace func
} // namespace mlir

namespace etllm {

class WeightStore;

/// What a backend's serializer may use: the weights, and the program's
/// constant table (packed weights go there, streamed into the file, and the
/// blob refers to them by index — blobs stay small).
class DelegateContext {
public:
  virtual ~DelegateContext();
  virtual WeightStore &weights() = 0;
  /// The bound of dynamic dimensions (max_seq_len).
  virtual int64_t dynamicDimBound() const = 0;
  /// Adds a program constant of `size` bytes whose bytes `produce` returns
  /// when the file is written; returns its index in the program.
  virtual uint32_t addConstant(
      const std::string &name, uint64_t size,
      std::function<mlir::FailureOr<std::vector<uint8_t>>()> produce) = 0;
  /// addConstant for a weight of `elements` logical values (listings show
  /// its bits per weight). A second call with the same name returns the
  /// first one's index: several delegate calls that read one weight (a tied
  /// embedding and lm_head) share one copy. The default adds a constant.
  virtual uint32_t
  addWeight(const std::string &name, uint64_t size, uint64_t elements,
            std::function<mlir::FailureOr<std::vector<uint8_t>>()> produce) {
    (void)elements;
    return addConstant(name, size, std::move(produce));
  }
};

/// The compiler half of a backend.
class BackendCompiler {
public:
  virtual ~BackendCompiler();
  /// The backend id written into programs ("cpu").
  virtual llvm::StringRef id() const = 0;
  /// Ids the backend had before (a renamed backend's former names, e.g.
  /// "xnnpack" for "cpu"): accepted wherever a backend is named
  /// (findBackendCompiler); programs get id(). Default: none.
  virtual llvm::ArrayRef<const char *> formerIds() const { return {}; }
  /// One-line description for --help and docs.
  virtual llvm::StringRef description() const = 0;
  /// The legality contract: can `op`, with its operand and result types,
  /// run on this backend? Asked by etllm-partition in priority order.
  virtual bool isLegal(mlir::Operation *op) const = 0;
  /// Whether the backend runs only programs whose every shape is fixed at
  /// export (NPUs that compile one graph ahead of time). etllm-partition
  /// then refuses a program with a dynamic dimension for it, naming the
  /// first value that has one, rather than leaving the backend a graph it
  /// cannot compile. Default: no (dynamic sequence lengths are fine).
  virtual bool requiresStaticShapes() const { return false; }
  /// Whether the backend wants a subgraph at all (e.g. not one made only of
  /// shape ops). Default: yes.
  virtual bool isProfitable(llvm::ArrayRef<mlir::Operation *> ops) const;
  /// Passes run on each outlined function of this backend before it is
  /// serialized (anchored on func.func). Default: none.
  virtual void buildLoweringPipeline(mlir::OpPassManager &pm) const;
  /// Serializes an outlined function into the blob the runtime half reads,
  /// plus compile specs. Weights come from `weights`.
  virtual mlir::LogicalResult
  serialize(mlir::func::FuncOp fn, DelegateContext &context,
            std::vector<uint8_t> &blob,
            std::vector<std::pair<std::string, std::string>> &specs) const = 0;
};

/// The module attribute holding the backends' options (etllm-partition's
/// backend-options): a dictionary from "<backend>.<key>" to a string.
inline constexpr const char *kBackendOptionsAttrName = "etllm.backend_options";
/// Option `key` of backend `backend` recorded on the module of `op`, or
/// `fallback`.
std::string backendOption(mlir::Operation *op, llvm::StringRef backend,
                          llvm::StringRef key, llvm::StringRef fallback);

/// Registers a backend compiler (replacing one with the same id).
void registerBackendCompiler(std::unique_ptr<BackendCompiler> backend);
/// The backend compiler `id`, or the one with `id` among its former ids,
/// or null.
const BackendCompiler *findBackendCompiler(llvm::StringRef id);
/// Every registered backend compiler, in registration order.
std::vector<const BackendCompiler *> registeredBackendCompilers();

} // namespace etllm

#endif // ETLLM_TARGET_BACKEND_H
