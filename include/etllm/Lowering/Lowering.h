//===- Lowering.h - Each method as the runtime's value table ----*- C++ -*-===//
//
// The first step of serialization, shared with the memory planning pass:
// every public function of the module (a method of the program: `forward`,
// or a static program's `prefill` and `decode`) lowered to the runtime's
// value table (dtype, upper-bound shape, storage of every value) and
// instruction list (kernel calls named by the ops' contracts, delegate
// calls), with the constants, buffers and delegate blobs the methods share.
// Memory planning (MemoryPlan.h) then places each method's planned values;
// emission writes the file.
//
//===----------------------------------------------------------------------===//
#ifndef ETLLM_LOWERING_LOWERING_H
#define ETLLM_LOWERING_LOWERING_H

#include "etllm/Dialect/Etllm/EtllmOps.h"
#include "etllm/Lowering/WeightStore.h"
#include "etllm/runtime/tensor.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringMap.h"

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace etllm {

/// Where a value lives at run time (the schema's StorageKind).
enum class Storage { Planned, Constant, Buffer, Alias };

/// One entry of the value table.
struct ValueRec {
  rt::DType dtype = rt::DType::F32;
  llvm::SmallVector<int64_t> sizes; ///< upper bounds
  llvm::SmallVector<bool> dynamic;
  Storage storage = Storage::Planned;
  uint64_t offset = 0, capacity = 0;
  uint32_t constant = 0, buffer = 0, aliasOf = 0;
  rt::QuantInfo quant;
  std::string name;
  int64_t def = -1, lastUse = -1;
  /// A planned root's last instruction: the last use of any alias of it
  /// (set by memory planning).
  int64_t liveEnd = -1;
  /// The bytes a planned root reserves in the arena (capacity rounded up).
  uint64_t slotSize = 0;
  bool isOutput = false;
  /// A view's source value (ViewLikeOpInterface): the view shares its
  /// storage when that storage is writable.
  int64_t viewOf = -1;
  /// The IR value (null for a write-back's target, which is the buffer).
  mlir::Value value;
};

/// One instruction: a kernel call or (delegate >= 0) a delegate call.
struct InstrRec {
  std::string op;
  llvm::SmallVector<uint32_t> inputs, outputs;
  llvm::SmallVector<int64_t> ints;
  llvm::SmallVector<double> floats;
  int delegate = -1;
  /// The write-back copy of a buffer.write (its output is the buffer).
  bool writeBack = false;
  mlir::Operation *origin = nullptr;
};

/// One named constant of the constant segment.
struct ConstRec {
  std::string name;
  uint64_t size = 0;
  uint64_t elements = 0; ///< logical values of a weight (0: unknown)
  uint64_t offset = 0;   ///< within the constant segment
  mlir::Operation *op = nullptr;
  std::vector<uint8_t> inlineData; ///< small constants, produced eagerly
  bool fromParameter = false;
  /// Backend-added constants (packed weights), produced when written.
  std::function<mlir::FailureOr<std::vector<uint8_t>>()> produce;
};

/// A backend's blob and compile specs.
struct DelegateRec {
  std::string backend;
  std::vector<uint8_t> blob;
  std::vector<std::pair<std::string, std::string>> specs;
};

struct ProgramConfig;

/// One method: a public function of the module as the runtime sees it.
struct LoweredMethod {
  mlir::func::FuncOp func;
  std::vector<ValueRec> values;
  std::vector<InstrRec> instrs;
  std::vector<uint32_t> inputs, outputs;
  /// The planned arena's size (set by memory planning).
  uint64_t arenaSize = 0;
  llvm::DenseMap<mlir::Value, uint32_t> index;

  /// The root value whose storage `id` uses (follows aliases).
  uint32_t rootOf(uint32_t id) const;
};

/// The public functions of `module` that are methods, in module order
/// (the private ones are backends' subgraphs).
llvm::SmallVector<mlir::func::FuncOp> methodFunctions(mlir::ModuleOp module);

/// A module's methods and what they share.
class LoweredProgram {
public:
  explicit LoweredProgram(mlir::ModuleOp module);
  // The working method's names refer to this object's own members.
  LoweredProgram(const LoweredProgram &) = delete;
  LoweredProgram &operator=(const LoweredProgram &) = delete;

  /// Lowers every method. With `materializeDelegates`, each delegate call's
  /// backend serializes its subgraph (blob, packed constants); without, a
  /// delegate call only accounts for its values (enough to plan memory).
  /// Errors are emitted at the offending op.
  mlir::LogicalResult lower(bool materializeDelegates);

  /// The method named `name`, or null.
  LoweredMethod *method(llvm::StringRef name);

  mlir::ModuleOp module;
  WeightStore weights;
  std::vector<LoweredMethod> methods;
  std::vector<ConstRec> constants;
  std::vector<DelegateRec> delegates;
  std::vector<mlir::etllm::BufferOp> buffers;
  /// The upper bound of dynamic (sequence) dimensions.
  int64_t seqBound = 0;
  /// A parameter's constant (shared by the methods), a buffer's index.
  llvm::StringMap<uint32_t> paramConstant, bufferIndex;
  /// Backend weights by name (DelegateContext::addWeight): one copy each.
  llvm::StringMap<uint32_t> delegateWeights;

private:
  mlir::LogicalResult lowerMethod(bool materializeDelegates,
                                  const ProgramConfig &config);
  mlir::FailureOr<uint32_t> addValue(mlir::Value v, mlir::Operation *op);
  mlir::FailureOr<uint32_t> lookup(mlir::Value v, mlir::Operation *user);
  mlir::LogicalResult lowerOp(mlir::Operation *op);

  // The method being lowered (moved into `methods` when it is done), and
  // its tables by the names the lowering uses.
  LoweredMethod working;
  mlir::func::FuncOp &current = working.func;
  std::vector<ValueRec> &values = working.values;
  std::vector<InstrRec> &instrs = working.instrs;
  std::vector<uint32_t> &inputs = working.inputs, &outputs = working.outputs;
  llvm::DenseMap<mlir::Value, uint32_t> &index = working.index;
  /// Its parameter.get values, by parameter.
  llvm::StringMap<uint32_t> paramValue;
};

} // namespace etllm

#endif // ETLLM_LOWERING_LOWERING_H
