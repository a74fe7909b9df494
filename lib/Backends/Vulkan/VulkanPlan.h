//===- VulkanPlan.h - The Vulkan backend's schedule of a subgraph -*- C++
//-*-===//
//
// The compiler half of the Vulkan backend plans each outlined subgraph
// into the blob the runtime replays (runtime/backends/vulkan/vulkan.fbs):
//
//   1. fusion: the linears of one input become one matmul over their
//      concatenated weights (q, k, v); gate and up with silu * mul become
//      one matmul with the swiglu epilogue; a linear whose only reader is a
//      residual add takes the add as its epilogue; RoPE of the queries, RoPE
//      of the keys written into the key cache and the values written into
//      the value cache become one ROPE dispatch;
//   2. a schedule: the fused groups in dependence order;
//   3. layouts: reshapes, transposes and slices are views (strides and
//      offsets, the sequence at its bound); a kernel operand no view can
//      express is copied (COPY) first; SDPA writes its output token-major
//      when a transpose back follows;
//   4. one arena: every activation slot placed with the runtime's planner
//      (lifetimes over the dispatches), inputs and outputs included;
//   5. barriers: before each dispatch that touches what an earlier one since
//      the last barrier wrote (format.h needsBarrier, the rule the runtime
//      checks).
//
// etllm-vulkan-plan records the result in the IR (for --dump-dir and lit);
// the serializer plans again and emits.
//
//===----------------------------------------------------------------------===//
#ifndef ETLLM_LIB_BACKENDS_VULKAN_VULKANPLAN_H
#define ETLLM_LIB_BACKENDS_VULKAN_VULKANPLAN_H

#include "etllm/runtime/dtype.h"
#include "etllm/runtime/vulkan/format.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/SmallVector.h"

#include <array>
#include <optional>
#include <string>
#include <vector>

namespace etllm::vk {

namespace rvk = ::etllm::rt::vulkan;

/// What the plan follows.
struct PlanOptions {
  bool f16 = false; ///< activations (and float weights) in f16
  uint64_t maxBindingBytes = rvk::kDefaultMaxBindingBytes;
  int64_t seqBound = 0; ///< the bound of the sequence dimension
  /// Op names (etllm.sdpa, ...) the backend declines (mixed partitioning).
  std::vector<std::string> exclude;
};

/// The options of the module of `op` (etllm.backend_options:
/// vulkan.precision, vulkan.max-binding-bytes, vulkan.exclude) and its
/// sequence bound (max_seq_len; `seqBound` when given).
PlanOptions planOptions(mlir::Operation *op, int64_t seqBound = 0);

/// The legality contract the partitioner asks.
bool isLegal(mlir::Operation *op);

/// Rows [rowBegin, rowEnd) of one parameter.
struct WeightPart {
  std::string param;
  int64_t rowBegin = 0, rowEnd = 0;
};

/// A buffer of the blob.
struct PlanBuffer {
  enum Kind { Arena, Weight, Floats, Cache, RopeTable } kind = Arena;
  uint64_t bytes = 0;
  std::string name; ///< the program constant's name (shared by delegates)
  // Weight: the packed rows of one or more parameters.
  rvk::WeightFormat format = rvk::WeightFormat::F32;
  std::vector<WeightPart> parts;
  int64_t rows = 0, cols = 0;
  // Floats, RopeTable (inv_freq): f32 values.
  std::string floatsParam;            ///< a parameter's name, or
  mlir::DenseElementsAttr floatsData; ///< constant data
  // RopeTable: positions and scaling.
  int64_t tableRows = 0;
  float scaling = 1;
};

/// A region dispatches bind: an arena slot or a whole buffer.
struct Slot {
  int buffer = 0;                   ///< 0: the arena
  rt::DType dtype = rt::DType::F32; ///< of the elements views count
  uint64_t offset = 0;              ///< planned (arena)
  uint64_t bytes = 0;
  int first = -1, last = -1; ///< dispatches that touch it (arena lifetimes)
  bool input = false, output = false;
};

/// Where an activation lives: a slot and its strides (elements), the
/// sequence dimension (dyn, extent S) at its bound.
struct View {
  int slot = -1;
  int rank = 0;
  std::array<int64_t, 4> sizes{}, strides{};
  int dyn = -1;
  int64_t off = 0, offS = 0;
};

struct PlanDispatch {
  rvk::KernelId kernel = rvk::KernelId::Copy;
  uint32_t variant = 0;
  std::vector<int> slots; ///< one per storage binding
  std::vector<uint32_t> params;
  bool barrier = false;
  int layer = -1;
  std::string label;
};

struct PlanIo {
  uint8_t role = 0; // vulkan.fbs IoRole
  rt::DType dtype = rt::DType::F32, deviceDtype = rt::DType::F32;
  std::vector<int64_t> sizes;
  int dyn = -1;
  int slot = -1;
  int64_t indexBound = 0;
  int buffer = -1; ///< CACHE: the cache buffer
};

struct Plan {
  PlanOptions options;
  std::vector<PlanBuffer> buffers; // buffers[0]: the arena
  std::vector<Slot> slots;
  std::vector<PlanDispatch> dispatches;
  std::vector<PlanIo> inputs, outputs;
  uint64_t arenaBytes = 0;
  int numLayers = 0;
  uint32_t barriers = 0;
  /// The dispatches each op of the function runs in (none: a view).
  llvm::DenseMap<mlir::Operation *, llvm::SmallVector<int, 2>> opDispatches;

  /// One line per dispatch, as etllm-vulkan-plan records them.
  std::vector<std::string> describe() const;
};

/// Plans outlined function `fn` (marked etllm.backend = "vulkan"). Errors
/// are emitted at the op that cannot be planned.
mlir::FailureOr<Plan> planFunction(mlir::func::FuncOp fn,
                                   const PlanOptions &options);

/// The name of the attributes etllm-vulkan-plan records.
inline constexpr const char *kScheduleAttr = "vulkan.schedule";
inline constexpr const char *kSummaryAttr = "vulkan.summary";
inline constexpr const char *kDispatchAttr = "vulkan.dispatch";

/// Registers etllm-vulkan-plan.
void registerVulkanPasses();

} // namespace etllm::vk

#endif // ETLLM_LIB_BACKENDS_VULKAN_VULKANPLAN_H
