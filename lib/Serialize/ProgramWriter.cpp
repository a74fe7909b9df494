//===- ProgramWriter.cpp - IR to program file (.pte) ----------------------===//
//
// Serialization in three steps, one file each:
// 1. Lowering.cpp: each method (`forward`, or `prefill` and `decode`) to
//    the runtime's value table and instruction list (kernel calls from the
//    ops' contracts, delegate blobs), every dynamic dimension at its upper
//    bound.
// 2. MemoryPlan.cpp: the memory plan recorded in the IR by the planning
//    stage (etllm-plan-memory), checked against the IR; without one, the
//    same planner runs here (views and tied results share storage,
//    lifetimes over the instruction order, the arena greedy by size).
// 3. Emission.cpp: header + flatbuffer + segments, weights produced on every
//    core and streamed in order (Streaming.h); Metadata.cpp the model
//    config, tokenizer and provenance.
//
//===----------------------------------------------------------------------===//
#include "etllm/Serialize/ProgramWriter.h"

#include "Emission.h"

#include "etllm/Lowering/Lowering.h"

using namespace mlir;

namespace etllm {

namespace {
/// Each method's recorded plan, or (IR that did not go through the planning
/// stage: hand-written IR, a Tester stage) the planner's.
LogicalResult planMethods(LoweredProgram &program) {
  for (LoweredMethod &m : program.methods) {
    FailureOr<bool> recorded = readPlan(m);
    if (failed(recorded) || (!*recorded && failed(planMemory(m))))
      return failure();
  }
  return success();
}
} // namespace

LogicalResult writeProgram(ModuleOp module, const SerializeOptions &options,
                           llvm::raw_ostream &os, MemoryReport *report) {
  LoweredProgram program(module);
  program.weights.useCheckpoint(options.checkpoint);
  if (failed(program.lower(/*materializeDelegates=*/true)))
    return failure();
  if (failed(planMethods(program)))
    return failure();
  if (report)
    *report = memoryReport(program);
  return emitProgram(program, options, os);
}

FailureOr<MemoryReport> planProgramMemory(ModuleOp module) {
  LoweredProgram program(module);
  if (failed(program.lower(/*materializeDelegates=*/false)))
    return failure();
  if (failed(planMethods(program)))
    return failure();
  return memoryReport(program);
}

} // namespace etllm
