//===- VulkanEmit.h - From fused groups to dispatches -----------*- C++ -*-===//
#ifndef ETLLM_LIB_BACKENDS_VULKAN_VULKANEMIT_H
#define ETLLM_LIB_BACKENDS_VULKAN_VULKANEMIT_H

#include "VulkanPlan.h"

namespace etllm::vk {

/// Ops that become one or more dispatches together.
struct Group {
  enum Kind {
    Single,    ///< one op (a view: no dispatch unless a copy is needed)
    Concat,    ///< linears of one input, their weights concatenated
    Swiglu,    ///< gate, up, silu, mul
    MatmulAdd, ///< a linear and the residual add that reads it
    Rope,      ///< ropes and cache writes of one positions value (3 jobs max)
  } kind = Single;
  llvm::SmallVector<mlir::Operation *, 4> ops;
};

/// The function's ops in groups (VulkanPlan.cpp).
std::vector<Group> groupOps(mlir::func::FuncOp fn);
/// The groups in dependence order, ties by the first op's position; fewer
/// than the groups when they form a cycle.
std::vector<int> scheduleGroups(mlir::func::FuncOp fn,
                                const std::vector<Group> &groups);
/// Places the arena slots (lifetimes over the dispatches) and the barriers.
mlir::LogicalResult placeArenaAndBarriers(Plan &plan, mlir::Operation *diag);

} // namespace etllm::vk

#endif // ETLLM_LIB_BACKENDS_VULKAN_VULKANEMIT_H
