//===- MemoryPlan.h - Where the values of each method live -----*- C++ -*-===//
//
// Memory planning of each method of a lowered program (Lowering.h), one
// arena per method: views share their source's storage when it is writable
// (tied results always share their operand's), every root value lives from
// its instruction to the last use of any alias of it, and the planned roots
// are placed in the method's arena by the runtime's planner
// (etllm/runtime/memory_planner.h, shared with the cpu delegate). A buffer
// read stays an alias of its buffer, so a write-back of the buffer while
// the read is still used is an error.
//
// The plan is a stage: etllm-plan-memory plans and records the result in
// the IR (recordPlan: `etllm.plan` on every op and argument of the method's
// function stored in planned memory, `etllm.memory` on the function), and
// the serializer emits a recorded plan (readPlan) after checking that it still
// fits the IR (every planned value has a slot large enough, inside the arena,
// covering its lifetime, and no two live values share a byte). A method without
// a recorded plan is planned by the serializer, with the same planner.
//
//===----------------------------------------------------------------------===//
#ifndef ETLLM_LOWERING_MEMORYPLAN_H
#define ETLLM_LOWERING_MEMORYPLAN_H

#include "mlir/Support/LogicalResult.h"
#include "llvm/ADT/StringRef.h"

#include <cstddef>
#include <cstdint>

namespace etllm {

class LoweredProgram;
struct LoweredMethod;

/// The discardable attribute holding a value's place: on an op of a
/// method, an array with one #etllm.slot / #etllm.alias (or unit, for a
/// result stored elsewhere) per result; on an argument, its #etllm.slot.
inline constexpr llvm::StringLiteral kPlanAttrName = "etllm.plan";
/// The attribute on a method's function that says a plan is recorded and sums
/// it up (the MemoryReport fields).
inline constexpr llvm::StringLiteral kMemoryAttrName = "etllm.memory";

/// What the memory planner decided (also reported by etllm-plan-memory).
struct MemoryReport {
  uint64_t arenaBytes = 0;      // planned activations
  uint64_t bufferBytes = 0;     // mutable buffers (KV caches)
  uint64_t constantBytes = 0;   // weights and constants
  uint64_t naiveArenaBytes = 0; // without reuse: the sum of all values
  size_t numValues = 0;
  size_t numInstructions = 0;
  size_t numAliases = 0;
};

/// Plans `method`: aliases, lifetimes, offsets and its arena's size. Errors
/// are emitted at the offending op.
mlir::LogicalResult planMemory(LoweredMethod &method);

/// Records the plan of `method` (planned) on its function, replacing any
/// recorded before.
void recordPlan(const LoweredProgram &program, LoweredMethod &method);

/// Takes the plan recorded on the method's function into `method` (lowered,
/// not planned) after checking it against the IR; false when the function
/// has no recorded plan. A plan that no longer fits is an error ("stale").
mlir::FailureOr<bool> readPlan(LoweredMethod &method);

/// The planner's figures for `program` (planned): its buffers and constants
/// and the values of every method, or of `only`.
MemoryReport memoryReport(const LoweredProgram &program,
                          const LoweredMethod *only = nullptr);

} // namespace etllm

#endif // ETLLM_LOWERING_MEMORYPLAN_H
