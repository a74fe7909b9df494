//===- PlanMemory.cpp - Plan activation memory and record the plan --------===//
#include "etllm/Dialect/Etllm/EtllmOps.h"
#include "etllm/Lowering/Lowering.h"
#include "etllm/Lowering/MemoryPlan.h"
#include "etllm/Transforms/Passes.h"

#define DEBUG_TYPE "etllm-plan-memory"

namespace etllm {
#define GEN_PASS_DEF_PLANMEMORYPASS
#include "etllm/Transforms/Passes.h.inc"
} // namespace etllm

using namespace mlir;
using namespace mlir::etllm;

namespace {

struct PlanMemoryPass
    : public ::etllm::impl::PlanMemoryPassBase<PlanMemoryPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    if (::etllm::methodFunctions(module).empty())
      return;
    // Delegate blobs are not needed to plan: their calls only account for
    // their values.
    ::etllm::LoweredProgram program(module);
    if (failed(program.lower(/*materializeDelegates=*/false)))
      return signalPassFailure();
    for (::etllm::LoweredMethod &m : program.methods)
      if (failed(::etllm::planMemory(m)))
        return signalPassFailure();
    for (::etllm::LoweredMethod &m : program.methods)
      ::etllm::recordPlan(program, m);
  }
};

} // namespace
